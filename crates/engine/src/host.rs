//! The machine, as the engine sees it.
//!
//! The engine does no IO of its own: the few facts and files it needs from the operating system
//! (process memory and CPU for INFO, the config file for CONFIG REWRITE, whether `dir` exists) come
//! through [`Host`], which the server crate implements on the real system and tests replace with
//! [`MemoryHost`]. So do the client connections MIGRATE opens to other servers ([`Host::connect`]),
//! which [`ConnCache`] keeps open between commands.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// The allocator's own totals, in bytes, as Redis's `zmalloc_get_allocator_info` reads jemalloc's:
/// what it handed out (`stats.allocated`), the pages those sit in (`stats.active`), and what it
/// holds resident (`stats.resident`). Zero where an allocator does not tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    /// `stats.allocated`.
    pub allocated: u64,
    /// `stats.active`.
    pub active: u64,
    /// `stats.resident`.
    pub resident: u64,
}

/// Operating-system services the engine needs.
pub trait Host: Send + Sync + 'static {
    /// Resident set size of the process, in bytes (0 if unknown).
    fn rss_bytes(&self) -> u64;
    /// Physical memory of the machine, in bytes (0 if unknown).
    fn total_memory_bytes(&self) -> u64;
    /// (user, system) CPU seconds used by the process.
    fn cpu_seconds(&self) -> (f64, f64);
    /// The process id (INFO's `process_id`).
    fn pid(&self) -> u32;
    /// Operating system description, as `uname -srm` prints it.
    fn os(&self) -> String;
    /// The process's working directory (the default of `dir`).
    fn working_dir(&self) -> String;
    /// Reads a whole text file.
    fn read_file(&self, path: &Path) -> io::Result<String>;
    /// Replaces a file's contents atomically (write beside it, then rename over it).
    fn replace_file(&self, path: &Path, contents: &str) -> io::Result<()>;
    /// Reads a whole file's bytes.
    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Writes `data` as the new contents of `path`, durably: to a temporary file beside it, flushed
    /// to disk, renamed over the old one, the directory flushed (a crash leaves the old file or the
    /// new one, never a mix).
    fn write_durably(&self, path: &Path, data: &[u8]) -> io::Result<()>;
    /// [`Host::write_durably`] for data made while it is written: `fill` writes it (a large
    /// snapshot is never whole in memory). An error from `fill` or the disk leaves the old file.
    fn write_durably_with(
        &self,
        path: &Path,
        fill: &mut dyn FnMut(&mut dyn io::Write) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut data = Vec::new();
        fill(&mut data)?;
        self.write_durably(path, &data)
    }
    /// Renames `from` over `to` (same directory) and flushes the directory: a crash leaves one
    /// or the other. A background save's last step.
    fn rename_durably(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file (a background save that was cancelled).
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Runs `job` off the command path, on a thread of its own. The caller may hold shard locks
    /// the job takes: it never runs in place. An error when it cannot start (no thread).
    fn in_background(&self, job: Box<dyn FnOnce() + Send>) -> io::Result<()>;
    /// Runs the background jobs a host without threads has queued (see [`MemoryHost`]); a no-op
    /// elsewhere. Callers hold no lock.
    fn run_queued(&self) {}
    /// Checks that `path` names a directory and returns its absolute form, or Redis's reason
    /// ("No such file or directory", "Not a directory", "Permission denied").
    fn resolve_dir(&self, path: &str) -> Result<String, String>;
    /// The memory allocator, as INFO's `mem_allocator` names it (Redis: `libc` or `jemalloc-<version>`).
    fn allocator(&self) -> &'static str {
        "libc"
    }
    /// The allocator's totals, freshly read (zeros when it has none, as Redis's libc build).
    fn allocator_stats(&self) -> AllocatorStats {
        AllocatorStats::default()
    }
    /// Bytes the process holds from its allocator: INFO's `used_memory`, what `maxmemory` limits
    /// (Redis's `zmalloc_used_memory`).
    fn used_memory(&self) -> u64;
    /// Makes room for `maxclients` connections in the process's open-files limit (Redis's
    /// `adjustOpenFilesLimit`) and returns how many it allows: `maxclients`, or fewer.
    fn open_files_for(&self, maxclients: u64) -> Result<u64, String> {
        Ok(maxclients)
    }
    /// Listens on `bind`'s addresses at `port` instead of the current sockets (CONFIG SET bind/port):
    /// the new sockets replace the old only if they could all be had; otherwise the old stay and
    /// the reason is returned. A host without sockets accepts any.
    fn relisten(&self, bind: &str, port: u16) -> Result<(), String> {
        let _ = (bind, port);
        Ok(())
    }
    /// Listens for TLS connections on `bind`'s addresses at `port` (0: none) instead of the current
    /// TLS sockets (CONFIG SET tls-port, bind), as [`Host::relisten`] does for plain TCP.
    fn relisten_tls(&self, bind: &str, port: u16) -> Result<(), String> {
        let _ = (bind, port);
        Ok(())
    }
    /// Builds the TLS configuration new connections get from the `tls-*` parameters (`value` gives
    /// each one's value by name, the new values of a CONFIG SET included) and the files they name,
    /// as Redis's `tlsConfigure`: either all of it is loaded and replaces the old, or the old stays
    /// and the reason is logged and returned. A host without TLS accepts any.
    fn configure_tls(&self, value: &dyn Fn(&str) -> String) -> Result<(), String> {
        let _ = value;
        Ok(())
    }
    /// DEBUG MALLCTL: reads an integer tuning value of the allocator by name (and writes `value`
    /// if given), returning the old value; the error is the allocator's (strerror text). None
    /// when the allocator has no such interface (then DEBUG has no MALLCTL subcommand).
    fn mallctl(&self, name: &str, value: Option<i64>) -> Option<Result<i64, String>> {
        let _ = (name, value);
        None
    }
    /// The process's `oom_score_adj` (Linux), if it can be read.
    fn oom_score_adj(&self) -> Option<i64> {
        None
    }
    /// Sets the process's `oom_score_adj`.
    fn set_oom_score_adj(&self, value: i64) -> Result<(), String> {
        let _ = value;
        Err("oom_score_adj is not supported here".into())
    }
    /// Sets the process title (what `ps` and `/proc/PID/cmdline` show) to `title(argv0, config
    /// file)`, the file `-` when there is none; a host without one, or before the server has
    /// started, ignores it.
    fn set_proc_title(&self, title: &dyn Fn(&str, &str) -> Option<String>) {
        let _ = title;
    }
    /// `loglevel` took a new value (at startup or by CONFIG SET): the log follows it.
    fn set_log_level(&self, loglevel: &str) {
        let _ = loglevel;
    }
    /// Writes a line to the server log at `level` (Redis's `serverLog`).
    fn log(&self, level: LogLevel, msg: &str) {
        let _ = (level, msg);
    }
    /// DEBUG SEGFAULT: the process dies of SIGSEGV, through its crash report (Redis writes to a
    /// read-only page). A host without signals panics, the nearest thing to a crash it has.
    fn segfault(&self) {
        panic!("DEBUG SEGFAULT")
    }
    /// Writes text to the process's standard output as it is (DEBUG LISTPACK and QUICKLIST print
    /// there, as Redis's `printf`s do).
    fn print(&self, text: &str) {
        let _ = text;
    }
    /// Opens a blocking client connection to `host`:`port` (a name or an address), giving up after
    /// `timeout_ms` milliseconds (Redis's `connBlockingConnect`), with Nagle's algorithm off. An
    /// error of kind `InvalidInput` (the name resolves to no address) or `Unsupported` (a host
    /// without sockets) means no attempt could start; any other is the attempt's failure (refused,
    /// timed out: see [`is_timeout`]).
    fn connect(&self, host: &str, port: u16, timeout_ms: u64) -> io::Result<Box<dyn HostConn>> {
        let _ = (host, port, timeout_ms);
        Err(io::Error::new(io::ErrorKind::Unsupported, "no network on this host"))
    }
}

/// A client connection from [`Host::connect`]: a blocking byte stream to another server.
pub trait HostConn: io::Read + io::Write + Send {
    /// Makes every later read and write give up after `timeout_ms` milliseconds (> 0) without
    /// progress, with an error of kind `WouldBlock` or `TimedOut` (see [`is_timeout`]).
    fn set_timeout(&mut self, timeout_ms: u64) -> io::Result<()>;
}

/// True if `e` is a read or write that ran out of time (Redis's `ETIMEDOUT`), not a failure of the
/// connection.
pub fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// A connection kept in a [`ConnCache`], with what its user remembers about it.
pub struct CachedConn {
    /// The connection.
    pub conn: Box<dyn HostConn>,
    /// The database last selected on it, -1 if unknown (MIGRATE's `last_dbid`).
    pub last_db: i64,
    /// When it was last handed out, in seconds of the server's clock.
    last_use_s: u64,
}

impl CachedConn {
    /// Stamps its use at `now_s` (what [`ConnCache::close_idle`] measures idleness from).
    pub fn used_at(&mut self, now_s: u64) {
        self.last_use_s = now_s;
    }
}

/// A shared [`CachedConn`]: whoever uses the connection holds its lock for the whole exchange, so
/// two commands talking to the same server take turns on it.
pub type SharedConn = std::sync::Arc<Mutex<CachedConn>>;

/// Client connections kept open between commands, by `host:port` as the command named them (Redis's
/// `migrate_cached_sockets`): at most [`ConnCache::MAX`], each closed by [`ConnCache::close_idle`]
/// once unused for more than [`ConnCache::IDLE_S`] seconds.
#[derive(Default)]
pub struct ConnCache {
    conns: Mutex<HashMap<Vec<u8>, SharedConn>>,
}

impl ConnCache {
    /// Redis's `MIGRATE_SOCKET_CACHE_ITEMS`: a new connection beyond it closes one at random.
    pub const MAX: usize = 64;
    /// Redis's `MIGRATE_SOCKET_CACHE_TTL`, in seconds.
    pub const IDLE_S: u64 = 10;

    /// The connection cached under `name`, or a new one from `open` (cached before it is returned;
    /// the cache is not locked while it opens), stamped as used at `now_s`. Its user stamps it
    /// again ([`CachedConn::used_at`]) once it holds its lock.
    pub fn get_or_open(
        &self,
        name: &[u8],
        now_s: u64,
        open: impl FnOnce() -> io::Result<Box<dyn HostConn>>,
    ) -> io::Result<SharedConn> {
        if let Some(c) = self.conns.lock().get(name) {
            return Ok(c.clone());
        }
        let conn = open()?;
        let shared = std::sync::Arc::new(Mutex::new(CachedConn { conn, last_db: -1, last_use_s: now_s }));
        let mut conns = self.conns.lock();
        if conns.len() >= Self::MAX && !conns.contains_key(name) {
            // The hash map's first key is as good as a random one.
            if let Some(k) = conns.keys().next().cloned() {
                conns.remove(&k);
            }
        }
        conns.insert(name.to_vec(), shared.clone());
        Ok(shared)
    }

    /// Forgets `conn`, cached under `name` (after an error on it): closed once its last user lets go.
    pub fn close(&self, name: &[u8], conn: &SharedConn) {
        let mut conns = self.conns.lock();
        if conns.get(name).is_some_and(|c| std::sync::Arc::ptr_eq(c, conn)) {
            conns.remove(name);
        }
    }

    /// Closes the connections unused for more than [`ConnCache::IDLE_S`] seconds at `now_s`
    /// (Redis's `migrateCloseTimedoutSockets`, from the cron). One in use is not idle.
    pub fn close_idle(&self, now_s: u64) {
        let mut conns = self.conns.lock();
        if conns.is_empty() {
            return;
        }
        conns.retain(|_, c| c.try_lock().is_none_or(|g| now_s.saturating_sub(g.last_use_s) <= Self::IDLE_S));
    }

    /// How many connections are cached (INFO's `migrate_cached_sockets`).
    pub fn len(&self) -> usize {
        self.conns.lock().len()
    }

    /// True if none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Redis's log levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// `.`: debug.
    Debug,
    /// `-`: verbose.
    Verbose,
    /// `*`: notice.
    Notice,
    /// `#`: warning.
    Warning,
}

/// A host with no operating system behind it: process figures are zero and the file system lives in
/// memory (it starts with the single directory `/`). The engine's default, and what tests use.
pub struct MemoryHost {
    /// What [`Host::used_memory`] reports, unless [`MemoryHost::set_used_fn`] gave a function.
    pub used: std::sync::atomic::AtomicU64,
    used_fn: Mutex<Option<UsedFn>>,
    files: Mutex<HashMap<PathBuf, Vec<u8>>>,
    dirs: Mutex<std::collections::HashSet<PathBuf>>,
    /// Lines given to [`Host::log`], oldest first.
    pub logged: Mutex<Vec<(LogLevel, String)>>,
    /// Text given to [`Host::print`].
    pub printed: Mutex<String>,
    /// What [`Host::oom_score_adj`] reads and [`Host::set_oom_score_adj`] writes.
    pub oom_score_adj: std::sync::atomic::AtomicI64,
    /// Makes [`Host::write_durably`] fail as a full disk does (tests of MISCONF and recovery).
    pub disk_full: std::sync::atomic::AtomicBool,
    /// Background jobs, run by [`Host::run_queued`] (tests run them between commands).
    queued: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
    connect_fn: Mutex<Option<ConnectFn>>,
}

impl Default for MemoryHost {
    fn default() -> Self {
        MemoryHost {
            used: Default::default(),
            used_fn: Mutex::new(None),
            files: Mutex::default(),
            dirs: Mutex::new([PathBuf::from("/")].into_iter().collect()),
            logged: Mutex::default(),
            printed: Mutex::default(),
            oom_score_adj: Default::default(),
            disk_full: Default::default(),
            queued: Mutex::default(),
            connect_fn: Mutex::new(None),
        }
    }
}

/// A model of used memory for tests (see [`MemoryHost::set_used_fn`]).
pub type UsedFn = std::sync::Arc<dyn Fn() -> u64 + Send + Sync>;

/// A model of the network for tests (see [`MemoryHost::set_connect_fn`]): `(host, port, timeout_ms)`
/// to a connection.
pub type ConnectFn = std::sync::Arc<dyn Fn(&str, u16, u64) -> io::Result<Box<dyn HostConn>> + Send + Sync>;

impl MemoryHost {
    /// Makes [`Host::used_memory`] call `f`: tests model memory that falls as keys are evicted. `f`
    /// is called with shards locked: it must not run commands.
    pub fn set_used_fn(&self, f: UsedFn) {
        *self.used_fn.lock() = Some(f);
    }
    /// Makes [`Host::connect`] call `f` (without it, connecting is `Unsupported`): tests give MIGRATE
    /// peers in memory. `f` is called with shards locked.
    pub fn set_connect_fn(&self, f: ConnectFn) {
        *self.connect_fn.lock() = Some(f);
    }
    /// Creates a directory.
    pub fn mkdir(&self, path: impl Into<PathBuf>) {
        self.dirs.lock().insert(path.into());
    }
    /// Stores a file.
    pub fn put(&self, path: impl Into<PathBuf>, contents: &str) {
        self.files.lock().insert(path.into(), contents.as_bytes().to_vec());
    }
    /// A stored file.
    pub fn get(&self, path: &Path) -> Option<String> {
        self.files.lock().get(path).map(|b| String::from_utf8_lossy(b).into_owned())
    }
}

impl Host for MemoryHost {
    fn rss_bytes(&self) -> u64 {
        0
    }
    fn used_memory(&self) -> u64 {
        let f = self.used_fn.lock().clone();
        match f {
            Some(f) => f(),
            None => self.used.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
    fn total_memory_bytes(&self) -> u64 {
        0
    }
    fn cpu_seconds(&self) -> (f64, f64) {
        (0.0, 0.0)
    }
    fn pid(&self) -> u32 {
        // No process of its own: a number no real process has.
        0
    }
    fn os(&self) -> String {
        format!("{} {}", std::env::consts::OS, std::env::consts::ARCH)
    }
    fn working_dir(&self) -> String {
        "/".to_string()
    }
    fn read_file(&self, path: &Path) -> io::Result<String> {
        self.get(path).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
    fn replace_file(&self, path: &Path, contents: &str) -> io::Result<()> {
        self.put(path, contents);
        Ok(())
    }
    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.files.lock().get(path).cloned().ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
    fn write_durably(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        if self.disk_full.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "No space left on device"));
        }
        match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() && !self.dirs.lock().contains(dir) => {
                Err(io::Error::from(io::ErrorKind::NotFound))
            }
            _ => {
                self.files.lock().insert(path.to_path_buf(), data.to_vec());
                Ok(())
            }
        }
    }
    fn in_background(&self, job: Box<dyn FnOnce() + Send>) -> io::Result<()> {
        self.queued.lock().push(job);
        Ok(())
    }
    fn rename_durably(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut files = self.files.lock();
        let data = files.remove(from).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        files.insert(to.to_path_buf(), data);
        Ok(())
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.files.lock().remove(path).map(drop).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
    fn run_queued(&self) {
        loop {
            let jobs = std::mem::take(&mut *self.queued.lock());
            if jobs.is_empty() {
                break;
            }
            jobs.into_iter().for_each(|job| job());
        }
    }
    fn resolve_dir(&self, path: &str) -> Result<String, String> {
        let p = Path::new(path);
        if self.dirs.lock().contains(p) {
            Ok(path.to_string())
        } else if self.files.lock().contains_key(p) {
            Err("Not a directory".into())
        } else {
            Err("No such file or directory".into())
        }
    }
    fn log(&self, level: LogLevel, msg: &str) {
        self.logged.lock().push((level, msg.to_string()));
    }
    fn print(&self, text: &str) {
        self.printed.lock().push_str(text);
    }
    fn oom_score_adj(&self) -> Option<i64> {
        Some(self.oom_score_adj.load(std::sync::atomic::Ordering::Relaxed))
    }
    fn set_oom_score_adj(&self, value: i64) -> Result<(), String> {
        self.oom_score_adj.store(value, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
    fn connect(&self, host: &str, port: u16, timeout_ms: u64) -> io::Result<Box<dyn HostConn>> {
        let f = self.connect_fn.lock().clone();
        match f {
            Some(f) => f(host, port, timeout_ms),
            None => Err(io::Error::new(io::ErrorKind::Unsupported, "no network on this host")),
        }
    }
}
