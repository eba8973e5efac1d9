//! Streams against redis-server 7.0.15: the same commands on both servers give byte-identical
//! replies (raw RESP, in RESP2 and RESP3), DUMP payloads and RDB files move both ways to the same
//! values (`DEBUG DIGEST-VALUE`), Latch's payloads are Redis's byte for byte, and blocked XREAD /
//! XREADGROUP clients are woken by XADD from a plain command, a transaction or a script.

mod common;

use common::{Latch, Raw, RedisServer, TempDir};
use std::time::Duration;

/// A Latch and a Redis connection that must answer alike.
struct Pair {
    l: Raw,
    r: Raw,
    compared: usize,
    differ: Vec<String>,
}

impl Pair {
    fn new(latch: &Latch, redis: &RedisServer, resp3: bool) -> Pair {
        let mut p = Pair { l: latch.raw(), r: redis.raw(), compared: 0, differ: Vec::new() };
        if resp3 {
            p.l.cmd(&[b"HELLO", b"3"]);
            p.r.cmd(&[b"HELLO", b"3"]);
        }
        p
    }

    fn same_args(&mut self, args: &[&[u8]]) -> String {
        let (lr, rr) = (self.l.cmd_bytes(args), self.r.cmd_bytes(args));
        self.compared += 1;
        if lr != rr {
            let line: Vec<String> = args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            self.differ.push(format!(
                "{}\n  latch: {:?}\n  redis: {:?}",
                line.join(" "),
                String::from_utf8_lossy(&lr),
                String::from_utf8_lossy(&rr)
            ));
        }
        String::from_utf8_lossy(&rr).into_owned()
    }

    /// Runs `line` (words split on spaces) on both.
    fn same(&mut self, line: &str) -> String {
        let args: Vec<&[u8]> = line.split(' ').filter(|w| !w.is_empty()).map(str::as_bytes).collect();
        self.same_args(&args)
    }

    fn check(self, what: &str) {
        assert!(
            self.differ.is_empty(),
            "{what}: {} of {} replies differ:\n{}",
            self.differ.len(),
            self.compared,
            self.differ.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}

/// Commands whose replies do not depend on the clock (explicit IDs; no idle times).
const SCRIPT: &[&str] = &[
    "FLUSHALL",
    "XADD s 1-1 a 1 b 2",
    "XADD s 1-2 a 3 b 4",
    "XADD s 2-0 c x",
    "XADD s 2-0 c x",
    "XADD s 1-5 c x",
    "XADD s 0-0 c x",
    "XADD s 5-* c x",
    "XADD s 5-* c y",
    "XADD s MAXLEN 2 6-0 d e",
    "XADD s MAXLEN 2 MINID 0 7-0 d e",
    "XADD s LIMIT 5 7-0 d e",
    "XADD s MAXLEN 2 LIMIT 5 7-0 d e",
    "XADD s MAXLEN -1 7-0 d e",
    "XADD s MAXLEN abc 7-0 d e",
    "XADD s 7-0 a",
    "XADD s 7-0",
    "XADD s abc a b",
    "XADD s NOMKSTREAM 8-0 a b",
    "XADD nokey NOMKSTREAM 8-0 a b",
    "EXISTS nokey",
    "XLEN s",
    "XLEN nokey",
    "XRANGE s - +",
    "XRANGE s - + COUNT 1",
    "XRANGE s - + COUNT 0",
    "XRANGE s - + COUNT -3",
    "XRANGE s (5-0 +",
    "XRANGE s (- +",
    "XRANGE s - (18446744073709551615-18446744073709551615",
    "XRANGE s 0 (0-0",
    "XRANGE s (18446744073709551615-18446744073709551615 +",
    "XRANGE s 6 6",
    "XRANGE s abc +",
    "XRANGE s - + FOO",
    "XREVRANGE s + -",
    "XREVRANGE s + - COUNT 2",
    "XREVRANGE s (8-0 (5-1",
    "XRANGE nokey - +",
    "SET str x",
    "XADD str * a b",
    "XRANGE str - +",
    "XLEN str",
    "XDEL s 5-1 5-1 9-9",
    "XDEL s abc",
    "XDEL nokey abc",
    "XTRIM s",
    "XTRIM s FOO 1",
    "XTRIM s MAXLEN ~ 0",
    "XTRIM s MAXLEN 0 LIMIT 5",
    "XTRIM s MAXLEN ~ 0 LIMIT 5",
    "XTRIM nokey MAXLEN 0",
    "XINFO STREAM s",
    "XINFO STREAM s FULL",
    "XINFO STREAM s FULL COUNT 1",
    "XINFO STREAM s FOO",
    "XINFO STREAM nokey",
    "XINFO STREAM str",
    "XINFO FOO s",
    "XINFO HELP",
    "XINFO HELP extra",
    "TYPE s",
    "OBJECT ENCODING s",
    "XSETID s 100-0",
    "XSETID s 1-0",
    "XSETID s 200-0 ENTRIESADDED 1",
    "XSETID s 200-0 ENTRIESADDED 10 MAXDELETEDID 300-0",
    "XSETID s 200-0 ENTRIESADDED 10 MAXDELETEDID 100-0",
    "XSETID nokey 1-0",
    "XINFO STREAM s",
    // Consumer groups.
    "DEL g",
    "XADD g 1-0 f v",
    "XADD g 2-0 f v",
    "XADD g 3-0 f v",
    "XGROUP CREATE g grp 0",
    "XGROUP CREATE g grp 0",
    "XGROUP CREATE nokey grp 0",
    "XGROUP CREATE mk grp $ MKSTREAM",
    "XGROUP CREATE g g2 $ ENTRIESREAD 3",
    "XGROUP CREATE g g3 $ ENTRIESREAD -5",
    "XGROUP CREATE g g4 abc",
    "XGROUP SETID g nog 0",
    "XGROUP DESTROY g nog",
    "XGROUP FOO g grp",
    "XGROUP HELP",
    "XREADGROUP GROUP grp bob COUNT 2 STREAMS g >",
    "XREADGROUP GROUP grp bob STREAMS g >",
    "XREADGROUP GROUP grp bob STREAMS g >",
    "XREADGROUP GROUP grp bob STREAMS g 0",
    "XREADGROUP GROUP grp bob COUNT 1 STREAMS g 1-0",
    "XREADGROUP GROUP grp bob STREAMS g $",
    "XREADGROUP GROUP nog bob STREAMS g >",
    "XREADGROUP STREAMS g >",
    "XREADGROUP GROUP grp bob STREAMS g",
    "XREAD STREAMS g >",
    "XREAD GROUP a b STREAMS g 0",
    "XREAD NOACK STREAMS g 0",
    "XREAD COUNT 1 STREAMS g 0",
    "XREAD STREAMS g mk 0 0",
    "XREAD STREAMS g $",
    "XREAD COUNT 0 STREAMS g 1-0",
    "XREAD STREAMS g str 0 0",
    "XPENDING g grp",
    "XPENDING g grp IDLE 99999999 - + 10",
    "XPENDING g grp - + 10 nobody",
    "XPENDING g grp - + abc",
    "XPENDING g grp IDLE 5 - +",
    "XPENDING g nog",
    "XPENDING g grp - + 10 bob extra extra extra",
    "XACK g grp 1-0 9-0",
    "XACK g grp abc",
    "XACK g nog 1-0",
    "XPENDING g grp",
    "XGROUP DELCONSUMER g grp nobody",
    "XGROUP DELCONSUMER g grp bob",
    "XPENDING g grp",
    "XINFO GROUPS g",
    "XINFO CONSUMERS g nog",
    "XGROUP DESTROY g g2",
    "XGROUP DESTROY g g2",
    "XINFO GROUPS g",
    "XADD g 4-0 f v",
    "XDEL g 2-0",
    "XINFO GROUPS g",
    "XREADGROUP GROUP grp carl NOACK STREAMS g >",
    "XINFO GROUPS g",
    "XCLAIM g grp dan 0 1-0 3-0 JUSTID",
    "XCLAIM g nog dan 0 1-0",
    "XCLAIM g grp dan abc 1-0",
    "XCLAIM g grp dan 0 1-0 FOO",
    "XCLAIM g grp dan 0 1-0 IDLE abc",
    "XCLAIM g grp dan 0 1-0 4-0 FORCE JUSTID RETRYCOUNT 7",
    "XCLAIM g grp dan 0 2-0 FORCE",
    "XAUTOCLAIM g grp eve 0 0 COUNT 1",
    "XAUTOCLAIM g grp eve 0 0 COUNT 0",
    "XAUTOCLAIM g grp eve 0 0 JUSTID",
    "XAUTOCLAIM g nog eve 0 0",
    "XAUTOCLAIM g grp eve 0 (18446744073709551615-18446744073709551615",
    "XDEL g 4-0",
    "XAUTOCLAIM g grp eve 0 0",
    "XPENDING g grp",
    "XINFO GROUPS g",
    "XGROUP SETID g grp $",
    "XGROUP SETID g grp 0 ENTRIESREAD 2",
    "XGROUP SETID g grp 0 ENTRIESREAD 2 FOO",
    "XINFO GROUPS g",
    "XGROUP CREATECONSUMER g grp zed",
    "XGROUP CREATECONSUMER g grp zed",
    "XGROUP CREATECONSUMER g nog zed",
    "XINFO STREAM g",
];

#[test]
fn replies_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("the stream comparison") else { return };
    let latch = Latch::start(&["--save", ""]);
    for resp3 in [false, true] {
        let mut p = Pair::new(&latch, &redis, resp3);
        for line in SCRIPT {
            p.same(line);
        }
        // Many entries: several nodes, trimming inside and across them, deletions, reverse walks.
        p.same("DEL big");
        for i in 1..=700u32 {
            let (id, v) = (format!("{}-{}", i / 3, i % 3), "x".repeat((i % 40) as usize));
            let fields: Vec<&[u8]> = if i % 11 == 0 {
                vec![b"XADD", b"big", id.as_bytes(), b"other", v.as_bytes()]
            } else {
                vec![b"XADD", b"big", id.as_bytes(), b"f", v.as_bytes(), b"n", id.as_bytes()]
            };
            p.same_args(&fields);
        }
        for line in [
            "XLEN big",
            "XDEL big 1-1 50-2 51-0 100-0 100-1",
            "XRANGE big 40 60",
            "XREVRANGE big 60 40 COUNT 7",
            "XTRIM big MAXLEN ~ 500",
            "XTRIM big MINID 30",
            "XTRIM big MINID ~ 100",
            "XINFO STREAM big",
            "XRANGE big - + COUNT 3",
            "XREVRANGE big + - COUNT 3",
            "XADD big MAXLEN ~ 10 LIMIT 200 999-0 a b",
            "XLEN big",
            "XTRIM big MAXLEN 3",
            "XRANGE big - +",
            "XINFO STREAM big",
        ] {
            p.same(line);
        }
        p.check(if resp3 { "RESP3" } else { "RESP2" });
    }
}

fn bulk(reply: &[u8]) -> Vec<u8> {
    match resp::decode_reply(&mut resp::BytesMut::from(reply)) {
        Ok(Some(resp::Frame::Bulk(b))) => b.to_vec(),
        other => panic!("not a bulk: {other:?}"),
    }
}

/// Builds the same streams on a server: several nodes, tombstones, groups with pending entries.
fn populate(c: &mut Raw) {
    for i in 1..260u32 {
        let id = format!("{i}-{}", i % 3);
        let (n, v) = (i.to_string(), "x".repeat((i % 50) as usize));
        c.cmd(&[b"XADD", b"s", id.as_bytes(), b"field", n.as_bytes(), b"other", v.as_bytes()]);
        if i % 7 == 0 {
            c.cmd(&[b"XADD", b"s", format!("{i}-5").as_bytes(), b"diff", n.as_bytes()]);
        }
    }
    for cmd in [
        &["XDEL", "s", "5-2", "100-1", "101-2"][..],
        &["XTRIM", "s", "MINID", "3-0"],
        &["XGROUP", "CREATE", "s", "g1", "0"],
        &["XGROUP", "CREATE", "s", "g2", "$"],
        &["XCLAIM", "s", "g1", "alice", "0", "10-1", "20-2", "FORCE", "JUSTID", "TIME", "1000", "RETRYCOUNT", "3"],
        &["XCLAIM", "s", "g1", "bob", "0", "30-0", "FORCE", "JUSTID", "TIME", "2000"],
        &["XADD", "empty", "1-1", "a", "b"],
        &["XDEL", "empty", "1-1"],
        &["XADD", "plain", "1-1", "12345", "67"],
        &["XGROUP", "CREATE", "nocons", "g", "0", "MKSTREAM"],
    ] {
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
        let reply = c.cmd(&args);
        assert!(!reply.starts_with('-'), "{cmd:?}: {reply}");
    }
}

const KEYS: &[&str] = &["s", "empty", "plain", "nocons"];
/// Keys without consumers: nothing in them depends on the clock, so the payloads are equal.
const DETERMINISTIC: &[&str] = &["empty", "plain", "nocons"];

fn digests(c: &mut Raw) -> Vec<String> {
    KEYS.iter().map(|k| c.cmd(&[b"DEBUG", b"DIGEST-VALUE", k.as_bytes()])).collect()
}

fn groups(c: &mut Raw) -> Vec<String> {
    KEYS.iter().map(|k| c.cmd(&[b"XINFO", b"GROUPS", k.as_bytes()])).collect()
}

#[test]
fn dump_payloads_move_both_ways() {
    let Some(redis) = RedisServer::start_with_or_skip("the stream DUMP comparison", &["--enable-debug-command", "yes"])
    else {
        return;
    };
    let latch = Latch::start(&["--enable-debug-command", "yes"]);
    let (mut l, mut r) = (latch.raw(), redis.raw());
    populate(&mut l);
    populate(&mut r);
    assert_eq!(digests(&mut l), digests(&mut r));
    for k in KEYS {
        let (dl, dr) = (bulk(&l.cmd_bytes(&[b"DUMP", k.as_bytes()])), bulk(&r.cmd_bytes(&[b"DUMP", k.as_bytes()])));
        if DETERMINISTIC.contains(k) {
            assert_eq!(dl, dr, "DUMP {k} differs from Redis's");
        }
        let copy = format!("{k}-copy");
        assert_eq!(l.cmd(&[b"RESTORE", copy.as_bytes(), b"0", &dr]), "+OK\r\n", "{k}");
        assert_eq!(r.cmd(&[b"RESTORE", copy.as_bytes(), b"0", &dl]), "+OK\r\n", "{k}");
        let dig = |c: &mut Raw, key: &str| c.cmd(&[b"DEBUG", b"DIGEST-VALUE", key.as_bytes()]);
        assert_eq!(dig(&mut l, &copy), dig(&mut r, k));
        assert_eq!(dig(&mut r, &copy), dig(&mut l, k));
        // What Latch restored from Redis's payload dumps back as Redis's payload.
        assert_eq!(bulk(&l.cmd_bytes(&[b"DUMP", copy.as_bytes()])), dr, "{k} round trip");
        let info = |c: &mut Raw, key: &str| c.cmd(&[b"XINFO", b"GROUPS", key.as_bytes()]);
        assert_eq!(info(&mut l, &copy), info(&mut r, k));
    }
    // A corrupt payload is refused, never trusted.
    let good = bulk(&r.cmd_bytes(&[b"DUMP", b"s"]));
    for at in [3, 10, 40, 200, good.len() / 2, good.len() - 30] {
        let mut bad = good.clone();
        bad[at] ^= 0x5A;
        let reply = l.cmd(&[b"RESTORE", b"bad", b"0", &bad, b"REPLACE"]);
        assert!(reply.starts_with('-'), "corrupt at {at}: {reply}");
    }
    // With the checksum skipped, the structural checks still refuse it.
    l.cmd(&[b"DEBUG", b"SET-SKIP-CHECKSUM-VALIDATION", b"1"]);
    let mut refused = 0;
    for at in 1..good.len() - 10 {
        let mut bad = good.clone();
        bad[at] = bad[at].wrapping_add(1 + (at % 7) as u8);
        let reply = l.cmd(&[b"RESTORE", b"bad", b"0", &bad, b"REPLACE"]);
        if reply.starts_with('-') {
            refused += 1;
        } else {
            // Accepted: whatever it holds reads back without harm.
            l.cmd(&[b"XRANGE", b"bad", b"-", b"+"]);
            l.cmd(&[b"XINFO", b"STREAM", b"bad", b"FULL"]);
            l.cmd(&[b"XADD", b"bad", b"*", b"a", b"b"]);
        }
    }
    assert!(refused > 0);
    assert_eq!(l.cmd(&[b"PING"]), "+PONG\r\n");
}

#[test]
fn rdb_files_move_both_ways() {
    let dir = TempDir::new("streams-rdb");
    let latch = Latch::start(&[
        "--dir",
        dir.path(),
        "--dbfilename",
        "latch.rdb",
        "--save",
        "",
        "--enable-debug-command",
        "yes",
    ]);
    let mut l = latch.raw();
    populate(&mut l);
    let want = digests(&mut l);
    let want_groups = groups(&mut l);
    assert_eq!(l.cmd(&[b"SAVE"]), "+OK\r\n");
    let file = dir.0.join("latch.rdb");
    if let Ok(out) = std::process::Command::new("redis-check-rdb").arg(&file).output() {
        assert!(
            out.status.success(),
            "redis-check-rdb refused Latch's file:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    std::fs::copy(&file, dir.0.join("forredis.rdb")).expect("copy");
    let Some(redis) = RedisServer::start_with_or_skip(
        "loading Latch's streams into redis-server",
        &["--dir", dir.path(), "--dbfilename", "forredis.rdb", "--enable-debug-command", "yes"],
    ) else {
        return;
    };
    let mut r = redis.raw();
    redis.wait_loaded(&mut r);
    assert_eq!(digests(&mut r), want);
    assert_eq!(groups(&mut r), want_groups);
    r.cmd(&[b"XADD", b"from-redis", b"1-1", b"a", b"b"]);
    assert_eq!(r.cmd(&[b"SAVE"]), "+OK\r\n");
    let latch2 = Latch::start(&[
        "--dir",
        dir.path(),
        "--dbfilename",
        "forredis.rdb",
        "--save",
        "",
        "--enable-debug-command",
        "yes",
    ]);
    let mut l2 = latch2.raw();
    assert_eq!(digests(&mut l2), want);
    assert_eq!(groups(&mut l2), want_groups);
    assert_eq!(l2.cmd(&[b"XLEN", b"from-redis"]), ":1\r\n");
    // DEBUG RELOAD keeps them too.
    assert_eq!(l2.cmd(&[b"DEBUG", b"RELOAD"]), "+OK\r\n");
    assert_eq!(digests(&mut l2), want);
}

/// Reads a reply that arrives within 5 s.
/// `MEMORY USAGE` of a stream counts its value as Redis does (Redis's nodes, allocated as Redis
/// allocates them, and its estimate for the radix trees and groups). The key's own part is each
/// server's, so a stream's figure is compared less that of a one-entry stream under the same name
/// in another database.
#[test]
fn memory_usage_matches_redis() {
    let Some(redis) = RedisServer::start_or_skip("the stream MEMORY USAGE comparison") else { return };
    let latch = Latch::start(&["--save", ""]);
    let usages = |c: &mut Raw| -> Vec<i64> {
        populate(c);
        // Nodes that grow past the first allocation, and nodes under a byte limit below it.
        for (limit, key, n) in [("0", "grown", 300u32), ("200", "small", 120)] {
            c.cmd(&[b"CONFIG", b"SET", b"stream-node-max-bytes", limit.as_bytes()]);
            for i in 1..=n {
                let (id, v) = (format!("{i}-1"), "y".repeat((i * 7 % 300) as usize));
                c.cmd(&[b"XADD", key.as_bytes(), id.as_bytes(), b"f", v.as_bytes()]);
            }
        }
        c.cmd(&[b"CONFIG", b"SET", b"stream-node-max-bytes", b"4096"]);
        c.cmd(&[b"XDEL", b"grown", b"7-1", b"8-1"]);
        c.cmd(&[b"XTRIM", b"small", b"MAXLEN", b"100"]);
        let payload = bulk(&c.cmd_bytes(&[b"DUMP", b"s"]));
        c.cmd(&[b"RESTORE", b"restored", b"0", &payload]);
        c.cmd(&[b"XADD", b"restored", b"9999-0", b"a", b"b"]);
        let keys = ["s", "empty", "plain", "nocons", "grown", "small", "restored"];
        let mut out = Vec::new();
        for k in keys {
            for samples in ["0", "5", "2"] {
                let usage = |c: &mut Raw| {
                    let r = c.cmd(&[b"MEMORY", b"USAGE", k.as_bytes(), b"SAMPLES", samples.as_bytes()]);
                    r.trim().trim_start_matches(':').parse::<i64>().unwrap_or_else(|_| panic!("{k}: {r}"))
                };
                let value = usage(c);
                c.cmd(&[b"SELECT", b"9"]);
                c.cmd(&[b"XADD", k.as_bytes(), b"1-1", b"a", b"b"]);
                let base = usage(c);
                c.cmd(&[b"DEL", k.as_bytes()]);
                c.cmd(&[b"SELECT", b"0"]);
                out.push(value - base);
            }
        }
        out
    };
    let (l, r) = (usages(&mut latch.raw()), usages(&mut redis.raw()));
    assert_eq!(l, r, "each stream's MEMORY USAGE less a one-entry stream's: Latch, then Redis");
    assert!(r.iter().any(|&d| d > 20_000), "the streams are not trivial: {r:?}");
}

fn blocked_reply(c: &mut Raw) -> String {
    c.s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    String::from_utf8_lossy(&c.reply_bytes()).into_owned()
}

fn send(c: &mut Raw, line: &str) {
    let args: Vec<&str> = line.split(' ').collect();
    let mut b = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        b.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    c.send(&b);
}

/// Waits until `n` clients are blocked.
fn wait_blocked(c: &mut Raw, n: usize) {
    for _ in 0..500 {
        if c.cmd(&[b"INFO", b"clients"]).contains(&format!("blocked_clients:{n}\r")) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{n} clients never blocked");
}

#[test]
fn blocked_readers_are_woken_by_writes() {
    let latch = Latch::start(&["--save", ""]);
    let mut w = latch.raw();
    let line = |c: &mut Raw, s: &str| {
        let args: Vec<&[u8]> = s.split(' ').map(str::as_bytes).collect();
        c.cmd(&args)
    };
    line(&mut w, "XADD s 1-0 a 1");
    line(&mut w, "XGROUP CREATE s g $");
    // XREAD $ and XREADGROUP > both wait; one XADD serves both, in arrival order; a reader
    // waiting for later IDs keeps waiting.
    let (mut a, mut b, mut c) = (latch.raw(), latch.raw(), latch.raw());
    send(&mut c, "XREAD BLOCK 0 STREAMS s 99-0");
    send(&mut a, "XREAD BLOCK 0 STREAMS s $");
    send(&mut b, "XREADGROUP GROUP g c1 BLOCK 0 STREAMS s >");
    wait_blocked(&mut w, 3);
    line(&mut w, "XADD s 2-0 b 2");
    let want = "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n";
    assert_eq!(blocked_reply(&mut a), want);
    assert_eq!(blocked_reply(&mut b), want);
    wait_blocked(&mut w, 1);
    assert!(line(&mut w, "XPENDING s g").starts_with("*4\r\n:1\r\n"));
    // Woken from a transaction and from a script.
    send(&mut a, "XREAD BLOCK 0 STREAMS s $");
    wait_blocked(&mut w, 2);
    line(&mut w, "MULTI");
    line(&mut w, "XADD s 3-0 c 3");
    assert_eq!(line(&mut w, "EXEC"), "*1\r\n$3\r\n3-0\r\n");
    assert!(blocked_reply(&mut a).contains("3-0"));
    send(&mut a, "XREAD BLOCK 0 STREAMS s $");
    wait_blocked(&mut w, 2);
    w.cmd(&[b"EVAL", b"return redis.call('XADD',KEYS[1],'4-0','d','4')", b"1", b"s"]);
    let woke = blocked_reply(&mut a);
    assert!(woke.contains("4-0"), "{woke}");
    // The reader waiting for 99-0 is served once the stream reaches it.
    line(&mut w, "XADD s 100-0 e 5");
    assert!(blocked_reply(&mut c).contains("100-0"));
    // A group reader learns that its group or its key went.
    line(&mut w, "XGROUP SETID s g $");
    send(&mut b, "XREADGROUP GROUP g c1 BLOCK 0 STREAMS s >");
    wait_blocked(&mut w, 1);
    line(&mut w, "XGROUP DESTROY s g");
    assert_eq!(blocked_reply(&mut b), "-NOGROUP the consumer group this client was blocked on no longer exists\r\n");
    line(&mut w, "XGROUP CREATE s g $");
    send(&mut b, "XREADGROUP GROUP g c1 BLOCK 0 STREAMS s >");
    send(&mut a, "XREAD BLOCK 0 STREAMS s $");
    wait_blocked(&mut w, 2);
    line(&mut w, "DEL s");
    assert_eq!(blocked_reply(&mut b), "-UNBLOCKED the stream key no longer exists\r\n");
    // The plain reader keeps waiting for the key to come back.
    wait_blocked(&mut w, 1);
    // It waits for IDs above the last one when it blocked, as Redis remembers `$`.
    line(&mut w, "XADD s 1-0 early 1");
    line(&mut w, "XADD s 200-0 again 1");
    assert!(blocked_reply(&mut a).contains("again"));
    // A timeout answers a null array; BLOCK inside a script is refused.
    assert_eq!(line(&mut w, "XREAD BLOCK 50 STREAMS s $"), "*-1\r\n");
    let script = w.cmd(&[b"EVAL", b"return redis.call('XREAD','BLOCK','0','STREAMS','s','$')", b"1", b"s"]);
    assert!(script.contains("command is not allowed with BLOCK option from scripts"), "{script}");
}
