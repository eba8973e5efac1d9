//! The `lock` crate against the real binary: the native lock commands (LOCK/UNLOCK/LOCKEXTEND, the
//! path the library picks on Latch) and the portable protocol forced on Latch (DELIFEQ/DELEX/SET
//! IFEQ); against a real redis-server from PATH when there is one (Lua path; skipped with a notice
//! otherwise). Also the server's FIFO order for `LOCK ... WAIT` through raw connections.

mod common;
use common::Latch;
use lock::{Backend, Error, LockClient, Redlock};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

/// A client forced onto the portable `SET NX PX` protocol.
async fn client(l: &Latch) -> LockClient {
    LockClient::connect(&l.url()).await.expect("connect").with_native(false)
}

/// A client as applications get it: native locks detected.
async fn native(l: &Latch) -> LockClient {
    let c = LockClient::connect(&l.url()).await.expect("connect");
    assert!(c.native().await.unwrap(), "Latch has LOCK");
    c
}

/// Runs `f` with a time limit, so a hang fails the test instead of blocking CI.
async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(LIMIT, f).await.expect("test exceeded its time limit");
}

async fn exclusive_release_extend(c: &LockClient) {
    let l = c.lock("t:lock").ttl(Duration::from_secs(5));
    let g = l.try_lock().await.unwrap().expect("free lock is acquired");
    assert_eq!(g.token().len(), 32);
    assert!(l.try_lock().await.unwrap().is_none(), "second holder refused");
    assert!(g.extend(Duration::from_secs(20)).await.unwrap());
    let pttl = c.pttl("t:lock").await.unwrap();
    assert!(pttl > 15_000 && pttl <= 20_000, "{pttl}");
    assert!(g.is_valid() && !g.is_lost());
    assert!(g.release().await.unwrap(), "released by its owner");
    assert_eq!(c.pttl("t:lock").await.unwrap(), -2, "key gone");
    // Expired, then taken by someone else: the first holder's release and extend leave it alone.
    let g1 = l.clone().ttl(Duration::from_millis(50)).try_lock().await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    let g2 = l.try_lock().await.unwrap().expect("expired lock is free");
    assert!(!g1.extend(Duration::from_secs(5)).await.unwrap());
    assert!(g1.is_lost());
    assert!(!g1.release().await.unwrap());
    assert!(c.pttl("t:lock").await.unwrap() > 0, "g2's lock survives");
    assert!(g2.release().await.unwrap());
}

#[tokio::test]
async fn latch_portable_path_delifeq_and_delex() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = client(&l).await;
        assert_eq!(c.backend().await.unwrap(), Backend::Delifeq, "Latch has DELIFEQ");
        exclusive_release_extend(&c).await;
        // The Redis 8.4 spelling works too.
        let c = LockClient::new(redis::Client::open(l.url()).unwrap(), None)
            .with_backend(Backend::Delex)
            .with_native(false);
        exclusive_release_extend(&c).await;
    })
    .await;
}

#[tokio::test]
async fn fencing_tokens_strictly_increase() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = client(&l).await;
        let lk = c.lock("f:lock").fencing(true).ttl(Duration::from_secs(5));
        let mut last = 0;
        for _ in 0..5 {
            let g = lk.try_lock().await.unwrap().unwrap();
            let f = g.fence().unwrap();
            assert!(f > last, "{f} after {last}");
            last = f;
            // A failed attempt moves the counter but hands nothing out.
            assert!(lk.try_lock().await.unwrap().is_none());
            g.release().await.unwrap();
        }
        let n: i64 = redis::cmd("GET").arg("f:lock:fence").query(&mut l.conn()).unwrap();
        assert_eq!(n, 10);
        assert_eq!(c.lock("nofence").try_lock().await.unwrap().unwrap().fence(), None);
    })
    .await;
}

#[tokio::test]
async fn lock_waits_with_backoff_and_times_out() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = client(&l).await;
        let lk = c.lock("w:lock").ttl(Duration::from_millis(300));
        let g = lk.lock(Duration::from_secs(1)).await.unwrap();
        let t = std::time::Instant::now();
        match lk.lock(Duration::from_millis(100)).await {
            Err(Error::Timeout(d)) => assert_eq!(d, Duration::from_millis(100)),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("must not be acquired while held"),
        }
        assert!(t.elapsed() < Duration::from_millis(250), "deadline respected: {:?}", t.elapsed());
        // Held without watchdog: the waiter gets it once the TTL runs out.
        let g2 = lk.lock(Duration::from_secs(2)).await.unwrap();
        assert!(!g.release().await.unwrap());
        g2.release().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn watchdog_keeps_the_lock_and_reports_loss() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = client(&l).await;
        let g = c.lock("d:lock").ttl(Duration::from_millis(150)).watchdog(true).try_lock().await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!g.is_lost());
        let v: String = redis::cmd("GET").arg("d:lock").query(&mut l.conn()).unwrap();
        assert_eq!(v, g.token(), "still ours after 3 TTLs");
        // Someone else overwrites the key: the watchdog notices within a third of the TTL.
        let _: () = redis::cmd("SET").arg("d:lock").arg("intruder").query(&mut l.conn()).unwrap();
        tokio::time::timeout(Duration::from_secs(2), g.lost()).await.expect("loss reported");
        assert!(g.is_lost() && !g.is_valid());
        assert!(!g.release().await.unwrap());
        let v: String = redis::cmd("GET").arg("d:lock").query(&mut l.conn()).unwrap();
        assert_eq!(v, "intruder");
    })
    .await;
}

#[tokio::test]
async fn dropped_guard_releases_in_the_background() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = client(&l).await;
        let lk = c.lock("g:lock").ttl(Duration::from_secs(30)).watchdog(true);
        drop(lk.try_lock().await.unwrap().unwrap());
        let mut n = 0;
        while c.pttl("g:lock").await.unwrap() != -2 {
            n += 1;
            assert!(n < 100, "not released after drop");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(lk.try_lock().await.unwrap().is_some());
    })
    .await;
}

#[tokio::test]
async fn redlock_majority_and_failures() {
    let mut servers: Vec<Latch> = (0..3).map(|_| Latch::start(&[])).collect();
    let urls: Vec<String> = servers.iter().map(Latch::url).collect();
    let u: Vec<&str> = urls.iter().map(String::as_str).collect();
    let rl = Redlock::open(&u, Duration::from_millis(50)).unwrap();
    assert_eq!(rl.quorum(), 2);
    let ttl = Duration::from_secs(2);
    let g = rl.try_lock("r:lock", ttl).await.unwrap().expect("acquired");
    assert!(g.validity() > Duration::from_millis(1900) && g.validity() <= ttl);
    assert!(rl.try_lock("r:lock", ttl).await.unwrap().is_none(), "exclusive");
    assert_eq!(g.release().await, 3);
    // One server holds a foreign lock: 2 of 3 is still a majority.
    let _: () = redis::cmd("SET").arg("r:lock").arg("other").query(&mut servers[0].conn()).unwrap();
    let mut g = rl.try_lock("r:lock", ttl).await.unwrap().expect("majority of 2");
    assert!(g.extend(ttl).await.unwrap());
    assert_eq!(g.release().await, 2);
    // Two of three down: no majority; the attempt releases what it got.
    let _: () = redis::cmd("SET").arg("r:lock").arg("other").query(&mut servers[1].conn()).unwrap();
    assert!(rl.try_lock("r:lock", ttl).await.unwrap().is_none());
    assert_eq!(redis::cmd("EXISTS").arg("r:lock").query::<i64>(&mut servers[2].conn()).unwrap(), 0);
    // A dead server counts as a failure, quickly.
    drop(servers.remove(0));
    let _: () = redis::cmd("DEL").arg("r:lock").query(&mut servers[0].conn()).unwrap();
    let t = std::time::Instant::now();
    let g = rl.lock("r:lock", ttl, Duration::from_secs(2)).await.expect("2 of 3 alive");
    assert!(t.elapsed() < Duration::from_secs(1));
    assert_eq!(g.release().await, 2);
}

#[tokio::test]
async fn redis_server_lua_path() {
    let Some(r) = common::RedisServer::start_or_skip("the Lua-path test") else { return };
    bounded(async {
        let c = LockClient::connect(&format!("redis://127.0.0.1:{}/", r.port)).await.unwrap();
        assert_eq!(c.backend().await.unwrap(), Backend::Lua, "Redis 7 has no DELIFEQ/DELEX");
        assert!(!c.native().await.unwrap(), "Redis 7 has no LOCK");
        exclusive_release_extend(&c).await;
        // Forced onto the native path, the first `unknown command` moves it to the portable one.
        let c = LockClient::connect(&format!("redis://127.0.0.1:{}/", r.port)).await.unwrap().with_native(true);
        let g = c.lock("n:lock").fencing(true).lock(Duration::from_secs(1)).await.unwrap();
        assert!(!g.is_native() && g.fence() == Some(1));
        assert!(!c.native().await.unwrap());
        assert!(c.lock("n:lock").try_lock().await.unwrap().is_none());
        assert!(g.release().await.unwrap());
        // A client that guessed wrong falls back on the first `unknown command`.
        let c = LockClient::new(redis::Client::open(format!("redis://127.0.0.1:{}/", r.port)).unwrap(), None)
            .with_backend(Backend::Delifeq);
        exclusive_release_extend(&c).await;
        assert_eq!(c.backend().await.unwrap(), Backend::Lua);
    })
    .await;
}

// ------------------------------------------------------------------------------------------------
// Native path (LOCK / UNLOCK / LOCKEXTEND)

fn raw_cmd<T: redis::FromRedisValue>(l: &Latch, args: &[&str]) -> T {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(&mut l.conn()).unwrap()
}

#[tokio::test]
async fn native_acquire_extend_release() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = native(&l).await;
        let lk = c.lock("n:lock").ttl(Duration::from_secs(5));
        let g = lk.try_lock().await.unwrap().expect("free lock is acquired");
        assert!(g.is_native());
        let t1 = g.fence().expect("native grants carry a token");
        assert_eq!(raw_cmd::<String>(&l, &["TYPE", "n:lock"]), "lock");
        let info = c.lock_info("n:lock").await.unwrap().unwrap();
        assert_eq!((info.owner.as_str(), info.token, info.waiters), (g.token(), t1, 0));
        assert!(lk.try_lock().await.unwrap().is_none(), "second holder refused");
        assert!(g.extend(Duration::from_secs(20)).await.unwrap());
        let pttl = c.pttl("n:lock").await.unwrap();
        assert!(pttl > 15_000 && pttl <= 20_000, "{pttl}");
        assert!(g.is_valid() && !g.is_lost());
        assert!(g.release().await.unwrap(), "released by its owner");
        assert_eq!(c.lock_info("n:lock").await.unwrap(), None);
        // Expired, then taken by someone else: the first holder's release and extend leave it alone.
        let g1 = lk.clone().ttl(Duration::from_millis(50)).try_lock().await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(120)).await;
        let g2 = lk.try_lock().await.unwrap().expect("expired lock is free");
        assert!(g2.fence().unwrap() > g1.fence().unwrap());
        assert!(!g1.extend(Duration::from_secs(5)).await.unwrap());
        assert!(g1.is_lost());
        assert!(!g1.release().await.unwrap());
        assert_eq!(c.lock_info("n:lock").await.unwrap().unwrap().owner, g2.token(), "g2's lock survives");
        assert!(g2.release().await.unwrap());
        // A key that is not a native lock (a portable holder's) is held, never overwritten.
        let _: () = raw_cmd(&l, &["SET", "n:str", "someone"]);
        assert!(c.lock("n:str").try_lock().await.unwrap().is_none());
        match c.lock("n:str").lock(Duration::from_millis(80)).await {
            Err(Error::Timeout(_)) => {}
            r => panic!("expected a timeout, got {:?}", r.map(|g| g.fence())),
        }
        assert_eq!(raw_cmd::<String>(&l, &["GET", "n:str"]), "someone");
        // And a portable client meets a native lock as held.
        let g = c.lock("n:mixed").try_lock().await.unwrap().unwrap();
        assert!(client(&l).await.lock("n:mixed").try_lock().await.unwrap().is_none());
        assert!(g.release().await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn native_fencing_tokens_increase_and_fenced_refuses_stale_writes() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = native(&l).await;
        let lk = c.lock("nf:lock").ttl(Duration::from_secs(5));
        let mut last = 0;
        for i in 0..6 {
            let g = lk.try_lock().await.unwrap().unwrap();
            let f = g.fence().unwrap();
            assert!(f > last, "{f} after {last}");
            last = f;
            g.release().await.unwrap();
            // Neither DEL nor FLUSHALL sends the counter back.
            let _: () = raw_cmd(&l, &[if i % 2 == 0 { "FLUSHALL" } else { "PING" }]);
        }
        // The library's token works with FENCED: writes pass only under the current grant.
        let g1 = lk.clone().ttl(Duration::from_millis(60)).try_lock().await.unwrap().unwrap();
        let f1 = g1.fence().unwrap().to_string();
        let ok: String = raw_cmd(&l, &["FENCED", "nf:lock", &f1, "SET", "resource", "from-g1"]);
        assert_eq!(ok, "OK");
        tokio::time::sleep(Duration::from_millis(150)).await;
        let g2 = lk.try_lock().await.unwrap().unwrap();
        let f2 = g2.fence().unwrap();
        let stale = redis::cmd("FENCED")
            .arg("nf:lock")
            .arg(&f1)
            .arg("SET")
            .arg("resource")
            .arg("late")
            .query::<String>(&mut l.conn());
        let e = stale.expect_err("stale token refused");
        assert!(e.to_string().contains(&format!("token {f1} is stale, the lock's current token is {f2}")), "{e}");
        let n: i64 = raw_cmd(&l, &["FENCED", "nf:lock", &f2.to_string(), "APPEND", "resource", "+g2"]);
        assert_eq!(n, "from-g1+g2".len() as i64);
        assert!(g2.release().await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn native_wait_is_fifo_without_polling() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = native(&l).await;
        let lk = c.lock("nw:lock").ttl(Duration::from_secs(10));
        let holder = lk.try_lock().await.unwrap().unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..4 {
            let (lk, tx) = (lk.clone(), tx.clone());
            tokio::spawn(async move {
                let g = lk.lock(Duration::from_secs(20)).await.unwrap();
                tx.send((i, g.fence().unwrap(), std::time::Instant::now())).unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
                assert!(g.release().await.unwrap());
            });
            // Arrival order = spawn order.
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
        assert_eq!(c.lock_info("nw:lock").await.unwrap().unwrap().waiters, 4);
        let commands_before: String = raw_cmd(&l, &["INFO", "stats"]);
        let released = std::time::Instant::now();
        assert!(holder.release().await.unwrap());
        let mut order = Vec::new();
        let mut last = 0;
        for _ in 0..4 {
            let (i, f, at) = rx.recv().await.unwrap();
            if order.is_empty() {
                // Handed over in the release step: no backoff sleep in between.
                assert!(at - released < Duration::from_millis(50), "{:?}", at - released);
            }
            assert!(f > last);
            last = f;
            order.push(i);
        }
        assert_eq!(order, [0, 1, 2, 3], "granted in arrival order");
        // No polling: 4 waits, 4 releases and a few INFO/LOCKINFO, not hundreds of attempts.
        let processed = |s: &str| -> i64 {
            s.lines().find_map(|l| l.strip_prefix("total_commands_processed:")).unwrap().trim().parse().unwrap()
        };
        let after: String = raw_cmd(&l, &["INFO", "stats"]);
        assert!(
            processed(&after) - processed(&commands_before) < 20,
            "{}",
            processed(&after) - processed(&commands_before)
        );
    })
    .await;
}

#[tokio::test]
async fn native_wait_times_out_and_expiry_hands_over() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = native(&l).await;
        let lk = c.lock("nt:lock").ttl(Duration::from_millis(300));
        let g = lk.try_lock().await.unwrap().unwrap();
        let t = std::time::Instant::now();
        match lk.lock(Duration::from_millis(100)).await {
            Err(Error::Timeout(d)) => assert_eq!(d, Duration::from_millis(100)),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("must not be acquired while held"),
        }
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(90) && waited < Duration::from_millis(400), "{waited:?}");
        assert_eq!(c.lock_info("nt:lock").await.unwrap().unwrap().waiters, 0, "a timed-out waiter leaves the queue");
        // Held without watchdog: the waiter is handed the lock when the TTL runs out (cron, hz 10).
        let t = std::time::Instant::now();
        let g2 = lk.lock(Duration::from_secs(3)).await.unwrap();
        assert!(t.elapsed() < Duration::from_millis(500), "{:?}", t.elapsed());
        assert!(g2.fence().unwrap() > g.fence().unwrap());
        assert!(!g.release().await.unwrap());
        // A waiter whose future is dropped (here: a timeout around it) leaves the queue.
        let other = c.lock("nt:lock");
        assert!(tokio::time::timeout(Duration::from_millis(100), other.lock(Duration::from_secs(60))).await.is_err());
        let mut n = 0;
        while c.lock_info("nt:lock").await.unwrap().unwrap().waiters != 0 {
            n += 1;
            assert!(n < 100, "dropped waiter still queued");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(g2.release().await.unwrap());
        assert_eq!(c.lock_info("nt:lock").await.unwrap(), None, "nobody was granted it");
        // A zero wait is one attempt (not WAIT 0, which would wait forever).
        let g3 = lk.try_lock().await.unwrap().unwrap();
        let t = std::time::Instant::now();
        assert!(matches!(lk.lock(Duration::ZERO).await, Err(Error::Timeout(_))));
        assert!(t.elapsed() < Duration::from_millis(200));
        g3.release().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn native_watchdog_keeps_the_lock_and_reports_loss() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = native(&l).await;
        let g = c.lock("nd:lock").ttl(Duration::from_millis(150)).watchdog(true).try_lock().await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!g.is_lost());
        let info = c.lock_info("nd:lock").await.unwrap().unwrap();
        assert_eq!((info.owner.as_str(), info.token), (g.token(), g.fence().unwrap()), "still ours after 3 TTLs");
        // Someone else takes over (an administrator's DEL, then another owner): loss reported.
        let _: () = raw_cmd(&l, &["DEL", "nd:lock"]);
        let _: i64 = raw_cmd(&l, &["LOCK", "nd:lock", "intruder", "10000"]);
        tokio::time::timeout(Duration::from_secs(2), g.lost()).await.expect("loss reported");
        assert!(g.is_lost() && !g.is_valid());
        assert!(!g.release().await.unwrap());
        assert_eq!(c.lock_info("nd:lock").await.unwrap().unwrap().owner, "intruder");
        // Overwritten by a plain SET (not a lock any more): also a loss, not an error.
        let g = c.lock("nd:lock2").ttl(Duration::from_millis(150)).watchdog(true).try_lock().await.unwrap().unwrap();
        let _: () = raw_cmd(&l, &["SET", "nd:lock2", "x"]);
        tokio::time::timeout(Duration::from_secs(2), g.lost()).await.expect("loss reported");
        assert!(!g.release().await.unwrap());
        // Dropped guards release in the background.
        drop(c.lock("nd:lock3").try_lock().await.unwrap().unwrap());
        let mut n = 0;
        while c.lock_info("nd:lock3").await.unwrap().is_some() {
            n += 1;
            assert!(n < 100, "not released after drop");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn native_mutual_exclusion_under_contention() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = native(&l).await;
        let inside = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (lk, inside) = (c.lock("nc:lock").ttl(Duration::from_secs(10)), inside.clone());
            tasks.push(tokio::spawn(async move {
                let mut fences = Vec::new();
                for _ in 0..25 {
                    let g = lk.lock(Duration::from_secs(20)).await.unwrap();
                    assert_eq!(inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0, "two holders");
                    fences.push(g.fence().unwrap());
                    tokio::task::yield_now().await;
                    inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    assert!(g.release().await.unwrap());
                }
                fences
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "every grant has its own token");
        assert_eq!(n, 200);
    })
    .await;
}

/// Task 4 of the native-locks issue: several clients queue with `LOCK k ownerN 10000 WAIT 0`, one
/// after another; each release grants the lock to the earliest arrival still waiting.
#[test]
fn lock_wait_grants_in_arrival_order_over_real_connections() {
    let l = Latch::start(&[]);
    let mut holder = l.raw();
    let first = holder.call(b"LOCK k holder 10000\r\n");
    assert!(first.starts_with(':'), "{first}");
    let mut waiters: Vec<_> = (0..6).map(|_| l.raw()).collect();
    // Arrival order is deliberately not the connection order.
    let arrival = [3usize, 0, 5, 1, 4, 2];
    for &i in &arrival {
        waiters[i].send(format!("LOCK k owner{i} 10000 WAIT 0\r\n").as_bytes());
        std::thread::sleep(Duration::from_millis(30));
    }
    assert!(holder.call(b"LOCKINFO k\r\n").contains("waiters\r\n:6\r\n"));
    // A newcomer without WAIT does not jump the queue, even once the holder is gone.
    let mut newcomer = l.raw();
    assert_eq!(newcomer.call(b"LOCK k newcomer 10000\r\n"), "$-1\r\n");
    assert_eq!(holder.call(b"UNLOCK k holder\r\n"), ":1\r\n");
    let mut granted = Vec::new();
    let mut last: i64 = first.trim().trim_start_matches(':').parse().unwrap();
    for &i in &arrival {
        // The release granted the next waiter in the same step: its reply is already on the way.
        let r = waiters[i].reply_bytes();
        let token: i64 = String::from_utf8_lossy(&r).trim().trim_start_matches(':').parse().expect("a token");
        assert!(token > last, "{token} after {last}");
        last = token;
        let info = holder.call(b"LOCKINFO k\r\n");
        assert!(info.contains(&format!("owner{i}")), "{info}");
        granted.push(i);
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(waiters[i].call(format!("UNLOCK k owner{i}\r\n").as_bytes()), ":1\r\n");
    }
    assert_eq!(granted, arrival);
    assert_eq!(holder.call(b"LOCKINFO k\r\n"), "$-1\r\n");
}

/// `FLUSHALL` frees locks like `DEL` and `UNLOCK` do: the queued waiter is granted the freed lock.
#[test]
fn flushall_hands_freed_locks_to_waiters() {
    let l = Latch::start(&[]);
    let mut holder = l.raw();
    let mut waiter = l.raw();
    assert!(holder.call(b"LOCK k h 10000\r\n").starts_with(':'));
    waiter.send(b"LOCK k w 10000 WAIT 0\r\n");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(holder.call(b"FLUSHALL\r\n"), "+OK\r\n");
    waiter.s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let r = String::from_utf8_lossy(&waiter.reply_bytes()).into_owned();
    assert!(r.starts_with(':'), "{r}");
    assert!(holder.call(b"LOCKINFO k\r\n").contains("\r\nw\r\n"));
}
