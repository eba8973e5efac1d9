//! latch-cli: the command-line client of Latch, compatible with redis-cli's everyday use.
//!
//! - [`opts`]: the command line (redis-cli's flags) and `-u` URIs.
//! - [`conn`]: a blocking connection speaking RESP through the `resp` crate.
//! - [`format`]: reply rendering, byte-identical to redis-cli 7.0.15 (tty and raw modes).
//! - [`help`]: `HELP <command>` / `HELP @group` from the server's `COMMAND DOCS`.
//! - [`session`]: connecting, sending, printing; one-shot, piped and interactive front ends.
//! - [`repl`]: line editing, history, completion and hints (rustyline).
//! - [`lock_cmd`]: `latch-cli lock NAME -- command...`, built on the `lock` crate.
//!
//! **Architecture invariant:** no RESP encoding or decoding happens here; everything on the wire
//! goes through `resp::encode_request` and `resp::decode_reply` (the `lock` subcommand talks
//! through the `lock` crate, which uses the `redis` crate).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod conn;
pub mod format;
pub mod help;
pub mod lock_cmd;
pub mod opts;
pub mod repl;
pub mod session;
pub mod tls;

use std::io::IsTerminal;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use clap::Parser;

use opts::{Args, ConnInfo, OutputMode};
use session::{Config, Session};

/// A `-d`/`-D` delimiter: taken as given (redis-cli does not unescape it), a newline by default.
fn delim(d: Option<String>) -> Vec<u8> {
    d.map_or_else(|| b"\n".to_vec(), String::into_bytes)
}

/// Builds the session configuration from parsed arguments and the environment.
pub fn config_from_args(a: &Args, stdout_tty: bool) -> Result<Config, String> {
    let conn = a.conn.apply(ConnInfo::default())?;
    if a.resp2 && a.resp3 {
        return Err("Options -2 and -3 are mutually exclusive.".into());
    }
    // FAKETTY makes a pipe behave like a terminal, as in redis-cli (used by tests).
    let tty = stdout_tty || std::env::var_os("FAKETTY").is_some();
    let output = if a.raw {
        OutputMode::Raw
    } else if a.no_raw || tty {
        OutputMode::Standard
    } else {
        OutputMode::Raw
    };
    let push_output = match a.show_pushes.as_deref().map(str::to_ascii_lowercase) {
        Some(v) if v.starts_with('n') => false,
        Some(v) if v.starts_with('y') => true,
        Some(v) => {
            eprintln!("Unknown --show-pushes value '{v}' (valid: '[y]es', '[n]o')");
            tty
        }
        None => tty,
    };
    let interval = a.interval.unwrap_or(0.0);
    Ok(Config {
        conn,
        output,
        push_output,
        mb_delim: delim(a.mb_delim.clone()),
        cmd_delim: delim(a.cmd_delim.clone()),
        repeat: a.repeat.unwrap_or(1),
        interval: Duration::try_from_secs_f64(interval).unwrap_or(Duration::ZERO),
        stdin_last_arg: a.stdin_last_arg,
        set_errcode: a.errcode,
        resp3: a.resp3,
        resp2: a.resp2,
    })
}

/// Runs latch-cli with the process's arguments; returns the exit status.
pub fn run() -> i32 {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == "lock") {
        return lock_cmd::run(argv[1..].to_vec(), ConnInfo::default());
    }
    let args = match Args::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 1 } else { 0 };
        }
    };
    if args.version {
        println!("latch-cli {}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let mut cfg = match config_from_args(&args, std::io::stdout().is_terminal()) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("{msg}");
            return 1;
        }
    };
    if cfg.conn.auth.is_some() && !args.no_auth_warning {
        eprintln!("Warning: Using a password with '-a' or '-u' option on the command line interface may not be safe.");
    }
    if cfg.conn.auth.is_none() {
        cfg.conn.auth = std::env::var("LATCHCLI_AUTH").or_else(|_| std::env::var("REDISCLI_AUTH")).ok();
    }
    if args.command.first().is_some_and(|c| c == "lock") {
        return lock_cmd::run(args.command.clone(), cfg.conn);
    }
    let mut session = Session::new(cfg);
    if args.command.is_empty() {
        session.run_repl()
    } else {
        let cmd = args.command.iter().map(|a| a.as_bytes().to_vec()).collect();
        session.run_once(cmd)
    }
}
