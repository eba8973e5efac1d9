//! The list family: LPUSH, LPOP, LRANGE, LMOVE, LMPOP...

use super::base::BASE;
use crate::args::eq_ic;
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::error;
use crate::types::access::{
    MPop, bulk, create_list, numkeys_keys, parse_mpop, read_list, remove_if_empty, sb, write_list,
};
use crate::value::SmallBytes;
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "lpush",
        arity: -3,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: lpush,
        ..BASE
    },
    Command {
        name: "rpush",
        arity: -3,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: rpush,
        ..BASE
    },
    Command {
        name: "lpushx",
        arity: -3,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: lpushx,
        ..BASE
    },
    Command {
        name: "rpushx",
        arity: -3,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: rpushx,
        ..BASE
    },
    Command {
        name: "lpop",
        arity: -2,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: lpop,
        ..BASE
    },
    Command {
        name: "rpop",
        arity: -2,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: rpop,
        ..BASE
    },
    Command {
        name: "llen",
        arity: 2,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: llen,
        ..BASE
    },
    Command {
        name: "lrange",
        arity: 4,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: lrange,
        ..BASE
    },
    Command {
        name: "lindex",
        arity: 3,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: lindex,
        ..BASE
    },
    Command {
        name: "lset",
        arity: 4,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: lset,
        ..BASE
    },
    Command {
        name: "lrem",
        arity: 4,
        flags: Flags::WRITE,
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: lrem,
        ..BASE
    },
    Command {
        name: "ltrim",
        arity: 4,
        flags: Flags::WRITE,
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: ltrim,
        ..BASE
    },
    Command {
        name: "linsert",
        arity: 5,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: linsert,
        ..BASE
    },
    Command {
        name: "lpos",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::List,
        handler: lpos,
        ..BASE
    },
    Command {
        name: "lmove",
        arity: 5,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Range { first: 1, last: 2, step: 1 },
        group: crate::command::Group::List,
        handler: lmove,
        ..BASE
    },
    Command {
        name: "rpoplpush",
        arity: 3,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Range { first: 1, last: 2, step: 1 },
        group: crate::command::Group::List,
        handler: rpoplpush,
        ..BASE
    },
    Command {
        name: "lmpop",
        arity: -4,
        flags: Flags::WRITE,
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: numkeys_keys::<1> },
        group: crate::command::Group::List,
        handler: lmpop,
        ..BASE
    },
];

pub(crate) use crate::ops::{End, ListPopped};

/// Pops through [`crate::ops::list_pop`] and reports it: a change per element, propagated as
/// `LPOP|RPOP key [n]` (what LPOP, LMPOP, BLPOP and BLMPOP replay as, served or not). `with_count`:
/// the caller asked for a count (the propagated form carries one).
#[inline]
pub(crate) fn pop(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    end: End,
    count: usize,
    with_count: bool,
) -> Result<Option<ListPopped>, Frame> {
    let out = crate::ops::list_pop(&mut ctx.db(), key, end, count)?;
    if let Some(v) = &out
        && !v.is_empty()
    {
        ctx.changed(v.len() as u64);
        if with_count {
            let n = v.len().to_string();
            ctx.propagate_as(&[end.pop_command(), key, n.as_bytes()]);
        } else {
            ctx.propagate_as(&[end.pop_command(), key]);
        }
    }
    Ok(out)
}

/// A key and the elements popped from it.
pub(crate) type Popped<'k> = (&'k [u8], ListPopped);

/// Pops from the first of `keys` that holds a list, through [`pop`] (LMPOP, BLMPOP, BLPOP): the key
/// and what was popped, or Ok(None) when none holds one.
pub(crate) fn pop_first<'k>(
    ctx: &mut Ctx<'_, '_>,
    keys: &'k [bytes::Bytes],
    end: End,
    count: usize,
    with_count: bool,
) -> Result<Option<Popped<'k>>, Frame> {
    crate::types::access::first_key(keys, |key| pop(ctx, key, end, count, with_count))
}

/// Moves through [`crate::ops::list_move`] and reports it: one change, propagated as Redis
/// propagates it: `RPOPLPUSH` for RPOPLPUSH and BRPOPLPUSH, `LMOVE` for LMOVE and BLMOVE.
pub(crate) fn lmove_op(
    ctx: &mut Ctx<'_, '_>,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> Result<Option<SmallBytes>, Frame> {
    let out = crate::ops::list_move(&mut ctx.db(), src, dst, from, to)?;
    if out.is_some() {
        ctx.changed(1);
        if matches!(ctx.cmd.name, "rpoplpush" | "brpoplpush") {
            ctx.propagate_as(&[&b"RPOPLPUSH"[..], src, dst]);
        } else {
            ctx.propagate_as(&[&b"LMOVE"[..], src, dst, from.name(), to.name()]);
        }
    }
    Ok(out)
}

/// Parses `LEFT` / `RIGHT`.
pub(crate) fn parse_end(b: &[u8]) -> Result<End, Frame> {
    if eq_ic(b, "left") {
        Ok(End::Left)
    } else if eq_ic(b, "right") {
        Ok(End::Right)
    } else {
        Err(error::syntax())
    }
}

/// `getPositiveLongFromObjectOrReply` with Redis's default message.
fn positive(b: &[u8], msg: &str) -> Result<i64, Frame> {
    match crate::args::parse_i64_strict(b) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(Frame::error(format!("ERR {msg}"))),
    }
}

fn push_generic(ctx: &mut Ctx<'_, '_>, end: End, only_existing: bool) -> Frame {
    let key = ctx.arg(1);
    let args = ctx.args;
    let mut db = ctx.db();
    let l = if only_existing {
        match write_list(&mut db, key) {
            Ok(Some(l)) => l,
            Ok(None) => return Frame::Integer(0),
            Err(e) => return e,
        }
    } else {
        match create_list(&mut db, key) {
            Ok(l) => l,
            Err(e) => return e,
        }
    };
    for a in &args[2..] {
        match end {
            End::Left => l.push_front(sb(a)),
            End::Right => l.push_back(sb(a)),
        }
    }
    let len = l.len();
    ctx.changed(args.len() as u64 - 2);
    Frame::Integer(len as i64)
}

fn lpush(ctx: &mut Ctx<'_, '_>) -> Frame {
    push_generic(ctx, End::Left, false)
}
fn rpush(ctx: &mut Ctx<'_, '_>) -> Frame {
    push_generic(ctx, End::Right, false)
}
fn lpushx(ctx: &mut Ctx<'_, '_>) -> Frame {
    push_generic(ctx, End::Left, true)
}
fn rpushx(ctx: &mut Ctx<'_, '_>) -> Frame {
    push_generic(ctx, End::Right, true)
}

fn pop_generic(ctx: &mut Ctx<'_, '_>, end: End) -> Frame {
    if ctx.argc() > 3 {
        return error::wrong_arity(ctx.cmd.name);
    }
    let count = if ctx.argc() == 3 {
        match positive(ctx.arg(2), "value is out of range, must be positive") {
            Ok(n) => Some(n as usize),
            Err(e) => return e,
        }
    } else {
        None
    };
    let key = ctx.arg(1);
    match pop(ctx, key, end, count.unwrap_or(1), count.is_some()) {
        Err(e) => e,
        Ok(None) if count.is_some() => Frame::NullArray,
        Ok(None) => Frame::Null,
        Ok(Some(v)) if count.is_some() => Frame::Array(v.iter().map(|x| bulk(x)).collect()),
        Ok(Some(v)) => v.first().map(|x| bulk(x)).unwrap_or(Frame::Null),
    }
}

fn lpop(ctx: &mut Ctx<'_, '_>) -> Frame {
    pop_generic(ctx, End::Left)
}
fn rpop(ctx: &mut Ctx<'_, '_>) -> Frame {
    pop_generic(ctx, End::Right)
}

fn llen(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    match read_list(&mut ctx.db(), key) {
        Ok(l) => Frame::Integer(l.map_or(0, |l| l.len() as i64)),
        Err(e) => e,
    }
}

/// Normalizes a Redis (start, end) range over `len` items; None when empty.
pub(crate) fn norm_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { start.saturating_add(len) } else { start };
    let mut end = if end < 0 { end.saturating_add(len) } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

fn lrange(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (start, end) = match (ctx.int_arg(2), ctx.int_arg(3)) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let key = ctx.arg(1);
    let proto = ctx.client.proto;
    match read_list(&mut ctx.db(), key) {
        Ok(Some(l)) => match norm_range(start, end, l.len()) {
            Some((s, e)) => super::hash::encoded_array(|| l.range(s..=e).map(|v| &v[..]), proto),
            None => Frame::Array(Vec::new()),
        },
        Ok(None) => Frame::Array(Vec::new()),
        Err(e) => e,
    }
}

/// Position of a Redis list index (negative from the tail), if in range.
fn list_index(i: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if i < 0 { i.checked_add(len)? } else { i };
    (0..len).contains(&i).then_some(i as usize)
}

fn lindex(ctx: &mut Ctx<'_, '_>) -> Frame {
    let idx = match ctx.int_arg(2) {
        Ok(i) => i,
        Err(e) => return e,
    };
    let key = ctx.arg(1);
    match read_list(&mut ctx.db(), key) {
        Ok(Some(l)) => list_index(idx, l.len()).and_then(|i| l.get(i)).map(|v| bulk(v)).unwrap_or(Frame::Null),
        Ok(None) => Frame::Null,
        Err(e) => e,
    }
}

fn lset(ctx: &mut Ctx<'_, '_>) -> Frame {
    let idx = match ctx.int_arg(2) {
        Ok(i) => i,
        Err(e) => return e,
    };
    let (key, val) = (ctx.arg(1), ctx.arg(3));
    match write_list(&mut ctx.db(), key) {
        Ok(Some(l)) => match list_index(idx, l.len()) {
            Some(i) => {
                l[i] = sb(val);
                ctx.changed(1);
                Frame::ok()
            }
            None => Frame::error("ERR index out of range"),
        },
        Ok(None) => error::no_such_key(),
        Err(e) => e,
    }
}

fn lrem(ctx: &mut Ctx<'_, '_>) -> Frame {
    let count = match ctx.int_arg(2) {
        Ok(i) => i,
        Err(e) => return e,
    };
    let (key, elem) = (ctx.arg(1), ctx.arg(3));
    let mut db = ctx.db();
    let l = match write_list(&mut db, key) {
        Ok(Some(l)) => l,
        Ok(None) => return Frame::Integer(0),
        Err(e) => return e,
    };
    let limit = if count == 0 { usize::MAX } else { count.unsigned_abs().min(usize::MAX as u64) as usize };
    let mut removed = 0usize;
    if count >= 0 {
        let mut i = 0;
        while i < l.len() && removed < limit {
            if l[i][..] == *elem {
                l.remove(i);
                removed += 1;
            } else {
                i += 1;
            }
        }
    } else {
        let mut i = l.len();
        while i > 0 && removed < limit {
            i -= 1;
            if l[i][..] == *elem {
                l.remove(i);
                removed += 1;
            }
        }
    }
    remove_if_empty(&mut db, key);
    ctx.changed(removed as u64);
    Frame::Integer(removed as i64)
}

fn ltrim(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (start, end) = match (ctx.int_arg(2), ctx.int_arg(3)) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let key = ctx.arg(1);
    let mut db = ctx.db();
    let l = match write_list(&mut db, key) {
        Ok(Some(l)) => l,
        Ok(None) => return Frame::ok(),
        Err(e) => return e,
    };
    let before = l.len();
    match norm_range(start, end, l.len()) {
        Some((s, e)) => {
            l.truncate(e + 1);
            l.drain(..s);
        }
        None => l.clear(),
    }
    let removed = before - l.len();
    remove_if_empty(&mut db, key);
    ctx.changed(removed as u64);
    Frame::ok()
}

fn linsert(ctx: &mut Ctx<'_, '_>) -> Frame {
    let after = if eq_ic(ctx.arg(2), "after") {
        true
    } else if eq_ic(ctx.arg(2), "before") {
        false
    } else {
        return error::syntax();
    };
    let (key, pivot, elem) = (ctx.arg(1), ctx.arg(3), ctx.arg(4));
    let mut db = ctx.db();
    let l = match write_list(&mut db, key) {
        Ok(Some(l)) => l,
        Ok(None) => return Frame::Integer(0),
        Err(e) => return e,
    };
    match l.iter().position(|v| v[..] == *pivot) {
        Some(i) => {
            l.insert(if after { i + 1 } else { i }, sb(elem));
            let len = l.len();
            ctx.changed(1);
            Frame::Integer(len as i64)
        }
        None => Frame::Integer(-1),
    }
}

fn lpos(ctx: &mut Ctx<'_, '_>) -> Frame {
    let mut rank: i64 = 1;
    let mut count: Option<i64> = None;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < ctx.argc() {
        let more = j + 1 < ctx.argc();
        let opt = ctx.arg(j);
        if eq_ic(opt, "rank") && more {
            rank = match ctx.int_arg(j + 1) {
                Ok(r) => r,
                Err(e) => return e,
            };
            if rank == 0 {
                return Frame::error(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use \
                     negative to start from the end of the list",
                );
            }
        } else if eq_ic(opt, "count") && more {
            count = match positive(ctx.arg(j + 1), "COUNT can't be negative") {
                Ok(c) => Some(c),
                Err(e) => return e,
            };
        } else if eq_ic(opt, "maxlen") && more {
            maxlen = match positive(ctx.arg(j + 1), "MAXLEN can't be negative") {
                Ok(c) => c,
                Err(e) => return e,
            };
        } else {
            return error::syntax();
        }
        j += 2;
    }
    let (key, elem) = (ctx.arg(1), ctx.arg(2));
    let mut db = ctx.db();
    let l = match read_list(&mut db, key) {
        Ok(Some(l)) => l,
        Ok(None) => {
            return if count.is_some() { Frame::Array(Vec::new()) } else { Frame::Null };
        }
        Err(e) => return e,
    };
    let from_tail = rank < 0;
    let rank = rank.unsigned_abs();
    let len = l.len();
    let maxlen = if maxlen == 0 { usize::MAX } else { maxlen as usize };
    let mut matches = 0u64;
    let mut out = Vec::new();
    for k in 0..len.min(maxlen) {
        let idx = if from_tail { len - 1 - k } else { k };
        if l[idx][..] == *elem {
            matches += 1;
            if matches >= rank {
                out.push(Frame::Integer(idx as i64));
                match count {
                    None => break,
                    Some(c) if c != 0 && out.len() as i64 >= c => break,
                    _ => {}
                }
            }
        }
    }
    match count {
        Some(_) => Frame::Array(out),
        None => out.pop().unwrap_or(Frame::Null),
    }
}

/// LMOVE / RPOPLPUSH.
fn move_generic(ctx: &mut Ctx<'_, '_>, from: End, to: End) -> Frame {
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    match lmove_op(ctx, src, dst, from, to) {
        Ok(Some(v)) => bulk(&v),
        Ok(None) => Frame::Null,
        Err(e) => e,
    }
}

fn lmove(ctx: &mut Ctx<'_, '_>) -> Frame {
    let from = match parse_end(ctx.arg(3)) {
        Ok(e) => e,
        Err(e) => return e,
    };
    let to = match parse_end(ctx.arg(4)) {
        Ok(e) => e,
        Err(e) => return e,
    };
    move_generic(ctx, from, to)
}

fn rpoplpush(ctx: &mut Ctx<'_, '_>) -> Frame {
    move_generic(ctx, End::Right, End::Left)
}

fn lmpop(ctx: &mut Ctx<'_, '_>) -> Frame {
    let MPop { keys, first: left, count } = match parse_mpop(ctx.args, 1, ["left", "right"]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let end = if left { End::Left } else { End::Right };
    match pop_first(ctx, &ctx.args[keys], end, count, true) {
        Ok(Some((key, v))) => Frame::Array(vec![bulk(key), Frame::Array(v.iter().map(|x| bulk(x)).collect())]),
        Ok(None) => Frame::NullArray,
        Err(e) => e,
    }
}
