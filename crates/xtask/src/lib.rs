//! Maintenance tasks that derive data from Redis itself.
//!
//! `redis-commands`: Redis 7.0.15's command metadata (what `COMMAND` and `COMMAND DOCS` answer), read
//! from a running `redis-server` and written, normalised, to `crates/engine/data/` as one RESP3
//! value: a map from command name to `[info, docs]`, names sorted, subcommands sorted, so that the
//! file only changes when Redis's metadata does. The engine answers COMMAND INFO and COMMAND DOCS
//! from it for every command Redis has; its test (`tests/current.rs`) regenerates it from the
//! `redis-server` on PATH and fails when the committed file is stale.

use bytes::BytesMut;
use resp::{Frame, Protocol};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The Redis version the metadata must come from.
pub const REDIS_VERSION: &str = "7.0.15";

/// Where the metadata lives, relative to the workspace root.
pub const DATA_FILE: &str = "crates/engine/data/redis-7.0.15-commands.resp";

/// A RESP3 connection to a server on 127.0.0.1.
pub struct Conn {
    s: TcpStream,
    buf: BytesMut,
}

impl Conn {
    /// Connects and switches to RESP3.
    pub fn open(port: u16) -> std::io::Result<Conn> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut c = Conn { s, buf: BytesMut::new() };
        c.call(&["HELLO", "3"])?;
        Ok(c)
    }

    /// Sends a command and reads its reply.
    pub fn call(&mut self, args: &[&str]) -> std::io::Result<Frame> {
        let mut out = BytesMut::new();
        resp::encode_request(args, &mut out);
        self.s.write_all(&out)?;
        loop {
            let mut probe = self.buf.clone();
            match resp::decode_reply(&mut probe) {
                Ok(Some(f)) => {
                    self.buf = probe;
                    return Ok(f);
                }
                Ok(None) => {}
                Err(e) => return Err(std::io::Error::other(format!("bad reply: {e:?}"))),
            }
            let mut chunk = [0u8; 65536];
            let n = self.s.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::Error::other("connection closed"));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

fn text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Verbatim { text, .. } => String::from_utf8_lossy(text).into_owned(),
        other => format!("{other:?}"),
    }
}

/// An INFO entry with its subcommand entries sorted by name, recursively.
fn sort_info(f: Frame) -> Frame {
    match f {
        Frame::Array(mut v) if v.len() == 10 => {
            if let Frame::Array(subs) = &mut v[9] {
                let mut subs: Vec<Frame> = std::mem::take(subs).into_iter().map(sort_info).collect();
                subs.sort_by_key(|s| match s {
                    Frame::Array(e) => e.first().map(text).unwrap_or_default(),
                    _ => String::new(),
                });
                v[9] = Frame::Array(subs);
            }
            Frame::Array(v)
        }
        other => other,
    }
}

/// A DOCS map with its `subcommands` map sorted by name, recursively.
fn sort_docs(f: Frame) -> Frame {
    match f {
        Frame::Map(pairs) => Frame::Map(
            pairs
                .into_iter()
                .map(|(k, v)| {
                    if text(&k) == "subcommands"
                        && let Frame::Map(mut subs) = v
                    {
                        subs.sort_by_key(|(n, _)| text(n));
                        let subs = subs.into_iter().map(|(n, d)| (n, sort_docs(d))).collect();
                        return (k, Frame::Map(subs));
                    }
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// Reads every command's INFO and DOCS from the server on `port` (which must be Redis
/// [`REDIS_VERSION`]) and returns the data file's bytes.
pub fn redis_commands(port: u16) -> std::io::Result<Vec<u8>> {
    let mut c = Conn::open(port)?;
    let info = text(&c.call(&["INFO", "server"])?);
    let version = info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("?").trim().to_string();
    if version != REDIS_VERSION {
        return Err(std::io::Error::other(format!("the server is Redis {version}, not {REDIS_VERSION}")));
    }
    let Frame::Array(infos) = c.call(&["COMMAND"])? else { return Err(std::io::Error::other("COMMAND: not an array")) };
    let Frame::Map(docs) = c.call(&["COMMAND", "DOCS"])? else {
        return Err(std::io::Error::other("COMMAND DOCS: not a map"));
    };
    let mut docs: std::collections::HashMap<String, Frame> = docs.into_iter().map(|(k, v)| (text(&k), v)).collect();
    let mut entries: Vec<(String, Frame)> = infos
        .into_iter()
        .map(|i| {
            let name = match &i {
                Frame::Array(e) => e.first().map(text).unwrap_or_default(),
                _ => String::new(),
            };
            let d = docs.remove(&name).map(sort_docs).unwrap_or(Frame::Null);
            (name, Frame::Array(vec![sort_info(i), d]))
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let map = Frame::Map(entries.into_iter().map(|(n, v)| (Frame::Bulk(n.into()), v)).collect());
    let mut out = BytesMut::new();
    resp::encode(&map, Protocol::Resp3, &mut out);
    Ok(out.to_vec())
}

/// A `redis-server` from PATH on a free port of 127.0.0.1, without persistence; killed on drop.
pub struct RedisServer {
    child: std::process::Child,
    /// Its port.
    pub port: u16,
}

impl RedisServer {
    /// Starts one, or None when `redis-server` cannot be run.
    pub fn start() -> Option<RedisServer> {
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
            let child = std::process::Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .ok()?;
            let r = RedisServer { child, port };
            for _ in 0..200 {
                if let Ok(mut c) = Conn::open(port) {
                    let ours = format!("process_id:{}", r.child.id());
                    if c.call(&["INFO", "server"]).is_ok_and(|i| text(&i).contains(&ours)) {
                        return Some(r);
                    }
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        None
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
