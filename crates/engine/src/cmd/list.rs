//! The list family: LPUSH, LPOP, LRANGE, LMOVE, LMPOP...

use super::BASE;
use crate::args::eq_ic;
use crate::command::{Command, Ctx, Flags, Keys};
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

pub(crate) use crate::ops::End;

/// Pops through [`crate::ops::list_pop`] and reports it: a change per element, propagated as
/// `LPOP|RPOP key [n]` (what LPOP, LMPOP, BLPOP and BLMPOP replay as, served or not). `with_count`:
/// the caller asked for a count (the propagated form carries one).
pub(crate) fn pop(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    end: End,
    count: usize,
    with_count: bool,
) -> Result<Option<Vec<SmallBytes>>, Frame> {
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
pub(crate) type Popped<'k> = (&'k [u8], Vec<SmallBytes>);

/// Pops from the first of `keys` that holds a list, through [`pop`] (LMPOP, BLMPOP, BLPOP): the key
/// and what was popped, or Ok(None) when none holds one.
pub(crate) fn pop_first<'k>(
    ctx: &mut Ctx<'_, '_>,
    keys: &'k [bytes::Bytes],
    end: End,
    count: usize,
    with_count: bool,
) -> Result<Option<Popped<'k>>, Frame> {
    for key in keys {
        if let Some(v) = pop(ctx, key, end, count, with_count)? {
            return Ok(Some((key, v)));
        }
    }
    Ok(None)
}

/// Moves through [`crate::ops::list_move`] and reports it: one change, propagated as `LMOVE` (what
/// LMOVE, RPOPLPUSH, BLMOVE and BRPOPLPUSH replay as).
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
        ctx.propagate_as(&[&b"LMOVE"[..], src, dst, from.name(), to.name()]);
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

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    /// Replies verified against redis-server 7.0.15.
    #[test]
    fn list_transcript() {
        TestServer::new().transcript(
            r#"
            # push/pop
            > lpush l a b c
            :3
            > rpush l d e
            :5
            > lrange l 0 -1
            ["c", "b", "a", "d", "e"]
            > lpushx nope a
            :0
            > rpushx nope a
            :0
            > lpushx l z
            :6
            > rpushx l y
            :7
            > llen l
            :7
            > llen nope
            :0
            > lpop l
            "z"
            > rpop l
            "y"
            > lpop l 2
            ["c", "b"]
            > rpop l 2
            ["e", "d"]
            > lpop l 0
            []
            > lpop l -1
            -ERR value is out of range, must be positive
            > lpop l abc
            -ERR value is out of range, must be positive
            > lpop l 1 2
            -ERR wrong number of arguments for 'lpop' command
            > lpop nope
            (nil)
            > lpop nope 3
            (nil-array)
            > lpop nope 0
            (nil-array)
            > lpop l 10
            ["a"]
            > get l
            (nil)
            > set s v
            +OK
            > lpush s a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > lpop s
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > llen s
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > lrange s 0 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            # ranges
            > rpush r 1 2 3 4 5 6
            :6
            > lrange r 1 3
            ["2", "3", "4"]
            > lrange r -3 -1
            ["4", "5", "6"]
            > lrange r -100 100
            ["1", "2", "3", "4", "5", "6"]
            > lrange r 4 2
            []
            > lrange r 10 20
            []
            > lrange r 0 -7
            []
            > lrange r x 1
            -ERR value is not an integer or out of range
            > lrange nope 0 -1
            []
            > lindex r 0
            "1"
            > lindex r -1
            "6"
            > lindex r 6
            (nil)
            > lindex r -7
            (nil)
            > lindex r x
            -ERR value is not an integer or out of range
            > lindex nope 0
            (nil)
            > lindex s 0
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > lset r 0 a
            +OK
            > lset r -1 f
            +OK
            > lset r 6 x
            -ERR index out of range
            > lset nope 0 x
            -ERR no such key
            > lset s 0 x
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > lset r x y
            -ERR value is not an integer or out of range
            > lrange r 0 -1
            ["a", "2", "3", "4", "5", "f"]
            # lrem
            > rpush m a b a c a d a
            :7
            > lrem m 2 a
            :2
            > lrange m 0 -1
            ["b", "c", "a", "d", "a"]
            > lrem m -1 a
            :1
            > lrange m 0 -1
            ["b", "c", "a", "d"]
            > lrem m 0 a
            :1
            > lrange m 0 -1
            ["b", "c", "d"]
            > lrem m 0 zz
            :0
            > lrem nope 0 a
            :0
            > lrem m x a
            -ERR value is not an integer or out of range
            > lrem s 0 a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > lrem m 0 b
            :1
            > lrem m 0 c
            :1
            > lrem m 0 d
            :1
            > get m
            (nil)
            # ltrim
            > rpush t 1 2 3 4 5
            :5
            > ltrim t 1 -2
            +OK
            > lrange t 0 -1
            ["2", "3", "4"]
            > ltrim t -100 100
            +OK
            > lrange t 0 -1
            ["2", "3", "4"]
            > ltrim t 5 1
            +OK
            > get t
            (nil)
            > ltrim nope 0 1
            +OK
            > ltrim s 0 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > ltrim t a b
            -ERR value is not an integer or out of range
            # linsert
            > rpush i a b c
            :3
            > linsert i before b x
            :4
            > linsert i after c y
            :5
            > linsert i after zz q
            :-1
            > linsert i middle b q
            -ERR syntax error
            > linsert nope before a b
            :0
            > linsert s before a b
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > lrange i 0 -1
            ["a", "x", "b", "c", "y"]
            # lpos
            > rpush p a b c 1 2 3 c c
            :8
            > lpos p c
            :2
            > lpos p c rank 2
            :6
            > lpos p c rank -1
            :7
            > lpos p c rank -2
            :6
            > lpos p c count 0
            [:2, :6, :7]
            > lpos p c count 2
            [:2, :6]
            > lpos p c count 0 rank -1
            [:7, :6, :2]
            > lpos p c count 0 maxlen 3
            [:2]
            > lpos p c rank 0
            -ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list
            > lpos p c count -1
            -ERR COUNT can't be negative
            > lpos p c maxlen -1
            -ERR MAXLEN can't be negative
            > lpos p c rank x
            -ERR value is not an integer or out of range
            > lpos p c foo
            -ERR syntax error
            > lpos p c rank
            -ERR syntax error
            > lpos p zz
            (nil)
            > lpos p zz count 0
            []
            > lpos nope a
            (nil)
            > lpos nope a count 1
            []
            > lpos s a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > lpos p c rank 5
            (nil)
            # lmove
            > rpush src a b c
            :3
            > lmove src dst left right
            "a"
            > lmove src dst right left
            "c"
            > lrange dst 0 -1
            ["c", "a"]
            > lmove src dst up left
            -ERR syntax error
            > lmove nope dst left left
            (nil)
            > lmove src s left left
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > lmove s src left left
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > lrange src 0 -1
            ["b"]
            > lmove src src left right
            "b"
            > lmove src dst left left
            "b"
            > get src
            (nil)
            > lrange dst 0 -1
            ["b", "c", "a"]
            > rpoplpush dst dst
            "a"
            > lrange dst 0 -1
            ["a", "b", "c"]
            > rpoplpush dst newl
            "c"
            > lrange newl 0 -1
            ["c"]
            > rpoplpush nope dst
            (nil)
            # lmpop
            > rpush ma 1 2 3
            :3
            > rpush mb 4 5
            :2
            > lmpop 2 nope ma left
            ["ma", ["1"]]
            > lmpop 2 nope ma right count 10
            ["ma", ["3", "2"]]
            > get ma
            (nil)
            > lmpop 2 ma mb left count 1
            ["mb", ["4"]]
            > lmpop 1 nope left
            (nil-array)
            > lmpop 0 ma left
            -ERR numkeys should be greater than 0
            > lmpop -1 ma left
            -ERR numkeys should be greater than 0
            > lmpop x ma left
            -ERR numkeys should be greater than 0
            > lmpop 3 ma left
            -ERR syntax error
            > lmpop 1 mb up
            -ERR syntax error
            > lmpop 1 mb left count 0
            -ERR count should be greater than 0
            > lmpop 1 mb left count x
            -ERR count should be greater than 0
            > lmpop 1 mb left count 1 count 1
            -ERR syntax error
            > lmpop 1 mb left foo
            -ERR syntax error
            > lmpop 2 s mb left
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > lmpop 2 mb s left
            ["mb", ["5"]]
            "#,
        );
    }
}
