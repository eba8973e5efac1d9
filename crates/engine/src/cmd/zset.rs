//! The sorted-set family: ZADD, ZRANGE (and its BYSCORE/BYLEX/REV/LIMIT forms), ZRANK, ZPOP*,
//! ZRANDMEMBER, ZSCAN, ZREMRANGEBY*...
//!
//! Scores are replied with [`Frame::Double`]: RESP3 doubles, "%.17g" bulk strings in RESP2, as
//! Redis 7.0 does.

use super::base::BASE;
use crate::args::{eq_ic, parse_f64, parse_i64_strict};
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::error;
use crate::types::access::{
    MPop, bulk, create_zset, numkeys_keys, parse_mpop, parse_scan, read_zset, remove_if_empty, scan_match,
    scan_positions, scan_reply, write_zset,
};
use crate::types::zset::ZSet;
use crate::value::{SmallBytes, Value};
use resp::{Frame, Protocol};

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "zadd",
        arity: -4,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zadd,
        ..BASE
    },
    Command {
        name: "zincrby",
        arity: 4,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zincrby,
        ..BASE
    },
    Command {
        name: "zscore",
        arity: 3,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zscore,
        ..BASE
    },
    Command {
        name: "zmscore",
        arity: -3,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zmscore,
        ..BASE
    },
    Command {
        name: "zcard",
        arity: 2,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zcard,
        ..BASE
    },
    Command {
        name: "zcount",
        arity: 4,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zcount,
        ..BASE
    },
    Command {
        name: "zrank",
        arity: 3,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zrank,
        ..BASE
    },
    Command {
        name: "zrevrank",
        arity: 3,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zrevrank,
        ..BASE
    },
    Command {
        name: "zrem",
        arity: -3,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zrem,
        ..BASE
    },
    Command {
        name: "zrange",
        arity: -4,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zrange,
        ..BASE
    },
    Command {
        name: "zrangestore",
        arity: -5,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Range { first: 1, last: 2, step: 1 },
        group: crate::command::Group::SortedSet,
        handler: zrangestore,
        ..BASE
    },
    Command {
        name: "zrevrange",
        arity: -4,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zrevrange,
        ..BASE
    },
    Command {
        name: "zrangebyscore",
        arity: -4,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zrangebyscore,
        ..BASE
    },
    Command {
        name: "zrevrangebyscore",
        arity: -4,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zrevrangebyscore,
        ..BASE
    },
    Command {
        name: "zrangebylex",
        arity: -4,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zrangebylex,
        ..BASE
    },
    Command {
        name: "zrevrangebylex",
        arity: -4,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zrevrangebylex,
        ..BASE
    },
    Command {
        name: "zlexcount",
        arity: 4,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zlexcount,
        ..BASE
    },
    Command {
        name: "zpopmin",
        arity: -2,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zpopmin,
        ..BASE
    },
    Command {
        name: "zpopmax",
        arity: -2,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zpopmax,
        ..BASE
    },
    Command {
        name: "zrandmember",
        arity: -2,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zrandmember,
        ..BASE
    },
    Command {
        name: "zscan",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zscan,
        ..BASE
    },
    Command {
        name: "zremrangebyrank",
        arity: 4,
        flags: Flags::WRITE,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zremrangebyrank,
        ..BASE
    },
    Command {
        name: "zremrangebyscore",
        arity: 4,
        flags: Flags::WRITE,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zremrangebyscore,
        ..BASE
    },
    Command {
        name: "zremrangebylex",
        arity: 4,
        flags: Flags::WRITE,
        keys: Keys::ONE,
        group: crate::command::Group::SortedSet,
        handler: zremrangebylex,
        ..BASE
    },
    Command {
        name: "zunionstore",
        arity: -4,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Custom { first: 1, last: 1, step: 1, find: store_keys },
        group: crate::command::Group::SortedSet,
        handler: zunionstore,
        ..BASE
    },
    Command {
        name: "zinterstore",
        arity: -4,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Custom { first: 1, last: 1, step: 1, find: store_keys },
        group: crate::command::Group::SortedSet,
        handler: zinterstore,
        ..BASE
    },
    Command {
        name: "zdiffstore",
        arity: -4,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Custom { first: 1, last: 1, step: 1, find: store_keys },
        group: crate::command::Group::SortedSet,
        handler: zdiffstore,
        ..BASE
    },
    Command {
        name: "zunion",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: numkeys_keys::<1> },
        group: crate::command::Group::SortedSet,
        handler: zunion,
        ..BASE
    },
    Command {
        name: "zinter",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: numkeys_keys::<1> },
        group: crate::command::Group::SortedSet,
        handler: zinter,
        ..BASE
    },
    Command {
        name: "zdiff",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: numkeys_keys::<1> },
        group: crate::command::Group::SortedSet,
        handler: zdiff,
        ..BASE
    },
    Command {
        name: "zintercard",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: numkeys_keys::<1> },
        group: crate::command::Group::SortedSet,
        handler: zintercard,
        ..BASE
    },
    Command {
        name: "zmpop",
        arity: -4,
        flags: Flags::WRITE,
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: numkeys_keys::<1> },
        group: crate::command::Group::SortedSet,
        handler: zmpop,
        ..BASE
    },
];

fn not_float_range() -> Frame {
    Frame::error("ERR min or max is not a float")
}
fn not_lex_range() -> Frame {
    Frame::error("ERR min or max not valid string range item")
}

/// A score interval (`ZRANGEBYSCORE` syntax: `1.5`, `(1.5`, `-inf`, `+inf`).
#[derive(Clone, Copy)]
struct ScoreRange {
    min: f64,
    minex: bool,
    max: f64,
    maxex: bool,
}

/// One end of a score interval, parsed like Redis (strtod over the whole rest of the string).
fn parse_score_bound(b: &[u8]) -> Option<(f64, bool)> {
    let (ex, body) = match b.first() {
        Some(b'(') => (true, &b[1..]),
        _ => (false, b),
    };
    let s = std::str::from_utf8(body).ok()?.trim_start();
    if s.is_empty() {
        // strtod consumes nothing and leaves the terminator: Redis reads 0.
        return body.is_empty().then_some((0.0, ex));
    }
    let v = match parse_f64(s.as_bytes()) {
        Some(v) => v,
        None => {
            let l = s.to_ascii_lowercase();
            if l.contains("nan") || l.contains('_') {
                return None;
            }
            // Overflow/underflow are accepted by strtod (HUGE_VAL / 0).
            s.parse::<f64>().ok()?
        }
    };
    (!v.is_nan()).then_some((v, ex))
}

fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Frame> {
    match (parse_score_bound(min), parse_score_bound(max)) {
        (Some((min, minex)), Some((max, maxex))) => Ok(ScoreRange { min, minex, max, maxex }),
        _ => Err(not_float_range()),
    }
}

impl ScoreRange {
    /// Ranks `[start, end)` of the elements inside the interval.
    fn ranks(&self, z: &ZSet) -> (usize, usize) {
        let r = *self;
        let start = z.count_before(|s, _| if r.minex { s <= r.min } else { s < r.min });
        let end = z.count_before(|s, _| if r.maxex { s < r.max } else { s <= r.max });
        (start, end.max(start))
    }
}

/// One end of a lex interval.
#[derive(Clone)]
enum LexBound {
    /// `-`
    Min,
    /// `+`
    Max,
    /// `[x`
    Incl(SmallBytes),
    /// `(x`
    Excl(SmallBytes),
}

fn parse_lex_bound(b: &[u8]) -> Option<LexBound> {
    match b.first()? {
        b'+' if b.len() == 1 => Some(LexBound::Max),
        b'-' if b.len() == 1 => Some(LexBound::Min),
        b'[' => Some(LexBound::Incl(SmallBytes::from_slice(&b[1..]))),
        b'(' => Some(LexBound::Excl(SmallBytes::from_slice(&b[1..]))),
        _ => None,
    }
}

fn parse_lex_range(min: &[u8], max: &[u8]) -> Result<(LexBound, LexBound), Frame> {
    match (parse_lex_bound(min), parse_lex_bound(max)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(not_lex_range()),
    }
}

/// Ranks `[start, end)` of the members inside a lex interval (meaningful when scores are equal).
fn lex_ranks(z: &ZSet, min: &LexBound, max: &LexBound) -> (usize, usize) {
    let start = match min {
        LexBound::Min => 0,
        LexBound::Max => z.len(),
        LexBound::Incl(a) => z.count_before(|_, m| m < &a[..]),
        LexBound::Excl(a) => z.count_before(|_, m| m <= &a[..]),
    };
    let end = match max {
        LexBound::Min => 0,
        LexBound::Max => z.len(),
        LexBound::Incl(b) => z.count_before(|_, m| m <= &b[..]),
        LexBound::Excl(b) => z.count_before(|_, m| m < &b[..]),
    };
    (start, end.max(start))
}

/// Normalizes a rank range like LRANGE; `[start, end)` or None.
fn rank_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    super::list::norm_range(start, end, len).map(|(s, e)| (s, e + 1))
}

fn score_frame(s: f64) -> Frame {
    Frame::Double(s)
}

/// Builds a member list reply: with scores, RESP2 gets a flat array, RESP3 an array of pairs.
/// The ZRANGE-family reply for ranks `s..e` of `z` (descending with `rev`), written straight
/// into its wire bytes: a range of millions of members costs what Redis's output buffer would hold.
fn range_reply(z: &ZSet, s: usize, e: usize, rev: bool, withscores: bool, proto: Protocol) -> Frame {
    let each = |f: &mut dyn FnMut(&[u8], f64)| {
        if rev {
            z.range_iter(s, e).rev().for_each(|(m, sc)| f(m, sc));
        } else {
            z.range_iter(s, e).for_each(|(m, sc)| f(m, sc));
        }
    };
    let (mut n, mut body) = (0usize, 0usize);
    each(&mut |m, sc| {
        n += 1;
        body += if withscores {
            resp::BulkArray::scored_size(m.len(), sc, proto)
        } else {
            resp::BulkArray::bulk_size(m.len())
        };
    });
    let mut out =
        if withscores { resp::BulkArray::pairs(n, body, proto) } else { resp::BulkArray::array(n, body, proto) };
    each(&mut |m, sc| if withscores { out.push_scored(m, sc) } else { out.push(m) });
    out.finish()
}

fn members_reply(items: Vec<(SmallBytes, f64)>, withscores: bool, resp3: bool) -> Frame {
    let mut out = Vec::with_capacity(items.len() * if withscores && !resp3 { 2 } else { 1 });
    for (m, s) in items {
        if !withscores {
            out.push(bulk(&m));
        } else if resp3 {
            out.push(Frame::Array(vec![bulk(&m), score_frame(s)]));
        } else {
            out.push(bulk(&m));
            out.push(score_frame(s));
        }
    }
    Frame::Array(out)
}

// ---- ZADD / ZINCRBY ----

#[derive(Default, Clone, Copy)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

fn zadd_generic(ctx: &mut Ctx<'_, '_>, mut fl: AddFlags, mut idx: usize) -> Frame {
    while idx < ctx.argc() {
        let o = ctx.arg(idx);
        if eq_ic(o, "nx") {
            fl.nx = true
        } else if eq_ic(o, "xx") {
            fl.xx = true
        } else if eq_ic(o, "ch") {
            fl.ch = true
        } else if eq_ic(o, "incr") {
            fl.incr = true
        } else if eq_ic(o, "gt") {
            fl.gt = true
        } else if eq_ic(o, "lt") {
            fl.lt = true
        } else {
            break;
        }
        idx += 1;
    }
    let elements = ctx.argc() - idx;
    if elements % 2 == 1 || elements == 0 {
        return error::syntax();
    }
    if fl.nx && fl.xx {
        return Frame::error("ERR XX and NX options at the same time are not compatible");
    }
    if (fl.nx && (fl.gt || fl.lt)) || (fl.gt && fl.lt) {
        return Frame::error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if fl.incr && elements > 2 {
        return Frame::error("ERR INCR option supports a single increment-element pair");
    }
    let args = ctx.args;
    let mut pairs = Vec::with_capacity(elements / 2);
    for p in args[idx..].chunks_exact(2) {
        match parse_f64(&p[0]) {
            Some(s) => pairs.push((s, &p[1][..])),
            None => return error::not_float(),
        }
    }
    let key = ctx.arg(1);
    let (entries, value_max) = ctx.srv.config.zset_listpack_limits();
    let mut db = ctx.db();
    let exists = match read_zset(&mut db, key) {
        Ok(z) => z.is_some(),
        Err(e) => return e,
    };
    let (mut added, mut updated, mut processed) = (0i64, 0i64, 0i64);
    let mut last = 0.0;
    if exists || !fl.xx {
        let z = match create_zset(&mut db, key) {
            Ok(z) => z,
            Err(e) => return e,
        };
        for (score, m) in pairs {
            match z.score(m) {
                Some(cur) => {
                    if fl.nx {
                        continue;
                    }
                    let mut score = score;
                    if fl.incr {
                        score += cur;
                        if score.is_nan() {
                            return Frame::error("ERR resulting score is not a number (NaN)");
                        }
                    }
                    if (fl.lt && score >= cur) || (fl.gt && score <= cur) {
                        continue;
                    }
                    processed += 1;
                    last = score;
                    if score != cur {
                        z.insert(m, score);
                        updated += 1;
                    }
                }
                None => {
                    if fl.xx {
                        continue;
                    }
                    z.add_under(m, score, entries, value_max);
                    added += 1;
                    processed += 1;
                    last = score + 0.0;
                }
            }
        }
    }
    ctx.changed((added + updated) as u64);
    if fl.incr {
        if processed > 0 { score_frame(last) } else { Frame::Null }
    } else {
        Frame::Integer(if fl.ch { added + updated } else { added })
    }
}

fn zadd(ctx: &mut Ctx<'_, '_>) -> Frame {
    zadd_generic(ctx, AddFlags::default(), 2)
}

fn zincrby(ctx: &mut Ctx<'_, '_>) -> Frame {
    zadd_generic(ctx, AddFlags { incr: true, ..Default::default() }, 2)
}

// ---- simple reads ----

fn zscore(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, m) = (ctx.arg(1), ctx.arg(2));
    match read_zset(&mut ctx.db(), key) {
        Ok(z) => z.and_then(|z| z.score(m)).map_or(Frame::Null, score_frame),
        Err(e) => e,
    }
}

fn zmscore(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let args = ctx.args;
    match read_zset(&mut ctx.db(), key) {
        Ok(z) => Frame::Array(
            args[2..].iter().map(|m| z.as_ref().and_then(|z| z.score(m)).map_or(Frame::Null, score_frame)).collect(),
        ),
        Err(e) => e,
    }
}

fn zcard(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    match read_zset(&mut ctx.db(), key) {
        Ok(z) => Frame::Integer(z.map_or(0, |z| z.len() as i64)),
        Err(e) => e,
    }
}

fn zcount(ctx: &mut Ctx<'_, '_>) -> Frame {
    let r = match parse_score_range(ctx.arg(2), ctx.arg(3)) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let key = ctx.arg(1);
    match read_zset(&mut ctx.db(), key) {
        Ok(Some(z)) => {
            let (s, e) = r.ranks(z);
            Frame::Integer((e - s) as i64)
        }
        Ok(None) => Frame::Integer(0),
        Err(e) => e,
    }
}

fn zlexcount(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (min, max) = match parse_lex_range(ctx.arg(2), ctx.arg(3)) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let key = ctx.arg(1);
    match read_zset(&mut ctx.db(), key) {
        Ok(Some(z)) => {
            let (s, e) = lex_ranks(z, &min, &max);
            Frame::Integer((e - s) as i64)
        }
        Ok(None) => Frame::Integer(0),
        Err(e) => e,
    }
}

fn rank_generic(ctx: &mut Ctx<'_, '_>, rev: bool) -> Frame {
    let (key, m) = (ctx.arg(1), ctx.arg(2));
    match read_zset(&mut ctx.db(), key) {
        Ok(Some(z)) => match z.rank(m) {
            Some(r) => Frame::Integer(if rev { (z.len() - 1 - r) as i64 } else { r as i64 }),
            None => Frame::Null,
        },
        Ok(None) => Frame::Null,
        Err(e) => e,
    }
}

fn zrank(ctx: &mut Ctx<'_, '_>) -> Frame {
    rank_generic(ctx, false)
}
fn zrevrank(ctx: &mut Ctx<'_, '_>) -> Frame {
    rank_generic(ctx, true)
}

fn zrem(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let args = ctx.args;
    let mut db = ctx.db();
    let z = match write_zset(&mut db, key) {
        Ok(Some(z)) => z,
        Ok(None) => return Frame::Integer(0),
        Err(e) => return e,
    };
    let n = args[2..].iter().filter(|m| z.remove(m).is_some()).count();
    remove_if_empty(&mut db, key);
    ctx.changed(n as u64);
    Frame::Integer(n as i64)
}

// ---- ZRANGE and friends ----

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeType {
    Rank,
    Score,
    Lex,
}

/// Redis's zrangeGenericCommand: `start` is the index of the source key; `dst` is set for
/// ZRANGESTORE; `rangetype`/`rev` are fixed by the legacy commands and None for ZRANGE.
fn zrange_generic(
    ctx: &mut Ctx<'_, '_>,
    start: usize,
    dst: Option<usize>,
    mut rangetype: Option<RangeType>,
    rev_fixed: Option<bool>,
) -> Frame {
    let store = dst.is_some();
    let (mut minidx, mut maxidx) = (start + 1, start + 2);
    let mut withscores = false;
    let (mut offset, mut limit): (i64, i64) = (0, -1);
    let mut rev = rev_fixed;
    let auto_type = rangetype.is_none();
    let mut j = start + 3;
    while j < ctx.argc() {
        let left = ctx.argc() - j - 1;
        let a = ctx.arg(j);
        if !store && eq_ic(a, "withscores") {
            withscores = true;
        } else if eq_ic(a, "limit") && left >= 2 {
            match (ctx.int_arg(j + 1), ctx.int_arg(j + 2)) {
                (Ok(o), Ok(l)) => (offset, limit) = (o, l),
                (Err(e), _) | (_, Err(e)) => return e,
            }
            j += 2;
        } else if rev_fixed.is_none() && eq_ic(a, "rev") {
            rev = Some(true);
        } else if auto_type && rangetype.is_none() && eq_ic(a, "bylex") {
            rangetype = Some(RangeType::Lex);
        } else if auto_type && rangetype.is_none() && eq_ic(a, "byscore") {
            rangetype = Some(RangeType::Score);
        } else {
            return error::syntax();
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    let rangetype = rangetype.unwrap_or(RangeType::Rank);
    if limit != -1 && rangetype == RangeType::Rank {
        return Frame::error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    }
    if withscores && rangetype == RangeType::Lex {
        return Frame::error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    if rev && rangetype != RangeType::Rank {
        std::mem::swap(&mut minidx, &mut maxidx);
    }
    enum Spec {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexBound, LexBound),
    }
    let spec = match rangetype {
        RangeType::Rank => match (ctx.int_arg(minidx), ctx.int_arg(maxidx)) {
            (Ok(a), Ok(b)) => Spec::Rank(a, b),
            (Err(e), _) | (_, Err(e)) => return e,
        },
        RangeType::Score => match parse_score_range(ctx.arg(minidx), ctx.arg(maxidx)) {
            Ok(r) => Spec::Score(r),
            Err(e) => return e,
        },
        RangeType::Lex => match parse_lex_range(ctx.arg(minidx), ctx.arg(maxidx)) {
            Ok((a, b)) => Spec::Lex(a, b),
            Err(e) => return e,
        },
    };
    let resp3 = ctx.client.proto == Protocol::Resp3;
    let proto = ctx.client.proto;
    let key = ctx.arg(start);
    let mut db = ctx.db();
    let items = match read_zset(&mut db, key) {
        Err(e) => return e,
        Ok(None) => Vec::new(),
        Ok(Some(z)) => {
            let len = z.len();
            let (s, e) = match &spec {
                Spec::Rank(a, b) => {
                    // Ranks count from the end for REV.
                    match rank_range(*a, *b, len) {
                        Some((s, e)) if rev => (len - e, len - s),
                        Some(r) => r,
                        None => (0, 0),
                    }
                }
                Spec::Score(r) => r.ranks(z),
                Spec::Lex(a, b) => lex_ranks(z, a, b),
            };
            // LIMIT applies in iteration order.
            let (s, e) = if rangetype == RangeType::Rank {
                (s, e)
            } else if offset < 0 {
                (0, 0)
            } else {
                let n = e - s;
                let off = (offset as u64).min(n as u64) as usize;
                let take = if limit < 0 { n - off } else { (limit as u64).min((n - off) as u64) as usize };
                if rev { (e - off - take, e - off) } else { (s + off, s + off + take) }
            };
            if dst.is_none() {
                return range_reply(z, s, e, rev, withscores, proto);
            }
            let mut v = z.range(s, e);
            if rev {
                v.reverse();
            }
            v
        }
    };
    if let Some(d) = dst {
        let dkey = &ctx.args[d];
        let (entries, value_max) = ctx.srv.config.zset_listpack_limits();
        let mut db = ctx.db();
        if items.is_empty() {
            if db.remove(dkey).is_some() {
                ctx.changed(1);
            }
            return Frame::Integer(0);
        }
        let mut z = ZSet::new();
        for (m, s) in &items {
            z.insert(m, *s);
        }
        z.settle(entries, value_max);
        let n = z.len() as i64;
        db.set(dkey, Value::ZSet(z), false);
        ctx.changed(1);
        return Frame::Integer(n);
    }
    members_reply(items, withscores, resp3)
}

fn zrange(ctx: &mut Ctx<'_, '_>) -> Frame {
    zrange_generic(ctx, 1, None, None, None)
}
fn zrangestore(ctx: &mut Ctx<'_, '_>) -> Frame {
    zrange_generic(ctx, 2, Some(1), None, None)
}
fn zrevrange(ctx: &mut Ctx<'_, '_>) -> Frame {
    zrange_generic(ctx, 1, None, Some(RangeType::Rank), Some(true))
}
fn zrangebyscore(ctx: &mut Ctx<'_, '_>) -> Frame {
    zrange_generic(ctx, 1, None, Some(RangeType::Score), Some(false))
}
fn zrevrangebyscore(ctx: &mut Ctx<'_, '_>) -> Frame {
    zrange_generic(ctx, 1, None, Some(RangeType::Score), Some(true))
}
fn zrangebylex(ctx: &mut Ctx<'_, '_>) -> Frame {
    zrange_generic(ctx, 1, None, Some(RangeType::Lex), Some(false))
}
fn zrevrangebylex(ctx: &mut Ctx<'_, '_>) -> Frame {
    zrange_generic(ctx, 1, None, Some(RangeType::Lex), Some(true))
}

// ---- removal by range ----

fn zremrange_generic(ctx: &mut Ctx<'_, '_>, t: RangeType) -> Frame {
    let (a, b) = (ctx.arg(2), ctx.arg(3));
    enum Spec {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexBound, LexBound),
    }
    let spec = match t {
        RangeType::Rank => match (ctx.int_arg(2), ctx.int_arg(3)) {
            (Ok(a), Ok(b)) => Spec::Rank(a, b),
            (Err(e), _) | (_, Err(e)) => return e,
        },
        RangeType::Score => match parse_score_range(a, b) {
            Ok(r) => Spec::Score(r),
            Err(e) => return e,
        },
        RangeType::Lex => match parse_lex_range(a, b) {
            Ok((a, b)) => Spec::Lex(a, b),
            Err(e) => return e,
        },
    };
    let key = ctx.arg(1);
    let mut db = ctx.db();
    let z = match write_zset(&mut db, key) {
        Ok(Some(z)) => z,
        Ok(None) => return Frame::Integer(0),
        Err(e) => return e,
    };
    let (s, e) = match &spec {
        Spec::Rank(a, b) => rank_range(*a, *b, z.len()).unwrap_or((0, 0)),
        Spec::Score(r) => r.ranks(z),
        Spec::Lex(a, b) => lex_ranks(z, a, b),
    };
    let victims = z.range(s, e);
    for (m, _) in &victims {
        z.remove(m);
    }
    remove_if_empty(&mut db, key);
    ctx.changed(victims.len() as u64);
    Frame::Integer(victims.len() as i64)
}

fn zremrangebyrank(ctx: &mut Ctx<'_, '_>) -> Frame {
    zremrange_generic(ctx, RangeType::Rank)
}
fn zremrangebyscore(ctx: &mut Ctx<'_, '_>) -> Frame {
    zremrange_generic(ctx, RangeType::Score)
}
fn zremrangebylex(ctx: &mut Ctx<'_, '_>) -> Frame {
    zremrange_generic(ctx, RangeType::Lex)
}

// ---- pops, random, scan ----

fn zpop_generic(ctx: &mut Ctx<'_, '_>, max: bool) -> Frame {
    if ctx.argc() > 3 {
        return error::syntax();
    }
    let count = if ctx.argc() == 3 {
        match parse_i64_strict(ctx.arg(2)) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => return Frame::error("ERR value is out of range, must be positive"),
        }
    } else {
        None
    };
    let nested = ctx.client.proto == Protocol::Resp3 && count.is_some();
    let key = ctx.arg(1);
    let n = count.unwrap_or(1).min(usize::MAX as u64) as usize;
    match pop(ctx, key, max, n, count.is_some()) {
        Ok(Some(items)) => members_reply(items, true, nested),
        Ok(None) => Frame::Array(Vec::new()),
        Err(e) => e,
    }
}

/// A key and the members popped from it, with their scores.
pub(crate) type Popped<'k> = (&'k [u8], Vec<(SmallBytes, f64)>);

/// Pops from the first of `keys` that holds a sorted set, through [`pop`] (ZMPOP, BZMPOP, BZPOPMIN):
/// the key and what was popped, or Ok(None) when none holds one.
pub(crate) fn pop_first<'k>(
    ctx: &mut Ctx<'_, '_>,
    keys: &'k [bytes::Bytes],
    max: bool,
    count: usize,
    with_count: bool,
) -> Result<Option<Popped<'k>>, Frame> {
    crate::types::access::first_key(keys, |key| pop(ctx, key, max, count, with_count))
}

/// Pops through [`crate::ops::zset_pop`] and reports it: a change per member, propagated as
/// `ZPOPMIN|ZPOPMAX key [n]` (what ZPOPMIN, ZMPOP, BZPOPMIN and BZMPOP replay as, served or not).
pub(crate) fn pop(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    max: bool,
    count: usize,
    with_count: bool,
) -> Result<Option<Vec<(SmallBytes, f64)>>, Frame> {
    let out = crate::ops::zset_pop(&mut ctx.db(), key, max, count)?;
    if let Some(v) = &out
        && !v.is_empty()
    {
        ctx.changed(v.len() as u64);
        let name: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
        if with_count {
            let n = v.len().to_string();
            ctx.propagate_as(&[name, key, n.as_bytes()]);
        } else {
            ctx.propagate_as(&[name, key]);
        }
    }
    Ok(out)
}

fn zpopmin(ctx: &mut Ctx<'_, '_>) -> Frame {
    zpop_generic(ctx, false)
}
fn zpopmax(ctx: &mut Ctx<'_, '_>) -> Frame {
    zpop_generic(ctx, true)
}

fn zrandmember(ctx: &mut Ctx<'_, '_>) -> Frame {
    use rand::Rng;
    let key = ctx.arg(1);
    if ctx.argc() == 2 {
        let (mut db, mut rng) = ctx.db_rng();
        return match read_zset(&mut db, key) {
            Ok(Some(z)) if !z.is_empty() => {
                let member = |i: usize| z.by_index(i).map_or(&[][..], |(m, _)| m);
                let n = rng.random_range(0..z.len());
                let i = crate::random::canonical_order(&rng, z.len(), member).map_or(n, |o| o[n]);
                z.by_index(i).map(|(m, _)| bulk(m)).unwrap_or(Frame::Null)
            }
            Ok(_) => Frame::Null,
            Err(e) => e,
        };
    }
    let (l, withscores) = match super::set::random_count_with(ctx, "withscores") {
        Ok(x) => x,
        Err(e) => return e,
    };
    let proto = ctx.client.proto;
    let cap = ctx.reply_cap();
    let reply = {
        let (mut db, mut rng) = ctx.db_rng();
        let z = match read_zset(&mut db, key) {
            Ok(Some(z)) => z,
            Ok(None) => return Frame::Array(Vec::new()),
            Err(e) => return e,
        };
        if l > 0 && l as u64 >= z.len() as u64 {
            // The whole set, in order (as Redis does for its listpack encoding).
            return range_reply(z, 0, z.len(), false, withscores, proto);
        }
        let entry = |i: usize| z.by_index(i).unwrap_or((&[], 0.0));
        // The member table's order is the node's own (a node that loaded the key has it in score
        // order): a seeded pick goes by the members' bytes.
        let order = crate::random::canonical_order(&rng, z.len(), |i| entry(i).0);
        if withscores {
            super::set::random_reply(
                &mut rng,
                order.as_deref(),
                z.len(),
                l,
                cap,
                |i| resp::BulkArray::scored_size(entry(i).0.len(), entry(i).1, proto),
                |n, body| resp::BulkArray::pairs(n, body, proto),
                |out, i| out.push_scored(entry(i).0, entry(i).1),
            )
        } else {
            super::set::random_reply(
                &mut rng,
                order.as_deref(),
                z.len(),
                l,
                cap,
                |i| resp::BulkArray::bulk_size(entry(i).0.len()),
                |n, body| resp::BulkArray::array(n, body, proto),
                |out, i| out.push(entry(i).0),
            )
        }
    };
    reply.unwrap_or_else(|| ctx.reply_too_large())
}

fn zscan(ctx: &mut Ctx<'_, '_>) -> Frame {
    let opts = match parse_scan(ctx.args, 2) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let key = ctx.arg(1);
    let mut db = ctx.db();
    let z = match read_zset(&mut db, key) {
        Ok(Some(z)) => z,
        Ok(None) => return scan_reply(0, Vec::new()),
        Err(e) => return e,
    };
    let mut items = Vec::new();
    let mut push = |m: &[u8], s: f64| {
        if scan_match(&opts.pattern, m) {
            let mut b = Vec::new();
            resp::format_double(s, &mut b);
            items.push(bulk(m));
            items.push(Frame::Bulk(bytes::Bytes::from(b)));
        }
    };
    // Small sorted sets (Redis's listpack encoding) are returned whole, in order, in one call.
    if z.len() <= 128 && opts.upper.is_none() {
        for (m, s) in z.iter() {
            push(m, s);
        }
        return scan_reply(0, items);
    }
    let cursor = scan_positions(z.len(), opts.upper, opts.count, |i| {
        if let Some((m, s)) = z.by_index(i) {
            push(m, s);
        }
    });
    scan_reply(cursor, items)
}

// ---- ZUNION / ZINTER / ZDIFF (+STORE), ZINTERCARD, ZMPOP ----

/// Keys of `destination numkeys key [key ...]`: the destination and the numkeys inputs.
fn store_keys(args: &[bytes::Bytes]) -> Vec<usize> {
    let mut v = vec![1];
    v.extend(numkeys_keys::<2>(args));
    v
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Redis's zunionInterAggregate.
    fn apply(self, target: &mut f64, v: f64) {
        match self {
            Aggregate::Sum => {
                *target += v;
                if target.is_nan() {
                    *target = 0.0;
                }
            }
            Aggregate::Min => *target = target.min(v),
            Aggregate::Max => *target = target.max(v),
        }
    }
}

/// An input of the set operations: a sorted set, or a plain set whose members score 1.
enum Src<'a> {
    Missing,
    ZSet(&'a ZSet),
    Set(&'a crate::value::SetValue),
}

impl Src<'_> {
    fn of(v: Option<&Value>) -> Src<'_> {
        match v {
            Some(Value::ZSet(z)) => Src::ZSet(z),
            Some(Value::Set(s)) => Src::Set(s),
            _ => Src::Missing,
        }
    }
    fn find(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::Missing => None,
            Src::ZSet(z) => z.score(m),
            Src::Set(s) => s.contains(m).then_some(1.0),
        }
    }
    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Src::Missing => {}
            Src::ZSet(z) => z.iter().for_each(|(m, s)| f(m, s)),
            Src::Set(s) => s.iter().for_each(|m| f(m, 1.0)),
        }
    }
}

/// A weighted score; NaN (0 * inf) counts as 0, as in Redis.
fn weighted(w: f64, s: f64) -> f64 {
    let v = w * s;
    if v.is_nan() { 0.0 } else { v }
}

/// Redis's zunionInterDiffGenericCommand: `numkeys` is at `idx`; `dst` is set for the STORE forms.
fn zsetop_generic(ctx: &mut Ctx<'_, '_>, dst: bool, op: SetOp, card_only: bool) -> Frame {
    let idx = if dst { 2 } else { 1 };
    let setnum = match ctx.int_arg(idx) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if setnum < 1 {
        return Frame::error(format!("ERR at least 1 input key is needed for '{}' command", ctx.cmd.name));
    }
    if setnum as u64 > (ctx.argc() - idx - 1) as u64 {
        return error::syntax();
    }
    let setnum = setnum as usize;
    let args = ctx.args;
    let keys = &args[idx + 1..idx + 1 + setnum];
    // Inputs are looked up (and type-checked) before the options are parsed, as Redis does.
    let mut card = Vec::with_capacity(setnum);
    {
        let mut db = ctx.db();
        for k in keys {
            match db.read(k).map(|e| &e.value) {
                None => card.push(0),
                Some(Value::ZSet(z)) => card.push(z.len()),
                Some(Value::Set(s)) => card.push(s.len()),
                Some(Value::Damaged(d)) if matches!(d.type_name(), "set" | "zset") => return d.refusal(),
                Some(_) => return error::wrong_type(),
            }
        }
    }
    let mut weights = vec![1.0f64; setnum];
    let mut aggregate = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    let mut j = idx + 1 + setnum;
    while j < ctx.argc() {
        let remaining = ctx.argc() - j;
        let a = ctx.arg(j);
        if op != SetOp::Diff && !card_only && remaining > setnum && eq_ic(a, "weights") {
            for (i, w) in weights.iter_mut().enumerate() {
                match parse_f64(ctx.arg(j + 1 + i)) {
                    Some(v) => *w = v,
                    None => return Frame::error("ERR weight value is not a float"),
                }
            }
            j += 1 + setnum;
        } else if op != SetOp::Diff && !card_only && remaining >= 2 && eq_ic(a, "aggregate") {
            let v = ctx.arg(j + 1);
            aggregate = if eq_ic(v, "sum") {
                Aggregate::Sum
            } else if eq_ic(v, "min") {
                Aggregate::Min
            } else if eq_ic(v, "max") {
                Aggregate::Max
            } else {
                return error::syntax();
            };
            j += 2;
        } else if !dst && !card_only && eq_ic(a, "withscores") {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && eq_ic(a, "limit") {
            match parse_i64_strict(ctx.arg(j + 1)) {
                Some(n) if n >= 0 => limit = n as usize,
                _ => return Frame::error("ERR LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return error::syntax();
        }
    }
    // Smallest inputs first (Redis's order, which also fixes the order scores are aggregated in).
    let mut order: Vec<usize> = (0..setnum).collect();
    if op != SetOp::Diff {
        order.sort_by_key(|&i| card[i]);
    }
    let (entries, value_max) = ctx.srv.config.zset_listpack_limits();
    let mut db = ctx.db();
    let items: Vec<(SmallBytes, f64)> = match op {
        SetOp::Inter => {
            let first = order[0];
            let mut acc = Vec::with_capacity(card[first]);
            if card[first] > 0 {
                Src::of(db.peek(&keys[first]).map(|e| &e.value))
                    .for_each(|m, s| acc.push((SmallBytes::from_slice(m), weighted(weights[first], s))));
                for &o in &order[1..] {
                    let src = Src::of(db.peek(&keys[o]).map(|e| &e.value));
                    acc.retain_mut(|(m, sc)| match src.find(m) {
                        Some(v) => {
                            aggregate.apply(sc, weighted(weights[o], v));
                            true
                        }
                        None => false,
                    });
                }
            }
            acc
        }
        SetOp::Union => {
            let mut acc: indexmap::IndexMap<SmallBytes, f64, crate::value::Hasher> = Default::default();
            for &o in &order {
                Src::of(db.peek(&keys[o]).map(|e| &e.value)).for_each(|m, s| {
                    let v = weighted(weights[o], s);
                    match acc.get_mut(m) {
                        Some(t) => aggregate.apply(t, v),
                        None => {
                            acc.insert(SmallBytes::from_slice(m), v);
                        }
                    }
                });
            }
            acc.into_iter().collect()
        }
        SetOp::Diff => {
            let mut acc = Vec::new();
            Src::of(db.peek(&keys[0]).map(|e| &e.value)).for_each(|m, s| acc.push((SmallBytes::from_slice(m), s)));
            for k in &keys[1..] {
                if acc.is_empty() {
                    break;
                }
                let src = Src::of(db.peek(k).map(|e| &e.value));
                acc.retain(|(m, _)| src.find(m).is_none());
            }
            acc
        }
    };
    if card_only {
        let n = if limit > 0 { items.len().min(limit) } else { items.len() };
        return Frame::Integer(n as i64);
    }
    let mut z = ZSet::new();
    for (m, s) in &items {
        z.insert(m, *s);
    }
    if dst {
        z.settle(entries, value_max);
        let dkey = &args[1];
        let (reply, changed) = if z.is_empty() {
            (Frame::Integer(0), db.remove(dkey).is_some())
        } else {
            let n = z.len();
            db.set(dkey, Value::ZSet(z), false);
            (Frame::Integer(n as i64), true)
        };
        ctx.changed(u64::from(changed));
        return reply;
    }
    let resp3 = ctx.client.proto == Protocol::Resp3;
    members_reply(z.range(0, z.len()), withscores, resp3)
}

fn zunionstore(ctx: &mut Ctx<'_, '_>) -> Frame {
    zsetop_generic(ctx, true, SetOp::Union, false)
}
fn zinterstore(ctx: &mut Ctx<'_, '_>) -> Frame {
    zsetop_generic(ctx, true, SetOp::Inter, false)
}
fn zdiffstore(ctx: &mut Ctx<'_, '_>) -> Frame {
    zsetop_generic(ctx, true, SetOp::Diff, false)
}
fn zunion(ctx: &mut Ctx<'_, '_>) -> Frame {
    zsetop_generic(ctx, false, SetOp::Union, false)
}
fn zinter(ctx: &mut Ctx<'_, '_>) -> Frame {
    zsetop_generic(ctx, false, SetOp::Inter, false)
}
fn zdiff(ctx: &mut Ctx<'_, '_>) -> Frame {
    zsetop_generic(ctx, false, SetOp::Diff, false)
}
fn zintercard(ctx: &mut Ctx<'_, '_>) -> Frame {
    zsetop_generic(ctx, false, SetOp::Inter, true)
}

fn zmpop(ctx: &mut Ctx<'_, '_>) -> Frame {
    let MPop { keys, first: min, count } = match parse_mpop(ctx.args, 1, ["min", "max"]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    match pop_first(ctx, &ctx.args[keys], !min, count, true) {
        Ok(Some((key, items))) => {
            let pairs = items.iter().map(|(m, s)| Frame::Array(vec![bulk(m), score_frame(*s)])).collect();
            Frame::Array(vec![bulk(key), Frame::Array(pairs)])
        }
        Ok(None) => Frame::NullArray,
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    /// ZUNION/ZINTER/ZDIFF(+STORE), ZINTERCARD, ZMPOP: replies verified byte for byte against
    /// redis-server 7.0.15 in RESP2 and RESP3.
    #[test]
    fn zset_setops_and_zmpop() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.client.proto = resp::Protocol::Resp3;
        c.transcript(
            r#"
            > zadd za 1 a 2 b 3 c
            :3
            > zadd zb 10 b 20 c 30 d
            :3
            > sadd s a d e
            :3
            > set str x
            +OK
            > zunionstore out 2 za zb
            :4
            > zrange out 0 -1 withscores
            [["a", ,1], ["b", ,12], ["c", ,23], ["d", ,30]]
            > zunionstore out 3 za zb s weights 1 2 3 aggregate max
            :5
            > zrange out 0 -1 withscores
            [["a", ,3], ["e", ,3], ["b", ,20], ["c", ,40], ["d", ,60]]
            > zinterstore out 2 za zb aggregate min
            :2
            > zrange out 0 -1 withscores
            [["b", ,2], ["c", ,3]]
            > zinterstore out 2 za nosuch
            :0
            > exists out
            :0
            > zdiffstore out 2 za zb
            :1
            > zrange out 0 -1 withscores
            [["a", ,1]]
            > zunion 2 za zb withscores
            [["a", ,1], ["b", ,12], ["c", ,23], ["d", ,30]]
            > zunion 3 za zb s weights 2 0.5 -1 withscores
            [["e", ,-1], ["a", ,1], ["b", ,9], ["d", ,14], ["c", ,16]]
            > zinter 2 za zb withscores
            [["b", ,12], ["c", ,23]]
            > zinter 3 za zb s
            []
            > zinter 2 za s withscores
            [["a", ,2]]
            > zdiff 3 za zb s withscores
            []
            > zdiff 1 nosuch
            []
            > zintercard 2 za zb
            :2
            > zintercard 2 za zb limit 1
            :1
            > zintercard 2 za zb limit 0
            :2
            > zintercard 2 za zb limit -1
            -ERR LIMIT can't be negative
            > zintercard 2 za zb limit x
            -ERR LIMIT can't be negative
            > zintercard 0 za
            -ERR at least 1 input key is needed for 'zintercard' command
            > zintercard x za
            -ERR value is not an integer or out of range
            > zunion 0 za
            -ERR at least 1 input key is needed for 'zunion' command
            > zunion 3 za zb
            -ERR syntax error
            > zunion 1 za weights
            -ERR syntax error
            > zunion 1 za weights x
            -ERR weight value is not a float
            > zunion 1 za aggregate foo
            -ERR syntax error
            > zunion 1 za foo
            -ERR syntax error
            > zunionstore out 1 za withscores
            -ERR syntax error
            > zdiff 2 za zb weights 1 2
            -ERR syntax error
            > zintercard 2 za zb withscores
            -ERR syntax error
            > zunion 2 za str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zinter 2 str nosuch
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zunion 2 za str foo
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zadd zi 1 x
            :1
            > zadd zj -inf x
            :1
            > zadd zk inf x
            :1
            > zunion 2 zj zk withscores
            [["x", ,0]]
            > zinter 2 zj zk weights 0 1 withscores
            [["x", ,inf]]
            > zunion 2 zi zk weights 0 1 withscores
            [["x", ,inf]]
            > zunion 2 zi zi aggregate max withscores
            [["x", ,1]]
            > zunionstore za 2 za za
            :3
            > zrange za 0 -1 withscores
            [["a", ,2], ["b", ,4], ["c", ,6]]
            > zmpop 1 za min
            ["za", [["a", ,2]]]
            > zmpop 2 nosuch za max count 10
            ["za", [["c", ,6], ["b", ,4]]]
            > exists za
            :0
            > zmpop 1 za min
            (nil-array)
            > zmpop 1 str min
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zmpop 0 za min
            -ERR numkeys should be greater than 0
            > zmpop x za min
            -ERR numkeys should be greater than 0
            > zmpop 1 za foo
            -ERR syntax error
            > zmpop 1 za min count 0
            -ERR count should be greater than 0
            > zmpop 1 za min count x
            -ERR count should be greater than 0
            > zmpop 1 za min count 1 count 1
            -ERR syntax error
            > zmpop 5 za min
            -ERR syntax error
            > sort_ro nosuch
            []
            "#,
        );
    }

    /// Replies verified against redis-server 7.0.15 (RESP3).
    #[test]
    fn zset_transcript_resp3() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.client.proto = resp::Protocol::Resp3;
        c.transcript(
            r#"
            > zadd z 1 a 2 b 3 c
            :3
            > zadd z 1.5 a 4 d
            :1
            > zadd z ch 1 a 5 b 6 e
            :3
            > zadd z nx 100 a 7 f
            :1
            > zadd z xx 100 a 8 g
            :0
            > zadd z gt 1 a
            :0
            > zadd z gt ch 200 a
            :1
            > zadd z lt ch 300 a
            :0
            > zadd z lt ch 0.5 a
            :1
            > zrange z 0 -1 withscores
            [["a", ,0.5], ["c", ,3], ["d", ,4], ["b", ,5], ["e", ,6], ["f", ,7]]
            > zadd z incr 1 a
            ,1.5
            > zadd z incr nx 1 a
            (nil)
            > zadd z incr xx 1 zz
            (nil)
            > zadd z incr 1 a 2 b
            -ERR INCR option supports a single increment-element pair
            > zadd z nx xx 1 a
            -ERR XX and NX options at the same time are not compatible
            > zadd z gt lt 1 a
            -ERR GT, LT, and/or NX options at the same time are not compatible
            > zadd z nx gt 1 a
            -ERR GT, LT, and/or NX options at the same time are not compatible
            > zadd z 1
            -ERR wrong number of arguments for 'zadd' command
            > zadd z
            -ERR wrong number of arguments for 'zadd' command
            > zadd z x a
            -ERR value is not a valid float
            > zadd z nan a
            -ERR value is not a valid float
            > zadd z inf a
            :0
            > zadd z incr -inf a
            -ERR resulting score is not a number (NaN)
            > zadd z incr inf a
            ,inf
            > zadd z xx 1 a
            :0
            > zadd nope xx 1 a
            :0
            > get nope
            (nil)
            > zadd nope xx incr 1 a
            (nil)
            > zincrby z 2 b
            ,7
            > zincrby z x b
            -ERR value is not a valid float
            > zincrby nz 3.5 m
            ,3.5
            > zincrby nz 1.1 m
            ,4.5999999999999996
            > zadd f 1.1 x -0 y 1e20 w
            :3
            > zrange f 0 -1 withscores
            [["y", ,0], ["x", ,1.1000000000000001], ["w", ,1e+20]]
            > zscore f x
            ,1.1000000000000001
            > zscore f nope
            (nil)
            > zscore nope x
            (nil)
            > zmscore f x nope w
            [,1.1000000000000001, (nil), ,1e+20]
            > zmscore nope a b
            [(nil), (nil)]
            > zcard z
            :6
            > zcard nope
            :0
            > set str v
            +OK
            > zadd str 1 a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zincrby str 1 a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zscore str a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zmscore str a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zcard str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zcount str 0 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zrank str a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zrem str a
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zrange str 0 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zrangebyscore str 0 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zpopmin str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zrandmember str
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zscan str 0
            -WRONGTYPE Operation against a key holding the wrong kind of value
            > zremrangebyrank str 0 1
            -WRONGTYPE Operation against a key holding the wrong kind of value
            # ranks
            > zadd r 1 a 2 b 3 c 4 d 5 e
            :5
            > zrank r a
            :0
            > zrank r e
            :4
            > zrank r zz
            (nil)
            > zrank nope a
            (nil)
            > zrevrank r a
            :4
            > zrevrank r e
            :0
            > zrem r a zz
            :1
            > zrem nope a
            :0
            > zcount r 2 4
            :3
            > zcount r (2 4
            :2
            > zcount r (2 (4
            :1
            > zcount r -inf +inf
            :4
            > zcount r 4 2
            :0
            > zcount r x 2
            -ERR min or max is not a float
            > zcount nope 0 1
            :0
            > zrange r 0 1
            ["b", "c"]
            > zrange r -2 -1 withscores
            [["d", ,4], ["e", ,5]]
            > zrange r 1 0
            []
            > zrange r 0 -1 rev
            ["e", "d", "c", "b"]
            > zrange r 0 0 rev withscores
            [["e", ,5]]
            > zrevrange r 0 1 withscores
            [["e", ,5], ["d", ,4]]
            > zrevrange r 0 1 limit 0 1
            -ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX
            > zrange r 0 1 limit 0 1
            -ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX
            > zrange r (2 4 byscore withscores
            [["c", ,3], ["d", ,4]]
            > zrange r 4 2 byscore rev
            ["d", "c", "b"]
            > zrange r +inf -inf byscore rev limit 1 2
            ["d", "c"]
            > zrange r -inf +inf byscore limit 1 -1
            ["c", "d", "e"]
            > zrange r -inf +inf byscore limit -1 2
            []
            > zrange r -inf +inf byscore limit 0 0
            []
            > zrange r x 2 byscore
            -ERR min or max is not a float
            > zrange r 0 1 byscore bylex
            -ERR syntax error
            > zrange r 0 1 foo
            -ERR syntax error
            > zrange r 0 x
            -ERR value is not an integer or out of range
            > zrangebyscore r 2 +inf withscores limit 1 1
            [["c", ,3]]
            > zrangebyscore r 2 +inf limit 1
            -ERR syntax error
            > zrevrangebyscore r +inf 3 withscores
            [["e", ,5], ["d", ,4], ["c", ,3]]
            > zrevrangebyscore r 3 +inf
            []
            > zrangebyscore r (3 (3
            []
            > zrangebyscore nope 0 1
            []
            > zrangebyscore r "" 3
            ["b", "c"]
            > zrangebyscore r " 3" 5
            ["c", "d", "e"]
            > zrangebyscore r 3x 5
            -ERR min or max is not a float
            > zrangebyscore r 1e400 5
            []
            # lex
            > zadd l 0 a 0 b 0 c 0 d 0 e
            :5
            > zrangebylex l - +
            ["a", "b", "c", "d", "e"]
            > zrangebylex l [b (d
            ["b", "c"]
            > zrangebylex l (b [d limit 1 1
            ["d"]
            > zrevrangebylex l + -
            ["e", "d", "c", "b", "a"]
            > zrevrangebylex l [d (a limit 0 2
            ["d", "c"]
            > zrange l [b [c bylex
            ["b", "c"]
            > zrange l [c [b bylex rev
            ["c", "b"]
            > zrange l - + bylex withscores
            -ERR syntax error, WITHSCORES not supported in combination with BYLEX
            > zrangebylex l b c
            -ERR min or max not valid string range item
            > zrangebylex l - + withscores
            -ERR syntax error, WITHSCORES not supported in combination with BYLEX
            > zrangebylex l +a -
            -ERR min or max not valid string range item
            > zlexcount l - +
            :5
            > zlexcount l [b (d
            :2
            > zlexcount l x y
            -ERR min or max not valid string range item
            > zlexcount nope - +
            :0
            > zrangestore dst l 0 1
            :2
            > zrange dst 0 -1 withscores
            [["a", ,0], ["b", ,0]]
            > zrangestore dst l [c + bylex limit 0 2
            :2
            > zrange dst 0 -1
            ["c", "d"]
            > zrangestore dst l 10 20
            :0
            > get dst
            (nil)
            > zrangestore dst l 0 1 withscores
            -ERR syntax error
            > zrangestore dst nope 0 1
            :0
            # removal
            > zremrangebylex l [b [c
            :2
            > zrange l 0 -1
            ["a", "d", "e"]
            > zremrangebylex l foo bar
            -ERR min or max not valid string range item
            > zremrangebyscore r 2 3
            :2
            > zremrangebyscore r x 3
            -ERR min or max is not a float
            > zrange r 0 -1
            ["d", "e"]
            > zremrangebyrank r 0 0
            :1
            > zremrangebyrank r x 0
            -ERR value is not an integer or out of range
            > zremrangebyrank r 5 10
            :0
            > zremrangebyrank r 0 -1
            :1
            > get r
            (nil)
            > zremrangebyrank nope 0 1
            :0
            # pops
            > zadd p 1 a 2 b 3 c 4 d
            :4
            > zpopmin p
            ["a", ,1]
            > zpopmax p
            ["d", ,4]
            > zpopmin p 0
            []
            > zpopmin p -1
            -ERR value is out of range, must be positive
            > zpopmin p x
            -ERR value is out of range, must be positive
            > zpopmin p 1 2
            -ERR syntax error
            > zpopmax p 10
            [["c", ,3], ["b", ,2]]
            > get p
            (nil)
            > zpopmin nope
            []
            > zpopmin nope 2
            []
            > zadd p 1 a 2 b
            :2
            > zpopmin p 1
            [["a", ,1]]
            # random
            > zadd one 1.5 x
            :1
            > zrandmember one
            "x"
            > zrandmember nope
            (nil)
            > zrandmember one 0
            []
            > zrandmember one 3
            ["x"]
            > zrandmember one -2
            ["x", "x"]
            > zrandmember one -2 withscores
            [["x", ,1.5], ["x", ,1.5]]
            > zrandmember one 2 withscores
            [["x", ,1.5]]
            > zrandmember nope 2
            []
            > zrandmember one 1 foo
            -ERR syntax error
            > zrandmember one x
            -ERR value is not an integer or out of range
            > zrandmember one -9223372036854775808
            -ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807
            > zrandmember one 9223372036854775807 withscores
            -ERR value is out of range
            # scan
            > zadd s 1 a 2.5 b
            :2
            > zscan s 0
            ["0", ["a", "1", "b", "2.5"]]
            > zscan s 0 match b
            ["0", ["b", "2.5"]]
            > zscan nope 0
            ["0", []]
            > zscan s 0 count 0
            -ERR syntax error
            "#,
        );
    }

    /// ZSCAN over a large sorted set returns every stable member while others churn.
    #[test]
    fn zscan_full_iteration() {
        use resp::Frame;
        let ts = TestServer::new();
        let mut c = ts.client();
        for i in 0..1000 {
            c.cmd(&["ZADD", "k", &i.to_string(), &format!("m{i}")]);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = "0".to_string();
        let mut round = 0;
        loop {
            let Some(Frame::Array(r)) = c.cmd(&["ZSCAN", "k", &cursor, "COUNT", "7"]) else { panic!() };
            let (Frame::Bulk(cur), Frame::Array(items)) = (&r[0], &r[1]) else { panic!() };
            for it in items.iter().step_by(2) {
                let Frame::Bulk(m) = it else { panic!() };
                seen.insert(m.clone());
            }
            round += 1;
            c.cmd(&["ZREM", "k", &format!("m{}", 500 + round)]);
            c.cmd(&["ZADD", "k", "-1", &format!("n{round}")]);
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

    /// Large sorted sets: ranks, score ranges and pops agree with a sorted model.
    #[test]
    fn large_zset_ranges() {
        let ts = TestServer::new();
        let mut c = ts.client();
        for i in 0..3000 {
            c.cmd(&["ZADD", "k", &(i / 2).to_string(), &format!("m{i:05}")]);
        }
        c.transcript(
            r#"
            > ZCARD k
            :3000
            > ZRANK k m02001
            :2001
            > ZREVRANK k m02001
            :998
            > ZCOUNT k 100 (200
            :200
            > ZRANGE k 1000 1001
            ["m01000", "m01001"]
            > ZRANGE k (1500 1499 BYSCORE REV LIMIT 0 1
            ["m02999"]
            > ZREMRANGEBYRANK k 0 999
            :1000
            > ZPOPMIN k
            ["m01000", ,500]
            > ZRANGEBYLEX k [m02998 +
            ["m02998", "m02999"]
            "#,
        );
    }
}
