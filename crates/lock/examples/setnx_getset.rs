//! The legacy SETNX + GETSET lock from Redis's SETNX page ("Handling deadlocks"), step by step:
//! it works when clocks agree and nobody stalls, and it breaks in the ways the page and its
//! readers pointed out. Run against any server:
//!
//!     cargo run -p lock --example setnx_getset -- redis://127.0.0.1:6379/
//!
//! The lock key holds the Unix time (ms here) at which the lock stops being valid; the key itself
//! never expires. Use `SET key token NX PX ttl` + an owner-checked release instead (the `lock`
//! crate), see docs/locks.md.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::{Commands, Connection, RedisResult};

const KEY: &str = "lock.foo";
const TIMEOUT_MS: i64 = 1000;

/// A client with its own clock (the real one plus a skew).
struct Client {
    name: &'static str,
    conn: Connection,
    skew_ms: i64,
    /// The expiry timestamp this client wrote when it acquired the lock.
    mine: Option<i64>,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

impl Client {
    fn new(url: &str, name: &'static str, skew_ms: i64) -> RedisResult<Client> {
        Ok(Client { name, conn: redis::Client::open(url)?.get_connection()?, skew_ms, mine: None })
    }

    fn now(&self) -> i64 {
        now_ms() + self.skew_ms
    }

    /// One attempt of the page's algorithm. Returns whether this client now holds the lock.
    fn try_acquire(&mut self, verbose: bool) -> RedisResult<bool> {
        let expires = self.now() + TIMEOUT_MS + 1;
        let got: i64 = redis::cmd("SETNX").arg(KEY).arg(expires).query(&mut self.conn)?;
        if got == 1 {
            if verbose {
                println!("  {}: SETNX {KEY} {expires} -> 1: acquired", self.name);
            }
            self.mine = Some(expires);
            return Ok(true);
        }
        let current: Option<i64> = self.conn.get(KEY)?;
        let Some(current) = current else { return Ok(false) };
        if current > self.now() {
            if verbose {
                println!("  {}: SETNX -> 0; GET -> {current}, not expired by my clock: retry later", self.name);
            }
            return Ok(false);
        }
        let expires = self.now() + TIMEOUT_MS + 1;
        let old: Option<i64> = redis::cmd("GETSET").arg(KEY).arg(expires).query(&mut self.conn)?;
        let won = old.is_none_or(|o| o <= self.now());
        if verbose {
            println!(
                "  {}: SETNX -> 0; GET -> {current} (expired by my clock); GETSET {KEY} {expires} -> {old:?}: {}",
                self.name,
                if won { "still expired, acquired" } else { "fresh: someone was faster, not acquired" }
            );
        }
        if won {
            self.mine = Some(expires);
        }
        Ok(won)
    }

    /// The page's advice: check the timeout did not expire before `DEL`.
    fn release_checked(&mut self) -> RedisResult<()> {
        let current: Option<i64> = self.conn.get(KEY)?;
        let expired = self.mine.is_some_and(|m| m <= self.now());
        if expired {
            println!("  {}: my timestamp has passed: not deleting", self.name);
        } else {
            let _: i64 = self.conn.del(KEY)?;
            let note = if current == self.mine { "" } else { " (the value was not mine!)" };
            println!("  {}: DEL {KEY}{note}", self.name);
        }
        self.mine = None;
        Ok(())
    }
}

fn main() -> RedisResult<()> {
    let url = std::env::args().nth(1).unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    let mut admin = redis::Client::open(url.as_str())?.get_connection()?;
    let _: () = redis::cmd("DEL").arg(KEY).arg("counter").query(&mut admin)?;

    println!("1. It works: 4 threads x 200 sections with agreeing clocks, increment a counter with GET + SET");
    let sections = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (url, sections) = (url.clone(), sections.clone());
            std::thread::spawn(move || -> RedisResult<()> {
                let mut c = Client::new(&url, ["T1", "T2", "T3", "T4"][i], 0)?;
                for _ in 0..200 {
                    while !c.try_acquire(false)? {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    let v: i64 = c.conn.get("counter").unwrap_or(0);
                    let _: () = c.conn.set("counter", v + 1)?;
                    sections.fetch_add(1, Ordering::Relaxed);
                    let _: i64 = c.conn.del(KEY)?;
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread")?;
    }
    let v: i64 = admin.get("counter")?;
    println!(
        "  counter = {v} after {} sections: {}",
        sections.load(Ordering::Relaxed),
        if v == 800 { "exact" } else { "LOST UPDATES" }
    );

    println!("\n2. Deadlock recovery: C3 takes the lock and crashes; C4 and C5 race for it after it expires");
    let mut c3 = Client::new(&url, "C3", 0)?;
    let mut c4 = Client::new(&url, "C4", 0)?;
    let mut c5 = Client::new(&url, "C5", 0)?;
    c3.try_acquire(true)?;
    println!("  C3: crashes without DEL");
    std::thread::sleep(Duration::from_millis(TIMEOUT_MS as u64 + 50));
    // Interleave by hand: both read the stale timestamp, C5's GETSET lands first.
    let stale: i64 = c4.conn.get(KEY)?;
    println!("  C4 and C5: SETNX -> 0; GET -> {stale}, expired");
    let c5_exp = c5.now() + TIMEOUT_MS + 1;
    let old: i64 = redis::cmd("GETSET").arg(KEY).arg(c5_exp).query(&mut c5.conn)?;
    println!("  C5: GETSET {KEY} {c5_exp} -> {old}: still expired, C5 holds the lock");
    c5.mine = Some(c5_exp);
    let c4_exp = c4.now() + TIMEOUT_MS + 1 + 7;
    let old: i64 = redis::cmd("GETSET").arg(KEY).arg(c4_exp).query(&mut c4.conn)?;
    println!("  C4: GETSET {KEY} {c4_exp} -> {old}: not expired, C4 backs off. Correct so far...");
    println!(
        "  WEAKNESS (the page's own note, and the translator's): C4's losing GETSET overwrote C5's timestamp; \
         the key now says {c4_exp}, a value C5 never wrote, so C5 can no longer tell its lock from someone else's:"
    );
    c5.release_checked()?;

    println!("\n3. Clock skew: C6's clock runs 5 s ahead");
    let mut c7 = Client::new(&url, "C7", 0)?;
    let mut c6 = Client::new(&url, "C6", 5000)?;
    c7.try_acquire(true)?;
    c6.try_acquire(true)?;
    let both = c7.mine.is_some() && c6.mine.is_some();
    println!(
        "  {}",
        if both {
            "ERROR: C7 and C6 both hold lock.foo (C7's lock had 1 s left by the server's own reckoning)"
        } else {
            "no overlap this time"
        }
    );
    let _: i64 = admin.del(KEY)?;

    println!("\n4. A stalled holder: C8 pauses past its timeout, C9 takes over with GETSET, C8 resumes");
    let mut c8 = Client::new(&url, "C8", 0)?;
    let mut c9 = Client::new(&url, "C9", 0)?;
    let mut c10 = Client::new(&url, "C10", 0)?;
    c8.try_acquire(true)?;
    println!("  C8: paused (GC, swap, SIGSTOP) for {} ms", TIMEOUT_MS + 50);
    std::thread::sleep(Duration::from_millis(TIMEOUT_MS as u64 + 50));
    c9.try_acquire(true)?;
    println!("  C8: resumes, believes it still holds the lock, writes the protected resource: overlap with C9");
    println!("  C8: a careless release (plain DEL without the check) deletes C9's lock:");
    let _: i64 = c8.conn.del(KEY)?;
    c10.try_acquire(true)?;
    if c9.mine.is_some() && c10.mine.is_some() {
        println!("  ERROR: C9 and C10 both hold lock.foo");
    }
    let _: i64 = admin.del(KEY)?;
    println!(
        "\nThe fix: SET {KEY} <random token> NX PX <ttl> (the server expires it, no client clock involved), \
         release only if the value is still your token (DELIFEQ / DELEX IFEQ / the Lua script), and \
         fencing tokens for stalls."
    );
    Ok(())
}
