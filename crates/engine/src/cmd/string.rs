//! The string family: GET/SET and their variants, counters, ranges, LCS, and the owner-checked
//! deletes used to release locks (DELIFEQ, DELEX). The bit commands live in [`super::bits`].

use super::base::{BASE, f};
use crate::args::{eq_ic, parse_i64_strict};
use crate::command::Keys;
use crate::ctx::{Command, Ctx};
use crate::db::Db;
use crate::error;
use crate::value::{Str, Value};
use bytes::Bytes;
use resp::Frame;
use std::sync::atomic::Ordering;

#[cfg(test)]
pub(crate) mod tests;

const STRING: crate::command::Group = crate::command::Group::String;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command { name: "get", arity: 2, flags: f::RF, keys: Keys::ONE, group: STRING, handler: get, ..BASE },
    Command { name: "set", arity: -3, flags: f::WD, keys: Keys::ONE, group: STRING, handler: set, ..BASE },
    Command { name: "setnx", arity: 3, flags: f::WDF, keys: Keys::ONE, group: STRING, handler: setnx, ..BASE },
    Command { name: "setex", arity: 4, flags: f::WD, keys: Keys::ONE, group: STRING, handler: setex, ..BASE },
    Command { name: "psetex", arity: 4, flags: f::WD, keys: Keys::ONE, group: STRING, handler: psetex, ..BASE },
    Command { name: "getset", arity: 3, flags: f::WDF, keys: Keys::ONE, group: STRING, handler: getset, ..BASE },
    Command { name: "getdel", arity: 2, flags: f::WF, keys: Keys::ONE, group: STRING, handler: getdel, ..BASE },
    Command { name: "getex", arity: -2, flags: f::WF, keys: Keys::ONE, group: STRING, handler: getex, ..BASE },
    Command { name: "mget", arity: -2, flags: f::RF, keys: Keys::ALL, group: STRING, handler: mget, ..BASE },
    Command {
        name: "mset",
        arity: -3,
        flags: f::WD,
        keys: Keys::Range { first: 1, last: -1, step: 2 },
        group: STRING,
        handler: mset,
        ..BASE
    },
    Command {
        name: "msetnx",
        arity: -3,
        flags: f::WD,
        keys: Keys::Range { first: 1, last: -1, step: 2 },
        group: STRING,
        handler: msetnx,
        ..BASE
    },
    Command { name: "append", arity: 3, flags: f::WDF, keys: Keys::ONE, group: STRING, handler: append, ..BASE },
    Command { name: "strlen", arity: 2, flags: f::RF, keys: Keys::ONE, group: STRING, handler: strlen, ..BASE },
    Command { name: "getrange", arity: 4, flags: f::R, keys: Keys::ONE, group: STRING, handler: getrange, ..BASE },
    Command { name: "substr", arity: 4, flags: f::R, keys: Keys::ONE, group: STRING, handler: getrange, ..BASE },
    Command { name: "setrange", arity: 4, flags: f::WD, keys: Keys::ONE, group: STRING, handler: setrange, ..BASE },
    Command { name: "incr", arity: 2, flags: f::WDF, keys: Keys::ONE, group: STRING, handler: incr, ..BASE },
    Command { name: "incrby", arity: 3, flags: f::WDF, keys: Keys::ONE, group: STRING, handler: incrby, ..BASE },
    Command { name: "decr", arity: 2, flags: f::WDF, keys: Keys::ONE, group: STRING, handler: decr, ..BASE },
    Command { name: "decrby", arity: 3, flags: f::WDF, keys: Keys::ONE, group: STRING, handler: decrby, ..BASE },
    Command {
        name: "incrbyfloat",
        arity: 3,
        flags: f::WDF,
        keys: Keys::ONE,
        group: STRING,
        handler: incrbyfloat,
        ..BASE
    },
    Command {
        name: "lcs",
        arity: -3,
        flags: f::R,
        keys: Keys::Range { first: 1, last: 2, step: 1 },
        group: STRING,
        handler: lcs,
        ..BASE
    },
    Command {
        name: "delifeq",
        arity: 3,
        flags: f::WF,
        keys: Keys::ONE,
        group: STRING,
        since: "9.0.0",
        summary: "Deletes the key if its string value equals the given value.",
        syntax: "key value",
        handler: delifeq,
        ..BASE
    },
    Command {
        name: "delex",
        arity: -2,
        flags: f::WF,
        keys: Keys::ONE,
        group: STRING,
        since: "8.4.0",
        summary: "Conditionally removes the specified key based on value or hash digest comparison.",
        syntax: "key [IFEQ ifeq-value | IFNE ifne-value | IFDEQ ifdeq-digest | IFDNE ifdne-digest]",
        handler: delex,
        ..BASE
    },
];

// ---------------------------------------------------------------------------------------------
// Shared helpers (also used by the bit commands).

/// A bulk reply holding a string value's bytes (nil for non-strings, which callers exclude).
pub(crate) fn value_bulk(v: &Value) -> Frame {
    match v {
        Value::Int(i) => Frame::Bulk(Bytes::copy_from_slice(itoa::Buffer::new().format(*i).as_bytes())),
        Value::Str(s) => Frame::Bulk(Bytes::copy_from_slice(s)),
        _ => Frame::Null,
    }
}

/// True if the string value `v` is byte-equal to `b` (integers compare by their decimal text).
pub(crate) fn value_eq(v: &Value, b: &[u8]) -> bool {
    match v {
        Value::Int(i) => itoa::Buffer::new().format(*i).as_bytes() == b,
        Value::Str(s) => &s[..] == b,
        _ => false,
    }
}

/// The configured `proto-max-bulk-len`.
pub(crate) fn max_bulk_len(ctx: &Ctx<'_, '_>) -> i64 {
    ctx.srv.config.proto_max_bulk_len.load(Ordering::Relaxed)
}

/// Redis's `checkStringLength`: a string of `size + append` bytes must fit in proto-max-bulk-len.
pub(crate) fn check_string_length(ctx: &Ctx<'_, '_>, size: u64, append: u64) -> Result<(), Frame> {
    match size.checked_add(append) {
        Some(total) if total <= max_bulk_len(ctx).max(0) as u64 => Ok(()),
        _ => Err(error::string_too_long()),
    }
}

/// GET-like read: the bulk value, nil when missing, WRONGTYPE for other types.
fn read_bulk(db: &mut Db<'_, '_>, key: &[u8]) -> Result<Frame, Frame> {
    Ok(match db.read_string(key)? {
        Some(v) => value_bulk(v),
        None => Frame::Null,
    })
}

/// The expiration options shared by SET and GETEX.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expire {
    None,
    Ex,
    Px,
    ExAt,
    PxAt,
    KeepTtl,
    Persist,
}

impl Expire {
    fn is_absolute(self) -> bool {
        matches!(self, Expire::ExAt | Expire::PxAt)
    }
}

/// Redis's `getExpireMillisecondsOrReply`: the deadline in Unix milliseconds.
fn unix_deadline(ctx: &Ctx<'_, '_>, arg: &[u8], kind: Expire) -> Result<i64, Frame> {
    let v = parse_i64_strict(arg).ok_or_else(error::not_integer)?;
    let bad = || error::invalid_expire(ctx.cmd.name);
    if v <= 0 {
        return Err(bad());
    }
    let ms = match kind {
        Expire::Ex | Expire::ExAt => v.checked_mul(1000).ok_or_else(bad)?,
        _ => v,
    };
    let ms = match kind {
        Expire::Ex | Expire::Px => ms.checked_add(ctx.unix_ms()).ok_or_else(bad)?,
        _ => ms,
    };
    if ms <= 0 {
        return Err(bad());
    }
    Ok(ms)
}

/// Converts a Unix deadline to the monotonic timeline; None when it is not in the future.
fn mono_deadline(ctx: &Ctx<'_, '_>, unix_ms: i64) -> Option<u64> {
    let mono = unix_ms.saturating_sub(ctx.srv.clock.wall_offset_ms());
    (mono > ctx.now as i64).then_some(mono as u64)
}

// ---------------------------------------------------------------------------------------------
// GET / SET and variants.

fn get(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    read_bulk(&mut ctx.db(), key).unwrap_or_else(|e| e)
}

/// What `set_generic` was asked to do.
struct SetOpts<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    ifeq: Option<&'a [u8]>,
    expire: Expire,
    expire_arg: &'a [u8],
}

impl SetOpts<'_> {
    fn plain() -> SetOpts<'static> {
        SetOpts { nx: false, xx: false, get: false, ifeq: None, expire: Expire::None, expire_arg: b"" }
    }
}

/// Parses SET's (`for_set`) or GETEX's options from `args[start..]`, as Redis's
/// `parseExtendedStringArgumentsOrReply`.
fn parse_extended<'a>(args: &'a [Bytes], start: usize, for_set: bool) -> Result<SetOpts<'a>, Frame> {
    let mut o = SetOpts::plain();
    let mut j = start;
    while j < args.len() {
        let opt = &args[j][..];
        let next = args.get(j + 1).map(|b| &b[..]);
        let timed = |kw: &str, kind: Expire, o: &SetOpts| {
            eq_ic(opt, kw) && (o.expire == Expire::None || o.expire == kind) && next.is_some()
        };
        if for_set && eq_ic(opt, "nx") && !o.xx && o.ifeq.is_none() {
            o.nx = true;
        } else if for_set && eq_ic(opt, "xx") && !o.nx && o.ifeq.is_none() {
            o.xx = true;
        } else if for_set && eq_ic(opt, "ifeq") && !o.nx && !o.xx && next.is_some() {
            o.ifeq = next;
            j += 1;
        } else if for_set && eq_ic(opt, "get") {
            o.get = true;
        } else if for_set && eq_ic(opt, "keepttl") && matches!(o.expire, Expire::None | Expire::KeepTtl) {
            o.expire = Expire::KeepTtl;
        } else if !for_set && eq_ic(opt, "persist") && matches!(o.expire, Expire::None | Expire::Persist) {
            o.expire = Expire::Persist;
        } else if let Some(kind) =
            [("ex", Expire::Ex), ("px", Expire::Px), ("exat", Expire::ExAt), ("pxat", Expire::PxAt)]
                .into_iter()
                .find(|(kw, kind)| timed(kw, *kind, &o))
                .map(|(_, k)| k)
        {
            o.expire = kind;
            o.expire_arg = next.unwrap_or_default();
            j += 1;
        } else {
            return Err(error::syntax());
        }
        j += 1;
    }
    Ok(o)
}

/// Redis's `setGenericCommand`: SET, SETNX, SETEX, PSETEX. `ok`/`abort` are the replies when the
/// value was stored or not (None: `+OK` and nil).
fn set_generic(ctx: &mut Ctx<'_, '_>, o: &SetOpts<'_>, key: &[u8], val: &[u8], ok: Frame, abort: Frame) -> Frame {
    let deadline = match o.expire {
        Expire::Ex | Expire::Px | Expire::ExAt | Expire::PxAt => match unix_deadline(ctx, o.expire_arg, o.expire) {
            Ok(d) => Some(d),
            Err(e) => return e,
        },
        _ => None,
    };
    let mono = deadline.map(|d| mono_deadline(ctx, d));
    let mut db = ctx.db();
    let old = if o.get {
        match read_bulk(&mut db, key) {
            Ok(f) => Some(f),
            Err(e) => return e,
        }
    } else {
        None
    };
    // Only NX and XX ask whether the key is there; a plain SET stores in one probe of the table,
    // which reclaims a key whose TTL passed as this lookup would ([`Db::set`]).
    let found = (o.nx || o.xx) && db.exists(key);
    let mut proceed = !(o.nx && found || o.xx && !found);
    if let Some(cmp) = o.ifeq {
        proceed = match db.peek(key) {
            None => false,
            Some(e) if !e.value.is_string() => return error::wrong_type(),
            Some(e) => value_eq(&e.value, cmp),
        };
    }
    if !proceed {
        return old.unwrap_or(abort);
    }
    let value = Value::string(val);
    match mono {
        None => db.set(key, value, o.expire == Expire::KeepTtl),
        Some(Some(at)) => db.set_with_expire(key, value, at),
        // An absolute time already in the past: the key is set and expires at once.
        Some(None) => {
            db.remove(key);
            ctx.propagate_as(&[&b"DEL"[..], key]);
        }
    }
    ctx.changed(1);
    // Any deadline replays as the same absolute one: Redis rewrites every SET with a TTL as
    // `SET key value PXAT <ms>`.
    if let Some(unix) = deadline
        && ctx.rewrite.is_none()
        && ctx.propagating()
    {
        let at = unix.to_string();
        ctx.propagate_as(&[&b"SET"[..], key, val, b"PXAT", at.as_bytes()]);
    }
    old.unwrap_or(ok)
}

fn set(ctx: &mut Ctx<'_, '_>) -> Frame {
    let o = match parse_extended(ctx.args, 3, true) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let (key, val) = (ctx.arg(1), ctx.arg(2));
    set_generic(ctx, &o, key, val, Frame::ok(), Frame::Null)
}

fn setnx(ctx: &mut Ctx<'_, '_>) -> Frame {
    let o = SetOpts { nx: true, ..SetOpts::plain() };
    let (key, val) = (ctx.arg(1), ctx.arg(2));
    set_generic(ctx, &o, key, val, Frame::Integer(1), Frame::Integer(0))
}

fn setex(ctx: &mut Ctx<'_, '_>) -> Frame {
    let o = SetOpts { expire: Expire::Ex, expire_arg: ctx.arg(2), ..SetOpts::plain() };
    let (key, val) = (ctx.arg(1), ctx.arg(3));
    set_generic(ctx, &o, key, val, Frame::ok(), Frame::Null)
}

fn psetex(ctx: &mut Ctx<'_, '_>) -> Frame {
    let o = SetOpts { expire: Expire::Px, expire_arg: ctx.arg(2), ..SetOpts::plain() };
    let (key, val) = (ctx.arg(1), ctx.arg(3));
    set_generic(ctx, &o, key, val, Frame::ok(), Frame::Null)
}

fn getset(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, val) = (ctx.arg(1), ctx.arg(2));
    let mut db = ctx.db();
    let old = match read_bulk(&mut db, key) {
        Ok(f) => f,
        Err(e) => return e,
    };
    db.set(key, Value::string(val), false);
    ctx.changed(1);
    // Redis propagates GETSET as the SET it is.
    ctx.propagate_as(&[&b"SET"[..], key, val]);
    old
}

fn getdel(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let mut db = ctx.db();
    let old = match read_bulk(&mut db, key) {
        Ok(f) => f,
        Err(e) => return e,
    };
    if db.remove(key).is_some() {
        ctx.changed(1);
        ctx.propagate_as(&[&b"DEL"[..], key]);
    }
    old
}

fn getex(ctx: &mut Ctx<'_, '_>) -> Frame {
    let o = match parse_extended(ctx.args, 2, false) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let key = ctx.arg(1);
    let reply = match read_bulk(&mut ctx.db(), key) {
        Ok(Frame::Null) => return Frame::Null,
        Ok(f) => f,
        Err(e) => return e,
    };
    match o.expire {
        Expire::Persist => {
            let mut db = ctx.db();
            if db.peek(key).is_some_and(|e| e.has_ttl()) {
                db.set_expire(key, 0);
                ctx.changed(1);
                ctx.propagate_as(&[&b"PERSIST"[..], key]);
            }
        }
        Expire::None | Expire::KeepTtl => {}
        kind => {
            let deadline = match unix_deadline(ctx, o.expire_arg, kind) {
                Ok(d) => d,
                Err(e) => return e,
            };
            let at = match mono_deadline(ctx, deadline) {
                Some(at) => Some(at),
                None if kind.is_absolute() => None,
                // Relative times are always in the future; keep the key alive at least until now.
                None => Some(ctx.now),
            };
            match at {
                Some(at) => {
                    ctx.db().set_expire(key, at);
                    let unix = ctx.to_unix_ms(at).to_string();
                    ctx.propagate_as(&[&b"PEXPIREAT"[..], key, unix.as_bytes()]);
                }
                None => {
                    ctx.db().remove(key);
                    ctx.propagate_as(&[&b"DEL"[..], key]);
                }
            }
            ctx.changed(1);
        }
    }
    reply
}

// ---------------------------------------------------------------------------------------------
// Multi-key commands.

fn mget(ctx: &mut Ctx<'_, '_>) -> Frame {
    let args = ctx.args;
    let mut db = ctx.db();
    let out = args[1..]
        .iter()
        .map(|k| match db.read(k) {
            Some(e) => value_bulk(&e.value),
            None => Frame::Null,
        })
        .collect();
    Frame::Array(out)
}

fn mset_generic(ctx: &mut Ctx<'_, '_>, nx: bool) -> Frame {
    let args = ctx.args;
    if args.len().is_multiple_of(2) {
        return error::wrong_arity(ctx.cmd.name);
    }
    let mut db = ctx.db();
    if nx && args[1..].chunks(2).any(|kv| db.exists(&kv[0])) {
        return Frame::Integer(0);
    }
    for kv in args[1..].chunks(2) {
        db.set(&kv[0], Value::string(&kv[1]), false);
    }
    ctx.changed((args.len() as u64 - 1) / 2);
    if nx { Frame::Integer(1) } else { Frame::ok() }
}

fn mset(ctx: &mut Ctx<'_, '_>) -> Frame {
    mset_generic(ctx, false)
}

fn msetnx(ctx: &mut Ctx<'_, '_>) -> Frame {
    mset_generic(ctx, true)
}

// ---------------------------------------------------------------------------------------------
// In-place edits and reads.

fn append(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, val) = (ctx.arg(1), ctx.arg(2));
    let limit = max_bulk_len(ctx).max(0) as u64;
    let mut db = ctx.db();
    let total = match db.write_string(key) {
        Err(e) => return e,
        Ok(None) => {
            db.set(key, Value::string(val), false);
            val.len()
        }
        Ok(Some(e)) => {
            let cur = e.value.str_len() as u64;
            if cur.checked_add(val.len() as u64).is_none_or(|t| t > limit) {
                return error::string_too_long();
            }
            let s = e.edit_string().expect("checked string");
            s.extend_from_slice(val);
            s.len()
        }
    };
    ctx.changed(1);
    Frame::Integer(total as i64)
}

fn strlen(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    match ctx.db().read_string(key) {
        Ok(Some(v)) => Frame::Integer(v.str_len() as i64),
        Ok(None) => Frame::Integer(0),
        Err(e) => e,
    }
}

fn getrange(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (mut start, mut end) = match (ctx.int_arg(2), ctx.int_arg(3)) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let key = ctx.arg(1);
    let mut db = ctx.db();
    let v = match db.read_string(key) {
        Ok(Some(v)) => v,
        Ok(None) => return Frame::bulk(Bytes::new()),
        Err(e) => return e,
    };
    let bytes = v.as_bytes().unwrap_or_default();
    let len = bytes.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Frame::bulk(Bytes::new());
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return Frame::bulk(Bytes::new());
    }
    Frame::Bulk(Bytes::copy_from_slice(&bytes[start as usize..=end as usize]))
}

fn setrange(ctx: &mut Ctx<'_, '_>) -> Frame {
    let offset = match ctx.int_arg(2) {
        Ok(o) => o,
        Err(e) => return e,
    };
    if offset < 0 {
        return error::out_of_range("offset");
    }
    let (key, val) = (ctx.arg(1), ctx.arg(3));
    let offset = offset as u64;
    let exists = match ctx.db().write_string(key) {
        Err(e) => return e,
        Ok(None) => false,
        Ok(Some(e)) if val.is_empty() => return Frame::Integer(e.value.str_len() as i64),
        Ok(Some(_)) => true,
    };
    if val.is_empty() {
        return Frame::Integer(0);
    }
    if let Err(e) = check_string_length(ctx, offset, val.len() as u64) {
        return e;
    }
    let (offset, end) = (offset as usize, offset as usize + val.len());
    let mut db = ctx.db();
    let len = if exists {
        let e = db.write(key).expect("exists");
        let s = e.edit_string().expect("checked string");
        if s.len() < end {
            s.resize(end, 0);
        }
        s[offset..end].copy_from_slice(val);
        s.len()
    } else {
        let mut s = Str::from_elem(0, end);
        s[offset..end].copy_from_slice(val);
        db.set(key, Value::Str(s), false);
        if let Some(e) = db.write(key) {
            e.mark_raw();
        }
        end
    };
    ctx.changed(1);
    Frame::Integer(len as i64)
}

// ---------------------------------------------------------------------------------------------
// Counters.

fn incr_decr(ctx: &mut Ctx<'_, '_>, incr: i64) -> Frame {
    let key = ctx.arg(1);
    let mut db = ctx.db();
    let reply = match db.write_string(key) {
        Err(e) => return e,
        Ok(None) => {
            db.set(key, Value::Int(incr), false);
            incr
        }
        Ok(Some(e)) => {
            let cur = match &e.value {
                Value::Int(i) => *i,
                Value::Str(s) => match parse_i64_strict(s) {
                    Some(i) => i,
                    None => return error::not_integer(),
                },
                _ => return error::wrong_type(),
            };
            let Some(new) = cur.checked_add(incr) else { return error::overflow() };
            // In place: the entry keeps its TTL, as Redis's dbOverwrite.
            e.value = Value::Int(new);
            new
        }
    };
    ctx.changed(1);
    Frame::Integer(reply)
}

fn incr(ctx: &mut Ctx<'_, '_>) -> Frame {
    incr_decr(ctx, 1)
}

fn decr(ctx: &mut Ctx<'_, '_>) -> Frame {
    incr_decr(ctx, -1)
}

fn incrby(ctx: &mut Ctx<'_, '_>) -> Frame {
    match ctx.int_arg(2) {
        Ok(n) => incr_decr(ctx, n),
        Err(e) => e,
    }
}

fn decrby(ctx: &mut Ctx<'_, '_>) -> Frame {
    match ctx.int_arg(2) {
        Ok(i64::MIN) => Frame::error("ERR decrement would overflow"),
        Ok(n) => incr_decr(ctx, -n),
        Err(e) => e,
    }
}

fn incrbyfloat(ctx: &mut Ctx<'_, '_>) -> Frame {
    use ldouble::LongDouble;
    let (key, arg) = (ctx.arg(1), ctx.arg(2));
    let mut db = ctx.db();
    let (cur, exists) = match db.write_string(key) {
        Err(e) => return e,
        Ok(None) => (Some(LongDouble::from_i64(0)), false),
        Ok(Some(e)) => match &e.value {
            Value::Int(i) => (Some(LongDouble::from_i64(*i)), true),
            Value::Str(s) => (LongDouble::parse(s), true),
            _ => return error::wrong_type(),
        },
    };
    let (Some(cur), Some(incr)) = (cur, LongDouble::parse(arg)) else { return error::not_float() };
    let sum = cur.add(incr);
    if !sum.is_finite() {
        return Frame::error("ERR increment would produce NaN or Infinity");
    }
    let text = sum.to_human_string();
    let value = Value::string(text.as_bytes());
    match db.write(key) {
        // In place: the entry keeps its TTL, as Redis's dbOverwrite.
        Some(e) if exists => e.value = value,
        _ => db.set(key, value, false),
    }
    ctx.changed(1);
    // Replays as the value it produced: floating point need not agree across machines.
    ctx.propagate_as(&[&b"SET"[..], key, text.as_bytes(), b"KEEPTTL"]);
    Frame::Bulk(Bytes::from(text))
}

// ---------------------------------------------------------------------------------------------
// LCS.

fn lcs(ctx: &mut Ctx<'_, '_>) -> Frame {
    let args = ctx.args;
    let (a, b) = {
        let mut db = ctx.db();
        let mut fetch = |k: &[u8]| -> Result<Vec<u8>, ()> {
            match db.read(k) {
                None => Ok(Vec::new()),
                Some(e) => e.value.as_bytes().map(|c| c.into_owned()).ok_or(()),
            }
        };
        match (fetch(&args[1]), fetch(&args[2])) {
            (Ok(a), Ok(b)) => (a, b),
            _ => return Frame::error("ERR The specified keys must contain string values"),
        }
    };
    let (mut getlen, mut getidx, mut withmatchlen, mut minmatchlen) = (false, false, false, 0i64);
    let mut j = 3;
    while j < args.len() {
        let opt = &args[j][..];
        if eq_ic(opt, "idx") {
            getidx = true;
        } else if eq_ic(opt, "len") {
            getlen = true;
        } else if eq_ic(opt, "withmatchlen") {
            withmatchlen = true;
        } else if eq_ic(opt, "minmatchlen") && j + 1 < args.len() {
            match ctx.int_arg(j + 1) {
                Ok(n) => minmatchlen = n.max(0),
                Err(e) => return e,
            }
            j += 1;
        } else {
            return error::syntax();
        }
        j += 1;
    }
    if getlen && getidx {
        return Frame::error("ERR If you want both the length and indexes, please just use IDX.");
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return Frame::error("ERR String too long for LCS");
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    if cells.saturating_mul(4) > max_bulk_len(ctx).max(0) as u64 {
        return Frame::error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let w = blen + 1;
    let mut t = vec![0u32; cells as usize];
    for i in 1..=alen {
        for j in 1..=blen {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let total = t[alen * w + blen];
    if getlen {
        return Frame::Integer(total as i64);
    }
    // Walk back from the end, building the LCS string and the matching ranges.
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut matches = Vec::new();
    let (mut i, mut j) = (alen, blen);
    // (a_start, a_end, b_start, b_end) of the range being tracked.
    let mut range: Option<(usize, usize, usize, usize)> = None;
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            range = match range {
                None => Some((i - 1, i - 1, j - 1, j - 1)),
                Some((as_, ae, bs, be)) if as_ == i && bs == j => Some((as_ - 1, ae, bs - 1, be)),
                Some(r) => {
                    emit = true;
                    Some(r)
                }
            };
            if let Some((as_, _, bs, _)) = range
                && (as_ == 0 || bs == 0)
            {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t[(i - 1) * w + j] > t[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if range.is_some() {
                emit = true;
            }
        }
        if emit && let Some((as_, ae, bs, be)) = range.take() {
            let mlen = (ae - as_ + 1) as i64;
            if getidx && (minmatchlen == 0 || mlen >= minmatchlen) {
                let mut m = vec![
                    Frame::Array(vec![Frame::Integer(as_ as i64), Frame::Integer(ae as i64)]),
                    Frame::Array(vec![Frame::Integer(bs as i64), Frame::Integer(be as i64)]),
                ];
                if withmatchlen {
                    m.push(Frame::Integer(mlen));
                }
                matches.push(Frame::Array(m));
            }
        }
    }
    if getidx {
        Frame::Map(vec![
            (Frame::bulk("matches"), Frame::Array(matches)),
            (Frame::bulk("len"), Frame::Integer(total as i64)),
        ])
    } else {
        Frame::Bulk(Bytes::from(result))
    }
}

// ---------------------------------------------------------------------------------------------
// Owner-checked deletes.

fn delifeq(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, val) = (ctx.arg(1), ctx.arg(2));
    let mut db = ctx.db();
    match db.write_string(key) {
        Err(e) => e,
        Ok(Some(e)) if value_eq(&e.value, val) => {
            db.remove(key);
            ctx.changed(1);
            ctx.propagate_as(&[&b"DEL"[..], key]);
            Frame::Integer(1)
        }
        Ok(_) => Frame::Integer(0),
    }
}

/// The 16 lowercase hex digits of the XXH3 64-bit hash of `b` (Redis's `DIGEST`).
pub(crate) fn digest_hex(b: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(b))
}

fn delex(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    #[derive(Clone, Copy)]
    enum Cond {
        Eq,
        Ne,
        DigestEq,
        DigestNe,
    }
    let cond = match ctx.argc() {
        2 => None,
        4 => {
            let kw = ctx.arg(2);
            let c = if eq_ic(kw, "ifeq") {
                Cond::Eq
            } else if eq_ic(kw, "ifne") {
                Cond::Ne
            } else if eq_ic(kw, "ifdeq") {
                Cond::DigestEq
            } else if eq_ic(kw, "ifdne") {
                Cond::DigestNe
            } else {
                return error::syntax();
            };
            Some((c, ctx.arg(3)))
        }
        _ => return error::syntax(),
    };
    let mut db = ctx.db();
    let delete = match cond {
        None => db.exists(key),
        Some((c, arg)) => match db.write(key) {
            None => false,
            Some(e) => {
                let Some(bytes) = e.value.as_bytes() else { return error::wrong_type() };
                match c {
                    Cond::Eq => bytes[..] == *arg,
                    Cond::Ne => bytes[..] != *arg,
                    Cond::DigestEq => digest_hex(&bytes).as_bytes().eq_ignore_ascii_case(arg),
                    Cond::DigestNe => !digest_hex(&bytes).as_bytes().eq_ignore_ascii_case(arg),
                }
            }
        },
    };
    if delete && db.remove(key).is_some() {
        ctx.changed(1);
        ctx.propagate_as(&[&b"DEL"[..], key]);
        Frame::Integer(1)
    } else {
        Frame::Integer(0)
    }
}
