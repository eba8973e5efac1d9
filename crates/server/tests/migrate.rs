//! MIGRATE between real servers: Latch to Latch, Latch to redis-server 7.0.15 and back, for every
//! type with TTLs (`DEBUG DIGEST-VALUE` and `PTTL` compared on arrival), COPY, REPLACE, the KEYS
//! form, NOKEY, errors from the target (BUSYKEY, AUTH), timeouts, a closed port, and the argument
//! errors, answered as redis-server answers them.

mod common;

use common::{Latch, Raw, RedisServer, free_port};
use std::time::{Duration, Instant};

/// Commands that build one key of each type and encoding, some with a TTL.
const SETUP: &[&[&str]] = &[
    &["SET", "str", "hello"],
    &["SET", "int", "123456"],
    &["SET", "long", "a long string that compresses compresses compresses compresses", "PX", "50000"],
    &["RPUSH", "list", "a", "b", "1", "300", "-5000", "100000", "-9000000", "3000000000"],
    &["SADD", "intset", "1", "2", "-70000", "3000000000"],
    &["SADD", "set", "a", "b", "c"],
    &["PEXPIRE", "set", "40000"],
    &["HSET", "hash", "f", "v", "n", "1"],
    &["EXPIRE", "hash", "1000"],
    &["ZADD", "zset", "1", "a", "2.5", "b", "-inf", "c"],
];

/// The keys [`fill`] makes.
const KEYS: &[&str] = &["str", "int", "long", "list", "intset", "set", "hash", "zset", "bighash", "bigzset", "biglist"];

/// [`SETUP`], plus values past the listpack limits (the list is over 64 KiB: its payload is
/// written in several chunks).
fn fill(c: &mut Raw) {
    for cmd in SETUP {
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
        assert!(!c.cmd(&args).starts_with('-'), "{cmd:?}");
    }
    for i in 0..300 {
        let (f, v, s) = (format!("f{i}"), "x".repeat(i % 100), format!("{}", i as f64 / 3.0));
        c.cmd(&[b"HSET", b"bighash", f.as_bytes(), v.as_bytes()]);
        c.cmd(&[b"ZADD", b"bigzset", s.as_bytes(), f.as_bytes()]);
    }
    c.cmd(&[b"PEXPIRE", b"bigzset", b"30000"]);
    let mut rpush: Vec<Vec<u8>> = vec![b"RPUSH".to_vec(), b"biglist".to_vec()];
    rpush.extend((0..10_000).map(|i| format!("element number {i}").into_bytes()));
    let args: Vec<&[u8]> = rpush.iter().map(|a| &a[..]).collect();
    assert_eq!(c.cmd(&args), ":10000\r\n");
}

fn digest(c: &mut Raw, key: &str) -> String {
    c.cmd(&[b"DEBUG", b"DIGEST-VALUE", key.as_bytes()])
}

fn pttl(c: &mut Raw, key: &str) -> i64 {
    let r = c.cmd(&[b"PTTL", key.as_bytes()]);
    r.trim().trim_start_matches(':').parse().unwrap_or_else(|_| panic!("PTTL {key}: {r:?}"))
}

fn port(p: u16) -> Vec<u8> {
    p.to_string().into_bytes()
}

fn info_field(c: &mut Raw, field: &str) -> String {
    let info = c.cmd(&[b"INFO", b"stats"]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO"))
        .trim()
        .to_string()
}

/// Fills `src`, migrates half the keys one by one and the rest with KEYS into database 5 of the
/// server on `to_port`, and checks what arrived against what left.
fn every_type(src: &mut Raw, dst: &mut Raw, to_port: u16) {
    fill(src);
    let before: Vec<(String, i64)> = KEYS.iter().map(|k| (digest(src, k), pttl(src, k))).collect();
    let p = port(to_port);
    let (one_by_one, together) = KEYS.split_at(5);
    for k in one_by_one {
        let reply = src.cmd(&[b"MIGRATE", b"127.0.0.1", &p, k.as_bytes(), b"5", b"5000"]);
        assert_eq!(reply, "+OK\r\n", "{k}");
    }
    let mut args: Vec<&[u8]> = vec![b"MIGRATE", b"127.0.0.1", &p, b"", b"5", b"5000", b"KEYS"];
    args.extend(together.iter().map(|k| k.as_bytes()));
    assert_eq!(src.cmd(&args), "+OK\r\n");
    assert_eq!(src.cmd(&[b"DBSIZE"]), ":0\r\n");
    assert_eq!(dst.cmd(&[b"DBSIZE"]), ":0\r\n");
    assert_eq!(dst.cmd(&[b"SELECT", b"5"]), "+OK\r\n");
    for (k, (d, ttl)) in KEYS.iter().zip(before) {
        assert_eq!(digest(dst, k), d, "{k}: another value arrived");
        let now = pttl(dst, k);
        if ttl < 0 {
            assert_eq!(now, -1, "{k}: a TTL appeared");
        } else {
            assert!(now <= ttl && now > ttl - 5000, "{k}: TTL {ttl} arrived as {now}");
        }
    }
    assert_eq!(dst.cmd(&[b"SELECT", b"0"]), "+OK\r\n");
}

#[test]
fn latch_to_latch() {
    let (a, b) = (Latch::start(&["--enable-debug-command", "yes"]), Latch::start(&["--enable-debug-command", "yes"]));
    let (mut src, mut dst) = (a.raw(), b.raw());
    assert_eq!(info_field(&mut src, "migrate_cached_sockets"), "0");
    every_type(&mut src, &mut dst, b.port);
    // One connection, kept for the next MIGRATE.
    assert_eq!(info_field(&mut src, "migrate_cached_sockets"), "1");
}

#[test]
fn latch_to_redis_and_back() {
    let Some(redis) = RedisServer::start_with_or_skip("MIGRATE to and from Redis", &["--enable-debug-command", "yes"])
    else {
        return;
    };
    let latch = Latch::start(&["--enable-debug-command", "yes"]);
    let (mut l, mut r) = (latch.raw(), redis.raw());
    every_type(&mut l, &mut r, redis.port);
    r.cmd(&[b"FLUSHALL"]);
    l.cmd(&[b"FLUSHALL"]);
    every_type(&mut r, &mut l, latch.port);
}

#[test]
fn copy_replace_keys_and_target_errors() {
    let Some(redis) = RedisServer::start_with_or_skip("MIGRATE's errors", &[]) else { return };
    let (latch, target) = (Latch::start(&[]), Latch::start(&[]));
    let (mut l, mut r, mut t) = (latch.raw(), redis.raw(), target.raw());
    let p = port(target.port);
    // The same steps from Latch and from Redis, to the same target: the same replies and the same
    // change counts.
    let steps: &[&[&[u8]]] = &[
        &[b"MSET", b"a", b"1", b"b", b"2", b"c", b"3", b"list", b"x"],
        &[b"MIGRATE", b"127.0.0.1", &p, b"nokey", b"0", b"5000"],
        &[b"MIGRATE", b"127.0.0.1", &p, b"", b"0", b"5000", b"KEYS", b"no1", b"no2"],
        &[b"MIGRATE", b"127.0.0.1", &p, b"a", b"0", b"5000", b"COPY"],
        &[b"EXISTS", b"a"],
        // BUSYKEY: the key stays.
        &[b"MIGRATE", b"127.0.0.1", &p, b"a", b"0", b"5000"],
        &[b"EXISTS", b"a"],
        &[b"MIGRATE", b"127.0.0.1", &p, b"a", b"0", b"5000", b"REPLACE"],
        &[b"EXISTS", b"a"],
        // Only the keys the target took are deleted.
        &[b"SET", b"a", b"1"],
        &[b"MIGRATE", b"127.0.0.1", &p, b"", b"0", b"5000", b"KEYS", b"b", b"a", b"c"],
        &[b"MGET", b"a", b"b", b"c"],
        // The target's SELECT fails.
        &[b"MIGRATE", b"127.0.0.1", &p, b"a", b"99", b"5000"],
        // The failed SELECT left the connection's database unknown (-1), so database -1 is
        // taken as selected: no SELECT is sent and the key goes to the target's database 0.
        &[b"MIGRATE", b"127.0.0.1", &p, b"a", b"-1", b"5000", b"REPLACE"],
        &[b"SET", b"a", b"1"],
        // AUTH fails (the target has no password), and so does every key.
        &[b"MIGRATE", b"127.0.0.1", &p, b"a", b"0", b"5000", b"REPLACE", b"AUTH", b"pw"],
        &[b"DBSIZE"],
    ];
    let mut run = |src: &mut Raw| -> Vec<(String, i64)> {
        t.cmd(&[b"FLUSHALL"]);
        steps
            .iter()
            .map(|s| {
                let before = changes(src);
                let reply = src.cmd(s);
                (reply, changes(src) - before)
            })
            .collect()
    };
    let from_latch = run(&mut l);
    let busy = "-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n";
    let bad_db = "-ERR Target instance replied with error: ERR DB index is out of range\r\n";
    let want: Vec<(&str, i64)> = vec![
        ("+OK\r\n", 4),
        ("+NOKEY\r\n", 0),
        ("+NOKEY\r\n", 0),
        ("+OK\r\n", 0),
        (":1\r\n", 0),
        (busy, 0),
        (":1\r\n", 0),
        ("+OK\r\n", 1),
        (":0\r\n", 0),
        ("+OK\r\n", 1),
        (busy, 2),
        ("*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n", 0),
        (bad_db, 0),
        ("+OK\r\n", 1),
        ("+OK\r\n", 1),
        (
            "-ERR Target instance replied with error: ERR AUTH <password> called without any password configured \
             for the default user. Are you sure your configuration is correct?\r\n",
            0,
        ),
        (":2\r\n", 0),
    ];
    let got: Vec<(&str, i64)> = from_latch.iter().map(|(r, n)| (r.as_str(), *n)).collect();
    assert_eq!(got, want);
    assert_eq!(run(&mut r), from_latch, "Redis's run differs");
}

fn changes(c: &mut Raw) -> i64 {
    let info = c.cmd(&[b"INFO", b"persistence"]);
    info.lines()
        .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("rdb_changes_since_last_save")
}

#[test]
fn auth_to_a_protected_target() {
    let Some(redis) = RedisServer::start_or_skip("MIGRATE with AUTH") else { return };
    let target = Latch::start(&[]);
    for p in [redis.port, target.port] {
        assert_eq!(Raw::connect(p).cmd(&[b"CONFIG", b"SET", b"requirepass", b"foobar"]), "+OK\r\n");
    }
    let latch = Latch::start(&[]);
    let mut l = latch.raw();
    for (p, name) in [(port(redis.port), "redis"), (port(target.port), "latch")] {
        l.cmd(&[b"RPUSH", b"list", b"a", b"b"]);
        assert_eq!(
            l.cmd(&[b"MIGRATE", b"127.0.0.1", &p, b"list", b"0", b"5000"]),
            "-ERR Target instance replied with error: NOAUTH Authentication required.\r\n",
            "{name}"
        );
        assert_eq!(
            l.cmd(&[b"MIGRATE", b"127.0.0.1", &p, b"list", b"0", b"5000", b"AUTH", b"wrong"]),
            "-ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled.\r\n",
            "{name}"
        );
        assert_eq!(l.cmd(&[b"EXISTS", b"list"]), ":1\r\n");
        assert_eq!(l.cmd(&[b"MIGRATE", b"127.0.0.1", &p, b"list", b"0", b"5000", b"AUTH", b"foobar"]), "+OK\r\n");
        assert_eq!(l.cmd(&[b"EXISTS", b"list"]), ":0\r\n");
        l.cmd(&[b"RPUSH", b"list2", b"c"]);
        let reply = l.cmd(&[
            b"MIGRATE",
            b"127.0.0.1",
            &p,
            b"",
            b"0",
            b"5000",
            b"AUTH2",
            b"default",
            b"foobar",
            b"KEYS",
            b"list2",
        ]);
        assert_eq!(reply, "+OK\r\n", "{name}");
    }
    for p in [redis.port, target.port] {
        let mut t = Raw::connect(p);
        assert_eq!(t.cmd(&[b"AUTH", b"foobar"]), "+OK\r\n");
        assert_eq!(t.cmd(&[b"LRANGE", b"list", b"0", b"-1"]), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
        assert_eq!(t.cmd(&[b"LRANGE", b"list2", b"0", b"-1"]), "*1\r\n$1\r\nc\r\n");
    }
}

#[test]
fn io_errors() {
    let target = Latch::start(&["--enable-debug-command", "yes"]);
    let latch = Latch::start(&[]);
    let mut l = latch.raw();
    l.cmd(&[b"SET", b"k", b"v"]);
    // A name nobody has: no connection to try.
    let reply = l.cmd(&[b"MIGRATE", b"nonexistent.invalid", b"6379", b"k", b"0", b"1000"]);
    assert_eq!(reply, "-IOERR error or timeout connecting to the client\r\n");
    let reply = l.cmd(&[b"MIGRATE", b"127.0.0.1", b"-1", b"k", b"0", b"1000"]);
    assert_eq!(reply, "-IOERR error or timeout connecting to the client\r\n");
    // Nobody listens there. Redis's blocking connect does not check the socket's error: the
    // refusal shows at the first write (tried twice).
    let closed = port(free_port());
    let reply = l.cmd(&[b"MIGRATE", b"127.0.0.1", &closed, b"k", b"0", b"1000"]);
    assert_eq!(reply, "-IOERR error or timeout writing to target instance\r\n");
    // Port 0 (atoi of no number).
    let reply = l.cmd(&[b"MIGRATE", b"127.0.0.1", b"not-a-port", b"k", b"0", b"1000"]);
    assert_eq!(reply, "-IOERR error or timeout writing to target instance\r\n");
    // A target busy for a second: the reply does not come within the timeout.
    let mut sleeper = target.raw();
    sleeper.send(b"DEBUG SLEEP 1\r\n");
    std::thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    let reply = l.cmd(&[b"MIGRATE", b"127.0.0.1", &port(target.port), b"k", b"0", b"300"]);
    assert_eq!(reply, "-IOERR error or timeout reading to target instance\r\n");
    assert!(start.elapsed() < Duration::from_millis(900), "took {:?}", start.elapsed());
    assert_eq!(l.cmd(&[b"EXISTS", b"k"]), ":1\r\n");
    assert_eq!(info_field(&mut l, "migrate_cached_sockets"), "0");
    assert_eq!(sleeper.reply_bytes(), b"+OK\r\n");
}

#[test]
fn argument_errors_match_redis() {
    let Some(redis) = RedisServer::start_or_skip("MIGRATE's argument checks") else { return };
    let latch = Latch::start(&[]);
    let (mut l, mut r) = (latch.raw(), redis.raw());
    let closed = free_port().to_string();
    let lines = [
        "MIGRATE h 1 k 0",
        "MIGRATE h 1 k 0 10 bogus",
        "MIGRATE h 1 k 0 10 COPY AUTH",
        "MIGRATE h 1 k 0 10 AUTH2 user",
        "MIGRATE h 1 k 0 10 KEYS a b",
        "MIGRATE h 1 k 0 10 COPY KEYS",
        "MIGRATE h 1 k x y bogus",
        "MIGRATE h 1 k x y",
        "MIGRATE h 1 k 0 y",
        "MIGRATE h 1 k 99999999999999999999 10",
        "MIGRATE h 1 k 0 10",
        "MIGRATE h 1 \"\" 0 10",
        "MIGRATE h 1 \"\" 0 10 KEYS",
        "MIGRATE h 1 \"\" 0 10 COPY REPLACE AUTH2 u p AUTH x KEYS a b",
        "SET k v",
        &format!("MIGRATE 127.0.0.1 {closed} k 0 -5"),
        &format!("MIGRATE 127.0.0.1 {closed} k 0 10 AUTH pw"),
        "MIGRATE 127.0.0.1 -1 k 0 10",
        "MIGRATE 127.0.0.1 abc k 0 10",
        "MIGRATE nonexistent.invalid 6379 k 0 10",
        "COMMAND GETKEYS MIGRATE h 1 k 0 10",
        "COMMAND GETKEYS MIGRATE h 1 \"\" 0 10 AUTH keys KEYS a b",
        "COMMAND INFO MIGRATE",
    ];
    for line in lines {
        let args = resp::split_args(line.as_bytes()).expect("args");
        let args: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        assert_eq!(l.cmd(&args), r.cmd(&args), "{line}");
    }
}
