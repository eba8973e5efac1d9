//! The `lock` crate against the real binary (native DELIFEQ/DELEX/SET IFEQ paths), and against a
//! real redis-server from PATH when there is one (Lua path; skipped with a notice otherwise).

mod common;
use common::Latch;
use lock::{Backend, Error, LockClient, Redlock};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

async fn client(l: &Latch) -> LockClient {
    LockClient::connect(&l.url()).await.expect("connect")
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
async fn latch_native_path() {
    let l = Latch::start(&[]);
    bounded(async {
        let c = client(&l).await;
        assert_eq!(c.backend().await.unwrap(), Backend::Delifeq, "Latch has DELIFEQ");
        exclusive_release_extend(&c).await;
        // The Redis 8.4 spelling works too.
        let c = LockClient::new(redis::Client::open(l.url()).unwrap(), None).with_backend(Backend::Delex);
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

/// A real redis-server on an ephemeral-ish loopback port, if one is installed.
struct Redis(Child, u16);

impl Redis {
    fn start() -> Option<Redis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .ok()?;
        let r = Redis(child, port);
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(r);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn redis_server_lua_path() {
    let Some(r) = Redis::start() else {
        eprintln!("redis-server not found in PATH: skipping the Lua-path test");
        return;
    };
    bounded(async {
        let c = LockClient::connect(&format!("redis://127.0.0.1:{}/", r.1)).await.unwrap();
        assert_eq!(c.backend().await.unwrap(), Backend::Lua, "Redis 7 has no DELIFEQ/DELEX");
        exclusive_release_extend(&c).await;
        // A client that guessed wrong falls back on the first `unknown command`.
        let c = LockClient::new(redis::Client::open(format!("redis://127.0.0.1:{}/", r.1)).unwrap(), None)
            .with_backend(Backend::Delifeq);
        exclusive_release_extend(&c).await;
        assert_eq!(c.backend().await.unwrap(), Backend::Lua);
    })
    .await;
}
