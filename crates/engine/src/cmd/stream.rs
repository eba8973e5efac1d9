//! The stream family: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XREAD, XREADGROUP, XGROUP,
//! XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO and XSETID, on [`crate::types::stream`].
//!
//! Replies, errors and effects are Redis 7.0's (`t_stream.c`): XADD propagates the ID it made (and
//! an approximate trim as the exact one it did), a group read propagates as an `XCLAIM ... FORCE
//! JUSTID LASTID` per delivered entry (plus `XGROUP SETID` or `XGROUP CREATECONSUMER` with
//! NOACK), XCLAIM and XAUTOCLAIM likewise. Stream events (class `t`) are named by what a command
//! did ([`Ctx::event`]). XREAD and XREADGROUP with BLOCK wait as BLPOP does; every writer of the
//! key serves them ([`serve_xread`]) in arrival order.

use super::base::BASE;
use crate::args::eq_ic;
use crate::command::{Flags, Group as G, Keys};
use crate::ctx::{Command, Ctx};
use crate::error;
use crate::types::access::bulk;
use crate::types::stream::{
    AddError, Consumer, Group, INVALID_ENTRIES_READ, Nack, NewId, NodeLimits, Stream, StreamEntry, StreamId, Trim,
    TrimTo,
};
use crate::value::{SmallBytes, Value};
use crate::waiters::{BlockRequest, Serve};
use bytes::Bytes;
use resp::Frame;

const KEY2: Keys = Keys::Range { first: 2, last: 2, step: 1 };

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "xadd",
        arity: -5,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: G::Stream,
        handler: xadd,
        ..BASE
    },
    Command {
        name: "xrange",
        arity: -4,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: G::Stream,
        handler: xrange,
        ..BASE
    },
    Command {
        name: "xrevrange",
        arity: -4,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: G::Stream,
        handler: xrevrange,
        ..BASE
    },
    Command {
        name: "xlen",
        arity: 2,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: G::Stream,
        handler: xlen,
        ..BASE
    },
    Command {
        name: "xdel",
        arity: -3,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: G::Stream,
        handler: xdel,
        ..BASE
    },
    Command {
        name: "xtrim",
        arity: -4,
        flags: Flags::WRITE,
        keys: Keys::ONE,
        group: G::Stream,
        handler: xtrim,
        ..BASE
    },
    Command {
        name: "xread",
        arity: -4,
        flags: Flags::READONLY.or(Flags::BLOCKING),
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: xread_keys },
        group: G::Stream,
        handler: xread,
        serve: Some(serve_xread),
        ready: Some(xread_ready),
        ..BASE
    },
    Command {
        name: "xreadgroup",
        arity: -7,
        flags: Flags::WRITE.or(Flags::BLOCKING),
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: xread_keys },
        group: G::Stream,
        handler: xread,
        serve: Some(serve_xread),
        ready: Some(xread_ready),
        ..BASE
    },
    Command { name: "xgroup", arity: -2, flags: Flags(0), group: G::Stream, subcommands: XGROUP_SUBCOMMANDS, ..BASE },
    Command {
        name: "xsetid",
        arity: -3,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST),
        keys: Keys::ONE,
        group: G::Stream,
        handler: xsetid,
        ..BASE
    },
    Command {
        name: "xack",
        arity: -4,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: G::Stream,
        handler: xack,
        ..BASE
    },
    Command {
        name: "xpending",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::ONE,
        group: G::Stream,
        handler: xpending,
        ..BASE
    },
    Command {
        name: "xclaim",
        arity: -6,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: G::Stream,
        handler: xclaim,
        ..BASE
    },
    Command {
        name: "xautoclaim",
        arity: -6,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: G::Stream,
        handler: xautoclaim,
        ..BASE
    },
    Command { name: "xinfo", arity: -2, flags: Flags(0), group: G::Stream, subcommands: XINFO_SUBCOMMANDS, ..BASE },
];

static XGROUP_SUBCOMMANDS: &[Command] = &[
    Command {
        name: "xgroup|create",
        arity: -5,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: KEY2,
        group: G::Stream,
        handler: xgroup,
        ..BASE
    },
    Command {
        name: "xgroup|createconsumer",
        arity: 5,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: KEY2,
        group: G::Stream,
        handler: xgroup,
        ..BASE
    },
    Command {
        name: "xgroup|delconsumer",
        arity: 5,
        flags: Flags::WRITE,
        keys: KEY2,
        group: G::Stream,
        handler: xgroup,
        ..BASE
    },
    Command {
        name: "xgroup|destroy",
        arity: 4,
        flags: Flags::WRITE,
        keys: KEY2,
        group: G::Stream,
        handler: xgroup,
        ..BASE
    },
    Command {
        name: "xgroup|help",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE),
        group: G::Stream,
        handler: xgroup_help,
        ..BASE
    },
    Command {
        name: "xgroup|setid",
        arity: -5,
        flags: Flags::WRITE,
        keys: KEY2,
        group: G::Stream,
        handler: xgroup,
        ..BASE
    },
];

static XINFO_SUBCOMMANDS: &[Command] = &[
    Command {
        name: "xinfo|consumers",
        arity: 4,
        flags: Flags::READONLY,
        keys: KEY2,
        group: G::Stream,
        handler: xinfo_consumers,
        ..BASE
    },
    Command {
        name: "xinfo|groups",
        arity: 3,
        flags: Flags::READONLY,
        keys: KEY2,
        group: G::Stream,
        handler: xinfo_groups,
        ..BASE
    },
    Command {
        name: "xinfo|help",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE),
        group: G::Stream,
        handler: xinfo_help,
        ..BASE
    },
    Command {
        name: "xinfo|stream",
        arity: -3,
        flags: Flags::READONLY,
        keys: KEY2,
        group: G::Stream,
        handler: xinfo_stream,
        ..BASE
    },
];

// ---- shared pieces -----------------------------------------------------------------------------------

fn invalid_id() -> Frame {
    Frame::error("ERR Invalid stream ID specified as stream command argument")
}

/// A strict ID (`-` and `+` refused), the sequence 0 when missing.
fn strict_id(b: &[u8]) -> Result<StreamId, Frame> {
    StreamId::parse(b, 0, true, false).map(|(id, _)| id).ok_or_else(invalid_id)
}

/// A range bound (`streamParseIntervalIDOrReply`): `(id` is exclusive (and strict).
fn interval_id(b: &[u8], missing_seq: u64) -> Result<(StreamId, bool), Frame> {
    if b.len() > 1 && b[0] == b'(' {
        let (id, _) = StreamId::parse(&b[1..], missing_seq, true, false).ok_or_else(invalid_id)?;
        Ok((id, true))
    } else {
        let (id, _) = StreamId::parse(b, missing_seq, false, false).ok_or_else(invalid_id)?;
        Ok((id, false))
    }
}

/// The `[start, end]` of XRANGE, XPENDING...: exclusive bounds moved inward, with Redis's errors.
fn interval(start: &[u8], end: &[u8]) -> Result<(StreamId, StreamId), Frame> {
    let (mut s, sx) = interval_id(start, 0)?;
    if sx {
        s = s.incr().ok_or_else(|| Frame::error("ERR invalid start ID for the interval"))?;
    }
    let (mut e, ex) = interval_id(end, u64::MAX)?;
    if ex {
        e = e.decr().ok_or_else(|| Frame::error("ERR invalid end ID for the interval"))?;
    }
    Ok((s, e))
}

fn int(b: &[u8]) -> Result<i64, Frame> {
    crate::args::parse_i64_strict(b).ok_or_else(error::not_integer)
}

fn int_or(b: &[u8], msg: &str) -> Result<i64, Frame> {
    crate::args::parse_i64_strict(b).ok_or_else(|| Frame::error(format!("ERR {msg}")))
}

fn id_frame(id: StreamId) -> Frame {
    Frame::Bulk(id.text())
}

fn entry_frame((id, fields): &StreamEntry) -> Frame {
    Frame::Array(vec![id_frame(*id), Frame::Array(fields.iter().map(|f| bulk(f)).collect())])
}

fn entries_frame(v: &[StreamEntry]) -> Frame {
    Frame::Array(v.iter().map(entry_frame).collect())
}

fn limits(ctx: &Ctx<'_, '_>) -> NodeLimits {
    let c = &ctx.srv.config;
    NodeLimits {
        max_bytes: c.stream_node_max_bytes.load(std::sync::atomic::Ordering::Relaxed).max(0) as usize,
        max_entries: c.stream_node_max_entries.load(std::sync::atomic::Ordering::Relaxed),
    }
}

fn now_ms(ctx: &Ctx<'_, '_>) -> i64 {
    ctx.unix_ms()
}

fn nogroup_key(key: &[u8], group: &[u8]) -> Frame {
    Frame::error(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

/// The stream at `key` for reading (a keyspace hit or miss): Ok(None) when missing, WRONGTYPE
/// for another type.
fn read<'a>(ctx: &'a mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<&'a Stream>, Frame> {
    match ctx.db().into_read(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Stream(s)) => Ok(Some(s)),
        Some(Value::Damaged(d)) if d.type_name() == "stream" => Err(d.refusal()),
        Some(_) => Err(error::wrong_type()),
    }
}

/// The stream at `key` for modification.
fn write<'a>(ctx: &'a mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<&'a mut Stream>, Frame> {
    match ctx.db().into_write(key).map(|e| &mut e.value) {
        None => Ok(None),
        Some(Value::Stream(s)) => Ok(Some(s)),
        Some(Value::Damaged(d)) if d.type_name() == "stream" => Err(d.refusal()),
        Some(_) => Err(error::wrong_type()),
    }
}

/// The stream at `key` for modification, created empty when missing.
fn create<'a>(ctx: &'a mut Ctx<'_, '_>, key: &[u8]) -> Result<&'a mut Stream, Frame> {
    {
        let mut db = ctx.db();
        match db.peek(key).map(|e| &e.value) {
            None => db.set(key, Value::Stream(Box::default()), false),
            Some(Value::Stream(_)) => {}
            Some(Value::Damaged(d)) if d.type_name() == "stream" => return Err(d.refusal()),
            Some(_) => return Err(error::wrong_type()),
        }
    }
    write(ctx, key)?.ok_or_else(error::no_such_key)
}

// ---- XADD / XTRIM ------------------------------------------------------------------------------------

/// What XADD and XTRIM parsed (`streamAddTrimArgs`).
struct AddTrim {
    /// The ID and whether its sequence was given (`ms-*` leaves it out); None for `*`.
    id: Option<(StreamId, bool)>,
    /// Where the ID (or `*`) is.
    idpos: usize,
    nomkstream: bool,
    trim: Option<Trim>,
    /// Where the MAXLEN/MINID value is (rewritten after an approximate trim).
    trim_at: usize,
}

fn parse_add_trim(ctx: &Ctx<'_, '_>, xadd: bool) -> Result<AddTrim, Frame> {
    let args = ctx.args;
    let argc = args.len();
    let mut a = AddTrim { id: None, idpos: 0, nomkstream: false, trim: None, trim_at: 0 };
    let mut to: Option<TrimTo> = None;
    let mut approx = false;
    let mut limit: i64 = 0;
    let mut limit_given = false;
    let mut i = 2;
    while i < argc {
        let more = argc - 1 - i;
        let opt = &args[i][..];
        if xadd && opt == b"*" {
            break;
        } else if eq_ic(opt, "maxlen") && more > 0 {
            if to.is_some() {
                return Err(Frame::error(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            approx = false;
            let next = &args[i + 1][..];
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let n = int(&args[i + 1])?;
            if n < 0 {
                return Err(Frame::error("ERR The MAXLEN argument must be >= 0."));
            }
            i += 1;
            to = Some(TrimTo::MaxLen(n as u64));
            a.trim_at = i;
        } else if eq_ic(opt, "minid") && more > 0 {
            if to.is_some() {
                return Err(Frame::error(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            approx = false;
            let next = &args[i + 1][..];
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let id = strict_id(&args[i + 1])?;
            i += 1;
            to = Some(TrimTo::MinId(id));
            a.trim_at = i;
        } else if eq_ic(opt, "limit") && more > 0 {
            limit = int(&args[i + 1])?;
            if limit < 0 {
                return Err(Frame::error("ERR The LIMIT argument must be >= 0."));
            }
            limit_given = true;
            i += 1;
        } else if xadd && eq_ic(opt, "nomkstream") {
            a.nomkstream = true;
        } else if xadd {
            let (id, seq_given) = StreamId::parse(opt, 0, true, true).ok_or_else(invalid_id)?;
            a.id = Some((id, seq_given));
            break;
        } else {
            return Err(error::syntax());
        }
        i += 1;
    }
    a.idpos = i;
    if limit != 0 && to.is_none() {
        return Err(Frame::error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"));
    }
    if !xadd && to.is_none() {
        return Err(Frame::error("ERR syntax error, XTRIM must be called with a trimming strategy"));
    }
    if ctx.client.loading {
        // What the AOF (or a primary) sends carries the exact trim already.
        limit = 0;
    } else if limit_given {
        if !approx {
            return Err(Frame::error("ERR syntax error, LIMIT cannot be used without the special ~ option"));
        }
    } else if approx {
        limit = 100i64.saturating_mul(limits(ctx).max_entries);
        if limit <= 0 {
            limit = 10000;
        }
        limit = limit.min(1_000_000);
    } else {
        limit = 0;
    }
    a.trim = to.map(|to| Trim { to, approx, limit });
    Ok(a)
}

/// The argument an approximate trim propagates as: the length left, or the first ID left
/// (tombstones included; the largest ID when none).
fn trim_arg(s: &Stream, to: TrimTo) -> Bytes {
    match to {
        TrimTo::MaxLen(_) => Bytes::from(s.length.to_string()),
        TrimTo::MinId(_) => s.edge_id(true, true).unwrap_or(StreamId::MAX).text(),
    }
}

fn xadd(ctx: &mut Ctx<'_, '_>) -> Frame {
    let a = match parse_add_trim(ctx, true) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let argc = ctx.argc();
    let field_pos = a.idpos + 1;
    if argc < field_pos + 2 || !(argc - field_pos).is_multiple_of(2) {
        return error::wrong_arity("xadd");
    }
    if let Some((id, true)) = a.id
        && id.is_zero()
    {
        return Frame::error("ERR The ID specified in XADD must be greater than 0-0");
    }
    let key = ctx.arg(1);
    let (limits, now) = (limits(ctx), now_ms(ctx).max(0) as u64);
    let args = ctx.args;
    let fields: Vec<&[u8]> = args[field_pos..].iter().map(|b| &b[..]).collect();
    // What XADD propagates: its `*` and `ms-*` ID as the one it made, a `~` trim as the exact one
    // it did (built only when something consumes the change stream).
    let propagating = ctx.propagating();
    let s = if a.nomkstream {
        match write(ctx, key) {
            Ok(Some(s)) => s,
            Ok(None) => return Frame::Null,
            Err(e) => return e,
        }
    } else {
        match create(ctx, key) {
            Ok(s) => s,
            Err(e) => return e,
        }
    };
    if s.last_id == StreamId::MAX {
        return Frame::error("ERR The stream has exhausted the last possible ID, unable to add more items");
    }
    let how = match a.id {
        None => NewId::Auto,
        Some((id, true)) => NewId::Exact(id),
        Some((id, false)) => NewId::AutoSeq(id.ms),
    };
    let id = match s.append(&fields, how, now, limits) {
        Ok(id) => id,
        Err(AddError::IdTooSmall) => {
            return Frame::error("ERR The ID specified in XADD is equal or smaller than the target stream top item");
        }
        Err(AddError::TooLarge) => return Frame::error("ERR Elements are too large to be stored"),
    };
    let mut rewrite: Option<Vec<Bytes>> = None;
    let mut trimmed = false;
    if let Some(t) = a.trim {
        trimmed = s.trim(&t) > 0;
        if t.approx && propagating {
            let v = rewrite.get_or_insert_with(|| args.to_vec());
            v[a.trim_at - 1] = Bytes::from_static(b"=");
            v[a.trim_at] = trim_arg(s, t.to);
        }
    }
    ctx.changed(1);
    ctx.event("xadd");
    if trimmed {
        ctx.event("xtrim");
    }
    let text = id.text();
    if propagating && !matches!(a.id, Some((_, true))) {
        let v = rewrite.get_or_insert_with(|| args.to_vec());
        v[a.idpos] = text.clone();
    }
    if let Some(v) = rewrite {
        ctx.propagate_owned(v);
    }
    Frame::Bulk(text)
}

fn xtrim(ctx: &mut Ctx<'_, '_>) -> Frame {
    let a = match parse_add_trim(ctx, false) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let Some(t) = a.trim else { return error::syntax() };
    let key = ctx.arg(1);
    let args = ctx.args;
    let s = match write(ctx, key) {
        Ok(Some(s)) => s,
        Ok(None) => return Frame::Integer(0),
        Err(e) => return e,
    };
    let n = s.trim(&t);
    let arg = t.approx.then(|| trim_arg(s, t.to));
    if n > 0 {
        ctx.event("xtrim");
        if let Some(arg) = arg {
            let mut v = args.to_vec();
            v[a.trim_at - 1] = Bytes::from_static(b"=");
            v[a.trim_at] = arg;
            ctx.propagate_as(&v);
        }
        ctx.changed(n);
    }
    Frame::Integer(n as i64)
}

// ---- reading -----------------------------------------------------------------------------------------

fn xrange_generic(ctx: &mut Ctx<'_, '_>, rev: bool) -> Frame {
    let (sa, ea) = if rev { (ctx.arg(3), ctx.arg(2)) } else { (ctx.arg(2), ctx.arg(3)) };
    let (start, end) = match interval(sa, ea) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let mut count: i64 = -1;
    let mut j = 4;
    while j < ctx.argc() {
        if eq_ic(ctx.arg(j), "count") && j + 1 < ctx.argc() {
            count = match int(ctx.arg(j + 1)) {
                Ok(n) => n.max(0),
                Err(e) => return e,
            };
            j += 2;
        } else {
            return error::syntax();
        }
    }
    let key = ctx.arg(1);
    let s = match read(ctx, key) {
        Ok(Some(s)) => s,
        Ok(None) => return Frame::Array(Vec::new()),
        Err(e) => return e,
    };
    if count == 0 {
        return Frame::NullArray;
    }
    let count = if count < 0 { 0 } else { count as usize };
    entries_frame(&s.range(start, end, rev, count))
}

fn xrange(ctx: &mut Ctx<'_, '_>) -> Frame {
    xrange_generic(ctx, false)
}
fn xrevrange(ctx: &mut Ctx<'_, '_>) -> Frame {
    xrange_generic(ctx, true)
}

fn xlen(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    match read(ctx, key) {
        Ok(s) => Frame::Integer(s.map_or(0, |s| s.length as i64)),
        Err(e) => e,
    }
}

fn xdel(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    match ctx.db().into_peek(key).map(|e| &e.value) {
        None => return Frame::Integer(0),
        Some(Value::Stream(_)) => {}
        Some(Value::Damaged(d)) if d.type_name() == "stream" => return d.refusal(),
        Some(_) => return error::wrong_type(),
    }
    let mut ids = Vec::with_capacity(ctx.argc() - 2);
    for a in &ctx.args[2..] {
        match strict_id(a) {
            Ok(id) => ids.push(id),
            Err(e) => return e,
        }
    }
    let n = match write(ctx, key) {
        Ok(Some(s)) => s.delete_ids(&ids),
        Ok(None) => 0,
        Err(e) => return e,
    };
    if n > 0 {
        ctx.event("xdel");
        ctx.changed(n);
    }
    Frame::Integer(n as i64)
}

// ---- XREAD / XREADGROUP --------------------------------------------------------------------------------

/// Key positions of XREAD and XREADGROUP (`xreadGetKeys`): the first half of what follows
/// STREAMS, none when the rest is odd.
fn xread_keys(args: &[Bytes]) -> Vec<usize> {
    let mut i = 1;
    let mut streams = None;
    while i < args.len() {
        let a = &args[i][..];
        if eq_ic(a, "block") || eq_ic(a, "count") {
            i += 1;
        } else if eq_ic(a, "group") {
            i += 2;
        } else if eq_ic(a, "noack") {
        } else if eq_ic(a, "streams") {
            streams = Some(i);
            break;
        } else {
            break;
        }
        i += 1;
    }
    let Some(p) = streams else { return Vec::new() };
    let n = args.len() - p - 1;
    if n == 0 || !n.is_multiple_of(2) {
        return Vec::new();
    }
    (p + 1..p + 1 + n / 2).collect()
}

/// What XREAD / XREADGROUP parsed.
struct ReadArgs {
    /// BLOCK's milliseconds (0: forever).
    block: Option<i64>,
    count: i64,
    /// Where the keys start, and how many.
    keys_at: usize,
    n: usize,
    group: Option<(Bytes, Bytes)>,
    noack: bool,
}

fn parse_read(ctx: &Ctx<'_, '_>) -> Result<ReadArgs, Frame> {
    let args = ctx.args;
    let group_cmd = ctx.cmd.name == "xreadgroup";
    let mut r = ReadArgs { block: None, count: 0, keys_at: 0, n: 0, group: None, noack: false };
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let o = &args[i][..];
        if eq_ic(o, "block") && more > 0 {
            if ctx.client.in_script {
                return Err(Frame::error(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(&args[0])
                )));
            }
            i += 1;
            let t = int_or(&args[i], "timeout is not an integer or out of range")?;
            if t < 0 {
                return Err(Frame::error("ERR timeout is negative"));
            }
            r.block = Some(t);
        } else if eq_ic(o, "count") && more > 0 {
            i += 1;
            r.count = int(&args[i])?.max(0);
        } else if eq_ic(o, "streams") && more > 0 {
            r.keys_at = i + 1;
            let n = args.len() - r.keys_at;
            if !n.is_multiple_of(2) {
                return Err(Frame::error(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            r.n = n / 2;
            break;
        } else if eq_ic(o, "group") && more >= 2 {
            if !group_cmd {
                return Err(Frame::error(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.group = Some((args[i + 1].clone(), args[i + 2].clone()));
            i += 2;
        } else if eq_ic(o, "noack") {
            if !group_cmd {
                return Err(Frame::error(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.noack = true;
        } else {
            return Err(error::syntax());
        }
        i += 1;
    }
    if r.keys_at == 0 {
        return Err(error::syntax());
    }
    if group_cmd && r.group.is_none() {
        return Err(Frame::error("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(r)
}

/// Where a read starts for one stream.
#[derive(Clone, Copy)]
enum From {
    /// After this ID.
    After(StreamId),
    /// `>`: what the group has not delivered.
    New,
}

/// What a group read changed, to report: effects to propagate, changes counted, a consumer made.
#[derive(Default)]
struct GroupRead {
    effects: Vec<Vec<Bytes>>,
    dirty: u64,
    created: bool,
}

/// Reads for `consumer` of `group` (`streamReplyWithRange` with a group): its pending history
/// after `from`, or with `From::New` the entries after the group's last ID, which join its PEL
/// (unless `noack`). Returns the entries (history entries no longer in the stream as a null).
#[allow(clippy::too_many_arguments)]
fn read_group(
    s: &mut Stream,
    key: &[u8],
    group: &[u8],
    consumer: &[u8],
    from: From,
    count: usize,
    noack: bool,
    now: i64,
    out: &mut GroupRead,
) -> Vec<Frame> {
    let g = s.groups.get_mut(group).expect("checked by the caller");
    match g.consumers.get_mut(consumer) {
        Some(c) => c.seen_time = now,
        None => {
            g.consumers.insert(SmallBytes::from_slice(consumer), Consumer { seen_time: now, pel: Default::default() });
            out.created = true;
            out.dirty += 1;
            if noack {
                out.effects.push(vec![
                    Bytes::from_static(b"XGROUP"),
                    Bytes::from_static(b"CREATECONSUMER"),
                    Bytes::copy_from_slice(key),
                    Bytes::copy_from_slice(group),
                    Bytes::copy_from_slice(consumer),
                ]);
            }
        }
    }
    let mut frames = Vec::new();
    match from {
        From::After(after) => {
            let Some(start) = after.incr() else { return frames };
            let ids: Vec<StreamId> = {
                let c = &g.consumers[consumer];
                let it = c.pel.range(start..).copied();
                if count == 0 { it.collect() } else { it.take(count).collect() }
            };
            for id in ids {
                match s.get(id) {
                    Some(fields) => {
                        frames.push(entry_frame(&(id, fields)));
                        if let Some(n) = s.groups.get_mut(group).and_then(|g| g.pel.get_mut(&id)) {
                            n.delivery_time = now;
                            n.delivery_count += 1;
                        }
                    }
                    None => frames.push(Frame::Array(vec![id_frame(id), Frame::NullArray])),
                }
            }
        }
        From::New => {
            let start = g.last_id.incr().unwrap_or(StreamId::MAX);
            let entries = s.range(start, StreamId::MAX, false, count);
            let mut moved = false;
            for e in &entries {
                if s.advance_group(group, e.0) && noack {
                    moved = true;
                }
                let g = s.groups.get_mut(group).expect("checked by the caller");
                if !noack {
                    match g.pel.entry(e.0) {
                        std::collections::btree_map::Entry::Occupied(mut o) => {
                            // Pending already (the group's last ID was set back): it moves to
                            // this consumer.
                            let n = o.get_mut();
                            n.delivery_time = now;
                            n.delivery_count = 1;
                            g.assign(e.0, consumer);
                        }
                        std::collections::btree_map::Entry::Vacant(v) => {
                            v.insert(Nack {
                                delivery_time: now,
                                delivery_count: 1,
                                consumer: SmallBytes::from_slice(consumer),
                            });
                            if let Some(c) = g.consumers.get_mut(consumer) {
                                c.pel.insert(e.0);
                            }
                        }
                    }
                    let n = &g.pel[&e.0];
                    out.effects.push(xclaim_effect(key, group, consumer, e.0, n, g.last_id));
                }
                frames.push(entry_frame(e));
            }
            if moved {
                let g = &s.groups[group];
                out.effects.push(setid_effect(key, group, g));
            }
        }
    }
    frames
}

/// `XCLAIM key group consumer 0 id TIME t RETRYCOUNT n FORCE JUSTID LASTID last`
/// (`streamPropagateXCLAIM`).
fn xclaim_effect(key: &[u8], group: &[u8], consumer: &[u8], id: StreamId, n: &Nack, last: StreamId) -> Vec<Bytes> {
    let b = Bytes::copy_from_slice;
    vec![
        Bytes::from_static(b"XCLAIM"),
        b(key),
        b(group),
        b(consumer),
        Bytes::from_static(b"0"),
        id.text(),
        Bytes::from_static(b"TIME"),
        Bytes::copy_from_slice(itoa::Buffer::new().format(n.delivery_time).as_bytes()),
        Bytes::from_static(b"RETRYCOUNT"),
        Bytes::copy_from_slice(itoa::Buffer::new().format(n.delivery_count).as_bytes()),
        Bytes::from_static(b"FORCE"),
        Bytes::from_static(b"JUSTID"),
        Bytes::from_static(b"LASTID"),
        last.text(),
    ]
}

/// `XGROUP SETID key group last ENTRIESREAD n` (`streamPropagateGroupID`).
fn setid_effect(key: &[u8], group: &[u8], g: &Group) -> Vec<Bytes> {
    vec![
        Bytes::from_static(b"XGROUP"),
        Bytes::from_static(b"SETID"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(group),
        g.last_id.text(),
        Bytes::from_static(b"ENTRIESREAD"),
        Bytes::from(g.entries_read.to_string()),
    ]
}

/// The reply of a read: per stream served, its key and entries (a map in RESP3).
fn read_reply(ctx: &Ctx<'_, '_>, served: Vec<(Bytes, Frame)>) -> Frame {
    if ctx.client.proto == resp::Protocol::Resp3 {
        Frame::Map(served.into_iter().map(|(k, v)| (Frame::Bulk(k), v)).collect())
    } else {
        Frame::Array(served.into_iter().map(|(k, v)| Frame::Array(vec![Frame::Bulk(k), v])).collect())
    }
}

fn xread(ctx: &mut Ctx<'_, '_>) -> Frame {
    let r = match parse_read(ctx) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let args = ctx.args;
    let keys = &args[r.keys_at..r.keys_at + r.n];
    let id_args = &args[r.keys_at + r.n..];
    let mut froms: Vec<From> = Vec::with_capacity(r.n);
    for (key, ida) in keys.iter().zip(id_args) {
        let s = match read(ctx, key) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if let Some((gname, _)) = &r.group
            && s.is_none_or(|s| !s.groups.contains_key(&gname[..]))
        {
            return Frame::error(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                String::from_utf8_lossy(key),
                String::from_utf8_lossy(gname)
            ));
        }
        if &ida[..] == b"$" {
            if r.group.is_some() {
                return Frame::error(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                );
            }
            froms.push(From::After(s.map_or(StreamId::MIN, |s| s.last_id)));
        } else if &ida[..] == b">" {
            if r.group.is_none() {
                return Frame::error(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                );
            }
            froms.push(From::New);
        } else {
            match strict_id(ida) {
                Ok(id) => froms.push(From::After(id)),
                Err(e) => return e,
            }
        }
    }
    let now = now_ms(ctx);
    let mut served: Vec<(Bytes, Frame)> = Vec::new();
    let mut effects = GroupRead::default();
    for (i, key) in keys.iter().enumerate() {
        // Serve at once when there is something after the ID (for a group's `>`, after the
        // group's last ID; a history read always).
        let ready = {
            let Ok(Some(s)) = read(ctx, key) else { continue };
            if s.length == 0 && !matches!((&r.group, froms[i]), (Some(_), From::After(_))) {
                false
            } else {
                match (&r.group, froms[i]) {
                    (Some(_), From::After(_)) => true,
                    (Some((g, _)), From::New) => {
                        let last = s.groups[&g[..]].last_id;
                        s.last_valid_id().is_some_and(|m| m > last)
                    }
                    (None, From::After(id)) => s.last_valid_id().is_some_and(|m| m > id),
                    (None, From::New) => false,
                }
            }
        };
        if !ready {
            continue;
        }
        let count = r.count.max(0) as usize;
        let frames = match &r.group {
            None => {
                let From::After(id) = froms[i] else { continue };
                let Ok(Some(s)) = read(ctx, key) else { continue };
                match id.incr() {
                    Some(start) => s.range(start, StreamId::MAX, false, count).iter().map(entry_frame).collect(),
                    None => Vec::new(),
                }
            }
            Some((g, c)) => {
                let Ok(Some(s)) = write(ctx, key) else { continue };
                let before = effects.created;
                effects.created = false;
                let f = read_group(s, key, g, c, froms[i], count, r.noack, now, &mut effects);
                if effects.created {
                    ctx.event("xgroup-createconsumer");
                }
                effects.created |= before;
                effects.dirty += 1;
                f
            }
        };
        served.push((key.clone(), Frame::Array(frames)));
    }
    if r.group.is_some() {
        ctx.changed(effects.dirty);
        ctx.propagate_nothing();
        for e in &effects.effects {
            ctx.propagate_as(e);
        }
    }
    if !served.is_empty() {
        return read_reply(ctx, served);
    }
    let Some(block) = r.block else { return Frame::NullArray };
    if ctx.client.deny_blocking {
        return Frame::NullArray;
    }
    // The serve step reads the same command with BLOCK left out, the IDs resolved (`$` is the
    // last ID now) and the count a blocked read gets (1000 unless given).
    let mut sargs: Vec<Bytes> = vec![args[0].clone()];
    sargs.push(Bytes::from_static(b"COUNT"));
    sargs.push(Bytes::from(if r.count > 0 { r.count } else { 1000 }.to_string()));
    if let Some((g, c)) = &r.group {
        sargs.extend([Bytes::from_static(b"GROUP"), g.clone(), c.clone()]);
    }
    if r.noack {
        sargs.push(Bytes::from_static(b"NOACK"));
    }
    sargs.push(Bytes::from_static(b"STREAMS"));
    sargs.extend(keys.iter().cloned());
    for f in &froms {
        sargs.push(match f {
            From::After(id) => id.text(),
            From::New => Bytes::from_static(b">"),
        });
    }
    let deadline = if block == 0 { None } else { Some(ctx.now.saturating_add(block as u64)) };
    ctx.client.block =
        Some(BlockRequest { keys: keys.to_vec(), deadline, timeout_reply: Frame::NullArray, serve_args: Some(sargs) });
    // Not sent: Server::execute replaces it with the waiter's eventual reply.
    Frame::Null
}

/// Where a blocked XREAD / XREADGROUP stands with `key`, changing nothing: its parsed arguments
/// and the ID after which entries serve it (a group's last delivered ID for `>`), when there are
/// such entries; else what its serve step answers (Pass, or an error for a group reader whose key
/// or group is gone).
fn xread_due(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<(ReadArgs, StreamId), Serve> {
    let Ok(r) = parse_read(ctx) else { return Err(Serve::Pass) };
    let args = ctx.args;
    let Some(i) = args[r.keys_at..r.keys_at + r.n].iter().position(|k| &k[..] == key) else {
        return Err(Serve::Pass);
    };
    let ida = &args[r.keys_at + r.n + i];
    let s = match ctx.db().into_peek(key).map(|e| &e.value) {
        Some(Value::Stream(s)) => s,
        _ if r.group.is_some() => {
            return Err(Serve::Reply(Frame::error("UNBLOCKED the stream key no longer exists")));
        }
        _ => return Err(Serve::Pass),
    };
    let gt = match &r.group {
        Some((g, _)) => match s.groups.get(&g[..]) {
            Some(g) => g.last_id,
            None => {
                return Err(Serve::Reply(Frame::error(
                    "NOGROUP the consumer group this client was blocked on no longer exists",
                )));
            }
        },
        None => match StreamId::parse(ida, 0, true, false) {
            Some((id, _)) => id,
            None => return Err(Serve::Pass),
        },
    };
    if s.last_id <= gt {
        return Err(Serve::Pass);
    }
    Ok((r, gt))
}

/// Whether `key` would serve a blocked XREAD / XREADGROUP now (an answer, entries or an error).
fn xread_ready(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> bool {
    !matches!(xread_due(ctx, key), Err(Serve::Pass))
}

/// Serves a blocked XREAD / XREADGROUP from `key` (`serveClientsBlockedOnStreamKey`): entries after
/// its ID (a group's last delivered ID for `>`). Readers of a key that is gone or no longer a
/// stream keep waiting; group readers get an error, as they do when their group went.
fn serve_xread(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Serve {
    let (r, gt) = match xread_due(ctx, key) {
        Ok(due) => due,
        Err(answer) => return answer,
    };
    let count = r.count.max(0) as usize;
    let now = now_ms(ctx);
    let key_b = Bytes::copy_from_slice(key);
    let frames = match &r.group {
        None => {
            let Ok(Some(s)) = read(ctx, key) else { return Serve::Pass };
            match gt.incr() {
                Some(start) => s.range(start, StreamId::MAX, false, count).iter().map(entry_frame).collect(),
                None => Vec::new(),
            }
        }
        Some((g, c)) => {
            let mut out = GroupRead::default();
            let f = {
                let Ok(Some(s)) = write(ctx, key) else { return Serve::Pass };
                read_group(s, key, g, c, From::New, count, r.noack, now, &mut out)
            };
            if out.created {
                ctx.event("xgroup-createconsumer");
            }
            ctx.changed(out.dirty);
            ctx.propagate_nothing();
            for e in &out.effects {
                ctx.propagate_as(e);
            }
            f
        }
    };
    Serve::Reply(read_reply(ctx, vec![(key_b, Frame::Array(frames))]))
}

// ---- XGROUP ------------------------------------------------------------------------------------------

fn xgroup_help(_: &mut Ctx<'_, '_>) -> Frame {
    super::server::help_reply(
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    )
}

fn xgroup(ctx: &mut Ctx<'_, '_>) -> Frame {
    let sub = ctx.arg(1).to_ascii_lowercase();
    let sub = sub.as_slice();
    let sub_arg = ctx.arg(1);
    let syntax = || super::server::subcommand_syntax_error(sub_arg, "XGROUP");
    let (is_create, setid) = (sub == b"create", sub == b"setid");
    let mut mkstream = false;
    let mut entries_read = INVALID_ENTRIES_READ;
    let mut i = 5;
    while i < ctx.argc() {
        if is_create && eq_ic(ctx.arg(i), "mkstream") {
            mkstream = true;
            i += 1;
        } else if (is_create || setid) && eq_ic(ctx.arg(i), "entriesread") && i + 1 < ctx.argc() {
            entries_read = match int(ctx.arg(i + 1)) {
                Ok(n) => n,
                Err(e) => return e,
            };
            if entries_read < 0 && entries_read != INVALID_ENTRIES_READ {
                return Frame::error("ERR value for ENTRIESREAD must be positive or -1");
            }
            i += 2;
        } else {
            return syntax();
        }
    }
    let (key, gname) = (ctx.arg(2), ctx.arg(3));
    let exists = match ctx.db().into_peek(key).map(|e| &e.value) {
        None => false,
        Some(Value::Stream(_)) => true,
        Some(Value::Damaged(d)) if d.type_name() == "stream" => return d.refusal(),
        Some(_) => return error::wrong_type(),
    };
    let mut has_group = false;
    if !mkstream {
        if !exists {
            return Frame::error(
                "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
            );
        }
        has_group =
            matches!(ctx.db().into_peek(key).map(|e| &e.value), Some(Value::Stream(s)) if s.groups.contains_key(gname));
        if !has_group && matches!(sub, b"setid" | b"createconsumer" | b"delconsumer") {
            return Frame::error(format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                String::from_utf8_lossy(gname),
                String::from_utf8_lossy(key)
            ));
        }
    }
    let argc = ctx.argc();
    let now = now_ms(ctx);
    match sub {
        b"create" if (5..=8).contains(&argc) => {
            let ida = ctx.arg(4);
            let last = match ctx.db().into_peek(key).map(|e| &e.value) {
                Some(Value::Stream(s)) => s.last_id,
                _ => StreamId::MIN,
            };
            let id = if ida == b"$" {
                last
            } else {
                match strict_id(ida) {
                    Ok(id) => id,
                    Err(e) => return e,
                }
            };
            let s = match create(ctx, key) {
                Ok(s) => s,
                Err(e) => return e,
            };
            if s.groups.contains_key(gname) {
                return Frame::error("BUSYGROUP Consumer Group name already exists");
            }
            s.groups.insert(SmallBytes::from_slice(gname), Group::new(id, entries_read));
            ctx.changed(1);
            ctx.event("xgroup-create");
            Frame::ok()
        }
        b"setid" if argc == 5 || argc == 7 => {
            let ida = ctx.arg(4);
            let Ok(Some(s)) = write(ctx, key) else { return syntax() };
            let id = if ida == b"$" {
                s.last_id
            } else {
                match StreamId::parse(ida, 0, false, false) {
                    Some((id, _)) => id,
                    None => return invalid_id(),
                }
            };
            let g = s.groups.get_mut(gname).expect("checked above");
            g.last_id = id;
            g.entries_read = entries_read;
            ctx.changed(1);
            ctx.event("xgroup-setid");
            Frame::ok()
        }
        b"destroy" if argc == 4 => {
            if !has_group {
                return Frame::Integer(0);
            }
            let Ok(Some(s)) = write(ctx, key) else { return Frame::Integer(0) };
            s.groups.remove(gname);
            ctx.changed(1);
            ctx.event("xgroup-destroy");
            Frame::Integer(1)
        }
        b"createconsumer" if argc == 5 => {
            let cname = ctx.arg(4);
            let Ok(Some(s)) = write(ctx, key) else { return syntax() };
            let g = s.groups.get_mut(gname).expect("checked above");
            if g.consumers.contains_key(cname) {
                return Frame::Integer(0);
            }
            g.consumers.insert(SmallBytes::from_slice(cname), Consumer { seen_time: now, pel: Default::default() });
            ctx.changed(1);
            ctx.event("xgroup-createconsumer");
            Frame::Integer(1)
        }
        b"delconsumer" if argc == 5 => {
            let cname = ctx.arg(4);
            let known = matches!(ctx.db().into_peek(key).map(|e| &e.value),
                Some(Value::Stream(s)) if s.groups[gname].consumers.contains_key(cname));
            if !known {
                return Frame::Integer(0);
            }
            let Ok(Some(s)) = write(ctx, key) else { return Frame::Integer(0) };
            let n = s.groups.get_mut(gname).and_then(|g| g.delete_consumer(cname)).unwrap_or(0);
            ctx.changed(1);
            ctx.event("xgroup-delconsumer");
            Frame::Integer(n as i64)
        }
        _ => syntax(),
    }
}

// ---- XSETID, XACK, XPENDING ----------------------------------------------------------------------------

fn xsetid(ctx: &mut Ctx<'_, '_>) -> Frame {
    let id = match strict_id(ctx.arg(2)) {
        Ok(id) => id,
        Err(e) => return e,
    };
    let mut added: i64 = -1;
    let mut max_del = StreamId::MIN;
    let mut i = 3;
    while i < ctx.argc() {
        let more = ctx.argc() - 1 - i;
        if eq_ic(ctx.arg(i), "entriesadded") && more > 0 {
            added = match int(ctx.arg(i + 1)) {
                Ok(n) => n,
                Err(e) => return e,
            };
            if added < 0 {
                return Frame::error("ERR entries_added must be positive");
            }
            i += 2;
        } else if eq_ic(ctx.arg(i), "maxdeletedid") && more > 0 {
            max_del = match strict_id(ctx.arg(i + 1)) {
                Ok(m) => m,
                Err(e) => return e,
            };
            if id < max_del {
                return Frame::error(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                );
            }
            i += 2;
        } else {
            return error::syntax();
        }
    }
    let key = ctx.arg(1);
    let s = match write(ctx, key) {
        Ok(Some(s)) => s,
        Ok(None) => return error::no_such_key(),
        Err(e) => return e,
    };
    if s.length > 0 {
        if s.last_valid_id().is_some_and(|m| id < m) {
            return Frame::error("ERR The ID specified in XSETID is smaller than the target stream top item");
        }
        if added != -1 && s.length > added as u64 {
            return Frame::error("ERR The entries_added specified in XSETID is smaller than the target stream length");
        }
    }
    s.last_id = id;
    if added != -1 {
        s.entries_added = added as u64;
    }
    if !max_del.is_zero() {
        s.max_deleted = max_del;
    }
    ctx.changed(1);
    ctx.event("xsetid");
    Frame::ok()
}

fn xack(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, gname) = (ctx.arg(1), ctx.arg(2));
    let has = match ctx.db().into_read(key).map(|e| &e.value) {
        None => false,
        Some(Value::Stream(s)) => s.groups.contains_key(gname),
        Some(Value::Damaged(d)) if d.type_name() == "stream" => return d.refusal(),
        Some(_) => return error::wrong_type(),
    };
    if !has {
        return Frame::Integer(0);
    }
    let mut ids = Vec::with_capacity(ctx.argc() - 3);
    for a in &ctx.args[3..] {
        match strict_id(a) {
            Ok(id) => ids.push(id),
            Err(e) => return e,
        }
    }
    let pending = match ctx.db().into_peek(key).map(|e| &e.value) {
        Some(Value::Stream(s)) => ids.iter().any(|id| s.groups[gname].pel.contains_key(id)),
        _ => false,
    };
    if !pending {
        return Frame::Integer(0);
    }
    let Ok(Some(s)) = write(ctx, key) else { return Frame::Integer(0) };
    let g = s.groups.get_mut(gname).expect("checked above");
    let n = ids.iter().filter(|id| g.ack(**id)).count();
    ctx.changed(n as u64);
    Frame::Integer(n as i64)
}

fn xpending(ctx: &mut Ctx<'_, '_>) -> Frame {
    let argc = ctx.argc();
    let justinfo = argc == 3;
    if argc != 3 && !(6..=9).contains(&argc) {
        return error::syntax();
    }
    let (mut start, mut end, mut count, mut minidle) = (StreamId::MIN, StreamId::MAX, 0i64, 0i64);
    let mut consumer: Option<&[u8]> = None;
    if argc >= 6 {
        let mut at = 3;
        if eq_ic(ctx.arg(3), "idle") {
            minidle = match int(ctx.arg(4)) {
                Ok(n) => n,
                Err(e) => return e,
            };
            if argc < 8 {
                return error::syntax();
            }
            at += 2;
        }
        count = match int(ctx.arg(at + 2)) {
            Ok(n) => n.max(0),
            Err(e) => return e,
        };
        (start, end) = match interval(ctx.arg(at), ctx.arg(at + 1)) {
            Ok(x) => x,
            Err(e) => return e,
        };
        if at + 3 < argc {
            consumer = Some(ctx.arg(at + 3));
        }
    }
    let (key, gname) = (ctx.arg(1), ctx.arg(2));
    let now = now_ms(ctx);
    let s = match read(ctx, key) {
        Ok(Some(s)) => s,
        Ok(None) => return nogroup_key(key, gname),
        Err(e) => return e,
    };
    let Some(g) = s.groups.get(gname) else { return nogroup_key(key, gname) };
    if justinfo {
        if g.pel.is_empty() {
            return Frame::Array(vec![Frame::Integer(0), Frame::Null, Frame::Null, Frame::NullArray]);
        }
        let first = *g.pel.keys().next().expect("not empty");
        let last = *g.pel.keys().next_back().expect("not empty");
        let per: Vec<Frame> = g
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .map(|(n, c)| Frame::Array(vec![bulk(n), Frame::Bulk(Bytes::from(c.pel.len().to_string()))]))
            .collect();
        return Frame::Array(vec![
            Frame::Integer(g.pel.len() as i64),
            id_frame(first),
            id_frame(last),
            Frame::Array(per),
        ]);
    }
    let ids: Box<dyn Iterator<Item = StreamId>> = match consumer {
        Some(c) => match g.consumers.get(c) {
            Some(c) => Box::new(c.pel.range(start..).copied()),
            None => return Frame::Array(Vec::new()),
        },
        None => Box::new(g.pel.range(start..).map(|(k, _)| *k)),
    };
    let mut out = Vec::new();
    for id in ids {
        if count == 0 || id > end {
            break;
        }
        let Some(n) = g.pel.get(&id) else { continue };
        if minidle != 0 && now - n.delivery_time < minidle {
            continue;
        }
        count -= 1;
        out.push(Frame::Array(vec![
            id_frame(id),
            bulk(&n.consumer),
            Frame::Integer((now - n.delivery_time).max(0)),
            Frame::Integer(n.delivery_count as i64),
        ]));
    }
    Frame::Array(out)
}

// ---- XCLAIM, XAUTOCLAIM -------------------------------------------------------------------------------

fn xclaim(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, gname, cname) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let has = match ctx.db().into_read(key).map(|e| &e.value) {
        None => false,
        Some(Value::Stream(s)) => s.groups.contains_key(gname),
        Some(Value::Damaged(d)) if d.type_name() == "stream" => return d.refusal(),
        Some(_) => return error::wrong_type(),
    };
    if !has {
        return nogroup_key(key, gname);
    }
    let minidle = match int_or(ctx.arg(4), "Invalid min-idle-time argument for XCLAIM") {
        Ok(n) => n.max(0),
        Err(e) => return e,
    };
    let mut ids = Vec::new();
    let mut j = 5;
    while j < ctx.argc() {
        match StreamId::parse(ctx.arg(j), 0, true, false) {
            Some((id, _)) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let now = now_ms(ctx);
    let (mut force, mut justid) = (false, false);
    let mut retrycount: i64 = -1;
    let mut deliverytime: i64 = -1;
    let mut last_id = StreamId::MIN;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        let opt = ctx.arg(j);
        if eq_ic(opt, "force") {
            force = true;
        } else if eq_ic(opt, "justid") {
            justid = true;
        } else if eq_ic(opt, "idle") && more > 0 {
            j += 1;
            match int_or(ctx.arg(j), "Invalid IDLE option argument for XCLAIM") {
                Ok(n) => deliverytime = now - n,
                Err(e) => return e,
            }
        } else if eq_ic(opt, "time") && more > 0 {
            j += 1;
            match int_or(ctx.arg(j), "Invalid TIME option argument for XCLAIM") {
                Ok(n) => deliverytime = n,
                Err(e) => return e,
            }
        } else if eq_ic(opt, "retrycount") && more > 0 {
            j += 1;
            match int_or(ctx.arg(j), "Invalid RETRYCOUNT option argument for XCLAIM") {
                Ok(n) => retrycount = n,
                Err(e) => return e,
            }
        } else if eq_ic(opt, "lastid") && more > 0 {
            j += 1;
            match strict_id(ctx.arg(j)) {
                Ok(id) => last_id = id,
                Err(e) => return e,
            }
        } else {
            return Frame::error(format!("ERR Unrecognized XCLAIM option '{}'", String::from_utf8_lossy(opt)));
        }
        j += 1;
    }
    if deliverytime != -1 {
        if deliverytime < 0 || deliverytime > now {
            deliverytime = now;
        }
    } else {
        deliverytime = now;
    }
    let Ok(Some(s)) = write(ctx, key) else { return nogroup_key(key, gname) };
    let mut effects: Vec<Vec<Bytes>> = Vec::new();
    let mut dirty = 0u64;
    let mut created = false;
    let mut propagate_last_id = false;
    {
        let g = s.groups.get_mut(gname).expect("checked above");
        if last_id > g.last_id {
            g.last_id = last_id;
            propagate_last_id = true;
        }
    }
    let mut out = Vec::new();
    let mut have_consumer = false;
    for id in ids {
        let exists = s.contains(id);
        let g = s.groups.get_mut(gname).expect("checked above");
        if !exists {
            if let Some(n) = g.pel.get(&id) {
                effects.push(xclaim_effect(key, gname, &n.consumer.clone(), id, n, g.last_id));
                propagate_last_id = false;
                dirty += 1;
                g.ack(id);
            }
            continue;
        }
        let mut fresh = false;
        if force && !g.pel.contains_key(&id) {
            g.pel.insert(id, Nack { delivery_time: now, delivery_count: 1, consumer: SmallBytes::new() });
            fresh = true;
        }
        let Some(n) = g.pel.get(&id) else { continue };
        if !fresh && minidle != 0 && now - n.delivery_time < minidle {
            continue;
        }
        if !have_consumer {
            have_consumer = true;
            match g.consumers.get_mut(cname) {
                Some(c) => c.seen_time = now,
                None => {
                    g.consumers
                        .insert(SmallBytes::from_slice(cname), Consumer { seen_time: now, pel: Default::default() });
                    created = true;
                    dirty += 1;
                }
            }
        }
        g.assign(id, cname);
        if fresh {
            if let Some(c) = g.consumers.get_mut(cname) {
                c.pel.insert(id);
            }
            if let Some(n) = g.pel.get_mut(&id) {
                n.consumer = SmallBytes::from_slice(cname);
            }
        }
        let last = g.last_id;
        let n = g.pel.get_mut(&id).expect("present");
        n.delivery_time = deliverytime;
        if retrycount >= 0 {
            n.delivery_count = retrycount as u64;
        } else if !justid {
            n.delivery_count += 1;
        }
        let effect = xclaim_effect(key, gname, cname, id, n, last);
        if justid {
            out.push(id_frame(id));
        } else {
            let fields = s.get(id).unwrap_or_default();
            out.push(entry_frame(&(id, fields)));
        }
        effects.push(effect);
        propagate_last_id = false;
        dirty += 1;
    }
    if propagate_last_id {
        effects.push(setid_effect(key, gname, &s.groups[gname]));
        dirty += 1;
    }
    if created {
        ctx.event("xgroup-createconsumer");
    }
    ctx.changed(dirty);
    ctx.propagate_nothing();
    for e in &effects {
        ctx.propagate_as(e);
    }
    Frame::Array(out)
}

fn xautoclaim(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, gname, cname) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let minidle = match int_or(ctx.arg(4), "Invalid min-idle-time argument for XAUTOCLAIM") {
        Ok(n) => n.max(0),
        Err(e) => return e,
    };
    let (mut start, sx) = match interval_id(ctx.arg(5), 0) {
        Ok(x) => x,
        Err(e) => return e,
    };
    if sx {
        match start.incr() {
            Some(s) => start = s,
            None => return Frame::error("ERR invalid start ID for the interval"),
        }
    }
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        if eq_ic(ctx.arg(j), "count") && more > 0 {
            count = match crate::args::parse_i64_strict(ctx.arg(j + 1)) {
                Some(n) if (1..=i64::MAX / 16).contains(&n) => n,
                _ => return Frame::error("ERR COUNT must be > 0"),
            };
            j += 1;
        } else if eq_ic(ctx.arg(j), "justid") {
            justid = true;
        } else {
            return error::syntax();
        }
        j += 1;
    }
    let has = match ctx.db().into_read(key).map(|e| &e.value) {
        None => false,
        Some(Value::Stream(s)) => s.groups.contains_key(gname),
        Some(Value::Damaged(d)) if d.type_name() == "stream" => return d.refusal(),
        Some(_) => return error::wrong_type(),
    };
    if !has {
        return nogroup_key(key, gname);
    }
    let now = now_ms(ctx);
    let Ok(Some(s)) = write(ctx, key) else { return nogroup_key(key, gname) };
    let mut attempts = count.saturating_mul(10);
    let mut effects: Vec<Vec<Bytes>> = Vec::new();
    let mut deleted: Vec<StreamId> = Vec::new();
    let mut out = Vec::new();
    let mut dirty = 0u64;
    let mut created = false;
    let mut have_consumer = false;
    let mut cursor = start;
    let mut next: Option<StreamId> = None;
    while let Some(id) = s.groups[gname].pel.range(cursor..).next().map(|(k, _)| *k) {
        if attempts == 0 || count == 0 {
            next = Some(id);
            break;
        }
        attempts -= 1;
        cursor = match id.incr() {
            Some(c) => c,
            None => StreamId::MAX,
        };
        let exists = s.contains(id);
        let g = s.groups.get_mut(gname).expect("checked above");
        if !exists {
            let n = g.pel[&id].clone();
            effects.push(xclaim_effect(key, gname, &n.consumer, id, &n, g.last_id));
            dirty += 1;
            g.ack(id);
            deleted.push(id);
            count -= 1;
        } else {
            let n = &g.pel[&id];
            if minidle != 0 && now - n.delivery_time < minidle {
                if id == StreamId::MAX {
                    break;
                }
                continue;
            }
            if !have_consumer {
                have_consumer = true;
                match g.consumers.get_mut(cname) {
                    Some(c) => c.seen_time = now,
                    None => {
                        g.consumers.insert(
                            SmallBytes::from_slice(cname),
                            Consumer { seen_time: now, pel: Default::default() },
                        );
                        created = true;
                        dirty += 1;
                    }
                }
            }
            g.assign(id, cname);
            let last = g.last_id;
            let n = g.pel.get_mut(&id).expect("present");
            n.delivery_time = now;
            if !justid {
                n.delivery_count += 1;
            }
            effects.push(xclaim_effect(key, gname, cname, id, n, last));
            dirty += 1;
            if justid {
                out.push(id_frame(id));
            } else {
                let fields = s.get(id).unwrap_or_default();
                out.push(entry_frame(&(id, fields)));
            }
            count -= 1;
        }
        if id == StreamId::MAX {
            break;
        }
    }
    if created {
        ctx.event("xgroup-createconsumer");
    }
    ctx.changed(dirty);
    ctx.propagate_nothing();
    for e in &effects {
        ctx.propagate_as(e);
    }
    Frame::Array(vec![
        id_frame(next.unwrap_or(StreamId::MIN)),
        Frame::Array(out),
        Frame::Array(deleted.into_iter().map(id_frame).collect()),
    ])
}

// ---- XINFO -------------------------------------------------------------------------------------------

fn xinfo_help(_: &mut Ctx<'_, '_>) -> Frame {
    super::server::help_reply(
        "XINFO",
        &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    )
}

fn kv(k: &str, v: Frame) -> (Frame, Frame) {
    (Frame::bulk(Bytes::copy_from_slice(k.as_bytes())), v)
}

fn lookup_info<'a>(ctx: &'a mut Ctx<'_, '_>, key: &[u8]) -> Result<&'a Stream, Frame> {
    match ctx.db().into_read(key).map(|e| &e.value) {
        None => return Err(error::no_such_key()),
        Some(Value::Stream(_)) => {}
        Some(Value::Damaged(d)) if d.type_name() == "stream" => return Err(d.refusal()),
        Some(_) => return Err(error::wrong_type()),
    }
    match ctx.db().into_peek(key).map(|e| &e.value) {
        Some(Value::Stream(s)) => Ok(s),
        _ => Err(error::no_such_key()),
    }
}

fn xinfo_consumers(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, gname) = (ctx.arg(2), ctx.arg(3));
    let now = now_ms(ctx);
    let s = match lookup_info(ctx, key) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let Some(g) = s.groups.get(gname) else {
        return Frame::error(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(gname),
            String::from_utf8_lossy(key)
        ));
    };
    Frame::Array(
        g.consumers
            .iter()
            .map(|(n, c)| {
                Frame::Map(vec![
                    kv("name", bulk(n)),
                    kv("pending", Frame::Integer(c.pel.len() as i64)),
                    kv("idle", Frame::Integer((now - c.seen_time).max(0))),
                ])
            })
            .collect(),
    )
}

fn entries_read_frame(g: &Group) -> Frame {
    if g.entries_read != INVALID_ENTRIES_READ { Frame::Integer(g.entries_read) } else { Frame::Null }
}

fn lag_frame(s: &Stream, g: &Group) -> Frame {
    s.lag(g).map_or(Frame::Null, Frame::Integer)
}

fn xinfo_groups(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(2);
    let s = match lookup_info(ctx, key) {
        Ok(s) => s,
        Err(e) => return e,
    };
    Frame::Array(
        s.groups
            .iter()
            .map(|(n, g)| {
                Frame::Map(vec![
                    kv("name", bulk(n)),
                    kv("consumers", Frame::Integer(g.consumers.len() as i64)),
                    kv("pending", Frame::Integer(g.pel.len() as i64)),
                    kv("last-delivered-id", id_frame(g.last_id)),
                    kv("entries-read", entries_read_frame(g)),
                    kv("lag", lag_frame(s, g)),
                ])
            })
            .collect(),
    )
}

fn xinfo_stream(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(2);
    let optc = ctx.argc() - 3;
    let sub_arg = ctx.arg(1);
    let syntax = || super::server::subcommand_syntax_error(sub_arg, "XINFO");
    let mut full = false;
    let mut count: i64 = 10;
    if optc != 0 {
        if optc != 1 && optc != 3 {
            return syntax();
        }
        if !eq_ic(ctx.arg(3), "full") {
            return syntax();
        }
        full = true;
        if optc == 3 {
            if !eq_ic(ctx.arg(4), "count") {
                return syntax();
            }
            count = match int(ctx.arg(5)) {
                Ok(n) => n,
                Err(e) => return e,
            };
            if count < 0 {
                count = 10;
            }
        }
    }
    let s = match lookup_info(ctx, key) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let mut m = vec![
        kv("length", Frame::Integer(s.length as i64)),
        kv("radix-tree-keys", Frame::Integer(s.node_count() as i64)),
        kv("radix-tree-nodes", Frame::Integer(s.radix_nodes() as i64)),
        kv("last-generated-id", id_frame(s.last_id)),
        kv("max-deleted-entry-id", id_frame(s.max_deleted)),
        kv("entries-added", Frame::Integer(s.entries_added as i64)),
        kv("recorded-first-entry-id", id_frame(s.first_id)),
    ];
    if !full {
        m.push(kv("groups", Frame::Integer(s.groups.len() as i64)));
        let first = s.range(StreamId::MIN, StreamId::MAX, false, 1);
        m.push(kv("first-entry", first.first().map_or(Frame::Null, entry_frame)));
        let last = s.range(StreamId::MIN, StreamId::MAX, true, 1);
        m.push(kv("last-entry", last.first().map_or(Frame::Null, entry_frame)));
        return Frame::Map(m);
    }
    let count = count as usize;
    m.push(kv("entries", entries_frame(&s.range(StreamId::MIN, StreamId::MAX, false, count))));
    let take = |n: usize| if count == 0 { usize::MAX } else { n.min(count) };
    let groups = s
        .groups
        .iter()
        .map(|(n, g)| {
            let pending: Vec<Frame> = g
                .pel
                .iter()
                .take(take(g.pel.len()))
                .map(|(id, nk)| {
                    Frame::Array(vec![
                        id_frame(*id),
                        bulk(&nk.consumer),
                        Frame::Integer(nk.delivery_time),
                        Frame::Integer(nk.delivery_count as i64),
                    ])
                })
                .collect();
            let consumers: Vec<Frame> = g
                .consumers
                .iter()
                .map(|(cn, c)| {
                    let cp: Vec<Frame> = c
                        .pel
                        .iter()
                        .take(take(c.pel.len()))
                        .filter_map(|id| g.pel.get(id).map(|nk| (id, nk)))
                        .map(|(id, nk)| {
                            Frame::Array(vec![
                                id_frame(*id),
                                Frame::Integer(nk.delivery_time),
                                Frame::Integer(nk.delivery_count as i64),
                            ])
                        })
                        .collect();
                    Frame::Map(vec![
                        kv("name", bulk(cn)),
                        kv("seen-time", Frame::Integer(c.seen_time)),
                        kv("pel-count", Frame::Integer(c.pel.len() as i64)),
                        kv("pending", Frame::Array(cp)),
                    ])
                })
                .collect();
            Frame::Map(vec![
                kv("name", bulk(n)),
                kv("last-delivered-id", id_frame(g.last_id)),
                kv("entries-read", entries_read_frame(g)),
                kv("lag", lag_frame(s, g)),
                kv("pel-count", Frame::Integer(g.pel.len() as i64)),
                kv("pending", Frame::Array(pending)),
                kv("consumers", Frame::Array(consumers)),
            ])
        })
        .collect();
    m.push(kv("groups", Frame::Array(groups)));
    Frame::Map(m)
}
