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
use crate::rdb::{self, Crc64, RecordSpec, Writer};
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
    /// A shutdown waiting for replicas (see `server/shutdown.rs`).
    pub shutdown: parking_lot::Mutex<ShutdownPhase>,
    /// The AOF is being turned on: its first rewrite has not finished (Redis's
    /// `AOF_WAIT_REWRITE`; a shutdown cannot finish then without FORCE).
    pub aof_starting: AtomicBool,
    /// `CONFIG SET appendonly no` turned the AOF off while its rewrite ran, since the AOF writer's
    /// cron last looked: the cron stops that rewrite (Redis's stopAppendOnly kills its child).
    pub aof_turned_off: AtomicBool,
    /// A replica's full sync is writing its snapshot (see [`ReplSnapshot`]).
    pub repl_snapshot: AtomicBool,
    /// Background snapshots begun since startup (INFO's `total_forks`: Latch's stand-in for a fork).
    pub snapshots: AtomicU64,
    /// AOF rewrites done since startup.
    pub aof_rewrites: AtomicU64,
    /// The last write to the AOF failed.
    pub aof_write_failed: AtomicBool,
    /// Why it failed (Redis's `strerror`), for MISCONF.
    pub aof_last_error: parking_lot::Mutex<String>,
    /// BGSAVE SCHEDULE asked for a save while a rewrite ran: the cron starts it after.
    pub bgsave_scheduled: AtomicBool,
    /// The running snapshot's progress (INFO's `current_save_keys_*`, `current_cow_size`).
    pub progress: parking_lot::Mutex<Option<Arc<rdb::SnapshotProgress>>>,
    /// What stood for copy-on-write in the last background save (`rdb_last_cow_size`): bytes of
    /// records written ahead of its walk.
    pub last_cow_bytes: AtomicU64,
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

/// SHUTDOWN's options (and `shutdown-on-sigterm` / `shutdown-on-sigint`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShutdownFlags {
    /// Save even without save points.
    pub save: bool,
    /// Do not save.
    pub nosave: bool,
    /// Do not wait for lagging replicas.
    pub now: bool,
    /// Exit even if saving fails.
    pub force: bool,
}

impl ShutdownFlags {
    /// `shutdown-on-sigterm` / `shutdown-on-sigint`: `default`, or some of `save`, `nosave`,
    /// `now`, `force`.
    pub fn from_config(v: &str) -> ShutdownFlags {
        let mut f = ShutdownFlags::default();
        for w in v.split_whitespace() {
            match w.to_ascii_lowercase().as_str() {
                "save" => f.save = true,
                "nosave" => f.nosave = true,
                "now" => f.now = true,
                "force" => f.force = true,
                _ => {}
            }
        }
        f
    }
}

/// Where a shutdown is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShutdownPhase {
    /// None asked for, or the last one failed or was aborted.
    #[default]
    Idle,
    /// Waiting for the replicas until `deadline` (monotonic ms).
    Waiting {
        /// When the wait ends regardless.
        deadline: u64,
        /// The options it was asked with.
        flags: ShutdownFlags,
    },
    /// Finished: the process exits.
    Exiting,
}

/// What asking for a shutdown did.
#[derive(Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// It finished: the process exits.
    Exiting,
    /// It waits for replicas (or another one does already).
    Waiting,
    /// It could not finish (logged); the server goes on.
    Failed,
}

/// BGSAVE while an AOF rewrite runs, without SCHEDULE (Redis's text).
pub const BGSAVE_BUSY: &str = "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.";

/// Keys loaded between two moments a startup load lets the shards go.
pub const LOAD_YIELD_KEYS: u64 = 1024;

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
/// The server's state a file's header records (see [`header`]).
pub struct HeaderFields<'a> {
    /// `ctime`.
    pub unix_s: i64,
    /// `used-mem`.
    pub used_mem: u64,
    /// The fencing counter (`latch-fence`, an AUX field Redis skips).
    pub fence: u64,
    /// `aof-timestamp-enabled`: a commands-only AOF base starts with a `#TS:` annotation.
    pub aof_timestamps: bool,
    /// The function libraries' code.
    pub libraries: &'a [bytes::Bytes],
    /// The replication stream this file is a point of: the database its next command applies to,
    /// the replication id and the offset (`repl-stream-db`, `repl-id`, `repl-offset`), as a primary
    /// with a backlog writes them.
    pub repl: Option<(usize, String, u64)>,
}

/// What a file of `kind` starts with: the signature, AUX fields and function libraries (an RDB or
/// an AOF base with an RDB preamble), or the libraries as FUNCTION LOAD commands (an AOF base
/// without preamble, after Redis's timestamp annotation when enabled).
pub fn header(kind: SnapshotKind, f: &HeaderFields<'_>) -> Vec<u8> {
    let mut w = Writer::new(false);
    if kind == SnapshotKind::AofBaseCommands {
        if f.aof_timestamps {
            w.buf.extend_from_slice(format!("#TS:{}\r\n", f.unix_s).as_bytes());
        }
        for code in f.libraries {
            crate::changes::encode_command(&mut w.buf, &[&b"FUNCTION"[..], b"LOAD", code]);
        }
        return w.buf;
    }
    let aof_base = kind == SnapshotKind::AofBaseRdb;
    w.buf.extend_from_slice(format!("REDIS{:04}", rdb::RDB_VERSION).as_bytes());
    aux(&mut w, b"redis-ver", crate::version::REDIS_VERSION.as_bytes());
    aux(&mut w, b"redis-bits", b"64");
    aux(&mut w, b"ctime", f.unix_s.to_string().as_bytes());
    aux(&mut w, b"used-mem", f.used_mem.to_string().as_bytes());
    if let Some((db, id, offset)) = &f.repl {
        aux(&mut w, b"repl-stream-db", db.to_string().as_bytes());
        aux(&mut w, b"repl-id", id.as_bytes());
        aux(&mut w, b"repl-offset", offset.to_string().as_bytes());
    }
    aux(&mut w, b"aof-base", if aof_base { b"1" } else { b"0" });
    aux(&mut w, b"latch-fence", f.fence.to_string().as_bytes());
    for code in f.libraries {
        w.buf.push(op::FUNCTION2);
        w.string(code);
    }
    w.buf
}

/// Writes the dataset as an RDB file to `w` while the caller holds every shard (one point in
/// time): `header`, the records by `spec`, then the fencing counter and the trailer. Only the
/// current chunk is in memory besides the data. It does not disturb a background snapshot that
/// may be running.
pub fn write_locked(
    locked: &mut crate::keyspace::Locked<'_>,
    spec: &RecordSpec,
    header: &[u8],
    fence: u64,
    w: &mut dyn Write,
) -> io::Result<()> {
    assert!(locked.is_all(), "a snapshot needs every shard");
    let ndbs = locked.shard(0).dbs.len();
    let mut out = CrcWrite::new(w);
    out.write_all(header)?;
    let mut file = FileBody::new(locked);
    let (mut rec, mut scratch) = (Writer::new(spec.compress), Writer::new(spec.compress));
    let mut buf = Vec::new();
    for db in 0..ndbs {
        for s in locked.shards_mut() {
            let t = &s.dbs[db];
            for (k, e) in t.iter() {
                rdb::write_record(spec, db, k, e, t.deadline(e).unwrap_or(0), &mut rec, &mut scratch);
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
    file.end(fence, &mut buf);
    out.write_all(&buf)?;
    out.finish()
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
    /// `rdb-key-save-delay`: microseconds the writer waits per key its walk reaches (tests slow a
    /// save down so); negative, 1 µs once in that many keys (Redis's `debugDelay`).
    key_delay_us: i64,
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
    /// Starts a background snapshot of `ks` (BGSAVE, an AOF rewrite's base) while the caller holds
    /// every shard (`locked`): the instant of the file is now, but nothing is copied (see
    /// [`crate::keyspace::Table::begin_snapshot`]); [`Snapshot::write`] then writes it from
    /// another thread while commands go on. `commands`: records as commands (an AOF base without
    /// preamble).
    pub fn begin(
        ks: Arc<Keyspace>,
        locked: &mut crate::keyspace::Locked<'_>,
        spec: RecordSpec,
        header: Vec<u8>,
        fence: u64,
        commands: bool,
    ) -> Snapshot {
        assert!(locked.is_all(), "a snapshot needs every shard");
        let spec = Arc::new(spec);
        let keys: usize = locked.shards_mut().map(|s| s.dbs.iter().map(|t| t.len()).sum::<usize>()).sum();
        spec.progress.keys_total.store(keys as u64, Ordering::Relaxed);
        let mut body = FileBody::new(locked);
        body.commands = commands;
        // Every table has the same epoch; the snapshot's is the next one.
        let epoch = locked.shard(0).dbs[0].snapshot_epoch() ^ 1;
        for s in locked.shards_mut() {
            for (db, t) in s.dbs.iter_mut().enumerate() {
                t.begin_snapshot(spec.clone(), db, epoch);
            }
        }
        Snapshot { ks, header, body, fence, visits: VISITS_PER_STEP, chunk: CHUNK_BYTES, ended: false, key_delay_us: 0 }
    }
}

impl Snapshot {
    /// Walks at most `visits` positions and about `chunk` bytes per lock of a shard (tests walk in
    /// small steps so that commands run between many of them).
    pub fn with_steps(mut self, visits: usize, chunk: usize) -> Snapshot {
        (self.visits, self.chunk) = (visits.max(1), chunk.max(1));
        self
    }

    /// `rdb-key-save-delay`: with a delay, the walk takes one key per lock of a shard and waits
    /// after each, without holding any lock (commands go on, as they do beside Redis's child).
    pub fn with_key_delay(mut self, us: i64) -> Snapshot {
        self.key_delay_us = us;
        if us != 0 {
            (self.visits, self.chunk) = (1, 1);
        }
        self
    }

    /// Waits as `rdb-key-save-delay` asks after the walk reached `keys` more keys; a cancelled save
    /// stops waiting at once, as Redis's killed child does.
    fn key_delay(&self, keys: u64, cancel: &AtomicBool) {
        let us = match self.key_delay_us {
            0 => return,
            d if d > 0 => d as u64 * keys,
            d => (0..keys).filter(|_| rand::random_range(0..d.unsigned_abs()) == 0).count() as u64,
        };
        let until = std::time::Instant::now() + std::time::Duration::from_micros(us);
        while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
            if left.is_zero() || cancel.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
        }
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
                return Err(io::Error::new(
                    io::ErrorKind::Interrupted,
                    "cancelled (a newer save, or the AOF turned off)",
                ));
            }
            let (done, visited) = self.step(i, true, &mut buf);
            // Per key the walk reaches, written ahead by a command or not: Redis's child pays
            // the delay for every key of its copy.
            self.key_delay(visited as u64, cancel);
            if done {
                left.remove(0);
            }
            steps += 1;
            // Old values that commands wrote in the other shards are taken now and then, so they
            // do not pile up while one large shard is walked.
            if steps.is_multiple_of(16) {
                for &j in left.iter().skip(1) {
                    let _ = self.step(j, false, &mut buf);
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
    /// tables into `buf`. True when the snapshot has ended in every table of the shard; and the
    /// keys the walk reached.
    fn step(&mut self, i: usize, walk: bool, buf: &mut Vec<u8>) -> (bool, usize) {
        let mut locked = self.ks.lock_shards(vec![i]);
        let shard = locked.shard(i);
        let mut done = true;
        let mut visited = 0;
        let mut budget = if walk { self.chunk } else { 0 };
        for t in shard.dbs.iter_mut() {
            if budget > 0 {
                visited += t.snapshot_step(self.visits, budget);
            }
            let body = &mut self.body;
            done &= t.snapshot_take(&mut |db, records| {
                budget = budget.saturating_sub(records.len());
                body.records(db, records, buf);
            });
        }
        (done, visited)
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

impl State {
    /// A snapshot runs (one at a time: the tables hold one snapshot's marks): a background save,
    /// an AOF rewrite, or a replica's full sync.
    pub fn snapshot_busy(&self) -> bool {
        self.bgsave_in_progress.load(Ordering::SeqCst)
            || self.aof_rewrite_in_progress.load(Ordering::SeqCst)
            || self.repl_snapshot.load(Ordering::SeqCst)
    }
}

/// A replica's full sync holds the one snapshot slot until this is dropped (its file written, or
/// its connection gone).
pub struct ReplSnapshot(pub Arc<State>);

impl Drop for ReplSnapshot {
    fn drop(&mut self) {
        self.0.repl_snapshot.store(false, Ordering::SeqCst);
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
    /// The replication history the file was saved in (`repl-id`, `repl-offset`,
    /// `repl-stream-db`): where a restarted server's replication goes on from.
    pub repl: Option<(String, u64, usize)>,
    /// Keys skipped because their TTL had passed, when the file recorded a replication history: a
    /// primary restarted from it propagates their deletion (its replicas still hold them).
    pub expired_keys: Vec<(usize, bytes::Bytes)>,
}

/// How [`crate::server::Server::rdb_load_from`] loads a file.
#[derive(Default)]
pub struct LoadOptions<'a> {
    /// A key or function library that exists already is replaced (else an error, Redis's loading
    /// without `RDBFLAGS_ALLOW_DUP`).
    pub merge: bool,
    /// Every shard is let go now and then, and while waiting for more of the file.
    pub yields: bool,
    /// A replica loads its primary's file: keys whose deadline passed are kept (the primary sends
    /// their deletion), as Redis skips them only when it is a primary.
    pub replica: bool,
    /// Function libraries are compiled and collected here, not installed (a replica loading aside
    /// installs them once the whole file loaded).
    pub libraries: Option<&'a mut Vec<bytes::Bytes>>,
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

    /// A file whose value fails its check: the error, then the report redis-check-rdb prints of it
    /// (Redis runs it on the file after a failed load; corrupt-dump's #3505 counts both lines).
    #[test]
    fn a_corrupt_value_in_a_file_is_reported_as_redis_check_rdb_does() {
        let ts = TestServer::new();
        let mut file = b"REDIS0010".to_vec();
        file.extend_from_slice(&[crate::rdb::op::SELECTDB, 0, crate::rdb::types::HASH_ZIPLIST, 1, b'k']);
        // A ziplist whose size field names more bytes than it has.
        file.extend_from_slice(&[11, 12, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0xFF]);
        file.push(crate::rdb::op::EOF);
        file.extend_from_slice(&[0; 8]);
        let err = ts.srv.rdb_load(&file).unwrap_err();
        let lines: Vec<&str> = err.lines().collect();
        assert!(lines[0].starts_with("Internal error in RDB reading offset "), "{err}");
        assert_eq!(lines.iter().filter(|l| l.contains("Hash ziplist integrity check failed.")).count(), 2, "{err}");
        assert!(lines.contains(&"--- RDB ERROR DETECTED ---"));
        assert!(lines.contains(&"[additional info] Reading key 'k'"));
        assert!(lines.contains(&"[additional info] Reading type 13 (hash-ziplist)"));
    }

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

    /// A file handed over in pieces of `piece` bytes as the load asks for more (a replica's
    /// primary's file arriving), cut at `cut` bytes when it is set.
    struct Pieces<'a> {
        data: &'a [u8],
        piece: usize,
        start: usize,
        have: usize,
        asked: usize,
    }

    impl crate::rdb::Input for Pieces<'_> {
        fn window(&self) -> &[u8] {
            &self.data[self.start..self.have]
        }
        fn consume(&mut self, n: usize) {
            self.start += n;
        }
        fn more(&mut self, want: usize) -> bool {
            self.asked += 1;
            let before = self.have;
            while self.have - self.start < want && self.have < self.data.len() {
                self.have = (self.have + self.piece).min(self.data.len());
            }
            self.have > before
        }
        fn arriving(&self) -> bool {
            true
        }
    }

    /// A dataset of every type, saved: the file and its digest.
    fn every_type_file() -> (Vec<u8>, String) {
        let ts = TestServer::new();
        ts.srv.config.set("enable-debug-command", "yes", true).expect("valid");
        let mut c = ts.client();
        let big = "x".repeat(70_000);
        for line in [
            "SET s v PX 100000".to_string(),
            format!("SET big {big}"),
            "RPUSH l a b 1".to_string(),
            "HSET h f v g 2".to_string(),
            "SADD st a b c".to_string(),
            "ZADD z 1 a 2.5 b".to_string(),
            "XADD x 1-1 f v".to_string(),
            "XGROUP CREATE x g 0".to_string(),
            "PFADD p a b c".to_string(),
            "LOCK lk me 60000".to_string(),
            "SELECT 3".to_string(),
            "SET other db".to_string(),
        ] {
            assert!(!c.run(&line).starts_with('-'), "{line}");
        }
        for i in 0..2000 {
            c.cmd(&["SADD", "many", &i.to_string()]);
        }
        let file = ts.srv.rdb_snapshot_locked(&mut ts.srv.ks.lock_all());
        let digest = c.run("DEBUG DIGEST");
        (file, digest)
    }

    /// A file arriving in pieces of any size loads as the whole file does, and each record is
    /// parsed a bounded number of times (the window doubles before a record is tried again).
    #[test]
    fn a_file_arriving_in_pieces_loads_as_the_whole_file_does() {
        let (file, digest) = every_type_file();
        for piece in [1, 7, 4096, file.len()] {
            let ts = TestServer::new();
            ts.srv.config.set("enable-debug-command", "yes", true).expect("valid");
            let mut input = Pieces { data: &file, piece, start: 0, have: 0, asked: 0 };
            let opts = super::LoadOptions { yields: true, ..Default::default() };
            let loaded = ts.srv.rdb_load_from(&mut ts.srv.ks.lock_all(), &mut input, opts).expect("loads");
            assert_eq!(loaded.bytes, file.len(), "piece {piece}");
            assert_eq!(ts.client().run("DEBUG DIGEST"), digest, "piece {piece}");
            // The 70,000-byte value takes ~17 doublings from one byte, not 70,000 tries.
            assert!(input.asked < 40 + 2 * loaded.keys as usize, "piece {piece}: asked {} times", input.asked);
        }
    }

    /// A file cut short while it arrives (the primary's connection lost): Redis's two lines for a
    /// short read on a socket, wherever the cut falls.
    #[test]
    fn a_file_cut_short_while_arriving_is_a_short_read() {
        let (file, _) = every_type_file();
        for cut in [0, 3, 9, 20, file.len() / 2, file.len() - 9, file.len() - 1] {
            let ts = TestServer::new();
            let mut input = Pieces { data: &file[..cut], piece: 5, start: 0, have: 0, asked: 0 };
            let err = ts.srv.rdb_load_from(&mut ts.srv.ks.lock_all(), &mut input, Default::default()).unwrap_err();
            let lines: Vec<&str> = err.lines().collect();
            assert_eq!(lines[0], "Short read or OOM loading DB. Unrecoverable error, aborting now.", "cut {cut}");
            assert!(lines[1].starts_with("Internal error in RDB reading offset "), "cut {cut}: {err}");
            assert!(lines[1].ends_with("Unexpected EOF reading RDB file. Failure loading rdb format from socket, assuming connection error, resuming operation."));
        }
    }

    /// A replica's load aside (`repl-diskless-load swapdb`): the old dataset stays until the whole
    /// file loaded, stays for good when it does not, and is replaced when it does.
    #[test]
    fn a_load_aside_keeps_the_old_dataset_until_the_file_is_whole() {
        let (file, digest) = every_type_file();
        let ts = TestServer::new();
        ts.srv.config.set("enable-debug-command", "yes", true).expect("valid");
        let mut c = ts.client();
        assert_eq!(c.run("SET old 1"), "+OK");
        let id = "a".repeat(40);
        let mut cut = Pieces { data: &file[..file.len() / 2], piece: 100, start: 0, have: 0, asked: 0 };
        assert!(ts.srv.load_full_sync(&mut cut, &id, 10, true).is_err());
        assert_eq!(c.run("GET old"), "\"1\"");
        assert_eq!(c.run("DBSIZE"), ":1");
        let mut whole = Pieces { data: &file, piece: 100, start: 0, have: 0, asked: 0 };
        ts.srv.load_full_sync(&mut whole, &id, 10, true).expect("loads");
        assert_eq!(c.run("GET old"), "(nil)");
        assert_eq!(c.run("DEBUG DIGEST"), digest);
        assert_eq!(ts.srv.repl.replid(), id);
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
