//! The HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST. A HyperLogLog is a
//! string value in Redis's layout ([`crate::types::hll`]), so every other string command and
//! every serialization sees the same bytes Redis would hold.
//!
//! What each command reports follows Redis's `hyperloglog.c`: PFADD counts one change per register
//! raised (plus one for a key it creates), PFMERGE always one; PFCOUNT on one key writes the cached
//! cardinality into the header when it was stale and counts that as a change, so it is propagated
//! as itself (Redis flags it `may_replicate`); PFDEBUG GETREG and TODENSE count the conversion of a
//! sparse value to dense. PFADD and PFMERGE raise `pfadd` (notify's table), the others nothing.

use super::base::{BASE, f};
use crate::command::{Flags, Group, Keys};
use crate::ctx::{Command, Ctx};
use crate::db::Db;
use crate::error;
use crate::types::hll::{self, Corrupt, Encoding, Union};
use crate::value::{Str, Value};
use resp::Frame;
use std::sync::atomic::Ordering;

const GROUP: Group = Group::HyperLogLog;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command { name: "pfadd", arity: -2, flags: f::WDF, keys: Keys::ONE, group: GROUP, handler: pfadd, ..BASE },
    Command {
        name: "pfcount",
        arity: -2,
        flags: Flags::READONLY.or(Flags::MAY_REPLICATE),
        keys: Keys::ALL,
        group: GROUP,
        handler: pfcount,
        ..BASE
    },
    Command { name: "pfmerge", arity: -2, flags: f::WD, keys: Keys::ALL, group: GROUP, handler: pfmerge, ..BASE },
    Command {
        name: "pfdebug",
        arity: 3,
        flags: f::WD.or(Flags::ADMIN),
        keys: Keys::Range { first: 2, last: 2, step: 1 },
        group: GROUP,
        handler: pfdebug,
        ..BASE
    },
    Command { name: "pfselftest", arity: 1, flags: Flags::ADMIN, group: GROUP, handler: pfselftest, ..BASE },
];

/// `hll-sparse-max-bytes`.
fn max_sparse(ctx: &Ctx<'_, '_>) -> usize {
    ctx.srv.config.hll_sparse_max_bytes.load(Ordering::Relaxed).max(0) as usize
}

/// The bytes of a value that must be a HyperLogLog: WRONGTYPE for other types, Redis's own
/// WRONGTYPE text for strings that are not one (an integer-encoded string never is).
fn hll_bytes(v: &Value) -> Result<&[u8], Frame> {
    match v {
        Value::Str(s) => hll::check(s).map(|_| &s[..]).map_err(|_| error::not_hll()),
        Value::Int(_) => Err(error::not_hll()),
        _ => Err(error::wrong_type()),
    }
}

/// Runs `f` on the stored bytes of `s` as a vector, without copying them.
fn edit<T>(s: &mut Str, f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    let mut v = std::mem::take(s).into_vec();
    let r = f(&mut v);
    *s = Str::from_vec(v);
    r
}

/// Applies `f` to the HyperLogLog at `key`, which the caller checked, or to a new empty one stored
/// there.
fn update<T>(db: &mut Db<'_, '_>, key: &[u8], f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    if let Some(s) = db.write(key).and_then(|e| e.edit_string()) {
        return edit(s, f);
    }
    let mut v = hll::new_sparse();
    let r = f(&mut v);
    db.set(key, Value::Str(Str::from_vec(v)), false);
    if let Some(e) = db.write(key) {
        e.mark_raw();
    }
    r
}

/// PFADD key [element ...]: 1 if a register changed or the key was created, else 0.
fn pfadd(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, elements, max) = (ctx.arg(1), &ctx.args[2..], max_sparse(ctx));
    let mut db = ctx.db();
    let created = match db.peek(key) {
        None => true,
        Some(e) => match hll_bytes(&e.value) {
            Err(f) => return f,
            // Nothing to raise: the key is not written (WATCH and the change stream see nothing).
            Ok(s) if !elements.iter().any(|el| hll::would_change(s, el)) => return Frame::Integer(0),
            Ok(_) => false,
        },
    };
    let result = update(&mut db, key, |s| {
        let mut updated = created as u64;
        for el in elements {
            // A corrupted value keeps what was raised before the error, as in Redis.
            updated += hll::add(s, el, max)? as u64;
        }
        if updated > 0 {
            hll::invalidate(s);
        }
        Ok::<_, Corrupt>(updated)
    });
    match result {
        Ok(updated) => {
            ctx.changed(updated);
            Frame::Integer((updated > 0) as i64)
        }
        Err(Corrupt) => error::corrupt_hll(),
    }
}

/// PFCOUNT key [key ...]: the estimated cardinality of one HyperLogLog (cached in its header), or
/// of the union of several (computed aside, no key changes).
fn pfcount(ctx: &mut Ctx<'_, '_>) -> Frame {
    let args = ctx.args;
    if args.len() > 2 {
        return match union_of(&mut ctx.db(), &args[1..]) {
            Ok((union, _)) => Frame::Integer(union.count() as i64),
            Err(f) => f,
        };
    }
    let key = ctx.arg(1);
    let mut db = ctx.db();
    let card = match db.read(key) {
        None => return Frame::Integer(0),
        Some(e) => match hll_bytes(&e.value) {
            Err(f) => return f,
            Ok(s) => {
                // The registers are read only when the cached cardinality is stale.
                if let Some(card) = hll::cached(s) {
                    return Frame::Integer(card as i64);
                }
                match hll::count(s) {
                    Ok(card) => card,
                    Err(Corrupt) => return error::corrupt_hll(),
                }
            }
        },
    };
    if let Some(s) = db.write(key).and_then(|e| e.edit_string()) {
        hll::set_cached(s, card);
    }
    ctx.changed(1);
    Frame::Integer(card as i64)
}

/// The union of the HyperLogLogs at `keys` (missing keys count as empty), and whether any of them
/// is dense; the error reply for a key that is not one, or is corrupted.
fn union_of(db: &mut Db<'_, '_>, keys: &[bytes::Bytes]) -> Result<(Union, bool), Frame> {
    let mut union = Union::default();
    let mut dense = false;
    for key in keys {
        let Some(e) = db.read(key) else { continue };
        match hll_bytes(&e.value).map(|s| union.merge(s)) {
            Err(f) => return Err(f),
            Ok(Err(Corrupt)) => return Err(error::corrupt_hll()),
            Ok(Ok(enc)) => dense |= enc == Encoding::Dense,
        }
    }
    Ok((union, dense))
}

/// PFMERGE destkey [sourcekey ...]: the destination's registers raised to the union of all the
/// keys (itself included); dense if any of them is.
fn pfmerge(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (args, max) = (ctx.args, max_sparse(ctx));
    let mut db = ctx.db();
    let (union, dense) = match union_of(&mut db, &args[1..]) {
        Ok(u) => u,
        Err(f) => return f,
    };
    let stored = update(&mut db, &args[1], |s| {
        if dense {
            hll::to_dense(s)?;
        }
        union.store_into(s, max)
    });
    match stored {
        Ok(()) => {
            ctx.changed(1);
            Frame::ok()
        }
        Err(Corrupt) => error::corrupt_hll(),
    }
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key.
fn pfdebug(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (sub, key) = (ctx.arg(1).to_ascii_lowercase(), ctx.arg(2));
    let mut db = ctx.db();
    let (encoding, decoded) = match db.peek(key) {
        None => return Frame::error("ERR The specified key does not exist"),
        Some(e) => match hll_bytes(&e.value) {
            Err(f) => return f,
            Ok(s) => {
                let enc = hll::check(s).expect("checked");
                let decoded = (sub == b"decode" && enc == Encoding::Sparse).then(|| hll::decode(s));
                (enc, decoded)
            }
        },
    };
    match &sub[..] {
        b"getreg" | b"todense" => {
            let converted = match encoding {
                Encoding::Dense => false,
                Encoding::Sparse => match db.write(key).and_then(|e| e.edit_string()).map(|s| edit(s, hll::to_dense)) {
                    Some(Ok(c)) => c,
                    _ => return error::corrupt_hll(),
                },
            };
            let reply = if sub == b"todense" {
                Frame::Integer(converted as i64)
            } else {
                let s = db.peek(key).and_then(|e| e.value.as_bytes()).expect("dense HLL");
                Frame::Array(hll::dense_registers(&s).into_iter().map(|r| Frame::Integer(r as i64)).collect())
            };
            if converted {
                ctx.changed(1);
            }
            reply
        }
        b"decode" => match decoded {
            Some(d) => Frame::bulk(d),
            None => Frame::error("ERR HLL encoding is not sparse"),
        },
        b"encoding" => Frame::simple(encoding.name()),
        _ => Frame::error(format!("ERR Unknown PFDEBUG subcommand '{}'", String::from_utf8_lossy(ctx.arg(1)))),
    }
}

/// PFSELFTEST: Redis's self test of the register code and the estimator (1000 rounds of random
/// registers, ten million elements).
fn pfselftest(ctx: &mut Ctx<'_, '_>) -> Frame {
    match hll::selftest(&mut rand::rng(), 1000, 10_000_000, max_sparse(ctx)) {
        Ok(()) => Frame::ok(),
        Err(msg) => Frame::error(format!("ERR {msg}")),
    }
}
