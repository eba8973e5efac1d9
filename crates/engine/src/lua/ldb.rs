//! The Lua debugger: Redis's LDB in its synchronous form (`SCRIPT DEBUG SYNC`, `redis-cli
//! --ldb-sync-mode`). The next EVAL of the client runs under a line hook that stops at the first
//! line, at breakpoints and at `redis.breakpoint()`, sends its log lines to the client as an array
//! of status replies and reads debugger commands (`step`, `continue`, `list`, `print`, `eval`,
//! `redis`, `break`, `trace`, `maxlen`, `abort`, `help`) from it, with Redis's texts.
//!
//! The connection layer owns the socket: it hands the run a [`DebugLink`] (bytes out, bytes in)
//! and shuttles between it and the client while the script runs. Redis's forked form (`SCRIPT
//! DEBUG YES`, whose changes are thrown away) needs a fork of the whole server and is refused.

use bytes::Bytes;
use mlua::{Lua, MultiValue, Value};
use parking_lot::Mutex;
use resp::Frame;
use std::sync::Arc;
use std::sync::mpsc::Receiver;

/// Redis's `LDB_BREAKPOINTS_MAX`.
const MAX_BREAKPOINTS: usize = 64;
/// Redis's `LDB_MAX_LEN_DEFAULT`: replies and values logged are cut at this many bytes.
const MAX_LEN_DEFAULT: usize = 256;
/// The debugger's command buffer gives up past this (Redis: 1 MiB).
const MAX_CBUF: usize = 1 << 20;

/// How a debugging session reaches its client: `send` writes bytes to it, `input` yields what it
/// sends (closed when the client went away).
pub struct DebugLink {
    /// Writes to the client.
    pub send: Box<dyn Fn(Vec<u8>) + Send>,
    /// Bytes from the client, as read.
    pub input: Receiver<Vec<u8>>,
}

/// One debugging session: the script's source and the debugger's state (Redis's `struct ldbState`).
pub(super) struct Session {
    link: DebugLink,
    src: Vec<Vec<u8>>,
    bp: Vec<i64>,
    /// Stop at the next line.
    pub step: bool,
    /// `redis.breakpoint()` was called: stop at the next line.
    pub luabp: bool,
    current: i64,
    cbuf: Vec<u8>,
    maxlen: usize,
    maxlen_hint_sent: bool,
    logs: Vec<Vec<u8>>,
}

/// Where `redis.call` reports while a run is debugged: the command before it runs, then its reply
/// and whether the script reads replies in RESP3, or the message it was refused with.
pub(super) trait CallLog: Send + Sync {
    /// Before the command runs.
    fn call(&self, argv: &[Bytes]);
    /// After.
    fn outcome(&self, reply: Result<(&Frame, bool), &[u8]>);
}

/// What the debugger reads of the stopped script's Lua stack (implemented on Lua's C API, by
/// `raw`, which keeps the engine's unsafe code).
pub(super) trait Stack {
    /// `values` as the debugger shows them.
    fn reprs(&self, lua: &Lua, values: MultiValue) -> Vec<Vec<u8>>;
    /// `eval <code>`: the value shown, or the error.
    fn eval(&self, lua: &Lua, code: &[u8]) -> Result<Vec<u8>, Vec<u8>>;
    /// `print [var]`: the lines, or None when there is no such variable.
    fn print(&self, lua: &Lua, var: Option<&[u8]>) -> Option<Vec<Vec<u8>>>;
}

/// The session of a VM, while one runs (`raw::Host::ldb`).
pub(super) type Slot = Arc<Mutex<Option<Session>>>;

impl Session {
    /// A session for the EVAL script `body`, stopping at its first line.
    pub fn new(link: DebugLink, body: &[u8]) -> Session {
        let mut end = body.len();
        while end > 0 && matches!(body[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        let src = body[..end].split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
        Session {
            link,
            src,
            bp: Vec::new(),
            step: true,
            luabp: false,
            current: 0,
            cbuf: Vec::new(),
            maxlen: MAX_LEN_DEFAULT,
            maxlen_hint_sent: false,
            logs: Vec::new(),
        }
    }

    /// Queues a log line.
    pub fn log(&mut self, line: impl Into<Vec<u8>>) {
        self.logs.push(line.into());
    }

    /// Queues a log line cut at `maxlen` (Redis's `ldbLogWithMaxLen`), with the hint the first time.
    pub fn log_max(&mut self, mut line: Vec<u8>) {
        let trimmed = self.maxlen != 0 && line.len() > self.maxlen;
        if trimmed {
            line.truncate(self.maxlen);
            line.extend_from_slice(b" ...");
        }
        self.log(line);
        if trimmed && !self.maxlen_hint_sent {
            self.maxlen_hint_sent = true;
            self.log("<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.");
        }
    }

    /// Sends the queued lines as one array of status replies (newlines become spaces).
    pub fn send_logs(&mut self) {
        let mut out = format!("*{}\r\n", self.logs.len()).into_bytes();
        for mut line in self.logs.drain(..) {
            for c in line.iter_mut() {
                if matches!(*c, b'\r' | b'\n') {
                    *c = b' ';
                }
            }
            out.push(b'+');
            out.extend_from_slice(&line);
            out.extend_from_slice(b"\r\n");
        }
        (self.link.send)(out);
    }

    /// Ends the session: the last lines and `<endsession>`.
    pub fn end(mut self) {
        self.log("<endsession>");
        self.send_logs();
    }

    fn source_line(&self, line: i64) -> &[u8] {
        usize::try_from(line - 1)
            .ok()
            .and_then(|i| self.src.get(i))
            .map_or(b"<out of range source code line>".as_slice(), Vec::as_slice)
    }

    fn is_breakpoint(&self, line: i64) -> bool {
        self.bp.contains(&line)
    }

    /// Redis's `ldbLogSourceLine`: `->#`, `-> `, `  #` or three spaces, the number, the line.
    fn log_source_line(&mut self, line: i64) {
        let prefix = match (self.current == line, self.is_breakpoint(line)) {
            (true, true) => "->#",
            (true, false) => "-> ",
            (false, true) => "  #",
            (false, false) => "   ",
        };
        let mut s = format!("{prefix}{line:<3} ").into_bytes();
        s.extend_from_slice(self.source_line(line));
        self.log(s);
    }

    /// Redis's `ldbList`: the whole source (`around` 0) or `context` lines around `around`.
    fn list(&mut self, around: i64, context: i64) {
        for j in 1..=self.src.len() as i64 {
            if around != 0 && (around - j).abs() > context {
                continue;
            }
            self.log_source_line(j);
        }
    }

    /// Redis's `ldbBreak`.
    fn breakpoints(&mut self, argv: &[Vec<u8>]) {
        if argv.len() == 1 {
            if self.bp.is_empty() {
                self.log("No breakpoints set. Use 'b <line>' to add one.");
            } else {
                self.log(format!("{} breakpoints set:", self.bp.len()));
                for line in self.bp.clone() {
                    self.log_source_line(line);
                }
            }
            return;
        }
        for arg in &argv[1..] {
            let Some(line) = crate::args::parse_i64_strict(arg) else {
                let mut s = b"Invalid argument:'".to_vec();
                s.extend_from_slice(arg);
                s.push(b'\'');
                self.log(s);
                continue;
            };
            if line == 0 {
                self.bp.clear();
                self.log("All breakpoints removed.");
            } else if line > 0 {
                if self.bp.len() == MAX_BREAKPOINTS {
                    self.log("Too many breakpoints set.");
                } else if line <= self.src.len() as i64 {
                    if !self.is_breakpoint(line) {
                        self.bp.push(line);
                    }
                    self.list(line, 1);
                } else {
                    self.log("Wrong line number.");
                }
            } else if let Some(i) = self.bp.iter().position(|&b| b == -line) {
                self.bp.remove(i);
                self.log("Breakpoint removed.");
            } else {
                self.log("No breakpoint in the specified line.");
            }
        }
    }

    /// Redis's `ldbMaxlen`.
    fn set_maxlen(&mut self, argv: &[Vec<u8>]) {
        if let Some(arg) = argv.get(1) {
            let mut v = atoi(arg);
            self.maxlen_hint_sent = true;
            if v != 0 && v <= 60 {
                v = 60;
            }
            self.maxlen = v.max(0) as usize;
        }
        if self.maxlen != 0 {
            self.log(format!("<value> replies are truncated at {} bytes.", self.maxlen));
        } else {
            self.log("<value> replies are unlimited.");
        }
    }

    /// The next complete command in the buffer, reading more from the client as needed (Redis's
    /// `ldbReplParseCommand`, as forgiving as it is). `Err` when the client went away, or with the
    /// error the script is stopped with.
    fn next_command(&mut self) -> Result<Vec<Vec<u8>>, Stop> {
        loop {
            match parse_command(&self.cbuf) {
                Parse::Command(argv) => {
                    self.cbuf.clear();
                    return Ok(argv);
                }
                Parse::Error => return Err(Stop::Error("protocol error")),
                Parse::More => {}
            }
            match self.link.input.recv() {
                Ok(bytes) => self.cbuf.extend_from_slice(&bytes),
                Err(_) => {
                    // Run on without stopping: the client is gone.
                    self.step = false;
                    self.bp.clear();
                    return Err(Stop::Gone);
                }
            }
            if self.cbuf.len() > MAX_CBUF {
                self.cbuf = Vec::new();
                return Err(Stop::Error("max client buffer reached"));
            }
        }
    }
}

/// Why the debugger's read loop ended without a command.
enum Stop {
    /// The client closed the connection.
    Gone,
    /// The script is stopped with this error.
    Error(&'static str),
}

enum Parse {
    Command(Vec<Vec<u8>>),
    More,
    Error,
}

/// C's `atoi`: leading blanks, a sign, digits; 0 when there are none.
fn atoi(b: &[u8]) -> i64 {
    let s = std::str::from_utf8(b).unwrap_or("").trim_start();
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| n.saturating_mul(10).saturating_add(i64::from(d - b'0')));
    if neg { -n } else { n }
}

/// Redis's `ldbReplParseCommand`: `*<n>` then `n` bulk strings of 1 to 1024 bytes (n up to 1024).
fn parse_command(buf: &[u8]) -> Parse {
    if buf.is_empty() {
        return Parse::More;
    }
    // Redis scans the headers with C string functions, which stop at a NUL byte (bulk payloads are
    // taken by length).
    let cstr = |from: usize| &buf[from..from + buf[from..].iter().position(|&c| c == 0).unwrap_or(buf.len() - from)];
    let find = |from: usize| cstr(from).windows(2).position(|w| w == b"\r\n").map(|p| p + from);
    let Some(star) = cstr(0).iter().position(|&c| c == b'*') else { return Parse::Error };
    let Some(eol) = find(star) else { return Parse::More };
    let argc = atoi(&buf[star + 1..eol]);
    if argc <= 0 || argc > 1024 {
        return Parse::Error;
    }
    let mut p = eol + 2;
    let mut argv = Vec::with_capacity(argc as usize);
    while (argv.len() as i64) < argc {
        if p >= buf.len() || buf[p] == 0 {
            return Parse::More;
        }
        if buf[p] != b'$' {
            return Parse::Error;
        }
        let Some(eol) = find(p) else { return Parse::More };
        let len = atoi(&buf[p + 1..eol]);
        if len <= 0 || len > 1024 {
            return Parse::Error;
        }
        let start = eol + 2;
        let end = start + len as usize;
        if end + 2 > buf.len() {
            return Parse::More;
        }
        argv.push(buf[start..end].to_vec());
        if &buf[end..end + 2] != b"\r\n" {
            return Parse::Error;
        }
        p = end + 2;
    }
    Parse::Command(argv)
}

/// Redis's `ldbRedisProtocolToHuman`: a reply as the debugger shows it, in the protocol the script
/// reads replies in (`resp3`: after `redis.setresp(3)`).
pub(super) fn human(out: &mut Vec<u8>, f: &Frame, resp3: bool) {
    let list = |out: &mut Vec<u8>, items: &[Frame], open: &[u8], close: u8| {
        out.extend_from_slice(open);
        for (i, it) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            human(out, it, resp3);
        }
        out.push(close);
    };
    match f {
        Frame::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Frame::Bulk(b) => resp::repr(b, out),
        Frame::Simple(s) => resp::repr(&[b"+".as_slice(), s].concat(), out),
        Frame::Error(e) => resp::repr(&[b"-".as_slice(), e].concat(), out),
        Frame::Null | Frame::NullArray if resp3 => out.extend_from_slice(b"(null)"),
        Frame::Null | Frame::NullArray => out.extend_from_slice(b"NULL"),
        Frame::Array(items) | Frame::Push(items) => list(out, items, b"[", b']'),
        Frame::Set(items) if resp3 => list(out, items, b"~(", b')'),
        Frame::Set(items) => list(out, items, b"[", b']'),
        Frame::Map(pairs) if resp3 => {
            out.push(b'{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                human(out, k, resp3);
                out.extend_from_slice(b" => ");
                human(out, v, resp3);
            }
            out.push(b'}');
        }
        Frame::Map(pairs) => {
            let flat: Vec<Frame> = pairs.iter().flat_map(|(k, v)| [k.clone(), v.clone()]).collect();
            list(out, &flat, b"[", b']');
        }
        Frame::Boolean(b) if resp3 => out.extend_from_slice(if *b { b"#true" } else { b"#false" }),
        Frame::Boolean(b) => out.push(if *b { b'1' } else { b'0' }),
        Frame::Double(d) => {
            let mut text = Vec::new();
            resp::format_double(*d, &mut text);
            if resp3 {
                out.extend_from_slice(b"(double) ");
                out.extend_from_slice(&text);
            } else {
                resp::repr(&text, out);
            }
        }
        // Redis's debugger prints nothing for RESP3's big numbers and verbatim strings.
        Frame::BigNumber(_) | Frame::Verbatim { .. } if resp3 => {}
        Frame::BigNumber(b) | Frame::Verbatim { text: b, .. } => resp::repr(b, out),
        Frame::Attribute { value, .. } => human(out, value, resp3),
        Frame::Encoded(b) => {
            if let Ok(Some(f)) = resp::decode_reply(&mut resp::BytesMut::from(&b[..])) {
                human(out, &f, resp3);
            }
        }
    }
}

/// The debugger's side of `redis.call`: a VM's session slot.
pub(super) struct SlotLog(pub Slot);

impl CallLog for SlotLog {
    fn call(&self, argv: &[Bytes]) {
        log_call(&self.0, argv);
    }
    fn outcome(&self, reply: Result<(&Frame, bool), &[u8]>) {
        log_outcome(&self.0, reply);
    }
}

/// `<redis> cmd args...` before a `redis.call` while stepping (the first ten arguments).
fn log_call(slot: &Slot, argv: &[Bytes]) {
    let mut g = slot.lock();
    let Some(s) = g.as_mut().filter(|s| s.step) else { return };
    let mut line = b"<redis>".to_vec();
    for (j, a) in argv.iter().enumerate() {
        if j == 10 {
            line.extend_from_slice(format!(" ... ({} more)", argv.len() - j - 1).as_bytes());
            break;
        }
        line.push(b' ');
        line.extend_from_slice(a);
    }
    s.log(line);
}

/// `<reply> ...` after it, or `<error> ...` when the call was refused.
fn log_outcome(slot: &Slot, reply: Result<(&Frame, bool), &[u8]>) {
    let mut g = slot.lock();
    let Some(s) = g.as_mut().filter(|s| s.step) else { return };
    match reply {
        Ok((f, resp3)) => {
            // An error reply is an error raised in Lua first (Redis's luaPushErrorBuff logs it).
            if let Frame::Error(e) = f {
                s.log([b"<error> -".as_slice(), e].concat());
            }
            let mut line = b"<reply> ".to_vec();
            human(&mut line, f, resp3);
            s.log_max(line);
        }
        Err(msg) => {
            let mut line = b"<error> ".to_vec();
            line.extend_from_slice(msg);
            s.log(line);
        }
    }
}

/// `redis.debug(...)`: `<debug> line N: v1, v2...` while a session runs.
pub(super) fn debug_values(lua: &Lua, stack: &dyn Stack, slot: &Slot, args: MultiValue) {
    let line = match slot.lock().as_ref() {
        Some(s) => s.current,
        None => return,
    };
    let mut text = format!("<debug> line {line}: ").into_bytes();
    let values = stack.reprs(lua, args);
    text.extend_from_slice(&values.join(b", ".as_slice()));
    if let Some(s) = slot.lock().as_mut() {
        s.log(text);
    }
}

/// `redis.breakpoint()`: true, and a stop at the next line, while a session runs.
pub(super) fn breakpoint(slot: &Slot) -> bool {
    match slot.lock().as_mut() {
        Some(s) => {
            s.luabp = true;
            true
        }
        None => false,
    }
}

/// What the line hook does on an event of the script (Redis's `luaLdbLineHook`): stops when
/// stepping, at a breakpoint, or (`timed_out`) when a count event finds the run past its time
/// limit, then serves the debugger's commands until one resumes the script. An error stops it.
/// Returns whether it stopped, or the error the script is stopped with.
pub(super) fn on_line(
    lua: &Lua,
    stack: &dyn Stack,
    slot: &Slot,
    line: i64,
    timed_out: bool,
) -> Result<bool, &'static str> {
    {
        let mut g = slot.lock();
        let Some(s) = g.as_mut() else { return Ok(false) };
        s.current = line;
        let bp = s.is_breakpoint(line) || s.luabp;
        if !(s.step || bp || timed_out) {
            return Ok(false);
        }
        let reason = if bp {
            if s.luabp { "redis.breakpoint() called" } else { "break point" }
        } else if timed_out && !s.step {
            "timeout reached, infinite loop?"
        } else {
            "step over"
        };
        s.step = false;
        s.luabp = false;
        s.log(format!("* Stopped at {line}, stop reason = {reason}"));
        s.log_source_line(line);
        s.send_logs();
    }
    match repl(lua, stack, slot) {
        Err(Stop::Gone) if timed_out => Err("timeout during Lua debugging with client closing connection"),
        Err(Stop::Gone) | Ok(()) => Ok(true),
        Err(Stop::Error(e)) => Err(e),
    }
}

/// Serves debugger commands until one resumes the script (Redis's `ldbRepl`). The session's lock
/// is never held while Lua runs (`eval`, `redis`), whose calls log through it.
fn repl(lua: &Lua, stack: &dyn Stack, slot: &Slot) -> Result<(), Stop> {
    loop {
        let argv = {
            let mut g = slot.lock();
            let Some(s) = g.as_mut() else { return Ok(()) };
            s.next_command()?
        };
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        let with = |f: &mut dyn FnMut(&mut Session)| {
            if let Some(s) = slot.lock().as_mut() {
                f(s);
                s.send_logs();
            }
        };
        match name.as_str() {
            "h" | "help" => with(&mut |s| HELP.iter().for_each(|l| s.log(*l))),
            "s" | "step" | "n" | "next" => {
                if let Some(s) = slot.lock().as_mut() {
                    s.step = true;
                }
                return Ok(());
            }
            "c" | "continue" => return Ok(()),
            "t" | "trace" => {
                let frames = trace(lua);
                with(&mut |s| {
                    if frames.is_empty() {
                        s.log("<error> Can't retrieve Lua stack.");
                    }
                    for (level, (fname, line)) in frames.iter().enumerate() {
                        s.log(format!("{} {}:", if level == 0 { "In" } else { "From" }, fname));
                        s.log_source_line(*line);
                    }
                });
            }
            "m" | "maxlen" => with(&mut |s| s.set_maxlen(&argv)),
            "b" | "break" => with(&mut |s| s.breakpoints(&argv)),
            "e" | "eval" => {
                let code = argv[1..].join(b" ".as_slice());
                let line = stack.eval(lua, &code);
                with(&mut |s| match &line {
                    Ok(v) => s.log_max([b"<retval> ".as_slice(), v].concat()),
                    Err(e) => s.log([b"<error> ".as_slice(), e].concat()),
                });
            }
            "a" | "abort" => return Err(Stop::Error("script aborted for user request")),
            "r" | "redis" if argv.len() > 1 => {
                call_redis(lua, slot, &argv[1..]);
                with(&mut |_| {});
            }
            "p" | "print" => {
                let lines = stack.print(lua, argv.get(1).map(Vec::as_slice));
                with(&mut |s| match &lines {
                    Some(lines) if !lines.is_empty() => lines.iter().for_each(|l| s.log_max(l.clone())),
                    Some(_) => s.log("No local variables in the current context."),
                    None => s.log("No such variable."),
                });
            }
            "l" | "list" => with(&mut |s| {
                let mut around = s.current;
                if let Some(a) = argv.get(1) {
                    let n = atoi(a);
                    if n > 0 {
                        around = n;
                    }
                }
                let ctx = argv.get(2).map_or(5, |c| atoi(c));
                s.list(around, ctx);
            }),
            "w" | "whole" => with(&mut |s| s.list(1, 1_000_000)),
            _ => with(&mut |s| s.log("<error> Unknown Redis Lua debugger command or wrong number of arguments.")),
        }
    }
}

/// The debugger's `redis` command: `redis.call` with the arguments, logged as a step logs it.
fn call_redis(lua: &Lua, slot: &Slot, args: &[Vec<u8>]) {
    if let Some(s) = slot.lock().as_mut() {
        s.step = true;
    }
    let call = lua.globals().get::<mlua::Table>("redis").and_then(|r| r.get::<mlua::Function>("call"));
    if let Ok(call) = call {
        let args: mlua::Result<Vec<mlua::LuaString>> = args.iter().map(|a| lua.create_string(a)).collect();
        if let Ok(args) = args {
            let _ = call.call::<Value>(MultiValue::from_iter(args.into_iter().map(Value::String)));
        }
    }
    if let Some(s) = slot.lock().as_mut() {
        s.step = false;
    }
}

/// The script's frames from the current one out: (function name, current line) of each frame
/// of the script's own code (Redis's `ldbTrace`).
fn trace(lua: &Lua) -> Vec<(String, i64)> {
    let mut frames = Vec::new();
    for level in 0.. {
        let Some(frame) = lua.inspect_stack(level, |d| {
            let src = d.source().short_src.map(|s| s.into_owned()).unwrap_or_default();
            let name = d.names().name.map(|s| s.into_owned());
            (src, name, d.current_line())
        }) else {
            break;
        };
        let (src, name, line) = frame;
        if src.contains("user_script") {
            frames.push((name.unwrap_or_else(|| "top level".into()), line.map_or(-1, |l| l as i64)));
        }
    }
    frames
}

const HELP: &[&str] = &[
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_as_redis_forgiving_parser_does() {
        assert!(matches!(parse_command(b""), Parse::More));
        assert!(matches!(parse_command(b"*1\r\n$4\r\nst"), Parse::More));
        match parse_command(b"*2\r\n$1\r\np\r\n$3\r\nvar\r\n") {
            Parse::Command(a) => assert_eq!(a, vec![b"p".to_vec(), b"var".to_vec()]),
            _ => panic!("not parsed"),
        }
        // An inline command, an empty bulk, more than 1024 arguments: protocol errors.
        assert!(matches!(parse_command(b"step\r\n"), Parse::Error));
        assert!(matches!(parse_command(b"*1\r\n$0\r\n\r\n"), Parse::Error));
        assert!(matches!(parse_command(b"*1025\r\n"), Parse::Error));
        // A NUL inside an argument is part of it; before a header it hides the rest.
        match parse_command(b"*1\r\n$11\r\nhello\0world\r\n") {
            Parse::Command(a) => assert_eq!(a, vec![b"hello\0world".to_vec()]),
            _ => panic!("not parsed"),
        }
        assert!(matches!(parse_command(b"\0*1\r\n"), Parse::Error));
        assert!(matches!(parse_command(b"*1\0\r\n"), Parse::More));
    }

    #[test]
    fn replies_show_as_redis_shows_them() {
        let mut out = Vec::new();
        human(
            &mut out,
            &Frame::Array(vec![
                Frame::Integer(1),
                Frame::Bulk(Bytes::from_static(b"a\"b\n")),
                Frame::Null,
                Frame::Simple("OK".into()),
                Frame::Error("ERR x".into()),
            ]),
            false,
        );
        assert_eq!(String::from_utf8(out).unwrap(), r#"[1,"a\"b\n",NULL,"+OK","-ERR x"]"#);
    }

    #[test]
    fn atoi_is_c_atoi() {
        assert_eq!(atoi(b" 12x"), 12);
        assert_eq!(atoi(b"-3"), -3);
        assert_eq!(atoi(b"x"), 0);
    }
}
