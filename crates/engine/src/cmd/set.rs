//! The set family: SADD, SREM, SPOP, SRANDMEMBER, SINTER/SUNION/SDIFF and their STORE forms, SSCAN...

use super::base::BASE;
use crate::args::{eq_ic, parse_i64_strict};
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::db::Db;
use crate::error;
use crate::random::{Source, canonical_order};
use crate::types::access::{
    bulk, create_set, numkeys_keys, parse_scan, read_set, remove_if_empty, scan_match, scan_positions, scan_reply,
    write_set,
};
use crate::value::{SetValue, SmallBytes, Value};
use bytes::Bytes;
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "sadd",
        arity: -3,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Set,
        handler: sadd,
        ..BASE
    },
    Command {
        name: "srem",
        arity: -3,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Set,
        handler: srem,
        ..BASE
    },
    Command {
        name: "smembers",
        arity: 2,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::Set,
        handler: smembers,
        ..BASE
    },
    Command {
        name: "sismember",
        arity: 3,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Set,
        handler: sismember,
        ..BASE
    },
    Command {
        name: "smismember",
        arity: -3,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Set,
        handler: smismember,
        ..BASE
    },
    Command {
        name: "scard",
        arity: 2,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Set,
        handler: scard,
        ..BASE
    },
    Command {
        name: "spop",
        arity: -2,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Set,
        handler: spop,
        ..BASE
    },
    Command {
        name: "srandmember",
        arity: -2,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::Set,
        handler: srandmember,
        ..BASE
    },
    Command {
        name: "smove",
        arity: 4,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::Range { first: 1, last: 2, step: 1 },
        group: crate::command::Group::Set,
        handler: smove,
        ..BASE
    },
    Command {
        name: "sinter",
        arity: -2,
        flags: Flags::READONLY,
        keys: Keys::ALL,
        group: crate::command::Group::Set,
        handler: sinter,
        ..BASE
    },
    Command {
        name: "sintercard",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: numkeys_keys::<1> },
        group: crate::command::Group::Set,
        handler: sintercard,
        ..BASE
    },
    Command {
        name: "sinterstore",
        arity: -3,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::ALL,
        group: crate::command::Group::Set,
        handler: sinterstore,
        ..BASE
    },
    Command {
        name: "sunion",
        arity: -2,
        flags: Flags::READONLY,
        keys: Keys::ALL,
        group: crate::command::Group::Set,
        handler: sunion,
        ..BASE
    },
    Command {
        name: "sunionstore",
        arity: -3,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::ALL,
        group: crate::command::Group::Set,
        handler: sunionstore,
        ..BASE
    },
    Command {
        name: "sdiff",
        arity: -2,
        flags: Flags::READONLY,
        keys: Keys::ALL,
        group: crate::command::Group::Set,
        handler: sdiff,
        ..BASE
    },
    Command {
        name: "sdiffstore",
        arity: -3,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::ALL,
        group: crate::command::Group::Set,
        handler: sdiffstore,
        ..BASE
    },
    Command {
        name: "sscan",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::Set,
        handler: sscan,
        ..BASE
    },
];

/// Positions to return for a random-members command (SRANDMEMBER, HRANDFIELD, ZRANDMEMBER, SPOP)
/// with a count argument `l` over `len` elements, drawn from `rng`: distinct positions when `l >= 0`
/// (every position, in order, when `l >= len`), `-l` positions drawn with repetition otherwise.
pub(crate) fn random_positions(rng: &mut Source<'_>, len: usize, l: i64) -> Vec<usize> {
    use rand::Rng;
    if len == 0 || l == 0 {
        return Vec::new();
    }
    if l < 0 {
        let n = l.unsigned_abs() as usize;
        return (0..n).map(|_| rng.random_range(0..len)).collect();
    }
    let n = l as u64;
    if n >= len as u64 {
        return (0..len).collect();
    }
    rand::seq::index::sample(rng, len, n as usize).into_vec()
}

/// The replies of SRANDMEMBER, HRANDFIELD and ZRANDMEMBER with a count `l` over `len` elements
/// (`None`: the reply would pass `cap` bytes, see `Ctx::reply_cap`),
/// encoded straight into the reply's bytes as Redis streams them to the output buffer: a count of
/// -40M costs the reply's bytes, not a frame or even a position per element. `size(i)` is what
/// element `i` takes on the wire, `start(picks, bytes)` opens the reply and `push` writes element
/// `i`. Negative counts (picks with repetition) draw the same sequence twice from one seed, once to
/// size the reply and once to write it. Positions are drawn from `rng` and name elements through
/// `order` when given (`random::canonical_order`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn random_reply(
    rng: &mut Source<'_>,
    order: Option<&[usize]>,
    len: usize,
    l: i64,
    cap: usize,
    size: impl Fn(usize) -> usize,
    start: impl FnOnce(usize, usize) -> resp::BulkArray,
    mut push: impl FnMut(&mut resp::BulkArray, usize),
) -> Option<Frame> {
    use rand::{Rng, SeedableRng};
    let at = |i: usize| order.map_or(i, |o| o[i]);
    let size = |i: usize| size(at(i));
    let mut push = |out: &mut resp::BulkArray, i: usize| push(out, at(i));
    if l >= 0 || len == 0 {
        let picks = random_positions(rng, len, l);
        let body: usize = picks.iter().map(|&i| size(i)).sum();
        if body > cap {
            return None;
        }
        let mut out = start(picks.len(), body);
        for i in picks {
            push(&mut out, i);
        }
        return Some(out.finish());
    }
    let n = l.unsigned_abs() as usize;
    let seed = rand::rngs::StdRng::from_rng(rng);
    let mut rng = seed.clone();
    let mut body = 0usize;
    for _ in 0..n {
        body = body.saturating_add(size(rng.random_range(0..len)));
        if body > cap {
            // Stopped mid-run, as Redis stops writing it once over the limit.
            return None;
        }
    }
    let mut out = start(n, body);
    let mut rng = seed;
    for _ in 0..n {
        push(&mut out, rng.random_range(0..len));
    }
    Some(out.finish())
}

/// `ERR value is out of range, value must between ...` for counts of the random-member commands.
pub(crate) fn random_count(b: &[u8]) -> Result<i64, Frame> {
    match parse_i64_strict(b) {
        Some(i64::MIN) => Err(Frame::error(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        )),
        // Latch deviation: Redis would try to build the reply and run out of memory.
        Some(l) if l < -(1 << 32) => Err(Frame::error("ERR value is out of range")),
        Some(l) => Ok(l),
        None => Err(error::not_integer()),
    }
}

/// The `count [WITH<word>]` arguments of HRANDFIELD and ZRANDMEMBER (at 2 and 3): the count and
/// whether the option was given, or the error Redis checks them in order with.
pub(crate) fn random_count_with(ctx: &Ctx<'_, '_>, word: &str) -> Result<(i64, bool), Frame> {
    let l = random_count(ctx.arg(2))?;
    if ctx.argc() > 4 || (ctx.argc() == 4 && !eq_ic(ctx.arg(3), word)) {
        return Err(error::syntax());
    }
    let with = ctx.argc() == 4;
    if with && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
        return Err(Frame::error("ERR value is out of range"));
    }
    Ok((l, with))
}

/// Members in reply order: small all-integer sets (Redis's intset encoding) are sorted numerically,
/// as Redis returns them; other sets in storage order.
fn ordered(s: &SetValue) -> Vec<Frame> {
    if s.len() <= 512 {
        let ints: Option<Vec<i64>> = s.iter().map(crate::value::canonical_i64).collect();
        if let Some(mut v) = ints {
            v.sort_unstable();
            return v.into_iter().map(|i| bulk(itoa::Buffer::new().format(i).as_bytes())).collect();
        }
    }
    s.iter().map(bulk).collect()
}

/// A set's members as a set reply: large sets straight into their wire bytes (see
/// `resp::BulkArray`), small ones in Redis's order (`ordered`).
fn set_reply(s: &SetValue, proto: resp::Protocol) -> Frame {
    if s.len() <= 512 {
        return Frame::Set(ordered(s));
    }
    let body = s.iter().map(|m| resp::BulkArray::bulk_size(m.len())).sum();
    let mut out = resp::BulkArray::set(s.len(), body, proto);
    for m in s.iter() {
        out.push(m);
    }
    out.finish()
}

fn sadd(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let args = ctx.args;
    let max = ctx.srv.config.intset_max();
    let mut db = ctx.db();
    let s = match create_set(&mut db, key) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let added = args[2..].iter().filter(|m| s.add_under(m, max)).count();
    ctx.changed(added as u64);
    Frame::Integer(added as i64)
}

fn srem(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let args = ctx.args;
    let mut db = ctx.db();
    let s = match write_set(&mut db, key) {
        Ok(Some(s)) => s,
        Ok(None) => return Frame::Integer(0),
        Err(e) => return e,
    };
    let n = args[2..].iter().filter(|m| s.swap_remove(&m[..])).count();
    remove_if_empty(&mut db, key);
    ctx.changed(n as u64);
    Frame::Integer(n as i64)
}

fn smembers(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let proto = ctx.client.proto;
    match read_set(&mut ctx.db(), key) {
        Ok(Some(s)) => set_reply(s, proto),
        Ok(None) => Frame::Set(Vec::new()),
        Err(e) => e,
    }
}

fn sismember(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, m) = (ctx.arg(1), ctx.arg(2));
    match read_set(&mut ctx.db(), key) {
        Ok(s) => Frame::Integer(s.is_some_and(|s| s.contains(m)) as i64),
        Err(e) => e,
    }
}

fn smismember(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let args = ctx.args;
    match read_set(&mut ctx.db(), key) {
        Ok(s) => Frame::Array(
            args[2..].iter().map(|m| Frame::Integer(s.as_ref().is_some_and(|s| s.contains(&m[..])) as i64)).collect(),
        ),
        Err(e) => e,
    }
}

fn scard(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    match read_set(&mut ctx.db(), key) {
        Ok(s) => Frame::Integer(s.map_or(0, |s| s.len() as i64)),
        Err(e) => e,
    }
}

/// One random position of the set `s` (0 when it is empty): in the members' byte order for a seeded
/// draw (`random::canonical_order`), found in one pass rather than by a sort.
fn pick_one(rng: &mut Source<'_>, s: &SetValue) -> usize {
    use rand::Rng;
    let n = rng.random_range(0..s.len().max(1));
    if !rng.is_seeded() || s.len() <= 1 {
        return n;
    }
    let member = |i: usize| s.get_index(i).map_or(&[][..], |m| m);
    let mut order: Vec<usize> = (0..s.len()).collect();
    *order.select_nth_unstable_by(n, |&a, &b| member(a).cmp(member(b))).1
}

fn spop(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() > 3 {
        return error::syntax();
    }
    let count = if ctx.argc() == 3 {
        match parse_i64_strict(ctx.arg(2)) {
            Some(n) if n >= 0 => Some(n),
            _ => return Frame::error("ERR value is out of range, must be positive"),
        }
    } else {
        None
    };
    let key = ctx.arg(1);
    let (mut db, mut rng) = ctx.db_rng();
    let s = match write_set(&mut db, key) {
        Ok(Some(s)) => s,
        Ok(None) => {
            return if count.is_some() { Frame::Set(Vec::new()) } else { Frame::Null };
        }
        Err(e) => return e,
    };
    // The members taken, for the change stream: SPOP replays as the SREM (or DEL) of what it took.
    let mut taken: Vec<SmallBytes> = Vec::new();
    let size = s.len();
    let (reply, whole) = match count {
        None => {
            let i = pick_one(&mut rng, s);
            match s.swap_remove_index(i) {
                Some(m) => {
                    let f = bulk(&m);
                    taken.push(m);
                    (f, false)
                }
                None => (Frame::Null, false),
            }
        }
        Some(0) => return Frame::Set(Vec::new()),
        Some(n) if n as u64 >= s.len() as u64 => {
            let mut all = ordered(s);
            // A seeded client (consensus mode's apply) gets the members in an order every node agrees on.
            if rng.is_seeded() {
                all.sort_by(|a, b| match (a, b) {
                    (Frame::Bulk(a), Frame::Bulk(b)) => a.cmp(b),
                    _ => std::cmp::Ordering::Equal,
                });
            }
            *s = SetValue::new();
            (Frame::Set(all), true)
        }
        Some(n) => {
            let order = canonical_order(&rng, s.len(), |i| s.get_index(i).unwrap_or_default());
            let mut picks = random_positions(&mut rng, s.len(), n);
            if let Some(o) = &order {
                // A seeded draw answers the members in the order drawn, the same on every node.
                taken = picks.iter().filter_map(|&p| s.get_index(o[p]).map(SmallBytes::from_slice)).collect();
                for m in &taken {
                    s.swap_remove(m);
                }
            } else {
                // Remove from the highest position down so that earlier picks stay valid.
                picks.sort_unstable_by(|a, b| b.cmp(a));
                taken = picks.into_iter().filter_map(|i| s.swap_remove_index(i)).collect();
            }
            (Frame::Set(taken.iter().map(|m| bulk(m)).collect()), false)
        }
    };
    drop(rng);
    remove_if_empty(&mut db, key);
    if whole {
        ctx.changed(size as u64);
        ctx.propagate_as(&[&b"DEL"[..], key]);
    } else if !taken.is_empty() {
        ctx.changed(taken.len() as u64);
        if ctx.propagating() {
            let mut srem: Vec<&[u8]> = vec![b"SREM", key];
            srem.extend(taken.iter().map(|m| &m[..]));
            ctx.propagate_as(&srem);
        }
    }
    reply
}

fn srandmember(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() > 3 {
        return error::syntax();
    }
    let key = ctx.arg(1);
    if ctx.argc() == 2 {
        let (mut db, mut rng) = ctx.db_rng();
        return match read_set(&mut db, key) {
            Ok(Some(s)) if !s.is_empty() => {
                let i = pick_one(&mut rng, s);
                s.get_index(i).map(bulk).unwrap_or(Frame::Null)
            }
            Ok(_) => Frame::Null,
            Err(e) => e,
        };
    }
    let l = match random_count(ctx.arg(2)) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let proto = ctx.client.proto;
    let cap = ctx.reply_cap();
    let (mut db, mut rng) = ctx.db_rng();
    let reply = match read_set(&mut db, key) {
        Ok(Some(s)) => {
            let member = |i: usize| s.get_index(i).map_or(&[][..], |m| m);
            let order = canonical_order(&rng, s.len(), member);
            random_reply(
                &mut rng,
                order.as_deref(),
                s.len(),
                l,
                cap,
                |i| resp::BulkArray::bulk_size(member(i).len()),
                |n, body| resp::BulkArray::array(n, body, proto),
                |out, i| out.push(member(i)),
            )
        }
        Ok(None) => Some(Frame::Array(Vec::new())),
        Err(e) => Some(e),
    };
    drop((db, rng));
    reply.unwrap_or_else(|| ctx.reply_too_large())
}

fn smove(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (src, dst, m) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let max = ctx.srv.config.intset_max();
    let mut db = ctx.db();
    // Type checks and membership through `peek`: a key is only signalled (WATCH) when it changes,
    // and the destination only when the member was actually added (Redis semantics).
    let in_src = match db.peek(src).map(|e| &e.value) {
        None => return Frame::Integer(0),
        Some(Value::Set(s)) => s.contains(m),
        Some(Value::Damaged(d)) if d.type_name() == "set" => return d.refusal(),
        Some(_) => return error::wrong_type(),
    };
    let in_dst = match db.peek(dst).map(|e| &e.value) {
        None => false,
        Some(Value::Set(s)) => s.contains(m),
        Some(Value::Damaged(d)) if d.type_name() == "set" => return d.refusal(),
        Some(_) => return error::wrong_type(),
    };
    if src == dst || !in_src {
        return Frame::Integer(in_src as i64);
    }
    if let Ok(Some(s)) = write_set(&mut db, src) {
        s.swap_remove(m);
    }
    remove_if_empty(&mut db, src);
    if !in_dst {
        match create_set(&mut db, dst) {
            Ok(d) => {
                d.add_under(m, max);
            }
            Err(e) => return e,
        }
    }
    // The removal, and the addition when the member was new there (Redis counts both).
    ctx.changed(1 + u64::from(!in_dst));
    Frame::Integer(1)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Inter,
    Union,
    Diff,
}

/// Type-checks every key, then computes the operation. `limit` stops an intersection early
/// (SINTERCARD; 0 = none).
fn set_op(db: &mut Db<'_, '_>, keys: &[Bytes], op: SetOp, limit: usize) -> Result<SetValue, Frame> {
    let mut sizes = Vec::with_capacity(keys.len());
    for k in keys {
        sizes.push(read_set(db, k)?.map(|s| s.len()));
    }
    let mut out = SetValue::default();
    match op {
        SetOp::Inter => {
            if sizes.iter().any(Option::is_none) {
                return Ok(out);
            }
            // Start from the smallest set.
            let Some(first) = (0..keys.len()).min_by_key(|&i| sizes[i]) else {
                return Ok(out);
            };
            out = read_set(db, &keys[first])?.cloned().unwrap_or_default();
            for (i, k) in keys.iter().enumerate() {
                if i == first || out.is_empty() {
                    continue;
                }
                if let Some(s) = read_set(db, k)? {
                    out.retain(|m| s.contains(m));
                }
            }
            if limit > 0 && out.len() > limit {
                out.truncate(limit);
            }
        }
        SetOp::Union => {
            for k in keys {
                if let Some(s) = read_set(db, k)? {
                    out.extend(s.iter());
                }
            }
        }
        SetOp::Diff => {
            let Some(first) = read_set(db, &keys[0])? else {
                return Ok(out);
            };
            out = first.clone();
            for k in &keys[1..] {
                if out.is_empty() {
                    break;
                }
                if let Some(s) = read_set(db, k)? {
                    out.retain(|m| !s.contains(m));
                }
            }
        }
    }
    Ok(out)
}

fn set_op_reply(ctx: &mut Ctx<'_, '_>, op: SetOp) -> Frame {
    let keys = &ctx.args[1..];
    let proto = ctx.client.proto;
    match set_op(&mut ctx.db(), keys, op, 0) {
        Ok(s) => set_reply(&s, proto),
        Err(e) => e,
    }
}

fn set_op_store(ctx: &mut Ctx<'_, '_>, op: SetOp) -> Frame {
    let dst = ctx.arg(1);
    let keys = &ctx.args[2..];
    let max = ctx.srv.config.intset_max();
    let mut db = ctx.db();
    let (reply, changed) = match set_op(&mut db, keys, op, 0) {
        Ok(s) if s.is_empty() => (Frame::Integer(0), db.remove(dst).is_some()),
        Ok(mut s) => {
            // Redis builds the result as an intset and adds each member to it.
            s.settle(max);
            let n = s.len() as i64;
            db.set(dst, Value::Set(s), false);
            (Frame::Integer(n), true)
        }
        Err(e) => return e,
    };
    ctx.changed(u64::from(changed));
    reply
}

fn sinter(ctx: &mut Ctx<'_, '_>) -> Frame {
    set_op_reply(ctx, SetOp::Inter)
}
fn sunion(ctx: &mut Ctx<'_, '_>) -> Frame {
    set_op_reply(ctx, SetOp::Union)
}
fn sdiff(ctx: &mut Ctx<'_, '_>) -> Frame {
    set_op_reply(ctx, SetOp::Diff)
}
fn sinterstore(ctx: &mut Ctx<'_, '_>) -> Frame {
    set_op_store(ctx, SetOp::Inter)
}
fn sunionstore(ctx: &mut Ctx<'_, '_>) -> Frame {
    set_op_store(ctx, SetOp::Union)
}
fn sdiffstore(ctx: &mut Ctx<'_, '_>) -> Frame {
    set_op_store(ctx, SetOp::Diff)
}

fn sintercard(ctx: &mut Ctx<'_, '_>) -> Frame {
    let numkeys = match parse_i64_strict(ctx.arg(1)) {
        Some(n) if n >= 1 => n as u64,
        _ => return Frame::error("ERR numkeys should be greater than 0"),
    };
    if numkeys > (ctx.argc() - 2) as u64 {
        return Frame::error("ERR Number of keys can't be greater than number of args");
    }
    let end = 2 + numkeys as usize;
    let mut limit = 0usize;
    let mut j = end;
    while j < ctx.argc() {
        if crate::args::eq_ic(ctx.arg(j), "limit") && j + 1 < ctx.argc() {
            match parse_i64_strict(ctx.arg(j + 1)) {
                Some(n) if n >= 0 => limit = n as usize,
                _ => return Frame::error("ERR LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return error::syntax();
        }
    }
    let keys = &ctx.args[2..end];
    match set_op(&mut ctx.db(), keys, SetOp::Inter, limit) {
        Ok(s) => Frame::Integer(s.len() as i64),
        Err(e) => e,
    }
}

fn sscan(ctx: &mut Ctx<'_, '_>) -> Frame {
    let opts = match parse_scan(ctx.args, 2) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let key = ctx.arg(1);
    let mut db = ctx.db();
    let s = match read_set(&mut db, key) {
        Ok(Some(s)) => s,
        Ok(None) => return scan_reply(0, Vec::new()),
        Err(e) => return e,
    };
    let small = s.len() <= 128 || (s.len() <= 512 && s.iter().all(|m| crate::value::canonical_i64(m).is_some()));
    if small && opts.upper.is_none() {
        let items = ordered(s).into_iter().filter(|f| matches!(f, Frame::Bulk(m) if scan_match(&opts.pattern, m)));
        return scan_reply(0, items.collect());
    }
    let mut items = Vec::new();
    let cursor = scan_positions(s.len(), opts.upper, opts.count, |i| {
        if let Some(m) = s.get_index(i)
            && scan_match(&opts.pattern, m)
        {
            items.push(bulk(m));
        }
    });
    scan_reply(cursor, items)
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    /// Two clients seeded alike (consensus mode's apply clients on two nodes) pick the same members,
    /// in scripts too, though their servers hold the members in different orders (as a node that
    /// loaded a snapshot holds an intset's members sorted).
    #[test]
    fn seeded_clients_pick_alike_whatever_the_member_order() {
        let (a, b) = (TestServer::new(), TestServer::new());
        let (mut ca, mut cb) = (a.client(), b.client());
        let members: Vec<String> = (0..40).map(|i| format!("m{i}")).collect();
        let mut reversed = members.clone();
        reversed.reverse();
        for (c, ms) in [(&mut ca, &members), (&mut cb, &reversed)] {
            for m in ms {
                c.run(&format!("sadd s {m}"));
                c.run(&format!("hset h {m} v"));
                c.run(&format!("sadd u {m}"));
            }
        }
        let script = "return {redis.call('spop', KEYS[1]), redis.call('srandmember', KEYS[1], -3), \
                      redis.call('hrandfield', KEYS[2]), math.random(1000000)}";
        let mut picks = |seed: u64| {
            let mut out = Vec::new();
            for c in [&mut ca, &mut cb] {
                c.client.random = Some(crate::random::Seeded::new(seed));
                let mut got =
                    vec![c.run("spop s"), c.run("spop s 3"), c.run("srandmember s 4"), c.run("hrandfield h -5")];
                got.push(c.run(&format!("eval \"{script}\" 2 s h")));
                got.push(c.run("spop u 1000"));
                c.client.random = None;
                out.push(got);
            }
            out
        };
        for seed in [1, 2, 3] {
            let both = picks(seed);
            assert_eq!(both[0], both[1], "seed {seed}");
        }
        assert_eq!(ca.run("sort s alpha"), cb.run("sort s alpha"));
        // Without a seed the picks are the thread generator's (here: some differ in 20 tries).
        let free: Vec<String> = (0..20).map(|_| ca.run("srandmember s")).collect();
        assert!(free.iter().any(|m| *m != free[0]), "{free:?}");
    }

    /// A seeded client's script may not call a command whose reply depends on the node, and gets
    /// KEYS and SMEMBERS sorted.
    #[test]
    fn seeded_scripts_refuse_node_dependent_commands_and_sort_keys() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("mset b 1 a 2 c 3");
        c.client.random = Some(crate::random::Seeded::new(7));
        assert_eq!(
            c.run("eval \"return redis.call('randomkey')\" 0"),
            "-ERR This Redis command is not allowed from script in consensus mode: its reply may differ between \
             nodes script: 90053e08a3fe589de49944a0fb63d402bd949b46, on @user_script:1."
        );
        for i in (0..30).rev() {
            c.run(&format!("set k{i:02} v"));
        }
        let mut names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        names.extend((0..30).map(|i| format!("k{i:02}")));
        let sorted = format!("[{}]", names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "));
        assert_eq!(c.run("eval \"return redis.call('keys', '*')\" 0"), sorted);
        c.client.random = None;
        assert_ne!(c.run("eval \"return redis.call('keys', '*')\" 0"), sorted, "KEYS was sorted anyway");
        assert!(c.run("eval \"return redis.call('randomkey')\" 0").starts_with('"'));
    }

    /// SMOVE signals the destination (WATCH) only when the member was added (set.tcl).
    #[test]
    fn smove_touches_dst_only_when_added() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let mut c2 = ts.client();
        c.transcript(
            r#"
            > sadd src a b
            :2
            > sadd dst a
            :1
            > watch dst
            +OK
            > multi
            +OK
            > sadd dst c
            +QUEUED
            "#,
        );
        assert_eq!(c2.run("smove src dst a"), ":1");
        assert_eq!(c2.run("smove src dst a"), ":0");
        assert_eq!(c2.run("smove src src b"), ":1");
        c.transcript(
            r#"
            > exec
            [:1]
            > scard dst
            :2
            > sismember src b
            :1
            > watch dst
            +OK
            > multi
            +OK
            > scard dst
            +QUEUED
            "#,
        );
        assert_eq!(c2.run("smove src dst b"), ":1");
        c.transcript(
            r#"
            > exec
            (nil-array)
            > exists src
            :0
            > set str x
            +OK
            > smove str dst a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > smove dst str a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > smove nosuch str a
            :0
            "#,
        );
    }

    /// Replies verified against redis-server 7.0.15 (RESP3).
    #[test]
    fn set_transcript_resp3() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.client.proto = resp::Protocol::Resp3;
        c.transcript(
            r#"
            > sadd s 1 2 3
            :3
            > sadd s 3 4
            :1
            > scard s
            :4
            > scard nope
            :0
            > sismember s 1
            :1
            > sismember s 9
            :0
            > sismember nope 1
            :0
            > smismember s 1 9 2
            [:1, :0, :1]
            > smismember nope 1 2
            [:0, :0]
            > srem s 1 9
            :1
            > srem nope 1
            :0
            > smembers s
            ~["2", "3", "4"]
            > smembers nope
            ~[]
            > srem s 2 3 4
            :3
            > get s
            (nil)
            > set str v
            +OK
            > sadd str a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > srem str a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > smembers str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > sismember str a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > smismember str a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > scard str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > spop str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > srandmember str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > smove str s a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > sscan str 0
            -WRONGTYPE Operation against a key holding the wrong kind of value
            # spop
            > sadd p 1
            :1
            > spop p
            "1"
            > get p
            (nil)
            > spop nope
            (nil)
            > spop nope 2
            ~[]
            > sadd p 1 2
            :2
            > spop p 0
            ~[]
            > spop p -1
            -ERR value is out of range, must be positive
            > spop p x
            -ERR value is out of range, must be positive
            > spop p 1 2
            -ERR syntax error
            > spop p 5
            ~["1", "2"]
            > get p
            (nil)
            > sadd one x
            :1
            > srandmember one
            "x"
            > srandmember one 0
            []
            > srandmember one 3
            ["x"]
            > srandmember one -3
            ["x", "x", "x"]
            > srandmember one x
            -ERR value is not an integer or out of range
            > srandmember one -9223372036854775808
            -ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807
            > srandmember one 1 2
            -ERR syntax error
            > srandmember nope
            (nil)
            > srandmember nope 5
            []
            > spop one 1
            ~["x"]
            # smove
            > sadd a 1 2
            :2
            > sadd b 3
            :1
            > smove a b 1
            :1
            > smove a b 9
            :0
            > smove nope b 1
            :0
            > smove a str 2
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > smove str a 2
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > smove a a 2
            :1
            > smove a a 9
            :0
            > smove a c 2
            :1
            > get a
            (nil)
            > smembers c
            ~["2"]
            # algebra
            > sadd x 1 2 3 4
            :4
            > sadd y 3 4 5
            :3
            > sadd z 4
            :1
            > sinter x y
            ~["3", "4"]
            > sinter x y z
            ~["4"]
            > sinter x nope
            ~[]
            > sinter x str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > sinter nope str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > sunion z nope
            ~["4"]
            > sunion z str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > sdiff x y
            ~["1", "2"]
            > sdiff x y z
            ~["1", "2"]
            > sdiff nope x
            ~[]
            > sdiff x str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > sinterstore d x y
            :2
            > smembers d
            ~["3", "4"]
            > sinterstore d x nope
            :0
            > get d
            (nil)
            > sunionstore d z nope
            :1
            > smembers d
            ~["4"]
            > sdiffstore d x x
            :0
            > get d
            (nil)
            > sdiffstore str2 z
            :1
            > smembers str2
            ~["4"]
            > sinterstore d x str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > sintercard 2 x y
            :2
            > sintercard 2 x y limit 1
            :1
            > sintercard 2 x y limit 0
            :2
            > sintercard 2 x nope
            :0
            > sintercard 1 x
            :4
            > sintercard 0 x
            -ERR numkeys should be greater than 0
            > sintercard x x
            -ERR numkeys should be greater than 0
            > sintercard 3 x y
            -ERR Number of keys can't be greater than number of args
            > sintercard 2 x y limit -1
            -ERR LIMIT can't be negative
            > sintercard 2 x y limit x
            -ERR LIMIT can't be negative
            > sintercard 2 x y foo
            -ERR syntax error
            > sintercard 2 x str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            # scan
            > sscan z 0
            ["0", ["4"]]
            > sscan x 0 match 1
            ["0", ["1"]]
            > sscan x 0 count 1
            ["0", ["1", "2", "3", "4"]]
            > sscan nope 0
            ["0", []]
            > sscan x 0 count 0
            -ERR syntax error
            "#,
        );
    }

    /// A full SSCAN iteration returns every element present throughout, while others churn.
    #[test]
    fn sscan_full_iteration() {
        use resp::Frame;
        let ts = TestServer::new();
        let mut c = ts.client();
        for i in 0..1000 {
            c.cmd(&["SADD", "k", &format!("m{i}")]);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = "0".to_string();
        let mut round = 0;
        loop {
            let Some(Frame::Array(r)) = c.cmd(&["SSCAN", "k", &cursor, "COUNT", "7"]) else { panic!() };
            let (Frame::Bulk(cur), Frame::Array(items)) = (&r[0], &r[1]) else { panic!() };
            for it in items.iter().step_by(1) {
                let Frame::Bulk(m) = it else { panic!() };
                seen.insert(m.clone());
            }
            // churn: delete some late elements, add new ones
            round += 1;
            c.cmd(&["SREM", "k", &format!("m{}", 500 + round)]);
            c.cmd(&["SADD", "k", &format!("n{round}")]);
            cursor = String::from_utf8(cur.to_vec()).unwrap();
            if cursor == "0" {
                break;
            }
        }
        assert!(round > 10);
        for i in 0..500 {
            assert!(seen.contains(format!("m{i}").as_bytes()), "missed m{i}");
        }
    }
}
