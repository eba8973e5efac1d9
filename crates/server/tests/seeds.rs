//! Every example of the documents the project was created from (Redis's SETNX page, a SETNX guide,
//! articles on SETNX locking) that uses commands Latch has, through the `redis` crate and as raw
//! bytes, against the real binary.

mod common;
use common::Latch;
use redis::Commands;

/// Seed 000 (Redis's SETNX page) and its 2013 copy (seed 003): the cli example.
#[test]
fn seed_000_setnx_page_example() {
    let l = Latch::start(&[]);
    let mut c = l.conn();
    let r: i64 = redis::cmd("SETNX").arg("mykey").arg("Hello").query(&mut c).unwrap();
    assert_eq!(r, 1);
    let r: i64 = redis::cmd("SETNX").arg("mykey").arg("World").query(&mut c).unwrap();
    assert_eq!(r, 0);
    let v: String = c.get("mykey").unwrap();
    assert_eq!(v, "Hello");
    let mut raw = l.raw();
    assert_eq!(raw.call(b"*3\r\n$5\r\nSETNX\r\n$5\r\nmykey\r\n$5\r\nWorld\r\n"), ":0\r\n");
    assert_eq!(raw.call(b"*2\r\n$3\r\nGET\r\n$5\r\nmykey\r\n"), "$5\r\nHello\r\n");
}

/// Seed 000/003: the SETNX + GETSET lock-recovery algorithm (C4 and C5 racing for an expired lock).
#[test]
fn seed_000_getset_deadlock_recovery() {
    let l = Latch::start(&[]);
    let mut c3 = l.conn();
    let mut c4 = l.conn();
    let mut c5 = l.conn();
    let now = 1_700_000_000i64;
    // C3 takes the lock with an expiry timestamp, then crashes without releasing it.
    let got: i64 = redis::cmd("SETNX").arg("lock.foo").arg(now + 10 + 1).query(&mut c3).unwrap();
    assert_eq!(got, 1);
    // Later (the timestamp is in the past): C4 fails SETNX, reads the stale timestamp...
    let later = now + 100;
    let got: i64 = redis::cmd("SETNX").arg("lock.foo").arg(later + 11).query(&mut c4).unwrap();
    assert_eq!(got, 0);
    let ts: i64 = c4.get("lock.foo").unwrap();
    assert!(ts < later, "lock expired");
    // ...C5 was faster with GETSET and got the stale value: C5 holds the lock.
    let old: i64 = redis::cmd("GETSET").arg("lock.foo").arg(later + 11).query(&mut c5).unwrap();
    assert!(old < later);
    // C4's GETSET returns C5's fresh timestamp: not expired, so C4 did not get the lock.
    let old: i64 = redis::cmd("GETSET").arg("lock.foo").arg(later + 12).query(&mut c4).unwrap();
    assert!(old >= later, "C4 must see a non-expired timestamp");
    // C5 releases with DEL.
    let n: i64 = c5.del("lock.foo").unwrap();
    assert_eq!(n, 1);
}

/// Seed 001 (Chinese SETNX reference).
#[test]
fn seed_001_job_example() {
    let l = Latch::start(&[]);
    let mut c = l.conn();
    assert_eq!(c.exists::<_, i64>("job").unwrap(), 0);
    assert_eq!(redis::cmd("SETNX").arg("job").arg("programmer").query::<i64>(&mut c).unwrap(), 1);
    assert_eq!(redis::cmd("SETNX").arg("job").arg("code-farmer").query::<i64>(&mut c).unwrap(), 0);
    assert_eq!(c.get::<_, String>("job").unwrap(), "programmer");
}

/// Seed 002 (SETNX guide): page_count, SET overwriting, the two-client lock, and the rate-limit template.
#[test]
fn seed_002_examples() {
    let l = Latch::start(&[]);
    let mut c = l.conn();
    assert_eq!(redis::cmd("SETNX").arg("page_count").arg(100).query::<i64>(&mut c).unwrap(), 1);
    assert_eq!(redis::cmd("SETNX").arg("page_count").arg(200).query::<i64>(&mut c).unwrap(), 0);
    assert_eq!(c.get::<_, String>("page_count").unwrap(), "100");
    let _: () = c.set("page_count", 100).unwrap();
    let _: () = c.set("page_count", 200).unwrap();
    assert_eq!(c.get::<_, String>("page_count").unwrap(), "200");

    // Client 1 and client 2 contend for lock:item.
    let mut c1 = l.conn();
    let mut c2 = l.conn();
    assert_eq!(redis::cmd("SETNX").arg("lock:item").arg(1).query::<i64>(&mut c1).unwrap(), 1);
    assert_eq!(redis::cmd("SETNX").arg("lock:item").arg(1).query::<i64>(&mut c2).unwrap(), 0);
    let _: () = c1.set("item", "hello").unwrap();
    assert_eq!(c1.del::<_, i64>("lock:item").unwrap(), 1);
    assert_eq!(redis::cmd("SETNX").arg("lock:item").arg(1).query::<i64>(&mut c2).unwrap(), 1);
    let _: () = c2.set("item", "world").unwrap();
    assert_eq!(c2.del::<_, i64>("lock:item").unwrap(), 1);
    assert_eq!(c.get::<_, String>("item").unwrap(), "world");

    // The Python rate-limit template: setnx, get, incr, delete.
    let _: i64 = redis::cmd("SETNX").arg("ratelimit:42").arg(1).query(&mut c).unwrap();
    assert!(c.get::<_, Option<String>>("ratelimit:42").unwrap().is_some());
    assert_eq!(c.incr::<_, _, i64>("api_call_limit", 1).unwrap(), 1);
    assert_eq!(c.del::<_, i64>("ratelimit:42").unwrap(), 1);

    // The job-queue template: a lock with a 60 s expiry (written with SET NX EX, the form that
    // actually takes `ex`), LPOP on the queue, release.
    let ok: Option<String> =
        redis::cmd("SET").arg("queue_lock").arg(1).arg("NX").arg("EX").arg(60).query(&mut c).unwrap();
    assert_eq!(ok.as_deref(), Some("OK"));
    let job: Option<String> = c.lpop("job_queue", None).unwrap();
    assert_eq!(job, None);
    assert_eq!(c.del::<_, i64>("queue_lock").unwrap(), 1);
}

/// Seed 004: the raw-protocol session, sent inline as in the article, byte for byte.
#[test]
fn seed_004_raw_session() {
    let l = Latch::start(&[]);
    let mut raw = l.raw();
    assert_eq!(raw.call(b"get test_setnx\r\n"), "$-1\r\n");
    assert_eq!(raw.call(b"setnx test_setnx 10\r\n"), ":1\r\n");
    assert_eq!(raw.call(b"get test_setnx\r\n"), "$2\r\n10\r\n");
    assert_eq!(raw.call(b"setnx test_setnx 99\r\n"), ":0\r\n");
}

/// Seed 004, versions 1 and 2.1 of the PHP lock: setnx, expire, delete.
#[test]
fn seed_004_php_lock_versions() {
    let l = Latch::start(&[]);
    let mut c = l.conn();
    // Version 1
    assert_eq!(redis::cmd("SETNX").arg("lock_key").arg(1).query::<i64>(&mut c).unwrap(), 1);
    assert_eq!(c.del::<_, i64>("lock_key").unwrap(), 1);
    // Version 2.1
    assert_eq!(redis::cmd("SETNX").arg("lock_key").arg(1).query::<i64>(&mut c).unwrap(), 1);
    assert_eq!(c.expire::<_, i64>("lock_key", 1).unwrap(), 1);
    let ttl: i64 = c.ttl("lock_key").unwrap();
    assert!((0..=1).contains(&ttl));
    assert_eq!(c.del::<_, i64>("lock_key").unwrap(), 1);
    // Version 3: setnx holding an absolute timeout, then get / getset when it is stale.
    let now_ms = 1_700_000_000_000i64;
    assert_eq!(redis::cmd("SETNX").arg("lock3").arg(now_ms + 1000).query::<i64>(&mut c).unwrap(), 1);
    let later = now_ms + 5000;
    let cur: f64 = c.get("lock3").unwrap();
    assert!((later as f64) > cur);
    let prev: f64 = redis::cmd("GETSET").arg("lock3").arg(later + 1000).query(&mut c).unwrap();
    assert!((later as f64) > prev, "the lock was acquired");
}

/// Seed 004, version 2.2: SETNX and EXPIRE inside MULTI/EXEC, through the `redis` crate's atomic
/// pipeline and as raw bytes.
#[test]
fn seed_004_php_lock_in_multi() {
    let l = Latch::start(&[]);
    let mut c = l.conn();
    let (set, exp): (i64, i64) = redis::pipe()
        .atomic()
        .cmd("SETNX")
        .arg("lock_key")
        .arg(1)
        .cmd("EXPIRE")
        .arg("lock_key")
        .arg(1)
        .query(&mut c)
        .unwrap();
    assert_eq!((set, exp), (1, 1));
    let ttl: i64 = c.ttl("lock_key").unwrap();
    assert!((0..=1).contains(&ttl));
    let mut raw = l.raw();
    assert_eq!(raw.call(b"MULTI\r\n"), "+OK\r\n");
    assert_eq!(raw.call(b"SETNX lock_key 1\r\n"), "+QUEUED\r\n");
    assert_eq!(raw.call(b"EXPIRE lock_key 1\r\n"), "+QUEUED\r\n");
    assert_eq!(raw.call(b"EXEC\r\n"), "*2\r\n:0\r\n:1\r\n");
}
