//! DEBUG: the testing and introspection command of Redis's `debug.c`, behind `enable-debug-command`
//! (`no` by default; `local` and `yes` as in Redis 7).
//!
//! DEBUG holds every shard while it runs, as Redis's single thread does: `DEBUG SLEEP` stops every
//! keyed command, and `DEBUG DIGEST` reads a still dataset. Subcommands that reach Redis internals
//! Latch does not have (RDB reload before persistence exists, allocator tuning, crash helpers)
//! answer with an error that says so; none pretends to have done what it did not.

use super::base::BASE;
use super::server::{help_reply, subcommand_syntax_error};
use crate::command::Flags;
use crate::ctx::{Command, Ctx};
use crate::host::LogLevel;
use crate::value::{Entry, Value};
use bytes::Bytes;
use resp::Frame;
use sha1::Digest;
use std::sync::atomic::Ordering;

use crate::server::REPLY_BUFFER_PEAK_RESET_MS;

/// The DEBUG entry of the command table.
pub static COMMANDS: &[Command] = &[Command {
    name: "debug",
    arity: -2,
    flags: Flags::ADMIN.or(Flags::NOSCRIPT).or(Flags::LOADING).or(Flags::STALE).or(Flags::ALL_SHARDS),
    group: crate::command::Group::Server,
    handler: debug,
    ..BASE
}];

const HELP: &[&str] = &[
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "HTSTATS <dbid>",
    "    Return hash table statistics of the specified Redis database.",
    "HTSTATS-KEY <key>",
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "MALLCTL <key> [<val>]",
    "    Get or set a malloc tuning integer.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory (needs persistence).",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-DISABLE-DENY-SCRIPTS <0|1>",
    "    Let scripts call commands flagged noscript (for testing).",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the glob-style pattern matcher.",
    "STRUCTSIZE",
    "    Return the size of Latch's core structures.",
];

fn debug(ctx: &mut Ctx<'_, '_>) -> Frame {
    if !super::server::protected_allowed(ctx, "enable-debug-command") {
        return Frame::error(
            "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
        );
    }
    let sub = ctx.arg(1).to_ascii_lowercase();
    let argc = ctx.argc();
    match (sub.as_slice(), argc) {
        (b"help", 2) => help_reply("DEBUG", HELP),
        (b"segfault", _) => {
            ctx.srv.config.host().segfault();
            Frame::ok()
        }
        (b"sleep", 3) => {
            // Redis: strtod without checks; garbage sleeps 0.
            let secs = atof(ctx.arg(2));
            let secs = if secs.is_finite() { secs.max(0.0) } else { 0.0 };
            // The whole server sleeps, as Redis's one thread does (tests freeze a node so).
            let us = (secs * 1_000_000.0) as u64;
            if us >= 1000 {
                ctx.srv.freeze_for(us / 1000);
            }
            std::thread::sleep(std::time::Duration::from_micros(us % 1000));
            Frame::ok()
        }
        (b"replicate", n) if n >= 3 => {
            // A command straight into the replication stream (Redis's tests of what replicas do
            // with commands they cannot run).
            let args: Vec<Bytes> = ctx.args[2..].to_vec();
            ctx.srv.feed_replicas(&args);
            Frame::ok()
        }
        (b"set-skip-checksum-validation", 3) => {
            ctx.srv.debug.skip_checksum.store(resp::atoi(ctx.arg(2)) != 0, Ordering::Relaxed);
            Frame::ok()
        }
        (b"set-active-expire", 3) => {
            ctx.srv.debug.active_expire.store(resp::atoi(ctx.arg(2)) != 0, Ordering::Relaxed);
            Frame::ok()
        }
        (b"set-disable-deny-scripts", 3) => {
            ctx.srv.debug.disable_deny_scripts.store(resp::atoi(ctx.arg(2)) != 0, Ordering::Relaxed);
            Frame::ok()
        }
        (b"replybuffer", 4) => {
            let (what, v) = (ctx.arg(2), ctx.arg(3));
            let sw = &ctx.srv.debug;
            if what.eq_ignore_ascii_case(b"peak-reset-time") {
                let ms = if v.eq_ignore_ascii_case(b"never") {
                    -1
                } else if v.eq_ignore_ascii_case(b"reset") {
                    REPLY_BUFFER_PEAK_RESET_MS
                } else {
                    match crate::args::parse_i64_strict(v) {
                        Some(ms) => ms,
                        None => return crate::error::not_integer(),
                    }
                };
                sw.reply_buffer_peak_reset_ms.store(ms, Ordering::Relaxed);
            } else if what.eq_ignore_ascii_case(b"resizing") {
                sw.reply_buffer_resizing.store(resp::atoi(v) != 0, Ordering::Relaxed);
            } else {
                return subcommand_syntax_error(ctx.arg(1), "DEBUG");
            }
            Frame::ok()
        }
        (b"aof-flush-sleep", 3) => {
            let us = resp::atoi(ctx.arg(2)).max(0) as u64;
            ctx.srv.persistence.aof_flush_sleep_us.store(us, Ordering::Relaxed);
            Frame::ok()
        }
        (b"pause-cron", 3) => {
            ctx.srv.debug.pause_cron.store(resp::atoi(ctx.arg(2)) != 0, Ordering::Relaxed);
            Frame::ok()
        }
        (b"quicklist-packed-threshold", 3) => {
            let sz = std::str::from_utf8(ctx.arg(2)).ok().and_then(crate::config::parse_memory);
            match sz {
                Some(sz) if sz <= (1 << 32) - (1 << 20) => {
                    let sz = if sz == 0 { 1 << 30 } else { sz as u64 };
                    ctx.srv.debug.quicklist_packed_threshold.store(sz, Ordering::Relaxed);
                    Frame::ok()
                }
                _ => Frame::error("ERR argument must be a memory value bigger than 1 and smaller than 4gb"),
            }
        }
        // The listpack and quicklist a value is saved as (Latch keeps its own layout in memory),
        // printed as Redis's lpRepr and quicklistRepr print them.
        (b"listpack", 3) => {
            let key = ctx.arg(2);
            let mut db = ctx.db();
            let Some(e) = db.table(key).peek(key) else {
                return Frame::error("ERR no such key");
            };
            let Some(lp) = crate::rdb::value_listpack(&e.value) else {
                return Frame::error("ERR Not a listpack encoded object.");
            };
            ctx.srv.config.host().print(&crate::types::listpack::repr(&lp));
            Frame::Simple(Bytes::from_static(b"Listpack structure printed on stdout"))
        }
        (b"quicklist", 3 | 4) => {
            let key = ctx.arg(2);
            let full =
                argc == 4 && std::str::from_utf8(ctx.arg(3)).ok().and_then(|f| f.parse::<i64>().ok()).unwrap_or(0) != 0;
            let fill = ctx.srv.config.get_i64("list-max-listpack-size");
            let compress = ctx.srv.config.get_i64("list-compress-depth");
            let mut db = ctx.db();
            let Some(e) = db.table(key).peek(key) else {
                return Frame::error("ERR no such key");
            };
            let Value::List(l) = &e.value else {
                return Frame::error("ERR Not a quicklist encoded object.");
            };
            let nodes = crate::rdb::quicklist_nodes(l);
            let mut text = format!(
                "{{count : {}}}\n{{len : {}}}\n{{fill : {fill}}}\n{{compress : {compress}}}\n{{bookmark_count : 0}}\n",
                l.len(),
                nodes.len()
            );
            for (i, n) in nodes.iter().enumerate() {
                text.push_str(&format!(
                    "{{quicklist node({i})\n{{container : PACKED, encoding: RAW, size: {}, count: {}, recompress: 0, attempted_compress: 0}}\n",
                    n.len(),
                    crate::types::listpack::count(n)
                ));
                if full {
                    text.push_str("{ listpack:\n");
                    text.push_str(&crate::types::listpack::repr(n));
                    text.push_str("}\n}\n");
                }
            }
            ctx.srv.config.host().print(&text);
            Frame::Simple(Bytes::from_static(b"Quicklist structure printed on stdout"))
        }
        (b"log", 3) => {
            let msg = format!("DEBUG LOG: {}", String::from_utf8_lossy(ctx.arg(2)));
            ctx.srv.config.host().log(LogLevel::Warning, &msg);
            Frame::ok()
        }
        (b"error", 3) => {
            let msg: Vec<u8> = ctx.arg(2).iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }).collect();
            Frame::Error(Bytes::from(msg))
        }
        (b"change-repl-id", 2) => {
            ctx.srv
                .config
                .host()
                .log(LogLevel::Warning, "Changing replication IDs after receiving DEBUG change-repl-id");
            ctx.srv.repl.set_replid(crate::server::random_id());
            Frame::ok()
        }
        (b"config-rewrite-force-all", 2) => {
            let Some(path) = ctx.srv.config_file.lock().clone() else {
                return Frame::error(
                    "ERR CONFIG-REWRITE-FORCE-ALL failed: The server is running without a config file",
                );
            };
            match super::server::rewrite_config_file(&path, ctx.srv, true) {
                Ok(()) => Frame::ok(),
                Err(e) => Frame::error(format!("ERR CONFIG-REWRITE-FORCE-ALL failed: {e}")),
            }
        }
        (b"mallctl", 3 | 4) => {
            let name = String::from_utf8_lossy(ctx.arg(2)).into_owned();
            let value = match ctx.args.get(3).map(|v| crate::args::parse_i64_strict(v)) {
                Some(None) => return crate::error::not_integer(),
                Some(Some(v)) => Some(v),
                None => None,
            };
            match ctx.srv.config.host().mallctl(&name, value) {
                Some(Ok(old)) => Frame::Integer(old),
                Some(Err(e)) => Frame::error(format!("ERR {e}")),
                None => subcommand_syntax_error(ctx.arg(1), "DEBUG"),
            }
        }
        (b"object", 3) => object(ctx),
        (b"htstats", 3) => {
            let Some(dbid) = crate::args::parse_i64_strict(ctx.arg(2)) else {
                return crate::error::not_integer();
            };
            if dbid < 0 || dbid as usize >= ctx.srv.ks.ndbs() {
                return Frame::error("ERR Out of range database");
            }
            let (mut size, mut used, mut volatile) = (0, 0, 0);
            for t in ctx.db_at(dbid as usize).tables() {
                size += t.capacity();
                used += t.len();
                volatile += t.volatile_len();
            }
            // The expiry index is an ordered set: it has no free slots.
            let text = format!(
                "[Dictionary HT]\n{}[Expires HT]\n{}",
                table_stats(size, used),
                table_stats(volatile, volatile)
            );
            Frame::Verbatim { format: *b"txt", text: Bytes::from(text) }
        }
        (b"htstats-key", 3) => {
            let key = ctx.arg(2);
            let mut db = ctx.db();
            let Some(e) = db.table(key).peek(key) else {
                return Frame::error("ERR no such key");
            };
            let stats = match (&e.value, e.encoding()) {
                (Value::Set(s), "hashtable") => table_stats(s.capacity(), s.len()),
                (Value::Hash(h), "hashtable") => table_stats(h.capacity(), h.len()),
                (Value::ZSet(z), "skiplist") => table_stats(z.capacity(), z.len()),
                _ => {
                    return Frame::error(
                        "ERR The value stored at the specified key is not represented using an hash table",
                    );
                }
            };
            Frame::Verbatim { format: *b"txt", text: Bytes::from(stats) }
        }
        (b"digest", 2) => {
            let d = dataset_digest(ctx);
            Frame::Simple(Bytes::from(hex(&d)))
        }
        (b"digest-value", _) => {
            let mut out = Vec::with_capacity(argc - 2);
            for j in 2..argc {
                let key = ctx.arg(j);
                // Not a lookup: a debug command sees logically expired keys too.
                let d = ctx.db().table(key).peek(key).map_or([0u8; 20], value_digest);
                out.push(Frame::Simple(Bytes::from(hex(&d))));
            }
            Frame::Array(out)
        }
        (b"protocol", 3) => protocol(ctx),
        (b"populate", 3..=5) => populate(ctx),
        (b"structsize", 2) => Frame::bulk(format!(
            "bits:{} value:{} entry:{} key:{} ",
            usize::BITS,
            std::mem::size_of::<Value>(),
            std::mem::size_of::<Entry>(),
            std::mem::size_of::<crate::value::Key>()
        )),
        (b"stringmatch-test", 2) => {
            stringmatch_fuzz();
            Frame::simple("Apparently Latch did not crash: test passed")
        }
        (b"reload", _) => {
            for opt in &ctx.args[2..] {
                if !["merge", "noflush", "nosave"].iter().any(|o| opt.eq_ignore_ascii_case(o.as_bytes())) {
                    return Frame::error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
                }
            }
            let has = |o: &str| ctx.args[2..].iter().any(|a| a.eq_ignore_ascii_case(o.as_bytes()));
            let (flush, save, merge) = (!has("noflush"), !has("nosave"), has("merge"));
            let now = ctx.now;
            if save && let Err(e) = ctx.srv.save_locked(ctx.locked) {
                return Frame::error(e);
            }
            match ctx.srv.reload_locked(ctx.locked, flush, merge, now) {
                Ok(_) => {
                    ctx.srv.config.host().log(crate::host::LogLevel::Notice, "DB reloaded by DEBUG RELOAD");
                    Frame::ok()
                }
                Err(e) => {
                    ctx.srv.config.host().log(crate::host::LogLevel::Warning, &e);
                    Frame::error("ERR Error trying to load the RDB dump, check server logs.")
                }
            }
        }
        (b"loadaof", 2) => {
            let now = ctx.now;
            match ctx.srv.debug_loadaof_locked(ctx.locked, now) {
                Ok(()) => Frame::ok(),
                Err(e) => {
                    ctx.srv.config.host().log(crate::host::LogLevel::Warning, &e);
                    Frame::error("ERR")
                }
            }
        }
        _ => subcommand_syntax_error(ctx.arg(1), "DEBUG"),
    }
}

/// Redis's `dictGetStats` text for one of Latch's tables: `size` slots, `used` of them taken.
/// Latch's tables are open-addressed (every element has a slot of its own, no chains) and never
/// rehash incrementally, so there is only the main table and every chain is 0 or 1 long.
fn table_stats(size: usize, used: usize) -> String {
    if used == 0 {
        return "Hash table 0 stats (main hash table):\nNo stats available for empty dictionaries\n".into();
    }
    let size = size.max(used);
    let pct = |n: usize| n as f64 / size as f64 * 100.0;
    let mut s = format!(
        "Hash table 0 stats (main hash table):\n table size: {size}\n number of elements: {used}\n different slots: {used}\n max chain length: 1\n avg chain length (counted): 1.00\n avg chain length (computed): 1.00\n Chain length distribution:\n"
    );
    if size > used {
        s.push_str(&format!("   0: {} ({:.2}%)\n", size - used, pct(size - used)));
    }
    s.push_str(&format!("   1: {used} ({:.2}%)\n", pct(used)));
    s
}

/// C's `strtod` without error checks: the longest prefix that parses, else 0.
fn atof(b: &[u8]) -> f64 {
    let s = std::str::from_utf8(b).unwrap_or("").trim_start();
    (1..=s.len()).rev().find_map(|n| s.get(..n).and_then(|p| p.parse::<f64>().ok())).unwrap_or(0.0)
}

fn hex(d: &[u8; 20]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Redis's `xorDigest`: `digest ^= SHA1(data)`. Order-independent, for unordered elements.
fn xor_digest(digest: &mut [u8; 20], data: &[u8]) {
    let h = sha1::Sha1::digest(data);
    for (d, x) in digest.iter_mut().zip(h.iter()) {
        *d ^= x;
    }
}

/// Redis's `mixDigest`: `digest = SHA1(digest ^ SHA1(data))`. Order-dependent.
fn mix_digest(digest: &mut [u8; 20], data: &[u8]) {
    xor_digest(digest, data);
    let h = sha1::Sha1::digest(&digest[..]);
    digest.copy_from_slice(&h);
}

/// Redis's object type numbers (`OBJ_STRING`...), which the digest mixes in; a native lock, which
/// Redis does not have, gets a number of its own.
fn type_number(v: &Value) -> u32 {
    match v {
        Value::Int(_) | Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
        Value::Lock(_) => 0x4c4f_434b,
        Value::Damaged(d) => match d.type_name() {
            "list" => 1,
            "set" => 2,
            "zset" => 3,
            "hash" => 4,
            "stream" => 6,
            _ => 0,
        },
    }
}

/// Redis's `xorObjectDigest` for one value (DEBUG DIGEST-VALUE): the same bytes give the same
/// digest as Redis, so a test can compare digests across servers and restarts.
pub(crate) fn value_digest(e: &Entry) -> [u8; 20] {
    let mut d = [0u8; 20];
    mix_object(&mut d, e);
    d
}

fn mix_object(digest: &mut [u8; 20], e: &Entry) {
    mix_digest(digest, &type_number(&e.value).to_be_bytes());
    let element = |a: &[u8], b: &[u8]| {
        let mut ed = [0u8; 20];
        mix_digest(&mut ed, a);
        mix_digest(&mut ed, b);
        ed
    };
    match &e.value {
        Value::Int(_) | Value::Str(_) => mix_digest(digest, &e.value.as_bytes().unwrap_or_default()),
        Value::List(l) => {
            for x in l.iter() {
                mix_digest(digest, x);
            }
        }
        Value::Set(s) => {
            for x in s.iter() {
                xor_digest(digest, x);
            }
        }
        Value::ZSet(z) => {
            let mut buf = Vec::new();
            for (m, score) in z.iter() {
                buf.clear();
                resp::format_double_g(score, 17, &mut buf);
                xor_digest(digest, &element(m, &buf));
            }
        }
        Value::Hash(h) => {
            for (f, v) in h.iter() {
                xor_digest(digest, &element(f, v));
            }
        }
        Value::Lock(l) => {
            mix_digest(digest, &l.owner);
            mix_digest(digest, l.token.to_string().as_bytes());
        }
        // Unread: its bytes as they came stand for its content.
        Value::Damaged(d) => mix_digest(digest, &d.body),
        Value::Stream(s) => {
            use crate::types::stream::StreamId;
            for (id, fields) in s.range(StreamId::MIN, StreamId::MAX, false, 0) {
                mix_digest(digest, format!("{}.{}", id.ms, id.seq).as_bytes());
                for f in &fields {
                    mix_digest(digest, f);
                }
            }
        }
    }
    if e.has_ttl() {
        xor_digest(digest, b"!!expire!!");
    }
}

/// Redis's `computeDatasetDigest`: per non-empty database its number, then the xor of every
/// key/value digest. All zeros for an empty dataset.
fn dataset_digest(ctx: &mut Ctx<'_, '_>) -> [u8; 20] {
    let mut fin = [0u8; 20];
    for i in 0..ctx.srv.ks.ndbs() {
        let mut db = ctx.db_at(i);
        let mut keys = [0u8; 20];
        let mut any = false;
        for t in db.tables() {
            for (k, e) in t.iter() {
                any = true;
                let mut d = [0u8; 20];
                mix_digest(&mut d, k);
                mix_object(&mut d, e);
                xor_digest(&mut keys, &d);
            }
        }
        if any {
            // Redis mixes the db number in, then xors each key's digest into the running result.
            mix_digest(&mut fin, &(i as u32).to_be_bytes());
            for (x, y) in fin.iter_mut().zip(keys) {
                *x ^= y;
            }
        }
    }
    fin
}

/// DEBUG OBJECT: Redis's line, with the value's real address, the encoding OBJECT ENCODING
/// reports, and the length the value has in RDB's plain (uncompressed) encoding.
fn object(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(2);
    let now_s = (ctx.now / 1000) as u32;
    let lfu = ctx.srv.config.policy().is_lfu();
    let mut db = ctx.db();
    let Some(e) = db.table(key).peek(key) else {
        return Frame::error("ERR no such key");
    };
    let enc = e.encoding();
    let mut extra = String::new();
    if let Value::List(l) = &e.value {
        // One node holding every element: what Latch's list is.
        let size: usize = l.iter().map(|x| x.len()).sum();
        extra = format!(
            " ql_nodes:1 ql_avg_node:{:.2} ql_listpack_max:-2 ql_compressed:0 ql_uncompressed_size:{size}",
            l.len() as f64
        );
    }
    let idle = if lfu { 0 } else { e.idle_s(now_s) };
    Frame::Simple(Bytes::from(format!(
        "Value at:{:p} refcount:1 encoding:{enc} serializedlength:{} lru:{} lru_seconds_idle:{idle}{extra}",
        &e.value as *const Value,
        serialized_len(&e.value),
        e.atime()
    )))
}

/// Length of RDB's length prefix for `n`.
fn rdb_len_size(n: usize) -> usize {
    match n {
        0..=63 => 1,
        64..=16383 => 2,
        _ if n <= u32::MAX as usize => 5,
        _ => 9,
    }
}

/// A string as RDB saves it without compression: an integer encoding when the text is an integer
/// that fits 32 bits (Redis's `rdbTryIntegerEncoding`), else a length and the bytes.
fn rdb_string_size(b: &[u8]) -> usize {
    match crate::value::canonical_i64(b) {
        Some(i) if (-(1 << 7)..1 << 7).contains(&i) => 2,
        Some(i) if (-(1 << 15)..1 << 15).contains(&i) => 3,
        Some(i) if (-(1 << 31)..1 << 31).contains(&i) => 5,
        _ => rdb_len_size(b.len()) + b.len(),
    }
}

/// The value's size in RDB's plain encodings (list as a sequence of strings, hash and set as
/// counted strings, zset with binary scores), before compression.
fn serialized_len(v: &Value) -> usize {
    match v {
        Value::Int(_) | Value::Str(_) => rdb_string_size(&v.as_bytes().unwrap_or_default()),
        Value::List(l) => rdb_len_size(l.len()) + l.iter().map(|x| rdb_string_size(x)).sum::<usize>(),
        Value::Set(s) => rdb_len_size(s.len()) + s.iter().map(rdb_string_size).sum::<usize>(),
        Value::Hash(h) => {
            rdb_len_size(h.len()) + h.iter().map(|(f, x)| rdb_string_size(f) + rdb_string_size(x)).sum::<usize>()
        }
        Value::ZSet(z) => rdb_len_size(z.len()) + z.iter().map(|(m, _)| rdb_string_size(m) + 8).sum::<usize>(),
        Value::Lock(l) => rdb_string_size(&l.owner) + 8,
        Value::Stream(s) => s.nodes().map(|(_, n)| 17 + rdb_len_size(n.len()) + n.len()).sum::<usize>() + 16,
        Value::Damaged(d) => d.body.len(),
    }
}

fn protocol(ctx: &mut Ctx<'_, '_>) -> Frame {
    let name = ctx.arg(2).to_ascii_lowercase();
    let resp3 = ctx.client.proto == resp::Protocol::Resp3;
    let ints = || (0..3).map(Frame::Integer).collect::<Vec<_>>();
    match name.as_slice() {
        b"string" => Frame::bulk("Hello World"),
        b"integer" => Frame::Integer(12345),
        // Redis's test value, not an approximation of pi.
        #[allow(clippy::approx_constant)]
        b"double" => Frame::Double(3.141),
        b"bignum" => Frame::BigNumber(Bytes::from_static(b"1234567999999999999999999999999999999")),
        b"null" => Frame::Null,
        b"array" => Frame::Array(ints()),
        b"set" => Frame::Set(ints()),
        b"map" => Frame::Map((0..3).map(|j| (Frame::Integer(j), Frame::Boolean(j == 1))).collect()),
        b"attrib" => {
            let value = Frame::bulk("Some real reply following the attribute");
            if resp3 {
                let attrs = vec![(
                    Frame::bulk("key-popularity"),
                    Frame::Array(vec![Frame::bulk("key:123"), Frame::Integer(90)]),
                )];
                Frame::Attribute { attrs, value: Box::new(value) }
            } else {
                value
            }
        }
        b"push" => {
            if !resp3 {
                return Frame::error("ERR RESP2 is not supported by this command");
            }
            // A push, then the reply proper (a client that discards pushes still gets one reply).
            let mut wire = bytes::BytesMut::new();
            resp::encode(
                &Frame::Push(vec![Frame::bulk("server-cpu-usage"), Frame::Integer(42)]),
                resp::Protocol::Resp3,
                &mut wire,
            );
            resp::encode(&Frame::bulk("Some real reply following the push reply"), resp::Protocol::Resp3, &mut wire);
            Frame::Encoded(wire.freeze())
        }
        b"true" => Frame::Boolean(true),
        b"false" => Frame::Boolean(false),
        b"verbatim" => Frame::Verbatim { format: *b"txt", text: Bytes::from_static(b"This is a verbatim\nstring") },
        _ => Frame::error(
            "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ),
    }
}

/// DEBUG POPULATE count [prefix] [size]: `prefix:N` keys (default `key`) holding `value:N`, padded
/// with zero bytes or cut to `size`; existing keys are left alone.
fn populate(ctx: &mut Ctx<'_, '_>) -> Frame {
    let positive = |b: &[u8]| match crate::args::parse_i64_strict(b) {
        Some(n) if n >= 0 => Ok(n as usize),
        Some(_) => Err(Frame::error("ERR value is out of range, must be positive")),
        None => Err(crate::error::not_integer()),
    };
    let count = match positive(ctx.arg(2)) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let size = match ctx.args.get(4).map(|a| positive(a)) {
        Some(Ok(n)) => n,
        Some(Err(e)) => return e,
        None => 0,
    };
    let prefix = ctx.args.get(3).cloned().unwrap_or_else(|| Bytes::from_static(b"key"));
    let mut db = ctx.db();
    let mut key = Vec::new();
    for j in 0..count {
        key.clear();
        key.extend_from_slice(&prefix);
        key.push(b':');
        key.extend_from_slice(j.to_string().as_bytes());
        if db.exists(&key) {
            continue;
        }
        let mut val = format!("value:{j}").into_bytes();
        if size != 0 {
            val.resize(size, 0);
        }
        db.set(&key, Value::string(&val), false);
    }
    Frame::ok()
}

/// DEBUG STRINGMATCH-TEST: random patterns against random subjects through the matcher, looking
/// for a crash or a runaway (Redis's `stringmatchlen_fuzz_test`).
fn stringmatch_fuzz() {
    const ALPHABET: &[u8] = b"*?[]\\^-ab";
    for _ in 0..1000 {
        let pat: Vec<u8> =
            (0..rand::random_range(0..32)).map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())]).collect();
        let sub: Vec<u8> = (0..rand::random_range(0..32)).map(|_| rand::random::<u8>()).collect();
        let _ = crate::glob::matches(&pat, &sub, rand::random());
    }
}

#[cfg(test)]
mod tests {
    use crate::clock::Clock;
    use crate::testkit::TestServer;

    fn debug_server() -> TestServer {
        let ts = TestServer::new();
        ts.srv.config.set("enable-debug-command", "yes", true).expect("valid");
        ts
    }

    /// Digests computed by Redis 7.0.15 for the same data (redis-cli DEBUG DIGEST / DIGEST-VALUE
    /// after these commands): every type, a TTL, a second database.
    /// DEBUG LISTPACK and QUICKLIST print the listpacks a value is saved as, in Redis's text.
    #[test]
    fn listpack_and_quicklist_print_the_saved_layout() {
        let (ts, host) = TestServer::with_host();
        ts.srv.config.set("enable-debug-command", "yes", true).expect("valid");
        let mut c = ts.client();
        c.run("HSET h f v n 300");
        assert_eq!(c.run("DEBUG LISTPACK h"), "+Listpack structure printed on stdout");
        let out = host.printed.lock().clone();
        // "f" (6-bit string), "v", "n", 300 (13-bit integer): 6 + 3 + 3 + 3 + 3 + 1 bytes.
        assert!(out.starts_with("{total bytes 19} {num entries 4}\n{\n\taddr: 0x"), "{out}");
        assert!(out.contains("\tindex:  3,\n\toffset: 15,\n\thdr+entrylen+backlen:  3,\n\thdrlen:   1,\n\tbacklen:  1,\n\tpayload: 1\n\tbytes: c1|2c|02|\n\t[str]300\n}"), "{out}");
        assert!(out.ends_with("{end}\n\n"));
        c.run("RPUSH l a b");
        assert_eq!(c.run("DEBUG LISTPACK l"), "-ERR Not a listpack encoded object.");
        assert_eq!(c.run("DEBUG LISTPACK nokey"), "-ERR no such key");
        host.printed.lock().clear();
        assert_eq!(c.run("DEBUG QUICKLIST l 1"), "+Quicklist structure printed on stdout");
        let out = host.printed.lock().clone();
        assert!(out.starts_with("{count : 2}\n{len : 1}\n{fill : -2}\n{compress : 0}\n{bookmark_count : 0}\n{quicklist node(0)\n{container : PACKED, encoding: RAW, size: 13, count: 2,"), "{out}");
        assert!(out.contains("{ listpack:\n{total bytes 13} {num entries 2}"), "{out}");
        assert_eq!(c.run("DEBUG QUICKLIST h"), "-ERR Not a quicklist encoded object.");
    }

    #[test]
    fn digests_match_redis() {
        let ts = debug_server();
        let big = "x".repeat(100);
        ts.transcript(&format!(
            r#"
            > DEBUG DIGEST
            +0000000000000000000000000000000000000000
            > SET s hello
            +OK
            > SET n 12345
            +OK
            > SET big {big}
            +OK
            > RPUSH l a b c 1 2
            :5
            > SADD st x y z
            :3
            > SADD si 1 2 3
            :3
            > ZADD z 1 a 2.5 b -3 c 1e100 d
            :4
            > HSET h f1 v1 f2 v2
            :2
            > SET e v EX 1000
            +OK
            > SELECT 3
            +OK
            > SET other 1
            +OK
            > SELECT 0
            +OK
            > DEBUG DIGEST
            +822d459d82879b1634916ea768a4a2d8221c5686
            > DEBUG DIGEST-VALUE s n big l st si z h e nokey
            [+36b23a1456b2dce2c3ed252c456761301dba8060, +e1cf90774e995ae03de66e8109dc5cb9d9c2dc83, +6942b9b71aaff9a398b7a2f898756f5e28dd3cd1, +f48a1249517530ff1906fc79ddbf9b687f71f06f, +0fd9977d57e46b1b9b87439f5ac5b338416ccc24, +2a462a3f51a1db89738ebbeef0c47ce1bbc85246, +2ded13859c67141cd9ee3d856374c733d325f0f1, +047cc60ea73a34cde6d08a2721a4a26d19ee6570, +311b17018163335616e089f6b951c82c477335ac, +0000000000000000000000000000000000000000]
            "#
        ));
    }

    #[test]
    fn htstats_describes_the_tables_as_they_are() {
        let ts = debug_server();
        let mut c = ts.client();
        let empty = c.run("DEBUG HTSTATS 0");
        assert!(
            empty.contains("[Dictionary HT]") && empty.contains("No stats available for empty dictionaries"),
            "{empty}"
        );
        c.run("SET a 1");
        c.run("SET b 2");
        c.run("EXPIRE b 100");
        let two = c.run("DEBUG HTSTATS 0");
        assert!(two.contains(" number of elements: 2\\n"), "{two}");
        assert!(
            two.contains(
                "[Expires HT]\\nHash table 0 stats (main hash table):\\n table size: 1\\n number of elements: 1\\n"
            ),
            "{two}"
        );
        assert_eq!(c.run("DEBUG HTSTATS 16"), "-ERR Out of range database");
        assert_eq!(c.run("DEBUG HTSTATS x"), "-ERR value is not an integer or out of range");
        c.run("SADD small 1 2");
        assert!(c.run("DEBUG HTSTATS-KEY small").contains("not represented using an hash table"));
        c.run("SADD big a b c");
        let set = c.run("DEBUG HTSTATS-KEY big");
        assert!(set.contains(" number of elements: 3\\n") && set.contains(" max chain length: 1\\n"), "{set}");
        assert_eq!(c.run("DEBUG HTSTATS-KEY nokey"), "-ERR no such key");
    }

    #[test]
    fn config_rewrite_force_all_writes_defaults_too() {
        let host = std::sync::Arc::new(crate::host::MemoryHost::default());
        let config = crate::config::Config::with_host(host.clone());
        config.set("enable-debug-command", "yes", true).expect("valid");
        let ts = TestServer::with_config(config);
        ts.transcript(
            r#"
            > DEBUG CONFIG-REWRITE-FORCE-ALL
            -ERR CONFIG-REWRITE-FORCE-ALL failed: The server is running without a config file
            "#,
        );
        let path = std::path::PathBuf::from("/latch.conf");
        host.put(path.clone(), "hz 20\n");
        *ts.srv.config_file.lock() = Some(path.clone());
        ts.transcript("> DEBUG CONFIG-REWRITE-FORCE-ALL\n+OK");
        let text = host.get(&path).expect("written");
        // The file's own line keeps its place, with the value in force.
        assert!(text.starts_with("hz 10\n"), "{text}");
        // Defaults are written; an empty replicaof is not (it would not load back).
        assert!(text.contains("\nmaxmemory-policy noeviction\n"), "{text}");
        assert!(text.contains("\nlatency-tracking-info-percentiles 50 99 99.9\n"), "{text}");
        assert!(!text.contains("replicaof"), "{text}");
    }

    #[test]
    fn scripts_reach_noscript_commands_only_when_allowed() {
        debug_server().transcript(
            r#"
            > EVAL "return redis.call('debug', 'protocol', 'bignum')" 0
            -ERR This Redis command is not allowed from script script: 59b6db1ffd05c0c6f566df3c9fedba4431e0b2a8, on @user_script:1.
            > DEBUG SET-DISABLE-DENY-SCRIPTS 1
            +OK
            > EVAL "return redis.call('debug', 'protocol', 'bignum')" 0
            "1234567999999999999999999999999999999"
            > EVAL "redis.setresp(3) return redis.call('debug', 'protocol', 'map')" 0
            {:0: #f, :2: #f, :1: #t}
            > DEBUG SET-DISABLE-DENY-SCRIPTS 0
            +OK
            "#,
        );
    }

    #[test]
    fn protocol_errors_and_options() {
        debug_server().transcript(
            r#"
            > DEBUG PROTOCOL nope
            -ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false
            > DEBUG PROTOCOL push
            -ERR RESP2 is not supported by this command
            > DEBUG PROTOCOL string
            "Hello World"
            > DEBUG ERROR "bad\r\nthing"
            -bad  thing
            > DEBUG QUICKLIST-PACKED-THRESHOLD 5gb
            -ERR argument must be a memory value bigger than 1 and smaller than 4gb
            > DEBUG QUICKLIST-PACKED-THRESHOLD 1K
            +OK
            > DEBUG RELOAD FOO
            -ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.
            > DEBUG POPULATE 3 p 2
            +OK
            > MGET p:0 p:1 p:2 p:3
            ["va", "va", "va", (nil)]
            > DEBUG POPULATE -1
            -ERR value is out of range, must be positive
            > DEBUG OBJECT nokey
            -ERR no such key
            > DEBUG nosuch
            -ERR unknown subcommand or wrong number of arguments for 'nosuch'. Try DEBUG HELP.
            > DEBUG MALLCTL arenas.page
            -ERR unknown subcommand or wrong number of arguments for 'MALLCTL'. Try DEBUG HELP.
            "#,
        );
    }

    #[test]
    fn set_active_expire_stops_the_cron_from_reclaiming() {
        let ts = debug_server();
        ts.transcript(
            r#"
            > DEBUG SET-ACTIVE-EXPIRE 0
            +OK
            > SET k v PX 10
            +OK
            "#,
        );
        ts.clock.advance_ms(50);
        assert_eq!(ts.srv.active_expire_cycle(ts.clock.now_ms(), 1000), 0);
        ts.transcript(
            r#"
            > DEBUG SET-ACTIVE-EXPIRE 1
            +OK
            "#,
        );
        assert_eq!(ts.srv.active_expire_cycle(ts.clock.now_ms(), 1000), 1);
    }

    #[test]
    fn c_number_parsing() {
        assert_eq!(super::atof(b"0.5s"), 0.5);
        assert_eq!(super::atof(b"nope"), 0.0);
    }
}
