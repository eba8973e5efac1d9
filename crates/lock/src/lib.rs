//! Distributed locks over any Redis-compatible server: Latch and real Redis alike, through the
//! ecosystem's `redis` crate (async, tokio).
//!
//! - [`LockClient`]: one server, one multiplexed connection, and the server's capabilities detected
//!   once per connection (`COMMAND INFO DELIFEQ DELEX LOCK`).
//! - [`Lock`] / [`LockGuard`]: `try_lock`, `lock` with a deadline, `extend`, `release`,
//!   release-on-drop (best effort, see [`LockGuard`]), an optional watchdog that keeps extending
//!   and reports loss, and fencing tokens. Two paths, chosen per server:
//!   - **native** (Latch): `LOCK key owner ttl [WAIT ms]`, `UNLOCK`, `LOCKEXTEND`. Waiting is a
//!     place in the server's FIFO queue (no polling, no backoff), and every grant carries the
//!     server's fencing token.
//!   - **portable** (Redis, Valkey...): `SET key token NX PX ttl` with a random owner token,
//!     jittered exponential backoff while waiting, owner-checked release and extension through
//!     `DELIFEQ` (Valkey 9), `DELEX key IFEQ` (Redis 8.4) and `SET key token IFEQ token PX ms`
//!     where the server has them, and the classic Lua compare-and-delete / compare-and-pexpire
//!     scripts otherwise; optional [fencing tokens](Lock::fencing) through `MULTI SET NX; INCR`.
//! - [`Redlock`]: the multi-server algorithm (majority, validity = ttl - elapsed - drift).
//!
//! See `docs/locks.md` in the repository for the patterns, their failure modes and the limits of
//! each guarantee (in short: a lock with a TTL is a lease; only a fencing token checked by the
//! protected resource makes a paused or partitioned holder harmless).
//!
//! ```no_run
//! # async fn demo() -> Result<(), lock::Error> {
//! use std::time::Duration;
//! let client = lock::LockClient::connect("redis://127.0.0.1:6379/").await?;
//! let guard = client.lock("jobs:nightly").ttl(Duration::from_secs(10)).lock(Duration::from_secs(5)).await?;
//! // ... critical section ...
//! guard.release().await?;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod backoff;
mod client;
mod guard;
mod redlock;

pub use backoff::Backoff;
pub use client::{Backend, EXTEND_SCRIPT, LockClient, LockInfo, RELEASE_SCRIPT};
pub use guard::{Lock, LockGuard};
pub use redlock::{Redlock, RedlockGuard};

use std::time::Duration;

/// What can go wrong.
#[derive(Debug)]
pub enum Error {
    /// The server or the connection failed.
    Redis(redis::RedisError),
    /// The lock could not be acquired within the allowed wait.
    Timeout(Duration),
    /// A server did not answer within the per-request limit.
    Unresponsive,
    /// The server answered something a lock protocol does not expect.
    Protocol(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Redis(e) => write!(f, "{e}"),
            Error::Timeout(d) => write!(f, "lock not acquired within {} ms", d.as_millis()),
            Error::Unresponsive => write!(f, "server did not answer in time"),
            Error::Protocol(s) => write!(f, "unexpected reply: {s}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Error {
        Error::Redis(e)
    }
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Clock drift allowance of the Redlock specification: `ttl * 0.01 + 2 ms`.
pub fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// A fresh owner token: 128 random bits, hex.
pub fn new_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}
