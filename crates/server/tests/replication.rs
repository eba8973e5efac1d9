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

/// Writes the stream carries in their own forms: a transaction, a script, a relative expiry.
fn stream_mix(p: &mut Raw) {
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
    let latch = Latch::start(&["--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0"]);
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
    stream_mix(&mut p);
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
    // A replica does not touch the keyspace, and nothing but the stream is written to it: its
    // GET ends the link, as Redis ends it.
    s.write_all(b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n").expect("write");
    let mut rest = Vec::new();
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => rest.extend_from_slice(&chunk[..n]),
            Err(e) => panic!("the replica's link stayed open: {e}"),
        }
    }
    assert!(!String::from_utf8_lossy(&rest).contains("$1\r\n1"), "the replica was answered: {rest:?}");
    assert_eq!(p.cmd(&[b"PING"]), "+PONG\r\n");
}

/// While a disk-based sync's file is written the replica hears a newline each second (Redis
/// keeps a replica waiting for its BGSAVE alive so), then `$<len>` and the file.
#[test]
fn a_replica_hears_newlines_while_its_file_is_written() {
    use std::io::{Read, Write};
    let latch = Latch::start(&["--repl-diskless-sync", "no"]);
    let mut p = latch.raw();
    for i in 0..500 {
        p.cmd(&[b"SET", format!("k{i}").as_bytes(), b"v"]);
    }
    // 500 keys at 5 ms each: 2.5 s of writing.
    p.cmd(&[b"CONFIG", b"SET", b"rdb-key-save-delay", b"5000"]);
    let mut s = std::net::TcpStream::connect(("127.0.0.1", latch.port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    s.write_all(b"SYNC\r\n").expect("write");
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    while !got.contains(&b'$') {
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "closed");
        got.extend_from_slice(&chunk[..n]);
    }
    let before = &got[..got.iter().position(|&b| b == b'$').expect("$")];
    assert!(before.len() >= 2 && before.iter().all(|&b| b == b'\n'), "before the length: {before:?}");
}

/// Writes of the other types: HyperLogLog strings, geo sets, a counter with a TTL.
fn load_more_types(p: &mut Raw) {
    p.cmd(&[b"PFADD", b"hll", b"a", b"b", b"c"]);
    p.cmd(&[b"GEOADD", b"geo", b"13.361389", b"38.115556", b"Palermo"]);
    p.cmd(&[b"SET", b"ttl", b"x", b"PX", b"600000"]);
    p.cmd(&[b"SELECT", b"2"]);
    p.cmd(&[b"SET", b"db2", b"yes"]);
    p.cmd(&[b"SELECT", b"0"]);
}

#[test]
fn latch_replicates_a_redis_primary_and_resyncs_partially() {
    let Some(redis) = RedisServer::start_with_or_skip(
        "replication",
        &["--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes"],
    ) else {
        return;
    };
    let mut p = redis.raw();
    load(&mut p, 0, 300);
    load_more_types(&mut p);
    let port = redis.port.to_string();
    let latch = Latch::start(&["--replicaof", "127.0.0.1", &port, "--enable-debug-command", "yes"]);
    let mut r = latch.raw();
    wait_for("the link to come up", || {
        info_field(&mut r, "replication", "master_link_status").as_deref() == Some("up")
    });
    same_digest(&mut p, &mut r);
    // The stream: writes, a transaction, a script, a relative expiry.
    load(&mut p, 300, 400);
    stream_mix(&mut p);
    same_digest(&mut p, &mut r);
    // A replica: read-only, its role, what INFO says.
    assert_eq!(r.cmd(&[b"SET", b"x", b"y"]), "-READONLY You can't write against a read only replica.\r\n");
    assert_eq!(r.cmd(&[b"GET", b"k3"]), "$2\r\nv3\r\n");
    let role = r.cmd(&[b"ROLE"]);
    assert!(role.contains("slave") && role.contains(&port) && role.contains("connected"), "{role}");
    assert_eq!(
        r.cmd(&[b"WAIT", b"0", b"0"]),
        "-ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.\r\n"
    );
    assert!(r.cmd(&[b"CLIENT", b"LIST", b"TYPE", b"master"]).contains("flags=M"));
    // A key whose TTL passed stays until the primary deletes it; reads see it gone meanwhile.
    p.cmd(&[b"DEBUG", b"SET-ACTIVE-EXPIRE", b"0"]);
    p.cmd(&[b"SET", b"short", b"x", b"PX", b"50"]);
    same_digest(&mut p, &mut r);
    std::thread::sleep(Duration::from_millis(120));
    let before = r.cmd(&[b"DBSIZE"]);
    assert_eq!(r.cmd(&[b"GET", b"short"]), "$-1\r\n");
    assert_eq!(r.cmd(&[b"DBSIZE"]), before, "the replica deleted an expired key itself");
    assert_eq!(p.cmd(&[b"GET", b"short"]), "$-1\r\n");
    same_digest(&mut p, &mut r);
    assert_ne!(r.cmd(&[b"DBSIZE"]), before, "the primary's DEL did not arrive");
    // The link dropped: the replica continues from its offset.
    assert_eq!(r.cmd(&[b"CLIENT", b"KILL", b"TYPE", b"master"]), ":1\r\n");
    load(&mut p, 400, 450);
    wait_for("a partial resync", || info_field(&mut p, "stats", "sync_partial_ok").as_deref() == Some("1"));
    same_digest(&mut p, &mut r);
    assert_eq!(info_field(&mut p, "stats", "sync_full").as_deref(), Some("1"));
}

#[test]
fn a_promoted_replica_keeps_the_history_and_the_old_primary_follows_it_partially() {
    let a = Latch::start(&["--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0"]);
    let b = Latch::start(&["--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0"]);
    let (mut pa, mut pb) = (a.raw(), b.raw());
    load(&mut pa, 0, 200);
    load_more_types(&mut pa);
    assert_eq!(pb.cmd(&[b"REPLICAOF", b"127.0.0.1", a.port.to_string().as_bytes()]), "+OK\r\n");
    assert_eq!(
        pb.cmd(&[b"REPLICAOF", b"127.0.0.1", a.port.to_string().as_bytes()]),
        "+OK Already connected to specified master\r\n"
    );
    wait_for("the link to come up", || {
        info_field(&mut pb, "replication", "master_link_status").as_deref() == Some("up")
    });
    // Scripts on a read-only replica: one whose shebang lets it write is refused up front, one
    // without flags at its first write, one declaring no-writes runs.
    assert_eq!(
        pb.cmd(&[b"EVAL", b"#!lua\nreturn 1", b"0"]),
        "-READONLY You can't write against a read only replica.\r\n"
    );
    let r = pb.cmd(&[b"EVAL", b"return redis.call('set', 'x', '1')", b"0"]);
    assert!(r.starts_with("-READONLY You can't write against a read only replica. script: "), "{r}");
    assert_eq!(pb.cmd(&[b"EVAL", b"#!lua flags=no-writes\nreturn 1", b"0"]), ":1\r\n");
    load(&mut pa, 200, 250);
    // WAIT: the replica acknowledges what this client wrote.
    assert_eq!(pa.cmd(&[b"WAIT", b"1", b"5000"]), ":1\r\n");
    assert_eq!(pa.cmd(&[b"WAIT", b"2", b"100"]), ":1\r\n");
    same_digest(&mut pa, &mut pb);
    let old_id = info_field(&mut pa, "replication", "master_replid").expect("replid");
    // Promotion: a new id, the old one as the secondary. Inside a transaction holding every shard
    // (psync2-pingoff's `MULTI; DEBUG SLEEP; SLAVEOF NO ONE; EXEC`), which the promotion works
    // through rather than locking them again.
    assert_eq!(pb.cmd(&[b"MULTI"]), "+OK\r\n");
    assert_eq!(pb.cmd(&[b"DEBUG", b"SLEEP", b"0"]), "+QUEUED\r\n");
    assert_eq!(pb.cmd(&[b"SLAVEOF", b"NO", b"ONE"]), "+QUEUED\r\n");
    assert_eq!(pb.cmd(&[b"EXEC"]), "*2\r\n+OK\r\n+OK\r\n");
    assert_eq!(info_field(&mut pb, "replication", "role").as_deref(), Some("master"));
    assert_eq!(info_field(&mut pb, "replication", "master_replid2").as_deref(), Some(old_id.as_str()));
    assert_eq!(pb.cmd(&[b"SET", b"after", b"promotion"]), "+OK\r\n");
    // The old primary follows the new one, continuing from where they were the same.
    assert_eq!(pa.cmd(&[b"REPLICAOF", b"127.0.0.1", b.port.to_string().as_bytes()]), "+OK\r\n");
    wait_for("the old primary to follow", || {
        info_field(&mut pa, "replication", "master_link_status").as_deref() == Some("up")
    });
    assert_eq!(info_field(&mut pb, "stats", "sync_partial_ok").as_deref(), Some("1"));
    assert_eq!(info_field(&mut pb, "stats", "sync_full").as_deref(), Some("0"));
    load(&mut pb, 250, 260);
    assert_eq!(pb.cmd(&[b"WAIT", b"1", b"5000"]), ":1\r\n");
    same_digest(&mut pb, &mut pa);
    assert_eq!(pa.cmd(&[b"GET", b"after"]), "$9\r\npromotion\r\n");
}

/// The integer of a `:<n>\r\n` reply.
fn int(reply: &str) -> i64 {
    reply.trim_start_matches(':').trim_end().parse().unwrap_or_else(|_| panic!("not an integer: {reply}"))
}

#[test]
fn lock_grants_reach_latch_replicas_and_stock_replicas_get_no_op_of_their_length() {
    let p = Latch::start(&["--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0"]);
    let mut pc = p.raw();
    let port = p.port.to_string();
    let l = Latch::start(&["--replicaof", "127.0.0.1", &port, "--enable-debug-command", "yes"]);
    let mut lc = l.raw();
    let dir = TempDir::new("stock-replica");
    // Redis's test configuration: a command its replica rejects is a panic.
    let args = ["--dir", dir.path(), "--replicaof", "127.0.0.1", &port, "--propagation-error-behavior", "panic"];
    let Some(redis) = RedisServer::start_with_or_skip("replication", &args) else {
        return;
    };
    let mut rc = redis.raw();
    wait_for("both links", || {
        info_field(&mut lc, "replication", "master_link_status").as_deref() == Some("up")
            && info_field(&mut rc, "replication", "master_link_status").as_deref() == Some("up")
    });
    let token = int(&pc.cmd(&[b"LOCK", b"job", b"worker-1", b"60000"]));
    pc.cmd(&[b"SET", b"after", b"lock"]);
    assert_eq!(int(&pc.cmd(&[b"WAIT", b"2", b"5000"])), 2);
    // The Latch replica holds the same lock; the stock one ran an ECHO in its place and is at the
    // same offset.
    let info = lc.cmd(&[b"LOCKINFO", b"job"]);
    assert!(info.contains("worker-1") && info.contains(&token.to_string()), "{info}");
    assert_eq!(rc.cmd(&[b"EXISTS", b"job"]), ":0\r\n");
    assert_eq!(rc.cmd(&[b"GET", b"after"]), "$4\r\nlock\r\n");
    let offset = info_field(&mut pc, "replication", "master_repl_offset");
    assert_eq!(info_field(&mut rc, "replication", "slave_repl_offset"), offset);
    assert_eq!(info_field(&mut lc, "replication", "slave_repl_offset"), offset);
    // Promoted, the Latch replica never mints a token at or below one the old primary granted.
    assert_eq!(lc.cmd(&[b"REPLICAOF", b"NO", b"ONE"]), "+OK\r\n");
    let next = int(&lc.cmd(&[b"LOCK", b"other", b"worker-2", b"60000"]));
    assert!(next > token, "{next} after {token}");
}

/// `redis.set_repl` decides where a script's writes go, as in Redis: REPL_NONE nowhere,
/// REPL_AOF to the AOF only, REPL_ALL (the default) everywhere; the replica holds `a` and `d`, and
/// the primary reloaded from its AOF `a`, `c` and `d` (Redis's "Test selective replication of
/// certain Redis commands from Lua").
#[test]
fn set_repl_decides_where_a_scripts_writes_go() {
    let dir = TempDir::new("set-repl");
    let p = Latch::start(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
        "--appendonly",
        "yes",
        "--dir",
        dir.path(),
    ]);
    let mut pc = p.raw();
    let port = p.port.to_string();
    let r = Latch::start(&["--replicaof", "127.0.0.1", &port]);
    let mut rc = r.raw();
    wait_for("the link", || info_field(&mut rc, "replication", "master_link_status").as_deref() == Some("up"));
    let script = "redis.call('set','a','1'); redis.set_repl(redis.REPL_NONE); redis.call('set','b','2'); \
                  redis.set_repl(redis.REPL_AOF); redis.call('set','c','3'); redis.set_repl(redis.REPL_ALL); \
                  redis.call('set','d','4')";
    pc.cmd(&[b"EVAL", script.as_bytes(), b"0"]);
    let mget = |c: &mut Raw| c.cmd(&[b"MGET", b"a", b"b", b"c", b"d"]);
    assert_eq!(int(&pc.cmd(&[b"WAIT", b"1", b"5000"])), 1);
    assert_eq!(mget(&mut rc), "*4\r\n$1\r\n1\r\n$-1\r\n$-1\r\n$1\r\n4\r\n");
    assert_eq!(mget(&mut pc), "*4\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n");
    assert_eq!(pc.cmd(&[b"DEBUG", b"LOADAOF"]), "+OK\r\n");
    assert_eq!(mget(&mut pc), "*4\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n$1\r\n4\r\n");
    // The next script starts at REPL_ALL again.
    pc.cmd(&[b"EVAL", b"redis.call('set','e','5')", b"0"]);
    assert_eq!(int(&pc.cmd(&[b"WAIT", b"1", b"5000"])), 1);
    assert_eq!(rc.cmd(&[b"GET", b"e"]), "$1\r\n5\r\n");
}

#[test]
fn a_restarted_replica_continues_from_the_offset_its_file_recorded() {
    let p = Latch::start(&["--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0"]);
    let mut pc = p.raw();
    load(&mut pc, 0, 100);
    let port = p.port.to_string();
    let dir = TempDir::new("restarted-replica");
    let args = ["--dir", dir.path(), "--replicaof", "127.0.0.1", &port, "--enable-debug-command", "yes"];
    {
        let r = Latch::start(&args);
        let mut rc = r.raw();
        wait_for("the link", || info_field(&mut rc, "replication", "master_link_status").as_deref() == Some("up"));
        pc.cmd(&[b"SELECT", b"4"]);
        pc.cmd(&[b"SET", b"in4", b"x"]);
        same_digest(&mut pc, &mut rc);
        // SAVE writes the stream's id, offset and database into the file.
        assert_eq!(rc.cmd(&[b"SAVE"]), "+OK\r\n");
    }
    // Written while the replica was down; in database 4, where the stream was.
    pc.cmd(&[b"SET", b"while-down", b"y"]);
    let r = Latch::start(&args);
    let mut rc = r.raw();
    wait_for("the link again", || info_field(&mut rc, "replication", "master_link_status").as_deref() == Some("up"));
    same_digest(&mut pc, &mut rc);
    let stats = pc.cmd(&[b"INFO", b"stats"]);
    assert_eq!(info_field(&mut pc, "stats", "sync_full").as_deref(), Some("1"), "{stats}");
    assert_eq!(info_field(&mut pc, "stats", "sync_partial_ok").as_deref(), Some("1"), "{stats}");
    rc.cmd(&[b"SELECT", b"4"]);
    assert_eq!(rc.cmd(&[b"GET", b"while-down"]), "$1\r\ny\r\n");
}

#[test]
fn replicas_that_sync_together_under_writes_get_the_same_data() {
    for diskless in ["no", "yes"] {
        let p = Latch::start(&["--enable-debug-command", "yes", "--repl-diskless-sync", diskless]);
        let mut pc = p.raw();
        for i in 0..20 {
            let args: Vec<Vec<u8>> = (0..500).flat_map(|j| [format!("k{i}:{j}").into_bytes(), b"v".to_vec()]).collect();
            let mut cmd: Vec<&[u8]> = vec![b"MSET"];
            cmd.extend(args.iter().map(Vec::as_slice));
            pc.cmd(&cmd);
        }
        let port = p.port.to_string();
        let replicas: Vec<Latch> = (0..3).map(|_| Latch::start(&["--enable-debug-command", "yes"])).collect();
        // A writer goes on while the replicas ask for their full syncs at once.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (stop, mut w) = (stop.clone(), p.raw());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && n < 200_000 {
                    w.cmd(&[b"INCR", format!("k{}:{}", n % 20, n % 500).as_bytes()]);
                    w.cmd(&[b"RPUSH", b"log", n.to_string().as_bytes()]);
                    n += 1;
                }
            })
        };
        let mut rcs: Vec<Raw> = replicas.iter().map(Latch::raw).collect();
        for rc in &mut rcs {
            rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
        }
        // While they sync, a BGSAVE finds the one snapshot slot taken or free, never shared.
        let _ = pc.cmd(&[b"BGSAVE"]);
        for rc in &mut rcs {
            wait_for("the links", || info_field(rc, "replication", "master_link_status").as_deref() == Some("up"));
        }
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().expect("writer");
        for rc in &mut rcs {
            same_digest(&mut pc, rc);
        }
        // A disk-based sync's file was unlinked once written: nothing is left in `dir`.
        let reply = pc.cmd(&[b"CONFIG", b"GET", b"dir"]);
        let dir = reply.lines().filter(|l| !l.starts_with(['*', '$'])).nth(1).expect("dir").to_string();
        let left: Vec<String> = std::fs::read_dir(&dir)
            .expect("dir")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.contains("-repl-"))
            .collect();
        assert!(left.is_empty(), "diskless {diskless}: sync files left in {dir}: {left:?}");
    }
}

/// `repl-diskless-sync-max-replicas`: replicas that wait for a diskless sync together share one
/// snapshot, started as soon as enough of them wait (here long before the 60 s delay), and get
/// the same data. A stock redis-server replica joins with Latch ones.
#[test]
fn replicas_waiting_together_share_one_diskless_snapshot() {
    let p = Latch::start(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync",
        "yes",
        "--repl-diskless-sync-delay",
        "60",
        "--repl-diskless-sync-max-replicas",
        "3",
    ]);
    let mut pc = p.raw();
    load(&mut pc, 0, 300);
    let forks = info_field(&mut pc, "stats", "total_forks").expect("total_forks");
    let port = p.port.to_string();
    let latch: Vec<Latch> = (0..2).map(|_| Latch::start(&["--enable-debug-command", "yes"])).collect();
    let redis = RedisServer::start_with_or_skip("a redis-server replica", &["--enable-debug-command", "yes"]);
    let mut rcs: Vec<Raw> = latch.iter().map(Latch::raw).collect();
    rcs.extend(redis.iter().map(RedisServer::raw));
    let wanted = if redis.is_some() { 3 } else { 2 };
    if redis.is_none() {
        pc.cmd(&[b"CONFIG", b"SET", b"repl-diskless-sync-max-replicas", b"2"]);
    }
    for (i, rc) in rcs.iter_mut().enumerate() {
        rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
        if i + 1 < wanted {
            // Fewer than the number wait: nothing starts before the delay.
            std::thread::sleep(Duration::from_millis(300));
            assert_eq!(info_field(rc, "replication", "master_link_status").as_deref(), Some("down"));
        }
    }
    for rc in &mut rcs {
        wait_for("the links", || info_field(rc, "replication", "master_link_status").as_deref() == Some("up"));
    }
    let forks_after: u64 = info_field(&mut pc, "stats", "total_forks").expect("total_forks").parse().expect("number");
    assert_eq!(forks_after, forks.parse::<u64>().expect("number") + 1, "one snapshot for every replica");
    assert_eq!(info_field(&mut pc, "stats", "sync_full").as_deref(), Some(wanted.to_string().as_str()));
    load(&mut pc, 300, 320);
    for rc in &mut rcs {
        same_digest(&mut pc, rc);
    }
}

/// Disk-based syncs are shared as Redis shares a BGSAVE for SYNC: replicas that ask while a
/// disk-based sync's file is being written (stretched here by `rdb-key-save-delay`) take that
/// file, with the stream from its offset, instead of waiting for it and starting their own.
/// Writes go on meanwhile; a stock redis-server replica joins Latch ones.
#[test]
fn replicas_that_come_during_a_disk_based_sync_share_its_file() {
    let p = Latch::start(&["--enable-debug-command", "yes", "--repl-diskless-sync", "no"]);
    let mut pc = p.raw();
    load(&mut pc, 0, 400);
    // About 420 keys at 5 ms each: the file takes two seconds to write.
    pc.cmd(&[b"CONFIG", b"SET", b"rdb-key-save-delay", b"5000"]);
    let forks: u64 = info_field(&mut pc, "stats", "total_forks").expect("total_forks").parse().expect("number");
    let port = p.port.to_string();
    let latch: Vec<Latch> = (0..2).map(|_| Latch::start(&["--enable-debug-command", "yes"])).collect();
    let redis = RedisServer::start_with_or_skip("a redis-server replica", &["--enable-debug-command", "yes"]);
    let mut rcs: Vec<Raw> = latch.iter().map(Latch::raw).collect();
    rcs.extend(redis.iter().map(RedisServer::raw));
    rcs[0].cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
    wait_for("the first sync's file to be under way", || {
        info_field(&mut pc, "persistence", "rdb_bgsave_in_progress").as_deref() == Some("1")
    });
    pc.cmd(&[b"INCR", b"during"]);
    for rc in &mut rcs[1..] {
        rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
    }
    pc.cmd(&[b"INCR", b"during"]);
    stream_mix(&mut pc);
    assert_eq!(
        info_field(&mut pc, "persistence", "rdb_bgsave_in_progress").as_deref(),
        Some("1"),
        "the others asked while the file was written"
    );
    for rc in &mut rcs {
        wait_for("the links", || info_field(rc, "replication", "master_link_status").as_deref() == Some("up"));
    }
    pc.cmd(&[b"CONFIG", b"SET", b"rdb-key-save-delay", b"0"]);
    let forks_after: u64 = info_field(&mut pc, "stats", "total_forks").expect("total_forks").parse().expect("number");
    assert_eq!(forks_after, forks + 1, "one snapshot for every replica");
    assert_eq!(info_field(&mut pc, "stats", "sync_full"), Some(rcs.len().to_string()));
    load(&mut pc, 400, 420);
    for rc in &mut rcs {
        same_digest(&mut pc, rc);
        assert_eq!(rc.cmd(&[b"GET", b"during"]), "$1\r\n2\r\n");
    }
}

/// Collects what a server logged until `until` appears (at most 15 s).
fn log_until(l: &Latch, until: &str) -> String {
    let mut seen = String::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(15)
        && let Ok(line) = l.log.recv_timeout(Duration::from_secs(15))
    {
        seen.push_str(&line);
        seen.push('\n');
        if line.contains(until) {
            return seen;
        }
    }
    panic!("no '{until}' in the log:\n{seen}")
}

/// A shutdown waits for a lagging replica (Redis 7.0's `shutdown-timeout`): SHUTDOWN blocks its
/// client, writes pause and INFO shows `shutdown_in_milliseconds`; SHUTDOWN ABORT answers the
/// waiting client with an error and writes go on; a SIGTERM's shutdown exits only once the
/// replica, frozen by DEBUG SLEEP meanwhile, has the last write.
#[test]
fn a_shutdown_waits_for_a_lagging_replica() {
    let mut p = Latch::start(&["--enable-debug-command", "yes", "--save", ""]);
    let r = Latch::start(&["--enable-debug-command", "yes"]);
    let (mut pc, mut rc) = (p.raw(), r.raw());
    let port = p.port.to_string();
    rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
    wait_for("the link", || info_field(&mut rc, "replication", "master_link_status").as_deref() == Some("up"));
    pc.cmd(&[b"SET", b"k", b"1"]);
    same_digest(&mut pc, &mut rc);

    let freeze = |secs: &'static [u8]| {
        let mut c = r.raw();
        std::thread::spawn(move || c.cmd(&[b"DEBUG", b"SLEEP", secs]))
    };
    let frozen = freeze(b"3");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(pc.cmd(&[b"INCR", b"k"]), ":2\r\n");
    let mut waiting = p.raw();
    waiting.send(b"*1\r\n$8\r\nSHUTDOWN\r\n");
    wait_for("the shutdown to wait", || info_field(&mut pc, "server", "shutdown_in_milliseconds").is_some());
    let left: i64 = info_field(&mut pc, "server", "shutdown_in_milliseconds").expect("field").parse().expect("ms");
    assert!(left > 0 && left <= 10_000, "{left}");
    assert_eq!(info_field(&mut pc, "clients", "blocked_clients").as_deref(), Some("1"));
    assert_eq!(pc.cmd(&[b"SHUTDOWN", b"ABORT"]), "+OK\r\n");
    assert_eq!(String::from_utf8_lossy(&waiting.reply_bytes()), "-ERR Errors trying to SHUTDOWN. Check logs.\r\n");
    assert_eq!(pc.cmd(&[b"SET", b"after", b"abort"]), "+OK\r\n", "writes go on");
    assert_eq!(pc.cmd(&[b"SHUTDOWN", b"ABORT"]), "-ERR No shutdown in progress.\r\n");
    frozen.join().expect("sleep");
    same_digest(&mut pc, &mut rc);

    let frozen = freeze(b"1");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(pc.cmd(&[b"INCR", b"k"]), ":3\r\n");
    let status = std::process::Command::new("kill").args(["-TERM", &p.pid().to_string()]).status().expect("kill");
    assert!(status.success());
    let log = log_until(&p, "ready to exit");
    assert!(log.contains("Waiting for replicas before shutting down."), "{log}");
    assert!(log.contains("1 of 1 replicas are in sync when shutting down."), "{log}");
    assert!(p.wait_exit(Duration::from_secs(10)).is_some(), "the primary did not exit");
    frozen.join().expect("sleep");
    assert_eq!(rc.cmd(&[b"GET", b"k"]), "$1\r\n3\r\n", "the replica got the last write before the primary went");
}

/// `repl-diskless-load swapdb`: a file from the primary that does not load (cut short here, from
/// a fake primary on loopback) leaves the replica its old data and function libraries, as Redis's
/// disklessLoad backup does; without swapdb the old data is gone first.
/// Plays a primary's side of a replica's handshake on the first connection to `fake`: `+PONG` to
/// PING, `+OK` to the rest, until the replica asks to sync (PSYNC or SYNC); the connection is then
/// the caller's, to send the sync.
fn fake_primary_handshake(fake: &std::net::TcpListener) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let (mut s, _) = fake.accept().expect("accept");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut buf = resp::BytesMut::new();
    let mut chunk = [0u8; 4096];
    loop {
        let cmd = loop {
            if let Ok(Some(f)) = resp::decode_reply(&mut buf) {
                break format!("{f:?}").to_ascii_uppercase();
            }
            let n = s.read(&mut chunk).expect("read");
            assert!(n > 0, "the replica closed during the handshake");
            buf.extend_from_slice(&chunk[..n]);
        };
        let first = |name: &str| cmd.starts_with(&format!("ARRAY([BULK(B\"{name}\")"));
        if first("PSYNC") || first("SYNC") {
            return s;
        }
        s.write_all(if first("PING") { b"+PONG\r\n" } else { b"+OK\r\n" }).expect("write");
    }
}

/// A replica with `repl-diskless-load` set loads the primary's file as it arrives (Redis's
/// diskless load): it shows it loads before the file is whole, and ends with the primary's data.
#[test]
fn a_diskless_load_starts_before_the_file_is_whole() {
    use std::io::{Read, Write};
    // The file a primary would send: a saved dataset of several types.
    let dir = TempDir::new("diskless-load-source");
    let src = Latch::start(&["--dir", dir.path(), "--enable-debug-command", "yes"]);
    let mut sc = src.raw();
    sc.cmd(&[b"DEBUG", b"POPULATE", b"3000", b"k", b"100"]);
    sc.cmd(&[b"RPUSH", b"list", b"a", b"b"]);
    sc.cmd(&[b"HSET", b"hash", b"f", b"v"]);
    sc.cmd(&[b"XADD", b"stream", b"1-1", b"f", b"v"]);
    assert_eq!(sc.cmd(&[b"SAVE"]), "+OK\r\n");
    let digest = sc.cmd(&[b"DEBUG", b"DIGEST"]);
    let file = std::fs::read(std::path::Path::new(dir.path()).join("dump.rdb")).expect("the saved file");
    for mode in ["on-empty-db", "swapdb"] {
        let r = Latch::start(&["--repl-diskless-load", mode, "--enable-debug-command", "yes"]);
        let mut rc = r.raw();
        let fake = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = fake.local_addr().expect("addr").port();
        let (half_sent, rest) = (std::sync::mpsc::channel::<()>(), std::sync::mpsc::channel::<()>());
        let body = file.clone();
        let primary = std::thread::spawn(move || {
            let mut s = fake_primary_handshake(&fake);
            let mark = "m".repeat(40);
            let head = format!("+FULLRESYNC {} 0\r\n$EOF:{mark}\r\n", "f".repeat(40));
            s.write_all(head.as_bytes()).expect("write");
            let half = body.len() / 2;
            s.write_all(&body[..half]).expect("write");
            half_sent.0.send(()).expect("told");
            rest.1.recv().expect("go on");
            s.write_all(&body[half..]).expect("write");
            s.write_all(mark.as_bytes()).expect("write");
            // The replica acknowledges; the link stays up until the test ends.
            let _ = s.read(&mut [0u8; 4096]);
            std::thread::sleep(Duration::from_millis(300));
        });
        rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.to_string().as_bytes()]);
        half_sent.1.recv_timeout(Duration::from_secs(10)).expect("half the file sent");
        log_until(&r, "MASTER <-> REPLICA sync: Loading DB in memory");
        let info = rc.cmd(&[b"INFO", b"persistence"]);
        assert!(info.contains("loading:1"), "{mode}: loading while the file is half there: {info}");
        assert!(rc.cmd(&[b"GET", b"list"]).starts_with("-LOADING"), "{mode}");
        rest.0.send(()).expect("the rest");
        log_until(&r, "MASTER <-> REPLICA sync: Finished with success");
        assert_eq!(rc.cmd(&[b"DEBUG", b"DIGEST"]), digest, "{mode}");
        primary.join().expect("fake primary");
        rc.cmd(&[b"REPLICAOF", b"NO", b"ONE"]);
    }
}

#[test]
fn a_bad_file_leaves_a_swapdb_replica_its_old_data() {
    use std::io::Write;
    for (mode, kept) in [("swapdb", true), ("disabled", false)] {
        let r = Latch::start(&["--repl-diskless-load", mode]);
        let mut rc = r.raw();
        rc.cmd(&[b"SET", b"mykey", b"myvalue"]);
        rc.cmd(&[
            b"FUNCTION",
            b"LOAD",
            b"#!lua name=test\nredis.register_function('test', function() return 'hello1' end)",
        ]);
        let fake = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = fake.local_addr().expect("addr").port();
        let primary = std::thread::spawn(move || {
            let mut s = fake_primary_handshake(&fake);
            // A file cut short: a string key whose value never comes.
            let file = b"REDIS0010\xfe\x00\x00\x03key";
            let head = format!("+FULLRESYNC {} 0\r\n${}\r\n", "f".repeat(40), file.len());
            s.write_all(head.as_bytes()).expect("write");
            s.write_all(file).expect("write");
            std::thread::sleep(Duration::from_millis(500));
        });
        rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.to_string().as_bytes()]);
        primary.join().expect("fake primary");
        log_until(&r, "Failed trying to load the MASTER synchronization DB");
        let (get, functions) = (rc.cmd(&[b"GET", b"mykey"]), rc.cmd(&[b"FUNCTION", b"LIST"]));
        if kept {
            assert_eq!(get, "$7\r\nmyvalue\r\n", "{mode}");
            assert!(functions.contains("test"), "{mode}: {functions}");
        } else {
            assert_eq!(get, "$-1\r\n", "{mode}");
        }
        rc.cmd(&[b"REPLICAOF", b"NO", b"ONE"]);
    }
}

/// CLIENT PAUSE WRITE on a replica holds back its primary's writes as Redis 7.0 does: the stream
/// is read (`slave_read_repl_offset` reaches the primary's offset) but not applied
/// (`slave_repl_offset` stands, the old value is read), until CLIENT UNPAUSE.
#[test]
fn a_paused_replica_reads_its_primarys_writes_and_applies_them_after_the_pause() {
    let p = Latch::start(&["--repl-diskless-sync-delay", "0"]);
    let mut pc = p.raw();
    let port = p.port.to_string();
    let r = Latch::start(&["--replicaof", "127.0.0.1", &port]);
    let mut rc = r.raw();
    wait_for("the link", || info_field(&mut rc, "replication", "master_link_status").as_deref() == Some("up"));
    pc.cmd(&[b"SET", b"foo", b"bar"]);
    let before = info_field(&mut pc, "replication", "master_repl_offset");
    wait_for("the first write", || info_field(&mut rc, "replication", "slave_repl_offset") == before);
    assert_eq!(rc.cmd(&[b"CLIENT", b"PAUSE", b"100000", b"WRITE"]), "+OK\r\n");
    pc.cmd(&[b"SET", b"foo", b"baz"]);
    let after = info_field(&mut pc, "replication", "master_repl_offset");
    assert_ne!(after, before);
    wait_for("the read", || info_field(&mut rc, "replication", "slave_read_repl_offset") == after);
    assert_eq!(info_field(&mut rc, "replication", "slave_repl_offset"), before);
    assert_eq!(rc.cmd(&[b"GET", b"foo"]), "$3\r\nbar\r\n");
    assert_eq!(rc.cmd(&[b"CLIENT", b"UNPAUSE"]), "+OK\r\n");
    wait_for("the write", || info_field(&mut rc, "replication", "slave_repl_offset") == after);
    assert_eq!(rc.cmd(&[b"GET", b"foo"]), "$3\r\nbaz\r\n");
}

/// `bind-source-addr`: the replica's link leaves from that address, which the primary then
/// lists for it (Redis's `CONFIG SET bind-source-addr` test; 127.0.0.2 is loopback too).
#[test]
fn the_replica_link_leaves_from_bind_source_addr() {
    // Protected mode lets only 127.0.0.1 and ::1 in, as Redis's does (the test turns it off too).
    let p = Latch::start(&["--repl-diskless-sync-delay", "0", "--protected-mode", "no"]);
    let mut pc = p.raw();
    let r = Latch::start(&[]);
    let mut rc = r.raw();
    assert_eq!(rc.cmd(&[b"CONFIG", b"SET", b"bind-source-addr", b"127.0.0.2"]), "+OK\r\n");
    assert_eq!(rc.cmd(&[b"REPLICAOF", b"127.0.0.1", p.port.to_string().as_bytes()]), "+OK\r\n");
    wait_for("the link", || info_field(&mut rc, "replication", "master_link_status").as_deref() == Some("up"));
    let slave0 = info_field(&mut pc, "replication", "slave0").unwrap_or_default();
    assert!(slave0.starts_with("ip=127.0.0.2,"), "{slave0}");
}

/// A large value that reaches a replica through the command stream leaves no room behind in the
/// replica's link: its buffers shrink back once the command is applied, as Redis trims its
/// primary's client (Redis's unit/pendingquerybuf, with 16 MiB where Redis's test uses 32).
#[test]
fn a_large_streamed_value_leaves_no_buffers_behind_on_the_replica() {
    let a = Latch::start(&["--repl-diskless-sync-delay", "0"]);
    let b = Latch::start(&["--repl-diskless-sync-delay", "0"]);
    let (mut pa, mut pb) = (a.raw(), b.raw());
    assert_eq!(pb.cmd(&[b"REPLICAOF", b"127.0.0.1", a.port.to_string().as_bytes()]), "+OK\r\n");
    wait_for("the link to come up", || {
        info_field(&mut pb, "replication", "master_link_status").as_deref() == Some("up")
    });
    let value = vec![b'x'; 16 << 20];
    assert_eq!(pa.cmd(&[b"SET", b"big", &value]), "+OK\r\n");
    wait_for("the value on the replica", || pb.cmd(&[b"STRLEN", b"big"]) == format!(":{}\r\n", 16 << 20));
    let used = |c: &mut Raw| info_field(c, "memory", "used_memory").unwrap().parse::<u64>().unwrap();
    wait_for("the replica's memory to come within 4 MiB of the primary's", || {
        used(&mut pb) <= used(&mut pa) + (4 << 20)
    });
}
