//! Scripting and functions: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT *, FCALL, FCALL_RO,
//! FUNCTION *. The Lua engine lives in [`crate::lua`].
//!
//! A script runs holding the shards of the keys it declares (every shard when it declares none), on a
//! free VM of the pool (scripts on different keys run in parallel). Scripts are atomic for the keys
//! they touch: a key the script did not declare is taken on the fly (see `lua::ensure_shards`); when
//! that would mean waiting out of lock order, a run that has written nothing starts over holding
//! every shard, and later runs of that script lock every shard up front. Only a run that already
//! wrote and then finds an undeclared key held by another client for 50 ms fails the call, instead
//! of risking a lock-order deadlock.
//! Commands that change the script cache or the libraries (SCRIPT FLUSH, FUNCTION LOAD...) lock every
//! shard; the VMs catch up lazily (generation counters, see `crate::lua`).

use super::base::BASE;
use super::server::{help_reply, subcommand_syntax_error};
use crate::args::eq_ic;
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx, container_handler};
use crate::host::LogLevel;
use crate::lua::{Callable, FLAG_NAMES, RunArgs};
use crate::server::scripting::ScriptRun;
use bytes::Bytes;
use resp::Frame;
use std::sync::atomic::Ordering;

const RUN: Flags =
    Flags::NOSCRIPT.or(Flags::SKIP_MONITOR).or(Flags::MAY_REPLICATE).or(Flags::NO_MANDATORY_KEYS).or(Flags::STALE);
const RUN_RO: Flags =
    Flags::NOSCRIPT.or(Flags::SKIP_MONITOR).or(Flags::NO_MANDATORY_KEYS).or(Flags::STALE).or(Flags::READONLY);

/// A script that declares no key may touch any: it runs holding every shard.
fn declares_no_key(args: &[Bytes]) -> bool {
    numkeys_keys(args).is_empty()
}

/// Keys of EVAL/FCALL: `numkeys` at position 2, keys after it.
fn numkeys_keys(args: &[Bytes]) -> Vec<usize> {
    let Some(n) = args.get(2).and_then(|a| crate::args::parse_i64_strict(a)) else { return Vec::new() };
    if n <= 0 || n as usize > args.len().saturating_sub(3) {
        return Vec::new();
    }
    (3..3 + n as usize).collect()
}

const KEYS: Keys = Keys::Custom { first: 0, last: 0, step: 0, find: numkeys_keys };

macro_rules! run_cmd {
    ($name:literal, $flags:expr, $handler:ident) => {
        Command {
            name: $name,
            arity: -3,
            flags: $flags,
            keys: KEYS,
            all_shards_if: Some(declares_no_key),
            group: crate::command::Group::Scripting,
            handler: $handler,
            ..BASE
        }
    };
}

static SCRIPT_SUBCOMMANDS: &[Command] = &[
    Command {
        name: "script|debug",
        arity: 3,
        flags: Flags::NOSCRIPT,
        group: crate::command::Group::Scripting,
        handler: script_debug,
        ..BASE
    },
    Command {
        name: "script|exists",
        arity: -3,
        flags: Flags::NOSCRIPT,
        group: crate::command::Group::Scripting,
        handler: script_exists,
        ..BASE
    },
    Command {
        name: "script|flush",
        arity: -2,
        flags: Flags::NOSCRIPT.or(Flags::ALL_SHARDS),
        group: crate::command::Group::Scripting,
        handler: script_flush,
        ..BASE
    },
    Command {
        name: "script|help",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE),
        group: crate::command::Group::Scripting,
        handler: script_help,
        ..BASE
    },
    Command {
        name: "script|kill",
        arity: 2,
        flags: Flags::NOSCRIPT.or(Flags::ALLOW_BUSY),
        group: crate::command::Group::Scripting,
        handler: script_kill,
        ..BASE
    },
    Command {
        name: "script|load",
        arity: 3,
        flags: Flags::NOSCRIPT.or(Flags::STALE).or(Flags::ALL_SHARDS),
        group: crate::command::Group::Scripting,
        handler: script_load,
        ..BASE
    },
];

static FUNCTION_SUBCOMMANDS: &[Command] = &[
    Command {
        name: "function|delete",
        arity: 3,
        flags: Flags::NOSCRIPT.or(Flags::WRITE).or(Flags::ALL_SHARDS),
        group: crate::command::Group::Scripting,
        handler: function_delete,
        ..BASE
    },
    Command {
        name: "function|dump",
        arity: 2,
        flags: Flags::NOSCRIPT,
        group: crate::command::Group::Scripting,
        handler: function_dump,
        ..BASE
    },
    Command {
        name: "function|flush",
        arity: -2,
        flags: Flags::NOSCRIPT.or(Flags::WRITE).or(Flags::ALL_SHARDS),
        group: crate::command::Group::Scripting,
        handler: function_flush,
        ..BASE
    },
    Command {
        name: "function|help",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE),
        group: crate::command::Group::Scripting,
        handler: function_help,
        ..BASE
    },
    Command {
        name: "function|kill",
        arity: 2,
        flags: Flags::NOSCRIPT.or(Flags::ALLOW_BUSY),
        group: crate::command::Group::Scripting,
        handler: function_kill,
        ..BASE
    },
    Command {
        name: "function|list",
        arity: -2,
        flags: Flags::NOSCRIPT,
        group: crate::command::Group::Scripting,
        handler: function_list,
        ..BASE
    },
    Command {
        name: "function|load",
        arity: -3,
        flags: Flags::NOSCRIPT.or(Flags::WRITE).or(Flags::DENYOOM).or(Flags::ALL_SHARDS),
        group: crate::command::Group::Scripting,
        handler: function_load,
        ..BASE
    },
    Command {
        name: "function|restore",
        arity: -3,
        flags: Flags::NOSCRIPT.or(Flags::WRITE).or(Flags::DENYOOM).or(Flags::ALL_SHARDS),
        group: crate::command::Group::Scripting,
        handler: function_restore,
        ..BASE
    },
    Command {
        name: "function|stats",
        arity: 2,
        flags: Flags::NOSCRIPT.or(Flags::ALLOW_BUSY),
        group: crate::command::Group::Scripting,
        handler: function_stats,
        ..BASE
    },
];

/// Table entries.
pub static COMMANDS: &[Command] = &[
    run_cmd!("eval", RUN, eval),
    run_cmd!("evalsha", RUN, eval),
    run_cmd!("eval_ro", RUN_RO, eval),
    run_cmd!("evalsha_ro", RUN_RO, eval),
    run_cmd!("fcall", RUN, fcall),
    run_cmd!("fcall_ro", RUN_RO, fcall),
    Command {
        name: "script",
        arity: -2,
        group: crate::command::Group::Scripting,
        handler: container_handler,
        subcommands: SCRIPT_SUBCOMMANDS,
        ..BASE
    },
    Command {
        name: "function",
        arity: -2,
        group: crate::command::Group::Scripting,
        handler: container_handler,
        subcommands: FUNCTION_SUBCOMMANDS,
        ..BASE
    },
];

/// Parses numkeys; returns the KEYS and ARGV slices.
fn split_keys<'a>(ctx: &Ctx<'a, '_>, bad_num: &str) -> Result<(&'a [Bytes], &'a [Bytes]), Frame> {
    let n = crate::args::parse_i64_strict(ctx.arg(2)).ok_or_else(|| Frame::error(bad_num.to_string()))?;
    let rest = ctx.argc() as i64 - 3;
    if n > rest {
        return Err(Frame::error("ERR Number of keys can't be greater than number of args"));
    }
    if n < 0 {
        return Err(Frame::error("ERR Number of keys can't be negative"));
    }
    let args = ctx.args;
    Ok((&args[3..3 + n as usize], &args[3 + n as usize..]))
}

fn eval(ctx: &mut Ctx<'_, '_>) -> Frame {
    ctx.srv.feed_monitors(ctx.client, ctx.args);
    let name = ctx.cmd.name;
    let evalsha = name.starts_with("evalsha");
    let ro = name.ends_with("_ro");
    // Under the debugger only EVAL runs: the source is what the debugger lists (Redis's reply).
    if evalsha && ctx.client.ldb_sync {
        return Frame::error("NOSCRIPT No matching script. Please use EVAL.");
    }
    let (keys, argv) = match split_keys(ctx, "ERR value is not an integer or out of range") {
        Ok(x) => x,
        Err(e) => return e,
    };
    let srv = ctx.srv;
    let sc = &srv.scripting;
    let created;
    let mut lower = [0u8; 40];
    let sha: &str = if evalsha {
        let s = ctx.arg(1);
        if s.len() != 40 {
            return Frame::error("NOSCRIPT No matching script. Please use EVAL.");
        }
        lower.copy_from_slice(s);
        lower.make_ascii_lowercase();
        match std::str::from_utf8(&lower) {
            Ok(s) => s,
            Err(_) => return Frame::error("NOSCRIPT No matching script. Please use EVAL."),
        }
    } else {
        created = match sc.create_script(&ctx.args[1]) {
            Ok(s) => s,
            Err(e) => return e,
        };
        &created
    };
    let debug = ctx.client.ldb_link.take();
    let debugging = debug.is_some();
    if debugging {
        srv.config.host().log(LogLevel::Warning, "Redis synchronous debugging eval session started");
    }
    // The script's flags decide `read_only` (see `lua::eval_policy`), once a VM has it.
    let mut host = ScriptRun::new(srv, ctx.client, ctx.locked, ctx.now, ctx.cmd);
    let a = RunArgs { host: &mut host, keys, argv, read_only: ro, allow_oom: false, command: ctx.args, debug };
    let reply = sc.run(Callable::Eval { sha, ro }, a);
    if debugging {
        srv.config.host().log(LogLevel::Warning, "Redis synchronous debugging eval session ended");
        // The connection closes after the reply: the end of the session for the client.
        ctx.client.close_after_reply = true;
    }
    reply
}

fn fcall(ctx: &mut Ctx<'_, '_>) -> Frame {
    ctx.srv.feed_monitors(ctx.client, ctx.args);
    let ro = ctx.cmd.name == "fcall_ro";
    let srv = ctx.srv;
    // Function names are case-insensitive: run it under its registered name.
    let Some((fname, flags)) = srv.scripting.function(&String::from_utf8_lossy(ctx.arg(1))) else {
        return Frame::error("ERR Function not found");
    };
    let (keys, argv) = match split_keys(ctx, "ERR Bad number of keys provided") {
        Ok(x) => x,
        Err(e) => return e,
    };
    let read_only = match crate::lua::eval_policy(flags, ro, srv.writes_need_replicas(), ctx.client.oom) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let mut host = ScriptRun::new(srv, ctx.client, ctx.locked, ctx.now, ctx.cmd);
    let a = RunArgs {
        host: &mut host,
        keys,
        argv,
        read_only,
        allow_oom: crate::lua::flags_allow_oom(flags),
        command: ctx.args,
        debug: None,
    };
    srv.scripting.run(Callable::Function(&fname), a)
}

fn script_debug(ctx: &mut Ctx<'_, '_>) -> Frame {
    let a = ctx.arg(2);
    if eq_ic(a, "no") {
        ctx.client.ldb_sync = false;
        Frame::ok()
    } else if eq_ic(a, "sync") {
        // The next EVAL runs under the debugger (lua::ldb), on the link the connection gives it.
        ctx.client.ldb_sync = true;
        Frame::ok()
    } else if eq_ic(a, "yes") {
        // Redis forks the whole server for this mode and throws the run's changes away; Latch has no
        // fork of the server to debug in.
        Frame::error("ERR SCRIPT DEBUG YES (a forked session) is not supported by Latch: use SCRIPT DEBUG SYNC")
    } else {
        Frame::error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
    }
}

fn script_exists(ctx: &mut Ctx<'_, '_>) -> Frame {
    let scripts = ctx.srv.scripting.scripts.lock();
    Frame::Array(
        ctx.args[2..]
            .iter()
            .map(|s| {
                let k = String::from_utf8_lossy(s);
                Frame::Integer(scripts.contains_key(k.as_ref()) as i64)
            })
            .collect(),
    )
}

fn script_flush(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() == 3 && !(eq_ic(ctx.arg(2), "sync") || eq_ic(ctx.arg(2), "async")) || ctx.argc() > 3 {
        return Frame::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    ctx.srv.scripting.flush_scripts();
    Frame::ok()
}

fn script_help(_: &mut Ctx<'_, '_>) -> Frame {
    help_reply(
        "SCRIPT",
        &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    )
}

/// SCRIPT KILL / FUNCTION KILL (Redis's `scriptKill`). Takes no lock. Kills every running script of
/// the matching kind that did not write yet (scripts on different keys run in parallel on the VM pool).
fn kill(ctx: &mut Ctx<'_, '_>, is_eval: bool) -> Frame {
    const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You \
                              can either wait the script termination or kill the server in a hard way using the \
                              SHUTDOWN NOSAVE command.";
    let running: Vec<_> = ctx.srv.scripting.states().filter(|r| r.running.load(Ordering::SeqCst)).collect();
    if running.is_empty() {
        return Frame::error("NOTBUSY No scripts in execution right now.");
    }
    let (mine, other): (Vec<_>, Vec<_>) = running.into_iter().partition(|r| r.eval.load(Ordering::Relaxed) == is_eval);
    if mine.is_empty() {
        if other.iter().all(|r| r.wrote.load(Ordering::Relaxed)) {
            return Frame::error(UNKILLABLE);
        }
        return Frame::error(if is_eval { BUSY_FUNCTION } else { BUSY_EVAL });
    }
    let mut killed = false;
    for r in mine {
        if !r.wrote.load(Ordering::Relaxed) {
            r.killed.store(true, Ordering::SeqCst);
            killed = true;
        }
    }
    if killed { Frame::ok() } else { Frame::error(UNKILLABLE) }
}

use crate::error::{BUSY_EVAL, BUSY_FUNCTION};

fn script_kill(ctx: &mut Ctx<'_, '_>) -> Frame {
    kill(ctx, true)
}

fn function_kill(ctx: &mut Ctx<'_, '_>) -> Frame {
    kill(ctx, false)
}

fn script_load(ctx: &mut Ctx<'_, '_>) -> Frame {
    match ctx.srv.scripting.create_script(&ctx.args[2]) {
        Ok(sha) => Frame::bulk(sha),
        Err(e) => e,
    }
}

fn function_load(ctx: &mut Ctx<'_, '_>) -> Frame {
    let mut replace = false;
    let mut i = 2;
    while i < ctx.argc() - 1 {
        if eq_ic(ctx.arg(i), "replace") {
            replace = true;
            i += 1;
            continue;
        }
        return Frame::error(format!("ERR Unknown option given: {}", String::from_utf8_lossy(ctx.arg(i))));
    }
    if i >= ctx.argc() {
        return Frame::error("ERR Function code is missing");
    }
    let code = ctx.args[i].clone();
    let sc = &ctx.srv.scripting;
    if let Ok((name, _)) = crate::lua::parse_library_shebang(&code)
        && !replace
        && sc.libraries.lock().contains_key(&name)
    {
        return Frame::error(format!("ERR Library '{name}' already exists"));
    }
    let compiled = match sc.compile_library(&code) {
        Ok(c) => c,
        Err(e) => return Frame::error(format!("ERR {e}")),
    };
    let name = compiled.name.clone();
    match sc.install_libraries(vec![compiled], replace) {
        Ok(()) => {
            ctx.changed(1);
            Frame::bulk(name)
        }
        Err(e) => Frame::error(format!("ERR {e}")),
    }
}

fn function_delete(ctx: &mut Ctx<'_, '_>) -> Frame {
    let name = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    if ctx.srv.scripting.delete_library(&name) {
        ctx.changed(1);
        Frame::ok()
    } else {
        Frame::error("ERR Library not found")
    }
}

fn function_flush(ctx: &mut Ctx<'_, '_>) -> Frame {
    match ctx.argc() {
        2 => {}
        3 if eq_ic(ctx.arg(2), "async") || eq_ic(ctx.arg(2), "sync") => {}
        3 => return Frame::error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"),
        _ => return subcommand_syntax_error(b"flush", "FUNCTION"),
    }
    ctx.srv.scripting.flush_functions();
    ctx.changed(1);
    Frame::ok()
}

fn function_help(_: &mut Ctx<'_, '_>) -> Frame {
    help_reply(
        "FUNCTION",
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    )
}

fn function_list(ctx: &mut Ctx<'_, '_>) -> Frame {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 2;
    while i < ctx.argc() {
        let a = ctx.arg(i);
        if !with_code && eq_ic(a, "withcode") {
            with_code = true;
        } else if pattern.is_none() && eq_ic(a, "libraryname") {
            if i >= ctx.argc() - 1 {
                return Frame::error("ERR library name argument was not given");
            }
            i += 1;
            pattern = Some(ctx.arg(i));
        } else {
            return Frame::error(format!("ERR Unknown argument {}", String::from_utf8_lossy(a)));
        }
        i += 1;
    }
    let libs = ctx.srv.scripting.libraries.lock();
    let mut out = Vec::new();
    for lib in libs.values() {
        if let Some(p) = pattern
            && !crate::glob::matches(p, lib.name.as_bytes(), true)
        {
            continue;
        }
        let funcs = lib
            .functions
            .values()
            .map(|f| {
                Frame::Map(vec![
                    (Frame::bulk("name"), Frame::bulk(f.name.clone())),
                    (Frame::bulk("description"), f.desc.clone().map(Frame::bulk).unwrap_or(Frame::Null)),
                    (
                        Frame::bulk("flags"),
                        Frame::Set(
                            FLAG_NAMES.iter().filter(|(b, _)| f.flags & b != 0).map(|(_, n)| Frame::bulk(*n)).collect(),
                        ),
                    ),
                ])
            })
            .collect();
        let mut m = vec![
            (Frame::bulk("library_name"), Frame::bulk(lib.name.clone())),
            (Frame::bulk("engine"), Frame::bulk("LUA")),
            (Frame::bulk("functions"), Frame::Array(funcs)),
        ];
        if with_code {
            m.push((Frame::bulk("library_code"), Frame::Bulk(lib.code.clone())));
        }
        out.push(Frame::Map(m));
    }
    Frame::Array(out)
}

fn function_stats(ctx: &mut Ctx<'_, '_>) -> Frame {
    let sc = &ctx.srv.scripting;
    let running: Vec<_> = sc.states().filter(|r| r.running.load(Ordering::SeqCst)).collect();
    let function = running.iter().find(|r| !r.eval.load(Ordering::Relaxed));
    if function.is_none() && !running.is_empty() {
        return Frame::error(BUSY_EVAL);
    }
    let script = if let Some(run) = function {
        let (name, cmd) = run.info.lock().clone();
        let dur = ctx.srv.clock.now_ms().saturating_sub(run.start_ms.load(Ordering::Relaxed));
        Frame::Map(vec![
            (Frame::bulk("name"), Frame::bulk(name)),
            (Frame::bulk("command"), Frame::Array(cmd.into_iter().map(Frame::Bulk).collect())),
            (Frame::bulk("duration_ms"), Frame::Integer(dur as i64)),
        ])
    } else {
        Frame::Null
    };
    let nlibs = sc.libraries.lock().len();
    let nfuncs = sc.functions.lock().len();
    Frame::Map(vec![
        (Frame::bulk("running_script"), script),
        (
            Frame::bulk("engines"),
            Frame::Map(vec![(
                Frame::bulk("LUA"),
                Frame::Map(vec![
                    (Frame::bulk("libraries_count"), Frame::Integer(nlibs as i64)),
                    (Frame::bulk("functions_count"), Frame::Integer(nfuncs as i64)),
                ]),
            )]),
        ),
    ])
}

/// Latch's FUNCTION DUMP payload (not Redis's RDB encoding): magic, then for each library a 4-byte
/// big-endian length and the library code, then an 8-byte FNV-1a checksum of everything before it.
const DUMP_MAGIC: &[u8] = b"LATCHFN1";

fn fnv(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &c in b {
        h ^= c as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn function_dump(ctx: &mut Ctx<'_, '_>) -> Frame {
    let libs = ctx.srv.scripting.libraries.lock();
    let mut out = DUMP_MAGIC.to_vec();
    for lib in libs.values() {
        out.extend_from_slice(&(lib.code.len() as u32).to_be_bytes());
        out.extend_from_slice(&lib.code);
    }
    let sum = fnv(&out);
    out.extend_from_slice(&sum.to_be_bytes());
    Frame::Bulk(Bytes::from(out))
}

fn parse_dump(p: &[u8]) -> Option<Vec<Bytes>> {
    if p.len() < DUMP_MAGIC.len() + 8 || !p.starts_with(DUMP_MAGIC) {
        return None;
    }
    let (body, sum) = p.split_at(p.len() - 8);
    if fnv(body).to_be_bytes() != sum {
        return None;
    }
    let mut rest = &body[DUMP_MAGIC.len()..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let code = rest.get(4..4 + len)?;
        out.push(Bytes::copy_from_slice(code));
        rest = &rest[4 + len..];
    }
    Some(out)
}

fn function_restore(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() > 4 {
        return subcommand_syntax_error(b"restore", "FUNCTION");
    }
    let mut policy = "append";
    if ctx.argc() == 4 {
        let a = ctx.arg(3);
        policy = if eq_ic(a, "append") {
            "append"
        } else if eq_ic(a, "replace") {
            "replace"
        } else if eq_ic(a, "flush") {
            "flush"
        } else {
            return Frame::error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.");
        };
    }
    let Some(codes) = parse_dump(ctx.arg(2)) else {
        return Frame::error("ERR DUMP payload version or checksum are wrong");
    };
    let sc = &ctx.srv.scripting;
    let mut compiled = Vec::new();
    for code in &codes {
        match sc.compile_library(code) {
            Ok(c) => compiled.push(c),
            Err(e) => return Frame::error(format!("ERR {e}")),
        }
    }
    if policy == "append" {
        let libs = sc.libraries.lock();
        for l in &compiled {
            if libs.contains_key(&l.name) {
                return Frame::error(format!("ERR Library {} already exists", l.name));
            }
        }
    }
    if policy == "flush" {
        sc.flush_functions();
    }
    match sc.install_libraries(compiled, true) {
        Ok(()) => {
            ctx.changed(1);
            Frame::ok()
        }
        Err(e) => Frame::error(format!("ERR {e}")),
    }
}

#[cfg(test)]
mod tests;
