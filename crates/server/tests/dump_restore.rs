//! DUMP and RESTORE between Latch and redis-server 7.0.15, both ways, for every type and encoding
//! Redis 7.0 writes: the payload one server dumps restores on the other to the same value
//! (`DEBUG DIGEST-VALUE`, Redis's own digest), Latch's payloads are byte for byte Redis's where Redis's
//! are deterministic, and RESTORE's options and errors answer as Redis does.

mod common;

use common::{Latch, Raw, RedisServer};

/// Commands that build one key of each type and encoding (the same on both servers).
const SETUP: &[&[&str]] = &[
    &["SET", "str", "hello"],
    &["SET", "int", "123456"],
    &["SET", "long", "a long string that compresses compresses compresses compresses"],
    &["RPUSH", "list", "a", "b", "1", "300", "-5000", "100000", "-9000000", "3000000000"],
    &["SADD", "intset", "1", "2", "-70000", "3000000000"],
    &["SADD", "set", "a", "b", "c"],
    &["HSET", "hash", "f", "v", "n", "1"],
    &["ZADD", "zset", "1", "a", "2.5", "b", "-inf", "c"],
];

fn big(c: &mut Raw) {
    // Past the listpack limits: a plain hash, a skiplist zset, a multi-node list.
    for i in 0..300 {
        let (f, v, s) = (format!("f{i}"), "x".repeat(i % 100), format!("{}", i as f64 / 3.0));
        c.cmd(&[b"HSET", b"bighash", f.as_bytes(), v.as_bytes()]);
        c.cmd(&[b"ZADD", b"bigzset", s.as_bytes(), f.as_bytes()]);
    }
    for i in 0..3000 {
        c.cmd(&[b"RPUSH", b"biglist", format!("element number {i}").as_bytes()]);
    }
}

const KEYS: &[&str] = &["str", "int", "long", "list", "intset", "set", "hash", "zset", "bighash", "bigzset", "biglist"];

/// Keys whose payload is byte for byte Redis's: those with nothing LZF-compressed in them. The LZF
/// crate and Redis's liblzf pick different (equally valid) back-references, so compressed strings and
/// list nodes differ in their bytes while restoring to the same value on either server.
const DETERMINISTIC: &[&str] = &["str", "int", "list", "hash", "zset"];

fn bulk(reply: &[u8]) -> Vec<u8> {
    match resp::decode_reply(&mut resp::BytesMut::from(reply)) {
        Ok(Some(resp::Frame::Bulk(b))) => b.to_vec(),
        other => panic!("not a bulk: {other:?}"),
    }
}

fn digest(c: &mut Raw, key: &str) -> String {
    c.cmd(&[b"DEBUG", b"DIGEST-VALUE", key.as_bytes()])
}

#[test]
fn payloads_move_both_ways() {
    let Some(redis) =
        RedisServer::start_with_or_skip("the DUMP/RESTORE comparison", &["--enable-debug-command", "yes"])
    else {
        return;
    };
    let latch = Latch::start(&["--enable-debug-command", "yes"]);
    let (mut l, mut r) = (latch.raw(), redis.raw());
    for c in [&mut l, &mut r] {
        for cmd in SETUP {
            let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
            c.cmd(&args);
        }
        big(c);
    }
    for key in KEYS {
        let k = key.as_bytes();
        assert_eq!(digest(&mut l, key), digest(&mut r, key), "{key}: the two servers built different values");
        let from_latch = bulk(&l.cmd_bytes(&[b"DUMP", k]));
        let from_redis = bulk(&r.cmd_bytes(&[b"DUMP", k]));
        if DETERMINISTIC.contains(key) && from_latch != from_redis {
            let at = from_latch.iter().zip(&from_redis).position(|(a, b)| a != b);
            panic!("{key}: payloads differ ({} and {} bytes, first at {at:?})", from_latch.len(), from_redis.len());
        }
        let want = digest(&mut r, key);
        // Redis's payload into Latch, Latch's into Redis.
        assert_eq!(l.cmd(&[b"RESTORE", b"copy", b"0", &from_redis, b"REPLACE"]), "+OK\r\n", "{key} into Latch");
        assert_eq!(r.cmd(&[b"RESTORE", b"copy", b"0", &from_latch, b"REPLACE"]), "+OK\r\n", "{key} into Redis");
        assert_eq!(digest(&mut l, "copy"), want, "{key}: Latch restored another value");
        assert_eq!(digest(&mut r, "copy"), want, "{key}: Redis restored another value from Latch's payload");
        assert_eq!(l.cmd(&[b"OBJECT", b"ENCODING", b"copy"]), r.cmd(&[b"OBJECT", b"ENCODING", b"copy"]), "{key}");
    }
}

#[test]
fn restore_options_and_errors_answer_as_redis() {
    let Some(redis) = RedisServer::start_or_skip("the RESTORE comparison") else { return };
    let latch = Latch::start(&[]);
    let (mut l, mut r) = (latch.raw(), redis.raw());
    r.cmd(&[b"SET", b"src", b"value"]);
    let payload = bulk(&r.cmd_bytes(&[b"DUMP", b"src"]));
    let mut bad = payload.clone();
    bad[2] ^= 0xFF;
    let steps: Vec<Vec<&[u8]>> = vec![
        vec![b"DUMP", b"nosuch"],
        vec![b"RESTORE", b"k", b"0", &payload],
        vec![b"RESTORE", b"k", b"0", &payload],
        vec![b"RESTORE", b"k", b"0", &payload, b"REPLACE"],
        vec![b"RESTORE", b"k2", b"-1", &payload],
        vec![b"RESTORE", b"k2", b"abc", &payload],
        vec![b"RESTORE", b"k2", b"0", &bad],
        vec![b"RESTORE", b"k2", b"0", b"garbage"],
        vec![b"RESTORE", b"k2", b"0", &payload, b"IDLETIME", b"-1"],
        vec![b"RESTORE", b"k2", b"0", &payload, b"FREQ", b"256"],
        vec![b"RESTORE", b"k2", b"0", &payload, b"IDLETIME", b"10", b"FREQ", b"1"],
        vec![b"RESTORE", b"k2", b"0", &payload, b"BOGUS"],
        vec![b"RESTORE", b"k2", b"100000", &payload, b"IDLETIME", b"1000"],
        vec![b"PTTL", b"k2"],
        vec![b"OBJECT", b"IDLETIME", b"k2"],
        vec![b"RESTORE", b"k3", b"1", &payload, b"ABSTTL"],
        vec![b"EXISTS", b"k3"],
        vec![b"RESTORE", b"k", b"1", &payload, b"ABSTTL", b"REPLACE"],
        vec![b"EXISTS", b"k"],
        vec![b"RESTORE", b"k4", b"4000000000000", &payload, b"ABSTTL"],
        vec![b"PEXPIRETIME", b"k4"],
        vec![b"GET", b"k4"],
    ];
    for s in &steps {
        let (a, b) = (l.cmd(s), r.cmd(s));
        let shown: Vec<String> = s.iter().map(|x| String::from_utf8_lossy(x).chars().take(12).collect()).collect();
        if s[0] == b"PTTL" {
            let ms = |x: &str| x.trim_start_matches(':').trim().parse::<i64>().unwrap_or(-9);
            assert!((ms(&a) - ms(&b)).abs() < 1000, "{shown:?}: latch {a:?} redis {b:?}");
        } else {
            assert_eq!(a, b, "{shown:?}");
        }
    }
}

/// An aggregate's encoding is history, as in Redis: once a member that is not an integer, or more
/// members than `set-max-intset-entries`, made a set a hash table (a field or value longer than
/// `hash-max-listpack-value`, or more fields than `hash-max-listpack-entries`, a hash; a member
/// longer than `zset-max-listpack-value`, or more members than `zset-max-listpack-entries`, a
/// sorted set a skiplist), it stays one whatever is removed, and only a value rebuilt from what it
/// holds (RESTORE, DEBUG RELOAD, a store command's result) starts afresh. Every step's
/// `OBJECT ENCODING` of every key is compared with redis-server's.
#[test]
fn aggregate_encodings_follow_redis_through_removals() {
    let Some(redis) =
        RedisServer::start_with_or_skip("the set encoding comparison", &["--enable-debug-command", "yes"])
    else {
        return;
    };
    let latch = Latch::start(&["--enable-debug-command", "yes"]);
    let (mut l, mut r) = (latch.raw(), redis.raw());
    let steps: &[&[&str]] = &[
        &["SADD", "mixed", "1", "2", "3", "a"],
        &["SREM", "mixed", "a"],
        &["SADD", "ints", "1", "2", "3"],
        &["SREM", "ints", "3"],
        &["SADD", "word", "w"],
        &["SADD", "word", "4", "5"],
        &["SREM", "word", "w"],
        // A limit lowered under a value converts it at its next write that converts, not at once.
        &["SADD", "keep", "1", "2", "3", "4", "5", "6"],
        &["CONFIG", "SET", "set-max-intset-entries", "4"],
        &["SADD", "keep", "6"],
        &["SREM", "keep", "1"],
        &["SADD", "keep", "7"],
        &["SADD", "long", "1", "2", "3", "4", "5"],
        &["SREM", "long", "5"],
        &["SADD", "ints", "7", "8"],
        &["SADD", "ints", "9"],
        &["CONFIG", "SET", "set-max-intset-entries", "512"],
        &["SADD", "pop", "1", "2", "3", "4", "5", "x"],
        &["SREM", "pop", "x"],
        &["SPOP", "pop", "2"],
        &["SMOVE", "mixed", "moved", "1"],
        &["SADD", "other", "1", "2", "b"],
        &["SUNIONSTORE", "union", "mixed", "other"],
        &["SREM", "union", "b"],
        &["SINTERSTORE", "inter", "union", "other"],
        &["SDIFFSTORE", "diff", "union", "moved"],
        &["HSET", "h1", "f", "v", "big", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["HDEL", "h1", "big"],
        &["HSET", "h2", "f", "v", "g", "w"],
        &["HDEL", "h2", "g"],
        &["HSET", "hkeep", "a", "1", "b", "2", "c", "3"],
        &["CONFIG", "SET", "hash-max-listpack-entries", "2"],
        &["HDEL", "hkeep", "none"],
        &["HSET", "hkeep", "a", "9"],
        &["HSET", "h3", "a", "1", "b", "2", "c", "3"],
        &["HDEL", "h3", "c"],
        &["CONFIG", "SET", "hash-max-listpack-entries", "512"],
        &["HSET", "h4", "x", "1"],
        &["HINCRBY", "h4", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "5"],
        &["HDEL", "h4", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["HSETNX", "h5", "f", "v"],
        &["HSETNX", "h5", "f", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["HSETNX", "h5", "g", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["HDEL", "h5", "g"],
        &["HINCRBYFLOAT", "h6", "f", "1.5"],
        &["HSET", "h6", "f", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["HSET", "h6", "f", "short"],
        &["ZADD", "z1", "1", "a", "2", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["ZREM", "z1", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["ZADD", "z2", "1", "a", "2", "b"],
        &["ZREM", "z2", "b"],
        &["ZADD", "z4", "1", "a"],
        &["ZADD", "z4", "XX", "2", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["ZADD", "z4", "3", "a"],
        &["ZINCRBY", "z4", "1", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["ZREM", "z4", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["ZADD", "zkeep", "1", "a", "2", "b", "3", "c"],
        &["CONFIG", "SET", "zset-max-listpack-entries", "2"],
        &["ZADD", "zkeep", "5", "a"],
        &["ZINCRBY", "zkeep", "1", "b"],
        &["ZADD", "zkeep", "4", "d"],
        &["ZADD", "z3", "1", "a", "2", "b", "3", "c"],
        &["ZREM", "z3", "c"],
        &["ZUNIONSTORE", "zu", "2", "z3", "z1"],
        &["ZUNIONSTORE", "zu2", "2", "z3", "z4"],
        &["ZREM", "zu2", "b"],
        &["ZRANGESTORE", "zr", "z3", "0", "-1"],
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
        &["GEOADD", "g", "13.361389", "38.115556", "palermo"],
        &[
            "GEOADD",
            "g",
            "15.087269",
            "37.502669",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ],
        &["ZREM", "g", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"],
        &["DUMP", "union"],
        &["DEBUG", "RELOAD"],
        &["SREM", "union", "2"],
    ];
    let keys = [
        "mixed", "ints", "word", "long", "pop", "moved", "other", "union", "inter", "diff", "h1", "h2", "h3", "h4",
        "h5", "h6", "z1", "z2", "z3", "z4", "zu", "zu2", "zr", "g", "gs", "restored", "keep", "hkeep", "zkeep",
    ];
    for step in steps {
        let args: Vec<&[u8]> = step.iter().map(|a| a.as_bytes()).collect();
        let (a, b) = (l.cmd_bytes(&args), r.cmd_bytes(&args));
        if step[0] == "DUMP" {
            // Redis's payload (a hash table's, in its order) restored on both servers.
            let payload = bulk(&b);
            for c in [&mut l, &mut r] {
                assert_eq!(c.cmd(&[b"RESTORE", b"restored", b"0", &payload, b"REPLACE"]), "+OK\r\n");
            }
            // A set held as a hash table dumps as one (Redis's SET type, 2), not as an intset (11);
            // a hash as RDB_TYPE_HASH (4), not as a listpack (16); a sorted set as
            // RDB_TYPE_ZSET_2 (5), not as a listpack (17).
            for (key, t) in [("pop", 2), ("h1", 4), ("z1", 5)] {
                let types = [&mut l, &mut r].map(|c| bulk(&c.cmd_bytes(&[b"DUMP", key.as_bytes()]))[0]);
                assert_eq!(types, [t, t], "{key}");
            }
        } else if step[0] != "SPOP" {
            assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b), "{step:?}");
        }
        for key in keys {
            let k = key.as_bytes();
            let (a, b) = (l.cmd(&[b"OBJECT", b"ENCODING", k]), r.cmd(&[b"OBJECT", b"ENCODING", k]));
            assert_eq!(a, b, "OBJECT ENCODING {key} after {step:?}");
        }
    }
}
