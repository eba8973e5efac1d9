//! In-process test harness: a [`Server`] on a [`ManualClock`], clients that run commands without
//! sockets, and transcripts.
//!
//! ```text
//! > SETNX mykey Hello
//! :1
//! > GET mykey
//! "Hello"
//! ```
//! Replies are written in a compact one-line form (see [`show`]): `+OK`, `-ERR ...`, `:1`, `"bulk"`
//! (escaped like MONITOR output), `(nil)`, `(nil-array)`, `[a, b]` for arrays, `{k: v}` for maps,
//! `~[..]` for sets, `,1.5` for doubles, `#t`/`#f`.

use crate::client::Client;
use crate::clock::ManualClock;
use crate::config::Config;
use crate::server::Server;
use bytes::Bytes;
use resp::Frame;
use std::sync::Arc;

/// A server for tests.
pub struct TestServer {
    /// The server.
    pub srv: Arc<Server>,
    /// Its clock; advance it instead of sleeping.
    pub clock: Arc<ManualClock>,
}

impl Default for TestServer {
    fn default() -> Self {
        TestServer::new()
    }
}

impl TestServer {
    /// A server with default configuration, 4 shards, and the clock at a fixed Unix time.
    pub fn new() -> TestServer {
        let config = Config::new();
        config.set("shards", "4", true).expect("valid");
        TestServer::with_config(config)
    }

    /// A server whose host (memory figures, files) the test drives.
    pub fn with_host() -> (TestServer, Arc<crate::host::MemoryHost>) {
        let host = Arc::new(crate::host::MemoryHost::default());
        let config = Config::with_host(host.clone());
        config.set("shards", "4", true).expect("valid");
        (TestServer::with_config(config), host)
    }

    /// A server with the given configuration.
    pub fn with_config(config: Config) -> TestServer {
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let srv = Arc::new(Server::new(config, clock.clone()));
        TestServer { srv, clock }
    }

    /// A new connected client.
    pub fn client(&self) -> TestClient {
        TestClient {
            srv: self.srv.clone(),
            client: self.srv.new_client("127.0.0.1:50000".into(), "127.0.0.1:6379".into()),
        }
    }

    /// Runs a transcript on a fresh client (see the module docs); panics with a diff on mismatch.
    pub fn transcript(&self, text: &str) {
        self.client().transcript(text)
    }
}

/// Values Redis itself accepts but reads back as something it then refuses, which the config
/// read-back property (proptest and fuzz target) must leave out; both were checked against
/// redis-server 7.0.15, and Latch answers the same:
/// - `save` keeps its changes counts in a C int: `save "3 66666666666"` reads back as
///   `3 -2052810070`, refused ("Invalid save parameters");
/// - `replicaof "no one"` reads back as an empty value, refused ("wrong number of arguments").
pub fn redis_cannot_reload(name: &str, shown: &str) -> bool {
    (name.eq_ignore_ascii_case("save") && shown.split(' ').any(|w| w.starts_with('-')))
        || ((name.eq_ignore_ascii_case("replicaof") || name.eq_ignore_ascii_case("slaveof")) && shown.is_empty())
}

/// Commands a fuzz run may call with arbitrary arguments (proptests and the cargo-fuzz targets):
/// not the ones that block, stop the server, sleep, or turn the client into something else
/// (MONITOR, replication, subscriptions), nor scripts (fuzzed on their own).
pub fn fuzzable_commands() -> Vec<&'static str> {
    const EXCLUDED: &[&str] = &[
        "shutdown",
        "debug",
        "monitor",
        "sync",
        "psync",
        "wait",
        "waitaof",
        "failover",
        "replicaof",
        "slaveof",
        "quit",
        "subscribe",
        "psubscribe",
        "ssubscribe",
        "client",
        "script",
        "function",
        "eval",
        "evalsha",
        "eval_ro",
        "evalsha_ro",
        "fcall",
        "fcall_ro",
    ];
    crate::cmd::table()
        .all()
        .iter()
        .filter(|c| !c.flags.has(crate::command::Flags::BLOCKING))
        .map(|c| c.name)
        .filter(|n| !EXCLUDED.contains(n))
        .collect()
}

/// Arguments commands care about, for fuzzing (mixed with arbitrary bytes by the fuzzers).
pub const FUZZ_WORDS: &[&str] = &[
    "k",
    "k2",
    "h",
    "0",
    "1",
    "-1",
    "10",
    "2147483648",
    "-9223372036854775808",
    "*",
    "x",
    "EX",
    "PX",
    "NX",
    "XX",
    "GT",
    "LT",
    "WITHSCORES",
    "LIMIT",
    "+inf",
    "-inf",
    "(1",
    "[a",
    "-",
    "+",
    "1.5",
    "nan",
    "",
    "COUNT",
    "MATCH",
    "TYPE",
    "BY",
    "GET",
    "STORE",
    "LEFT",
    "RIGHT",
    "BEFORE",
    "AFTER",
    "IDX",
    "LEN",
    "REV",
];

/// Scripts that hand their ARGV[1] to the Lua libraries' decoders and to the parser (fuzzed with
/// arbitrary bytes); each must reply, whatever the bytes.
pub const LUA_DECODER_SCRIPTS: &[&str] = &[
    "return {pcall(cjson.decode, ARGV[1])}",
    // Decoders that return many values are called from a Lua function that gathers them: pcall
    // (a C function) pushing its status above hundreds of results trips Lua 5.1's own API check
    // (`L->top < L->ci->top`), which lua-src compiles in debug builds only (LUA_USE_APICHECK);
    // in release builds, as in Redis's, the push lands in the slots the callee's results left.
    "return {pcall(function() return {cmsgpack.unpack(ARGV[1])} end)}",
    "return {pcall(function() return {struct.unpack(ARGV[1], ARGV[1])} end)}",
    "return {pcall(struct.pack, ARGV[1], 1, 'x')}",
    "return {pcall(loadstring, ARGV[1])}",
    "local ok, v = pcall(cjson.decode, ARGV[1]) if ok then return v end return 0",
    "local ok, v = pcall(function() return (cmsgpack.unpack(ARGV[1])) end) if ok then return cmsgpack.pack(v) end return 0",
];

/// A client for tests.
pub struct TestClient {
    srv: Arc<Server>,
    /// The client state (db, protocol...).
    pub client: Client,
}

/// A client that goes away leaves the server's registry, as a closed connection does: fuzz runs
/// make hundreds of thousands of them, and INFO and CLIENT LIST walk the registry.
impl Drop for TestClient {
    fn drop(&mut self) {
        // A blocked client's connection stops waiting before it closes.
        if let Some(w) = self.client.blocked.clone() {
            w.cancel();
            self.srv.unblocked(&mut self.client);
        }
        self.srv.client_closed(&self.client);
    }
}

impl TestClient {
    /// Runs a command given as separate arguments. Messages that reached the client's outbox
    /// (pub/sub, MONITOR) are left there for [`TestClient::pushes`]; a reply that is only pushes
    /// (SUBSCRIBE's) is None.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Option<Frame> {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a.as_ref())).collect();
        // Background jobs (a BGSAVE's write) run between commands, as if their thread were quick.
        let host = self.srv.config.host_arc();
        host.run_queued();
        let reply = self.srv.execute(&mut self.client, &args);
        host.run_queued();
        reply.filter(|f| !matches!(f, Frame::Encoded(b) if b.is_empty())).map(decoded)
    }

    /// Takes the messages waiting in the client's outbox, in [`show`] form (a RESP3 client's are
    /// pushes, `>[...]`).
    pub fn pushes(&mut self) -> Vec<String> {
        let mut msgs = Vec::new();
        self.client.info.outbox.take(&mut msgs);
        msgs.iter().map(|m| self.show_message(m)).collect()
    }

    /// A message as the connection would write it to this client, read back, in [`show`] form.
    fn show_message(&self, m: &[u8]) -> String {
        let mut wire = resp::BytesMut::new();
        crate::message::put_message(&mut wire, self.client.proto, m);
        match resp::decode_reply(&mut wire) {
            Ok(Some(f)) => show(&f),
            other => panic!("bad message {:?}: {other:?}", crate::args::repr(m)),
        }
    }

    /// Runs a command line split like redis-cli/inline commands do; returns, in [`show`] form, what
    /// the connection would write: the messages in the outbox, then the reply, joined by ` | `.
    pub fn run(&mut self, line: &str) -> String {
        let args = resp::split_args(line.as_bytes()).unwrap_or_else(|| panic!("unbalanced quotes: {line}"));
        let reply = self.cmd(&args);
        let mut out = self.pushes();
        match reply {
            Some(f) => out.push(show(&f)),
            None if out.is_empty() => out.push("(no reply)".to_string()),
            None => {}
        }
        if let Some(line) = self.client.monitor_echo.take() {
            out.push(String::from_utf8_lossy(line.trim_ascii_end()).into_owned());
        }
        for m in std::mem::take(&mut self.client.after_reply) {
            out.push(self.show_message(&m));
        }
        out.join(" | ")
    }

    /// For a client blocked by its last command: the reply it got since (served by another client's
    /// write), in [`show`] form, or None while still waiting. Unblocks it once answered. A client
    /// woken to run its command again (a pause ended) runs it, as its connection would.
    pub fn blocked_reply(&mut self) -> Option<String> {
        let w = self.client.blocked.clone()?;
        match w.take() {
            crate::waiters::WaitState::Served(f) => {
                self.srv.unblocked(&mut self.client);
                Some(show(&f))
            }
            crate::waiters::WaitState::Retry => {
                self.srv.unblocked(&mut self.client);
                let reply = self.srv.execute(&mut self.client, &w.args).map(decoded);
                if self.client.blocked.is_some() {
                    return None;
                }
                Some(reply.as_ref().map_or_else(|| "(no reply)".to_string(), show))
            }
            _ => None,
        }
    }

    /// Lets a blocked client time out as its connection would at the deadline.
    pub fn time_out(&mut self) -> Option<String> {
        let w = self.client.blocked.clone()?;
        if w.cancel() {
            self.srv.unblocked(&mut self.client);
            return Some(show(&w.timeout_reply));
        }
        None
    }

    /// Runs a transcript; panics on the first mismatch.
    pub fn transcript(&mut self, text: &str) {
        let mut lines = text.lines().map(str::trim_start).filter(|l| !l.is_empty() && !l.starts_with('#')).peekable();
        while let Some(l) = lines.next() {
            let cmd = l.strip_prefix("> ").unwrap_or_else(|| panic!("expected '> command', got {l:?}"));
            let want = lines.next().unwrap_or_else(|| panic!("no expected reply after {cmd:?}"));
            let got = self.run(cmd);
            assert_eq!(got, want, "\n  command: {cmd}");
        }
    }
}

/// A reply as a client decodes it: one built as its wire bytes ([`Frame::Encoded`]) is read back
/// into frames, so tests see the same shapes whichever way a handler built its reply.
pub fn decoded(f: Frame) -> Frame {
    match f {
        Frame::Encoded(b) => match resp::decode_reply(&mut resp::BytesMut::from(&b[..])) {
            Ok(Some(f)) => f,
            other => panic!("bad encoded reply {:?}: {other:?}", crate::args::repr(&b)),
        },
        f => f,
    }
}

/// The compact one-line form of a reply used by transcripts.
pub fn show(f: &Frame) -> String {
    fn pairs(v: &[(Frame, Frame)]) -> String {
        v.iter().map(|(k, v)| format!("{}: {}", show(k), show(v))).collect::<Vec<_>>().join(", ")
    }
    fn list(v: &[Frame]) -> String {
        v.iter().map(show).collect::<Vec<_>>().join(", ")
    }
    match f {
        Frame::Simple(s) => format!("+{}", String::from_utf8_lossy(s)),
        Frame::Error(s) => format!("-{}", String::from_utf8_lossy(s)),
        Frame::Integer(i) => format!(":{i}"),
        Frame::Bulk(b) => crate::args::repr(b),
        Frame::Null => "(nil)".into(),
        Frame::NullArray => "(nil-array)".into(),
        Frame::Array(v) => format!("[{}]", list(v)),
        Frame::Map(v) => format!("{{{}}}", pairs(v)),
        Frame::Set(v) => format!("~[{}]", list(v)),
        Frame::Push(v) => format!(">[{}]", list(v)),
        Frame::Double(d) => {
            let mut o = Vec::new();
            resp::format_double(*d, &mut o);
            format!(",{}", String::from_utf8_lossy(&o))
        }
        Frame::Boolean(b) => if *b { "#t" } else { "#f" }.into(),
        Frame::BigNumber(b) => format!("({}", String::from_utf8_lossy(b)),
        Frame::Verbatim { text, .. } => crate::args::repr(text),
        Frame::Attribute { value, .. } => show(value),
        Frame::Encoded(_) => show(&decoded(f.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcript_runs() {
        TestServer::new().transcript(
            r#"
            > PING
            +PONG
            > SET k "hello world"
            +OK
            > GET k
            "hello world"
            > GET missing
            (nil)
            > NOSUCH a b
            -ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' 
            > GET
            -ERR wrong number of arguments for 'get' command
            "#,
        );
    }
}
