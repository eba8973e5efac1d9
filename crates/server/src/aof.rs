//! The append-only file, as Redis 7.0 keeps it: a directory (`appenddirname`) holding a base file (an
//! RDB, `<appendfilename>.<seq>.base.rdb`), an incr file of RESP commands
//! (`<appendfilename>.<seq>.incr.aof`) and the manifest naming them
//! (`file <name> seq <n> type b|i`). What goes into the incr file is the engine's change stream
//! (`engine::changes`): effects, with absolute expiries, as Redis propagates them.
//!
//! `appendfsync`: `everysec` syncs the incr file once a second from the cron, `no` leaves it to the
//! kernel, `always` makes every reply wait until its write is on disk. Replies of many clients share
//! one fdatasync (group commit): whoever syncs writes everything encoded so far, and a client whose
//! offset is already covered does not sync again.
//!
//! BGREWRITEAOF (and turning `appendonly` on) makes a new base from a snapshot taken with every shard
//! held, closes the incr file with the changes encoded before that instant, opens a new one, and
//! replaces the manifest atomically before removing the old files.

use engine::changes::AofEnd;
use engine::persistence::AofPart;
use engine::server::Server;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The AOF writer, shared by the cron, the connections (for `appendfsync always`) and its syncer
/// thread.
pub struct Aof {
    srv: Arc<Server>,
    files: parking_lot::Mutex<Option<Files>>,
    /// Offset of the change stream known to be on disk.
    synced: AtomicU64,
    /// The highest offset a connection waits for; the syncer thread sleeps until it passes `synced`.
    requested: parking_lot::Mutex<u64>,
    wake: parking_lot::Condvar,
    /// What the syncer made durable, for the connections awaiting it.
    done: tokio::sync::watch::Sender<u64>,
    /// A rewrite's thread runs.
    rewriting: std::sync::atomic::AtomicBool,
    /// The running rewrite is to stop (the AOF was turned off: Redis kills its child).
    cancel_rewrite: std::sync::atomic::AtomicBool,
    /// Offset of the change stream written to the file (not necessarily synced).
    written: AtomicU64,
    /// Connections that asked for a sync since the syncer last started one, and how many asked
    /// before that one (the batch it covered).
    arrivals: std::sync::atomic::AtomicUsize,
    last_batch: std::sync::atomic::AtomicUsize,
    /// The syncer waits for a batch to complete.
    batching: std::sync::atomic::AtomicBool,
}

/// The files of the AOF: what the manifest names, and the incr file open for appending.
struct Files {
    dir: PathBuf,
    name: String,
    /// The base file the manifest names, if any yet.
    base: Option<(String, u64)>,
    /// The incr files the manifest names, oldest first; the last one is `incr`.
    incrs: Vec<(String, u64)>,
    incr: File,
    /// Length of `incr` up to its last complete write: a write that fails half-way is cut back.
    len: u64,
    /// Encoded changes not written yet because the disk failed: written first, next time.
    unwritten: Vec<u8>,
    last_sync: Instant,
}

impl Files {
    /// Writes what waits; a failed write leaves the file as it was and keeps the bytes.
    fn write_unwritten(&mut self) -> std::io::Result<()> {
        if self.unwritten.is_empty() {
            return Ok(());
        }
        match self.incr.write_all(&self.unwritten) {
            Ok(()) => {
                self.len += self.unwritten.len() as u64;
                self.unwritten.clear();
                if self.unwritten.capacity() > 1 << 20 {
                    self.unwritten = Vec::new();
                }
                Ok(())
            }
            Err(e) => {
                // Redis's `flushAppendOnlyFile`: a partial write is removed with ftruncate, so the
                // file never ends inside a command.
                if let Err(t) = self.incr.set_len(self.len) {
                    tracing::warn!("Could not remove short write from the append-only file: {t}");
                }
                Err(e)
            }
        }
    }

    /// The manifest naming the base and incr files.
    fn manifest(&self) -> String {
        manifest_text(self.base.as_ref(), &self.incrs)
    }
}

fn dir_and_name(srv: &Server) -> (PathBuf, String) {
    let dir = Path::new(&srv.config.get("dir").unwrap_or_else(|| ".".into()))
        .join(srv.config.get("appenddirname").unwrap_or_else(|| "appendonlydir".into()));
    (dir, srv.config.get("appendfilename").unwrap_or_else(|| "appendonly.aof".into()))
}

fn manifest_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.manifest"))
}

/// A manifest: a line per file, the base first; a name that needs quoting is quoted as Redis's
/// `sdscatrepr` quotes it (an `appendfilename` with spaces).
fn manifest_text(base: Option<&(String, u64)>, incrs: &[(String, u64)]) -> String {
    let quoted = |n: &str| {
        let plain = n.bytes().all(|c| c.is_ascii_graphic() && c != b'\\' && c != b'"');
        if plain { n.to_string() } else { engine::args::repr(n.as_bytes()) }
    };
    let mut m = String::new();
    for (file, seq, kind) in base.map(|(f, s)| (f, s, 'b')).into_iter().chain(incrs.iter().map(|(f, s)| (f, s, 'i'))) {
        m += &format!("file {} seq {seq} type {kind}\n", quoted(file));
    }
    m
}

/// A manifest entry: file name, sequence number, type (`b`, `i`, `h`).
type Entry = (String, u64, char);

/// The manifest's files to load: (file name, seq, type), base first then incr files in order, with
/// Redis's checks and error texts (`aofLoadManifestFromFile`); history entries are skipped.
fn parse_manifest(text: &str) -> Result<Vec<Entry>, String> {
    const MAX_LINE: usize = 1024;
    let fail = |n: usize, line: &str, err: &str| {
        tracing::warn!("\n*** FATAL AOF MANIFEST FILE ERROR ***\n");
        if n > 0 {
            tracing::warn!("Reading the manifest file, at line {n}\n");
            tracing::warn!(">>> '{line}'\n");
        }
        // The error itself is logged once, by the caller that gives up starting.
        Err(err.to_string())
    };
    if text.is_empty() {
        return fail(0, "", "Found an empty AOF manifest");
    }
    let (mut base, mut incr): (Option<Entry>, Vec<Entry>) = (None, Vec::new());
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let n = i + 1;
        if raw.starts_with('#') {
            continue;
        }
        if !raw.ends_with('\n') || raw.len() > MAX_LINE + 1 {
            return fail(n, raw, "The AOF manifest file contains too long line");
        }
        let line = raw.trim_matches([' ', '\t', '\r', '\n']);
        if line.is_empty() {
            return fail(n, line, "Invalid AOF manifest file format");
        }
        let Some(words) = resp::split_args(line.as_bytes()) else {
            return fail(n, line, "Invalid AOF manifest file format");
        };
        if words.len() < 6 || words.len() % 2 != 0 {
            return fail(n, line, "Invalid AOF manifest file format");
        }
        let (mut file, mut seq, mut kind) = (None, 0u64, None);
        for p in words.chunks(2) {
            let (k, v) =
                (String::from_utf8_lossy(&p[0]).to_ascii_lowercase(), String::from_utf8_lossy(&p[1]).into_owned());
            match k.as_str() {
                "file" => {
                    if v.contains('/') || v.contains('\\') {
                        return fail(n, line, "File can't be a path, just a filename");
                    }
                    file = Some(v);
                }
                "seq" => seq = engine::args::parse_i64_strict(v.as_bytes()).map_or(0, |s| s.max(0) as u64),
                "type" => kind = v.chars().next(),
                _ => {}
            }
        }
        let (Some(file), Some(kind)) = (file, kind) else {
            return fail(n, line, "Invalid AOF manifest file format");
        };
        if seq == 0 {
            return fail(n, line, "Invalid AOF manifest file format");
        }
        match kind {
            'b' if base.is_some() => return fail(n, line, "Found duplicate base file information"),
            'b' => base = Some((file, seq, 'b')),
            'h' => {}
            'i' => {
                if incr.last().is_some_and(|l| seq <= l.1) {
                    return fail(n, line, "Found a non-monotonic sequence number");
                }
                incr.push((file, seq, 'i'));
            }
            _ => return fail(n, line, "Unknown AOF file type"),
        }
    }
    Ok(base.into_iter().chain(incr).collect())
}

/// An io::Error's text without Rust's ` (os error N)` suffix: what C's strerror prints.
fn strip_os_code(s: &str) -> &str {
    s.split(" (os error").next().unwrap_or(s)
}

/// The files `manifest` names, read and parsed in loading order, with Redis's checks: a torn end
/// is allowed only at the end of the last incr file with `aof-load-truncated yes` (then the file
/// is cut there, as Redis cuts it).
fn read_parts(srv: &Server, dir: &Path, files: &[Entry]) -> Result<Vec<AofPart>, String> {
    let n_incr = files.iter().filter(|f| f.2 == 'i').count();
    let mut incr_seen = 0;
    let mut parts = Vec::new();
    for (file, _, kind) in files {
        let path = dir.join(file);
        let data = std::fs::read(&path)
            .map_err(|e| format!("The append log file {file} doesn't exist: {}", strip_os_code(&e.to_string())))?;
        match kind {
            'b' if data.starts_with(b"REDIS") => parts.push(AofPart::Rdb(data)),
            'b' | 'i' => {
                incr_seen += usize::from(*kind == 'i');
                let last = *kind == 'i' && incr_seen == n_incr;
                let d = engine::changes::decode_commands(&data);
                let allowed = srv.config.get("aof-load-truncated").as_deref() == Some("yes");
                match d.end {
                    AofEnd::Complete => {}
                    AofEnd::Bad => {
                        return Err(format!(
                            "Bad file format reading the append only file {file}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
                        ));
                    }
                    AofEnd::Truncated if !(last && allowed) => {
                        return Err(format!(
                            "Unexpected end of file reading the append only file {file}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
                        ));
                    }
                    AofEnd::Truncated => {
                        let good = d.good;
                        tracing::warn!("!!! Warning: short read while loading the AOF file {file}!!!");
                        tracing::warn!("!!! Truncating the AOF {file} at offset {good} !!!");
                        OpenOptions::new()
                            .write(true)
                            .open(&path)
                            .and_then(|f| f.set_len(good as u64))
                            .map_err(|e| format!("Error truncating the AOF file {file}: {e}"))?;
                        tracing::warn!("AOF {file} loaded anyway because aof-load-truncated is enabled");
                    }
                }
                parts.push(AofPart::Commands(d.commands));
            }
            _ => {}
        }
    }
    Ok(parts)
}

impl Aof {
    /// The writer for `srv`, off until [`Aof::start_at_boot`] or `appendonly yes`, with its syncer
    /// thread.
    pub fn new(srv: Arc<Server>) -> Arc<Aof> {
        let aof = Arc::new(Aof {
            srv,
            files: parking_lot::Mutex::new(None),
            synced: AtomicU64::new(0),
            requested: parking_lot::Mutex::new(0),
            wake: parking_lot::Condvar::new(),
            done: tokio::sync::watch::channel(0).0,
            rewriting: Default::default(),
            cancel_rewrite: Default::default(),
            written: AtomicU64::new(0),
            arrivals: Default::default(),
            last_batch: Default::default(),
            batching: Default::default(),
        });
        let weak = Arc::downgrade(&aof);
        let _ = aof.srv.persistence.aof_reader.set(Box::new(move || match weak.upgrade() {
            Some(aof) => aof.read_for_debug(),
            None => Err("the AOF writer is gone".into()),
        }));
        let syncer = aof.clone();
        std::thread::Builder::new()
            .name("latch-aof-sync".into())
            .spawn(move || syncer.sync_loop())
            .expect("AOF thread");
        aof
    }

    /// The syncer thread: whenever connections wait for an offset not yet on disk, writes and syncs
    /// everything encoded so far, which covers every connection that ran meanwhile (group commit).
    fn sync_loop(&self) {
        loop {
            let want = {
                let mut r = self.requested.lock();
                while *r <= self.synced.load(Ordering::SeqCst) {
                    self.wake.wait(&mut r);
                }
                // Group commit batched as Redis's event loop batches: the connections the last
                // sync released come back at about the same time. Until as many have asked as
                // last time (or 100 µs passed), wait: one sync then covers them all, instead of
                // one for the first and another for the rest. After a sync that released one
                // connection, nobody waits.
                let last = self.last_batch.load(Ordering::SeqCst);
                if last > 1 {
                    let until = Instant::now() + std::time::Duration::from_micros(100);
                    self.batching.store(true, Ordering::SeqCst);
                    while self.arrivals.load(Ordering::SeqCst) < last {
                        if self.wake.wait_until(&mut r, until).timed_out() {
                            break;
                        }
                    }
                    self.batching.store(false, Ordering::SeqCst);
                }
                self.last_batch.store(self.arrivals.swap(0, Ordering::SeqCst), Ordering::SeqCst);
                *r
            };
            self.write_pending(true, Some(want));
            if self.srv.persistence.aof_write_failed.load(Ordering::SeqCst) {
                // The disk failed: try again shortly, not in a busy loop.
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            if self.files.lock().is_none() {
                // The AOF was turned off meanwhile: nothing is left to make durable.
                self.synced.fetch_max(want, Ordering::SeqCst);
            }
            self.done.send_replace(self.synced.load(Ordering::SeqCst));
        }
    }

    /// At startup with `appendonly yes`: loads the AOF directory if there is one (instead of the RDB
    /// file, as Redis does), then starts appending. Err: the server must not start.
    pub fn start_at_boot(&self) -> Result<(), String> {
        let (dir, name) = dir_and_name(&self.srv);
        let manifest = manifest_path(&dir, &name);
        let mut files = match std::fs::read_to_string(&manifest) {
            Ok(text) => parse_manifest(&text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("Can't open the AOF manifest {}: {e}", manifest.display())),
        };
        // An AOF of a Redis before 7.0 (`appendfilename` in `dir`) becomes the base of a
        // multi-part one, in the three cases Redis's `loadAppendOnlyFiles` upgrades.
        let old = Path::new(&self.srv.config.get("dir").unwrap_or_else(|| ".".into())).join(&name);
        if old.is_file()
            && (!dir.is_dir()
                || files.is_empty()
                || (files.len() == 1 && files[0].2 == 'b' && files[0].0 == name && !dir.join(&name).exists()))
        {
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("Can't open or create append-only dir {}: {e}", dir.display()))?;
            files = vec![(name.clone(), 1, 'b')];
            self.srv
                .config
                .host()
                .write_durably(&manifest, manifest_text(Some(&(name.clone(), 1)), &[]).as_bytes())
                .map_err(|e| format!("Can't persist the AOF manifest: {e}"))?;
            std::fs::rename(&old, dir.join(&name))
                .map_err(|e| format!("Error trying to move the old AOF file {name} into dir {}: {e}", dir.display()))?;
            tracing::info!(
                "Successfully migrated an old-style AOF file ({name}) into the AOF directory ({}).",
                dir.display()
            );
        }
        if files.is_empty() {
            // No AOF yet: its first base is made from what is in memory (not counted as a rewrite).
            let suffix =
                if self.srv.config.get("aof-use-rdb-preamble").as_deref() == Some("no") { "aof" } else { "rdb" };
            tracing::info!("Creating AOF base file {name}.1.base.{suffix} on server start");
            return self.rewrite_inner();
        }
        for part in read_parts(&self.srv, &dir, &files)? {
            self.srv.aof_load_part(part)?;
        }
        tracing::info!("DB loaded from append only file");
        let base = files.iter().find(|f| f.2 == 'b').map(|f| (f.0.clone(), f.1));
        let mut incrs: Vec<(String, u64)> = files.iter().filter(|f| f.2 == 'i').map(|f| (f.0.clone(), f.1)).collect();
        if incrs.is_empty() {
            // A base alone (an upgraded AOF): appends go to a new incr file.
            incrs.push((format!("{name}.1.incr.aof"), 1));
        }
        let incr_name = incrs.last().expect("one at least").0.clone();
        let incr = OpenOptions::new()
            .append(true)
            .create(true)
            .open(dir.join(&incr_name))
            .map_err(|e| format!("Can't open the append-only file {incr_name}: {e}"))?;
        let len = incr.metadata().map_err(|e| format!("Can't stat the append-only file {incr_name}: {e}"))?.len();
        let f = Files { dir, name, base, incrs, incr, len, unwritten: Vec::new(), last_sync: Instant::now() };
        if files.iter().all(|e| e.2 != 'i') {
            self.srv
                .config
                .host()
                .write_durably(&manifest, f.manifest().as_bytes())
                .map_err(|e| format!("Can't persist the AOF manifest: {e}"))?;
        }
        *self.files.lock() = Some(f);
        self.srv.aof_start();
        Ok(())
    }

    /// The cron's part: follows `appendonly` (a rewrite starts the AOF, `no` stops it), runs a
    /// requested rewrite, writes what was encoded, and syncs by `appendfsync`.
    pub fn tick(self: &Arc<Self>) {
        let p = &self.srv.persistence;
        let want = self.srv.config.get("appendonly").as_deref() == Some("yes");
        let on = self.files.lock().is_some();
        let busy = self.rewriting.load(Ordering::SeqCst);
        // The rewrite that runs as `appendonly no` turns a running AOF off is stopped; one this
        // pass starts below is not (a BGREWRITEAOF after the AOF went off).
        if p.aof_turned_off.swap(false, Ordering::SeqCst)
            && !want
            && busy
            && !self.cancel_rewrite.swap(true, Ordering::SeqCst)
        {
            tracing::info!("Killing running AOF rewrite child: the rewrite thread stops");
        }
        // Turned on (CONFIG SET marked the rewrite in progress already, or a config file did not).
        // Files still open from a BGREWRITEAOF run while the AOF was off count as off: CONFIG SET
        // marked a rewrite that no thread runs, or scheduled the start (`aof_starting`, during a
        // transaction or another background operation).
        let marked = p.aof_rewrite_in_progress.load(Ordering::SeqCst) || p.aof_starting.load(Ordering::SeqCst);
        let starting = want && (!on || (marked && !busy));
        // One snapshot runs at a time: a rewrite asked for during a BGSAVE waits for its end.
        if (starting || p.aof_rewrite_requested.load(Ordering::SeqCst))
            && !busy
            && !p.bgsave_in_progress.load(Ordering::SeqCst)
            && !p.repl_snapshot.load(Ordering::SeqCst)
        {
            if starting {
                p.aof_starting.store(true, Ordering::SeqCst);
            }
            self.start_rewrite();
        }
        // Again: a rewrite started just now owns the files (closing them under it would make it
        // fail at its end, "the AOF changed while its base was written", and leave the old base).
        let busy = self.rewriting.load(Ordering::SeqCst);
        // `appendonly yes` then `no` before this cron started the first rewrite: nothing runs, so
        // nothing is in progress (a BGREWRITEAOF waiting to start is `requested` as well). Only
        // this cron starts rewrites, so `busy`, read after it may have started one, still holds.
        if !want
            && p.aof_rewrite_in_progress.load(Ordering::SeqCst)
            && !p.aof_rewrite_requested.load(Ordering::SeqCst)
            && !busy
        {
            p.aof_rewrite_in_progress.store(false, Ordering::SeqCst);
            p.aof_starting.store(false, Ordering::SeqCst);
        }
        if !want && on && !busy {
            self.close();
            return;
        }
        let everysec = self.srv.config.get("appendfsync").as_deref() == Some("everysec");
        let due = self.files.lock().as_ref().is_some_and(|f| f.last_sync.elapsed().as_millis() >= 1000);
        self.write_pending(everysec && due, None);
    }

    /// Writes what was encoded, stops the AOF's part of the change stream and closes the files
    /// (the AOF is off).
    fn close(&self) {
        self.write_pending(true, None);
        self.srv.aof_stop();
        *self.files.lock() = None;
    }

    /// Writes what the engine encoded; with `sync`, fdatasyncs it. Returns the offset written. With
    /// `covered`, nothing is done when a sync that finished while this one waited for the file
    /// covered that offset already (group commit).
    fn write_pending(&self, sync: bool, covered: Option<u64>) -> u64 {
        self.write_pending_in(&mut self.files.lock(), sync, covered)
    }

    fn write_pending_in(&self, files: &mut Option<Files>, sync: bool, covered: Option<u64>) -> u64 {
        if let Some(want) = covered
            && self.synced.load(Ordering::SeqCst) >= want
        {
            return want;
        }
        let Some(f) = files.as_mut() else { return 0 };
        let (bytes, offset) = self.srv.changes.take_aof();
        f.unwritten.extend_from_slice(&bytes);
        let sleep = self.srv.persistence.aof_flush_sleep_us.load(Ordering::Relaxed);
        if sleep > 0 && !f.unwritten.is_empty() {
            std::thread::sleep(std::time::Duration::from_micros(sleep));
        }
        let mut result = f.write_unwritten();
        if sync && result.is_ok() {
            result = f.incr.sync_data();
            f.last_sync = Instant::now();
        }
        let p = &self.srv.persistence;
        match result {
            Ok(()) => {
                self.written.fetch_max(offset, Ordering::SeqCst);
                if p.aof_write_failed.swap(false, Ordering::SeqCst) {
                    tracing::warn!("AOF write error looks solved, Redis can write again.");
                }
                if sync {
                    self.synced.fetch_max(offset, Ordering::SeqCst);
                }
                offset
            }
            Err(e) => {
                // As Redis: the changes stay buffered and are retried (every second by the cron, or
                // by the next sync); writes are refused with MISCONF meanwhile. Nothing waiting for
                // `appendfsync always` is answered until its changes are on disk.
                let text = strip_os_code(&e.to_string()).to_string();
                *p.aof_last_error.lock() = text.clone();
                if !p.aof_write_failed.swap(true, Ordering::SeqCst) {
                    tracing::warn!("Error writing to the AOF file: {text}");
                }
                self.synced.load(Ordering::SeqCst)
            }
        }
    }

    /// `appendfsync always`: resolves once everything encoded so far is on disk, without holding
    /// up the connections that run meanwhile (their changes join the next sync).
    pub async fn durable(&self) {
        if !self.srv.config.appendfsync_always.load(Ordering::Relaxed) || !self.srv.changes.aof_on() {
            return;
        }
        let want = self.srv.changes.aof_appended();
        if self.synced.load(Ordering::SeqCst) >= want {
            return;
        }
        let mut rx = self.done.subscribe();
        {
            let mut r = self.requested.lock();
            *r = (*r).max(want);
            // While the syncer waits for a batch (under this lock), only the connection that
            // completes it wakes it; otherwise every one does.
            let n = self.arrivals.fetch_add(1, Ordering::SeqCst) + 1;
            if !self.batching.load(Ordering::SeqCst) || n >= self.last_batch.load(Ordering::SeqCst) {
                self.wake.notify_one();
            }
        }
        let _ = rx.wait_for(|s| *s >= want).await;
    }

    /// `appendfsync everysec` and `no`: what was encoded is written to the file (not synced) before
    /// the replies that follow it go out, as Redis writes its AOF buffer before replying: a killed
    /// process loses no acknowledged write, only a machine crash can (up to a second's worth).
    pub fn write_through(&self) {
        if self.srv.changes.aof_on() && self.written.load(Ordering::SeqCst) < self.srv.changes.aof_appended() {
            self.write_pending(false, None);
        }
    }

    /// DEBUG LOADAOF's reading (called with every shard held, so it does not wait for the files
    /// behind a rewrite that waits for the shards): what is pending goes to disk, then the files
    /// the manifest names are read.
    fn read_for_debug(&self) -> Result<Vec<AofPart>, String> {
        let Some(mut files) = self.files.try_lock_for(std::time::Duration::from_secs(1)) else {
            return Err("the AOF files are busy (a rewrite is starting)".into());
        };
        self.write_pending_in(&mut files, true, None);
        drop(files);
        let (dir, name) = dir_and_name(&self.srv);
        let text = std::fs::read_to_string(manifest_path(&dir, &name))
            .map_err(|e| format!("Can't open the AOF manifest: {}", strip_os_code(&e.to_string())))?;
        read_parts(&self.srv, &dir, &parse_manifest(&text)?)
    }

    /// Starts a rewrite on a thread of its own (the cron goes on: everysec syncs, expiry).
    fn start_rewrite(self: &Arc<Self>) {
        let p = &self.srv.persistence;
        self.rewriting.store(true, Ordering::SeqCst);
        self.cancel_rewrite.store(false, Ordering::SeqCst);
        p.aof_rewrite_in_progress.store(true, Ordering::SeqCst);
        p.aof_rewrite_requested.store(false, Ordering::SeqCst);
        tracing::info!("Background append only file rewriting started");
        let me = self.clone();
        let spawned = std::thread::Builder::new().name("latch-aof-rewrite".into()).spawn(move || {
            let result = me.rewrite_inner();
            let p = &me.srv.persistence;
            match result {
                Ok(()) => {
                    p.aof_rewrites.fetch_add(1, Ordering::Relaxed);
                    tracing::info!("Background AOF rewrite finished successfully");
                }
                Err(e) => tracing::warn!("Background AOF rewrite failed: {e}"),
            }
            // A rewrite while the AOF is off (BGREWRITEAOF) leaves nothing open: what comes after
            // it goes to no file, as with Redis. Left to the cron, the writes between the end and
            // its next pass were added to the incr file (a FUNCTION FLUSH there undid the base's
            // functions at the next load).
            if me.srv.config.get("appendonly").as_deref() != Some("yes") {
                me.close();
            }
            p.aof_starting.store(false, Ordering::SeqCst);
            p.aof_rewrite_in_progress.store(false, Ordering::SeqCst);
            me.rewriting.store(false, Ordering::SeqCst);
        });
        if let Err(e) = spawned {
            tracing::warn!("Can't rewrite the append only file in background: {e}");
            p.aof_starting.store(false, Ordering::SeqCst);
            p.aof_rewrite_in_progress.store(false, Ordering::SeqCst);
            self.rewriting.store(false, Ordering::SeqCst);
        }
    }

    /// Redis 7.0's rewrite, without a fork: (1) at one instant, a background snapshot begins, the
    /// incr file is closed with the changes before it, a new incr file takes the changes after it
    /// and the manifest names both (a crash from here loads old base + both incr files); (2) the
    /// snapshot is written as the new base while commands go on; (3) the manifest names the new
    /// base and the new incr file, and the old files are removed.
    fn rewrite_inner(&self) -> Result<(), String> {
        let host = self.srv.config.host_arc();
        let (snapshot, (base, base_seq), seq, dir, stale) = {
            let mut files = self.files.lock();
            let (dir, name) = dir_and_name(&self.srv);
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("Can't create the AOF directory {}: {e}", dir.display()))?;
            // From here every change is encoded; the snapshot and the rotation happen at one instant.
            if files.is_none() {
                self.srv.aof_start();
            }
            let preamble = self.srv.config.get("aof-use-rdb-preamble").as_deref() != Some("no");
            let Some((snapshot, tail, offset)) = self.srv.aof_rewrite_begin(preamble) else {
                return Err("a background save is in progress; the rewrite waits for it".into());
            };
            // With the AOF off, the files an earlier AOF (or a BGREWRITEAOF) left stay out of the
            // manifest, as Redis's temporary incr file keeps them out: they are numbered past and
            // removed once the new base is named.
            let mut stale: Vec<Entry> = Vec::new();
            if files.is_none()
                && let Ok(text) = std::fs::read_to_string(manifest_path(&dir, &name))
            {
                stale = parse_manifest(&text).unwrap_or_default();
            }
            let past = |kind: char| stale.iter().filter(|e| e.2 == kind).map(|e| e.1).max().unwrap_or(0);
            // Base and incr files are numbered apart, as Redis numbers them.
            let incr_seq = files.as_ref().and_then(|f| f.incrs.last()).map_or_else(|| past('i'), |i| i.1) + 1;
            let base_seq = files.as_ref().and_then(|f| f.base.as_ref()).map_or_else(|| past('b'), |b| b.1) + 1;
            let incr_name = format!("{name}.{incr_seq}.incr.aof");
            if files.is_none() {
                // A file of that name that no manifest names is left over: it starts empty.
                let _ = std::fs::remove_file(dir.join(&incr_name));
            }
            let incr = OpenOptions::new()
                .append(true)
                .create(true)
                .open(dir.join(&incr_name))
                .map_err(|e| format!("Can't open the append-only file {incr_name}: {e}"))?;
            let (base, mut incrs) = match files.take() {
                Some(mut old) => {
                    old.unwritten.extend_from_slice(&tail);
                    if let Err(e) = old.write_unwritten().and_then(|()| old.incr.sync_data()) {
                        *files = Some(old);
                        return Err(format!("Error writing to the AOF file: {e}"));
                    }
                    (old.base, old.incrs)
                }
                None => (None, Vec::new()),
            };
            incrs.push((incr_name, incr_seq));
            let f = Files {
                dir: dir.clone(),
                name: name.clone(),
                base,
                incrs,
                incr,
                len: 0,
                unwritten: Vec::new(),
                last_sync: Instant::now(),
            };
            if f.base.is_some() {
                host.write_durably(&manifest_path(&dir, &name), f.manifest().as_bytes())
                    .map_err(|e| format!("Error writing the AOF manifest: {e}"))?;
            }
            *files = Some(f);
            self.synced.fetch_max(offset, Ordering::SeqCst);
            let suffix = if preamble { "rdb" } else { "aof" };
            let stale: Vec<String> = stale.into_iter().map(|e| e.0).collect();
            (snapshot, (format!("{name}.{base_seq}.base.{suffix}"), base_seq), incr_seq, dir, stale)
        };
        let mut snapshot = Some(snapshot);
        host.write_durably_with(&dir.join(&base), &mut |w| match snapshot.take() {
            Some(s) => s.write_until(w, &self.srv.fence, &self.cancel_rewrite),
            None => Err(std::io::Error::other("the snapshot was written already")),
        })
        .map_err(|e| format!("Error writing the AOF base file: {e}"))?;
        let mut files = self.files.lock();
        let Some(f) = files.as_mut().filter(|f| f.dir == dir && f.incrs.iter().any(|i| i.1 == seq)) else {
            // The AOF was turned off (or rewritten) meanwhile.
            let _ = std::fs::remove_file(dir.join(&base));
            return Err("the AOF changed while its base was written".into());
        };
        // The manifest on disk first: if it cannot be written, the old one (old base, every incr
        // file) stays right, and so does what this writer believes.
        let keep = f.incrs.iter().position(|i| i.1 == seq).expect("checked above");
        let new_base = (base, base_seq);
        host.write_durably(
            &manifest_path(&f.dir, &f.name),
            manifest_text(Some(&new_base), &f.incrs[keep..]).as_bytes(),
        )
        .map_err(|e| format!("Error writing the AOF manifest: {e}"))?;
        let mut old: Vec<String> = f.base.replace(new_base).into_iter().map(|b| b.0).collect();
        old.extend(f.incrs.drain(..keep).map(|i| i.0));
        old.extend(stale);
        for o in old {
            let _ = std::fs::remove_file(f.dir.join(o));
        }
        Ok(())
    }

    /// At shutdown: what was encoded goes to disk. The file is waited for a bounded time: a rewrite
    /// holds it while it waits for shards, which a script that cannot be killed may hold for good
    /// (SHUTDOWN NOSAVE stops such a server, as Redis's does).
    pub fn flush_at_exit(&self) {
        match self.files.try_lock_for(std::time::Duration::from_secs(2)) {
            Some(mut files) => {
                self.write_pending_in(&mut files, true, None);
            }
            None => tracing::warn!(
                "Could not flush the AOF at exit: a rewrite holds the file while it waits for a running script"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write the disk refuses keeps its bytes for the next try, which writes them in order.
    #[test]
    fn a_failed_write_keeps_its_bytes() {
        let Ok(full) = OpenOptions::new().append(true).open("/dev/full") else { return };
        let mut f = Files {
            dir: PathBuf::new(),
            name: String::new(),
            base: None,
            incrs: Vec::new(),
            incr: full,
            len: 0,
            unwritten: b"*1\r\n$4\r\nPING\r\n".to_vec(),
            last_sync: Instant::now(),
        };
        assert!(f.write_unwritten().is_err());
        f.unwritten.extend_from_slice(b"*1\r\n$4\r\nPONG\r\n");
        assert!(f.write_unwritten().is_err());
        let path = std::env::temp_dir().join(format!("latch-aof-unit-{}", std::process::id()));
        f.incr = OpenOptions::new().append(true).create(true).truncate(false).open(&path).expect("temp file");
        assert!(f.write_unwritten().is_ok());
        assert!(f.unwritten.is_empty());
        let written = std::fs::read(&path).expect("written");
        let _ = std::fs::remove_file(&path);
        assert_eq!(written, b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPONG\r\n");
        assert_eq!(f.len, written.len() as u64);
    }

    #[test]
    fn commands_parse_and_a_torn_tail_is_found() {
        let full = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n#TS:1700000000\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
        let d = engine::changes::decode_commands(full);
        assert_eq!(d.commands.len(), 2);
        assert_eq!((d.good, d.end), (full.len(), AofEnd::Complete));
        let torn = &full[..full.len() - 3];
        let d = engine::changes::decode_commands(torn);
        assert_eq!(d.commands.len(), 1);
        assert_eq!(d.end, AofEnd::Truncated);
        assert_eq!(&torn[..d.good], &full[..d.good]);
        // A MULTI without its EXEC is a torn write: cut before the MULTI.
        let open = b"*1\r\n$4\r\nPING\r\n*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n";
        let d = engine::changes::decode_commands(open);
        assert_eq!((d.commands.len(), d.good, d.end), (1, 14, AofEnd::Truncated));
        assert_eq!(engine::changes::decode_commands(b"*1\r\n$4\r\nPING\r\nbla\r\n").end, AofEnd::Bad);
        assert!(parse_manifest("file a.1.base.rdb seq 1 type b\nfile a.1.incr.aof seq 1 type i\n").is_ok());
        assert!(parse_manifest("garbage\n").is_err());
    }
}
