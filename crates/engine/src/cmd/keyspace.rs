//! The keyspace (generic) family: DEL, UNLINK, EXISTS, TYPE, KEYS, SCAN, RANDOMKEY, RENAME, RENAMENX,
//! COPY, MOVE, TOUCH, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, OBJECT. The TTL commands live in
//! [`super::expire`].
//!
//! ## SCAN cursors
//! A cursor encodes `(upper << shard_bits) | shard`: the shard being walked and the position bound
//! [`crate::keyspace::Table::scan`] continues from (0 = start that shard from the top). Shards are
//! walked in ascending order, so cursor 0 starts at shard 0 and the reply cursor is 0 once the last
//! shard is done. Every key present for the whole iteration is returned at least once.

use super::base::{BASE, f};
use crate::args::eq_ic;
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::error;
use crate::glob;
use bytes::Bytes;
use resp::Frame;

/// RENAME, RENAMENX, COPY: `key newkey`.
const TWO_KEYS: Keys = Keys::Range { first: 1, last: 2, step: 1 };
/// OBJECT subcommands: the key follows the subcommand.
const SUB_KEY: Keys = Keys::Range { first: 2, last: 2, step: 1 };
const ALL: Flags = Flags::ALL_SHARDS;

/// OBJECT's subcommands.
static OBJECT_SUBCOMMANDS: &[Command] = &[
    Command { name: "object|encoding", arity: 3, flags: f::R, keys: SUB_KEY, handler: object_encoding, ..BASE },
    Command { name: "object|freq", arity: 3, flags: f::R, keys: SUB_KEY, handler: object_freq, ..BASE },
    Command { name: "object|idletime", arity: 3, flags: f::R, keys: SUB_KEY, handler: object_idletime, ..BASE },
    Command { name: "object|refcount", arity: 3, flags: f::R, keys: SUB_KEY, handler: object_refcount, ..BASE },
    Command { name: "object|help", arity: 2, flags: Flags::LOADING.or(Flags::STALE), handler: object_help, ..BASE },
];

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command { name: "del", arity: -2, flags: f::W, keys: Keys::ALL, handler: del, ..BASE },
    Command { name: "unlink", arity: -2, flags: f::WF, keys: Keys::ALL, handler: del, ..BASE },
    Command { name: "exists", arity: -2, flags: f::RF, keys: Keys::ALL, handler: exists, ..BASE },
    Command { name: "type", arity: 2, flags: f::RF, keys: Keys::ONE, handler: type_cmd, ..BASE },
    Command { name: "keys", arity: 2, flags: f::R.or(ALL), handler: keys, ..BASE },
    Command { name: "scan", arity: -2, flags: f::R.or(ALL), handler: scan, ..BASE },
    Command { name: "randomkey", arity: 1, flags: f::R.or(ALL), handler: randomkey, ..BASE },
    Command { name: "rename", arity: 3, flags: f::W, keys: TWO_KEYS, handler: rename, ..BASE },
    Command { name: "renamenx", arity: 3, flags: f::WF, keys: TWO_KEYS, handler: renamenx, ..BASE },
    Command { name: "copy", arity: -3, flags: f::WD, keys: TWO_KEYS, handler: copy, ..BASE },
    Command { name: "move", arity: 3, flags: f::WF, keys: Keys::ONE, handler: move_cmd, ..BASE },
    Command { name: "dump", arity: 2, flags: f::R, keys: Keys::ONE, handler: dump, ..BASE },
    Command { name: "restore", arity: -4, flags: f::WD, keys: Keys::ONE, handler: restore, ..BASE },
    Command { name: "touch", arity: -2, flags: f::RF, keys: Keys::ALL, handler: touch, ..BASE },
    Command {
        name: "dbsize",
        arity: 1,
        flags: f::RF.or(ALL),
        group: crate::command::Group::Server,
        handler: dbsize,
        ..BASE
    },
    Command {
        name: "flushdb",
        arity: -1,
        flags: f::W.or(ALL),
        group: crate::command::Group::Server,
        handler: flushdb,
        ..BASE
    },
    Command {
        name: "flushall",
        arity: -1,
        flags: f::W.or(ALL),
        group: crate::command::Group::Server,
        handler: flushall,
        ..BASE
    },
    Command {
        name: "swapdb",
        arity: 3,
        flags: f::WF.or(ALL),
        group: crate::command::Group::Server,
        handler: swapdb,
        ..BASE
    },
    Command { name: "object", arity: -2, subcommands: OBJECT_SUBCOMMANDS, ..BASE },
];

/// Parses a SCAN-family cursor as Redis does (`strtoul` base 10 over the whole argument): optional
/// sign (`-n` wraps), no leading space, no overflow; the empty string is cursor 0.
pub fn parse_scan_cursor(b: &[u8]) -> Option<u64> {
    let (neg, digits) = match b.first() {
        None => return Some(0),
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        Some(_) => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Parses a database index like Redis's `getIntFromObjectOrReply` (an `int`), then checks the range.
fn db_index(ctx: &Ctx<'_, '_>, i: usize) -> Result<usize, Frame> {
    let n = crate::args::parse_i64_strict(ctx.arg(i)).ok_or_else(error::not_integer)?;
    let n = i32::try_from(n).map_err(|_| error::value_range(i32::MIN.into(), i32::MAX.into()))?;
    match usize::try_from(n) {
        Ok(n) if n < ctx.srv.ks.ndbs() => Ok(n),
        _ => Err(error::db_out_of_range()),
    }
}

fn bulk(k: &[u8]) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(k))
}

/// DEL and UNLINK. UNLINK (and DEL with `lazyfree-lazy-user-del yes`) frees large values on a
/// background thread, as Redis does.
fn del(ctx: &mut Ctx<'_, '_>) -> Frame {
    let args = ctx.args;
    let lazy =
        ctx.cmd.name == "unlink" || ctx.srv.config.lazyfree_lazy_user_del.load(std::sync::atomic::Ordering::Relaxed);
    let mut db = ctx.db();
    let mut n = 0;
    let mut freed = Vec::new();
    for k in &args[1..] {
        if let Some(e) = db.remove(k) {
            n += 1;
            if lazy {
                freed.push(e.value);
            }
        }
    }
    for v in freed {
        ctx.srv.free_lazily(v);
    }
    ctx.changed(n as u64);
    Frame::Integer(n as i64)
}

fn exists(ctx: &mut Ctx<'_, '_>) -> Frame {
    let args = ctx.args;
    let mut db = ctx.db();
    let n = args[1..].iter().filter(|k| db.read_notouch(k).is_some()).count();
    Frame::Integer(n as i64)
}

fn touch(ctx: &mut Ctx<'_, '_>) -> Frame {
    let args = ctx.args;
    let mut db = ctx.db();
    let n = args[1..].iter().filter(|k| db.read(k).is_some()).count();
    Frame::Integer(n as i64)
}

fn type_cmd(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    Frame::simple(ctx.db().read_notouch(key).map_or("none", |e| e.value.type_name()))
}

fn keys(ctx: &mut Ctx<'_, '_>) -> Frame {
    let pat = ctx.arg(1);
    let all = pat == b"*";
    let now = ctx.now;
    let proto = ctx.client.proto;
    let cap = ctx.reply_cap();
    let mut db = ctx.db();
    // Two full downward walks per table, O(N) each: the first sizes the reply (and reclaims expired
    // keys on the way), the second writes it, straight into its wire bytes (a reply of millions
    // of keys costs what Redis's output buffer would hold, not a frame per key). `now` is fixed, so
    // both walks see the same keys.
    let (mut count, mut body) = (0usize, 0usize);
    for t in db.tables() {
        t.scan(None, usize::MAX, now, &mut |k, _| {
            if all || glob::matches(pat, k, false) {
                count += 1;
                body += resp::BulkArray::bulk_size(k.len());
            }
        });
    }
    if body > cap {
        return ctx.reply_too_large();
    }
    let mut out = resp::BulkArray::array(count, body, proto);
    let mut left = count;
    for t in db.tables() {
        t.scan(None, usize::MAX, now, &mut |k, _| {
            if left > 0 && (all || glob::matches(pat, k, false)) {
                left -= 1;
                out.push(k);
            }
        });
    }
    debug_assert_eq!(left, 0);
    out.finish()
}

fn scan(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some(cursor) = parse_scan_cursor(ctx.arg(1)) else {
        return Frame::error("ERR invalid cursor");
    };
    let mut count: i64 = 10;
    let mut pat: Option<&[u8]> = None;
    let mut typ: Option<&[u8]> = None;
    let mut i = 2;
    while i < ctx.argc() {
        let more = ctx.argc() - i >= 2;
        let a = ctx.arg(i);
        if eq_ic(a, "count") && more {
            count = match ctx.int_arg(i + 1) {
                Ok(n) => n,
                Err(e) => return e,
            };
            if count < 1 {
                return error::syntax();
            }
        } else if eq_ic(a, "match") && more {
            let p = ctx.arg(i + 1);
            pat = (p != b"*").then_some(p);
        } else if eq_ic(a, "type") && more {
            typ = Some(ctx.arg(i + 1));
        } else {
            return error::syntax();
        }
        i += 2;
    }

    let (nshards, bits) = (ctx.srv.ks.nshards(), ctx.srv.ks.shard_bits());
    let mask = (nshards as u64) - 1;
    let mut shard = (cursor & mask) as usize;
    let mut upper = usize::try_from(cursor >> bits).unwrap_or(usize::MAX);
    let mut budget = usize::try_from(count).unwrap_or(usize::MAX);
    let (dbi, now) = (ctx.client.db, ctx.now);
    let mut found = Vec::new();
    let next_cursor = loop {
        let t = &mut ctx.locked.shard(shard).dbs[dbi];
        if budget == 0 && !t.is_empty() {
            break ((upper as u64) << bits) | shard as u64;
        }
        let start = if upper == 0 { t.len() } else { upper.min(t.len()) };
        let next = t.scan((upper != 0).then_some(upper), budget, now, &mut |k, e| {
            if pat.is_some_and(|p| !glob::matches(p, k, false)) {
                return;
            }
            if typ.is_some_and(|ty| !e.value.type_name().as_bytes().eq_ignore_ascii_case(ty)) {
                return;
            }
            found.push(bulk(k));
        });
        budget = budget.saturating_sub(start.saturating_sub(next));
        if next != 0 {
            break ((next as u64) << bits) | shard as u64;
        }
        shard += 1;
        upper = 0;
        if shard == nshards {
            break 0;
        }
    };
    Frame::Array(vec![Frame::Bulk(Bytes::from(next_cursor.to_string())), Frame::Array(found)])
}

fn randomkey(ctx: &mut Ctx<'_, '_>) -> Frame {
    let now = ctx.now;
    let mut db = ctx.db();
    // Each failed try reclaims one expired key, so this terminates; except during a client pause,
    // which keeps expired keys: after 100 such tries the key is returned though it may be logically
    // expired (Redis 7.2's fix of the endless loop 7.0 has there).
    let mut held_tries = 100;
    loop {
        let lens: Vec<usize> = db.tables().map(|t| t.len()).collect();
        let total: usize = lens.iter().sum();
        if total == 0 {
            return Frame::Null;
        }
        let mut pos = rand::random_range(0..total);
        let mut ti = 0;
        while pos >= lens[ti] {
            pos -= lens[ti];
            ti += 1;
        }
        let Some(t) = db.tables().nth(ti) else {
            return Frame::Null;
        };
        let Some(key) = t.get_index(pos).map(|(k, _)| k.clone()) else {
            return Frame::Null;
        };
        let len = t.len();
        if t.lookup(&key, now).is_some() {
            return bulk(&key);
        }
        if t.len() == len {
            held_tries -= 1;
            if held_tries == 0 {
                return bulk(&key);
            }
        }
    }
}

fn rename_generic(ctx: &mut Ctx<'_, '_>, nx: bool) -> Frame {
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    let mut db = ctx.db();
    if !db.exists(src) {
        return error::no_such_key();
    }
    if src == dst {
        return if nx { Frame::Integer(0) } else { Frame::ok() };
    }
    if nx && db.exists(dst) {
        return Frame::Integer(0);
    }
    let Some((e, at)) = db.remove_with_deadline(src) else {
        return error::no_such_key();
    };
    // The entry keeps its TTL; whatever `dst` held (and its TTL) is replaced.
    db.insert_entry(dst, e, at);
    ctx.changed(1);
    if nx { Frame::Integer(1) } else { Frame::ok() }
}

fn rename(ctx: &mut Ctx<'_, '_>) -> Frame {
    rename_generic(ctx, false)
}

fn renamenx(ctx: &mut Ctx<'_, '_>) -> Frame {
    rename_generic(ctx, true)
}

fn copy(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    let cur = ctx.client.db;
    let mut target = cur;
    let mut replace = false;
    let mut j = 3;
    while j < ctx.argc() {
        let a = ctx.arg(j);
        if eq_ic(a, "replace") {
            replace = true;
        } else if eq_ic(a, "db") && j + 1 < ctx.argc() {
            target = match db_index(ctx, j + 1) {
                Ok(n) => n,
                Err(e) => return e,
            };
            j += 1;
        } else {
            return error::syntax();
        }
        j += 1;
    }
    if target == cur && src == dst {
        return error::same_object();
    }
    let Some((value, expire_at)) = ctx.db().read_with_deadline(src).map(|(e, at)| (e.value.clone(), at.unwrap_or(0)))
    else {
        return Frame::Integer(0);
    };
    let mut tdb = ctx.db_at(target);
    if !replace && tdb.exists(dst) {
        return Frame::Integer(0);
    }
    // `Value: Clone` is a deep copy of every variant.
    tdb.set_with_expire(dst, value, expire_at);
    ctx.changed(1);
    Frame::Integer(1)
}

fn move_cmd(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let target = match db_index(ctx, 2) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if target == ctx.client.db {
        return error::same_object();
    }
    if !ctx.db().exists(key) || ctx.db_at(target).exists(key) {
        return Frame::Integer(0);
    }
    let Some((e, at)) = ctx.db().remove_with_deadline(key) else {
        return Frame::Integer(0);
    };
    ctx.db_at(target).insert_entry(key, e, at);
    ctx.changed(1);
    Frame::Integer(1)
}

fn dbsize(ctx: &mut Ctx<'_, '_>) -> Frame {
    let n: usize = ctx.db().tables().map(|t| t.len()).sum();
    Frame::Integer(n as i64)
}

/// FLUSHDB / FLUSHALL options: nothing, or exactly one of ASYNC / SYNC (both flush synchronously).
fn flush_args_ok(ctx: &Ctx<'_, '_>) -> bool {
    match ctx.argc() {
        1 => true,
        2 => eq_ic(ctx.arg(1), "sync") || eq_ic(ctx.arg(1), "async"),
        _ => false,
    }
}

fn flushdb(ctx: &mut Ctx<'_, '_>) -> Frame {
    if !flush_args_ok(ctx) {
        return error::syntax();
    }
    let now = ctx.now;
    let mut removed = 0;
    for t in ctx.db().tables() {
        removed += t.len() as u64;
        t.clear(now);
    }
    // Propagated even when there was nothing to remove, as Redis does.
    ctx.changed(removed);
    ctx.force_propagate();
    Frame::ok()
}

fn flushall(ctx: &mut Ctx<'_, '_>) -> Frame {
    if !flush_args_ok(ctx) {
        return error::syntax();
    }
    let now = ctx.now;
    let mut removed = 0;
    for s in ctx.locked.shards_mut() {
        for t in s.dbs.iter_mut() {
            removed += t.len() as u64;
            t.clear(now);
        }
    }
    // Propagated even when there was nothing to remove, as Redis does.
    ctx.changed(removed);
    ctx.force_propagate();
    // With save points, the now empty dataset is saved at once (Redis's flushAllDataAndResetRDB),
    // which also starts the change count afresh.
    if !ctx.srv.save_points().is_empty() {
        let pending = ctx.dirty;
        let _ = ctx.srv.save_locked_pending(ctx.locked, pending);
    }
    Frame::ok()
}

fn swapdb(ctx: &mut Ctx<'_, '_>) -> Frame {
    let parse = |i: usize, msg: &str| {
        crate::args::parse_i64_strict(ctx.arg(i))
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| Frame::error(msg.to_string()))
    };
    let a = match parse(1, "ERR invalid first DB index") {
        Ok(n) => n,
        Err(e) => return e,
    };
    let b = match parse(2, "ERR invalid second DB index") {
        Ok(n) => n,
        Err(e) => return e,
    };
    let ndbs = ctx.srv.ks.ndbs();
    let (Ok(a), Ok(b)) = (usize::try_from(a), usize::try_from(b)) else {
        return error::db_out_of_range();
    };
    if a >= ndbs || b >= ndbs {
        return error::db_out_of_range();
    }
    if a == b {
        // Nothing moves, but Redis counts (and propagates) it all the same.
        ctx.changed(1);
        return Frame::ok();
    }
    let now = ctx.now;
    let (lo, hi) = (a.min(b), a.max(b));
    for s in ctx.locked.shards_mut() {
        // Data moves, watchers stay with their database number (WATCH is on "key in db N").
        let (left, right) = s.dbs.split_at_mut(hi);
        crate::keyspace::Table::swap_data(&mut left[lo], &mut right[0], now);
    }
    ctx.changed(1);
    Frame::ok()
}

/// True if `maxmemory-policy` is an LFU policy.
fn lfu_policy(ctx: &Ctx<'_, '_>) -> bool {
    ctx.srv.config.policy().is_lfu()
}

/// The encoding limits configured now (`hash-max-listpack-entries`...).
/// DUMP: the key's value in Redis's RDB encoding, with the RDB version and a CRC-64 (see
/// [`crate::rdb`]); nil for a missing key.
fn dump(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let compress = ctx.srv.config.rdbcompression.load(std::sync::atomic::Ordering::Relaxed);
    match ctx.db().read(key) {
        None => Frame::Null,
        Some(e) => match crate::rdb::dump(&e.value, compress) {
            Some(p) => Frame::Bulk(Bytes::from(p)),
            None => Frame::error("ERR DUMP of a native lock is not supported: RDB has no lock type"),
        },
    }
}

/// True when RESTORE checks a payload deeply (`isDeepSanitizeNeeded`... in `rdbLoadObject`):
/// `sanitize-dump-payload yes`, or `clients` for a client that is neither the primary's link nor
/// a user with `skip-sanitize-payload`.
fn deep_sanitize(ctx: &Ctx<'_, '_>) -> bool {
    match ctx.srv.config.sanitize_dump_payload() {
        crate::config::Sanitize::Yes => true,
        crate::config::Sanitize::Clients => {
            !ctx.client.from_primary && !ctx.client.user.as_ref().is_some_and(|u| u.skips_sanitize())
        }
        crate::config::Sanitize::No => false,
    }
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency], with Redis's
/// checks in Redis's order (`restoreCommand`).
fn restore(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut j = 4;
    while j < ctx.argc() {
        let more = j + 1 < ctx.argc();
        let a = ctx.arg(j);
        if eq_ic(a, "replace") {
            replace = true;
        } else if eq_ic(a, "absttl") {
            absttl = true;
        } else if eq_ic(a, "idletime") && more && freq.is_none() {
            match ctx.int_arg(j + 1) {
                Ok(n) if n < 0 => return Frame::error("ERR Invalid IDLETIME value, must be >= 0"),
                Ok(n) => idle = Some(n),
                Err(e) => return e,
            }
            j += 1;
        } else if eq_ic(a, "freq") && more && idle.is_none() {
            match ctx.int_arg(j + 1) {
                Ok(n) if !(0..=255).contains(&n) => {
                    return Frame::error("ERR Invalid FREQ value, must be >= 0 and <= 255");
                }
                Ok(n) => freq = Some(n),
                Err(e) => return e,
            }
            j += 1;
        } else {
            return error::syntax();
        }
        j += 1;
    }
    let key = ctx.arg(1);
    if !replace && ctx.db().exists(key) {
        return Frame::error("BUSYKEY Target key name already exists.");
    }
    let ttl = match ctx.int_arg(2) {
        Ok(t) if t < 0 => return Frame::error("ERR Invalid TTL value, must be >= 0"),
        Ok(t) => t,
        Err(e) => return e,
    };
    let skip_crc = ctx.srv.debug.skip_checksum.load(std::sync::atomic::Ordering::Relaxed);
    let Some(body) = crate::rdb::verify_dump_with(ctx.arg(3), skip_crc) else {
        return Frame::error("ERR DUMP payload version or checksum are wrong");
    };
    let checks = crate::rdb::Checks { deep: deep_sanitize(ctx), limits: ctx.srv.config.encoding_limits() };
    let log = |ctx: &Ctx<'_, '_>, lines: Vec<String>| {
        for line in lines {
            ctx.srv.config.host().log(crate::host::LogLevel::Warning, &line);
        }
    };
    let value = match crate::rdb::restore_checked(body, checks) {
        Ok(crate::value::Value::Damaged(d)) => {
            // Kept as Redis keeps it; the report is logged now, where Latch found the corruption.
            log(ctx, crate::rdb::crash_report(&d.what, d.panic));
            crate::value::Value::Damaged(d)
        }
        Ok(v) => v,
        Err(crate::rdb::DecodeError::Unsupported(t)) => {
            return Frame::error(format!("ERR Bad data format: Latch has no {t} type"));
        }
        Err(crate::rdb::DecodeError::Fatal { what, panic }) => {
            // Redis's server would stop here; Latch refuses the payload.
            log(ctx, crate::rdb::crash_report(&what, panic));
            return Frame::error("ERR Bad data format");
        }
        Err(e) => {
            // Redis reports the check that failed in its log (`rdbReportCorruptRDB`).
            let why = match e {
                crate::rdb::DecodeError::Corrupt(msg) => msg,
                crate::rdb::DecodeError::EmptyKey => "Empty keys are not allowed.",
                _ => "integrity check failed.",
            };
            ctx.srv
                .config
                .host()
                .log(crate::host::LogLevel::Warning, &format!("Bad data format in a RESTORE payload: {why}"));
            return Frame::error("ERR Bad data format");
        }
    };
    let deleted = replace && ctx.db().remove(key).is_some();
    let unix = if ttl != 0 && !absttl { ttl.saturating_add(ctx.unix_ms()) } else { ttl };
    if unix != 0 && unix <= ctx.unix_ms() {
        // Already expired: nothing is created; a replaced key is simply gone.
        if deleted {
            ctx.changed(1);
            ctx.propagate_as(&[&b"DEL"[..], key]);
        }
        return Frame::ok();
    }
    let mut e = crate::value::Entry::new(value);
    let at = if unix != 0 { unix.saturating_sub(ctx.srv.clock.wall_offset_ms()).max(1) as u64 } else { 0 };
    let now_s = (ctx.now / 1000) as u32;
    e.set_atime(now_s);
    if lfu_policy(ctx) {
        if let Some(f) = freq {
            e.set_lfu(f as u8);
        }
    } else if let Some(i) = idle {
        e.set_atime(now_s.wrapping_sub(i.min(i64::from(u32::MAX)) as u32));
    }
    ctx.db().insert_entry(key, e, at);
    ctx.changed(1);
    // A relative TTL replays as the same absolute one.
    if unix != 0 && !absttl && ctx.propagating() {
        let mut args: Vec<Bytes> = ctx.args.to_vec();
        args[2] = Bytes::from(unix.to_string());
        args.push(Bytes::from_static(b"ABSTTL"));
        ctx.propagate_as(&args);
    }
    Frame::ok()
}

fn object_encoding(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(2);
    match ctx.db().read_notouch(key) {
        Some(e) => Frame::bulk(e.encoding()),
        None => Frame::Null,
    }
}

fn object_refcount(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(2);
    // Redis shares the integers 0..9999 (refcount INT_MAX) unless an LRU/LFU maxmemory policy with a
    // memory limit requires per-object access metadata.
    let can_share = ctx.srv.config.maxmemory.load(std::sync::atomic::Ordering::Relaxed) == 0
        || !ctx.srv.config.policy().tracks_access();
    match ctx.db().read_notouch(key) {
        Some(e) => match e.value {
            crate::value::Value::Int(i) if can_share && (0..10_000).contains(&i) => Frame::Integer(i32::MAX as i64),
            _ => Frame::Integer(1),
        },
        None => Frame::Null,
    }
}

fn object_idletime(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(2);
    let lfu = lfu_policy(ctx);
    let now_s = (ctx.now / 1000) as u32;
    let Some(idle) = ctx.db().read_notouch(key).map(|e| e.idle_s(now_s)) else {
        return Frame::Null;
    };
    if lfu {
        return Frame::error(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        );
    }
    Frame::Integer(i64::from(idle))
}

fn object_freq(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(2);
    let lfu = lfu_policy(ctx);
    let now_s = (ctx.now / 1000) as u32;
    let decay = ctx.srv.config.lfu_decay_time.load(std::sync::atomic::Ordering::Relaxed).clamp(0, u32::MAX as i64);
    let Some(counter) = ctx.db().read_notouch(key).map(|e| crate::types::lfu_decayed(e, now_s, decay as u32)) else {
        return Frame::Null;
    };
    if !lfu {
        return Frame::error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        );
    }
    Frame::Integer(i64::from(counter))
}

fn object_help(ctx: &mut Ctx<'_, '_>) -> Frame {
    const HELP: &[&str] = &[
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
    ];
    help_reply(ctx.arg(0), HELP)
}

/// Redis's `addReplyHelp`: a header naming the command, the lines, and the HELP footer.
pub fn help_reply(cmd: &[u8], lines: &[&str]) -> Frame {
    let name = String::from_utf8_lossy(cmd).to_ascii_uppercase();
    let mut v = Vec::with_capacity(lines.len() + 3);
    v.push(Frame::simple(&format!("{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")));
    v.extend(lines.iter().map(|l| Frame::simple(l)));
    v.push(Frame::simple("HELP"));
    v.push(Frame::simple("    Prints this help."));
    Frame::Array(v)
}

#[cfg(test)]
mod tests {

    /// RESTORE under `sanitize-dump-payload no` of a stream node that fails the deep check (Redis
    /// 7.0.15's corrupt-dump "stream bad lp_count - unsanitized"): kept as Redis keeps it, the
    /// report logged once, its commands refused, the key otherwise usable; with `yes` refused.
    #[test]
    fn restore_unsanitized_keeps_a_damaged_value_unread() {
        use crate::host::LogLevel;
        let (ts, host) = crate::testkit::TestServer::with_host();
        let mut c = ts.client();
        let body = b"\x0f\x01\x10\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00\x00\x00\x00\x00\x00\x00\x00\x40\x42\x42\x00\x00\x00\x18\x00\x03\x01\x00\x01\x02\x01\x84\x69\x74\x65\x6d\x05\x85\x76\x61\x6c\x75\x65\x06\x00\x01\x02\x01\x00\x01\x00\x01\x01\x01\x00\x01\x56\x01\x02\x01\x22\x01\x00\x01\x01\x01\x82\x5f\x31\x03\x05\x01\x02\x01\x2c\x01\x00\x01\x01\x01\x02\x01\x05\x01\xff\x03\x81\x00\x00\x01\x73\xde\xdf\x7d\xc7\x00\x01\x07\x6d\x79\x67\x72\x6f\x75\x70\x81\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00\x01\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00\x00\x00\x00\x00\x00\x00\x00\xf9\x7d\xdf\xde\x73\x01\x00\x00\x01\x01\x05\x41\x6c\x69\x63\x65\xeb\x7d\xdf\xde\x73\x01\x00\x00\x01\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00\x00\x00\x00\x00\x00\x00\x00";
        let mut payload = body.to_vec();
        payload.extend_from_slice(&crate::rdb::RDB_VERSION.to_le_bytes());
        let crc = crate::rdb::crc64(&payload);
        payload.extend_from_slice(&crc.to_le_bytes());
        let show = |f: Option<resp::Frame>| crate::testkit::show(&f.expect("a reply"));
        c.run("CONFIG SET sanitize-dump-payload yes");
        let restore = |c: &mut crate::testkit::TestClient| show(c.cmd(&[&b"RESTORE"[..], b"s", b"0", &payload]));
        assert_eq!(restore(&mut c), "-ERR Bad data format");
        c.run("CONFIG SET sanitize-dump-payload no");
        assert_eq!(restore(&mut c), "+OK");
        let asserts = || {
            host.logged.lock().iter().filter(|(l, m)| *l == LogLevel::Warning && m.contains("ASSERTION FAILED")).count()
        };
        assert_eq!(asserts(), 1);
        assert_eq!(c.run("TYPE s"), "+stream");
        assert!(c.run("XREVRANGE s + -").starts_with("-ERR Corrupt stream value"));
        assert!(c.run("XADD s * a b").starts_with("-ERR Corrupt stream value"));
        assert_eq!(c.run("LLEN s"), "-WRONGTYPE Operation against a key holding the wrong kind of value");
        assert_eq!(asserts(), 1, "reported once, where it was found");
        let dumped = c.cmd(&[&b"DUMP"[..], b"s"]);
        assert_eq!(dumped, Some(resp::Frame::Bulk(bytes::Bytes::from(payload.clone()))));
        assert_eq!(c.run("RENAME s t"), "+OK");
        assert_eq!(c.run("DEL t"), ":1");
        // `clients`: a client that is not the primary's link gets the deep check.
        c.run("CONFIG SET sanitize-dump-payload clients");
        assert_eq!(restore(&mut c), "-ERR Bad data format");
    }

    #[test]
    fn dump_follows_rdbcompression() {
        let ts = crate::testkit::TestServer::new();
        let mut c = ts.client();
        c.run(&format!("SET k {}", "x".repeat(1000)));
        let len = |c: &mut crate::testkit::TestClient| match c.cmd(&[&b"DUMP"[..], b"k"]) {
            Some(resp::Frame::Bulk(b)) => b.len(),
            other => panic!("{other:?}"),
        };
        let compressed = len(&mut c);
        assert_eq!(c.run("CONFIG SET rdbcompression no"), "+OK");
        let plain = len(&mut c);
        assert!(compressed < 100 && plain > 1000, "{compressed} {plain}");
        assert_eq!(c.run("CONFIG SET rdbcompression yes"), "+OK");
        assert_eq!(len(&mut c), compressed);
    }

    #[test]
    fn unlink_frees_a_large_value_in_the_background_and_del_in_place() {
        let (ts, host) = crate::testkit::TestServer::with_host();
        let mut c = ts.client();
        let info = |c: &mut crate::testkit::TestClient, f: &str| {
            let text = c.run("INFO memory");
            text.split("\\r\\n").find_map(|l| l.strip_prefix(&format!("{f}:")).map(str::to_string)).unwrap()
        };
        let many: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        c.run(&format!("RPUSH big {}", many.join(" ")));
        c.run(&format!("RPUSH big2 {}", many.join(" ")));
        c.run("RPUSH small a b c");
        assert_eq!(c.run("UNLINK big small"), ":2");
        // The test host runs background jobs between commands.
        crate::host::Host::run_queued(&*host);
        assert_eq!(info(&mut c, "lazyfree_pending_objects"), "0");
        assert_eq!(info(&mut c, "lazyfreed_objects"), "1");
        assert_eq!(c.run("DEL big2"), ":1");
        crate::host::Host::run_queued(&*host);
        assert_eq!(info(&mut c, "lazyfreed_objects"), "1", "DEL frees in place by default");
        c.run(&format!("RPUSH big3 {}", many.join(" ")));
        assert_eq!(c.run("CONFIG SET lazyfree-lazy-user-del yes"), "+OK");
        assert_eq!(c.run("DEL big3"), ":1");
        crate::host::Host::run_queued(&*host);
        assert_eq!(info(&mut c, "lazyfreed_objects"), "2", "DEL frees as UNLINK once configured so");
        c.run(&format!("RPUSH big4 {}", many.join(" ")));
        assert_eq!(c.run("CONFIG SET lazyfree-lazy-user-del no"), "+OK");
        assert_eq!(c.run("DEL big4"), ":1");
        crate::host::Host::run_queued(&*host);
        assert_eq!(info(&mut c, "lazyfreed_objects"), "2");
    }
    use super::parse_scan_cursor;
    use crate::testkit::{TestClient, TestServer, show};
    use crate::types::zset::ZSet;
    use crate::value::{Entry, HashValue, ListValue, SetValue, SmallBytes, Value};
    use resp::Frame;

    fn sb(s: &str) -> SmallBytes {
        SmallBytes::from_slice(s.as_bytes())
    }
    fn list(items: &[&str]) -> Value {
        Value::List(Box::new(items.iter().map(|s| sb(s)).collect::<ListValue>()))
    }
    fn hash(items: &[(&str, &str)]) -> Value {
        Value::Hash(items.iter().map(|(k, v)| (sb(k), sb(v))).collect::<HashValue>())
    }
    fn set(items: &[&str]) -> Value {
        Value::Set(items.iter().map(|s| sb(s)).collect::<SetValue>())
    }
    /// Stores a value directly (the aggregate families are written elsewhere).
    /// The value is made whole, as a load makes one: its encoding from what it holds.
    fn put(ts: &TestServer, db: usize, key: &str, mut v: Value) {
        v.settle(&crate::value::EncodingLimits::default());
        let mut l = ts.srv.ks.lock_all();
        l.shard_for(key.as_bytes()).dbs[db].insert(key.as_bytes(), Entry::new(v), 0);
    }
    /// Reads a stored value directly.
    fn get(ts: &TestServer, db: usize, key: &str) -> Option<Value> {
        let mut l = ts.srv.ks.lock_all();
        l.shard_for(key.as_bytes()).dbs[db].peek(key.as_bytes()).map(|e| e.value.clone())
    }
    /// Runs a command replying with an array of bulks; returns them sorted.
    fn sorted(c: &mut TestClient, line: &str) -> Vec<String> {
        let args = resp::split_args(line.as_bytes()).expect("balanced");
        let Some(Frame::Array(v)) = c.cmd(&args) else { panic!("{line}: not an array") };
        let mut v: Vec<String> = v.iter().map(show).collect();
        v.sort();
        v
    }
    /// One SCAN call: (next cursor, keys).
    fn scan_once(c: &mut TestClient, cursor: &str, opts: &[&str]) -> (String, Vec<String>) {
        let mut args = vec!["SCAN", cursor];
        args.extend_from_slice(opts);
        match c.cmd(&args) {
            Some(Frame::Array(v)) => match &v[..] {
                [Frame::Bulk(cur), Frame::Array(keys)] => (
                    String::from_utf8(cur.to_vec()).expect("ascii cursor"),
                    keys.iter()
                        .map(|k| match k {
                            Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                            other => panic!("key not bulk: {other:?}"),
                        })
                        .collect(),
                ),
                other => panic!("bad SCAN reply {other:?}"),
            },
            other => panic!("bad SCAN reply {other:?}"),
        }
    }
    /// A whole SCAN iteration: (keys in order returned, number of calls).
    fn scan_all(c: &mut TestClient, opts: &[&str]) -> (Vec<String>, usize) {
        let (mut cur, mut all, mut calls) = ("0".to_string(), Vec::new(), 0);
        loop {
            let (next, keys) = scan_once(c, &cur, opts);
            calls += 1;
            all.extend(keys);
            if next == "0" {
                return (all, calls);
            }
            cur = next;
        }
    }
    fn populate(c: &mut TestClient, n: usize) {
        for i in 0..n {
            c.cmd(&["SET", &format!("key:{i}"), &i.to_string()]);
        }
    }

    #[test]
    fn del_and_exists_skip_expired_keys() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > SET foo bar
            +OK
            > PEXPIRE foo 100
            :1
            "#,
        );
        ts.clock.advance_ms(101);
        ts.transcript(
            r#"
            > EXISTS foo
            :0
            > DEL foo
            :0
            "#,
        );
    }

    #[test]
    fn type_of_every_kind() {
        let ts = TestServer::new();
        put(&ts, 0, "l", list(&["a"]));
        put(&ts, 0, "h", hash(&[("f", "v")]));
        put(&ts, 0, "s", set(&["m"]));
        put(&ts, 0, "z", Value::ZSet(ZSet::default()));
        ts.transcript(
            r#"
            > SET str hello
            +OK
            > SET int 12
            +OK
            > TYPE str
            +string
            > TYPE int
            +string
            > TYPE l
            +list
            > TYPE h
            +hash
            > TYPE s
            +set
            > TYPE z
            +zset
            > TYPE nokey
            +none
            > TYPE
            -ERR wrong number of arguments for 'type' command
            > TYPE a b
            -ERR wrong number of arguments for 'type' command
            "#,
        );
    }

    #[test]
    fn keys_patterns() {
        let ts = TestServer::new();
        let mut c = ts.client();
        for k in ["key_x", "key_y", "key_z", "foo_a", "foo_b", "foo_c"] {
            c.run(&format!("SET {k} hello"));
        }
        assert_eq!(sorted(&mut c, "KEYS foo*"), ["\"foo_a\"", "\"foo_b\"", "\"foo_c\""]);
        assert_eq!(
            sorted(&mut c, "KEYS *"),
            ["\"foo_a\"", "\"foo_b\"", "\"foo_c\"", "\"key_x\"", "\"key_y\"", "\"key_z\""]
        );
        assert_eq!(sorted(&mut c, "KEYS key_[xy]"), ["\"key_x\"", "\"key_y\""]);
        assert_eq!(sorted(&mut c, "KEYS ?oo_?"), ["\"foo_a\"", "\"foo_b\"", "\"foo_c\""]);
        assert_eq!(sorted(&mut c, "KEYS nomatch*"), Vec::<String>::new());
        c.transcript(
            r#"
            > DBSIZE
            :6
            > KEYS foo_[^ab]
            ["foo_c"]
            > KEYS "*\\*"
            []
            > KEYS
            -ERR wrong number of arguments for 'keys' command
            "#,
        );
        // A key with a long name, twice (Redis issue #1208); nested-star pattern (no blow-up).
        c.run("FLUSHDB");
        c.run("SET dlskeriewrioeuwqoirueioqwrueoqwrueqw test");
        assert_eq!(c.run("KEYS *"), "[\"dlskeriewrioeuwqoirueioqwrueoqwrueqw\"]");
        assert_eq!(c.run("KEYS *"), "[\"dlskeriewrioeuwqoirueioqwrueoqwrueqw\"]");
        c.run(&format!("SET {} 1", "a".repeat(50_000)));
        assert_eq!(c.run("KEYS a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"), "[]");
    }

    #[test]
    fn keys_skips_and_reclaims_expired() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("SET a c");
        c.run("PEXPIRE a 5");
        for k in ["t", "e", "s", "foo"] {
            c.run(&format!("SET {k} c"));
        }
        assert_eq!(sorted(&mut c, "KEYS *"), ["\"a\"", "\"e\"", "\"foo\"", "\"s\"", "\"t\""]);
        ts.clock.advance_ms(6);
        assert_eq!(c.run("DBSIZE"), ":5", "stale key still stored");
        assert_eq!(sorted(&mut c, "KEYS *"), ["\"e\"", "\"foo\"", "\"s\"", "\"t\""]);
        assert_eq!(c.run("DBSIZE"), ":4", "KEYS reclaimed the stale key");
    }

    #[test]
    fn keys_star_is_linear() {
        let ts = TestServer::new();
        let mut c = ts.client();
        populate(&mut c, 20_000);
        let t = std::time::Instant::now();
        assert_eq!(sorted(&mut c, "KEYS *").len(), 20_000);
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn scan_cursor_parsing() {
        assert_eq!(parse_scan_cursor(b"0"), Some(0));
        assert_eq!(parse_scan_cursor(b""), Some(0));
        assert_eq!(parse_scan_cursor(b"+7"), Some(7));
        assert_eq!(parse_scan_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_scan_cursor(b"007"), Some(7));
        assert_eq!(parse_scan_cursor(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b"18446744073709551616"[..], b" 1", b"1 ", b"-", b"+", b"abc", b"0x10", b"1.5"] {
            assert_eq!(parse_scan_cursor(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn scan_full_iterations() {
        let ts = TestServer::new();
        let mut c = ts.client();
        populate(&mut c, 1000);
        for opts in [&[][..], &["COUNT", "5"], &["COUNT", "1"], &["count", "100000"]] {
            let (keys, calls) = scan_all(&mut c, opts);
            let uniq: std::collections::HashSet<_> = keys.iter().collect();
            assert_eq!(uniq.len(), 1000, "{opts:?}");
            assert_eq!(keys.len(), 1000, "no duplicates without concurrent writes {opts:?}");
            let count: usize = opts.get(1).map_or(10, |n| n.parse().expect("number"));
            // COUNT entries are visited per call: about 1000 / COUNT calls.
            assert!(calls <= 1000 / count + 2, "{opts:?}: {calls} calls");
        }
        let (one_call, calls) = scan_all(&mut c, &["COUNT", "1000"]);
        assert_eq!((one_call.len(), calls), (1000, 1));

        let (matched, _) = scan_all(&mut c, &["MATCH", "key:1??"]);
        let uniq: std::collections::HashSet<_> = matched.iter().collect();
        assert_eq!(uniq.len(), 100);
        assert!(matched.iter().all(|k| k.len() == 7 && k.starts_with("key:1")));
    }

    #[test]
    fn scan_type_filter() {
        let ts = TestServer::new();
        let mut c = ts.client();
        populate(&mut c, 1000);
        for i in 0..10 {
            put(&ts, 0, &format!("list:{i}"), list(&["x"]));
            put(&ts, 0, &format!("hash:{i}"), hash(&[("f", "v")]));
        }
        for (ty, n, prefix) in [("list", 10, "list:"), ("HASH", 10, "hash:"), ("string", 1000, "key:")] {
            let (keys, _) = scan_all(&mut c, &["TYPE", ty]);
            assert_eq!(keys.len(), n, "{ty}");
            assert!(keys.iter().all(|k| k.starts_with(prefix)), "{ty}");
        }
        let (keys, _) = scan_all(&mut c, &["TYPE", "stream"]);
        assert!(keys.is_empty());
        let (keys, _) = scan_all(&mut c, &["TYPE", "list", "MATCH", "*:1"]);
        assert_eq!(keys, ["list:1"]);
    }

    #[test]
    fn scan_skips_and_reclaims_expired() {
        let ts = TestServer::new();
        let mut c = ts.client();
        populate(&mut c, 100);
        for i in 0..50 {
            c.run(&format!("PEXPIRE key:{i} 10"));
        }
        ts.clock.advance_ms(11);
        let (keys, _) = scan_all(&mut c, &["COUNT", "7"]);
        let uniq: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(uniq.len(), 50);
        assert!(keys.iter().all(|k| k["key:".len()..].parse::<usize>().expect("num") >= 50));
        assert_eq!(c.run("DBSIZE"), ":50");
    }

    /// Redis's guarantee: keys present for the whole iteration are returned, while other keys are
    /// added and removed between calls.
    #[test]
    fn scan_guarantee_under_write_load() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(42);
        for count in ["1", "3", "10", "50"] {
            let ts = TestServer::new();
            let mut c = ts.client();
            populate(&mut c, 100);
            let mut seen = std::collections::HashSet::new();
            let mut cur = "0".to_string();
            loop {
                let (next, keys) = scan_once(&mut c, &cur, &["COUNT", count]);
                seen.extend(keys);
                if next == "0" {
                    break;
                }
                cur = next;
                for _ in 0..10 {
                    c.run(&format!("SET addedkey:{} foo", rng.random_range(0..1000)));
                    c.run(&format!("DEL addedkey:{}", rng.random_range(0..1000)));
                }
            }
            for i in 0..100 {
                assert!(seen.contains(&format!("key:{i}")), "COUNT {count}: missed key:{i}");
            }
        }
    }

    #[test]
    fn scan_is_per_database_and_survives_huge_cursors() {
        let ts = TestServer::new();
        let mut c = ts.client();
        populate(&mut c, 30);
        c.run("SELECT 1");
        c.run("SET other 1");
        assert_eq!(scan_all(&mut c, &[]).0, ["other"]);
        // Any cursor is accepted; a stale or garbage one never fails.
        for cur in ["-1", "18446744073709551615", "12345678901"] {
            let (next, _) = scan_once(&mut c, cur, &[]);
            assert!(next.parse::<u64>().is_ok());
        }
    }

    #[test]
    fn scan_with_one_or_many_shards() {
        for shards in ["1", "64"] {
            let config = crate::config::Config::new();
            config.set("shards", shards, true).expect("valid");
            let ts = TestServer::with_config(config);
            let mut c = ts.client();
            assert_eq!(scan_all(&mut c, &[]), (vec![], 1));
            populate(&mut c, 300);
            for count in ["1", "7", "1000"] {
                let (keys, _) = scan_all(&mut c, &["COUNT", count]);
                let uniq: std::collections::HashSet<_> = keys.iter().collect();
                assert_eq!((keys.len(), uniq.len()), (300, 300), "shards {shards} COUNT {count}");
            }
        }
    }

    #[test]
    fn keyspace_hits_and_misses() {
        let ts = TestServer::new();
        let stats = || {
            let (mut h, mut m) = (0, 0);
            ts.srv.ks.for_each_shard(|s| {
                h += s.hits;
                m += s.misses;
            });
            (h, m)
        };
        let mut c = ts.client();
        c.run("SET a 1");
        let base = stats();
        // EXISTS, TYPE, TTL, OBJECT and TOUCH count as reads; DEL, EXPIRE, RENAME do not.
        for cmd in ["EXISTS a nokey", "TYPE a", "TTL nokey", "OBJECT ENCODING a", "TOUCH a nokey"] {
            c.run(cmd);
        }
        assert_eq!(stats(), (base.0 + 4, base.1 + 3));
        for cmd in ["EXPIRE a 100", "PERSIST a", "RENAME a b", "DEL b nokey"] {
            c.run(cmd);
        }
        assert_eq!(stats(), (base.0 + 4, base.1 + 3));
    }

    #[test]
    fn randomkey() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > RANDOMKEY
            (nil)
            > SET foo x
            +OK
            > RANDOMKEY
            "foo"
            > RANDOMKEY extra
            -ERR wrong number of arguments for 'randomkey' command
            "#,
        );
        c.run("SET bar y");
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            seen.insert(c.run("RANDOMKEY"));
        }
        assert_eq!(seen.len(), 2, "{seen:?}");
        // Only expired keys left: they are reclaimed and nothing is returned.
        c.run("PEXPIRE foo 1");
        c.run("PEXPIRE bar 1");
        ts.clock.advance_ms(2);
        assert_eq!(c.run("DBSIZE"), ":2");
        assert_eq!(c.run("RANDOMKEY"), "(nil)");
        assert_eq!(c.run("DBSIZE"), ":0");
        // Mixed: the live key is always found.
        populate(&mut c, 50);
        for i in 0..49 {
            c.run(&format!("PEXPIRE key:{i} 1"));
        }
        ts.clock.advance_ms(2);
        assert_eq!(c.run("RANDOMKEY"), "\"key:49\"");
    }

    #[test]
    fn rename_moves_ttl_and_drops_targets() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > SET mykey foo
            +OK
            > EXPIRE mykey 100
            :1
            > TTL mykey
            :100
            > RENAME mykey mykey2
            +OK
            > TTL mykey2
            :100
            > SET mykey foo
            +OK
            > SET mykey2 foo
            +OK
            > EXPIRE mykey2 100
            :1
            > RENAME mykey mykey2
            +OK
            > TTL mykey2
            :-1
            > SET src v
            +OK
            > PEXPIRE src 50
            :1
            > RENAMENX src dst
            :1
            > PTTL dst
            :50
            "#,
        );
        // The moved TTL is indexed: the key expires on time.
        ts.clock.advance_ms(51);
        ts.transcript(
            r#"
            > EXISTS dst
            :0
            > DBSIZE
            :1
            "#,
        );
    }

    #[test]
    fn rename_keeps_aggregates() {
        let ts = TestServer::new();
        put(&ts, 0, "l", list(&["a", "b"]));
        ts.transcript(
            r#"
            > RENAME l l2
            +OK
            > TYPE l2
            +list
            > TYPE l
            +none
            "#,
        );
    }

    #[test]
    fn copy_deep_copies_aggregates() {
        let ts = TestServer::new();
        put(&ts, 0, "l", list(&["a", "b", "c"]));
        put(&ts, 0, "h", hash(&[("f1", "v1"), ("f2", "v2")]));
        put(&ts, 0, "s", set(&["1", "2", "x"]));
        put(&ts, 0, "z", Value::ZSet(ZSet::default()));
        ts.transcript(
            r#"
            > COPY l l2
            :1
            > COPY h h2 DB 1
            :1
            > COPY s s2
            :1
            > COPY z z2
            :1
            > TYPE l2
            +list
            > TYPE z2
            +zset
            > SELECT 1
            +OK
            > TYPE h2
            +hash
            "#,
        );
        // Mutating a copy leaves the source alone.
        {
            let mut l = ts.srv.ks.lock_all();
            let e = l.shard_for(b"l2").dbs[0].lookup(b"l2", 0).expect("copied");
            let Value::List(v) = &mut e.value else { panic!("list") };
            v.push_back(sb("d"));
            let e = l.shard_for(b"h2").dbs[1].lookup(b"h2", 0).expect("copied");
            let Value::Hash(h) = &mut e.value else { panic!("hash") };
            h.insert(b"f3", b"v3");
            let e = l.shard_for(b"s2").dbs[0].lookup(b"s2", 0).expect("copied");
            let Value::Set(s) = &mut e.value else { panic!("set") };
            s.swap_remove(b"x");
        }
        let Some(Value::List(l)) = get(&ts, 0, "l") else { panic!() };
        assert_eq!(l.len(), 3);
        let Some(Value::List(l2)) = get(&ts, 0, "l2") else { panic!() };
        assert_eq!(l2.len(), 4);
        let Some(Value::Hash(h)) = get(&ts, 0, "h") else { panic!() };
        assert_eq!(h.len(), 2);
        let Some(Value::Hash(h2)) = get(&ts, 1, "h2") else { panic!() };
        assert_eq!(h2.len(), 3);
        let Some(Value::Set(s)) = get(&ts, 0, "s") else { panic!() };
        assert_eq!(s.len(), 3);
        let Some(Value::Set(s2)) = get(&ts, 0, "s2") else { panic!() };
        assert_eq!(s2.len(), 2);
    }

    #[test]
    fn move_cmd() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > SET mykey foobar
            +OK
            > MOVE mykey 9
            :1
            > EXISTS mykey
            :0
            > SELECT 9
            +OK
            > DBSIZE
            :1
            > GET mykey
            "foobar"
            > SET mykey hello
            +OK
            > SELECT 0
            +OK
            > SET mykey foo
            +OK
            > MOVE mykey 9
            :0
            > GET mykey
            "foo"
            > MOVE mykey notanumber
            -ERR value is not an integer or out of range
            > MOVE mykey 4294967296
            -ERR value is out of range, value must between -2147483648 and 2147483647
            > MOVE mykey -2147483649
            -ERR value is out of range, value must between -2147483648 and 2147483647
            > MOVE mykey 0
            -ERR source and destination objects are the same
            > MOVE nokey 0
            -ERR source and destination objects are the same
            > MOVE mykey 16
            -ERR DB index is out of range
            > MOVE mykey -1
            -ERR DB index is out of range
            > MOVE nokey 1
            :0
            > MOVE a
            -ERR wrong number of arguments for 'move' command
            > SET ttlkey v
            +OK
            > EXPIRE ttlkey 100
            :1
            > MOVE ttlkey 1
            :1
            > SET plain v
            +OK
            > MOVE plain 1
            :1
            > SELECT 1
            +OK
            > TTL ttlkey
            :100
            > TTL plain
            :-1
            "#,
        );
        put(&ts, 0, "l", list(&["a"]));
        ts.transcript(
            r#"
            > MOVE l 2
            :1
            > SELECT 2
            +OK
            > TYPE l
            +list
            "#,
        );
    }

    #[test]
    fn touch_and_idletime() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > SET a 1
            +OK
            > SET b 2
            +OK
            > TOUCH a b c a
            :3
            > TOUCH
            -ERR wrong number of arguments for 'touch' command
            > OBJECT IDLETIME a
            :0
            "#,
        );
        ts.clock.advance_ms(5_000);
        // EXISTS, TYPE, TTL and OBJECT do not refresh the access time; TOUCH does.
        ts.transcript(
            r#"
            > EXISTS a
            :1
            > TYPE a
            +string
            > TTL a
            :-1
            > OBJECT IDLETIME a
            :5
            > TOUCH a
            :1
            > OBJECT IDLETIME a
            :0
            > OBJECT IDLETIME b
            :5
            > OBJECT IDLETIME nokey
            (nil)
            "#,
        );
    }

    #[test]
    fn swapdb() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > SET a db0
            +OK
            > SET b db0
            +OK
            > PEXPIRE b 1000
            :1
            > SELECT 1
            +OK
            > SET a db1
            +OK
            > SWAPDB 0 1
            +OK
            > GET a
            "db0"
            > PTTL b
            :1000
            > DBSIZE
            :2
            > SELECT 0
            +OK
            > GET a
            "db1"
            > DBSIZE
            :1
            > SWAPDB 0 0
            +OK
            > GET a
            "db1"
            > SWAPDB a b
            -ERR invalid first DB index
            > SWAPDB 0 b
            -ERR invalid second DB index
            > SWAPDB a 99
            -ERR invalid first DB index
            > SWAPDB 0 99999999999
            -ERR invalid second DB index
            > SWAPDB 0 16
            -ERR DB index is out of range
            > SWAPDB -1 0
            -ERR DB index is out of range
            > SWAPDB 0
            -ERR wrong number of arguments for 'swapdb' command
            "#,
        );
        // The TTL index travelled with the table.
        ts.clock.advance_ms(1001);
        ts.transcript(
            r#"
            > SELECT 1
            +OK
            > EXISTS b
            :0
            "#,
        );
    }

    #[test]
    fn object_encoding_and_refcount() {
        let ts = TestServer::new();
        put(&ts, 0, "l", list(&["a"]));
        put(&ts, 0, "h", hash(&[("f", "v")]));
        put(&ts, 0, "s", set(&["1", "2"]));
        put(&ts, 0, "s2", set(&["a"]));
        ts.transcript(
            r#"
            > SET int 123
            +OK
            > SET big 10000
            +OK
            > SET neg -1
            +OK
            > SET zero 0
            +OK
            > SET str hello
            +OK
            > SET long 123456789012345678901234567890123456789012345
            +OK
            > OBJECT ENCODING int
            "int"
            > OBJECT ENCODING str
            "embstr"
            > OBJECT ENCODING long
            "raw"
            > OBJECT ENCODING l
            "quicklist"
            > OBJECT ENCODING h
            "listpack"
            > OBJECT ENCODING s
            "intset"
            > OBJECT ENCODING s2
            "hashtable"
            > OBJECT ENCODING nokey
            (nil)
            > object encoding int
            "int"
            > OBJECT REFCOUNT int
            :2147483647
            > OBJECT REFCOUNT zero
            :2147483647
            > OBJECT REFCOUNT big
            :1
            > OBJECT REFCOUNT neg
            :1
            > OBJECT REFCOUNT str
            :1
            > OBJECT REFCOUNT l
            :1
            > OBJECT REFCOUNT nokey
            (nil)
            > OBJECT ENCODING
            -ERR wrong number of arguments for 'object|encoding' command
            > OBJECT ENCODING a b
            -ERR wrong number of arguments for 'object|encoding' command
            > OBJECT REFCOUNT
            -ERR wrong number of arguments for 'object|refcount' command
            > OBJECT IDLETIME
            -ERR wrong number of arguments for 'object|idletime' command
            > OBJECT FREQ
            -ERR wrong number of arguments for 'object|freq' command
            > OBJECT foo bar
            -ERR unknown subcommand 'foo'. Try OBJECT HELP.
            > OBJECT
            -ERR wrong number of arguments for 'object' command
            > OBJECT FREQ int
            -ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.
            > OBJECT FREQ nokey
            (nil)
            "#,
        );
        // With a memory limit and an LRU policy, integers are not shared.
        ts.srv.config.set("maxmemory", "1gb", false).expect("valid");
        ts.srv.config.set("maxmemory-policy", "allkeys-lru", false).expect("valid");
        ts.transcript(
            r#"
            > OBJECT REFCOUNT int
            :1
            "#,
        );
    }

    #[test]
    fn object_freq_under_lfu() {
        let ts = TestServer::new();
        ts.srv.config.set("maxmemory-policy", "allkeys-lfu", false).expect("valid");
        ts.transcript(
            r#"
            > SET foo bar
            +OK
            > OBJECT IDLETIME foo
            -ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.
            > OBJECT IDLETIME nokey
            (nil)
            > OBJECT FREQ nokey
            (nil)
            "#,
        );
        let mut c = ts.client();
        let f0: i64 = c.run("OBJECT FREQ foo")[1..].parse().expect("integer");
        assert!((5..=6).contains(&f0), "new keys start at LFU_INIT_VAL: {f0}");
        // OBJECT FREQ does not count as an access; the counter decays by one per idle minute.
        ts.clock.advance_ms(3 * 60_000);
        assert_eq!(c.run("OBJECT FREQ foo"), format!(":{}", f0 - 3));
        ts.clock.advance_ms(60 * 60_000);
        assert_eq!(c.run("OBJECT FREQ foo"), ":0");
        ts.srv.config.set("maxmemory-policy", "noeviction", false).expect("valid");
    }

    #[test]
    fn multi_key_commands_across_shards() {
        // Many key pairs so that both same-shard and cross-shard pairs occur (4 shards).
        let ts = TestServer::new();
        let mut c = ts.client();
        for i in 0..64 {
            assert_eq!(c.run(&format!("SET src{i} v{i}")), "+OK");
            assert_eq!(c.run(&format!("COPY src{i} cp{i}")), ":1");
            assert_eq!(c.run(&format!("RENAME src{i} dst{i}")), "+OK");
            assert_eq!(c.run(&format!("RENAMENX dst{i} nx{i}")), ":1");
            assert_eq!(c.run(&format!("MOVE nx{i} 3")), ":1");
            assert_eq!(c.run(&format!("DEL cp{i} nx{i} src{i}")), ":1");
        }
        assert_eq!(c.run("DBSIZE"), ":0");
        c.run("SELECT 3");
        assert_eq!(c.run("DBSIZE"), ":64");
    }
}
