//! Latch as the primary of a stock redis-server 7.0 replica: the full sync (diskless, and the old
//! `SYNC`'s `$<len>` form), then the stream; the data's digest equal on both sides.

mod common;

use common::{Latch, Raw, RedisServer, TempDir};
use std::time::{Duration, Instant};

/// The value of `field` in an INFO reply.
fn info_field(c: &mut Raw, section: &str, field: &str) -> Option<String> {
    let info = c.cmd(&[b"INFO", section.as_bytes()]);
    info.lines().find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
}

/// Waits (at most 20 s) until `done` holds.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn load(p: &mut Raw, from: usize, to: usize) {
    for i in from..to {
        let k = format!("k{i}");
        p.cmd(&[b"SET", k.as_bytes(), format!("v{i}").as_bytes()]);
        p.cmd(&[b"RPUSH", format!("list{}", i % 7).as_bytes(), k.as_bytes()]);
        p.cmd(&[b"HSET", format!("hash{}", i % 5).as_bytes(), k.as_bytes(), b"1"]);
        p.cmd(&[b"SADD", format!("set{}", i % 3).as_bytes(), k.as_bytes()]);
        p.cmd(&[b"ZADD", b"zset", i.to_string().as_bytes(), k.as_bytes()]);
        p.cmd(&[b"INCR", b"counter"]);
    }
}

/// Waits until the replica applied everything the primary has, then compares the digests.
fn same_digest(primary: &mut Raw, replica: &mut Raw) {
    wait_for("the replica to catch up", || {
        let offset = info_field(primary, "replication", "master_repl_offset");
        offset.is_some() && info_field(replica, "replication", "slave_repl_offset") == offset
    });
    let (a, b) = (primary.cmd(&[b"DEBUG", b"DIGEST"]), replica.cmd(&[b"DEBUG", b"DIGEST"]));
    assert_eq!(a, b, "digests differ");
    assert_ne!(a, "+0000000000000000000000000000000000000000");
}

#[test]
fn a_redis_replica_syncs_and_follows() {
    let latch = Latch::start(&["--enable-debug-command", "yes"]);
    let mut p = latch.raw();
    load(&mut p, 0, 300);
    p.cmd(&[b"SET", b"ttl", b"x", b"PX", b"600000"]);
    let port = latch.port.to_string();
    // The replica writes the file it receives into its `dir` (repl-diskless-load disabled).
    let dir = TempDir::new("replica");
    let args = ["--dir", dir.path(), "--replicaof", "127.0.0.1", &port, "--enable-debug-command", "yes"];
    let Some(redis) = RedisServer::start_with_or_skip("replication", &args) else {
        return;
    };
    let mut r = redis.raw();
    wait_for("the link to come up", || {
        info_field(&mut r, "replication", "master_link_status").as_deref() == Some("up")
    });
    same_digest(&mut p, &mut r);
    // The stream: writes of every kind, a transaction, a script, expiries made absolute.
    load(&mut p, 300, 400);
    p.cmd(&[b"MULTI"]);
    p.cmd(&[b"INCRBY", b"counter", b"10"]);
    p.cmd(&[b"DEL", b"k1"]);
    p.cmd(&[b"EXEC"]);
    p.cmd(&[
        b"EVAL",
        b"redis.call('SET', KEYS[1], ARGV[1]) return redis.call('INCR', KEYS[2])",
        b"2",
        b"s",
        b"n",
        b"v",
    ]);
    p.cmd(&[b"EXPIRE", b"k2", b"1000"]);
    p.cmd(&[b"SELECT", b"3"]);
    p.cmd(&[b"SET", b"other", b"db"]);
    same_digest(&mut p, &mut r);
    assert!(r.cmd(&[b"PTTL", b"k2"]).starts_with(':'));
    // What the primary says about it.
    let role = p.cmd(&[b"ROLE"]);
    assert!(role.contains("master") && role.contains(&redis.port.to_string()), "{role}");
    assert_eq!(info_field(&mut p, "replication", "connected_slaves").as_deref(), Some("1"));
    assert_eq!(info_field(&mut p, "stats", "sync_full").as_deref(), Some("1"));
}

#[test]
fn the_old_sync_gets_the_file_with_its_length_then_the_stream() {
    use std::io::{Read, Write};
    let latch = Latch::start(&[]);
    let mut p = latch.raw();
    p.cmd(&[b"SET", b"a", b"1"]);
    let mut s = std::net::TcpStream::connect(("127.0.0.1", latch.port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.write_all(b"SYNC\r\n").expect("write");
    let mut got = Vec::new();
    let mut chunk = [0u8; 65536];
    // `$<len>\r\n` and exactly len bytes of RDB (no CRLF after it), as Redis sends it.
    let (len, start) = loop {
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "closed");
        got.extend_from_slice(&chunk[..n]);
        if let Some(end) = got.windows(2).position(|w| w == b"\r\n") {
            let len: usize = std::str::from_utf8(&got[1..end]).expect("utf8").parse().expect("length");
            break (len, end + 2);
        }
    };
    assert_eq!(got[0], b'$');
    while got.len() < start + len {
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "closed");
        got.extend_from_slice(&chunk[..n]);
    }
    let rdb = &got[start..start + len];
    assert!(rdb.starts_with(b"REDIS0010"));
    let text = String::from_utf8_lossy(rdb);
    assert!(text.contains("repl-id") && text.contains("repl-offset"), "{text}");
    // Then the stream: the next write, after a SELECT.
    p.cmd(&[b"SET", b"b", b"2"]);
    let mut stream = got[start + len..].to_vec();
    let want = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\n2\r\n";
    while stream.len() < want.len() {
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "closed");
        stream.extend_from_slice(&chunk[..n]);
    }
    assert_eq!(String::from_utf8_lossy(&stream), String::from_utf8_lossy(want));
}
