//! `maxmemory` through the real binary, where used memory is the allocator's real count: the limit
//! holds under every policy (Redis's unit/maxmemory "is the memory limit honoured" and "only
//! allkeys-* should remove non-volatile keys", replayed), `noeviction` refuses writes with Redis's
//! text, native locks outlive eviction, and a lowered limit is enforced without traffic. And the
//! allocator's own figures (INFO's `allocator_*`, MEMORY STATS) show the fragmentation it has.

mod common;
use common::{Latch, Raw};
use std::time::{Duration, Instant};

fn info_field(r: &mut Raw, section: &str, key: &str) -> u64 {
    let text = r.cmd(&[b"INFO", section.as_bytes()]);
    let line = text.lines().find(|l| l.starts_with(&format!("{key}:"))).unwrap_or_else(|| panic!("{key} in {text}"));
    line[key.len() + 1..].trim().parse().unwrap()
}

fn used(r: &mut Raw) -> u64 {
    info_field(r, "memory", "used_memory")
}

/// Sets `maxmemory` to 100 KiB over what is used now, under `policy`; returns the limit.
fn limit_near(r: &mut Raw, policy: &str) -> u64 {
    assert_eq!(r.cmd(&[b"FLUSHALL"]), "+OK\r\n");
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"maxmemory", b"0"]), "+OK\r\n");
    let limit = used(r) + 100 * 1024;
    let l = limit.to_string();
    assert_eq!(
        r.cmd(&[b"CONFIG", b"SET", b"maxmemory", l.as_bytes(), b"maxmemory-policy", policy.as_bytes()]),
        "+OK\r\n"
    );
    limit
}

/// Adds keys (volatile ones if `volatile`) until used memory is within 4 KiB of `limit`; how many.
fn fill(r: &mut Raw, limit: u64, volatile: bool, prefix: &str) -> u64 {
    let mut n = 0u64;
    loop {
        let k = format!("{prefix}:{n}");
        let reply = if volatile {
            r.cmd(&[b"SETEX", k.as_bytes(), b"10000", b"x"])
        } else {
            r.cmd(&[b"SET", k.as_bytes(), b"x"])
        };
        assert_eq!(reply, "+OK\r\n");
        n += 1;
        if used(r) + 4096 > limit {
            assert!(n > 10, "only {n} keys fit in 100 KiB");
            return n;
        }
        assert!(n < 1_000_000, "memory never reached the limit");
    }
}

#[test]
fn the_limit_holds_under_every_policy() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    let startup = info_field(&mut r, "memory", "used_memory_startup");
    assert!(startup > 0 && startup <= used(&mut r));
    for policy in [
        "allkeys-random",
        "allkeys-lru",
        "allkeys-lfu",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let limit = limit_near(&mut r, policy);
        let n = fill(&mut r, limit, true, "a");
        let before = info_field(&mut r, "stats", "evicted_keys");
        for j in 0..n {
            let k = format!("b:{j}");
            assert_eq!(r.cmd(&[b"SETEX", k.as_bytes(), b"10000", b"x"]), "+OK\r\n", "{policy}");
        }
        let now = used(&mut r);
        assert!(now < limit + 4096, "{policy}: used {now}, limit {limit}");
        assert!(info_field(&mut r, "stats", "evicted_keys") > before, "{policy}");
    }
}

#[test]
fn volatile_policies_refuse_once_only_persistent_keys_are_left() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    for policy in ["volatile-lru", "volatile-random", "volatile-ttl", "allkeys-lru"] {
        let limit = limit_near(&mut r, policy);
        let n = fill(&mut r, limit, false, "p");
        let mut refused = 0;
        for j in 0..n {
            let k = format!("q:{j}");
            let reply = r.cmd(&[b"SET", k.as_bytes(), b"x"]);
            if reply == "-OOM command not allowed when used memory > 'maxmemory'.\r\n" {
                refused += 1;
            } else {
                assert_eq!(reply, "+OK\r\n");
            }
        }
        if policy.starts_with("allkeys") {
            assert_eq!(refused, 0);
            assert!(used(&mut r) < limit + 4096);
        } else {
            assert!(refused > 0, "{policy}");
            // Nothing was evicted: every persistent key is still there.
            let first = r.cmd(&[b"EXISTS", b"p:0"]);
            assert_eq!(first, ":1\r\n", "{policy}");
        }
    }
}

#[test]
fn native_locks_survive_eviction_and_a_lowered_limit_applies_without_traffic() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    let limit = limit_near(&mut r, "allkeys-lru");
    assert!(r.cmd(&[b"LOCK", b"lock:job", b"worker-1", b"600000"]).starts_with(':'));
    assert_eq!(r.cmd(&[b"SET", b"lock:plain", b"worker-1", b"NX", b"PX", b"600000"]), "+OK\r\n");
    let n = fill(&mut r, limit, false, "cache");
    for j in 0..3 * n {
        let k = format!("more:{j}");
        assert_eq!(r.cmd(&[b"SET", k.as_bytes(), b"x"]), "+OK\r\n");
    }
    // Keys were evicted, the native lock never (a SET NX lock is a plain key: it may have gone).
    assert!(info_field(&mut r, "stats", "evicted_keys") > 0);
    assert_eq!(r.cmd(&[b"LOCKINFO", b"lock:job"]).lines().nth(4), Some("worker-1"));

    // Lower the limit below what is used and send nothing but INFO: the cron evicts.
    let now = used(&mut r);
    let lower = (now - 50 * 1024).to_string();
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"maxmemory", lower.as_bytes()]), "+OK\r\n");
    let before = info_field(&mut r, "stats", "evicted_keys");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut keys_after = 0;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        let text = r.cmd(&[b"INFO", b"stats"]);
        let evicted: u64 =
            text.lines().find_map(|l| l.strip_prefix("evicted_keys:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
        if evicted > before {
            keys_after = evicted;
            break;
        }
    }
    assert!(keys_after > before, "no eviction after lowering maxmemory");
    assert_eq!(r.cmd(&[b"LOCKINFO", b"lock:job"]).lines().nth(4), Some("worker-1"));
}

#[test]
fn noeviction_refuses_writes_with_redis_text() {
    let l = Latch::start(&["--maxmemory", "1", "--maxmemory-policy", "noeviction"]);
    let mut r = l.raw();
    let oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    assert_eq!(r.cmd(&[b"SET", b"k", b"v"]), oom);
    assert_eq!(r.cmd(&[b"SETNX", b"lock", b"1"]), oom);
    assert_eq!(r.cmd(&[b"GET", b"k"]), "$-1\r\n");
    assert_eq!(r.cmd(&[b"DEL", b"k"]), ":0\r\n");
    assert_eq!(r.cmd(&[b"MULTI"]), "+OK\r\n");
    assert_eq!(r.cmd(&[b"GET", b"k"]), oom);
    assert_eq!(r.cmd(&[b"EXEC"]), "-EXECABORT Transaction discarded because of previous errors.\r\n");
    let errors = r.cmd(&[b"INFO", b"errorstats"]);
    assert!(errors.contains("errorstat_OOM:count=3"), "{errors}");
    assert_eq!(info_field(&mut r, "memory", "maxmemory"), 1);
}

fn info_ratio(r: &mut Raw, key: &str) -> f64 {
    let text = r.cmd(&[b"INFO", b"memory"]);
    let line = text.lines().find(|l| l.starts_with(&format!("{key}:"))).unwrap_or_else(|| panic!("{key} in {text}"));
    line[key.len() + 1..].trim().parse().unwrap()
}

/// Writes keys `frag:0` to `frag:{n-1}` with values of 300 bytes, in MSETs of 100.
fn write_keys(r: &mut Raw, n: usize) {
    let value = vec![b'v'; 300];
    for batch in (0..n).collect::<Vec<_>>().chunks(100) {
        let keys: Vec<String> = batch.iter().map(|i| format!("frag:{i}")).collect();
        let mut args: Vec<&[u8]> = vec![b"MSET"];
        for k in &keys {
            args.push(k.as_bytes());
            args.push(&value);
        }
        assert_eq!(r.cmd(&args), "+OK\r\n");
    }
}

/// Redis's `allocator_*` figures come from jemalloc (`stats.allocated`, `active`, `resident`):
/// deleting every other key of a size class leaves its pages half used, and the allocator's
/// fragmentation ratio (active / allocated) shows it, in INFO and in MEMORY STATS alike, as Redis's
/// own memefficiency tests rely on before they defragment.
#[test]
fn the_allocators_fragmentation_is_reported() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    let n = 40_000;
    write_keys(&mut r, n);
    let (allocated, active, resident) = (
        info_field(&mut r, "memory", "allocator_allocated"),
        info_field(&mut r, "memory", "allocator_active"),
        info_field(&mut r, "memory", "allocator_resident"),
    );
    assert!(allocated >= (n * 300) as u64, "allocated {allocated}");
    assert!(active >= allocated && resident >= active, "{allocated} {active} {resident}");
    let before = info_ratio(&mut r, "allocator_frag_ratio");
    assert!(before < 1.2, "fragmentation {before} before any delete");
    for batch in (0..n).step_by(2).collect::<Vec<_>>().chunks(100) {
        let keys: Vec<String> = batch.iter().map(|i| format!("frag:{i}")).collect();
        let mut args: Vec<&[u8]> = vec![b"DEL"];
        args.extend(keys.iter().map(|k| k.as_bytes()));
        assert_eq!(r.cmd(&args), format!(":{}\r\n", batch.len()));
    }
    let after = info_ratio(&mut r, "allocator_frag_ratio");
    let bytes = info_field(&mut r, "memory", "allocator_frag_bytes");
    assert!(
        after > 1.3 && bytes > (n / 2 * 300) as u64 / 2,
        "fragmentation {after} ({bytes} bytes) after deleting half"
    );
    // MEMORY STATS reads the same figures.
    let stats = r.cmd(&[b"MEMORY", b"STATS"]);
    let at = stats.find("allocator-fragmentation.ratio").expect("the field");
    let ratio: f64 = stats[at..].lines().nth(2).unwrap().parse().unwrap();
    assert!((ratio - after).abs() < 0.1, "MEMORY STATS {ratio}, INFO {after}");
}
