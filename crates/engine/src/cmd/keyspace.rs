//! The keyspace (generic) family: DEL, UNLINK, EXISTS, TYPE, KEYS, SCAN, RANDOMKEY, RENAME, RENAMENX,
//! COPY, MOVE, TOUCH, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, OBJECT. The TTL commands live in
//! [`super::expire`].
//!
//! ## SCAN cursors
//! A cursor encodes `(upper << shard_bits) | shard`: the shard being walked and the position bound
//! [`crate::keyspace::Table::scan`] continues from (0 = start that shard from the top). Shards are
//! walked in ascending order, so cursor 0 starts at shard 0 and the reply cursor is 0 once the last
//! shard is done. Every key present for the whole iteration is returned at least once.

use super::{f, BASE};
use crate::args::eq_ic;
use crate::command::{Command, Ctx, Flags, Keys};
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
    Command {
        name: "object|encoding",
        arity: 3,
        flags: f::R,
        keys: SUB_KEY,
        since: "2.2.3",
        summary: "Inspect the internal encoding of a Redis object",
        syntax: "key",
        handler: object_encoding,
        ..BASE
    },
    Command {
        name: "object|freq",
        arity: 3,
        flags: f::R,
        keys: SUB_KEY,
        since: "4.0.0",
        summary: "Get the logarithmic access frequency counter of a Redis object",
        syntax: "key",
        handler: object_freq,
        ..BASE
    },
    Command {
        name: "object|idletime",
        arity: 3,
        flags: f::R,
        keys: SUB_KEY,
        since: "2.2.3",
        summary: "Get the time since a Redis object was last accessed",
        syntax: "key",
        handler: object_idletime,
        ..BASE
    },
    Command {
        name: "object|refcount",
        arity: 3,
        flags: f::R,
        keys: SUB_KEY,
        since: "2.2.3",
        summary: "Get the number of references to the value of the key",
        syntax: "key",
        handler: object_refcount,
        ..BASE
    },
    Command {
        name: "object|help",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE),
        since: "6.2.0",
        summary: "Show helpful text about the different subcommands",
        handler: object_help,
        ..BASE
    },
];

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "del",
        arity: -2,
        flags: f::W,
        keys: Keys::ALL,
        summary: "Delete a key",
        complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
        syntax: "key [key ...]",
        handler: del,
        ..BASE
    },
    Command {
        name: "unlink",
        arity: -2,
        flags: f::WF,
        keys: Keys::ALL,
        since: "4.0.0",
        summary: "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.",
        complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
        syntax: "key [key ...]",
        handler: del,
        ..BASE
    },
    Command {
        name: "exists",
        arity: -2,
        flags: f::RF,
        keys: Keys::ALL,
        summary: "Determine if a key exists",
        complexity: "O(N) where N is the number of keys to check.",
        syntax: "key [key ...]",
        handler: exists,
        ..BASE
    },
    Command {
        name: "type",
        arity: 2,
        flags: f::RF,
        keys: Keys::ONE,
        summary: "Determine the type stored at key",
        syntax: "key",
        handler: type_cmd,
        ..BASE
    },
    Command {
        name: "keys",
        arity: 2,
        flags: f::R.or(ALL),
        summary: "Find all keys matching the given pattern",
        complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
        syntax: "pattern",
        handler: keys,
        ..BASE
    },
    Command {
        name: "scan",
        arity: -2,
        flags: f::R.or(ALL),
        since: "2.8.0",
        summary: "Incrementally iterate the keys space",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        syntax: "cursor [MATCH pattern] [COUNT count] [TYPE type]",
        handler: scan,
        ..BASE
    },
    Command {
        name: "randomkey",
        arity: 1,
        flags: f::R.or(ALL),
        summary: "Return a random key from the keyspace",
        handler: randomkey,
        ..BASE
    },
    Command {
        name: "rename",
        arity: 3,
        flags: f::W,
        keys: TWO_KEYS,
        summary: "Rename a key",
        syntax: "key newkey",
        handler: rename,
        ..BASE
    },
    Command {
        name: "renamenx",
        arity: 3,
        flags: f::WF,
        keys: TWO_KEYS,
        summary: "Rename a key, only if the new key does not exist",
        syntax: "key newkey",
        handler: renamenx,
        ..BASE
    },
    Command {
        name: "copy",
        arity: -3,
        flags: f::WD,
        keys: TWO_KEYS,
        since: "6.2.0",
        summary: "Copy a key",
        complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
        syntax: "source destination [DB destination-db] [REPLACE]",
        handler: copy,
        ..BASE
    },
    Command {
        name: "move",
        arity: 3,
        flags: f::WF,
        keys: Keys::ONE,
        summary: "Move a key to another database",
        syntax: "key db",
        handler: move_cmd,
        ..BASE
    },
    Command {
        name: "touch",
        arity: -2,
        flags: f::RF,
        keys: Keys::ALL,
        since: "3.2.1",
        summary: "Alters the last access time of a key(s). Returns the number of existing keys specified.",
        complexity: "O(N) where N is the number of keys that will be touched.",
        syntax: "key [key ...]",
        handler: touch,
        ..BASE
    },
    Command {
        name: "dbsize",
        arity: 1,
        flags: f::RF.or(ALL),
        group: "server",
        summary: "Return the number of keys in the selected database",
        handler: dbsize,
        ..BASE
    },
    Command {
        name: "flushdb",
        arity: -1,
        flags: f::W.or(ALL),
        group: "server",
        summary: "Remove all keys from the current database",
        complexity: "O(N) where N is the number of keys in the selected database",
        syntax: "[ASYNC | SYNC]",
        handler: flushdb,
        ..BASE
    },
    Command {
        name: "flushall",
        arity: -1,
        flags: f::W.or(ALL),
        group: "server",
        summary: "Remove all keys from all databases",
        complexity: "O(N) where N is the total number of keys in all databases",
        syntax: "[ASYNC | SYNC]",
        handler: flushall,
        ..BASE
    },
    Command {
        name: "swapdb",
        arity: 3,
        flags: f::WF.or(ALL),
        group: "server",
        since: "4.0.0",
        summary: "Swaps two Redis databases",
        complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases.",
        syntax: "index1 index2",
        handler: swapdb,
        ..BASE
    },
    Command {
        name: "object",
        arity: -2,
        since: "2.2.3",
        summary: "A container for object introspection commands",
        complexity: "Depends on subcommand.",
        subcommands: OBJECT_SUBCOMMANDS,
        ..BASE
    },
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
    let n = crate::args::parse_i64_strict(ctx.arg(i))
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(error::not_integer)?;
    match usize::try_from(n) {
        Ok(n) if n < ctx.srv.ks.ndbs() => Ok(n),
        _ => Err(error::db_out_of_range()),
    }
}

fn bulk(k: &[u8]) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(k))
}

fn del(ctx: &mut Ctx<'_, '_>) -> Frame {
    let args = ctx.args;
    let mut db = ctx.db();
    let n = args[1..].iter().filter(|k| db.remove(k).is_some()).count();
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
    let mut out = Vec::new();
    for t in ctx.db().tables() {
        // One full downward walk per table: O(N), and it reclaims expired keys on the way.
        t.scan(None, usize::MAX, now, &mut |k, _| {
            if all || glob::matches(pat, k, false) {
                out.push(bulk(k));
            }
        });
    }
    Frame::Array(out)
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
        if budget == 0 {
            break shard as u64;
        }
    };
    Frame::Array(vec![Frame::Bulk(Bytes::from(next_cursor.to_string())), Frame::Array(found)])
}

fn randomkey(ctx: &mut Ctx<'_, '_>) -> Frame {
    let now = ctx.now;
    let mut db = ctx.db();
    // Each failed try reclaims one expired key, so this terminates.
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
        let Some(t) = db.tables().nth(ti) else { return Frame::Null };
        let Some(key) = t.get_index(pos).map(|(k, _)| k.clone()) else { return Frame::Null };
        if t.lookup(&key, now).is_some() {
            return bulk(&key);
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
    let Some(e) = db.remove(src) else { return error::no_such_key() };
    // The entry keeps its TTL; whatever `dst` held (and its TTL) is replaced.
    db.insert_entry(dst, e);
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
    let Some((value, expire_at)) = ctx.db().read(src).map(|e| (e.value.clone(), e.expire_at)) else {
        return Frame::Integer(0);
    };
    let mut tdb = ctx.db_at(target);
    if !replace && tdb.exists(dst) {
        return Frame::Integer(0);
    }
    // `Value: Clone` is a deep copy of every variant.
    tdb.set_with_expire(dst, value, expire_at);
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
    let Some(e) = ctx.db().remove(key) else { return Frame::Integer(0) };
    ctx.db_at(target).insert_entry(key, e);
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
    for t in ctx.db().tables() {
        t.clear();
    }
    Frame::ok()
}

fn flushall(ctx: &mut Ctx<'_, '_>) -> Frame {
    if !flush_args_ok(ctx) {
        return error::syntax();
    }
    for s in ctx.locked.shards_mut() {
        for t in s.dbs.iter_mut() {
            t.clear();
        }
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
    let (Ok(a), Ok(b)) = (usize::try_from(a), usize::try_from(b)) else { return error::db_out_of_range() };
    if a >= ndbs || b >= ndbs {
        return error::db_out_of_range();
    }
    for s in ctx.locked.shards_mut() {
        s.dbs.swap(a, b);
    }
    Frame::ok()
}

/// True if `maxmemory-policy` is an LFU policy.
fn lfu_policy(ctx: &Ctx<'_, '_>) -> bool {
    ctx.srv.config.get("maxmemory-policy").is_some_and(|p| p.ends_with("lfu"))
}

fn object_encoding(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(2);
    match ctx.db().read_notouch(key) {
        Some(e) => Frame::bulk(e.value.encoding()),
        None => Frame::Null,
    }
}

fn object_refcount(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(2);
    // Redis shares the integers 0..9999 (refcount INT_MAX) unless an LRU/LFU maxmemory policy with a
    // memory limit requires per-object access metadata.
    let policy = ctx.srv.config.get("maxmemory-policy").unwrap_or_default();
    let can_share = ctx.srv.config.get_i64("maxmemory") == 0 || !(policy.ends_with("lru") || policy.ends_with("lfu"));
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
    let Some(atime) = ctx.db().read_notouch(key).map(|e| e.atime) else { return Frame::Null };
    if lfu {
        return Frame::error(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        );
    }
    Frame::Integer(i64::from(now_s.wrapping_sub(atime)))
}

fn object_freq(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(2);
    let lfu = lfu_policy(ctx);
    let now_s = (ctx.now / 1000) as u32;
    let Some((atime, counter)) = ctx.db().read_notouch(key).map(|e| (e.atime, e.lfu)) else {
        return Frame::Null;
    };
    if !lfu {
        return Frame::error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        );
    }
    // LFUDecrAndReturn with lfu-decay-time 1: one point per idle minute.
    let periods = now_s.wrapping_sub(atime) / 60;
    Frame::Integer(i64::from(u32::from(counter).saturating_sub(periods)))
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
