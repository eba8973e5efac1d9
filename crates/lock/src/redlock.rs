//! Redlock: one lock over N independent servers.
//!
//! The algorithm (from the Redis distributed-lock page): with the same random token, try
//! `SET key token NX PX ttl` on every server, each with a timeout small compared to the TTL; the
//! lock is held if a majority (N/2 + 1) said OK and the time left, `validity = ttl - elapsed -
//! drift` with `drift = ttl * 1% + 2 ms`, is positive. Otherwise release on every server
//! (including the ones that seemed to fail: the request may have landed) and retry after a random
//! delay.
//!
//! **Limits.** Redlock assumes bounded network delay, bounded process pauses and clock rates that
//! agree within the drift allowance; it relies on TTLs being honoured by servers that may restart
//! (a restarted server without persistence forgets the key, so the spec asks to keep it down for
//! a TTL before rejoining). As Martin Kleppmann's critique ("How to do distributed locking",
//! 2016) points out, a holder paused (GC, swap, SIGSTOP) past its validity cannot know it lost the
//! lock, and nothing in Redlock produces a fencing token the resource could check. Use it for
//! efficiency (avoiding duplicate work), not for correctness; where correctness matters, have the
//! resource reject stale writers (fencing tokens from a single consistent counter, or the
//! resource's own compare-and-set).

use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::client::LockClient;
use crate::{Error, Result, drift, new_token};

/// A Redlock over independent servers (use an odd number, 3 or 5).
#[derive(Clone)]
pub struct Redlock {
    clients: Vec<LockClient>,
    backoff: Backoff,
}

impl Redlock {
    /// A Redlock over `clients`. Give each client a request timeout small compared to the TTLs you
    /// will use ([`LockClient::new`] with `Some(timeout)`, e.g. 5–50 ms for a 10 s TTL), so that
    /// an unreachable server costs little of the validity.
    pub fn new(clients: Vec<LockClient>) -> Redlock {
        Redlock { clients, backoff: Backoff { base: Duration::from_millis(5), max: Duration::from_millis(200) } }
    }

    /// Connects to each URL with a per-request timeout of `timeout`.
    pub fn open(urls: &[&str], timeout: Duration) -> Result<Redlock> {
        let clients =
            urls.iter().map(|u| Ok(LockClient::new(redis::Client::open(*u)?, Some(timeout)))).collect::<Result<_>>()?;
        Ok(Redlock::new(clients))
    }

    /// Retry pacing for [`Redlock::lock`].
    pub fn backoff(mut self, b: Backoff) -> Redlock {
        self.backoff = b;
        self
    }

    /// The majority: N/2 + 1.
    pub fn quorum(&self) -> usize {
        self.clients.len() / 2 + 1
    }

    /// One attempt on all servers.
    pub async fn try_lock(&self, key: &str, ttl: Duration) -> Result<Option<RedlockGuard>> {
        let token = new_token();
        let start = Instant::now();
        let mut set = JoinSet::new();
        for c in &self.clients {
            let (c, k, t) = (c.clone(), key.to_string(), token.clone());
            set.spawn(async move { c.acquire(&k, &t, ttl, None).await });
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            if matches!(r, Ok(Ok(Some(_)))) {
                ok += 1;
            }
        }
        let elapsed = start.elapsed();
        let valid = validity(ttl, elapsed).filter(|_| ok >= self.quorum());
        let mut guard = RedlockGuard {
            clients: self.clients.clone(),
            key: key.to_string(),
            token,
            ttl,
            valid_until: start + elapsed + valid.unwrap_or_default(),
            done: false,
        };
        if valid.is_some() {
            return Ok(Some(guard));
        }
        guard.done = true;
        guard.release_all().await;
        Ok(None)
    }

    /// Retries with jittered backoff until acquired or `wait` has passed ([`Error::Timeout`]).
    pub async fn lock(&self, key: &str, ttl: Duration, wait: Duration) -> Result<RedlockGuard> {
        let deadline = Instant::now() + wait;
        let mut attempt = 0u32;
        loop {
            if let Some(g) = self.try_lock(key, ttl).await? {
                return Ok(g);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Timeout(wait));
            }
            tokio::time::sleep(self.backoff.delay(attempt).min(deadline - now)).await;
            attempt = attempt.saturating_add(1);
        }
    }
}

/// `ttl - elapsed - drift`, if positive.
pub(crate) fn validity(ttl: Duration, elapsed: Duration) -> Option<Duration> {
    ttl.checked_sub(elapsed)?.checked_sub(drift(ttl)).filter(|v| !v.is_zero())
}

/// A Redlock held on a majority. Release it explicitly ([`RedlockGuard::release`]); dropping it
/// spawns the release on the current runtime, best effort (as [`crate::LockGuard`]).
pub struct RedlockGuard {
    clients: Vec<LockClient>,
    key: String,
    token: String,
    ttl: Duration,
    valid_until: Instant,
    done: bool,
}

impl RedlockGuard {
    /// The owner token (the same on every server).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// End of validity: start of the acquisition + ttl - drift. Work past it is unprotected.
    pub fn valid_until(&self) -> Instant {
        self.valid_until
    }

    /// Time left before [`RedlockGuard::valid_until`].
    pub fn validity(&self) -> Duration {
        self.valid_until.saturating_duration_since(Instant::now())
    }

    /// Extends on all servers; succeeds (and moves the validity) if a majority still held it and
    /// the new validity is positive.
    pub async fn extend(&mut self, ttl: Duration) -> Result<bool> {
        let start = Instant::now();
        let mut set = JoinSet::new();
        for c in &self.clients {
            let (c, k, t) = (c.clone(), self.key.clone(), self.token.clone());
            set.spawn(async move { c.extend(&k, &t, ttl).await });
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            if matches!(r, Ok(Ok(true))) {
                ok += 1;
            }
        }
        let elapsed = start.elapsed();
        match validity(ttl, elapsed) {
            Some(v) if ok > self.clients.len() / 2 => {
                self.ttl = ttl;
                self.valid_until = start + elapsed + v;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Releases on every server (owner-checked); returns on how many the lock was still ours.
    pub async fn release(mut self) -> usize {
        self.done = true;
        self.release_all().await
    }

    async fn release_all(&self) -> usize {
        let mut set = JoinSet::new();
        for c in &self.clients {
            let (c, k, t) = (c.clone(), self.key.clone(), self.token.clone());
            set.spawn(async move { c.release(&k, &t).await });
        }
        let mut n = 0;
        while let Some(r) = set.join_next().await {
            if matches!(r, Ok(Ok(true))) {
                n += 1;
            }
        }
        n
    }

    /// The TTL of the last acquisition or extension.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }
}

impl Drop for RedlockGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let g = RedlockGuard {
                clients: std::mem::take(&mut self.clients),
                key: self.key.clone(),
                token: self.token.clone(),
                ttl: self.ttl,
                valid_until: self.valid_until,
                done: true,
            };
            rt.spawn(async move {
                g.release_all().await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_subtracts_elapsed_and_drift() {
        let ttl = Duration::from_millis(1000);
        assert_eq!(validity(ttl, Duration::from_millis(100)), Some(Duration::from_millis(888)));
        assert_eq!(validity(ttl, Duration::from_millis(988)), None);
        assert_eq!(validity(ttl, Duration::from_millis(2000)), None);
    }
}
