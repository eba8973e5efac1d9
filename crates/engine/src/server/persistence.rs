//! RDB files and the AOF in the composition: which parts of the server go into a file (the
//! keyspace, function libraries, the fencing counter, the replication ids) and come back from
//! one, saves on schedule, and the AOF replayed through dispatch. The file format and the
//! fork-less snapshot writer are `crate::persistence`'s.

use super::Server;
use crate::persistence::*;
use crate::rdb::{self, AccessField, Reader, RecordSpec};
use crate::value::{Entry, Value};
use rdb::op;
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;

impl Server {
    /// How records are written by a snapshot taken now.
    fn record_spec(&self, commands: bool) -> RecordSpec {
        let policy = self.config.policy();
        RecordSpec {
            compress: self.config.rdbcompression.load(Ordering::Relaxed),
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
            progress: Arc::default(),
        }
    }

    /// What a file starts with, from this server's state now (see [`header`]). Taken with every
    /// shard held, with the snapshot's instant.
    fn rdb_header(&self, kind: SnapshotKind) -> Vec<u8> {
        let libraries = self.scripting.library_codes();
        header(
            kind,
            &HeaderFields {
                unix_s: self.clock.unix_ms() / 1000,
                used_mem: self.config.host().used_memory(),
                fence: self.fence.load(Ordering::SeqCst),
                aof_timestamps: self.config.aof_timestamps.load(Ordering::Relaxed),
                libraries: &libraries,
                repl: self.repl.active().then(|| (self.repl_stream_db(), self.repl.replid(), self.repl.offset())),
            },
        )
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
        let spec = self.record_spec(false);
        write_locked(locked, &spec, &self.rdb_header(SnapshotKind::Rdb), self.fence.load(Ordering::SeqCst), w)
    }

    /// Starts a background snapshot (BGSAVE, an AOF rewrite's base) while the caller holds every
    /// shard: the instant of the file is now, but nothing is copied (see
    /// [`crate::keyspace::Table::begin_snapshot`]); [`Snapshot::write`] then writes it from
    /// another thread while commands go on.
    pub fn begin_snapshot(&self, locked: &mut crate::keyspace::Locked<'_>, kind: SnapshotKind) -> Snapshot {
        self.persistence.snapshots.fetch_add(1, Ordering::Relaxed);
        let commands = kind == SnapshotKind::AofBaseCommands;
        let spec = self.record_spec(commands);
        *self.persistence.progress.lock() = Some(spec.progress.clone());
        let header = self.rdb_header(kind);
        Snapshot::begin(self.ks.clone(), locked, spec, header, self.fence.load(Ordering::SeqCst), commands)
            .with_key_delay(self.config.get_i64("rdb-key-save-delay"))
    }

    /// Takes the one snapshot slot for a background snapshot of a consumer of its own (a
    /// consensus node's log compaction) while the caller holds every shard: the snapshot of this
    /// instant and the slot (let go when dropped), or None while another snapshot runs.
    pub fn claim_snapshot(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
    ) -> Option<(Snapshot, crate::persistence::ReplSnapshot)> {
        if self.persistence.snapshot_busy() {
            return None;
        }
        self.persistence.repl_snapshot.store(true, Ordering::SeqCst);
        let slot = crate::persistence::ReplSnapshot(self.persistence.clone());
        Some((self.begin_snapshot(locked, SnapshotKind::Rdb), slot))
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

    /// The load of a file all at hand; with `yields` (loading at startup, no command holding the
    /// locks), every shard is let go now and then, see [`Server::rdb_load_from`].
    fn rdb_load_inner(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        data: &[u8],
        merge: bool,
        yields: bool,
    ) -> Result<Loaded, String> {
        let opts = LoadOptions { merge, yields, ..LoadOptions::default() };
        self.rdb_load_from(locked, &mut rdb::SliceInput(data), opts)
    }

    /// Loads an RDB file from `input` into the keyspace `locked` holds (every shard of it: this
    /// server's, or a keyspace of its own a replica loads aside, see [`Keyspace::sibling`]).
    /// With `yields`, every shard is let go now and then (every [`LOAD_YIELD_KEYS`] keys, and
    /// while waiting for more of a file that is arriving), as Redis processes events while it
    /// loads: INFO and the other commands that may run while loading answer meanwhile, the rest get
    /// -LOADING. Records are parsed from the input's window; one the window ends inside is parsed
    /// again once the window holds twice as much (or all there is), so a file arriving in pieces
    /// costs a bounded number of passes over each byte.
    ///
    /// [`Keyspace::sibling`]: crate::keyspace::Keyspace::sibling
    pub fn rdb_load_from(
        &self,
        locked: &mut crate::keyspace::Locked<'_>,
        input: &mut dyn rdb::Input,
        mut opts: LoadOptions<'_>,
    ) -> Result<Loaded, String> {
        assert!(locked.is_all(), "loading needs every shard");
        let yields = opts.yields;
        // More of the input: the locks are let go meanwhile when the load yields.
        let more = |locked: &mut crate::keyspace::Locked<'_>, input: &mut dyn rdb::Input, want: usize| {
            if yields { locked.unlocked(|| input.more(want)) } else { input.more(want) }
        };
        let short = |input: &dyn rdb::Input, at: usize| {
            let mut e = SHORT_READ.to_string();
            if input.arriving() {
                // Redis's rdbReportReadError on a connection: logged, and the replica goes on.
                e.push_str(&format!(
                    "\nInternal error in RDB reading offset {at} -> Unexpected EOF reading RDB file. Failure loading rdb format from socket, assuming connection error, resuming operation."
                ));
            }
            e
        };
        while input.window().len() < 9 && more(locked, input, 9) {}
        let head = input.window();
        if head.len() < 9 || &head[..5] != b"REDIS" {
            if input.arriving() && b"REDIS".starts_with(&head[..head.len().min(5)]) {
                return Err(short(input, 0));
            }
            return Err("Wrong signature trying to load DB from file".into());
        }
        let version: u32 = std::str::from_utf8(&head[5..9])
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or("Wrong signature trying to load DB from file")?;
        if !(1..=u32::from(rdb::RDB_VERSION)).contains(&version) {
            return Err(format!("Can't handle RDB format version {version}"));
        }
        let mut crc = rdb::Crc64::default();
        crc.update(&head[..9]);
        input.consume(9);
        let mut st = LoadState {
            now: self.clock.now_ms(),
            offset: self.clock.wall_offset_ms(),
            ndbs: locked.keyspace().ndbs(),
            // DEBUG's `key-load-delay`: microseconds to wait after each key (tests of loading).
            delay: self.config.get_i64("key-load-delay"),
            // Redis sanitizes a file's values deeply only with `sanitize-dump-payload yes`.
            checks: rdb::Checks {
                deep: self.config.sanitize_dump_payload() == crate::config::Sanitize::Yes,
                limits: self.config.encoding_limits(),
            },
            with_ttl: 0,
            loaded: Loaded::default(),
            db: 0,
            expire_at: None,
            lfu: None,
            idle: None,
            at: 9,
        };
        let mut yielded = 0;
        loop {
            let window = input.window();
            let wlen = window.len();
            let mut r = Reader::new(window).with_checks(st.checks);
            let step = self.load_record(&mut r, &mut st, locked, &mut opts);
            if r.ran_out() {
                // The record goes on past the window: again, with more of the file.
                if more(locked, input, wlen.saturating_mul(2).max(wlen + 64)) {
                    continue;
                }
                return Err(short(input, st.at));
            }
            let n = wlen - r.rest().len();
            let eof = step?;
            crc.update(&window[..n]);
            input.consume(n);
            st.at += n;
            if eof {
                break;
            }
            if yields && st.loaded.keys >= yielded + LOAD_YIELD_KEYS {
                yielded = st.loaded.keys;
                locked.relock_all();
            }
        }
        // The checksum covers everything before it; 0 means the writer did not compute one.
        if version >= 5 {
            while input.window().len() < 8 && more(locked, input, 8) {}
            let Some(tail) = input.window().get(..8) else {
                return Err(short(input, st.at));
            };
            let stored = u64::from_le_bytes(tail.try_into().expect("eight bytes"));
            input.consume(8);
            let checked = self.config.get("rdbchecksum").as_deref() != Some("no");
            let actual = crc.finish();
            if checked && stored != 0 && actual != stored {
                // Redis logs both lines (the second from rdbReportCorruptRDB).
                return Err(format!(
                    "Wrong RDB checksum expected: ({stored:x}) got: ({actual:x}). Aborting now.\nInternal error in RDB reading offset {} -> RDB CRC error",
                    st.at
                ));
            }
            st.at += 8;
        }
        let mut loaded = st.loaded;
        if loaded.repl.as_ref().is_some_and(|r| r.0.is_empty()) {
            loaded.repl = None;
        }
        loaded.bytes = st.at;
        self.persistence.last_load_keys.store(loaded.keys + loaded.locks, Ordering::Relaxed);
        self.persistence.last_load_expired.store(loaded.expired, Ordering::Relaxed);
        Ok(loaded)
    }

    /// One record of a file (an opcode and what it carries) from `r`: true at the end of the file.
    /// Nothing changes before the whole record was read, so a record the window ended inside is
    /// read again from its start.
    fn load_record(
        &self,
        r: &mut Reader<'_>,
        st: &mut LoadState,
        locked: &mut crate::keyspace::Locked<'_>,
        opts: &mut LoadOptions<'_>,
    ) -> Result<bool, String> {
        let short = || SHORT_READ.to_string();
        let (now, offset, ndbs) = (st.now, st.offset, st.ndbs);
        let t = r.byte().map_err(|_| short())?;
        match t {
            op::EOF => return Ok(true),
            op::SELECTDB => {
                let n = r.length().map_err(|_| short())?;
                if n >= ndbs as u64 {
                    return Err(format!(
                        "FATAL: Data file was created with a Redis server configured to handle more than {ndbs} databases. Exiting"
                    ));
                }
                st.db = n as usize;
            }
            op::RESIZEDB => {
                r.length().map_err(|_| short())?;
                r.length().map_err(|_| short())?;
            }
            op::EXPIRETIME_MS => {
                let b = r.bytes(8).map_err(|_| short())?;
                st.expire_at = Some(i64::from_le_bytes(b.try_into().map_err(|_| short())?));
            }
            op::EXPIRETIME => {
                let b = r.bytes(4).map_err(|_| short())?;
                st.expire_at = Some(i64::from(i32::from_le_bytes(b.try_into().map_err(|_| short())?)) * 1000);
            }
            op::FREQ => st.lfu = Some(r.byte().map_err(|_| short())?),
            op::IDLE => st.idle = Some(r.length().map_err(|_| short())?),
            op::AUX => {
                let k = r.string().map_err(|_| short())?;
                let v = r.string().map_err(|_| short())?;
                let loaded = &mut st.loaded;
                let text = || std::str::from_utf8(&v).ok().map(str::to_string);
                match &k[..] {
                    b"repl-id" => {
                        if let Some(id) = text().filter(|id| id.len() == 40) {
                            loaded.repl.get_or_insert_with(|| (String::new(), 0, 0)).0 = id;
                        }
                    }
                    b"repl-offset" => {
                        if let Some(o) = text().and_then(|o| o.parse::<u64>().ok()) {
                            loaded.repl.get_or_insert_with(|| (String::new(), 0, 0)).1 = o;
                        }
                    }
                    b"repl-stream-db" => {
                        if let Some(d) = text().and_then(|d| d.parse::<usize>().ok()).filter(|&d| d < ndbs) {
                            loaded.repl.get_or_insert_with(|| (String::new(), 0, 0)).2 = d;
                        }
                    }
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
                            let e = Entry::new(Value::Lock(Box::new(lock)));
                            locked.shard_for(&key).dbs[ldb].insert(&key, e, mono.unwrap_or(0) as u64);
                            loaded.locks += 1;
                        }
                    }
                    _ => {}
                }
            }
            op::FUNCTION2 => {
                let code = r.string().map_err(|_| short())?;
                let code = bytes::Bytes::copy_from_slice(&code);
                if let Some(codes) = opts.libraries.as_deref_mut() {
                    // Compiled now for the error, installed by the caller once the file loaded.
                    self.scripting.compile_library(&code).map_err(|e| format!("Failed loading library: {e}"))?;
                    codes.push(code);
                } else {
                    let lib =
                        self.scripting.compile_library(&code).map_err(|e| format!("Failed loading library: {e}"))?;
                    self.scripting
                        .install_libraries(vec![lib], opts.merge)
                        .map_err(|e| format!("Failed loading library: {e}"))?;
                }
                st.loaded.libraries += 1;
            }
            op::FUNCTION => return Err("Pre-release function format not supported.".into()),
            op::MODULE_AUX => return Err("Latch cannot load module data (RDB module AUX field).".into()),
            t => {
                let key = r.string().map_err(|_| short())?;
                let at_offset = st.at + r.consumed();
                let db = st.db;
                let loaded = &mut st.loaded;
                let value = match r.value(t) {
                    Ok(Value::Damaged(d)) => {
                        for line in rdb::crash_report(&d.what, d.panic) {
                            self.config.host().log(crate::host::LogLevel::Warning, &line);
                        }
                        Value::Damaged(d)
                    }
                    Ok(v) => v,
                    Err(_) if r.ran_out() => return Err(short()),
                    Err(rdb::DecodeError::EmptyKey) => {
                        // Redis skips empty aggregates in a file, with a log line for the first ten.
                        if loaded.empty_skipped < 10 {
                            self.config.host().log(
                                crate::host::LogLevel::Warning,
                                &format!("rdbLoadObject skipping empty key: {}", String::from_utf8_lossy(&key)),
                            );
                        }
                        loaded.empty_skipped += 1;
                        (st.expire_at, st.lfu, st.idle) = (None, None, None);
                        return Ok(false);
                    }
                    Err(rdb::DecodeError::Unsupported(ty)) => {
                        return Err(format!(
                            "Latch cannot load key '{}' in database {db}: it holds a Redis {ty}, a type Latch does not have",
                            String::from_utf8_lossy(&key)
                        ));
                    }
                    Err(rdb::DecodeError::Corrupt(msg)) => {
                        // Redis then runs redis-check-rdb on the file, which reports the same
                        // error with what it was reading.
                        let error = format!("Internal error in RDB reading offset {at_offset} -> {msg}");
                        let report = [
                            error.clone(),
                            "--- RDB ERROR DETECTED ---".to_string(),
                            format!("[offset {at_offset}] {error}"),
                            "[additional info] While doing: read-object-value".to_string(),
                            format!("[additional info] Reading key '{}'", String::from_utf8_lossy(&key)),
                            format!("[additional info] Reading type {t} ({})", rdb::type_name(t)),
                            format!("[info] {} keys read", loaded.keys + loaded.expired + 1),
                            format!("[info] {} expires", st.with_ttl),
                            format!("[info] {} already expired", loaded.expired),
                        ];
                        return Err(report.join("\n"));
                    }
                    Err(rdb::DecodeError::Fatal { what, panic }) => {
                        return Err(rdb::crash_report(&what, panic).join("\n"));
                    }
                    Err(rdb::DecodeError::BadFormat) => return Err(short()),
                };
                let at = st.expire_at.take();
                st.with_ttl += usize::from(at.is_some());
                let (f, i) = (st.lfu.take(), st.idle.take());
                let mono = at.map(|a| a.saturating_sub(offset));
                // Expired when the deadline is before now, as everywhere (Redis's `expiretime < now`).
                if !opts.replica && mono.is_some_and(|m| m < now as i64) {
                    loaded.expired += 1;
                    if loaded.repl.is_some() {
                        loaded.expired_keys.push((db, bytes::Bytes::copy_from_slice(&key)));
                    }
                    return Ok(false);
                }
                let mut e = Entry::new(value);
                let now_s = (now / 1000) as u32;
                e.set_atime(now_s);
                if let Some(f) = f {
                    e.set_lfu(f);
                }
                if let Some(i) = i {
                    e.set_atime(now_s.wrapping_sub(i.min(u64::from(u32::MAX)) as u32));
                }
                let t = &mut locked.shard_for(&key).dbs[db];
                if !opts.merge && t.lookup(&key, now).is_some() {
                    return Err(format!("Duplicate key '{}' in RDB file", String::from_utf8_lossy(&key)));
                }
                t.insert(&key, e, mono.map_or(0, |m| m as u64));
                loaded.keys += 1;
                if st.delay > 0 {
                    std::thread::sleep(std::time::Duration::from_micros(st.delay as u64));
                }
            }
        }
        Ok(false)
    }

    /// Changes since the last successful save (`rdb_changes_since_last_save`).
    pub fn changes_since_save(&self) -> u64 {
        self.stats.dirty().saturating_sub(self.persistence.dirty_at_save.load(Ordering::SeqCst))
    }
}

/// Redis's line for a file that ends too soon (`rdbLoadRio`'s `eoferr`).
const SHORT_READ: &str = "Short read or OOM loading DB. Unrecoverable error, aborting now.";

/// What a load keeps track of from one record to the next.
struct LoadState {
    now: u64,
    /// Wall-clock minus monotonic time: a file's absolute deadlines to the keyspace's timeline.
    offset: i64,
    ndbs: usize,
    /// `key-load-delay`, microseconds.
    delay: i64,
    checks: rdb::Checks,
    /// Keys with a deadline read so far (the checker's report counts them).
    with_ttl: usize,
    loaded: Loaded,
    /// The database records go to (`SELECTDB`).
    db: usize,
    /// What the opcodes before a key said of it.
    expire_at: Option<i64>,
    lfu: Option<u8>,
    idle: Option<u64>,
    /// Bytes of the file read before the current record.
    at: usize,
}

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
        if self.persistence.repl_snapshot.load(Ordering::SeqCst) {
            return Err("ERR Background save already in progress");
        }
        self.persistence.bgsave_in_progress.store(true, Ordering::SeqCst);
        let dirty = self.stats.dirty();
        self.persistence.bgsave_cancel.store(false, Ordering::SeqCst);
        let snapshot = self.begin_snapshot(locked, SnapshotKind::Rdb);
        let progress = self.persistence.progress.lock().clone();
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
            let copied = progress.as_ref().map_or(0, |p| p.copied_bytes.load(Ordering::Relaxed));
            state.last_cow_bytes.store(copied, Ordering::SeqCst);
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
        if p.bgsave_in_progress.load(Ordering::SeqCst) || p.repl_snapshot.load(Ordering::SeqCst) {
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
        if self.persistence.bgsave_in_progress.load(Ordering::SeqCst)
            || self.persistence.repl_snapshot.load(Ordering::SeqCst)
        {
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
