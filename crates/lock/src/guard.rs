//! Single-server locks: acquisition, the guard, the watchdog.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::client::{LockClient, is_unknown_command, is_wrong_type};
use crate::{Error, Result, drift, new_token};

/// A lock's name and options on one server; [`Lock::try_lock`] and [`Lock::lock`] take it.
#[derive(Clone)]
pub struct Lock {
    client: LockClient,
    key: String,
    ttl: Duration,
    fence_key: Option<String>,
    watchdog: bool,
    backoff: Backoff,
}

// `LockClient::lock` lives here, beside the type it builds, so that `client.rs` (the lower file)
// does not import the guard.
impl LockClient {
    /// A lock named `key` on this server, with default options (TTL 30 s, no watchdog, no fencing).
    pub fn lock(&self, key: impl Into<String>) -> Lock {
        Lock::new(self.clone(), key.into())
    }
}

impl Lock {
    fn new(client: LockClient, key: String) -> Lock {
        Lock {
            client,
            key,
            ttl: Duration::from_secs(30),
            fence_key: None,
            watchdog: false,
            backoff: Backoff::default(),
        }
    }

    /// The lease: the key expires this long after acquisition (or the last extension) if the holder
    /// neither releases nor extends it. Default 30 s.
    pub fn ttl(mut self, ttl: Duration) -> Lock {
        self.ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// Hands out a fencing token with each acquisition. On the native path every grant carries the
    /// server's token and this only makes [`LockGuard::fence`] report it. On the portable path it is
    /// `INCR` of `<key>:fence` in the same `MULTI`/`EXEC` as the `SET NX PX`, used only when the
    /// `SET` succeeded. Tokens of one lock
    /// strictly increase (numbers may be skipped, never repeated), as long as the server keeps the
    /// counter: a restart without persistence, a failover to a replica that missed the last writes
    /// or a `FLUSHALL` resets it, so the resource must also persist the highest token it saw.
    pub fn fencing(mut self, on: bool) -> Lock {
        self.fence_key = on.then(|| format!("{}:fence", self.key));
        self
    }

    /// Like [`Lock::fencing`] with a counter key of the caller's choice (portable path; the native
    /// path uses the server's token).
    pub fn fence_key(mut self, key: impl Into<String>) -> Lock {
        self.fence_key = Some(key.into());
        self
    }

    /// Keeps extending the lock (every third of the TTL) while the guard lives, and signals
    /// [`LockGuard::lost`] when an extension finds the lock gone or no extension succeeded for a
    /// whole TTL.
    pub fn watchdog(mut self, on: bool) -> Lock {
        self.watchdog = on;
        self
    }

    /// Retry pacing for [`Lock::lock`] on the portable path (the native path waits in the
    /// server's queue; it backs off only after errors).
    pub fn backoff(mut self, b: Backoff) -> Lock {
        self.backoff = b;
        self
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// One attempt: the guard if the lock was free.
    pub async fn try_lock(&self) -> Result<Option<LockGuard>> {
        let token = new_token();
        if self.client.native().await? {
            let start = Instant::now();
            match self.client.native_lock(&self.key, &token, self.ttl).await {
                Ok(r) => return Ok(r.map(|fence| self.guard(token, fence, start, true))),
                // Held by a key that is not a native lock (e.g. a portable client's): not free.
                Err(Error::Redis(e)) if is_wrong_type(&e) => return Ok(None),
                Err(Error::Redis(e)) if is_unknown_command(&e) => self.client.set_native(false),
                Err(e) => return Err(e),
            }
        }
        self.try_portable(token).await
    }

    async fn try_portable(&self, token: String) -> Result<Option<LockGuard>> {
        let start = Instant::now();
        let got = self.client.acquire(&self.key, &token, self.ttl, self.fence_key.as_deref()).await?;
        Ok(got.map(|fence| self.guard(token, fence, start, false)))
    }

    /// Waits until the lock is acquired or `wait` has passed ([`Error::Timeout`]). Natively this
    /// is one `LOCK ... WAIT` on a dedicated connection: the server queues the request and grants
    /// the lock to waiters in arrival order as soon as it is released or expires. On the portable
    /// path it retries with jittered exponential backoff. Connection errors are retried too, until
    /// the deadline.
    pub async fn lock(&self, wait: Duration) -> Result<LockGuard> {
        let deadline = Instant::now() + wait;
        if self.client.native().await? {
            match self.lock_native(wait, deadline).await {
                Err(Error::Redis(e)) if is_unknown_command(&e) => self.client.set_native(false),
                r => return r,
            }
        }
        let mut attempt = 0u32;
        loop {
            let last = match self.try_portable(new_token()).await {
                Ok(Some(g)) => return Ok(g),
                Ok(None) => None,
                Err(e) => Some(e),
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(match last {
                    Some(e @ Error::Redis(_)) => e,
                    _ => Error::Timeout(wait),
                });
            }
            let pause = self.backoff.delay(attempt).min(deadline - now);
            attempt = attempt.saturating_add(1);
            tokio::time::sleep(pause).await;
        }
    }

    /// The native wait. One owner token for the whole call, so that a request retried after a
    /// lost reply finds the lock already ours (`LOCK` is idempotent for its owner).
    async fn lock_native(&self, wait: Duration, deadline: Instant) -> Result<LockGuard> {
        let token = new_token();
        let mut attempt = 0u32;
        loop {
            let start = Instant::now();
            let left = deadline.saturating_duration_since(start);
            let last = match self.client.native_lock_wait(&self.key, &token, self.ttl, left).await {
                Ok(Some(fence)) => {
                    // The server granted the lock at most one network delay before this reply (it
                    // grants and replies in the same step); for a waited grant, count the lease
                    // from the reply minus the drift allowance rather than from the request.
                    let now = Instant::now();
                    let granted = if now - start > drift(self.ttl) { now - drift(self.ttl) } else { start };
                    return Ok(self.guard(token, fence, granted, true));
                }
                Ok(None) => None,
                Err(Error::Redis(e)) if is_unknown_command(&e) => return Err(Error::Redis(e)),
                Err(e) => Some(e),
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(match last {
                    Some(Error::Redis(e)) if !is_wrong_type(&e) => Error::Redis(e),
                    _ => Error::Timeout(wait),
                });
            }
            // Timed out early (rounding) or failed: wrong type (a non-native holder) or a
            // connection error. Pause before trying again, except after a plain timeout.
            if last.is_some() {
                let pause = self.backoff.delay(attempt).min(deadline - now);
                attempt = attempt.saturating_add(1);
                tokio::time::sleep(pause).await;
            }
        }
    }

    fn guard(&self, token: String, fence: u64, start: Instant, native: bool) -> LockGuard {
        let (tx, rx) = watch::channel(false);
        let valid_until = Arc::new(Mutex::new(start + self.ttl.saturating_sub(drift(self.ttl))));
        let state =
            Arc::new(State { client: self.client.clone(), key: self.key.clone(), token, tx, valid_until, native });
        let watchdog = self.watchdog.then(|| tokio::spawn(watchdog(state.clone(), self.ttl)));
        LockGuard {
            state,
            ttl: self.ttl,
            fence: (native || self.fence_key.is_some()).then_some(fence),
            lost: rx,
            watchdog,
            done: false,
        }
    }
}

struct State {
    client: LockClient,
    key: String,
    token: String,
    tx: watch::Sender<bool>,
    /// Conservative end of the lease as this process knows it: start of the request that set the
    /// TTL + ttl - drift.
    valid_until: Arc<Mutex<Instant>>,
    /// Taken with `LOCK`: released with `UNLOCK`, extended with `LOCKEXTEND`.
    native: bool,
}

impl State {
    fn set_valid_until(&self, t: Instant) {
        if let Ok(mut v) = self.valid_until.lock() {
            *v = t;
        }
    }

    fn valid_until(&self) -> Instant {
        self.valid_until.lock().map(|v| *v).unwrap_or_else(|_| Instant::now())
    }

    async fn release(&self) -> Result<bool> {
        if self.native {
            self.client.native_unlock(&self.key, &self.token).await
        } else {
            self.client.release(&self.key, &self.token).await
        }
    }

    async fn extend(&self, ttl: Duration) -> Result<bool> {
        let start = Instant::now();
        let ok = if self.native {
            self.client.native_extend(&self.key, &self.token, ttl).await?
        } else {
            self.client.extend(&self.key, &self.token, ttl).await?
        };
        if ok {
            self.set_valid_until(start + ttl.saturating_sub(drift(ttl)));
        } else {
            self.tx.send_replace(true);
        }
        Ok(ok)
    }
}

async fn watchdog(state: Arc<State>, ttl: Duration) {
    let period = (ttl / 3).max(Duration::from_millis(1));
    let mut next = Instant::now() + period;
    loop {
        tokio::time::sleep_until(next).await;
        match state.extend(ttl).await {
            Ok(true) => next = Instant::now() + period,
            Ok(false) => return,
            Err(_) => {
                if Instant::now() >= state.valid_until() {
                    state.tx.send_replace(true);
                    return;
                }
                next = Instant::now() + (period / 4).max(Duration::from_millis(1));
            }
        }
    }
}

/// A held lock. Release it with [`LockGuard::release`], the reliable path: it reports whether
/// the lock was still ours and surfaces errors.
///
/// Dropping a guard without releasing it spawns the release on the current tokio runtime (drop
/// cannot be async): best effort, it does not run if there is no runtime or the runtime is
/// shutting down, and its result is not reported. Either way the TTL frees the lock eventually.
pub struct LockGuard {
    state: Arc<State>,
    ttl: Duration,
    fence: Option<u64>,
    lost: watch::Receiver<bool>,
    watchdog: Option<JoinHandle<()>>,
    done: bool,
}

impl LockGuard {
    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.state.key
    }

    /// This holder's random owner token (the key's value while the lock is ours on the portable
    /// path, the lock's owner on the native one).
    pub fn token(&self) -> &str {
        &self.state.token
    }

    /// The fencing token handed out with this acquisition: always on the native path (the
    /// server's token), with [`Lock::fencing`] on the portable path.
    pub fn fence(&self) -> Option<u64> {
        self.fence
    }

    /// True if the lock was taken with the server's native `LOCK` command.
    pub fn is_native(&self) -> bool {
        self.state.native
    }

    /// The TTL the lock was taken (and is extended) with.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Until when the lease is surely ours as far as this process can tell: start of the last
    /// successful acquire/extend request + TTL - drift (`ttl * 1% + 2 ms`). Past it, another client
    /// may hold the lock.
    pub fn valid_until(&self) -> Instant {
        self.state.valid_until()
    }

    /// True until [`LockGuard::valid_until`].
    pub fn is_valid(&self) -> bool {
        Instant::now() < self.valid_until() && !*self.lost.borrow()
    }

    /// True once an extension (the watchdog's or an explicit one) found the lock gone, or the
    /// watchdog could not reach the server for a whole lease.
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// A receiver that turns `true` when the lock is lost (see [`LockGuard::is_lost`]).
    pub fn lost_signal(&self) -> watch::Receiver<bool> {
        self.lost.clone()
    }

    /// Resolves when the lock is lost; never resolves while it is held.
    pub async fn lost(&self) {
        let mut rx = self.lost.clone();
        let _ = rx.wait_for(|l| *l).await;
        if !*rx.borrow() {
            std::future::pending::<()>().await;
        }
    }

    /// Resets the lease to `ttl` if the lock is still ours; `false` (and the lost signal) if not.
    pub async fn extend(&self, ttl: Duration) -> Result<bool> {
        self.state.extend(ttl).await
    }

    /// Deletes the lock if it is still ours. `Ok(false)`: it had expired (and perhaps been taken by
    /// someone else, whose lock is left alone).
    pub async fn release(mut self) -> Result<bool> {
        self.done = true;
        if let Some(w) = self.watchdog.take() {
            w.abort();
        }
        self.state.release().await
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(w) = self.watchdog.take() {
            w.abort();
        }
        if self.done {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let s = self.state.clone();
            rt.spawn(async move {
                let _ = s.release().await;
            });
        }
    }
}
