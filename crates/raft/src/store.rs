//! The log and the vote, kept under `dir`.
//!
//! The log is one file, `raft-log`, of records `[len u32][crc32 u32][postcard]` written one after
//! another: an entry, a truncation (entries from an index on are gone) or a purge (entries up to a
//! log id are gone). An append is written by `append` and fsync'd by the log's flusher thread,
//! which reports it flushed to openraft only after the fsync, so an entry a node acknowledged
//! survives its crash. openraft 0.10 goes on while an append is being flushed: the leader sends the
//! entry to the followers during its own fsync, and counts its own copy toward a commit only once
//! reported. Appends written while an fsync runs share the next one. (With openraft 0.9, whose core
//! awaited each flush before its next command, the fsync ran in `append` itself: a thread would
//! only have added hand-offs; docs/consensus.md, "The fsync in the append".) Client writes are also
//! batched above the log: one entry carries every write that arrived while the proposals before it
//! were in flight (`Consensus::write`).
//!
//! The file is allocated ahead of its records ([`PREALLOCATE`] bytes at a time, `fallocate`), so
//! that an append writes inside the file and its fsync has no file size to journal, as etcd
//! preallocates its WAL segments: an `fdatasync` after a write that grew the file took about 30%
//! longer on this project's ext4 disk (docs/consensus.md, "The log allocated ahead"). The records
//! end at the first zero length. Reading the file back replays the records into memory; whatever
//! follows the last whole record (a record torn by a crash, or written but never fsync'd) is
//! zeroed before the node writes again, so no stale record can reappear behind a new one. A purge
//! rewrites the file with the entries that remain (log compaction after a snapshot).
//!
//! The vote is `raft-vote`, written to a temporary file, fsync'd and renamed over the old one. The
//! commit index is `raft-commit`, one fixed-size checksummed record written over itself in place
//! at every commit (no new file, no rename, no fsync: a commit costs one `pwrite`); a torn or lost
//! record only means re-learning the index from the leader. (It was `raft-committed`, a new file
//! renamed over the old one at every commit: ext4 flushes a file replaced by rename, so each
//! commit waited for a disk write.)

use crate::types::{Entry, LogId, TypeConfig, Vote};
use openraft::storage::{IOFlushed, RaftLogStorage};
use openraft::{LogState, RaftLogReader};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const CRC: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

/// One record of the log file.
#[derive(Serialize, Deserialize)]
enum Record {
    Entry(Entry),
    /// Entries at this index and after are removed.
    Truncate(u64),
    /// Entries up to and including this log id are removed.
    Purge(LogId),
}

/// How far the log file is allocated ahead of its records at a time.
const PREALLOCATE: u64 = 16 << 20;

/// The log's state in memory, shared by the store and its readers.
struct Inner {
    dir: PathBuf,
    /// The log file (replaced by a rewrite).
    file: Arc<File>,
    /// Where the records end: the next record is written here. Zeros follow, up to `allocated`.
    end: u64,
    /// The file's length: allocated ahead of `end`; `u64::MAX` where the file system cannot
    /// allocate ahead (the file then ends at `end`).
    allocated: u64,
    entries: BTreeMap<u64, Entry>,
    purged: Option<LogId>,
    /// `raft-commit`, written in place (see [`CommitFile`]).
    commit: CommitFile,
    /// The vote as last saved to `raft-vote` (replication reads it for every batch it sends).
    vote: Option<Vote>,
}

/// The log store handed to openraft (and its readers: clones of it).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Mutex<Inner>>,
    /// The commit index openraft last reported (INFO's `consensus_commit_index`).
    committed: Arc<AtomicU64>,
    /// The log's flusher thread: appends written and waiting for their fsync.
    flusher: std::sync::mpsc::Sender<Flush>,
}

/// An append written to the log file and waiting for the flusher's fsync: the file it went to
/// and openraft's callback, called once the fsync returned.
struct Flush {
    file: Arc<File>,
    callback: IOFlushed<TypeConfig>,
}

/// The flusher: fsyncs the log for every append written since its last fsync (one `fdatasync`
/// for all of them, so appends that come while one runs share the next), then reports each of
/// them flushed, in the order they were written. openraft 0.10 goes on while an append is being
/// flushed (the leader sends it to the followers meanwhile) and counts it toward a commit only
/// once reported.
fn flusher(rx: std::sync::mpsc::Receiver<Flush>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        let _ = flush(batch);
    }
}

/// Syncs each file the appends of `batch` went to (once), then reports every one of them
/// flushed (or failed), in order; the sync's outcome.
fn flush(batch: Vec<Flush>) -> io::Result<()> {
    let mut result: io::Result<()> = Ok(());
    let mut synced: Vec<&Arc<File>> = Vec::new();
    for f in &batch {
        if result.is_ok() && !synced.iter().any(|s| Arc::ptr_eq(s, &f.file)) {
            result = f.file.sync_data();
            synced.push(&f.file);
        }
    }
    if let Err(e) = &result {
        tracing::error!("raft log: fsync failed: {e}");
    }
    for f in batch {
        f.callback.io_completed(result.as_ref().map_err(copy_error).copied());
    }
    result
}

/// Reports an append failed to openraft; the error, for `append` to return as well.
fn fail(callback: IOFlushed<TypeConfig>, e: io::Error) -> io::Error {
    let copy = copy_error(&e);
    callback.io_completed(Err(e));
    copy
}

/// The same error again (`io::Error` is not `Clone`): its kind and message.
fn copy_error(e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), e.to_string())
}

impl LogStore {
    /// Opens (or creates) the log under `dir`, replaying what it holds.
    pub fn open(dir: &Path, committed: Arc<AtomicU64>) -> io::Result<LogStore> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("raft-log");
        let data = match std::fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let (records, good) = decode_records(&data);
        let mut entries = BTreeMap::new();
        let mut purged = None;
        for r in records {
            apply_record(&mut entries, &mut purged, r);
        }
        let file = OpenOptions::new().create(true).truncate(false).read(true).write(true).open(&path)?;
        // Past the records: the zeros allocated ahead, and maybe the bytes of a record torn by a
        // crash or written and never fsync'd (none of it acknowledged). Zeroed, so that no stale
        // record can be read back behind one written later at `good`.
        if let Some(last) = data[good..].iter().rposition(|&b| b != 0) {
            tracing::warn!("raft log: {} bytes after the last whole record cleared", last + 1);
            use std::os::unix::fs::FileExt;
            file.write_all_at(&vec![0; last + 1], good as u64)?;
            file.sync_data()?;
        }
        let commit = CommitFile::open(dir)?;
        if let Some(c) = commit.read()? {
            committed.store(c.index, Ordering::Relaxed);
        }
        let vote = read_small(&dir.join("raft-vote"))?;
        let (flusher_tx, flusher_rx) = std::sync::mpsc::channel();
        std::thread::Builder::new().name("raft-log-sync".into()).spawn(move || flusher(flusher_rx))?;
        let inner = Arc::new(Mutex::new(Inner {
            dir: dir.to_path_buf(),
            file: Arc::new(file),
            end: good as u64,
            allocated: data.len() as u64,
            entries,
            purged,
            commit,
            vote,
        }));
        Ok(LogStore { inner, committed, flusher: flusher_tx })
    }
}

/// The last commit index this node learned, in `raft-commit`: one frame of the log's form
/// ([`frame`]: `[len][crc32c][postcard LogId]`), zero-padded to [`CommitFile::SIZE`] bytes, always
/// written whole at offset 0, so the file never changes size after its first write and a write is
/// one `pwrite` with no metadata to journal. A record torn by a crash fails its length or checksum
/// and reads as no index (openraft then learns it from the leader), never as a wrong one.
struct CommitFile {
    path: PathBuf,
    file: File,
}

impl CommitFile {
    const SIZE: usize = 48;

    /// Opens `dir/raft-commit`. A `raft-committed` left by an earlier version (a whole postcard
    /// `LogId`, always replaced by rename, so never torn) becomes the first record, then goes.
    fn open(dir: &Path) -> io::Result<CommitFile> {
        let path = dir.join("raft-commit");
        let legacy = dir.join("raft-committed");
        let fresh = !path.exists();
        let file = OpenOptions::new().create(true).truncate(false).read(true).write(true).open(&path)?;
        let mut this = CommitFile { path, file };
        if let Some(old) = read_small::<LogId>(&legacy)? {
            if fresh {
                this.write(&old)?;
                this.file.sync_all()?;
            }
            std::fs::remove_file(&legacy)?;
        }
        Ok(this)
    }

    fn write(&mut self, id: &LogId) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let mut rec = Vec::with_capacity(Self::SIZE);
        frame(id, &mut rec)?;
        // The largest log id (three u64 varints) frames in 38 bytes.
        if rec.len() > Self::SIZE {
            return Err(io::Error::other(format!("a commit record of {} bytes", rec.len())));
        }
        rec.resize(Self::SIZE, 0);
        self.file.write_all_at(&rec, 0)
    }

    /// The index last written; None when there is none or the record is torn.
    fn read(&self) -> io::Result<Option<LogId>> {
        let data = std::fs::read(&self.path)?;
        let id = unframe(&data).and_then(|body| postcard::from_bytes(body).ok());
        if id.is_none() && data.iter().any(|&b| b != 0) {
            tracing::warn!("raft: {} holds no whole record; the commit index is learned again", self.path.display());
        }
        Ok(id)
    }
}

/// Appends `value` as a frame, `[len u32][crc32c u32][postcard]`: the form of every record of
/// the log and of the commit index.
fn frame<T: Serialize>(value: &T, out: &mut Vec<u8>) -> io::Result<()> {
    let body = postcard::to_allocvec(value).map_err(io::Error::other)?;
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&CRC.checksum(&body).to_le_bytes());
    out.extend_from_slice(&body);
    Ok(())
}

/// The body of the frame at the start of `data`, if it is whole and its checksum holds.
fn unframe(data: &[u8]) -> Option<&[u8]> {
    let len = u32::from_le_bytes(data.get(..4)?.try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(data.get(4..8)?.try_into().ok()?);
    let body = data.get(8..8usize.checked_add(len)?)?;
    (CRC.checksum(body) == crc).then_some(body)
}

/// Decodes the records of a log file; returns them and the length of the good prefix. The
/// records end at the first zero length (the space allocated ahead) or the first frame that is
/// not whole.
fn decode_records(data: &[u8]) -> (Vec<Record>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(body) = unframe(&data[at..]).filter(|b| !b.is_empty()) {
        let Ok(r) = postcard::from_bytes::<Record>(body) else { break };
        out.push(r);
        at += 8 + body.len();
    }
    (out, at)
}

fn apply_record(entries: &mut BTreeMap<u64, Entry>, purged: &mut Option<LogId>, r: Record) {
    match r {
        Record::Entry(e) => {
            entries.insert(e.log_id.index, e);
        }
        Record::Truncate(index) => {
            entries.split_off(&index);
        }
        Record::Purge(id) => {
            *entries = entries.split_off(&(id.index + 1));
            *purged = Some(id);
        }
    }
}

/// Reads a small postcard value from `path`; None when the file does not exist.
pub(crate) fn read_small<T: for<'a> Deserialize<'a>>(path: &Path) -> io::Result<Option<T>> {
    match std::fs::read(path) {
        Ok(d) => postcard::from_bytes(&d).map(Some).map_err(io::Error::other),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Replaces `path` with `data`: a temporary file, fsync'd if `durable`, renamed over it, and the
/// directory fsync'd so the rename itself survives a crash.
pub(crate) fn write_file(path: &Path, data: &[u8], durable: bool) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp)?;
    f.write_all(data)?;
    if durable {
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if durable && let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Allocates `len` bytes of `file` from `at` (zeros to read, the file's length grows): writes
/// there then change no file size. Refused by some file systems.
#[cfg(target_os = "linux")]
fn preallocate(file: &File, at: u64, len: u64) -> io::Result<()> {
    let off = |n: u64| i64::try_from(n).map_err(io::Error::other);
    use nix::errno::Errno;
    nix::fcntl::fallocate(file, nix::fcntl::FallocateFlags::empty(), off(at)?, off(len)?).map_err(|e| match e {
        Errno::EOPNOTSUPP | Errno::ENOSYS => io::Error::new(io::ErrorKind::Unsupported, e),
        e => io::Error::from(e),
    })
}

#[cfg(not(target_os = "linux"))]
fn preallocate(_: &File, _: u64, _: u64) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

impl Inner {
    /// Writes records after the last one; durable once `sync_data` ran after it. Allocates the
    /// file ahead first when they would go past its allocated length.
    fn write_unsynced(&mut self, records: &[Record]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let mut buf = Vec::new();
        for r in records {
            frame(r, &mut buf)?;
        }
        let end = self.end + buf.len() as u64;
        if end > self.allocated {
            let to = end.next_multiple_of(PREALLOCATE);
            match preallocate(&self.file, self.allocated, to - self.allocated) {
                Ok(()) => self.allocated = to,
                // Written at the end instead: the file grows with each append. A file system
                // that cannot allocate ahead is not asked again until the next rewrite.
                Err(e) => {
                    tracing::debug!("raft log: not allocated ahead: {e}");
                    if e.kind() == io::ErrorKind::Unsupported {
                        self.allocated = u64::MAX;
                    }
                }
            }
        }
        self.file.write_all_at(&buf, self.end)?;
        self.end = end;
        if self.allocated != u64::MAX {
            self.allocated = self.allocated.max(end);
        }
        Ok(())
    }

    /// Appends records to the file and fsyncs it.
    fn write(&mut self, records: &[Record]) -> io::Result<()> {
        self.write_unsynced(records)?;
        self.file.sync_data()
    }

    /// Writes the entries that remain into a new file that replaces the log (after a purge).
    fn rewrite(&mut self) -> io::Result<()> {
        let mut buf = Vec::new();
        if let Some(p) = self.purged {
            frame(&Record::Purge(p), &mut buf)?;
        }
        for e in self.entries.values() {
            frame(&Record::Entry(e.clone()), &mut buf)?;
        }
        let path = self.dir.join("raft-log");
        write_file(&path, &buf, true)?;
        self.file = Arc::new(OpenOptions::new().read(true).write(true).open(&path)?);
        self.end = buf.len() as u64;
        self.allocated = self.end;
        Ok(())
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        // openraft takes what comes back as the entries from the range's start on: a range that
        // begins before the first entry kept (purged while a replication read was on its way)
        // gets nothing rather than a tail, which would reach a follower as entries placed right
        // after the previous one and leave a hole in its log.
        let inner = self.inner.lock();
        let start = match range.start_bound() {
            std::ops::Bound::Included(s) => *s,
            std::ops::Bound::Excluded(s) => s + 1,
            std::ops::Bound::Unbounded => inner.entries.keys().next().copied().unwrap_or(0),
        };
        let out: Vec<Entry> = inner
            .entries
            .range(range)
            .zip(start..)
            .take_while(|((index, _), want)| *index == want)
            .map(|((_, e), _)| e.clone())
            .collect();
        Ok(out)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.inner.lock().vote)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, io::Error> {
        let inner = self.inner.lock();
        let last = inner.entries.values().next_back().map(|e| e.log_id).or(inner.purged);
        Ok(LogState { last_purged_log_id: inner.purged, last_log_id: last })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        let dir = self.inner.lock().dir.clone();
        let data = postcard::to_allocvec(vote).map_err(io::Error::other)?;
        write_file(&dir.join("raft-vote"), &data, true)?;
        self.inner.lock().vote = Some(*vote);
        Ok(())
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        let Some(c) = committed else { return Ok(()) };
        self.committed.store(c.index, Ordering::Relaxed);
        self.inner.lock().commit.write(&c)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        self.inner.lock().commit.read()
    }

    async fn append<I>(&mut self, entries: I, callback: IOFlushed<TypeConfig>) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let records: Vec<Record> = entries.into_iter().map(Record::Entry).collect();
        let mut inner = self.inner.lock();
        // The log has no holes: an append continues the last entry (or the purged prefix).
        if let Some(Record::Entry(first)) = records.first() {
            let expected = inner.entries.keys().next_back().map(|i| i + 1).or(inner.purged.map(|p| p.index + 1));
            if expected.is_some_and(|x| first.log_id.index > x) {
                let e =
                    io::Error::other(format!("append at {} leaves a hole after {:?}", first.log_id.index, expected));
                tracing::error!("raft: {e}");
                return Err(fail(callback, e));
            }
        }
        if let Err(e) = inner.write_unsynced(&records) {
            return Err(fail(callback, e));
        }
        for r in records {
            let Inner { entries, purged, .. } = &mut *inner;
            apply_record(entries, purged, r);
        }
        // Written; the flusher fsyncs it and reports it flushed. Returning now lets openraft
        // replicate the entries while they are being synced here.
        let file = inner.file.clone();
        drop(inner);
        match self.flusher.send(Flush { file, callback }) {
            Ok(()) => Ok(()),
            // The flusher is gone (it never stops while a store exists): sync here.
            Err(std::sync::mpsc::SendError(f)) => flush(vec![f]),
        }
    }

    async fn truncate_after(&mut self, last: Option<LogId>) -> Result<(), io::Error> {
        let from = last.map_or(0, |l| l.index + 1);
        let mut inner = self.inner.lock();
        inner.write(&[Record::Truncate(from)])?;
        inner.entries.split_off(&from);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        let mut inner = self.inner.lock();
        let Inner { entries, purged, .. } = &mut *inner;
        apply_record(entries, purged, Record::Purge(log_id));
        inner.rewrite()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CommittedLeaderId;
    use openraft::EntryPayload;
    use openraft::vote::RaftLeaderId;

    fn entry(term: u64, index: u64) -> Entry {
        Entry { log_id: LogId::new(CommittedLeaderId::new(term, 1), index), payload: EntryPayload::Blank }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("latch-raft-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_read_starts_where_it_was_asked_or_returns_nothing() {
        let dir = temp_dir("read-range");
        {
            let s = LogStore::open(&dir, Default::default()).unwrap();
            let mut inner = s.inner.lock();
            let mut recs: Vec<Record> = (1..=6).map(|i| Record::Entry(entry(1, i))).collect();
            recs.push(Record::Purge(entry(1, 2).log_id));
            inner.write(&recs).unwrap();
        }
        let mut s = LogStore::open(&dir, Default::default()).unwrap();
        let read = |s: &mut LogStore, r: std::ops::Range<u64>| -> Vec<u64> {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(s.try_get_log_entries(r))
                .unwrap()
                .iter()
                .map(|e| e.log_id.index)
                .collect()
        };
        assert_eq!(read(&mut s, 3..6), vec![3, 4, 5]);
        assert_eq!(read(&mut s, 5..10), vec![5, 6]);
        // Entries 1 and 2 are purged: not the tail from 3.
        assert_eq!(read(&mut s, 1..6), Vec::<u64>::new());
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn records_survive_reopen_and_a_torn_tail_is_cut() {
        let dir = temp_dir("reopen");
        {
            let s = LogStore::open(&dir, Default::default()).unwrap();
            let mut inner = s.inner.lock();
            let recs: Vec<Record> = (1..=5).map(|i| Record::Entry(entry(1, i))).collect();
            inner.write(&recs).unwrap();
            inner.write(&[Record::Truncate(4), Record::Entry(entry(2, 4))]).unwrap();
            inner.write(&[Record::Purge(entry(1, 1).log_id)]).unwrap();
        }
        // A crash in the middle of the next record, written where the records end.
        let end = log_end(&dir);
        write_at(&dir, end, &[9, 0, 0, 0, 1, 2]);
        let s = LogStore::open(&dir, Default::default()).unwrap();
        let mut inner = s.inner.lock();
        let ids: Vec<(u64, u64)> = inner.entries.values().map(|e| (e.log_id.leader_id.term, e.log_id.index)).collect();
        assert_eq!(ids, vec![(1, 2), (1, 3), (2, 4)]);
        assert_eq!(inner.purged.map(|p| p.index), Some(1));
        assert_eq!(inner.end, end);
        // The next record goes where the torn one was, and reads back.
        inner.write(&[Record::Entry(entry(2, 5))]).unwrap();
        drop(inner);
        drop(s);
        assert_eq!(indexes(&dir), vec![2, 3, 4, 5]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Where the records of the log under `dir` end (the file is allocated past them).
    fn log_end(dir: &Path) -> u64 {
        let data = std::fs::read(dir.join("raft-log")).unwrap();
        decode_records(&data).1 as u64
    }

    fn write_at(dir: &Path, at: u64, bytes: &[u8]) {
        use std::os::unix::fs::FileExt;
        let f = OpenOptions::new().write(true).open(dir.join("raft-log")).unwrap();
        f.write_all_at(bytes, at).unwrap();
    }

    /// The entries' indexes after opening the log under `dir` again.
    fn indexes(dir: &Path) -> Vec<u64> {
        let s = LogStore::open(dir, Default::default()).unwrap();
        s.inner.lock().entries.keys().copied().collect()
    }

    #[test]
    fn the_file_is_allocated_ahead_and_appends_write_inside_it() {
        let dir = temp_dir("prealloc");
        let s = LogStore::open(&dir, Default::default()).unwrap();
        let mut inner = s.inner.lock();
        inner.write(&[Record::Entry(entry(1, 1)), Record::Entry(entry(1, 2))]).unwrap();
        let len = std::fs::metadata(dir.join("raft-log")).unwrap().len();
        // Allocated ahead where the file system allows it (ext4, xfs, tmpfs), else exactly the records.
        assert!(len == PREALLOCATE || len == inner.end, "file length {len}, records end at {}", inner.end);
        assert!(inner.allocated == len || inner.allocated == u64::MAX, "allocated {}", inner.allocated);
        inner.write(&[Record::Entry(entry(1, 3))]).unwrap();
        if len == PREALLOCATE {
            assert_eq!(std::fs::metadata(dir.join("raft-log")).unwrap().len(), len, "an append inside the allocation");
        }
        drop(inner);
        drop(s);
        assert_eq!(indexes(&dir), vec![1, 2, 3]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stale_record_past_the_end_never_comes_back_behind_a_new_one() {
        let dir = temp_dir("stale");
        {
            let s = LogStore::open(&dir, Default::default()).unwrap();
            s.inner.lock().write(&[Record::Entry(entry(1, 1)), Record::Entry(entry(1, 2))]).unwrap();
        }
        // A crash left, past the records, a torn frame and then a whole one that was never
        // acknowledged (written by an old term, say). The torn frame is exactly as long as the
        // record the node writes next, so after that write the stale one would follow it.
        let end = log_end(&dir);
        let mut next = Vec::new();
        frame(&Record::Entry(entry(2, 3)), &mut next).unwrap();
        let mut stale = Vec::new();
        frame(&Record::Entry(entry(1, 4)), &mut stale).unwrap();
        let mut torn = next.clone();
        torn[8..].fill(0xee);
        write_at(&dir, end, &torn);
        write_at(&dir, end + next.len() as u64, &stale);
        assert_eq!(indexes(&dir), vec![1, 2]);
        {
            let s = LogStore::open(&dir, Default::default()).unwrap();
            s.inner.lock().write(&[Record::Entry(entry(2, 3))]).unwrap();
        }
        assert_eq!(indexes(&dir), vec![1, 2, 3], "the stale entry 4 is gone");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_purge_rewrites_the_log_and_appends_go_on_after_it() {
        let dir = temp_dir("purge");
        {
            let s = LogStore::open(&dir, Default::default()).unwrap();
            s.inner.lock().write(&(1..=4).map(|i| Record::Entry(entry(1, i))).collect::<Vec<_>>()).unwrap();
        }
        {
            // Reopened, so that the entries are in memory for the rewrite.
            let mut s = LogStore::open(&dir, Default::default()).unwrap();
            run(s.purge(entry(1, 2).log_id)).unwrap();
            s.inner.lock().write(&[Record::Entry(entry(1, 5))]).unwrap();
        }
        assert_eq!(indexes(&dir), vec![3, 4, 5]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn the_commit_index_is_written_in_place_and_read_back() {
        let dir = temp_dir("commit");
        let id = |term, index| LogId::new(CommittedLeaderId::new(term, 2), index);
        {
            let mut s = LogStore::open(&dir, Default::default()).unwrap();
            run(s.save_committed(Some(id(3, 1_000_000)))).unwrap();
            // A shorter record over a longer one: the old bytes past it do not count.
            run(s.save_committed(Some(id(3, 7)))).unwrap();
            assert_eq!(run(s.read_committed()).unwrap(), Some(id(3, 7)));
        }
        assert_eq!(std::fs::metadata(dir.join("raft-commit")).unwrap().len(), CommitFile::SIZE as u64);
        let committed = Arc::new(AtomicU64::new(0));
        let mut s = LogStore::open(&dir, committed.clone()).unwrap();
        assert_eq!(committed.load(Ordering::Relaxed), 7);
        assert_eq!(run(s.read_committed()).unwrap(), Some(id(3, 7)));
        // The largest ids fit the record.
        run(s.save_committed(Some(LogId::new(CommittedLeaderId::new(u64::MAX, u64::MAX), u64::MAX)))).unwrap();
        assert_eq!(run(s.read_committed()).unwrap().map(|l| l.index), Some(u64::MAX));
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_torn_commit_record_reads_as_no_index_never_a_wrong_one() {
        let dir = temp_dir("commit-torn");
        {
            let mut s = LogStore::open(&dir, Default::default()).unwrap();
            run(s.save_committed(Some(LogId::new(CommittedLeaderId::new(1, 1), 300)))).unwrap();
        }
        let path = dir.join("raft-commit");
        let good = std::fs::read(&path).unwrap();
        // Any byte of the frame: the length, the checksum, the id.
        let framed = 8 + good[0] as usize;
        assert!(framed > 8 && good[framed..].iter().all(|&b| b == 0));
        for at in 0..framed {
            let mut torn = good.clone();
            torn[at] ^= 0x40;
            std::fs::write(&path, &torn).unwrap();
            let mut s = LogStore::open(&dir, Default::default()).unwrap();
            assert_eq!(run(s.read_committed()).unwrap(), None, "byte {at} changed");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_earlier_versions_commit_file_is_taken_over() {
        let dir = temp_dir("commit-legacy");
        std::fs::create_dir_all(&dir).unwrap();
        let old = LogId::new(CommittedLeaderId::new(4, 1), 42);
        std::fs::write(dir.join("raft-committed"), postcard::to_allocvec(&old).unwrap()).unwrap();
        let committed = Arc::new(AtomicU64::new(0));
        let mut s = LogStore::open(&dir, committed.clone()).unwrap();
        assert_eq!(committed.load(Ordering::Relaxed), 42);
        assert_eq!(run(s.read_committed()).unwrap(), Some(old));
        assert!(!dir.join("raft-committed").exists());
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
