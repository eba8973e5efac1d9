//! The server family: CONFIG, INFO, TIME, LASTSAVE, SHUTDOWN, SLOWLOG, DEBUG (SLEEP only).
//! COMMAND lives in [`super::introspection`].
//!
//! Process statistics (RSS, CPU time, total memory, OS release) are read from `/proc` by the small
//! `proc_*` functions at the bottom; on systems without `/proc` they report 0.

use super::base::BASE;
use crate::command::Flags;
use crate::ctx::{Command, Ctx};
use crate::keyspace::Shard;
use bytes::Bytes;
use resp::Frame;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

const ADMIN: Flags = Flags::ADMIN.or(Flags::NOSCRIPT).or(Flags::LOADING).or(Flags::STALE);
const LS: Flags = Flags::LOADING.or(Flags::STALE);

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "config",
        arity: -2,
        group: crate::command::Group::Server,
        subcommands: CONFIG_SUBCOMMANDS,
        ..BASE
    },
    Command {
        name: "info",
        arity: -1,
        // INFO reads every shard (keyspace, memory): it holds them all, so that inside EXEC or a
        // script it is taken with the others in order instead of locking shards the caller holds.
        flags: LS.or(Flags::ALL_SHARDS),
        group: crate::command::Group::Server,
        handler: info,
        ..BASE
    },
    Command {
        name: "time",
        arity: 1,
        flags: LS.or(Flags::FAST),
        group: crate::command::Group::Server,
        handler: time,
        ..BASE
    },
    Command {
        name: "save",
        arity: 1,
        flags: Flags::ADMIN.or(Flags::NOSCRIPT).or(Flags::NO_MULTI).or(Flags::NO_ASYNC_LOADING).or(Flags::ALL_SHARDS),
        group: crate::command::Group::Server,
        handler: save,
        ..BASE
    },
    Command {
        name: "bgsave",
        arity: -1,
        flags: Flags::ADMIN.or(Flags::NOSCRIPT).or(Flags::NO_ASYNC_LOADING).or(Flags::ALL_SHARDS),
        group: crate::command::Group::Server,
        handler: bgsave,
        ..BASE
    },
    Command {
        name: "bgrewriteaof",
        arity: 1,
        flags: Flags::ADMIN.or(Flags::NOSCRIPT).or(Flags::NO_ASYNC_LOADING),
        group: crate::command::Group::Server,
        handler: bgrewriteaof,
        ..BASE
    },
    Command {
        name: "lolwut",
        arity: -1,
        flags: Flags::READONLY.or(Flags::FAST),
        group: crate::command::Group::Server,
        handler: lolwut,
        ..BASE
    },
    Command {
        name: "lastsave",
        arity: 1,
        flags: LS.or(Flags::FAST),
        group: crate::command::Group::Server,
        handler: lastsave,
        ..BASE
    },
    Command {
        name: "shutdown",
        arity: -1,
        flags: ADMIN.or(Flags::NO_MULTI).or(Flags::ALLOW_BUSY),
        group: crate::command::Group::Server,
        handler: shutdown,
        // A save needs every shard; SHUTDOWN NOSAVE (the way out of a busy script) needs none.
        all_shards_if: Some(shutdown_may_save),
        ..BASE
    },
    Command {
        name: "slowlog",
        arity: -2,
        group: crate::command::Group::Server,
        subcommands: SLOWLOG_SUBCOMMANDS,
        ..BASE
    },
];

static CONFIG_SUBCOMMANDS: &[Command] = &[
    Command {
        name: "config|get",
        arity: -3,
        flags: ADMIN,
        group: crate::command::Group::Server,
        handler: config_get,
        ..BASE
    },
    Command {
        name: "config|set",
        arity: -4,
        flags: ADMIN,
        group: crate::command::Group::Server,
        handler: config_set,
        ..BASE
    },
    Command {
        name: "config|resetstat",
        arity: 2,
        flags: ADMIN.or(Flags::ALL_SHARDS),
        group: crate::command::Group::Server,
        handler: config_resetstat,
        ..BASE
    },
    Command {
        name: "config|rewrite",
        arity: 2,
        flags: ADMIN,
        group: crate::command::Group::Server,
        handler: config_rewrite,
        ..BASE
    },
    Command {
        name: "config|help",
        arity: 2,
        flags: LS,
        group: crate::command::Group::Server,
        handler: config_help,
        ..BASE
    },
];

const SLOWLOG_FLAGS: Flags = Flags::ADMIN.or(LS);

static SLOWLOG_SUBCOMMANDS: &[Command] = &[
    Command {
        name: "slowlog|get",
        arity: -2,
        flags: SLOWLOG_FLAGS,
        group: crate::command::Group::Server,
        handler: slowlog_get,
        ..BASE
    },
    Command {
        name: "slowlog|len",
        arity: 2,
        flags: SLOWLOG_FLAGS,
        group: crate::command::Group::Server,
        handler: slowlog_len,
        ..BASE
    },
    Command {
        name: "slowlog|reset",
        arity: 2,
        flags: SLOWLOG_FLAGS,
        group: crate::command::Group::Server,
        handler: slowlog_reset,
        ..BASE
    },
    Command {
        name: "slowlog|help",
        arity: 2,
        flags: LS,
        group: crate::command::Group::Server,
        handler: slowlog_help,
        ..BASE
    },
];

/// Redis's `addReplyHelp`: a header, the given lines, and the HELP entry, as status replies.
pub fn help_reply(cmd: &str, lines: &[&str]) -> Frame {
    let mut v = vec![Frame::simple(&format!("{cmd} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"))];
    v.extend(lines.iter().map(|l| Frame::simple(l)));
    v.push(Frame::simple("HELP"));
    v.push(Frame::simple("    Prints this help."));
    Frame::Array(v)
}

/// Redis's `addReplySubcommandSyntaxError`.
pub fn subcommand_syntax_error(sub: &[u8], cmd: &str) -> Frame {
    Frame::error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        crate::error::trunc(sub, 128),
        cmd
    ))
}

/// True for loopback peers (what Redis's `islocalClient` accepts for `enable-*` options set to `local`).
fn is_local(addr: &str) -> bool {
    addr.starts_with("127.") || addr.starts_with("[::1]") || addr.starts_with("::1") || addr.is_empty()
}

/// Whether an `enable-protected-configs`/`enable-debug-command` style option allows this client.
pub(crate) fn protected_allowed(ctx: &Ctx<'_, '_>, option: &str) -> bool {
    match ctx.srv.config.get(option).as_deref() {
        Some("yes") => true,
        Some("local") => is_local(&ctx.client.info.addr),
        _ => false,
    }
}

/// Runs `f` on every shard: through the command's own locks when it holds them all (inside EXEC),
/// otherwise locking one shard at a time.
fn each_shard(ctx: &mut Ctx<'_, '_>, mut f: impl FnMut(&mut Shard)) {
    // The commands that walk every shard carry ALL_SHARDS, so they hold them all here. Should one
    // not, a shard it holds is used through its own lock (locking it again would wait on itself,
    // as INFO inside EXEC once did) and only the others are locked, one at a time.
    for i in 0..ctx.srv.ks.nshards() {
        if ctx.locked.holds(i) {
            f(ctx.locked.shard(i));
        } else {
            f(ctx.srv.ks.lock_shards(vec![i]).shard(i));
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// CONFIG

fn config_get(ctx: &mut Ctx<'_, '_>) -> Frame {
    let pats: Vec<&[u8]> = ctx.args[2..].iter().map(|a| &a[..]).collect();
    let pairs = ctx.srv.config.get_matching(&pats);
    Frame::Map(pairs.into_iter().map(|(k, v)| (Frame::bulk(k), Frame::bulk(v))).collect())
}

fn config_set(ctx: &mut Ctx<'_, '_>) -> Frame {
    if !ctx.argc().is_multiple_of(2) {
        return crate::error::syntax();
    }
    let pairs: Vec<(&[u8], &[u8])> = ctx.args[2..].chunks(2).map(|c| (&c[0][..], &c[1][..])).collect();
    let allow = protected_allowed(ctx, "enable-protected-configs");
    let was_on = ctx.srv.config.get("appendonly").as_deref() == Some("yes");
    let loading = ctx.srv.loading.load(Ordering::Relaxed) || ctx.srv.async_loading.load(Ordering::Relaxed);
    if loading && crate::config::Config::denied_while_loading(&pairs, allow) {
        return Frame::error("LOADING Redis is loading the dataset in memory");
    }
    match ctx.srv.config.set_many(&pairs, allow) {
        Ok(()) => {
            // `appendonly yes` starts the AOF with a rewrite (the AOF writer runs it), in progress
            // from now on, as Redis's startAppendOnly forks it at once.
            let p = &ctx.srv.persistence;
            if !was_on && ctx.srv.config.get("appendonly").as_deref() == Some("yes") {
                let log = |why: &str| {
                    ctx.srv.config.host().log(
                        crate::host::LogLevel::Warning,
                        &format!("AOF was enabled {why}. An AOF background was scheduled to start when possible."),
                    )
                };
                // Redis's startAppendOnly: the rewrite waits for another background operation,
                // and for the end of a transaction (`aof_rewrite_scheduled`); the AOF writer's
                // cron starts it (`aof_starting`: this rewrite turns the AOF on, even if files a
                // BGREWRITEAOF left open are still there).
                let schedule = || {
                    p.aof_starting.store(true, Ordering::SeqCst);
                    p.aof_rewrite_requested.store(true, Ordering::SeqCst);
                };
                if p.bgsave_in_progress.load(Ordering::SeqCst) || p.repl_snapshot.load(Ordering::SeqCst) {
                    log("but there is already another background operation");
                    schedule();
                } else if ctx.client.in_exec {
                    log("during a transaction");
                    schedule();
                } else {
                    p.aof_starting.store(true, Ordering::SeqCst);
                    p.aof_rewrite_in_progress.store(true, Ordering::SeqCst);
                }
            } else if was_on && ctx.srv.config.get("appendonly").as_deref() == Some("no") {
                if !p.aof_rewrite_in_progress.load(Ordering::SeqCst) {
                    // Redis's stopAppendOnly: a start still scheduled is forgotten.
                    p.aof_starting.store(false, Ordering::SeqCst);
                    p.aof_rewrite_requested.store(false, Ordering::SeqCst);
                } else if p.aof_rewrite_requested.swap(false, Ordering::SeqCst) {
                    // A BGREWRITEAOF the AOF writer's cron has not started yet: Redis forked it at
                    // once, and stopAppendOnly kills it. Started later, it would run with the AOF
                    // off.
                    p.aof_rewrite_in_progress.store(false, Ordering::SeqCst);
                    p.aof_starting.store(false, Ordering::SeqCst);
                    ctx.srv.config.host().log(
                        crate::host::LogLevel::Notice,
                        "Killing running AOF rewrite child: the rewrite had not started",
                    );
                } else {
                    // Started: the AOF writer's cron stops it.
                    p.aof_turned_off.store(true, Ordering::SeqCst);
                }
            }
            ctx.srv.sync_key_log();
            Frame::ok()
        }
        Err(e) => Frame::error(e),
    }
}

fn config_resetstat(ctx: &mut Ctx<'_, '_>) -> Frame {
    let srv = ctx.srv;
    srv.stats.reset();
    srv.evictor.reset_stats();
    srv.clients.total_connections.store(0, Ordering::Relaxed);
    srv.clients.rejected_connections.store(0, Ordering::Relaxed);
    for c in [&srv.repl.sync_full, &srv.repl.sync_partial_ok, &srv.repl.sync_partial_err, &srv.lazyfree.freed] {
        c.store(0, Ordering::Relaxed);
    }
    each_shard(ctx, |s| {
        s.hits = 0;
        s.misses = 0;
        for t in s.dbs.iter_mut() {
            t.expired = 0;
        }
    });
    Frame::ok()
}

fn config_rewrite(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some(path) = ctx.srv.config_file.lock().clone() else {
        return Frame::error("ERR The server is running without a config file");
    };
    match rewrite_config_file(&path, ctx.srv, false) {
        Ok(()) => Frame::ok(),
        Err(e) => Frame::error(format!("ERR Rewriting config file: {e}")),
    }
}

/// CONFIG REWRITE: read the old file (missing = empty), compute the new text with
/// [`crate::config::rewrite_text`], and replace the file atomically through the host.
pub(crate) fn rewrite_config_file(
    path: &std::path::Path,
    srv: &crate::server::Server,
    force_all: bool,
) -> std::io::Result<()> {
    let config = &srv.config;
    let host = config.host();
    let old = match host.read_file(path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    // The ACL users as `user` lines, unless they live in an aclfile (then the file's `user`
    // lines are dropped, as Redis drops them).
    let users: Vec<String> = if config.get("aclfile").is_some_and(|f| !f.is_empty()) {
        Vec::new()
    } else {
        srv.acl.list_lines().iter().map(|l| String::from_utf8_lossy(l).into_owned()).collect()
    };
    host.replace_file(path, &crate::config::rewrite_text_users(&old, config, force_all, Some(&users)))
}

fn config_help(_: &mut Ctx<'_, '_>) -> Frame {
    help_reply(
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    )
}

// ---------------------------------------------------------------------------------------------------
// TIME, LASTSAVE, SHUTDOWN, DEBUG

fn time(ctx: &mut Ctx<'_, '_>) -> Frame {
    let us = ctx.srv.clock.now_us() as i64 + ctx.srv.clock.wall_offset_ms() * 1000;
    Frame::Array(vec![
        Frame::bulk((us.div_euclid(1_000_000)).to_string()),
        Frame::bulk((us.rem_euclid(1_000_000)).to_string()),
    ])
}

fn lastsave(ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::Integer(ctx.srv.persistence.lastsave.load(Ordering::Relaxed) as i64)
}

fn save(ctx: &mut Ctx<'_, '_>) -> Frame {
    match ctx.srv.save_locked(ctx.locked) {
        Ok(()) => Frame::ok(),
        Err(e) => Frame::error(e),
    }
}

fn bgsave(ctx: &mut Ctx<'_, '_>) -> Frame {
    let schedule = match ctx.argc() {
        1 => false,
        2 if crate::args::eq_ic(ctx.arg(1), "schedule") => true,
        _ => return crate::error::syntax(),
    };
    match ctx.srv.bgsave_locked(ctx.locked) {
        Ok(()) => Frame::simple("Background saving started"),
        Err(crate::persistence::BGSAVE_BUSY) if schedule => {
            ctx.srv.persistence.bgsave_scheduled.store(true, Ordering::SeqCst);
            Frame::simple("Background saving scheduled")
        }
        Err(e) => Frame::error(e),
    }
}

fn bgrewriteaof(ctx: &mut Ctx<'_, '_>) -> Frame {
    let p = &ctx.srv.persistence;
    if p.aof_rewrite_in_progress.load(Ordering::SeqCst) {
        return Frame::error("ERR Background append only file rewriting already in progress");
    }
    // During a BGSAVE or a replica's full sync the rewrite waits for it (Redis: another child
    // process is active), and inside a transaction it starts after it (Redis's `in_exec`).
    if p.bgsave_in_progress.load(Ordering::SeqCst) || p.repl_snapshot.load(Ordering::SeqCst) || ctx.client.in_exec {
        p.aof_rewrite_requested.store(true, Ordering::SeqCst);
        return Frame::simple("Background append only file rewriting scheduled");
    }
    // In progress from now on (the AOF writer's thread picks it up), as a forked child would be.
    p.aof_rewrite_in_progress.store(true, Ordering::SeqCst);
    p.aof_rewrite_requested.store(true, Ordering::SeqCst);
    Frame::simple("Background append only file rewriting started")
}

fn shutdown_may_save(args: &[Bytes]) -> bool {
    !args[1..].iter().any(|a| a.eq_ignore_ascii_case(b"nosave"))
}

fn shutdown(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (mut save, mut nosave, mut abort, mut other) = (false, false, false, false);
    for a in &ctx.args[1..] {
        match a.to_ascii_lowercase().as_slice() {
            b"nosave" => nosave = true,
            b"save" => save = true,
            b"now" | b"force" => other = true,
            b"abort" => abort = true,
            _ => return crate::error::syntax(),
        }
    }
    if (abort && (save || nosave || other)) || (save && nosave) {
        return crate::error::syntax();
    }
    if abort {
        return if ctx.srv.abort_shutdown() { Frame::ok() } else { Frame::error("ERR No shutdown in progress.") };
    }
    let now_flag = ctx.args[1..].iter().any(|a| a.eq_ignore_ascii_case(b"now"));
    if !now_flag && ctx.client.deny_blocking {
        return Frame::error("ERR SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client");
    }
    let force = ctx.args[1..].iter().any(|a| a.eq_ignore_ascii_case(b"force"));
    let flags = crate::server::shutdown::ShutdownFlags { save, nosave, now: now_flag, force };
    // With save points (or SAVE), the dataset is saved first; a failed save keeps the server up
    // unless FORCE says otherwise. Lagging replicas are waited for first, the client blocked
    // meanwhile (Redis's prepareForShutdown). The connection closes without a reply when the
    // server exits, as Redis's does when the process exits.
    match ctx.srv.prepare_shutdown(flags, ctx.now, Some(&mut *ctx.locked)) {
        crate::server::shutdown::Shutdown::Failed => Frame::error("ERR Errors trying to SHUTDOWN. Check logs."),
        crate::server::shutdown::Shutdown::Waiting => {
            ctx.client.shutdown_wait = true;
            ctx.client.suppress_reply = true;
            Frame::Null
        }
        crate::server::shutdown::Shutdown::Exiting => {
            ctx.client.suppress_reply = true;
            ctx.client.close_after_reply = true;
            ctx.client.shut_down_server = true;
            Frame::ok()
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// SLOWLOG

fn slowlog_get(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() > 3 {
        return subcommand_syntax_error(ctx.arg(1), "SLOWLOG");
    }
    let log = ctx.srv.slowlog.lock();
    let mut count = 10usize;
    if ctx.argc() == 3 {
        match crate::args::parse_i64_strict(ctx.arg(2)) {
            Some(-1) => count = log.entries.len(),
            Some(n) if n >= 0 => count = n as usize,
            _ => return Frame::error("ERR count should be greater than or equal to -1"),
        }
    }
    let entries = log
        .entries
        .iter()
        .take(count)
        .map(|e| {
            Frame::Array(vec![
                Frame::Integer(e.id as i64),
                Frame::Integer(e.time),
                Frame::Integer(e.micros as i64),
                Frame::Array(e.args.iter().map(|a| Frame::Bulk(a.clone())).collect()),
                Frame::bulk(e.addr.clone()),
                Frame::Bulk(Bytes::copy_from_slice(&e.name)),
            ])
        })
        .collect();
    Frame::Array(entries)
}

fn slowlog_len(ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::Integer(ctx.srv.slowlog.lock().entries.len() as i64)
}

fn slowlog_reset(ctx: &mut Ctx<'_, '_>) -> Frame {
    ctx.srv.slowlog.lock().entries.clear();
    Frame::ok()
}

fn slowlog_help(_: &mut Ctx<'_, '_>) -> Frame {
    help_reply(
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    )
}

// ---------------------------------------------------------------------------------------------------
// INFO

/// Sections in output order; the bool tells whether the default set includes it.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

fn info(ctx: &mut Ctx<'_, '_>) -> Frame {
    let mut want: Vec<&str> = Vec::new();
    let mut all = false;
    if ctx.argc() == 1 {
        want.extend(SECTIONS.iter().filter(|s| s.1).map(|s| s.0));
    }
    for a in &ctx.args[1..] {
        let a = String::from_utf8_lossy(a).to_ascii_lowercase();
        match a.as_str() {
            "default" => want.extend(SECTIONS.iter().filter(|s| s.1).map(|s| s.0)),
            "all" | "everything" => all = true,
            "module_list" => want.push("modules"),
            s => {
                if let Some((n, _)) = SECTIONS.iter().find(|(n, _)| *n == s) {
                    want.push(n);
                }
            }
        }
    }
    let mut out = String::new();
    for (name, _) in SECTIONS {
        if !(all || want.contains(name)) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        section(ctx, name, &mut out);
    }
    Frame::Verbatim { format: *b"txt", text: Bytes::from(out) }
}

/// Redis's `bytesToHuman`.
pub fn bytes_to_human(n: u64) -> String {
    let d = n as f64;
    const K: f64 = 1024.0;
    if n < 1024 {
        format!("{n}B")
    } else if d < K * K {
        format!("{:.2}K", d / K)
    } else if d < K * K * K {
        format!("{:.2}M", d / (K * K))
    } else if d < K * K * K * K {
        format!("{:.2}G", d / (K * K * K))
    } else if d < K * K * K * K * K {
        format!("{:.2}T", d / (K * K * K * K))
    } else {
        format!("{:.2}P", d / (K * K * K * K * K))
    }
}

/// Keyspace counters gathered in one pass over the shards (O(shards × databases), never O(keys)).
#[derive(Default)]
struct Walk {
    expired: u64,
    hits: u64,
    misses: u64,
    keys: Vec<(u64, u64)>,
}

fn walk(ctx: &mut Ctx<'_, '_>) -> Walk {
    let ndbs = ctx.srv.ks.ndbs();
    let mut w = Walk { keys: vec![(0, 0); ndbs], ..Walk::default() };
    each_shard(ctx, |s| {
        w.hits += s.hits;
        w.misses += s.misses;
        for (i, t) in s.dbs.iter().enumerate() {
            w.expired += t.expired;
            w.keys[i].0 += t.len() as u64;
            w.keys[i].1 += t.volatile_len() as u64;
        }
    });
    w
}

fn section(ctx: &mut Ctx<'_, '_>, name: &str, out: &mut String) {
    let srv = ctx.srv;
    let cfg = &srv.config;
    macro_rules! line {
        ($($arg:tt)*) => {{ let _ = write!(out, $($arg)*); out.push_str("\r\n"); }};
    }
    let now_ms = srv.clock.now_ms();
    let unix_us = srv.clock.now_us() as i64 + srv.clock.wall_offset_ms() * 1000;
    match name {
        "server" => {
            let uptime = now_ms.saturating_sub(srv.started_ms) / 1000;
            line!("# Server");
            line!("redis_version:{}", crate::server::REDIS_VERSION);
            line!("redis_git_sha1:00000000");
            line!("redis_git_dirty:0");
            line!("redis_build_id:0");
            line!("redis_mode:standalone");
            line!("latch_version:{}", crate::server::LATCH_VERSION);
            line!("os:{}", ctx.srv.config.host().os());
            line!("arch_bits:{}", usize::BITS);
            line!("monotonic_clock:POSIX clock_gettime");
            line!("multiplexing_api:{}", if cfg!(target_os = "linux") { "epoll" } else { "kqueue" });
            line!("atomicvar_api:c11-builtin");
            line!("gcc_version:0.0.0");
            line!("process_id:{}", srv.config.host().pid());
            line!("process_supervised:no");
            line!("run_id:{}", srv.run_id);
            line!("tcp_port:{}", srv.tcp_port.load(Ordering::Relaxed));
            line!("server_time_usec:{unix_us}");
            line!("uptime_in_seconds:{uptime}");
            line!("uptime_in_days:{}", uptime / 86400);
            line!("hz:{}", srv.config.hz.load(Ordering::Relaxed));
            line!("configured_hz:{}", srv.config.hz.load(Ordering::Relaxed));
            line!("lru_clock:{}", (unix_us / 1_000_000) & ((1 << 24) - 1));
            let exe = std::env::current_exe().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            line!("executable:{exe}");
            let conf = srv.config_file.lock().as_ref().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            line!("config_file:{conf}");
            line!("io_threads_active:0");
            if let Some(ms) = srv.shutdown_in_ms(srv.clock.now_ms()) {
                line!("shutdown_in_milliseconds:{ms}");
            }
        }
        "clients" => {
            line!("# Clients");
            // Replicas' connections are not counted (Redis: clients minus slaves).
            line!("connected_clients:{}", srv.clients.len().saturating_sub(srv.repl.attached_count()));
            line!("cluster_connections:0");
            line!("maxclients:{}", cfg.maxclients.load(Ordering::Relaxed));
            line!("client_recent_max_input_buffer:0");
            line!("client_recent_max_output_buffer:0");
            line!("blocked_clients:{}", srv.blocked_clients.load(Ordering::Relaxed));
            line!("tracking_clients:{}", srv.tracking.clients.load(Ordering::Relaxed));
            line!("clients_in_timeout_table:0");
        }
        "memory" => {
            let f = super::memory::figures(srv, &mut |visit| each_shard(ctx, visit));
            let (used, peak, rss) = (f.used, f.peak, f.rss);
            let total = ctx.srv.config.host().total_memory_bytes();
            let maxmemory = cfg.maxmemory.load(Ordering::Relaxed);
            let pct = |a: u64, b: u64| {
                if b == 0 { 0.0 } else { a as f64 * 100.0 / b as f64 }
            };
            line!("# Memory");
            line!("used_memory:{used}");
            line!("used_memory_human:{}", bytes_to_human(used));
            line!("used_memory_rss:{rss}");
            line!("used_memory_rss_human:{}", bytes_to_human(rss));
            line!("used_memory_peak:{peak}");
            line!("used_memory_peak_human:{}", bytes_to_human(peak));
            line!("used_memory_peak_perc:{:.2}%", pct(used, peak));
            line!("used_memory_overhead:{}", f.overhead);
            line!("used_memory_startup:{}", f.startup);
            line!("used_memory_dataset:{}", f.dataset);
            line!("used_memory_dataset_perc:{:.2}%", pct(f.dataset, used.saturating_sub(f.startup)));
            line!("allocator_allocated:{}", f.allocator.allocated);
            line!("allocator_active:{}", f.allocator.active);
            line!("allocator_resident:{}", f.allocator.resident);
            line!("total_system_memory:{total}");
            line!("total_system_memory_human:{}", bytes_to_human(total));
            let lua = ctx.srv.scripting.memory_info();
            line!("used_memory_lua:{}", lua.vm_bytes);
            line!("used_memory_vm_eval:{}", lua.vm_bytes);
            line!("used_memory_lua_human:{}", bytes_to_human(lua.vm_bytes));
            line!("used_memory_scripts_eval:{}", lua.script_bytes);
            line!("number_of_cached_scripts:{}", lua.scripts);
            line!("number_of_functions:{}", lua.functions);
            line!("number_of_libraries:{}", lua.libraries);
            line!("used_memory_vm_functions:0");
            line!("used_memory_vm_total:{}", lua.vm_bytes);
            line!("used_memory_vm_total_human:{}", bytes_to_human(lua.vm_bytes));
            line!("used_memory_functions:{}", lua.library_bytes);
            line!("used_memory_scripts:{}", lua.script_bytes + lua.library_bytes);
            line!("used_memory_scripts_human:{}", bytes_to_human(lua.script_bytes + lua.library_bytes));
            line!("maxmemory:{maxmemory}");
            line!("maxmemory_human:{}", bytes_to_human(maxmemory));
            line!("maxmemory_policy:{}", cfg.get("maxmemory-policy").unwrap_or_default());
            let (frag, frag_bytes) = f.allocator_frag();
            line!("allocator_frag_ratio:{frag:.2}");
            line!("allocator_frag_bytes:{frag_bytes}");
            let (alloc_rss, alloc_rss_bytes) = f.allocator_rss();
            line!("allocator_rss_ratio:{alloc_rss:.2}");
            line!("allocator_rss_bytes:{alloc_rss_bytes}");
            let (rss_extra, rss_extra_bytes) = f.rss_overhead();
            line!("rss_overhead_ratio:{rss_extra:.2}");
            line!("rss_overhead_bytes:{rss_extra_bytes}");
            let (total_frag, total_frag_bytes) = f.total_frag();
            line!("mem_fragmentation_ratio:{total_frag:.2}");
            line!("mem_fragmentation_bytes:{total_frag_bytes}");
            line!("mem_not_counted_for_evict:{}", f.not_counted);
            line!("mem_replication_backlog:{}", f.repl.backlog);
            line!("mem_total_replication_buffers:{}", f.repl.total);
            line!("mem_clients_slaves:{}", f.repl.replicas);
            line!("mem_clients_normal:{}", f.clients);
            line!("mem_cluster_links:0");
            line!("mem_aof_buffer:{}", f.aof_buffer);
            line!("mem_allocator:{}", cfg.host().allocator());
            line!("active_defrag_running:0");
            line!("lazyfree_pending_objects:{}", srv.lazyfree.pending.load(Ordering::Relaxed));
            line!("lazyfreed_objects:{}", srv.lazyfree.freed.load(Ordering::Relaxed));
        }
        "persistence" => {
            let aof = cfg.get("appendonly").as_deref() == Some("yes");
            line!("# Persistence");
            line!("loading:{}", ctx.srv.loading.load(Ordering::Relaxed) as u8);
            line!("async_loading:{}", ctx.srv.async_loading.load(Ordering::Relaxed) as u8);
            let p = &srv.persistence;
            // A replica's full sync is a background save too, as Redis's fork for it is.
            let running = p.bgsave_in_progress.load(Ordering::SeqCst) || p.repl_snapshot.load(Ordering::SeqCst);
            // A snapshot's progress while a background save or rewrite runs (Redis: while a child
            // runs); what stands for copy-on-write is what it wrote ahead of its walk.
            let (mut copied, mut done, mut total) = (0, 0, 0);
            if (running || p.aof_rewrite_in_progress.load(Ordering::Relaxed))
                && let Some(g) = p.progress.lock().as_ref()
            {
                copied = g.copied_bytes.load(Ordering::Relaxed);
                done = g.keys_written.load(Ordering::Relaxed);
                total = g.keys_total.load(Ordering::Relaxed);
            }
            line!("current_cow_peak:{copied}");
            line!("current_cow_size:{copied}");
            line!("current_cow_size_age:0");
            line!("current_fork_perc:{:.2}", if total > 0 { done as f64 * 100.0 / total as f64 } else { 0.0 });
            line!("current_save_keys_processed:{done}");
            line!("current_save_keys_total:{total}");
            let unix_s = srv.clock.unix_ms() / 1000;
            line!("rdb_changes_since_last_save:{}", srv.changes_since_save());
            line!("rdb_bgsave_in_progress:{}", running as u8);
            line!("rdb_last_save_time:{}", p.lastsave.load(Ordering::Relaxed));
            line!("rdb_last_bgsave_status:{}", if p.last_bgsave_failed.load(Ordering::Relaxed) { "err" } else { "ok" });
            line!("rdb_last_bgsave_time_sec:{}", p.last_bgsave_secs.load(Ordering::Relaxed));
            line!(
                "rdb_current_bgsave_time_sec:{}",
                if running { unix_s - p.bgsave_started.load(Ordering::Relaxed) } else { -1 }
            );
            line!("rdb_saves:{}", p.saves.load(Ordering::Relaxed));
            line!("rdb_last_cow_size:{}", p.last_cow_bytes.load(Ordering::Relaxed));
            line!("rdb_last_load_keys_expired:{}", p.last_load_expired.load(Ordering::Relaxed));
            line!("rdb_last_load_keys_loaded:{}", p.last_load_keys.load(Ordering::Relaxed));
            line!("aof_enabled:{}", (aof && srv.changes.aof_on()) as u8);
            line!("aof_rewrite_in_progress:{}", p.aof_rewrite_in_progress.load(Ordering::Relaxed) as u8);
            let scheduled =
                p.aof_rewrite_requested.load(Ordering::Relaxed) && !p.aof_rewrite_in_progress.load(Ordering::Relaxed);
            line!("aof_rewrite_scheduled:{}", scheduled as u8);
            line!("aof_last_rewrite_time_sec:-1");
            line!("aof_current_rewrite_time_sec:-1");
            line!("aof_last_bgrewrite_status:ok");
            line!("aof_rewrites:{}", p.aof_rewrites.load(Ordering::Relaxed));
            line!("aof_last_write_status:{}", if p.aof_write_failed.load(Ordering::Relaxed) { "err" } else { "ok" });
            line!("module_fork_in_progress:0");
        }
        "stats" => {
            let w = walk(ctx);
            let st = &srv.stats;
            line!("# Stats");
            line!("total_connections_received:{}", srv.clients.total_connections.load(Ordering::Relaxed));
            line!("total_commands_processed:{}", st.commands());
            line!("instantaneous_ops_per_sec:0");
            line!("total_net_input_bytes:{}", st.net_input_bytes());
            line!("total_net_output_bytes:{}", st.net_output_bytes());
            line!("total_net_repl_input_bytes:0");
            line!("total_net_repl_output_bytes:0");
            line!("instantaneous_input_kbps:0.00");
            line!("instantaneous_output_kbps:0.00");
            line!("rejected_connections:{}", srv.clients.rejected_connections.load(Ordering::Relaxed));
            line!("sync_full:{}", srv.repl.sync_full.load(Ordering::Relaxed));
            line!("sync_partial_ok:{}", srv.repl.sync_partial_ok.load(Ordering::Relaxed));
            line!("sync_partial_err:{}", srv.repl.sync_partial_err.load(Ordering::Relaxed));
            line!("expired_keys:{}", w.expired);
            line!("expired_stale_perc:0.00");
            line!("expired_time_cap_reached_count:0");
            line!("evicted_keys:{}", srv.evictor.evicted_keys.load(Ordering::Relaxed));
            line!("evicted_clients:{}", srv.clients.evicted_clients.load(Ordering::Relaxed));
            let (total_ms, current_ms) = srv.evictor.exceeded_ms(srv.clock.ticks_us());
            line!("total_eviction_exceeded_time:{total_ms}");
            line!("current_eviction_exceeded_time:{current_ms}");
            line!("keyspace_hits:{}", w.hits);
            line!("keyspace_misses:{}", w.misses);
            line!("pubsub_channels:{}", srv.pubsub.len(crate::pubsub::Kind::Channel));
            line!("pubsub_patterns:{}", srv.pubsub.len(crate::pubsub::Kind::Pattern));
            line!("pubsubshard_channels:{}", srv.pubsub.len(crate::pubsub::Kind::Shard));
            line!("latest_fork_usec:0");
            // Latch does not fork: its stand-in is the background snapshot (BGSAVE, AOF rewrite,
            // a replica's full sync), counted here as Redis counts its forks.
            line!("total_forks:{}", srv.persistence.snapshots.load(Ordering::Relaxed));
            line!("migrate_cached_sockets:{}", srv.migrate_sockets.len());
            let (keys, items, prefixes) = srv.tracking_totals();
            line!("tracking_total_keys:{keys}");
            line!("tracking_total_items:{items}");
            line!("tracking_total_prefixes:{prefixes}");
            line!("unexpected_error_replies:0");
            line!("total_error_replies:{}", st.error_replies.load(Ordering::Relaxed));
            line!("dump_payload_sanitizations:0");
            line!("total_reads_processed:0");
            line!("total_writes_processed:0");
            line!("io_threaded_reads_processed:0");
            line!("io_threaded_writes_processed:0");
            // Redis 7.2's ACL counters (7.0 has none; clients that look for them find them).
            line!("acl_access_denied_auth:{}", srv.acl.denied_auth.load(Ordering::Relaxed));
            line!("acl_access_denied_cmd:{}", srv.acl.denied_cmd.load(Ordering::Relaxed));
            line!("acl_access_denied_key:{}", srv.acl.denied_key.load(Ordering::Relaxed));
            line!("acl_access_denied_channel:{}", srv.acl.denied_channel.load(Ordering::Relaxed));
        }
        "replication" => {
            line!("# Replication");
            for l in srv.info_replication(ctx.now) {
                line!("{l}");
            }
        }
        "cpu" => {
            let (user, sys) = ctx.srv.config.host().cpu_seconds();
            line!("# CPU");
            line!("used_cpu_sys:{sys:.6}");
            line!("used_cpu_user:{user:.6}");
            line!("used_cpu_sys_children:0.000000");
            line!("used_cpu_user_children:0.000000");
        }
        "modules" => line!("# Modules"),
        "commandstats" => {
            line!("# Commandstats");
            for c in srv.table.all() {
                for cmd in std::iter::once(*c).chain(c.subcommands.iter()) {
                    let Some(s) = srv.stats.cmd(cmd) else {
                        continue;
                    };
                    let crate::stats::CmdStats { calls, usec, rejected: rej, failed: fail } = s;
                    if calls == 0 && rej == 0 && fail == 0 {
                        continue;
                    }
                    let per = if calls == 0 { 0.0 } else { usec as f64 / calls as f64 };
                    line!(
                        "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per:.2},rejected_calls={rej},failed_calls={fail}",
                        cmd.name
                    );
                }
            }
        }
        "errorstats" => {
            line!("# Errorstats");
            for (k, v) in srv.stats.errors.lock().iter() {
                line!("errorstat_{k}:count={v}");
            }
        }
        "latencystats" => {
            line!("# Latencystats");
            if srv.config.latency_tracking.load(Ordering::Relaxed) {
                // The configured percentiles, as CONFIG GET prints them ("50 99 99.9").
                let pcts = srv.config.get("latency-tracking-info-percentiles").unwrap_or_default();
                let pcts: Vec<(&str, f64)> =
                    pcts.split_whitespace().filter_map(|p| p.parse().ok().map(|v| (p, v))).collect();
                for c in srv.table.all() {
                    for cmd in std::iter::once(*c).chain(c.subcommands.iter()) {
                        let Some(counts) = srv.stats.latency(cmd) else { continue };
                        let parts: Vec<String> = pcts
                            .iter()
                            .map(|(name, p)| {
                                let us = crate::latency::value_at_percentile(&counts, *p);
                                format!("p{name}={:.3}", us as f64)
                            })
                            .collect();
                        line!("latency_percentiles_usec_{}:{}", cmd.name, parts.join(","));
                    }
                }
            }
        }
        "cluster" => {
            line!("# Cluster");
            line!("cluster_enabled:0");
        }
        "keyspace" => {
            let w = walk(ctx);
            line!("# Keyspace");
            for (i, (keys, expires)) in w.keys.iter().enumerate() {
                if *keys > 0 || *expires > 0 {
                    line!("db{i}:keys={keys},expires={expires},avg_ttl=0");
                }
            }
        }
        _ => {}
    }
}

/// LOLWUT [VERSION v [argument ...]]: computer art for versions 5 and 6 (see `cmd/lolwut.rs`,
/// each with its own integer arguments), Redis's version line for any other.
fn lolwut(ctx: &mut Ctx<'_, '_>) -> Frame {
    let mut version = crate::version::REDIS_VERSION.split('.').next().and_then(|m| m.parse::<i64>().ok()).unwrap_or(7);
    let mut first = 1;
    if ctx.argc() >= 3 && ctx.arg(1).eq_ignore_ascii_case(b"version") {
        let Some(v) = crate::args::parse_i64_strict(ctx.arg(2)) else { return crate::error::not_integer() };
        version = v;
        first = 3;
    }
    // Redis formats the version as an unsigned int: -1 is no version 5 or 6.
    let art = |defaults: &[i64]| -> Result<Vec<i64>, Frame> {
        let mut v = defaults.to_vec();
        for (i, slot) in v.iter_mut().enumerate() {
            if first + i < ctx.argc() {
                *slot = crate::args::parse_i64_strict(ctx.arg(first + i)).ok_or_else(crate::error::not_integer)?;
            }
        }
        Ok(v)
    };
    let text = match version as u32 {
        5 => match art(&[66, 8, 12]) {
            Ok(a) => super::lolwut::schotter(a[0], a[1], a[2]),
            Err(e) => return e,
        },
        6 => match art(&[80, 20]) {
            Ok(a) => super::lolwut::skyline(a[0], a[1]),
            Err(e) => return e,
        },
        _ => format!("Redis ver. {}\n", crate::version::REDIS_VERSION),
    };
    Frame::Verbatim { format: *b"txt", text: bytes::Bytes::from(text) }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::testkit::TestServer;
    use resp::Frame;
    use std::sync::atomic::Ordering;

    fn info_text(c: &mut crate::testkit::TestClient, args: &[&str]) -> String {
        let mut v = vec!["INFO"];
        v.extend_from_slice(args);
        match c.cmd(&v) {
            Some(Frame::Verbatim { format, text }) => {
                assert_eq!(&format, b"txt");
                String::from_utf8(text.to_vec()).unwrap()
            }
            other => panic!("{other:?}"),
        }
    }

    fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
        info.split("\r\n").find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
    }

    #[test]
    fn config_slowlog_hot_values_and_help() {
        let ts = TestServer::new();
        let mut c = ts.client();
        assert_eq!(c.run("CONFIG SET slowlog-log-slower-than 0 slowlog-max-len 2"), "+OK");
        assert_eq!(ts.srv.config.slowlog_max_len.load(std::sync::atomic::Ordering::Relaxed), 2);
        let help = c.run("CONFIG HELP");
        assert!(help.starts_with("[+CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:, +GET <pattern>,"));
        assert!(help.ends_with("+REWRITE, +    Rewrite the configuration file., +HELP, +    Prints this help.]"));
        // RESP3: map; RESP2: flat array (the encoder flattens Frame::Map).
        assert_eq!(c.run("CONFIG GET hz"), "{\"hz\": \"10\"}");
    }

    #[test]
    fn config_rewrite_writes_the_file() {
        let host = std::sync::Arc::new(crate::host::MemoryHost::default());
        let config = Config::with_host(host.clone());
        config.set("shards", "4", true).unwrap();
        let ts = TestServer::with_config(config);
        let path = std::path::PathBuf::from("/etc/latch/latch.conf");
        host.put(path.clone(), "# my conf\nhz 10\nfoo-unknown bar\n");
        *ts.srv.config_file.lock() = Some(path.clone());
        let mut c = ts.client();
        assert_eq!(c.run("CONFIG SET hz 33 maxmemory 100"), "+OK");
        assert_eq!(c.run("CONFIG REWRITE"), "+OK");
        let text = host.get(&path).unwrap();
        // The ACL users are written too, the default one included, as Redis writes them.
        assert_eq!(
            text,
            "# my conf\nhz 33\nfoo-unknown bar\n# Generated by CONFIG REWRITE\nshards 4\nmaxmemory 100\nuser default on nopass ~* &* +@all\n"
        );
    }

    #[test]
    fn total_commands_processed_counts_what_ran() {
        // Values from Redis 7.0.15: commands count once they ran, those run by EXEC and scripts
        // included; rejected, unknown and queued ones do not, nor does INFO itself.
        let ts = TestServer::new();
        let mut c = ts.client();
        let total = |c: &mut crate::testkit::TestClient| {
            field(&info_text(c, &["stats"]), "total_commands_processed").map(str::to_string)
        };
        for (script, expected) in [
            (&["MULTI", "SET a 1", "GET a", "EXEC"][..], "5"),
            (&["EVAL \"redis.call('set','a','1'); return redis.call('get','a')\" 0"][..], "4"),
            (&["NOSUCH", "GET", "MULTI", "SET a", "EXEC"][..], "3"),
            (&["MULTI", "SET a 1", "DISCARD"][..], "3"),
        ] {
            assert_eq!(c.run("CONFIG RESETSTAT"), "+OK");
            for line in script {
                c.run(line);
            }
            assert_eq!(total(&mut c).as_deref(), Some(expected), "{script:?}");
        }
        // INFO itself counted once it ran.
        assert_eq!(total(&mut c).as_deref(), Some("4"));
    }

    /// While data loads, `dir` (when protected configs may change), `appendonly` and
    /// `repl-diskless-load` answer -LOADING, before other errors; other parameters can change.
    #[test]
    fn config_set_while_loading() {
        let ts = TestServer::new();
        let mut c = ts.client();
        ts.srv.loading.store(true, Ordering::SeqCst);
        c.transcript(
            r#"
            > CONFIG SET loglevel debug
            +OK
            > CONFIG SET dir asdf
            -ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config
            > CONFIG SET hz 20 appendonly yes
            -LOADING Redis is loading the dataset in memory
            "#,
        );
        ts.srv.loading.store(false, Ordering::SeqCst);
        c.transcript("> CONFIG SET hz 20 appendonly no\n+OK");
    }

    #[test]
    fn lolwut_answers_redis_version_line() {
        let ts = TestServer::new();
        let mut c = ts.client();
        assert_eq!(c.run("LOLWUT"), format!("\"Redis ver. {}\\n\"", crate::version::REDIS_VERSION));
        assert_eq!(c.run("LOLWUT VERSION 7"), c.run("LOLWUT"));
        assert!(c.run("LOLWUT VERSION x").contains("value is not an integer"), "{}", c.run("LOLWUT VERSION x"));
        // Versions 5 and 6 draw, with their own integer arguments.
        assert!(
            c.run("LOLWUT VERSION 5 10 2 2").contains("Georg Nees - schotter, plotter on paper, 1968. Redis ver. ")
        );
        assert!(
            c.run("LOLWUT VERSION 6 4 3").contains("Original 8 bit image from Plaguemon by hikikomori. Redis ver. ")
        );
        assert!(c.run("LOLWUT VERSION 6 4 x").contains("value is not an integer"));
        // -1 is not version 5 or 6 for Redis (an unsigned 4294967295).
        assert_eq!(c.run("LOLWUT VERSION -1"), c.run("LOLWUT"));
    }

    #[test]
    fn config_resetstat_clears_counters_not_slowlog() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("CONFIG SET slowlog-log-slower-than 0");
        c.run("SET k v");
        c.run("GET k");
        c.run("GET nokey");
        c.run("NOSUCHCMD");
        let info = info_text(&mut c, &["stats"]);
        assert_eq!(field(&info, "keyspace_hits"), Some("1"));
        assert_eq!(field(&info, "keyspace_misses"), Some("1"));
        assert_eq!(field(&info, "total_error_replies"), Some("1"));
        assert_eq!(c.run("CONFIG RESETSTAT"), "+OK");
        let info = info_text(&mut c, &["stats", "commandstats", "errorstats"]);
        assert_eq!(field(&info, "keyspace_hits"), Some("0"));
        assert_eq!(field(&info, "total_error_replies"), Some("0"));
        assert!(!info.contains("cmdstat_get"), "{info}");
        assert!(!info.contains("errorstat_ERR"), "{info}");
        assert_ne!(c.run("SLOWLOG LEN"), ":0");
    }

    #[test]
    fn info_sections_and_fields() {
        let (ts, host) = TestServer::with_host();
        host.used.store(1_500_000, Ordering::Relaxed);
        let mut c = ts.client();
        c.run("SET a 1");
        c.run("SET b 2");
        c.run("GET a");
        c.run("CONFIG GET hz");
        c.run("GET");
        let all = info_text(&mut c, &[]);
        for s in [
            "# Server\r\n",
            "# Clients\r\n",
            "# Memory\r\n",
            "# Persistence\r\n",
            "# Stats\r\n",
            "# Replication\r\n",
            "# CPU\r\n",
            "# Modules\r\n",
            "# Errorstats\r\n",
            "# Cluster\r\n",
            "# Keyspace\r\n",
        ] {
            assert!(all.contains(s), "missing {s:?}");
        }
        assert!(!all.contains("# Commandstats"));
        assert!(all.starts_with("# Server\r\nredis_version:7.0.15\r\n"));
        assert!(all.ends_with("\r\n"));
        assert_eq!(field(&all, "redis_mode"), Some("standalone"));
        assert_eq!(field(&all, "connected_clients"), Some("1"));
        assert_eq!(field(&all, "role"), Some("master"));
        assert_eq!(field(&all, "db0"), Some("keys=2,expires=0,avg_ttl=0"));
        assert_eq!(field(&all, "errorstat_ERR"), Some("count=1"));
        assert_eq!(field(&all, "maxmemory_policy"), Some("noeviction"));
        assert_eq!(field(&all, "used_memory"), Some("1500000"));
        assert_eq!(field(&all, "used_memory_human"), Some("1.43M"));
        host.used.store(1_000_000, Ordering::Relaxed);
        let mem = info_text(&mut c, &["memory"]);
        assert_eq!(field(&mem, "used_memory_peak"), Some("1500000"));
        assert_eq!(field(&mem, "used_memory_peak_perc"), Some("66.67%"));
        assert_eq!(field(&all, "run_id"), Some(ts.srv.run_id.as_str()));
        assert_eq!(field(&all, "uptime_in_seconds"), Some("0"));
        ts.clock.advance_ms(90_000);
        let server = info_text(&mut c, &["SERVER"]);
        assert!(server.starts_with("# Server\r\n") && !server.contains("# Clients"));
        assert_eq!(field(&server, "uptime_in_seconds"), Some("90"));
        let cs = info_text(&mut c, &["commandstats"]);
        assert!(
            cs.contains("\r\ncmdstat_config|get:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n"),
            "{cs}"
        );
        assert!(cs.contains("cmdstat_get:calls=1,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0"), "{cs}");
        let two = info_text(&mut c, &["clients", "keyspace"]);
        assert!(two.starts_with("# Clients\r\n") && two.contains("\r\n\r\n# Keyspace\r\ndb0:keys=2"), "{two}");
        let every = info_text(&mut c, &["everything"]);
        assert!(every.contains("# Commandstats") && every.contains("# Errorstats"));
        assert_eq!(info_text(&mut c, &["nosuchsection"]), "");
        c.client.proto = resp::Protocol::Resp3;
    }

    #[test]
    fn time_lastsave_shutdown_debug() {
        let config = Config::new();
        config.set("shards", "4", true).unwrap();
        config.set("enable-debug-command", "yes", true).unwrap();
        let ts = TestServer::with_config(config);
        let mut c = ts.client();
        assert_eq!(c.run("TIME"), "[\"1700000000\", \"0\"]");
        ts.clock.advance_ms(1500);
        assert_eq!(c.run("TIME"), "[\"1700000001\", \"500000\"]");
        assert_eq!(c.run("LASTSAVE"), ":1700000000");
        c.transcript(
            r#"
            > TIME x
            -ERR wrong number of arguments for 'time' command
            > SHUTDOWN ABORT
            -ERR No shutdown in progress.
            > SHUTDOWN foo
            -ERR syntax error
            > SHUTDOWN nosave save
            -ERR syntax error
            > SHUTDOWN abort now
            -ERR syntax error
            > DEBUG SLEEP 0
            +OK
            > DEBUG FOO
            -ERR unknown subcommand or wrong number of arguments for 'FOO'. Try DEBUG HELP.
            > SHUTDOWN NOSAVE NOW FORCE
            (no reply)
            "#,
        );
        assert!(c.client.close_after_reply);
        // DEBUG's own tests (refusal when not enabled...) are in cmd/debug.rs.
    }

    #[test]
    fn slowlog_transcript() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > SLOWLOG LEN
            :0
            > CONFIG SET slowlog-log-slower-than 0
            +OK
            > SLOWLOG GET -2
            -ERR count should be greater than or equal to -1
            > SLOWLOG GET abc
            -ERR count should be greater than or equal to -1
            > SLOWLOG GET 1 2
            -ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP.
            > SLOWLOG RESET
            +OK
            > SET foo bar
            +OK
            > SLOWLOG GET 1
            [[:5, :1700000000, :0, ["SET", "foo", "bar"], "127.0.0.1:50000", ""]]
            > SLOWLOG GET 0
            []
            > SLOWLOG LEN
            :4
            > SLOWLOG RESET x
            -ERR wrong number of arguments for 'slowlog|reset' command
            "#,
        );
        match c.cmd(&["SLOWLOG", "GET", "-1"]) {
            Some(Frame::Array(v)) => assert_eq!(v.len(), 5),
            other => panic!("{other:?}"),
        }
        match c.cmd(&["SLOWLOG", "GET"]) {
            Some(Frame::Array(v)) => assert_eq!(v.len(), 6),
            other => panic!("{other:?}"),
        }
        let help = c.run("SLOWLOG HELP");
        assert!(
            help.starts_with("[+SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:, +GET [<count>],")
        );
    }

    #[test]
    fn human_bytes() {
        assert_eq!(super::bytes_to_human(0), "0B");
        assert_eq!(super::bytes_to_human(1023), "1023B");
        assert_eq!(super::bytes_to_human(1237248), "1.18M");
        assert_eq!(super::bytes_to_human(25274793984), "23.54G");
    }
}
