//! RDB files: the whole dataset as Redis 7.0 writes it (`REDIS0010`), and loading one back,
//! Latch's or Redis's. The bytes are made and read here; the disk is the host's ([`crate::host::Host`]).
//!
//! A file is the header, AUX fields (`redis-ver`, `redis-bits`, `ctime`, `used-mem`, `aof-base`),
//! the function libraries (`FUNCTION2`), then per non-empty database `SELECTDB`, `RESIZEDB` and its
//! keys (each after its `EXPIRETIME_MS`, and `IDLE` or `FREQ` under an LRU or LFU policy), `EOF` and
//! the CRC-64 of everything before it. Value encodings are [`crate::rdb`]'s.
//!
//! Native locks have no RDB type. They travel as AUX fields, which Redis skips with a notice, so a
//! file with locks still loads into Redis (without them): `latch-lock` per held lock (database,
//! key, owner, deadline, token) and `latch-fence`, the fencing counter's high-water mark, so that a
//! server that loads the file never hands out a token at or below one it handed out before.
//!
//! The snapshot is taken with every shard locked, so it is one point in time, like Redis's fork;
//! unlike a fork it is a copy of the encoded data in memory until written (see the issue notes in
//! docs/persistence.md).

use crate::keyspace::Keyspace;
use crate::rdb::{self, AccessField, Crc64, Reader, RecordSpec, Writer};
use crate::server::Server;
use crate::value::{Entry, Value};
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use rdb::op;

/// The state INFO persistence and LASTSAVE report, and what decides the next save. Shared with the
/// background write of a BGSAVE, which reports its outcome here.
#[derive(Default)]
pub struct State {
    /// Unix seconds of the last successful save (LASTSAVE; the server's start before any).
    pub lastsave: AtomicU64,
    /// The change count (`Server::dirty`) the last successful save covered.
    pub dirty_at_save: AtomicU64,
    /// A background save is running.
    pub bgsave_in_progress: AtomicBool,
    /// When the running background save started (Unix seconds).
    pub bgsave_started: AtomicI64,
    /// The last background save failed.
    pub last_bgsave_failed: AtomicBool,
    /// Seconds the last background save took (-1: none yet).
    pub last_bgsave_secs: AtomicI64,
    /// Successful saves since startup (`rdb_saves`).
    pub saves: AtomicU64,
    /// When the last save attempt failed (Unix seconds), for Redis's retry delay.
    pub last_failure: AtomicI64,
    /// BGREWRITEAOF asked for a rewrite the AOF writer has not started yet.
    pub aof_rewrite_requested: AtomicBool,
    /// An AOF rewrite is running.
    pub aof_rewrite_in_progress: AtomicBool,
    /// AOF rewrites done since startup.
    pub aof_rewrites: AtomicU64,
    /// The last write to the AOF failed.
    pub aof_write_failed: AtomicBool,
    /// Why it failed (Redis's `strerror`), for MISCONF.
    pub aof_last_error: parking_lot::Mutex<String>,
    /// BGSAVE SCHEDULE asked for a save while a rewrite ran: the cron starts it after.
    pub bgsave_scheduled: AtomicBool,
    /// The running background save must not land (FLUSHALL, SHUTDOWN save something newer):
    /// Redis kills its child for the same reason.
    pub bgsave_cancel: AtomicBool,
    /// Held while the RDB file is replaced: by a save on the command path for its whole write,
    /// by a background save for its check of [`State::bgsave_cancel`] and its rename only.
    pub rdb_file: parking_lot::Mutex<()>,
    /// Keys the last RDB load took (`rdb_last_load_keys_loaded`).
    pub last_load_keys: AtomicU64,
    /// Keys the last RDB load dropped because their TTL had passed (`rdb_last_load_keys_expired`).
    pub last_load_expired: AtomicU64,
    /// DEBUG AOF-FLUSH-SLEEP: microseconds the AOF writer sleeps before each write (tests).
    pub aof_flush_sleep_us: AtomicU64,
    /// How DEBUG LOADAOF reads the AOF (set once by the AOF writer).
    pub aof_reader: std::sync::OnceLock<AofReader>,
}

impl State {
    /// A fresh state (no save yet) at Unix time `unix_s`.
    pub fn new(unix_s: u64) -> State {
        State { lastsave: AtomicU64::new(unix_s), last_bgsave_secs: AtomicI64::new(-1), ..State::default() }
    }

    /// A successful save of everything up to change count `dirty` at Unix time `unix_s`.
    pub fn saved(&self, dirty: u64, unix_s: u64) {
        self.dirty_at_save.fetch_max(dirty, Ordering::SeqCst);
        self.lastsave.store(unix_s, Ordering::SeqCst);
        self.saves.fetch_add(1, Ordering::Relaxed);
    }
}

/// BGSAVE while an AOF rewrite runs, without SCHEDULE (Redis's text).
pub const BGSAVE_BUSY: &str = "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.";

/// Keys loaded between two moments a startup load lets the shards go.
const LOAD_YIELD_KEYS: u64 = 1024;

/// Records go to the file in chunks of about this size (a background snapshot also holds a shard's
/// lock for no longer than it takes to encode one).
const CHUNK_BYTES: usize = 32 * 1024;

/// Positions a background snapshot walks per lock of a shard, at most.
const VISITS_PER_STEP: usize = 512;

fn aux(w: &mut Writer, k: &[u8], v: &[u8]) {
    w.buf.push(op::AUX);
    w.string(k);
    w.string(v);
}

/// Passes bytes on to a writer and keeps their CRC-64: [`CrcWrite::finish`] appends it.
struct CrcWrite<'w> {
    w: &'w mut dyn Write,
    crc: Crc64,
}

impl<'w> CrcWrite<'w> {
    fn new(w: &'w mut dyn Write) -> CrcWrite<'w> {
        CrcWrite { w, crc: Crc64::default() }
    }
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        self.crc.update(b);
        self.w.write_all(b)
    }
    fn finish(self) -> io::Result<()> {
        self.w.write_all(&self.crc.finish().to_le_bytes())
    }
}

/// The body of a file: records grouped by database, with `SELECTDB` before each run of records of
/// one database (a background snapshot interleaves databases; Redis's loader takes `SELECTDB`
/// anywhere) and `RESIZEDB` (a sizing hint) after the first of each database.
struct FileBody {
    sizes: Vec<(u64, u64)>,
    resized: Vec<bool>,
    selected: Option<usize>,
    /// An AOF base of commands: `SELECT` commands, no end marker.
    commands: bool,
}

impl FileBody {
    /// The body of a snapshot of the keyspace held by `locked` (every shard).
    fn new(locked: &mut crate::keyspace::Locked<'_>) -> FileBody {
        let mut sizes = vec![(0u64, 0u64); locked.keyspace().ndbs()];
        for s in locked.shards_mut() {
            for (db, t) in s.dbs.iter().enumerate() {
                sizes[db].0 += t.len() as u64;
                sizes[db].1 += t.volatile_len() as u64;
            }
        }
        FileBody { resized: vec![false; sizes.len()], sizes, selected: None, commands: false }
    }

    /// Appends records of database `db` to `out`.
    fn records(&mut self, db: usize, records: &[u8], out: &mut Vec<u8>) {
        if records.is_empty() {
            return;
        }
        if self.selected != Some(db) && self.commands {
            crate::changes::encode_command(out, &[&b"SELECT"[..], db.to_string().as_bytes()]);
            self.selected = Some(db);
        }
        if self.selected != Some(db) {
            let mut w = Writer::new(false);
            w.buf.push(op::SELECTDB);
            w.len(db as u64);
            if !std::mem::replace(&mut self.resized[db], true) {
                w.buf.push(op::RESIZEDB);
                w.len(self.sizes[db].0);
                w.len(self.sizes[db].1);
            }
            out.extend_from_slice(&w.buf);
            self.selected = Some(db);
        }
        out.extend_from_slice(records);
    }

    /// Appends the end of the file before the checksum: the fencing counter's high-water mark at
    /// the end of the write (tokens handed out while it ran included) and `EOF`.
    fn end(&mut self, fence: u64, out: &mut Vec<u8>) {
        if self.commands {
            return;
        }
        let mut w = Writer::new(false);
        aux(&mut w, b"latch-fence", fence.to_string().as_bytes());
        w.buf.push(op::EOF);
        out.extend_from_slice(&w.buf);
    }
}

/// What a snapshot's file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotKind {
    /// An RDB file (BGSAVE).
    Rdb,
    /// An AOF base in RDB format (`aof-use-rdb-preamble yes`, the default): `aof-base` is 1.
    AofBaseRdb,
    /// An AOF base of commands (`aof-use-rdb-preamble no`), as Redis's rewrite writes it.
    AofBaseCommands,
}

/// A background snapshot ([`Server::begin_snapshot`]): the file of one instant, written while
/// commands go on.
pub struct Snapshot {
    ks: Arc<Keyspace>,
    header: Vec<u8>,
    body: FileBody,
    fence: u64,
    /// Positions walked per lock of a shard, at most.
    visits: usize,
    /// Bytes of records encoded per lock of a shard, about.
    chunk: usize,
    /// The walk has ended in every table (written or abandoned).
    ended: bool,
}

impl Drop for Snapshot {
    /// A snapshot dropped unwritten ends its walk, so the next one finds every entry in the
    /// previous epoch. (Callers holding shard locks use [`Snapshot::abandon_locked`] instead.)
    fn drop(&mut self) {
        if !self.ended {
            self.abandon();
        }
    }
}

impl Snapshot {
    /// Walks at most `visits` positions and about `chunk` bytes per lock of a shard (tests walk in
    /// small steps so that commands run between many of them).
    pub fn with_steps(mut self, visits: usize, chunk: usize) -> Snapshot {
        (self.visits, self.chunk) = (visits.max(1), chunk.max(1));
        self
    }

    /// Writes the file to `w`: walks the shards one at a time, each lock held for one chunk, and
    /// takes what commands wrote in the meantime (old values of entries they changed). After an
    /// error the rest of the walk only marks entries ([`Snapshot::abandon`] is called here), so
    /// the next snapshot starts clean.
    pub fn write(self, w: &mut dyn Write, fence: &AtomicU64) -> io::Result<()> {
        self.write_until(w, fence, &AtomicBool::new(false))
    }

    /// [`Snapshot::write`], giving up (an `Interrupted` error) once `cancel` is set.
    pub fn write_until(mut self, w: &mut dyn Write, fence: &AtomicU64, cancel: &AtomicBool) -> io::Result<()> {
        let result = self.write_inner(w, fence, cancel);
        if result.is_err() {
            self.abandon();
        }
        self.ended = true;
        result
    }

    /// Abandons the snapshot while the caller holds every shard.
    pub fn abandon_locked(mut self, locked: &mut crate::keyspace::Locked<'_>) {
        for s in locked.shards_mut() {
            s.dbs.iter_mut().for_each(|t| t.snapshot_abandon());
        }
        self.ended = true;
    }

    fn write_inner(&mut self, w: &mut dyn Write, fence: &AtomicU64, cancel: &AtomicBool) -> io::Result<()> {
        let mut out = CrcWrite::new(w);
        out.write_all(&self.header)?;
        let mut left: Vec<usize> = (0..self.ks.nshards()).collect();
        let mut buf = Vec::new();
        let mut steps = 0u64;
        while let Some(&i) = left.first() {
            if cancel.load(Ordering::Relaxed) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled by a newer save"));
            }
            let done = self.step(i, true, &mut buf);
            if done {
                left.remove(0);
            }
            steps += 1;
            // Old values that commands wrote in the other shards are taken now and then, so they
            // do not pile up while one large shard is walked.
            if steps.is_multiple_of(16) {
                for &j in left.iter().skip(1) {
                    self.step(j, false, &mut buf);
                    if buf.len() >= self.chunk {
                        out.write_all(&buf)?;
                        buf.clear();
                    }
                }
            }
            out.write_all(&buf)?;
            buf.clear();
        }
        self.body.end(self.fence.max(fence.load(Ordering::SeqCst)), &mut buf);
        out.write_all(&buf)?;
        if self.body.commands { Ok(()) } else { out.finish() }
    }

    /// With shard `i` locked: walks one chunk on (when `walk`) and takes the records waiting in its
    /// tables into `buf`. True when the snapshot has ended in every table of the shard.
    fn step(&mut self, i: usize, walk: bool, buf: &mut Vec<u8>) -> bool {
        let mut locked = self.ks.lock_shards(vec![i]);
        let shard = locked.shard(i);
        let mut done = true;
        let mut budget = if walk { self.chunk } else { 0 };
        for t in shard.dbs.iter_mut() {
            if budget > 0 {
                t.snapshot_step(self.visits, budget);
            }
            let body = &mut self.body;
            done &= t.snapshot_take(&mut |db, records| {
                budget = budget.saturating_sub(records.len());
                body.records(db, records, buf);
            });
        }
        done
    }

    /// The file will not be written: the rest of the walk only marks entries.
    fn abandon(&mut self) {
        for i in 0..self.ks.nshards() {
            let mut locked = self.ks.lock_shards(vec![i]);
            locked.shard(i).dbs.iter_mut().for_each(|t| t.snapshot_abandon());
        }
        self.ended = true;
    }
}

/// What loading a file found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Keys loaded.
    pub keys: u64,
    /// Keys skipped because their TTL had passed.
    pub expired: u64,
    /// Native locks restored from `latch-lock` fields.
    pub locks: u64,
    /// Function libraries loaded.
    pub libraries: u64,
    /// Bytes of the input the file took (an AOF base may go on with commands).
    pub bytes: usize,
    /// Empty aggregates skipped (Redis skips them too).
    pub empty_skipped: u64,
}

impl Server {
    /// How records are written by a snapshot taken now.
    fn record_spec(&self, commands: bool) -> RecordSpec {
        let policy = self.config.policy();
        RecordSpec {
            compress: self.config.get("rdbcompression").as_deref() == Some("yes"),
            limits: self.config.encoding_limits(),
            access: if policy.is_lfu() {
                AccessField::Freq
            } else if policy.tracks_access() {
                AccessField::Idle
            } else {
                AccessField::None
            },
            now_ms: self.clock.now_ms(),
            wall_offset_ms: self.clock.wall_offset_ms(),
            commands,
        }
    }

    /// What a file starts with: signature, AUX fields, function libraries. Taken with every shard
    /// held, with the snapshot's instant.
    fn rdb_header(&self, kind: SnapshotKind) -> Vec<u8> {
        let mut w = Writer::new(false);
        if kind == SnapshotKind::AofBaseCommands {
            // Redis's rewrite without preamble: a timestamp annotation (when enabled), then the
            // function libraries as FUNCTION LOAD.
            if self.config.aof_timestamps.load(Ordering::Relaxed) {
                w.buf.extend_from_slice(format!("#TS:{}\r\n", self.clock.unix_ms() / 1000).as_bytes());
            }
            for lib in self.scripting.libraries.lock().values() {
                crate::changes::encode_command(&mut w.buf, &[&b"FUNCTION"[..], b"LOAD", &lib.code]);
            }
            return w.buf;
        }
        let aof_base = kind == SnapshotKind::AofBaseRdb;
        w.buf.extend_from_slice(format!("REDIS{:04}", rdb::RDB_VERSION).as_bytes());
        aux(&mut w, b"redis-ver", crate::server::REDIS_VERSION.as_bytes());
        aux(&mut w, b"redis-bits", b"64");
        aux(&mut w, b"ctime", (self.clock.unix_ms() / 1000).to_string().as_bytes());
        aux(&mut w, b"used-mem", self.config.host().used_memory().to_string().as_bytes());
        aux(&mut w, b"aof-base", if aof_base { b"1" } else { b"0" });
        aux(&mut w, b"latch-fence", self.fence.load(Ordering::SeqCst).to_string().as_bytes());
        for lib in self.scripting.libraries.lock().values() {
            w.buf.push(op::FUNCTION2);
            w.string(&lib.code);
        }
        w.buf
    }

    /// The dataset as an RDB file in memory (DEBUG RELOAD's tests, small files). The caller holds
    /// every shard.
    pub fn rdb_snapshot_locked(&self, locked: &mut crate::keyspace::Locked<'_>) -> Vec<u8> {
        let mut data = Vec::new();
        self.rdb_write_locked(locked, &mut data).expect("writing to memory does not fail");
        data
    }

    /// Writes the dataset as an RDB file to `w` while the caller holds every shard (one point in
    /// time): SAVE, SHUTDOWN, FLUSHALL's save. Only the current chunk is in memory besides the data.
    /// It does not disturb a background snapshot that may be running.
    pub fn rdb_write_locked(&self, locked: &mut crate::keyspace::Locked<'_>, w: &mut dyn Write) -> io::Result<()> {
        assert!(locked.is_all(), "a snapshot needs every shard");
        let spec = self.record_spec(false);
        let mut out = CrcWrite::new(w);
        out.write_all(&self.rdb_header(SnapshotKind::Rdb))?;
        let mut file = FileBody::new(locked);
        let (mut rec, mut scratch) = (Writer::new(spec.compress), Writer::new(spec.compress));
        let mut buf = Vec::new();
        for db in 0..self.ks.ndbs() {
            for s in locked.shards_mut() {
                for (k, e) in s.dbs[db].iter() {
                    rdb::write_record(&spec, db, k, e, &mut rec, &mut scratch);
                    if rec.buf.len() >= CHUNK_BYTES {
                        file.records(db, &rec.buf, &mut buf);
                        rec.buf.clear();
                        out.write_all(&buf)?;
                        buf.clear();
                    }
                }
            }
            file.records(db, &rec.buf, &mut buf);
            rec.buf.clear();
        }
        file.end(self.fence.load(Ordering::SeqCst), &mut buf);
        out.write_all(&buf)?;
        out.finish()
    }

    /// Starts a background snapshot (BGSAVE, an AOF rewrite's base) while the caller holds every
    /// shard: the instant of the file is now, but nothing is copied (see
    /// [`crate::keyspace::Table::begin_snapshot`]); [`Snapshot::write`] then writes it from
    /// another thread while commands go on.
    pub fn begin_snapshot(&self, locked: &mut crate::keyspace::Locked<'_>, kind: SnapshotKind) -> Snapshot {
        assert!(locked.is_all(), "a snapshot needs every shard");
        let commands = kind == SnapshotKind::AofBaseCommands;
        let spec = Arc::new(self.record_spec(commands));
        let header = self.rdb_header(kind);
        let mut body = FileBody::new(locked);
        body.commands = commands;
        // Every table has the same epoch; the snapshot's is the next one.
        let epoch = locked.shard(0).dbs[0].snapshot_epoch().wrapping_add(1);
        for s in locked.shards_mut() {
            for (db, t) in s.dbs.iter_mut().enumerate() {
                t.begin_snapshot(spec.clone(), db, epoch);
            }
        }
        Snapshot {
            ks: self.ks.clone(),
            header,
            body,
            fence: self.fence.load(Ordering::SeqCst),
            visits: VISITS_PER_STEP,
            chunk: CHUNK_BYTES,
            ended: false,
        }
    }

    /// Loads an RDB file into this server's keyspace (which the caller emptied if it had to). On
    /// error nothing tells what was loaded before it: the caller stops (at startup the server exits,
    /// as Redis does).
    pub fn rdb_load(&self, data: &[u8]) -> Result<Loaded, String> {
        self.rdb_load_inner(&mut self.ks.lock_all(), data, false, true)
    }

    /// [`Server::rdb_load`] for a caller that holds every shard already. Without `merge`, a key or
    /// a function library that exists already is an error (Redis's RDB loading without
    /// `RDBFLAGS_ALLOW_DUP`); with it, the file's replaces the server's.
    pub fn rdb_load_locked(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        data: &[u8],
        merge: bool,
    ) -> Result<Loaded, String> {
        self.rdb_load_inner(locked, data, merge, false)
    }

    /// The load; with `yields` (loading at startup, no command holding the locks), every shard is
    /// let go now and then (every [`LOAD_YIELD_KEYS`] keys), as Redis processes events while it
    /// loads: INFO and the other commands that may run while loading answer meanwhile, the rest get
    /// -LOADING.
    fn rdb_load_inner(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        data: &[u8],
        merge: bool,
        yields: bool,
    ) -> Result<Loaded, String> {
        assert!(locked.is_all(), "loading needs every shard");
        // DEBUG's `key-load-delay`: microseconds to wait after each key (tests of loading).
        let delay = self.config.get_i64("key-load-delay");
        let short = || "Short read or OOM loading DB. Unrecoverable error, aborting now.".to_string();
        if data.len() < 9 || &data[..5] != b"REDIS" {
            return Err("Wrong signature trying to load DB from file".into());
        }
        let version: u32 = std::str::from_utf8(&data[5..9])
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or("Wrong signature trying to load DB from file")?;
        if !(1..=u32::from(rdb::RDB_VERSION)).contains(&version) {
            return Err(format!("Can't handle RDB format version {version}"));
        }
        let now = self.clock.now_ms();
        let offset = self.clock.wall_offset_ms();
        let ndbs = self.ks.ndbs();
        let mut r = Reader::new(&data[9..]);
        let mut loaded = Loaded::default();
        let mut db = 0usize;
        let (mut expire_at, mut lfu, mut idle): (Option<i64>, Option<u8>, Option<u64>) = (None, None, None);
        loop {
            let t = r.byte().map_err(|_| short())?;
            match t {
                op::EOF => break,
                op::SELECTDB => {
                    let n = r.length().map_err(|_| short())?;
                    if n >= ndbs as u64 {
                        return Err(format!(
                            "FATAL: Data file was created with a Redis server configured to handle more than {ndbs} databases. Exiting"
                        ));
                    }
                    db = n as usize;
                }
                op::RESIZEDB => {
                    r.length().map_err(|_| short())?;
                    r.length().map_err(|_| short())?;
                }
                op::EXPIRETIME_MS => {
                    let b = r.bytes(8).map_err(|_| short())?;
                    expire_at = Some(i64::from_le_bytes(b.try_into().map_err(|_| short())?));
                }
                op::EXPIRETIME => {
                    let b = r.bytes(4).map_err(|_| short())?;
                    expire_at = Some(i64::from(i32::from_le_bytes(b.try_into().map_err(|_| short())?)) * 1000);
                }
                op::FREQ => lfu = Some(r.byte().map_err(|_| short())?),
                op::IDLE => idle = Some(r.length().map_err(|_| short())?),
                op::AUX => {
                    let k = r.string().map_err(|_| short())?;
                    let v = r.string().map_err(|_| short())?;
                    match &k[..] {
                        b"latch-fence" => {
                            let f = std::str::from_utf8(&v).ok().and_then(|s| s.parse().ok()).ok_or_else(short)?;
                            self.fence.fetch_max(f, Ordering::SeqCst);
                        }
                        b"latch-lock" => {
                            let (ldb, key, lock, at) = rdb::parse_lock_field(&v).ok_or_else(short)?;
                            if ldb >= ndbs {
                                return Err(short());
                            }
                            self.fence.fetch_max(lock.token, Ordering::SeqCst);
                            // Deadline 0: a lock without TTL (PERSIST made it so).
                            let mono = (at != 0).then(|| at.saturating_sub(offset).max(1));
                            if mono.is_none_or(|m| m >= now as i64) {
                                let mut e = Entry::new(Value::Lock(Box::new(lock)));
                                e.expire_at = mono.unwrap_or(0) as u64;
                                locked.shard_for(&key).dbs[ldb].insert(&key, e);
                                loaded.locks += 1;
                            }
                        }
                        _ => {}
                    }
                }
                op::FUNCTION2 => {
                    let code = r.string().map_err(|_| short())?;
                    let lib = self
                        .scripting
                        .compile_library(&bytes::Bytes::copy_from_slice(&code))
                        .map_err(|e| format!("Failed loading library: {e}"))?;
                    self.scripting
                        .install_libraries(vec![lib], merge)
                        .map_err(|e| format!("Failed loading library: {e}"))?;
                    loaded.libraries += 1;
                }
                op::FUNCTION => return Err("Pre-release function format not supported.".into()),
                op::MODULE_AUX => return Err("Latch cannot load module data (RDB module AUX field).".into()),
                t => {
                    let key = r.string().map_err(|_| short())?;
                    let at_offset = data.len() - r.rest().len();
                    let value = match r.value(t) {
                        Ok(v) => v,
                        Err(rdb::DecodeError::EmptyKey) => {
                            // Redis skips empty aggregates in a file, with a log line for the first ten.
                            if loaded.empty_skipped < 10 {
                                self.config.host().log(
                                    crate::host::LogLevel::Warning,
                                    &format!("rdbLoadObject skipping empty key: {}", String::from_utf8_lossy(&key)),
                                );
                            }
                            loaded.empty_skipped += 1;
                            (expire_at, lfu, idle) = (None, None, None);
                            continue;
                        }
                        Err(rdb::DecodeError::Unsupported(ty)) => {
                            return Err(format!(
                                "Latch cannot load key '{}' in database {db}: it holds a Redis {ty}, a type Latch does not have",
                                String::from_utf8_lossy(&key)
                            ));
                        }
                        Err(rdb::DecodeError::Corrupt(msg)) => {
                            return Err(format!("Internal error in RDB reading offset {at_offset} -> {msg}"));
                        }
                        Err(rdb::DecodeError::BadFormat) => return Err(short()),
                    };
                    let at = expire_at.take();
                    let (f, i) = (lfu.take(), idle.take());
                    let mono = at.map(|a| a.saturating_sub(offset));
                    // Expired when the deadline is before now, as everywhere (Redis's `expiretime < now`).
                    if mono.is_some_and(|m| m < now as i64) {
                        loaded.expired += 1;
                        continue;
                    }
                    let mut e = Entry::new(value);
                    e.expire_at = mono.map_or(0, |m| m as u64);
                    e.atime = (now / 1000) as u32;
                    if let Some(f) = f {
                        e.lfu = f;
                    }
                    if let Some(i) = i {
                        e.atime = e.atime.wrapping_sub(i.min(u64::from(u32::MAX)) as u32);
                    }
                    let t = &mut locked.shard_for(&key).dbs[db];
                    if !merge && t.lookup(&key, now).is_some() {
                        return Err(format!("Duplicate key '{}' in RDB file", String::from_utf8_lossy(&key)));
                    }
                    t.insert(&key, e);
                    loaded.keys += 1;
                    if delay > 0 {
                        std::thread::sleep(std::time::Duration::from_micros(delay as u64));
                    }
                    if yields && loaded.keys.is_multiple_of(LOAD_YIELD_KEYS) {
                        locked.relock_all();
                    }
                }
            }
        }
        // The checksum covers everything before it; 0 means the writer did not compute one.
        if version >= 5 {
            let body_end = data.len() - r.rest().len();
            let tail = r.bytes(8).map_err(|_| short())?;
            let stored = u64::from_le_bytes(tail.try_into().map_err(|_| short())?);
            let checked = self.config.get("rdbchecksum").as_deref() != Some("no");
            if checked && stored != 0 {
                let actual = rdb::crc64(&data[..body_end]);
                if actual != stored {
                    // Redis logs both lines (the second from rdbReportCorruptRDB).
                    return Err(format!(
                        "Wrong RDB checksum expected: ({stored:x}) got: ({actual:x}). Aborting now.\nInternal error in RDB reading offset {body_end} -> RDB CRC error"
                    ));
                }
            }
        }
        loaded.bytes = data.len() - r.rest().len();
        self.persistence.last_load_keys.store(loaded.keys + loaded.locks, Ordering::Relaxed);
        self.persistence.last_load_expired.store(loaded.expired, Ordering::Relaxed);
        Ok(loaded)
    }

    /// Changes since the last successful save (`rdb_changes_since_last_save`).
    pub fn changes_since_save(&self) -> u64 {
        self.stats.dirty().saturating_sub(self.persistence.dirty_at_save.load(Ordering::SeqCst))
    }
}

/// A `latch-lock` AUX value: database, key, owner, deadline (Unix ms) and token, each length-prefixed
/// or fixed-size so that any bytes survive.
impl Server {
    /// Where RDB files are written and read: `dir`/`dbfilename`.
    pub fn rdb_path(&self) -> std::path::PathBuf {
        let dir = self.config.get("dir").unwrap_or_default();
        std::path::Path::new(&dir).join(self.config.get("dbfilename").unwrap_or_else(|| "dump.rdb".into()))
    }

    /// The dataset, snapshotted with every shard held, written durably to [`Server::rdb_path`]: what
    /// SAVE, SHUTDOWN and a save on SIGTERM share (only SAVE records it as a save).
    pub fn write_rdb_locked(&self, locked: &mut crate::keyspace::Locked<'_>) -> std::io::Result<()> {
        // A background save still running holds an older instant: it must not replace this file
        // once it is written.
        if self.persistence.bgsave_in_progress.load(Ordering::SeqCst) {
            self.persistence.bgsave_cancel.store(true, Ordering::SeqCst);
        }
        let _file = self.persistence.rdb_file.lock();
        self.config.host().write_durably_with(&self.rdb_path(), &mut |w| self.rdb_write_locked(locked, w))
    }

    /// SAVE: a snapshot, on disk before this returns. The caller holds every shard.
    pub fn save_locked(&self, locked: &mut crate::keyspace::Locked<'_>) -> Result<(), String> {
        if self.persistence.bgsave_in_progress.load(Ordering::SeqCst) {
            return Err("ERR Background save already in progress".into());
        }
        self.save_locked_pending(locked, 0)
    }

    /// [`Server::save_locked`] from inside a command that already made `pending` changes, not yet
    /// added to the change count (FLUSHALL saves what it flushed, and a background save running
    /// is cancelled first, as Redis kills its child).
    pub fn save_locked_pending(&self, locked: &mut crate::keyspace::Locked<'_>, pending: u64) -> Result<(), String> {
        let dirty = self.stats.dirty() + pending;
        let host = self.config.host();
        let unix_s = (self.clock.unix_ms() / 1000) as u64;
        match self.write_rdb_locked(locked) {
            Ok(()) => {
                host.log(crate::host::LogLevel::Notice, "DB saved on disk");
                self.persistence.saved(dirty, unix_s);
                Ok(())
            }
            Err(e) => {
                host.log(crate::host::LogLevel::Warning, &format!("Failed saving the DB: {e}"));
                self.persistence.last_failure.store(unix_s as i64, Ordering::SeqCst);
                Err(format!("ERR Failed saving the DB: {e}"))
            }
        }
    }

    /// BGSAVE: a snapshot of this instant ([`Server::begin_snapshot`]; the caller holds every
    /// shard), written to disk by a thread of its own while commands go on; its outcome lands in
    /// [`Server::persistence`].
    pub fn bgsave_locked(&self, locked: &mut crate::keyspace::Locked<'_>) -> Result<(), &'static str> {
        if self.persistence.bgsave_in_progress.load(Ordering::SeqCst) {
            return Err("ERR Background save already in progress");
        }
        // One snapshot runs at a time (Redis: one child process).
        if self.persistence.aof_rewrite_in_progress.load(Ordering::SeqCst) {
            return Err(BGSAVE_BUSY);
        }
        self.persistence.bgsave_in_progress.store(true, Ordering::SeqCst);
        let dirty = self.stats.dirty();
        self.persistence.bgsave_cancel.store(false, Ordering::SeqCst);
        let snapshot = self.begin_snapshot(locked, SnapshotKind::Rdb);
        let (host, clock, state, path) =
            (self.config.host_arc(), self.clock.clone(), self.persistence.clone(), self.rdb_path());
        let started = clock.unix_ms() / 1000;
        state.bgsave_started.store(started, Ordering::SeqCst);
        let fence = self.fence.clone();
        let h = host.clone();
        // The job takes the snapshot from here; if the job cannot start, it is dropped where the
        // caller's locks are held, so the snapshot must not be in it.
        let slot = Arc::new(parking_lot::Mutex::new(Some(snapshot)));
        let theirs = slot.clone();
        let job = Box::new(move || {
            let mut snapshot = theirs.lock().take();
            // Written aside, then renamed over the file unless a save on the command path (which
            // holds a newer instant) cancelled it meanwhile.
            let tmp = path.with_file_name(format!("temp-bgsave-{}.rdb", h.pid()));
            let cancelled = || io::Error::new(io::ErrorKind::Interrupted, "cancelled by a newer save");
            let mut result = h.write_durably_with(&tmp, &mut |w| match snapshot.take() {
                Some(s) => s.write_until(w, &fence, &state.bgsave_cancel),
                None => Err(io::Error::other("the snapshot was written already")),
            });
            if result.is_ok() {
                let _file = state.rdb_file.lock();
                result = if state.bgsave_cancel.load(Ordering::SeqCst) {
                    let _ = h.remove_file(&tmp);
                    Err(cancelled())
                } else {
                    h.rename_durably(&tmp, &path)
                };
            }
            let end = clock.unix_ms() / 1000;
            match result {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    // Not a failure (Redis: a child it killed on purpose).
                    h.log(crate::host::LogLevel::Warning, "Background saving terminated: a newer save replaced it");
                }
                Ok(()) => {
                    state.saved(dirty, end as u64);
                    state.last_bgsave_failed.store(false, Ordering::SeqCst);
                    h.log(crate::host::LogLevel::Notice, "Background saving terminated with success");
                }
                Err(e) => {
                    state.last_bgsave_failed.store(true, Ordering::SeqCst);
                    state.last_failure.store(end, Ordering::SeqCst);
                    h.log(crate::host::LogLevel::Warning, &format!("Background saving error: {e}"));
                }
            }
            state.last_bgsave_secs.store(end - started, Ordering::SeqCst);
            state.bgsave_in_progress.store(false, Ordering::SeqCst);
        });
        if let Err(e) = host.in_background(job) {
            if let Some(s) = slot.lock().take() {
                s.abandon_locked(locked);
            }
            host.log(crate::host::LogLevel::Warning, &format!("Can't save in background: {e}"));
            self.persistence.bgsave_in_progress.store(false, Ordering::SeqCst);
            return Err("ERR");
        }
        host.log(crate::host::LogLevel::Notice, "Background saving started");
        Ok(())
    }

    /// The `save` points: (seconds, changes) pairs; empty when saving is off.
    pub fn save_points(&self) -> Vec<(u64, u64)> {
        let v = self.config.get("save").unwrap_or_default();
        let n: Vec<u64> = v.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        n.chunks_exact(2).map(|p| (p[0], p[1])).collect()
    }

    /// The cron's part (Redis's `serverCron`): a BGSAVE when a save point is reached, `seconds`
    /// after the last save with at least `changes` changes since, and not within 5 seconds of a
    /// failed attempt. True when one started.
    pub fn save_cron(&self) -> bool {
        let p = &self.persistence;
        if p.bgsave_in_progress.load(Ordering::SeqCst) {
            return false;
        }
        let unix_s = self.clock.unix_ms() / 1000;
        let changes = self.changes_since_save();
        let since = unix_s.saturating_sub(p.lastsave.load(Ordering::SeqCst) as i64) as u64;
        let retry_ok = unix_s - p.last_failure.load(Ordering::SeqCst) > 5;
        let scheduled = p.bgsave_scheduled.load(Ordering::SeqCst) && !p.aof_rewrite_in_progress.load(Ordering::SeqCst);
        if scheduled {
            p.bgsave_scheduled.store(false, Ordering::SeqCst);
            return self.bgsave_locked(&mut self.ks.lock_all()).is_ok();
        }
        let due = self.save_points().iter().any(|&(secs, n)| changes >= n && since >= secs) && retry_ok;
        due && {
            self.config
                .host()
                .log(crate::host::LogLevel::Notice, &format!("{changes} changes in {since} seconds. Saving..."));
            self.bgsave_locked(&mut self.ks.lock_all()).is_ok()
        }
    }

    /// Empties every database and the function libraries, then loads the RDB file at
    /// [`Server::rdb_path`] (DEBUG RELOAD, after its SAVE). The caller holds every shard.
    pub fn reload_locked(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        flush: bool,
        merge: bool,
        now: u64,
    ) -> Result<Loaded, String> {
        let data = self
            .config
            .host()
            .read_bytes(&self.rdb_path())
            .map_err(|e| format!("Error trying to load the RDB dump: {e}"))?;
        if flush {
            for s in locked.shards_mut() {
                for t in s.dbs.iter_mut() {
                    t.clear(now);
                }
            }
            self.scripting.flush_functions();
        }
        self.rdb_load_locked(locked, &data, merge)
    }
}

impl Server {
    /// Starts encoding every change for the AOF (see [`crate::changes`]); the tables start logging
    /// the keys they delete on their own, which the AOF holds as `DEL`s.
    pub fn aof_start(&self) {
        self.log_server_deletes();
        self.changes.set_aof(true);
    }

    /// Stops encoding changes for the AOF.
    pub fn aof_stop(&self) {
        self.changes.set_aof(false);
    }

    /// For an AOF rewrite, at one instant with every shard held: a background snapshot (the new
    /// base, written with [`Snapshot::write`]) and the encoded changes that belong to the incr file
    /// being closed, with the stream's offset.
    /// None while a BGSAVE runs (one snapshot at a time; the rewrite waits for it).
    pub fn aof_rewrite_begin(&self, preamble: bool) -> Option<(Snapshot, Vec<u8>, u64)> {
        let mut locked = self.ks.lock_all();
        if self.persistence.bgsave_in_progress.load(Ordering::SeqCst) {
            return None;
        }
        let kind = if preamble { SnapshotKind::AofBaseRdb } else { SnapshotKind::AofBaseCommands };
        let snapshot = self.begin_snapshot(&mut locked, kind);
        let (tail, offset) = self.changes.rotate_aof();
        Some((snapshot, tail, offset))
    }

    /// Replays the commands of an AOF file (loading at startup).
    pub fn aof_replay(&self, commands: Vec<Vec<bytes::Bytes>>) -> Result<u64, String> {
        self.aof_replay_inner(&mut self.ks.lock_all(), commands, true)
    }

    /// Replays AOF commands while the caller holds every shard, through a client of its own (Redis's
    /// fake AOF client), each run as Redis's loader runs it: a MULTI's commands once its EXEC is
    /// read (a transaction the file does not finish is left out, as Redis reverts it), errors of
    /// commands ignored, an unknown command or a wrong number of arguments stop the load. Nothing
    /// replayed is propagated: the AOF holds it already.
    pub fn aof_replay_locked(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        commands: Vec<Vec<bytes::Bytes>>,
    ) -> Result<u64, String> {
        self.aof_replay_inner(locked, commands, false)
    }

    /// The replay; with `yields` (at startup), every shard is let go every [`LOAD_YIELD_KEYS`]
    /// commands outside a transaction, as an RDB load at startup does.
    fn aof_replay_inner(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        commands: Vec<Vec<bytes::Bytes>>,
        yields: bool,
    ) -> Result<u64, String> {
        let mut client = self.new_client("aof".into(), String::new());
        client.authenticated = true;
        client.loading = true;
        let (mut n, mut result) = (0u64, Ok(()));
        let mut multi: Option<Vec<Vec<bytes::Bytes>>> = None;
        for args in commands {
            let cmd = match self.table.resolve(&args) {
                Ok(c) if c.arity_ok(args.len()) => c,
                Ok(_) | Err(_) if self.table.get(&args[0]).is_none() => {
                    let name = String::from_utf8_lossy(&args[0]);
                    result = Err(format!("Unknown command '{name}' reading the append only file"));
                    break;
                }
                _ => {
                    let name = String::from_utf8_lossy(&args[0]);
                    result = Err(format!("Wrong number of arguments for '{name}' reading the append only file"));
                    break;
                }
            };
            match (cmd.name, multi.as_mut()) {
                ("multi", _) => multi = Some(Vec::new()),
                ("exec", Some(_)) => {
                    for args in multi.take().unwrap_or_default() {
                        self.replay_one(&mut client, locked, &args);
                    }
                }
                (_, Some(queued)) => queued.push(args),
                _ => self.replay_one(&mut client, locked, &args),
            }
            n += 1;
            if yields && multi.is_none() && n.is_multiple_of(LOAD_YIELD_KEYS) {
                locked.relock_all();
            }
        }
        if multi.is_some() {
            self.config
                .host()
                .log(crate::host::LogLevel::Warning, "Revert incomplete MULTI/EXEC transaction in AOF file");
        }
        self.client_closed(&client);
        // Keys the replay expired are not news for the AOF either.
        for s in locked.shards_mut() {
            s.take_server_deletes();
        }
        result.map(|()| n)
    }

    fn replay_one(
        &self,
        client: &mut crate::client::Client,
        locked: &mut crate::keyspace::Locked<'_>,
        args: &[bytes::Bytes],
    ) {
        if let Ok(cmd) = self.table.resolve(args) {
            let now = self.clock.now_ms();
            self.call(client, locked, cmd, args, now);
            client.effects.clear();
        }
    }

    /// Loads one file of an AOF (at startup).
    pub fn aof_load_part(&self, part: AofPart) -> Result<(), String> {
        self.aof_load_part_inner(&mut self.ks.lock_all(), part, true)
    }

    /// Loads one file of an AOF while the caller holds every shard: an RDB (a base), with the
    /// commands that may follow it (the AOF of a Redis before 7.0 with `aof-use-rdb-preamble`), or
    /// commands.
    pub fn aof_load_part_locked(&self, locked: &mut crate::keyspace::Locked<'_>, part: AofPart) -> Result<(), String> {
        self.aof_load_part_inner(locked, part, false)
    }

    fn aof_load_part_inner(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        part: AofPart,
        yields: bool,
    ) -> Result<(), String> {
        match part {
            AofPart::Rdb(data) => {
                let loaded = self.rdb_load_inner(locked, &data, false, yields)?;
                if loaded.bytes < data.len() {
                    let d = crate::changes::decode_commands(&data[loaded.bytes..]);
                    if d.end != crate::changes::AofEnd::Complete {
                        return Err("Bad file format reading the append only file: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>".into());
                    }
                    self.aof_replay_inner(locked, d.commands, yields)?;
                }
            }
            AofPart::Commands(commands) => {
                self.aof_replay_inner(locked, commands, yields)?;
            }
        }
        Ok(())
    }

    /// DEBUG LOADAOF: writes out what the AOF has pending, empties the data and the functions, and
    /// loads the AOF again (base, then incr files), with every shard held. The change count is
    /// then as after a load: nothing to save.
    pub fn debug_loadaof_locked(&self, locked: &mut crate::keyspace::Locked<'_>, now: u64) -> Result<(), String> {
        let reader = self.persistence.aof_reader.get().ok_or("AOF is not available")?;
        let parts = reader()?;
        // Loading, as at startup: other clients get -LOADING until the end.
        self.loading.store(true, Ordering::SeqCst);
        let result = self.debug_load_parts_locked(locked, parts, now);
        self.loading.store(false, Ordering::SeqCst);
        result
    }

    fn debug_load_parts_locked(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        parts: Vec<AofPart>,
        now: u64,
    ) -> Result<(), String> {
        for s in locked.shards_mut() {
            s.dbs.iter_mut().for_each(|t| t.clear(now));
        }
        self.scripting.flush_functions();
        for part in parts {
            self.aof_load_part_locked(locked, part)?;
        }
        self.persistence.dirty_at_save.store(self.stats.dirty(), Ordering::SeqCst);
        self.config.host().log(crate::host::LogLevel::Warning, "Append Only File loaded by DEBUG LOADAOF");
        Ok(())
    }
}

/// One file of an AOF as its owner (the server's AOF writer) read it, for DEBUG LOADAOF.
pub enum AofPart {
    /// A base file in RDB format.
    Rdb(Vec<u8>),
    /// A base file in AOF format, or an incr file: its commands.
    Commands(Vec<Vec<bytes::Bytes>>),
}

/// Reads the AOF for DEBUG LOADAOF, after writing out what is pending; set by whoever owns the AOF
/// files ([`State::aof_reader`]). Called with every shard held: it must not run commands.
pub type AofReader = Box<dyn Fn() -> Result<Vec<AofPart>, String> + Send + Sync>;

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;
    use std::sync::atomic::Ordering;

    /// A full disk: BGSAVE fails, writes (and PING) get MISCONF while save points are set, reads go
    /// on, and the next save that works lifts it.
    #[test]
    fn a_failed_save_stops_writes_until_one_succeeds() {
        let (ts, host) = TestServer::with_host();
        host.mkdir("/data");
        ts.srv.config.set("dir", "/data", true).expect("valid");
        let mut c = ts.client();
        for line in ["CONFIG SET save \"1 1\"", "SET k v"] {
            assert_eq!(c.run(line), "+OK");
        }
        host.disk_full.store(true, Ordering::Relaxed);
        assert_eq!(c.run("BGSAVE"), "+Background saving started");
        assert!(c.run("INFO persistence").contains("rdb_last_bgsave_status:err"));
        assert!(c.run("SET k w").starts_with("-MISCONF Redis is configured to save RDB snapshots"));
        assert!(c.run("PING").starts_with("-MISCONF"));
        assert_eq!(c.run("GET k"), "\"v\"");
        // Within 5 seconds of the failure the cron does not try again.
        ts.clock.advance_ms(2000);
        assert!(!ts.srv.save_cron());
        host.disk_full.store(false, Ordering::Relaxed);
        ts.clock.advance_ms(5000);
        assert!(ts.srv.save_cron(), "the save point is due and the retry delay over");
        assert_eq!(c.run("SET k w"), "+OK");
        assert!(c.run("INFO persistence").contains("rdb_changes_since_last_save:1"));
        // Without save points there is nothing to protect: writes go on after a failure.
        host.disk_full.store(true, Ordering::Relaxed);
        assert_eq!(c.run("CONFIG SET save \"\""), "+OK");
        assert_eq!(c.run("BGSAVE"), "+Background saving started");
        assert_eq!(c.run("SET k x"), "+OK");
    }

    /// The AOF writer could not write: writes and PING get Redis's AOF MISCONF, reads go on, and
    /// once a write succeeds everything is accepted again.
    #[test]
    fn a_failed_aof_write_stops_writes_until_one_succeeds() {
        let ts = TestServer::new();
        let mut c = ts.client();
        assert_eq!(c.run("SET k v"), "+OK");
        let p = &ts.srv.persistence;
        *p.aof_last_error.lock() = "No space left on device".into();
        p.aof_write_failed.store(true, Ordering::SeqCst);
        assert_eq!(c.run("SET k w"), "+OK", "no AOF, nothing to refuse");
        ts.srv.aof_start();
        let misconf = "-MISCONF Errors writing to the AOF file: No space left on device";
        assert_eq!(c.run("SET k w"), misconf);
        assert_eq!(c.run("PING"), misconf);
        assert_eq!(c.run("GET k"), "\"w\"");
        assert_eq!(c.run("MULTI"), "+OK");
        assert_eq!(c.run("INCR n"), misconf);
        assert_eq!(c.run("EXEC"), "-EXECABORT Transaction discarded because of previous errors.");
        p.aof_write_failed.store(false, Ordering::SeqCst);
        assert_eq!(c.run("SET k w"), "+OK");
    }

    #[test]
    fn save_and_reload_round_trip_in_memory() {
        let (ts, host) = TestServer::with_host();
        host.mkdir("/data");
        ts.srv.config.set("enable-debug-command", "yes", true).expect("valid");
        ts.srv.config.set("dir", "/data", true).expect("valid");
        let mut c = ts.client();
        for line in ["RPUSH l a b 1", "SET s v PX 100000", "LOCK lk me 60000", "SAVE"] {
            assert!(!c.run(line).starts_with('-'), "{line}");
        }
        let digest = c.run("DEBUG DIGEST");
        assert_eq!(c.run("DEBUG RELOAD"), "+OK");
        assert_eq!(c.run("DEBUG DIGEST"), digest);
        assert_eq!(c.run("DEBUG RELOAD NOSAVE NOFLUSH"), "-ERR Error trying to load the RDB dump, check server logs.");
        assert_eq!(c.run("DEBUG RELOAD NOSAVE NOFLUSH MERGE"), "+OK");
        assert_eq!(c.run("DEBUG DIGEST"), digest);
        assert!(c.run("LASTSAVE").starts_with(':'));
    }
}
