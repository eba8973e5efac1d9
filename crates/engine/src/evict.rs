//! `maxmemory`: keys evicted when used memory passes the limit, as Redis's `evict.c` does.
//!
//! Used memory is the allocator's count ([`crate::host::Host::used_memory`]) less what Redis does
//! not count against the limit (`freeMemoryGetNotCountedMemory`): the replicas' share of the
//! replication buffer and the AOF buffer ([`Hooks::not_counted_memory`]), which the server holds
//! for its replicas and its file, not for the dataset; evicting keys would not shrink them.
//! Latch keeps small keys
//! and values inside its tables' slots, so deleting one frees no allocation: its slot is reused by
//! the next key added to that table. Eviction works with that in two places:
//! * **Before a command** ([`Server::perform_evictions`], Redis's `performEvictions`): if used memory
//!   is over `maxmemory` (values, expiry index, client buffers grew), the policy picks keys to
//!   delete until the excess is freed. A deleted key frees its heap (measured) and its slot, which
//!   counts as freed too: the next key of that table takes it without allocating.
//!   - `*-lru`, `*-lfu`, `volatile-ttl`: Redis's approximation. A pool of the 16 best candidates
//!     survives between evictions; each round samples `maxmemory-samples` keys of every database in
//!     one shard taken at random (keys are spread over shards by hash, so a shard is a uniform sample
//!     of its databases) and keeps the best in the pool: the longest idle (LRU), the least
//!     frequently used (LFU), or the soonest to expire (TTL: a shard's earliest deadlines are read
//!     off its expiry index rather than sampled). The best candidate still present is deleted.
//!   - `*-random`: a random key of the next database in turn.
//!   - `noeviction`: nothing; the command is refused if it may grow memory.
//! * **When a table is about to grow** ([`TableEviction`]): a new key in a full table would
//!   reallocate it (doubling its slots). If the growth would take used memory over the limit, the
//!   policy evicts a key of that table instead, and the new key takes its slot. So tables never
//!   push memory past the limit, and a keyspace at its limit stops growing rather than evicting
//!   keys whose slots nobody would reuse. Used memory then settles below the limit by up to one
//!   table's growth (a table is one database in one shard: 1/shards of the keyspace).
//!
//! Native locks are never evicted unless `evict-native-locks yes` (docs/locks.md).
//!
//! After 16 keys the time spent is checked against `maxmemory-eviction-tenacity`'s budget; past it,
//! the command goes on and the server's cron continues ([`Evictor::running`]).

use crate::clock::Clock;
use crate::config::Config;
use crate::keyspace::{Keyspace, Locked, Table};
use crate::stats::Stats;
use crate::value::{Entry, Key, Value};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

pub use crate::config::Policy;

impl Policy {
    fn volatile_only(self) -> bool {
        matches!(self, Policy::VolatileLru | Policy::VolatileLfu | Policy::VolatileRandom | Policy::VolatileTtl)
    }
    fn random(self) -> bool {
        matches!(self, Policy::VolatileRandom | Policy::AllkeysRandom)
    }
}

/// What [`Scope::perform_evictions`] came to (Redis's `EVICT_OK`, `EVICT_RUNNING`, `EVICT_FAIL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evicted {
    /// Under the limit (or no limit).
    Ok,
    /// Still over, but eviction goes on in the background (the time budget ran out).
    Running,
    /// Over the limit and nothing can be evicted.
    Fail,
}

/// Candidates kept between evictions (Redis's `EVPOOL_SIZE`).
const POOL_SIZE: usize = 16;

/// A key worth evicting; higher scores go first.
struct Candidate {
    score: u64,
    db: usize,
    key: Key,
}

/// Eviction state and counters, owned by the [`Server`].
#[derive(Default)]
pub struct Evictor {
    /// The candidate pool, ascending by score. Its lock also makes evictions one at a time: two
    /// threads over the limit together would otherwise both free the whole excess.
    pool: Mutex<Vec<Candidate>>,
    /// `evicted_keys`.
    pub evicted_keys: AtomicU64,
    /// Round-robin database for the random policies.
    next_db: AtomicUsize,
    /// Bytes over the limit that the last eviction round could not free (table slots it emptied are
    /// reused by new keys, not given back): tolerated until used memory falls under the limit or
    /// grows past it, so that eviction does not empty the keyspace for memory it cannot free.
    allowance: AtomicU64,
    /// Eviction stopped at its time budget while still over the limit; the cron continues it.
    pub running: AtomicBool,
    /// Microseconds (on [`crate::clock::Clock::ticks_us`]) since which memory has been over the
    /// limit, 0 when it is not: `current_eviction_exceeded_time`.
    exceeded_since_us: AtomicU64,
    /// `total_eviction_exceeded_time`, microseconds, for the periods that ended.
    exceeded_total_us: AtomicU64,
}

impl Evictor {
    /// (`total_eviction_exceeded_time`, `current_eviction_exceeded_time`) in milliseconds, as INFO
    /// stats reports them at `now_us`.
    pub fn exceeded_ms(&self, now_us: u64) -> (u64, u64) {
        let since = self.exceeded_since_us.load(Ordering::Relaxed);
        let current = if since == 0 { 0 } else { now_us.saturating_sub(since) };
        ((self.exceeded_total_us.load(Ordering::Relaxed) + current) / 1000, current / 1000)
    }

    /// Clears the counters (CONFIG RESETSTAT).
    pub fn reset_stats(&self) {
        self.evicted_keys.store(0, Ordering::Relaxed);
        self.exceeded_total_us.store(0, Ordering::Relaxed);
    }

    fn note(&self, result: Evicted, now_us: u64) {
        let since = self.exceeded_since_us.load(Ordering::Relaxed);
        match result {
            Evicted::Ok if since != 0 => {
                self.exceeded_total_us.fetch_add(now_us.saturating_sub(since), Ordering::Relaxed);
                self.exceeded_since_us.store(0, Ordering::Relaxed);
            }
            Evicted::Running | Evicted::Fail if since == 0 => {
                self.exceeded_since_us.store(now_us.max(1), Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

/// Redis's `evictionTimeLimitUs`: 50 µs per point of tenacity up to 10, then 15% more per point,
/// unbounded at 100.
pub fn time_limit_us(tenacity: i64) -> u64 {
    match tenacity {
        ..=10 => 50 * tenacity.max(0) as u64,
        11..=99 => (500.0 * 1.15f64.powi(tenacity as i32 - 10)) as u64,
        _ => u64::MAX,
    }
}

/// The score of a key for `policy` (higher is evicted first), or None if it may not be evicted.
/// `at`: the key's deadline.
fn score(policy: Policy, e: &Entry, at: Option<u64>, now_ms: u64, lfu_decay: u32, locks_too: bool) -> Option<u64> {
    if !locks_too && matches!(e.value, Value::Lock(_)) {
        return None;
    }
    let now_s = (now_ms / 1000) as u32;
    Some(match policy {
        Policy::VolatileLru | Policy::AllkeysLru => u64::from(e.idle_s(now_s)) * 1000,
        Policy::VolatileLfu | Policy::AllkeysLfu => 255 - u64::from(crate::types::lfu_decayed(e, now_s, lfu_decay)),
        Policy::VolatileTtl => u64::MAX - at.unwrap_or(0),
        Policy::VolatileRandom | Policy::AllkeysRandom | Policy::NoEviction => 0,
    })
}

/// Adds a candidate to the pool if it beats the worst one (or the pool has room), keeping it sorted.
fn pool_insert(pool: &mut Vec<Candidate>, c: Candidate) {
    if pool.iter().any(|p| p.db == c.db && p.key == c.key) {
        return;
    }
    if pool.len() == POOL_SIZE {
        if c.score <= pool[0].score {
            return;
        }
        pool.remove(0);
    }
    let at = pool.partition_point(|p| p.score < c.score);
    pool.insert(at, c);
}

/// Eviction in the table a write is about to grow (see the module docs), for one command.
#[derive(Clone, Copy)]
pub struct TableEviction<'a> {
    config: &'a Config,
    evictor: &'a Evictor,
    max: u64,
    policy: Policy,
    not_counted: u64,
}

impl<'a> TableEviction<'a> {
    /// The configuration's settings, or None when nothing is evicted (no `maxmemory`, `noeviction`,
    /// or `paused`: a client pause holds the dataset still, Redis's isSafeToPerformEvictions; asked
    /// only when a limit is set). `not_counted`: the memory left out of used memory (see
    /// [`Hooks::not_counted_memory`]), asked only when something may be evicted.
    pub fn new(
        config: &'a Config,
        evictor: &'a Evictor,
        paused: impl FnOnce() -> bool,
        not_counted: impl FnOnce() -> u64,
    ) -> Option<TableEviction<'a>> {
        let max = config.maxmemory.load(Ordering::Relaxed);
        if max == 0 || paused() {
            return None;
        }
        let policy = config.policy();
        (policy != Policy::NoEviction).then(|| TableEviction {
            config,
            evictor,
            max,
            policy,
            not_counted: not_counted(),
        })
    }

    /// Before `key` is stored in `t` (`with_ttl`: with a deadline) at `now_ms`: if the table would
    /// grow and its growth would take used memory over `maxmemory`, evicts the policy's pick among
    /// a sample of `t`'s keys instead. Nothing when the table has room, the growth fits, or
    /// nothing in `t` may be evicted.
    pub fn make_room(&self, t: &mut Table, key: &[u8], with_ttl: bool, now_ms: u64) {
        let config = self.config;
        let used = config.host().used_memory().saturating_sub(self.not_counted);
        if !t.would_grow(key, with_ttl) || used + t.growth_bytes(with_ttl) as u64 <= self.max {
            return;
        }
        let samples = config.get_i64("maxmemory-samples").clamp(1, 64) as usize;
        let locks_too = config.evict_native_locks.load(Ordering::Relaxed);
        let decay = config.lfu_decay_time.load(Ordering::Relaxed).clamp(0, u32::MAX as i64) as u32;
        // The policy's best `n` among a sample of `t` (never `key` itself).
        let pick = |t: &Table, n: usize| -> Vec<Key> {
            let mut got: Vec<(u64, Key)> = Vec::new();
            let mut consider = |k: &Key, e: &Entry, at: Option<u64>| {
                if &k[..] != key
                    && let Some(s) = score(self.policy, e, at, now_ms, decay, locks_too)
                    && !got.iter().any(|(_, g)| g == k)
                {
                    got.push((s, k.clone()));
                }
            };
            t.sample(samples * n, self.policy.volatile_only(), &mut consider);
            got.sort_unstable_by_key(|g| std::cmp::Reverse(g.0));
            got.into_iter().take(n).map(|(_, k)| k).collect()
        };
        let Some(victim) = pick(t, 1).pop() else { return };
        drop(t.evict(&victim));
        self.evictor.evicted_keys.fetch_add(1, Ordering::Relaxed);
        if !t.would_grow(key, with_ttl) {
            return;
        }
        // The deleted key's index slot stayed marked deleted (hashbrown's tombstone), so the table
        // would still grow. Evict a batch (1/64 of the table) in one pass that also clears the
        // tombstones: the next inserts find free slots, and the pass costs O(table) once per batch.
        let batch = pick(t, (t.len() / 64).max(1));
        let n = t.evict_many(&batch);
        self.evictor.evicted_keys.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// What eviction sees of the server: the keyspace, the configuration, the clock, its own state and
/// the counters, and what the composition does around it ([`Hooks`]).
pub struct Scope<'a> {
    /// The keyspace.
    pub ks: &'a Keyspace,
    /// `maxmemory` and the policy's settings.
    pub config: &'a Config,
    /// Time.
    pub clock: &'a dyn Clock,
    /// Eviction's own state and counters.
    pub evictor: &'a Evictor,
    /// The dirty count an eviction adds to.
    pub stats: &'a Stats,
    /// The rest.
    pub hooks: &'a dyn Hooks,
}

/// What the composition does around an eviction.
pub trait Hooks {
    /// Clients blocked on the keys of `locked` may be served (a freed lock, a deleted list).
    fn serve_ready(&self, locked: &mut Locked<'_>, now: u64);
    /// A latency-monitor sample.
    fn latency_sample(&self, event: &'static str, ms: u64);
    /// A client pause holds the dataset still.
    fn paused(&self) -> bool;
    /// Bytes of used memory that do not count against `maxmemory` (Redis's
    /// `freeMemoryGetNotCountedMemory`): the replication buffer beyond the backlog's share, and
    /// the AOF buffer.
    fn not_counted_memory(&self) -> u64;
}

impl Scope<'_> {
    /// Redis's `performEvictions`: if used memory is over `maxmemory`, evicts keys by
    /// `maxmemory-policy` until it is not, the policy has nothing left, or the time budget runs out.
    /// Called before each command (with no shard locked) and by the cron while [`Evictor::running`].
    pub fn perform_evictions(&self) -> Evicted {
        let max = self.config.maxmemory.load(Ordering::Relaxed);
        // A client pause holds the dataset still (Redis's isSafeToPerformEvictions).
        if max == 0 || self.hooks.paused() {
            return Evicted::Ok;
        }
        let used = self.used_memory();
        let policy = self.config.policy();
        let allowance = self.evictor.allowance.load(Ordering::Relaxed);
        if used <= max || (policy != Policy::NoEviction && used <= max + allowance) {
            if used <= max && allowance != 0 {
                self.evictor.allowance.store(0, Ordering::Relaxed);
            }
            if self.evictor.running.swap(false, Ordering::Relaxed)
                || self.evictor.exceeded_since_us.load(Ordering::Relaxed) != 0
            {
                self.evictor.note(Evicted::Ok, self.clock.ticks_us());
            }
            return Evicted::Ok;
        }
        let result = if policy == Policy::NoEviction {
            Evicted::Fail
        } else {
            let start = self.clock.ticks_us();
            let r = self.evict(policy, max);
            self.hooks.latency_sample("eviction-cycle", self.clock.ticks_us().saturating_sub(start) / 1000);
            r
        };
        if result != Evicted::Running {
            self.evictor.running.store(false, Ordering::Relaxed);
        }
        self.evictor.note(result, self.clock.ticks_us());
        result
    }

    /// Used memory as the limit sees it: the allocator's count less what is not counted.
    fn used_memory(&self) -> u64 {
        self.config.host().used_memory().saturating_sub(self.hooks.not_counted_memory())
    }

    fn evict(&self, policy: Policy, max: u64) -> Evicted {
        let mut pool = self.evictor.pool.lock();
        // Measured again under the lock: another thread may have just freed what was needed.
        let used = self.used_memory();
        if used <= max + self.evictor.allowance.load(Ordering::Relaxed) {
            return Evicted::Ok;
        }
        let to_free = used - max;
        let start = self.clock.ticks_us();
        let budget = time_limit_us(self.config.get_i64("maxmemory-eviction-tenacity"));
        let mut freed: u64 = 0;
        let mut keys: u64 = 0;
        while freed < to_free {
            let picked =
                if policy.random() { self.pick_random(policy) } else { self.pick_from_pool(policy, &mut pool) };
            let Some((db, key)) = picked else { return Evicted::Fail };
            let Some(bytes) = self.evict_key(policy, db, &key) else { continue };
            freed += bytes;
            keys += 1;
            if keys.is_multiple_of(16) && self.clock.ticks_us().saturating_sub(start) > budget {
                self.evictor.running.store(true, Ordering::Relaxed);
                return Evicted::Running;
            }
        }
        // What is still over was not freed by deleting keys (their slots wait for new keys): it is
        // tolerated rather than chased by deleting more.
        self.evictor.allowance.store(self.used_memory().saturating_sub(max), Ordering::Relaxed);
        Evicted::Ok
    }

    /// Deletes `key` of database `db` if it is still there and still eligible; the bytes freed.
    fn evict_key(&self, policy: Policy, db: usize, key: &[u8]) -> Option<u64> {
        let now = self.clock.now_ms();
        let mut locked = self.ks.lock_keys([key]);
        let t = &mut locked.shard_for(key).dbs[db];
        let e = t.peek(key)?;
        if policy.volatile_only() && !e.has_ttl() {
            return None;
        }
        if matches!(e.value, Value::Lock(_)) && !self.config.evict_native_locks.load(Ordering::Relaxed) {
            return None;
        }
        let host = self.config.host();
        let before = host.used_memory();
        // The heap it held, measured (not what logging its DEL and invalidations takes), and its
        // slot, free for the next key of this table.
        let after = t.evict_measured(key, || {
            self.evictor.evicted_keys.fetch_add(1, Ordering::Relaxed);
            host.used_memory().saturating_sub(Table::SLOT_BYTES as u64)
        })?;
        self.stats.add_dirty(1);
        // A freed lock or a deleted list may have clients waiting on it.
        self.hooks.serve_ready(&mut locked, now);
        Some(before.saturating_sub(after))
    }

    /// Refills the pool from one shard with eligible keys and takes its best candidate still present.
    fn pick_from_pool(&self, policy: Policy, pool: &mut Vec<Candidate>) -> Option<(usize, Key)> {
        let samples = self.config.get_i64("maxmemory-samples").clamp(1, 64) as usize;
        let locks_too = self.config.evict_native_locks.load(Ordering::Relaxed);
        let decay = self.config.lfu_decay_time.load(Ordering::Relaxed).clamp(0, u32::MAX as i64) as u32;
        let now = self.clock.now_ms();
        let n = self.ks.nshards();
        let first = rand::random_range(0..n);
        let mut found = false;
        // The first shard (from a random start) that has eligible keys in some database.
        for step in 0..n {
            let i = (first + step) % n;
            let mut locked = self.ks.lock_shards(vec![i]);
            let shard = locked.shard(i);
            for (db, t) in shard.dbs.iter().enumerate() {
                let mut add = |k: &Key, e: &Entry, at: Option<u64>| {
                    if let Some(score) = score(policy, e, at, now, decay, locks_too) {
                        pool_insert(pool, Candidate { score, db, key: k.clone() });
                        found = true;
                    }
                };
                t.sample(samples, policy.volatile_only(), &mut add);
            }
            if found {
                break;
            }
        }
        // Best first; a candidate that left since it was pooled is a ghost and is skipped.
        while let Some(c) = pool.pop() {
            let shard = self.ks.shard_of(&c.key);
            let mut locked = self.ks.lock_shards(vec![shard]);
            let t: &Table = &locked.shard(shard).dbs[c.db];
            if t.peek(&c.key).is_some_and(|e| !policy.volatile_only() || e.has_ttl()) {
                return Some((c.db, c.key));
            }
        }
        None
    }

    /// A random eligible key of the next database that has one (the random policies).
    fn pick_random(&self, policy: Policy) -> Option<(usize, Key)> {
        let locks_too = self.config.evict_native_locks.load(Ordering::Relaxed);
        let (ndbs, n) = (self.ks.ndbs(), self.ks.nshards());
        for _ in 0..ndbs {
            let db = self.evictor.next_db.fetch_add(1, Ordering::Relaxed) % ndbs;
            let first = rand::random_range(0..n);
            for step in 0..n {
                let i = (first + step) % n;
                let mut locked = self.ks.lock_shards(vec![i]);
                let t = &locked.shard(i).dbs[db];
                let mut pick = None;
                // A few draws, in case some land on native locks.
                t.sample(4, policy.volatile_only(), &mut |k, e, _| {
                    if pick.is_none() && (locks_too || !matches!(e.value, Value::Lock(_))) {
                        pick = Some(k.clone());
                    }
                });
                if let Some(k) = pick {
                    return Some((db, k));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{TestClient, TestServer};
    use std::sync::Arc;

    /// A one-shard server (so that sampling sees every key) whose used memory is `base` plus 1000
    /// bytes per key added and not evicted since; `maxmemory` allows `room` keys over `base`. (Keys
    /// cost more than table growth here, so that which keys go is decided by the limit.)
    fn server(policy: &str, base: u64, room: u64) -> (TestServer, TestClient, Arc<AtomicU64>) {
        let host = Arc::new(crate::host::MemoryHost::default());
        let config = crate::config::Config::with_host(host.clone());
        config.set("shards", "1", true).unwrap();
        let ts = TestServer::with_config(config);
        let added = Arc::new(AtomicU64::new(0));
        let (srv, a) = (Arc::downgrade(&ts.srv), added.clone());
        host.set_used_fn(Arc::new(move || {
            let Some(s) = srv.upgrade() else { return base };
            let evicted = s.evictor.evicted_keys.load(Ordering::Relaxed);
            // The replication buffer is in the allocator's count, as it is in jemalloc's.
            base + 1000 * a.load(Ordering::Relaxed).saturating_sub(evicted) + s.repl.memory().total
        }));
        let mut c = ts.client();
        // A large sample, so that which keys go is the policy's choice, not the sample's luck.
        assert_eq!(c.run("config set maxmemory-samples 64"), "+OK");
        assert_eq!(c.run(&format!("config set maxmemory {} maxmemory-policy {policy}", base + 1000 * room)), "+OK");
        (ts, c, added)
    }

    fn add(c: &mut TestClient, added: &AtomicU64, line: &str) -> String {
        added.fetch_add(1, Ordering::Relaxed);
        c.run(line)
    }

    #[test]
    fn noeviction_refuses_denyoom_commands_and_queued_ones() {
        let (ts, mut c, added) = server("noeviction", 10_000, 2);
        for k in ["a", "b"] {
            assert_eq!(add(&mut c, &added, &format!("set {k} 1")), "+OK");
        }
        // Over the limit now (3 keys for room for 2): a denyoom command is refused, others run.
        added.fetch_add(1, Ordering::Relaxed);
        c.transcript(
            r#"
            > set c 1
            -OOM command not allowed when used memory > 'maxmemory'.
            > incr a
            -OOM command not allowed when used memory > 'maxmemory'.
            > get a
            "1"
            > del b
            :1
            > multi
            +OK
            > get a
            -OOM command not allowed when used memory > 'maxmemory'.
            > exec
            -EXECABORT Transaction discarded because of previous errors.
            > multi
            +OK
            > discard
            +OK
            > config set maxmemory 0
            +OK
            > set c 1
            +OK
            "#,
        );
        let info = c.run("info stats");
        assert!(info.contains("evicted_keys:0"), "{info}");
        let errors = c.run("info errorstats");
        assert!(errors.contains("errorstat_OOM:count=3"), "{errors}");
        drop(ts);
    }

    #[test]
    fn allkeys_lru_evicts_the_longest_idle() {
        let (ts, mut c, added) = server("allkeys-lru", 50_000, 20);
        for i in 0..10 {
            add(&mut c, &added, &format!("set old:{i} x"));
        }
        ts.clock.advance_ms(1_000_000);
        for i in 0..10 {
            add(&mut c, &added, &format!("set new:{i} x"));
        }
        // 5 more keys than there is room for: 5 evictions, all among the idle ones.
        for i in 0..5 {
            assert_eq!(add(&mut c, &added, &format!("set more:{i} x")), "+OK");
        }
        assert_eq!(c.run("dbsize"), ":20");
        for i in 0..10 {
            assert_eq!(c.run(&format!("exists new:{i}")), ":1");
        }
        assert!(c.run("info stats").contains("evicted_keys:5"));
    }

    #[test]
    fn volatile_policies_leave_persistent_keys_and_ttl_goes_soonest_first() {
        let (_ts, mut c, added) = server("volatile-ttl", 10_000, 6);
        for i in 0..3 {
            add(&mut c, &added, &format!("set keep:{i} x"));
        }
        for (i, ttl) in [500, 100, 300].iter().enumerate() {
            add(&mut c, &added, &format!("set t:{i} x ex {ttl}"));
        }
        assert_eq!(add(&mut c, &added, "set one-more x"), "+OK");
        // The soonest deadline (t:1, 100 s) went first.
        assert_eq!(c.run("exists t:1"), ":0");
        assert_eq!(c.run("exists t:0 t:2"), ":2");
        assert_eq!(add(&mut c, &added, "set two-more x"), "+OK");
        assert_eq!(c.run("exists t:2"), ":0");
        add(&mut c, &added, "set three-more x");
        add(&mut c, &added, "set four-more x");
        // No volatile key left: persistent keys stay, writes are refused.
        assert_eq!(c.run("exists t:0"), ":0");
        assert_eq!(c.run("set five-more x"), "-OOM command not allowed when used memory > 'maxmemory'.");
        assert_eq!(c.run("exists keep:0 keep:1 keep:2"), ":3");

        let (_ts, mut c, added) = server("volatile-lru", 10_000, 4);
        for i in 0..4 {
            add(&mut c, &added, &format!("set k:{i} x{}", if i % 2 == 1 { " px 100000" } else { "" }));
        }
        for i in 0..2 {
            assert_eq!(add(&mut c, &added, &format!("set more:{i} x")), "+OK");
        }
        assert_eq!(c.run("exists k:0 k:2"), ":2");
        assert_eq!(c.run("exists k:1 k:3"), ":0");
    }

    #[test]
    fn allkeys_lfu_keeps_the_frequently_used() {
        let (_ts, mut c, added) = server("allkeys-lfu", 10_000, 10);
        c.run("config set lfu-log-factor 0");
        for i in 0..10 {
            add(&mut c, &added, &format!("set k:{i} x"));
        }
        for i in 0..5 {
            for _ in 0..20 {
                c.run(&format!("get k:{i}"));
            }
        }
        for i in 0..5 {
            assert_eq!(add(&mut c, &added, &format!("set more:{i} x")), "+OK");
        }
        assert_eq!(c.run("exists k:0 k:1 k:2 k:3 k:4"), ":5");
        assert_eq!(c.run("object freq k:0"), ":25");
    }

    #[test]
    fn a_replicas_output_causes_no_eviction_but_the_backlog_counts() {
        // Room for 60 keys; the backlog counts about 16 KB of it.
        let (ts, mut c, added) = server("allkeys-random", 10_000, 60);
        let srv = &ts.srv;
        for i in 0..3 {
            add(&mut c, &added, &format!("set k:{i} x"));
        }
        srv.repl.activate(|| "r".repeat(40));
        srv.repl.set_backlog_size(crate::repl::BACKLOG_MIN);
        let replica = srv.clients.register("127.0.0.1:6000".into(), "127.0.0.1:6379".into(), 0);
        srv.repl.attach(replica.clone(), crate::repl::ReplicaState::Online, 0, false, 0);
        // A replica that reads nothing: 300 KB of stream wait for it, far past the limit.
        for _ in 0..3000 {
            srv.repl.feed_command(&["SET", "k", &"v".repeat(80)], 0);
        }
        let m = srv.repl.memory();
        assert!(m.replicas > 250_000 && m.not_counted == m.replicas, "{m:?}");
        assert_eq!(add(&mut c, &added, "set k:3 x"), "+OK");
        assert_eq!(srv.evictor.evicted_keys.load(Ordering::Relaxed), 0, "the replica's share is not counted");
        let info = match crate::testkit::decoded(c.cmd(&["info", "memory"]).unwrap()) {
            resp::Frame::Bulk(b) | resp::Frame::Verbatim { text: b, .. } => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("INFO replied {other:?}"),
        };
        let field = |name: &str| -> u64 {
            let line = info.lines().find_map(|l| l.strip_prefix(&format!("{name}:"))).unwrap();
            line.parse().unwrap()
        };
        assert_eq!(field("mem_clients_slaves"), m.replicas);
        assert_eq!(field("mem_not_counted_for_evict"), m.not_counted);
        assert_eq!(field("mem_replication_backlog"), m.backlog);
        assert_eq!(field("mem_total_replication_buffers"), m.total);
        // The replica goes and the cron trims: the blocks are given back; the backlog's own
        // share counts, so of 60 more keys only those that fit beside it stay.
        replica.kill();
        srv.repl.detach(replica.id);
        srv.repl.set_backlog_size(crate::repl::BACKLOG_MIN);
        let m = srv.repl.memory();
        assert!(m.total < 3 * crate::repl::BLOCK as u64, "{m:?}");
        assert_eq!(srv.not_counted_memory(), m.not_counted);
        for i in 4..64 {
            assert_eq!(add(&mut c, &added, &format!("set k:{i} x")), "+OK");
        }
        let kept: u64 = c.run("dbsize")[1..].parse().unwrap();
        let room = (60_000 - (m.total - m.not_counted)) / 1000;
        assert_eq!(kept, room, "the backlog's blocks count against the limit");
    }

    #[test]
    fn native_locks_are_kept_unless_configured() {
        let (_ts, mut c, added) = server("allkeys-random", 10_000, 2);
        assert!(add(&mut c, &added, "lock l:1 me 100000").starts_with(':'));
        assert!(add(&mut c, &added, "lock l:2 me 100000").starts_with(':'));
        added.fetch_add(1, Ordering::Relaxed);
        // Only locks to evict: nothing can go.
        assert_eq!(c.run("set k x"), "-OOM command not allowed when used memory > 'maxmemory'.");
        assert_eq!(c.run("exists l:1 l:2"), ":2");
        c.run("config set evict-native-locks yes");
        assert_eq!(c.run("set k x"), "+OK");
        assert_eq!(c.run("exists l:1 l:2"), ":1");
    }

    #[test]
    fn scripts_under_oom_as_redis() {
        let (_ts, mut c, added) = server("noeviction", 10_000, 1);
        add(&mut c, &added, "set x 123");
        added.fetch_add(1, Ordering::Relaxed);
        // Redis's "allow-oom shebang flag" test (unit/scripting): a script without a shebang fails
        // at its first deny-oom write, runs reads; with a shebang it needs allow-oom or no-writes.
        let r = c.run("eval \"redis.call('set','x',1) return 1\" 1 x");
        assert!(r.starts_with("-OOM command not allowed when used memory > 'maxmemory'. script: "), "{r}");
        assert_eq!(c.run("eval \"return redis.call('get','x')\" 1 x"), "\"123\"");
        let r = c.run("eval \"#!lua flags=\nreturn 1\" 1 x");
        assert_eq!(r, "-OOM command not allowed when used memory > 'maxmemory'.");
        assert_eq!(c.run("eval \"#!lua flags=allow-oom\nredis.call('set','x',1) return 1\" 1 x"), ":1");
        assert_eq!(c.run("eval \"#!lua flags=no-writes\nredis.call('get','x') return 1\" 0"), ":1");
        // A write that does not grow memory is allowed, and after a first write the rest run.
        assert_eq!(c.run("eval \"redis.call('del','nothing') return redis.call('set','x',2)\" 1 x"), "+OK");
        // A function without allow-oom is refused as a whole; EXEC of a queued one too.
        added.store(0, Ordering::Relaxed);
        let lib = "#!lua name=lib\nredis.register_function('w', function() return redis.call('set','x',3) end)\nredis.register_function{function_name='ro', callback=function() return 7 end, flags={'no-writes'}}";
        assert_eq!(c.run(&format!("function load \"{lib}\"")), "\"lib\"");
        added.store(2, Ordering::Relaxed);
        assert_eq!(c.run("fcall w 0"), "-OOM command not allowed when used memory > 'maxmemory'.");
        assert_eq!(c.run("fcall ro 0"), ":7");
        added.store(0, Ordering::Relaxed);
        c.run("multi");
        assert_eq!(c.run("fcall w 0"), "+QUEUED");
        added.store(2, Ordering::Relaxed);
        assert_eq!(
            c.run("exec"),
            "-EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'."
        );
    }

    #[test]
    fn time_budget_as_redis() {
        assert_eq!(time_limit_us(0), 0);
        assert_eq!(time_limit_us(10), 500);
        assert_eq!(time_limit_us(11), 575);
        assert_eq!(time_limit_us(99), (500.0 * 1.15f64.powi(89)) as u64);
        assert_eq!(time_limit_us(100), u64::MAX);
    }

    #[test]
    fn pool_keeps_the_best_sixteen_once_each() {
        let mut pool = Vec::new();
        for s in 0..40u64 {
            pool_insert(&mut pool, Candidate { score: (s * 7) % 40, db: 0, key: Key::from_slice(&s.to_be_bytes()) });
        }
        pool_insert(&mut pool, Candidate { score: 1000, db: 0, key: Key::from_slice(&5u64.to_be_bytes()) });
        assert_eq!(pool.len(), POOL_SIZE);
        let scores: Vec<u64> = pool.iter().map(|c| c.score).collect();
        assert_eq!(scores, (24..40).collect::<Vec<_>>(), "ascending, the 16 highest, duplicates refused");
    }
}
