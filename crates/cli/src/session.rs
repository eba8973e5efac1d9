//! The client session: connecting (AUTH, SELECT, HELLO 3), sending commands, printing replies,
//! and the one-shot, piped and interactive front ends. Behaviour follows redis-cli 7.0.15's
//! `cliConnect`, `cliSendCommand`, `cliReadReply`, `issueCommandRepeat`, `repl` and
//! `noninteractive`.

use std::io::{self, IsTerminal, Read, Write};
use std::time::{Duration, Instant};

use resp::Frame;

use crate::conn::{Conn, ConnError, ConnectError};
use crate::format;
use crate::help::{self, HelpEntry};
use crate::opts::{ConnInfo, OutputMode};
use crate::repl::{self, LineReader, ReadLine};
pub use crate::repl::{read_piped_line, set_preference};

/// Everything the command line decided.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to connect and how to authenticate.
    pub conn: ConnInfo,
    /// Reply rendering.
    pub output: OutputMode,
    /// Whether RESP3 push messages are printed (otherwise they are dropped).
    pub push_output: bool,
    /// Separator of aggregate elements in raw mode (`-d`).
    pub mb_delim: Vec<u8>,
    /// Terminator of each reply in raw mode (`-D`).
    pub cmd_delim: Vec<u8>,
    /// How many times a one-shot command runs (`-r`; negative: forever).
    pub repeat: i64,
    /// Pause between repetitions (`-i`).
    pub interval: Duration,
    /// Read the last argument from stdin (`-x`).
    pub stdin_last_arg: bool,
    /// Exit with status 1 on an error reply (`-e`).
    pub set_errcode: bool,
    /// Switch to RESP3 with `HELLO 3` after connecting (`-3`).
    pub resp3: bool,
    /// Stay in RESP2 (`-2`): wins over a RESP3 request from elsewhere.
    pub resp2: bool,
}

/// What kind of reply the last command got (redis-cli's `last_cmd_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastReply {
    Error,
    Nil,
    Other,
}

/// A failed command; the session already reported it.
#[derive(Debug)]
pub struct Failed;

/// A client session.
pub struct Session {
    cfg: Config,
    conn: Option<Conn>,
    /// The database currently selected on the connection.
    dbnum: i64,
    in_multi: bool,
    pre_multi_dbnum: i64,
    /// In an interactive (or piped) session errors do not end the process.
    interactive: bool,
    help: Option<Vec<HelpEntry>>,
}

/// Commands whose replies are printed raw even in standard mode, because they are reports
/// meant to be read as text (redis-cli's list).
fn prints_raw(args: &[Vec<u8>]) -> bool {
    let is = |i: usize, s: &str| args.get(i).is_some_and(|a| a.eq_ignore_ascii_case(s.as_bytes()));
    let n = args.len();
    is(0, "info")
        || is(0, "lolwut")
        || (n >= 2 && is(0, "debug") && (is(1, "htstats") || is(1, "htstats-key") || is(1, "client-eviction")))
        || (n >= 2 && is(0, "memory") && (is(1, "malloc-stats") || is(1, "doctor")))
        || (n == 2 && is(0, "cluster") && (is(1, "nodes") || is(1, "info")))
        || (n >= 2 && is(0, "client") && (is(1, "list") || is(1, "info")))
        || (n == 3 && is(0, "latency") && is(1, "graph"))
        || (n == 2 && is(0, "latency") && is(1, "doctor"))
        || (n >= 2 && is(0, "proxy") && is(1, "info"))
}

/// Commands whose arguments must not be written to the history file.
pub fn is_sensitive(args: &[Vec<u8>]) -> bool {
    let is = |i: usize, s: &str| args.get(i).is_some_and(|a| a.eq_ignore_ascii_case(s.as_bytes()));
    let n = args.len();
    if is(0, "auth") {
        return true;
    }
    if n > 1 && is(0, "acl") && is(1, "setuser") {
        return true;
    }
    if n > 2 && is(0, "config") && is(1, "set") && (is(2, "masterauth") || is(2, "masteruser") || is(2, "requirepass"))
    {
        return true;
    }
    if n > 4 && is(0, "hello") {
        let mut j = 2;
        while j < n {
            let more = n - 1 - j;
            if is(j, "auth") && more >= 2 {
                return true;
            } else if is(j, "setname") && more > 0 {
                j += 1;
            } else {
                return false;
            }
            j += 1;
        }
    } else if n > 7 && is(0, "migrate") {
        for j in 6..n {
            let more = n - 1 - j;
            if (is(j, "auth") && more > 0) || (is(j, "auth2") && more >= 2) {
                return true;
            } else if is(j, "keys") && more > 0 {
                return false;
            }
        }
    }
    false
}

fn out_write(bytes: &[u8]) {
    let mut out = io::stdout().lock();
    // A closed stdout (e.g. `| head`) must not turn into a panic.
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

fn error_text(f: &Frame) -> String {
    match f {
        Frame::Error(e) => String::from_utf8_lossy(e).into_owned(),
        _ => String::new(),
    }
}

impl Session {
    /// A session that has not connected yet.
    pub fn new(cfg: Config) -> Session {
        Session { cfg, conn: None, dbnum: 0, in_multi: false, pre_multi_dbnum: 0, interactive: false, help: None }
    }

    /// The `127.0.0.1:6379[2](TX)> ` prompt.
    pub fn prompt(&self) -> String {
        if self.conn.is_none() {
            return "not connected> ".into();
        }
        let mut p = match &self.cfg.conn.socket {
            Some(path) => format!("redis {path}"),
            None if self.cfg.conn.host.contains(':') => {
                format!("[{}]:{}", self.cfg.conn.host, self.cfg.conn.port)
            }
            None => format!("{}:{}", self.cfg.conn.host, self.cfg.conn.port),
        };
        if self.dbnum != 0 {
            p.push_str(&format!("[{}]", self.dbnum));
        }
        if self.in_multi {
            p.push_str("(TX)");
        }
        p.push_str("> ");
        p
    }

    /// Connects unless already connected (or always with `force`), then authenticates, selects
    /// the database and switches protocol. Returns false on failure; a failed AUTH, SELECT or
    /// HELLO keeps the connection open, exactly like redis-cli.
    pub fn connect(&mut self, force: bool, quiet: bool) -> bool {
        if self.conn.is_some() && !force {
            return true;
        }
        if self.conn.take().is_some() {
            self.dbnum = 0;
            self.in_multi = false;
        }
        let info = &self.cfg.conn;
        let opened = match &info.socket {
            Some(path) => Conn::unix(path).map_err(ConnectError::Io),
            None if info.tls.enabled => Conn::tls(&info.host, info.port, &info.tls),
            None => Conn::tcp(&info.host, info.port).map_err(ConnectError::Io),
        };
        match opened {
            Ok(c) => self.conn = Some(c),
            Err(ConnectError::Tls(e)) => {
                if !quiet {
                    eprintln!("Could not negotiate a TLS connection: {e}");
                }
                return false;
            }
            Err(ConnectError::Io(e)) => {
                if !quiet {
                    let target = match &info.socket {
                        Some(path) => path.clone(),
                        None => format!("{}:{}", info.host, info.port),
                    };
                    eprintln!("Could not connect to Redis at {target}: {}", crate::conn::io_error_text(&e));
                }
                return false;
            }
        }
        self.auth() && self.select() && self.switch_proto()
    }

    /// Runs a command of the connection set-up and returns its reply (None after an IO error).
    fn setup_call(&mut self, args: &[&[u8]]) -> Option<Frame> {
        let conn = self.conn.as_mut()?;
        match conn.call(args) {
            Ok(f) => Some(f),
            Err(_) => {
                eprintln!("\nI/O error");
                None
            }
        }
    }

    fn auth(&mut self) -> bool {
        let Some(pass) = self.cfg.conn.auth.clone() else {
            return true;
        };
        let reply = match self.cfg.conn.user.clone() {
            Some(user) => self.setup_call(&[b"AUTH", user.as_bytes(), pass.as_bytes()]),
            None => self.setup_call(&[b"AUTH", pass.as_bytes()]),
        };
        match reply {
            None => false,
            Some(f @ Frame::Error(_)) => {
                eprintln!("AUTH failed: {}", error_text(&f));
                false
            }
            Some(_) => true,
        }
    }

    fn select(&mut self) -> bool {
        let db = self.cfg.conn.db;
        if db == self.dbnum {
            return true;
        }
        match self.setup_call(&[b"SELECT", db.to_string().as_bytes()]) {
            None => false,
            Some(f @ Frame::Error(_)) => {
                eprintln!("SELECT {db} failed: {}", error_text(&f));
                false
            }
            Some(_) => {
                self.dbnum = db;
                true
            }
        }
    }

    fn switch_proto(&mut self) -> bool {
        if !self.cfg.resp3 || self.cfg.resp2 {
            return true;
        }
        match self.setup_call(&[b"HELLO", b"3"]) {
            None => false,
            Some(f @ Frame::Error(_)) => {
                eprintln!("HELLO 3 failed: {}", error_text(&f));
                false
            }
            Some(_) => true,
        }
    }

    /// Prints a reply in the session's output mode (`raw_strings`: the command is one of those
    /// whose report is printed as raw text).
    fn print_reply(&self, f: &Frame, raw_strings: bool) {
        let mut out = Vec::new();
        if raw_strings {
            format::format_raw(f, &self.cfg.mb_delim, &mut out);
        } else {
            render_reply(f, self.cfg.output, &self.cfg.mb_delim, &self.cfg.cmd_delim, &mut out);
        }
        out_write(&out);
    }

    /// Reads one reply and prints it; RESP3 pushes arriving first are printed (or dropped) on
    /// the way, unless `pubsub` is set, where they are the replies.
    fn read_reply(&mut self, raw_strings: bool, pubsub: bool) -> Result<LastReply, ConnError> {
        let conn = self.conn.as_mut().ok_or(ConnError::Eof)?;
        let frame = loop {
            let f = conn.read()?;
            if matches!(f, Frame::Push(_)) && !pubsub {
                if self.cfg.push_output {
                    let mut out = Vec::new();
                    render_push(&f, self.cfg.output, &self.cfg.mb_delim, &self.cfg.cmd_delim, &mut out);
                    out_write(&out);
                }
                continue;
            }
            break f;
        };
        if !self.interactive && self.cfg.set_errcode && frame.is_error() {
            eprintln!("{}", error_text(&frame));
            std::process::exit(1);
        }
        self.print_reply(&frame, raw_strings);
        Ok(match frame {
            Frame::Error(_) => LastReply::Error,
            Frame::Null | Frame::NullArray => LastReply::Nil,
            _ => LastReply::Other,
        })
    }

    /// Sends a command `repeat` times (negative: forever) and prints the replies.
    fn send_command(&mut self, args: &[Vec<u8>], repeat: i64) -> Result<(), ConnError> {
        let raw_strings = prints_raw(args);
        let cmd = args[0].to_ascii_lowercase();
        let shutdown = cmd == b"shutdown";
        let monitor = cmd == b"monitor";
        let pubsub = matches!(cmd.as_slice(), b"subscribe" | b"psubscribe" | b"ssubscribe");
        let mut left = repeat;
        // A negative count repeats forever.
        while left != 0 {
            if left > 0 {
                left -= 1;
            }
            let conn = self.conn.as_mut().ok_or(ConnError::Eof)?;
            conn.send(args)?;
            if monitor || pubsub {
                if pubsub && self.cfg.output != OutputMode::Raw {
                    out_write(b"Reading messages... (press Ctrl-C to quit)\n");
                }
                // Both modes end only with the connection (or Ctrl-C), or an error reply.
                loop {
                    if self.read_reply(raw_strings, pubsub)? == LastReply::Error {
                        break;
                    }
                }
                if monitor {
                    return Ok(());
                }
                continue;
            }
            let last = match self.read_reply(raw_strings, false) {
                Ok(l) => l,
                Err(_) if shutdown => {
                    // The server went away as asked.
                    self.conn = None;
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            self.track_state(args, last);
            if !self.cfg.interval.is_zero() {
                std::thread::sleep(self.cfg.interval);
            }
        }
        Ok(())
    }

    /// Follows SELECT / MULTI / EXEC / DISCARD / RESET for the prompt, and re-selects the
    /// database after AUTH.
    fn track_state(&mut self, args: &[Vec<u8>], last: LastReply) {
        let is = |s: &str| args[0].eq_ignore_ascii_case(s.as_bytes());
        let n = args.len();
        if is("select") && n == 2 && last != LastReply::Error {
            let db = resp::atoi(&args[1]);
            self.cfg.conn.db = db;
            self.dbnum = db;
        } else if is("auth") && (n == 2 || n == 3) {
            self.select();
        } else if is("multi") && n == 1 && last != LastReply::Error {
            self.in_multi = true;
            self.pre_multi_dbnum = self.dbnum;
        } else if is("exec") && n == 1 && self.in_multi {
            self.in_multi = false;
            if last == LastReply::Error || last == LastReply::Nil {
                self.cfg.conn.db = self.pre_multi_dbnum;
                self.dbnum = self.pre_multi_dbnum;
            }
        } else if is("discard") && n == 1 && last != LastReply::Error {
            self.in_multi = false;
            self.cfg.conn.db = self.pre_multi_dbnum;
            self.dbnum = self.pre_multi_dbnum;
        } else if is("reset") && n == 1 && last != LastReply::Error {
            self.in_multi = false;
            self.dbnum = 0;
            self.cfg.conn.db = 0;
            self.cfg.resp3 = false;
        }
    }

    /// Loads the help table from `COMMAND DOCS` (falling back to bare `COMMAND` names).
    fn init_help(&mut self) -> &[HelpEntry] {
        if self.help.is_none() {
            let mut entries = Vec::new();
            if self.connect(false, true)
                && let Some(conn) = self.conn.as_mut()
            {
                match conn.call(&["COMMAND", "DOCS"]) {
                    Ok(f @ (Frame::Map(_) | Frame::Array(_))) => entries = help::entries_from_docs(&f),
                    Ok(_) => entries = command_names(conn),
                    Err(_) => self.conn = None,
                }
            }
            self.help = Some(entries);
        }
        self.help.as_deref().unwrap_or_default()
    }

    /// The help table, loading it on first use.
    pub fn help_entries(&mut self) -> Vec<HelpEntry> {
        self.init_help().to_vec()
    }

    /// Runs a command (or the client-side HELP) `repeat` times, connecting first if needed.
    pub fn issue(&mut self, args: &[Vec<u8>], repeat: i64) -> Result<(), Failed> {
        if args[0].eq_ignore_ascii_case(b"help") || args[0] == b"?" {
            let words: Vec<String> = args[1..].iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            let text =
                if words.is_empty() { help::generic_help() } else { help::output_help(self.init_help(), &words) };
            out_write(text.as_bytes());
            return Ok(());
        }
        if self.conn.is_none() && !self.connect(true, false) {
            return Err(Failed);
        }
        match self.send_command(args, repeat) {
            Ok(()) => Ok(()),
            Err(e) => {
                eprintln!("Error: {e}");
                if !self.interactive || !e.is_disconnect() {
                    std::process::exit(1);
                }
                self.conn = None;
                Err(Failed)
            }
        }
    }

    /// One-shot mode: `latch-cli [options] cmd args...`. Returns the exit status.
    pub fn run_once(&mut self, mut args: Vec<Vec<u8>>) -> i32 {
        if self.cfg.stdin_last_arg {
            let mut buf = Vec::new();
            if let Err(e) = io::stdin().lock().read_to_end(&mut buf) {
                eprintln!("Reading standard input: {}", crate::conn::io_error_text(&e));
                return 1;
            }
            args.push(buf);
        }
        self.connect(false, true);
        match self.issue(&args, self.cfg.repeat) {
            Ok(()) => 0,
            Err(Failed) => 1,
        }
    }

    /// Interactive mode (and line-by-line mode when stdin is not a terminal). Returns the exit
    /// status.
    pub fn run_repl(&mut self) -> i32 {
        self.interactive = true;
        self.connect(false, false);
        let tty = io::stdin().is_terminal();
        let mut reader: Box<dyn LineReader> = if tty {
            let entries = self.help_entries();
            Box::new(repl::Editor::new(entries))
        } else {
            Box::new(repl::Piped::new(io::stdin().lock()))
        };
        loop {
            let line = match reader.read_line(&self.prompt()) {
                ReadLine::Line(l) => l,
                ReadLine::Eof | ReadLine::Interrupted => return 0,
            };
            if line.is_empty() {
                continue;
            }
            self.handle_line(&line, reader.as_mut());
        }
    }

    fn handle_line(&mut self, line: &[u8], reader: &mut dyn LineReader) {
        let Some(argv) = resp::split_args(line) else {
            out_write(b"Invalid argument(s)\n");
            reader.add_history(line);
            return;
        };
        if argv.is_empty() {
            return;
        }
        let (repeat, skip) = match parse_repeat(&argv) {
            RepeatPrefix::None => (1, 0),
            RepeatPrefix::Times(n) => (n, 1),
            RepeatPrefix::Invalid => {
                out_write(b"Invalid redis-cli repeat command option value.\n");
                return;
            }
        };
        let args = &argv[skip..];
        if !is_sensitive(args) {
            reader.add_history(line);
        }
        let cmd0 = &argv[0];
        if cmd0.eq_ignore_ascii_case(b"quit") || cmd0.eq_ignore_ascii_case(b"exit") {
            std::process::exit(0);
        } else if cmd0.first() == Some(&b':') {
            let words: Vec<String> = argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            match set_preference(&words) {
                Ok(hints) => reader.set_hints(hints),
                Err(msg) => out_write(msg.as_bytes()),
            }
        } else if cmd0.eq_ignore_ascii_case(b"restart") {
            out_write(b"Use 'restart' only in Lua debugging mode.\n");
        } else if argv.len() == 3 && cmd0.eq_ignore_ascii_case(b"connect") {
            self.cfg.conn.host = String::from_utf8_lossy(&argv[1]).into_owned();
            self.cfg.conn.port = u16::try_from(resp::atoi(&argv[2])).unwrap_or(0);
            self.cfg.conn.socket = None;
            self.connect(true, false);
        } else if argv.len() == 1 && cmd0.eq_ignore_ascii_case(b"clear") {
            reader.clear_screen();
        } else {
            let start = Instant::now();
            let _ = self.issue(args, repeat);
            let elapsed = start.elapsed();
            if elapsed >= Duration::from_millis(500) && self.cfg.output == OutputMode::Standard {
                out_write(format!("({:.2}s)\n", elapsed.as_secs_f64()).as_bytes());
            }
        }
    }
}

/// Help entries built from plain `COMMAND` when the server has no `COMMAND DOCS`.
fn command_names(conn: &mut Conn) -> Vec<HelpEntry> {
    let Ok(Frame::Array(cmds)) = conn.call(&["COMMAND"]) else {
        return Vec::new();
    };
    let mut out: Vec<HelpEntry> = cmds
        .iter()
        .filter_map(|c| match c {
            Frame::Array(info) => match info.first() {
                Some(Frame::Bulk(name)) => {
                    let full = String::from_utf8_lossy(name).to_ascii_uppercase();
                    Some(HelpEntry {
                        words: vec![full.clone()],
                        full,
                        params: String::new(),
                        summary: "Help not available".into(),
                        since: Some("Not known".into()),
                        group: "generic".into(),
                    })
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    out.sort_by(|a, b| a.full.cmp(&b.full));
    out
}

/// A leading repeat count in the REPL (`3 INCR k`).
#[derive(Debug, PartialEq, Eq)]
enum RepeatPrefix {
    None,
    Times(i64),
    Invalid,
}

/// Recognises a first word that C's strtol reads entirely as a number (an empty word counts as
/// 0), when more words follow.
fn parse_repeat(argv: &[Vec<u8>]) -> RepeatPrefix {
    if argv.len() < 2 {
        return RepeatPrefix::None;
    }
    let w = &argv[0];
    let digits = match w.first() {
        Some(b'+' | b'-') => &w[1..],
        _ => &w[..],
    };
    if !w.is_empty() && (digits.is_empty() || !digits.iter().all(u8::is_ascii_digit)) {
        return RepeatPrefix::None;
    }
    match std::str::from_utf8(w).ok().and_then(|s| s.parse::<i64>().ok()) {
        Some(n) if n > 0 => RepeatPrefix::Times(n),
        _ => RepeatPrefix::Invalid,
    }
}

/// Renders a command's reply as redis-cli prints it: tty form, or raw form plus `cmd_delim`.
pub fn render_reply(f: &Frame, mode: OutputMode, mb_delim: &[u8], cmd_delim: &[u8], out: &mut Vec<u8>) {
    match mode {
        OutputMode::Standard => format::format_tty(f, out),
        OutputMode::Raw => {
            format::format_raw(f, mb_delim, out);
            out.extend_from_slice(cmd_delim);
        }
    }
}

/// Renders an out-of-band RESP3 push (client-tracking invalidations get their own tty line).
pub fn render_push(f: &Frame, mode: OutputMode, mb_delim: &[u8], cmd_delim: &[u8], out: &mut Vec<u8>) {
    if mode == OutputMode::Standard
        && let Some(line) = format::format_invalidate_tty(f)
    {
        out.extend_from_slice(&line);
        return;
    }
    render_reply(f, mode, mb_delim, cmd_delim, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn repeat_prefix() {
        assert_eq!(parse_repeat(&v(&["3", "incr", "k"])), RepeatPrefix::Times(3));
        assert_eq!(parse_repeat(&v(&["+2", "ping"])), RepeatPrefix::Times(2));
        assert_eq!(parse_repeat(&v(&["0", "ping"])), RepeatPrefix::Invalid);
        assert_eq!(parse_repeat(&v(&["-1", "ping"])), RepeatPrefix::Invalid);
        assert_eq!(parse_repeat(&v(&["", "ping"])), RepeatPrefix::Invalid);
        assert_eq!(parse_repeat(&v(&["99999999999999999999", "ping"])), RepeatPrefix::Invalid);
        assert_eq!(parse_repeat(&v(&["3"])), RepeatPrefix::None);
        assert_eq!(parse_repeat(&v(&["3x", "ping"])), RepeatPrefix::None);
        assert_eq!(parse_repeat(&v(&["ping", "3"])), RepeatPrefix::None);
    }

    #[test]
    fn sensitive_commands() {
        assert!(is_sensitive(&v(&["AUTH", "pw"])));
        assert!(is_sensitive(&v(&["acl", "SETUSER", "bob", "on"])));
        assert!(is_sensitive(&v(&["config", "set", "requirepass", "x"])));
        assert!(!is_sensitive(&v(&["config", "set", "maxmemory", "1"])));
        assert!(is_sensitive(&v(&["hello", "3", "setname", "n", "auth", "u", "p"])));
        assert!(!is_sensitive(&v(&["hello", "3", "setname", "n", "x"])));
        assert!(is_sensitive(&v(&["migrate", "h", "1", "", "0", "10", "auth", "pw", "keys", "k"])));
        assert!(!is_sensitive(&v(&["migrate", "h", "1", "", "0", "10", "keys", "k", "auth"])));
        assert!(!is_sensitive(&v(&["get", "auth"])));
    }

    #[test]
    fn raw_report_commands() {
        assert!(prints_raw(&v(&["INFO"])));
        assert!(prints_raw(&v(&["client", "LIST"])));
        assert!(!prints_raw(&v(&["client", "id"])));
        assert!(!prints_raw(&v(&["cluster", "nodes", "x"])));
    }

    #[test]
    fn prompt() {
        let cfg = Config {
            conn: ConnInfo::default(),
            output: OutputMode::Standard,
            push_output: true,
            mb_delim: b"\n".to_vec(),
            cmd_delim: b"\n".to_vec(),
            repeat: 1,
            interval: Duration::ZERO,
            stdin_last_arg: false,
            set_errcode: false,
            resp3: false,
            resp2: false,
        };
        let mut s = Session::new(cfg);
        assert_eq!(s.prompt(), "not connected> ");
        // A prompt needs a live connection: listen locally for one.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        s.cfg.conn.port = l.local_addr().unwrap().port();
        assert!(s.connect(false, true));
        assert_eq!(s.prompt(), format!("127.0.0.1:{}> ", s.cfg.conn.port));
        s.dbnum = 2;
        s.in_multi = true;
        assert_eq!(s.prompt(), format!("127.0.0.1:{}[2](TX)> ", s.cfg.conn.port));
        s.cfg.conn.host = "::1".into();
        assert!(s.prompt().starts_with("[::1]:"));
    }
}
