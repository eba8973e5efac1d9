//! One server: the connection, capability detection and the lock protocol's primitive requests.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, Script, Value};
use tokio::sync::Mutex;

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
    /// The server requests go to: the one given, or the one a `MOVED` named since (a consensus
    /// group's leader).
    client: std::sync::Mutex<redis::Client>,
    /// The members of a consensus group ([`LockClient::connect_group`]): when the server in use
    /// cannot be reached or knows no leader, requests go to the next one (which sends them on to
    /// the leader with `MOVED`). Empty for a single server.
    group: Vec<redis::Client>,
    /// Which member of `group` was tried last.
    member: std::sync::atomic::AtomicUsize,
    conn: Mutex<Option<MultiplexedConnection>>,
    /// 0 = not detected yet, else `Backend::code`.
    backend: AtomicU8,
    /// Extension path: 0 = follow `backend`, 3 = Lua (the server refused `SET ... IFEQ`).
    extend: AtomicU8,
    /// Native lock commands (`LOCK`/`UNLOCK`/`LOCKEXTEND`): 0 = not detected yet, 1 = yes, 2 = no.
    native: AtomicU8,
    /// Idle dedicated connections for blocking `LOCK ... WAIT` requests (a blocked request would
    /// hold up every other request pipelined on the shared connection).
    waiters: std::sync::Mutex<Vec<MultiplexedConnection>>,
    timeout: Option<Duration>,
}

/// How long a request to a consensus group goes on trying members.
const GROUP_RETRY: Duration = Duration::from_secs(10);

/// At most this many `MOVED` replies are followed for one request.
const MAX_REDIRECTS: usize = 5;

/// A `LOCK ... WAIT` to a consensus group is sent again at most this many times after its member
/// was lost (each time to the next member, which redirects to the leader).
const MAX_LOST_WAITS: u32 = 20;

/// The server a `-MOVED` reply names (a Latch consensus group's follower naming its leader).
fn moved_to(e: &redis::RedisError) -> Option<&str> {
    let (addr, _) = e.redirect_node()?;
    (e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::Moved)).then_some(addr)
}

/// Whether `e` says the group member in use is gone or knows no leader (an election under way):
/// a request to a group then goes to the next member.
fn member_lost(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.code() == Some("CLUSTERDOWN")
}

/// At most this many idle dedicated connections are kept for `LOCK ... WAIT`.
const IDLE_WAIT_CONNS: usize = 8;

/// A lock's state as `LOCKINFO` reports it (native locks only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockInfo {
    /// The holder's owner token.
    pub owner: String,
    /// Remaining TTL in milliseconds (-1: none).
    pub ttl_ms: i64,
    /// The current grant's fencing token.
    pub token: u64,
    /// Clients queued in `LOCK ... WAIT`.
    pub waiters: u64,
}

/// A connection to one Redis-compatible server, shared by every lock taken through it (cheap to
/// clone). The connection is multiplexed (requests from many tasks are pipelined on one socket)
/// and reopened after an I/O error. The server's release/extend capabilities are detected once,
/// on first use, with `COMMAND INFO DELIFEQ DELEX LOCK`; an `unknown command` reply later also
/// moves the client to the Lua path. Where the server has the native lock commands (Latch: `LOCK`,
/// `UNLOCK`, `LOCKEXTEND`), [`crate::Lock`] uses them instead of `SET NX PX` (see
/// [`LockClient::native`]).
#[derive(Clone)]
pub struct LockClient {
    inner: Arc<Inner>,
}

pub(crate) fn is_unknown_command(e: &redis::RedisError) -> bool {
    let s = e.to_string();
    s.contains("unknown command") || s.contains("syntax error")
}

/// `WRONGTYPE`: the key holds something other than a native lock (for `LOCK`: held by a
/// non-native holder; for `UNLOCK`/`LOCKEXTEND`: certainly not our lock any more).
pub(crate) fn is_wrong_type(e: &redis::RedisError) -> bool {
    e.code() == Some("WRONGTYPE")
}

impl LockClient {
    /// Connects to `url` (`redis://[[user]:password@]host:port[/db]`).
    pub async fn connect(url: &str) -> Result<LockClient> {
        let c = LockClient::new(redis::Client::open(url)?, None);
        c.conn().await?;
        Ok(c)
    }

    /// Connects to a Latch consensus group (docs/consensus.md) through any of its members' `urls`:
    /// requests follow `MOVED` to the leader, and when the server in use goes away (the leader
    /// killed) or knows no leader yet (an election), they go to the next member, again and again
    /// for about [`GROUP_RETRY`]; a lock is reported held only when the group acknowledged it.
    pub fn connect_group(urls: &[&str]) -> Result<LockClient> {
        let group = urls.iter().map(|u| redis::Client::open(*u)).collect::<redis::RedisResult<Vec<_>>>()?;
        LockClient::group(group)
    }

    /// [`LockClient::connect_group`] with clients made by the caller (TLS, credentials); requests
    /// start with the first.
    pub fn group(members: Vec<redis::Client>) -> Result<LockClient> {
        let Some(first) = members.first().cloned() else {
            return Err(Error::Redis(redis::RedisError::from((redis::ErrorKind::Client, "no server given"))));
        };
        let mut c = LockClient::new(first, None);
        Arc::get_mut(&mut c.inner).expect("not shared yet").group = members;
        Ok(c)
    }

    /// Wraps a client without connecting yet; every request is bounded by `timeout` if given
    /// (Redlock uses a small one, so that a dead or stopped server costs little).
    pub fn new(client: redis::Client, timeout: Option<Duration>) -> LockClient {
        LockClient {
            inner: Arc::new(Inner {
                client: std::sync::Mutex::new(client),
                group: Vec::new(),
                member: std::sync::atomic::AtomicUsize::new(0),
                conn: Mutex::new(None),
                backend: AtomicU8::new(0),
                extend: AtomicU8::new(0),
                native: AtomicU8::new(0),
                waiters: std::sync::Mutex::new(Vec::new()),
                timeout,
            }),
        }
    }

    /// Skips detection and uses `backend` for release and extension.
    pub fn with_backend(self, backend: Backend) -> LockClient {
        self.inner.backend.store(backend.code(), Ordering::Relaxed);
        self
    }

    /// Forces the lock path: `true` uses the native `LOCK`/`UNLOCK`/`LOCKEXTEND` commands (falling
    /// back if the server answers `unknown command`), `false` the portable `SET NX PX` protocol
    /// even on a server that has them. Without it the path is detected on first use.
    pub fn with_native(self, on: bool) -> LockClient {
        self.set_native(on);
        self
    }

    pub(crate) fn set_native(&self, on: bool) {
        self.inner.native.store(if on { 1 } else { 2 }, Ordering::Relaxed);
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
        let client = self.client();
        let fut = client.get_multiplexed_async_connection_with_config(&cfg);
        let c = match self.inner.timeout {
            Some(t) => tokio::time::timeout(t, fut).await.map_err(|_| Error::Unresponsive)??,
            None => fut.await?,
        };
        *slot = Some(c.clone());
        Ok(c)
    }

    /// The server requests go to now.
    fn client(&self) -> redis::Client {
        self.inner.client.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Moves to the next member of the group, after a pause (an election takes a second or so).
    async fn next_member(&self) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let n = self.inner.group.len().max(1);
        let i = self.inner.member.fetch_add(1, Ordering::Relaxed).wrapping_add(1) % n;
        if let Some(next) = self.inner.group.get(i) {
            *self.inner.client.lock().unwrap_or_else(|e| e.into_inner()) = next.clone();
        }
        *self.inner.conn.lock().await = None;
        if let Ok(mut idle) = self.inner.waiters.lock() {
            idle.clear();
        }
    }

    /// A `MOVED <slot> <host:port>` reply (a Latch consensus group's follower naming its leader):
    /// requests go to `addr` from now on, over the same scheme, credentials and database.
    async fn follow(&self, addr: &str) -> Result<()> {
        let bad =
            || Error::Redis(redis::RedisError::from((redis::ErrorKind::Client, "bad MOVED address", addr.to_string())));
        let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let info = self.client().get_connection_info().clone();
        let to = match info.addr() {
            ConnectionAddr::TcpTls { insecure, tls_params, .. } => {
                ConnectionAddr::TcpTls { host, port, insecure: *insecure, tls_params: tls_params.clone() }
            }
            _ => ConnectionAddr::Tcp(host, port),
        };
        let next = redis::Client::open(info.set_addr(to))?;
        *self.inner.client.lock().unwrap_or_else(|e| e.into_inner()) = next;
        *self.inner.conn.lock().await = None;
        if let Ok(mut idle) = self.inner.waiters.lock() {
            idle.clear();
        }
        Ok(())
    }

    /// Runs one request with the client's timeout; forgets the connection after an I/O error, and
    /// follows a `MOVED` (at most a few in a row) to the server it names.
    async fn run<T, F, Fut>(&self, f: F) -> Result<T>
    where
        F: Fn(MultiplexedConnection) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let fut = async {
            let (mut hops, started) = (0, tokio::time::Instant::now());
            // With a group, a member that is gone or knows no leader is not the end: the next is
            // tried, until GROUP_RETRY has passed.
            let retry = |e: &Error| {
                !self.inner.group.is_empty()
                    && started.elapsed() < GROUP_RETRY
                    && match e {
                        Error::Redis(e) => member_lost(e),
                        Error::Unresponsive => true,
                        _ => false,
                    }
            };
            loop {
                let c = match self.conn().await {
                    Ok(c) => c,
                    Err(e) if retry(&e) => {
                        self.next_member().await;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                match f(c).await {
                    Ok(v) => return Ok(v),
                    Err(e) => {
                        if let Some(addr) = moved_to(&e)
                            && (hops < MAX_REDIRECTS || retry(&Error::Unresponsive))
                        {
                            hops += 1;
                            self.follow(addr).await?;
                            continue;
                        }
                        if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() {
                            *self.inner.conn.lock().await = None;
                        }
                        let e = Error::Redis(e);
                        if retry(&e) {
                            self.next_member().await;
                            continue;
                        }
                        return Err(e);
                    }
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
        self.detect().await?;
        Ok(Backend::from_code(self.inner.backend.load(Ordering::Relaxed)).unwrap_or(Backend::Lua))
    }

    /// Whether locks taken through this client use the server's native lock commands (`LOCK`,
    /// `UNLOCK`, `LOCKEXTEND`: Latch), detected on first call unless forced with
    /// [`LockClient::with_native`].
    pub async fn native(&self) -> Result<bool> {
        match self.inner.native.load(Ordering::Relaxed) {
            1 => Ok(true),
            2 => Ok(false),
            _ => {
                self.detect().await?;
                Ok(self.inner.native.load(Ordering::Relaxed) == 1)
            }
        }
    }

    /// One `COMMAND INFO DELIFEQ DELEX LOCK`; stores what was not known (or forced) yet.
    async fn detect(&self) -> Result<()> {
        let info = self
            .run(|mut c| async move {
                redis::cmd("COMMAND")
                    .arg("INFO")
                    .arg("DELIFEQ")
                    .arg("DELEX")
                    .arg("LOCK")
                    .query_async::<Vec<Value>>(&mut c)
                    .await
            })
            .await;
        let known = |v: &[Value], i: usize| matches!(v.get(i), Some(x) if *x != Value::Nil);
        let (b, native) = match info {
            Ok(v) if known(&v, 0) => (Backend::Delifeq, known(&v, 2)),
            Ok(v) if known(&v, 1) => (Backend::Delex, known(&v, 2)),
            Ok(v) => (Backend::Lua, known(&v, 2)),
            // COMMAND may be renamed or forbidden by ACL: try natively, fall back on the error.
            Err(Error::Redis(e)) if e.code().is_some() => (Backend::Delifeq, true),
            Err(e) => return Err(e),
        };
        let _ = self.inner.backend.compare_exchange(0, b.code(), Ordering::Relaxed, Ordering::Relaxed);
        let _ = self.inner.native.compare_exchange(0, if native { 1 } else { 2 }, Ordering::Relaxed, Ordering::Relaxed);
        Ok(())
    }

    /// `LOCK key owner ttl`: the fencing token if granted (or already held by `owner`, whose TTL is
    /// then reset), `None` if another owner holds it. Errors as the server sends them (`WRONGTYPE`
    /// if the key is not a native lock, `unknown command` on servers without native locks).
    pub async fn native_lock(&self, key: &str, owner: &str, ttl: Duration) -> Result<Option<u64>> {
        let ms = ttl.as_millis().max(1) as u64;
        let r: Option<i64> = self
            .run(|mut c| async move { redis::cmd("LOCK").arg(key).arg(owner).arg(ms).query_async(&mut c).await })
            .await?;
        Ok(r.map(|t| t.max(0) as u64))
    }

    /// `LOCK key owner ttl WAIT wait`: waits in the server's FIFO queue for the lock, on a dedicated
    /// connection, without polling. `None` if `wait` passed first. A `wait` under 1 ms makes one
    /// attempt (`WAIT 0` would wait forever). If this future is dropped while waiting, its
    /// connection is closed, which takes the request out of the queue (a grant that raced with the
    /// drop stays until its TTL runs out).
    ///
    /// With a consensus group the queue is the group's (replicated, see docs/consensus.md): a
    /// request that reaches a follower follows its `MOVED`, and one whose member is lost (a leader
    /// killed) is sent again to the group with the time left, which takes the same place in the
    /// queue again.
    pub async fn native_lock_wait(&self, key: &str, owner: &str, ttl: Duration, wait: Duration) -> Result<Option<u64>> {
        if wait.as_millis() == 0 {
            return self.native_lock(key, owner, ttl).await;
        }
        let deadline = tokio::time::Instant::now() + wait;
        let (mut hops, mut lost) = (0, 0u32);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.as_millis() == 0 {
                // One last look without waiting: granted meanwhile, or not.
                return self.native_lock(key, owner, ttl).await;
            }
            let e = match self.wait_once(key, owner, ttl, left).await {
                Err(Error::Redis(e)) if !self.inner.group.is_empty() => e,
                Err(Error::Unresponsive) if !self.inner.group.is_empty() && lost < MAX_LOST_WAITS => {
                    lost += 1;
                    self.next_member().await;
                    continue;
                }
                r => return r,
            };
            if let Some(addr) = moved_to(&e)
                && hops < MAX_REDIRECTS * 4
            {
                hops += 1;
                self.follow(addr).await?;
                continue;
            }
            if member_lost(&e) && lost < MAX_LOST_WAITS {
                lost += 1;
                self.next_member().await;
                continue;
            }
            return Err(Error::Redis(e));
        }
    }

    /// One `LOCK ... WAIT` request on a dedicated connection to the server in use.
    async fn wait_once(&self, key: &str, owner: &str, ttl: Duration, wait: Duration) -> Result<Option<u64>> {
        let wait_ms = wait.as_millis().clamp(1, u64::MAX as u128) as u64;
        let ms = ttl.as_millis().max(1) as u64;
        let mut c = self.wait_conn().await?;
        let mut cmd = redis::cmd("LOCK");
        cmd.arg(key).arg(owner).arg(ms).arg("WAIT").arg(wait_ms);
        let req = cmd.query_async::<Option<i64>>(&mut c);
        // The server replies when `wait` is over; the margin only guards against a lost server.
        let limit = wait.saturating_add(Duration::from_secs(5)).min(Duration::from_secs(86_400 * 365));
        let r = match tokio::time::timeout(limit, req).await {
            Ok(r) => r,
            Err(_) => return Err(Error::Unresponsive),
        };
        match r {
            Ok(v) => {
                self.put_wait_conn(c);
                Ok(v.map(|t| t.max(0) as u64))
            }
            // A server error reply leaves the connection usable; an I/O error does not.
            Err(e) => {
                if e.code().is_some() {
                    self.put_wait_conn(c);
                }
                Err(Error::Redis(e))
            }
        }
    }

    async fn wait_conn(&self) -> Result<MultiplexedConnection> {
        if let Some(c) = self.inner.waiters.lock().ok().and_then(|mut v| v.pop()) {
            return Ok(c);
        }
        let cfg = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.inner.timeout.unwrap_or(Duration::from_secs(2))))
            .set_response_timeout(None);
        Ok(self.client().get_multiplexed_async_connection_with_config(&cfg).await?)
    }

    fn put_wait_conn(&self, c: MultiplexedConnection) {
        if let Ok(mut v) = self.inner.waiters.lock()
            && v.len() < IDLE_WAIT_CONNS
        {
            v.push(c);
        }
    }

    /// `UNLOCK key owner`: whether the lock was `owner`'s and is now released (the server grants it
    /// to the next waiter in the same step). A key that is not a native lock is not ours: `false`.
    pub async fn native_unlock(&self, key: &str, owner: &str) -> Result<bool> {
        let r: Result<i64> =
            self.run(|mut c| async move { redis::cmd("UNLOCK").arg(key).arg(owner).query_async(&mut c).await }).await;
        match r {
            Err(Error::Redis(e)) if is_wrong_type(&e) => Ok(false),
            r => r.map(|n| n == 1),
        }
    }

    /// `LOCKEXTEND key owner ttl`: whether the lock was still `owner`'s (its TTL is then `ttl`).
    pub async fn native_extend(&self, key: &str, owner: &str, ttl: Duration) -> Result<bool> {
        let ms = ttl.as_millis().max(1) as u64;
        let r: Result<i64> = self
            .run(|mut c| async move { redis::cmd("LOCKEXTEND").arg(key).arg(owner).arg(ms).query_async(&mut c).await })
            .await;
        match r {
            Err(Error::Redis(e)) if is_wrong_type(&e) => Ok(false),
            r => r.map(|n| n == 1),
        }
    }

    /// `LOCKINFO key`: the native lock's holder, TTL, token and queue length; `None` if free.
    pub async fn lock_info(&self, key: &str) -> Result<Option<LockInfo>> {
        let v: Value =
            self.run(|mut c| async move { redis::cmd("LOCKINFO").arg(key).query_async(&mut c).await }).await?;
        let pairs: Vec<(Value, Value)> = match v {
            Value::Nil => return Ok(None),
            Value::Map(m) => m,
            Value::Array(a) => {
                let mut it = a.into_iter();
                let mut m = Vec::new();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    m.push((k, v));
                }
                m
            }
            other => return Err(Error::Protocol(format!("{other:?}"))),
        };
        let text = |v: &Value| match v {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::SimpleString(s) => s.clone(),
            _ => String::new(),
        };
        let int = |v: &Value| match v {
            Value::Int(n) => *n,
            _ => 0,
        };
        let mut info = LockInfo { owner: String::new(), ttl_ms: -1, token: 0, waiters: 0 };
        for (k, v) in &pairs {
            match text(k).as_str() {
                "owner" => info.owner = text(v),
                "ttl" => info.ttl_ms = int(v),
                "token" => info.token = int(v).max(0) as u64,
                "waiters" => info.waiters = int(v).max(0) as u64,
                _ => {}
            }
        }
        Ok(Some(info))
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
