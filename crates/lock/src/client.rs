//! One server: the connection, capability detection and the lock protocol's primitive requests.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Script, Value};
use tokio::sync::Mutex;

use crate::guard::Lock;
use crate::{Error, Result};

/// Compare-and-delete: deletes `KEYS[1]` only if it holds `ARGV[1]` (the SET command page's script).
pub const RELEASE_SCRIPT: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// Compare-and-pexpire: resets the TTL of `KEYS[1]` to `ARGV[2]` ms only if it holds `ARGV[1]`.
pub const EXTEND_SCRIPT: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

/// How owner-checked release and extension are sent to a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `DELIFEQ key token` (Valkey 9, Latch) and `SET key token IFEQ token PX ms`.
    Delifeq,
    /// `DELEX key IFEQ token` (Redis 8.4, Latch) and `SET key token IFEQ token PX ms`.
    Delex,
    /// The Lua compare-and-delete / compare-and-pexpire scripts (`EVALSHA`, `EVAL` on `NOSCRIPT`).
    Lua,
}

impl Backend {
    fn code(self) -> u8 {
        match self {
            Backend::Delifeq => 1,
            Backend::Delex => 2,
            Backend::Lua => 3,
        }
    }

    fn from_code(c: u8) -> Option<Backend> {
        match c {
            1 => Some(Backend::Delifeq),
            2 => Some(Backend::Delex),
            3 => Some(Backend::Lua),
            _ => None,
        }
    }
}

struct Inner {
    client: redis::Client,
    conn: Mutex<Option<MultiplexedConnection>>,
    /// 0 = not detected yet, else `Backend::code`.
    backend: AtomicU8,
    /// Extension path: 0 = follow `backend`, 3 = Lua (the server refused `SET ... IFEQ`).
    extend: AtomicU8,
    timeout: Option<Duration>,
}

/// A connection to one Redis-compatible server, shared by every lock taken through it (cheap to
/// clone). The connection is multiplexed (requests from many tasks are pipelined on one socket)
/// and reopened after an I/O error. The server's release/extend capabilities are detected once,
/// on first use, with `COMMAND INFO DELIFEQ DELEX`; an `unknown command` reply later also moves
/// the client to the Lua path.
#[derive(Clone)]
pub struct LockClient {
    inner: Arc<Inner>,
}

fn is_unknown_command(e: &redis::RedisError) -> bool {
    let s = e.to_string();
    s.contains("unknown command") || s.contains("syntax error")
}

impl LockClient {
    /// Connects to `url` (`redis://[[user]:password@]host:port[/db]`).
    pub async fn connect(url: &str) -> Result<LockClient> {
        let c = LockClient::new(redis::Client::open(url)?, None);
        c.conn().await?;
        Ok(c)
    }

    /// Wraps a client without connecting yet; every request is bounded by `timeout` if given
    /// (Redlock uses a small one, so that a dead or stopped server costs little).
    pub fn new(client: redis::Client, timeout: Option<Duration>) -> LockClient {
        LockClient {
            inner: Arc::new(Inner {
                client,
                conn: Mutex::new(None),
                backend: AtomicU8::new(0),
                extend: AtomicU8::new(0),
                timeout,
            }),
        }
    }

    /// Skips detection and uses `backend` for release and extension.
    pub fn with_backend(self, backend: Backend) -> LockClient {
        self.inner.backend.store(backend.code(), Ordering::Relaxed);
        self
    }

    /// A lock named `key` on this server, with default options (TTL 30 s, no watchdog, no fencing).
    pub fn lock(&self, key: impl Into<String>) -> Lock {
        Lock::new(self.clone(), key.into())
    }

    /// The current connection, opened (again) if needed.
    pub async fn conn(&self) -> Result<MultiplexedConnection> {
        let mut slot = self.inner.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let cfg = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.inner.timeout.unwrap_or(Duration::from_secs(2))))
            .set_response_timeout(Some(Duration::from_secs(5)));
        let fut = self.inner.client.get_multiplexed_async_connection_with_config(&cfg);
        let c = match self.inner.timeout {
            Some(t) => tokio::time::timeout(t, fut).await.map_err(|_| Error::Unresponsive)??,
            None => fut.await?,
        };
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Runs one request with the client's timeout; forgets the connection after an I/O error.
    async fn run<T, F, Fut>(&self, f: F) -> Result<T>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let fut = async {
            let c = self.conn().await?;
            match f(c).await {
                Ok(v) => Ok(v),
                Err(e) => {
                    if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() {
                        *self.inner.conn.lock().await = None;
                    }
                    Err(Error::Redis(e))
                }
            }
        };
        match self.inner.timeout {
            Some(t) => tokio::time::timeout(t, fut).await.map_err(|_| Error::Unresponsive)?,
            None => fut.await,
        }
    }

    /// The release/extend path for this server, detected on first call.
    pub async fn backend(&self) -> Result<Backend> {
        if let Some(b) = Backend::from_code(self.inner.backend.load(Ordering::Relaxed)) {
            return Ok(b);
        }
        let info = self
            .run(|mut c| async move {
                redis::cmd("COMMAND").arg("INFO").arg("DELIFEQ").arg("DELEX").query_async::<Vec<Value>>(&mut c).await
            })
            .await;
        let b = match info {
            Ok(v) if matches!(v.first(), Some(x) if *x != Value::Nil) => Backend::Delifeq,
            Ok(v) if matches!(v.get(1), Some(x) if *x != Value::Nil) => Backend::Delex,
            Ok(_) => Backend::Lua,
            // COMMAND may be renamed or forbidden by ACL: try natively, fall back on the error.
            Err(Error::Redis(e)) if e.code().is_some() => Backend::Delifeq,
            Err(e) => return Err(e),
        };
        self.inner.backend.store(b.code(), Ordering::Relaxed);
        Ok(b)
    }

    /// `SET key token NX PX ttl`, and with `fence_key`, in one `MULTI`/`EXEC` with
    /// `INCR fence_key`. Returns `None` if the lock is held by someone else, else the fencing token
    /// (0 without `fence_key`).
    pub async fn acquire(&self, key: &str, token: &str, ttl: Duration, fence_key: Option<&str>) -> Result<Option<u64>> {
        let ms = ttl.as_millis().max(1) as u64;
        match fence_key {
            None => {
                let r: Option<String> = self
                    .run(|mut c| async move {
                        redis::cmd("SET").arg(key).arg(token).arg("NX").arg("PX").arg(ms).query_async(&mut c).await
                    })
                    .await?;
                Ok(r.map(|_| 0))
            }
            Some(fk) => {
                let (set, fence): (Option<String>, i64) = self
                    .run(|mut c| async move {
                        redis::pipe()
                            .atomic()
                            .cmd("SET")
                            .arg(key)
                            .arg(token)
                            .arg("NX")
                            .arg("PX")
                            .arg(ms)
                            .cmd("INCR")
                            .arg(fk)
                            .query_async(&mut c)
                            .await
                    })
                    .await?;
                // The counter moves on every attempt; only a successful SET hands the number out.
                Ok(set.map(|_| fence.max(0) as u64))
            }
        }
    }

    /// Deletes `key` if it still holds `token`. Returns whether it did.
    pub async fn release(&self, key: &str, token: &str) -> Result<bool> {
        loop {
            let b = self.backend().await?;
            let r: Result<i64> = match b {
                Backend::Delifeq => {
                    self.run(|mut c| async move { redis::cmd("DELIFEQ").arg(key).arg(token).query_async(&mut c).await })
                        .await
                }
                Backend::Delex => {
                    self.run(|mut c| async move {
                        redis::cmd("DELEX").arg(key).arg("IFEQ").arg(token).query_async(&mut c).await
                    })
                    .await
                }
                Backend::Lua => {
                    self.run(|mut c| async move {
                        Script::new(RELEASE_SCRIPT).key(key).arg(token).invoke_async(&mut c).await
                    })
                    .await
                }
            };
            match r {
                Err(Error::Redis(e)) if b != Backend::Lua && is_unknown_command(&e) => {
                    let next = if b == Backend::Delifeq { Backend::Delex } else { Backend::Lua };
                    self.inner.backend.store(next.code(), Ordering::Relaxed);
                }
                r => return r.map(|n| n == 1),
            }
        }
    }

    /// Resets the TTL of `key` to `ttl` if it still holds `token`. Returns whether it did.
    pub async fn extend(&self, key: &str, token: &str, ttl: Duration) -> Result<bool> {
        let ms = ttl.as_millis().max(1) as u64;
        loop {
            let lua = self.inner.extend.load(Ordering::Relaxed) == Backend::Lua.code()
                || self.backend().await? == Backend::Lua;
            if lua {
                let n: i64 = self
                    .run(|mut c| async move {
                        Script::new(EXTEND_SCRIPT).key(key).arg(token).arg(ms).invoke_async(&mut c).await
                    })
                    .await?;
                return Ok(n == 1);
            }
            let r: Result<Option<String>> = self
                .run(|mut c| async move {
                    redis::cmd("SET")
                        .arg(key)
                        .arg(token)
                        .arg("IFEQ")
                        .arg(token)
                        .arg("PX")
                        .arg(ms)
                        .query_async(&mut c)
                        .await
                })
                .await;
            match r {
                Err(Error::Redis(e)) if is_unknown_command(&e) => {
                    self.inner.extend.store(Backend::Lua.code(), Ordering::Relaxed);
                }
                r => return r.map(|v| v.is_some()),
            }
        }
    }

    /// `PTTL key` (for tests and diagnostics).
    pub async fn pttl(&self, key: &str) -> Result<i64> {
        self.run(|mut c| async move { redis::cmd("PTTL").arg(key).query_async(&mut c).await }).await
    }
}
