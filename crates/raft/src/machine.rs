//! The state machine: committed entries run on this node's `engine::Server`, in log order,
//! through one internal client; snapshots are the engine's RDB files.
//!
//! **Raft time.** The engine's clock on a node in consensus mode is a [`RaftClock`]: it reads
//! the time carried by the last applied entry (the proposing leader's monotonic clock, see
//! `node`), never the node's own. Every node therefore runs an entry at the same time, so a
//! TTL, an expiry, `SET ... PX` and a fencing token (`Server::next_fence`, whose floor is derived
//! from that time) come out identical everywhere; and since the counter only moves inside
//! `apply`, tokens are the same on every node and keep increasing across leader changes.

use crate::route;
use crate::store::write_file;
use crate::types::{
    BlockWait, Entry, LogId, Op, Reply, Snapshot, SnapshotData, SnapshotMeta, StoredMembership, TypeConfig, Work,
};
use crate::waits::{LockWait, SavedWait, SavedWaitV3, Waits, is_lock_wait};
use bytes::Bytes;
use engine::client::Client;
use engine::clock::Clock;
use engine::random::Seeded;
use engine::server::Server;
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, RaftSnapshotBuilder};
use parking_lot::Mutex;
use resp::Frame;
use std::io::{self, Cursor};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The engine's clock in consensus mode: the raft time of the last applied entry (milliseconds on
/// the group's timeline); durations for latency statistics still come from the node's own clock.
/// Before the first entry (or snapshot) is applied it reads the wall clock of the node's start,
/// which only the server's own bookkeeping (start time, last save) sees: the keyspace is empty
/// until then.
pub struct RaftClock {
    /// What the engine reads.
    ms: AtomicU64,
    /// The raft time applied so far, 0 before any entry set it.
    applied: AtomicU64,
    start: std::time::Instant,
}

impl RaftClock {
    /// A clock reading `start_ms` until the first entry is applied.
    pub fn new(start_ms: u64) -> RaftClock {
        RaftClock { ms: AtomicU64::new(start_ms), applied: AtomicU64::new(0), start: std::time::Instant::now() }
    }

    /// The raft time applied so far (0 before any entry carried one).
    pub fn applied_ms(&self) -> u64 {
        self.applied.load(Ordering::SeqCst)
    }

    fn set(&self, ms: u64) {
        self.applied.store(ms, Ordering::SeqCst);
        self.ms.store(ms, Ordering::SeqCst);
    }
}

impl Clock for RaftClock {
    fn now_ms(&self) -> u64 {
        self.ms.load(Ordering::SeqCst)
    }
    fn ticks_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }
    fn wall_offset_ms(&self) -> i64 {
        0
    }
}

/// A snapshot's bytes: this tag, the raft time at the snapshot, the index of the last entry that
/// carried commands (u64s, little endian), the EVAL script cache (a u32 count, then each body as a
/// u32 length and its bytes), the lock waiters in their order (a u32 length, then postcard, see
/// `waits`, each with the number of times its owner asked), the RDB file (which carries the
/// function libraries).
const SNAP_TAG: &[u8] = b"LATCHSNAP4";
/// The third format: as the fourth with no count of asks per waiter.
const SNAP_TAG_V3: &[u8] = b"LATCHSNAP3";
/// The second format: as the third without the lock waiters.
const SNAP_TAG_V2: &[u8] = b"LATCHSNAP2";
/// The first format: the tag, the raft time, the RDB file.
const SNAP_TAG_V1: &[u8] = b"LATCHSNAP1";

/// What a snapshot holds besides the RDB file.
#[derive(Debug, Default, PartialEq, Eq)]
struct SnapshotHead {
    time_ms: u64,
    last_write: u64,
    scripts: Vec<bytes::Bytes>,
    waits: Vec<SavedWait>,
}

/// The seed of the `i`-th command of the entry at `index`: every node draws that command's random
/// choices (SPOP, SRANDMEMBER in a script, `math.random`) from it, so they agree.
fn command_seed(index: u64, i: usize) -> u64 {
    (index << 16) ^ i as u64
}

/// The snapshot file under `dir`: `[meta length u32][postcard meta][snapshot bytes]`.
fn snapshot_path(dir: &Path) -> PathBuf {
    dir.join("raft-snapshot")
}

/// What a snapshot covers.
type Meta = SnapshotMeta;

/// The raft handle (openraft's, with this state machine).
pub type Raft = openraft::Raft<TypeConfig, StateMachine>;

/// The state machine handed to openraft.
pub struct StateMachine {
    srv: Arc<Server>,
    clock: Arc<RaftClock>,
    /// The client every entry runs on (a `Client` is not `Sync`; only `apply` takes it).
    client: Mutex<Client>,
    last_applied: Option<LogId>,
    /// The index of the last applied entry that carried commands (0: none yet).
    last_write: u64,
    membership: StoredMembership,
    dir: PathBuf,
    /// The lock waiters (shared with the node, whose clients wait on them).
    waits: Arc<Waits>,
    /// The snapshot file's writer (shared with the builders).
    file: SnapshotFile,
}

impl StateMachine {
    /// The state machine of `srv`, starting from the snapshot under `dir` if there is one.
    pub fn open(srv: Arc<Server>, clock: Arc<RaftClock>, dir: &Path) -> Result<StateMachine, String> {
        let mut client = srv.new_client("raft".into(), String::new());
        client.authenticated = true;
        client.user = None;
        client.deny_blocking = true;
        let mut sm = StateMachine {
            srv,
            clock,
            client: Mutex::new(client),
            last_applied: None,
            last_write: 0,
            membership: StoredMembership::default(),
            dir: dir.to_path_buf(),
            waits: Arc::default(),
            file: SnapshotFile::default(),
        };
        if let Some((meta, data)) = read_snapshot_file(dir).map_err(|e| format!("reading the raft snapshot: {e}"))? {
            sm.load(&meta, &data)?;
            *sm.file.0.lock() = meta.last_log_id;
            tracing::info!("raft: state machine loaded from the snapshot at {:?}", meta.last_log_id);
        }
        Ok(sm)
    }

    /// The lock waiters this state machine queues (the node's clients wait on them).
    pub fn waits(&self) -> Arc<Waits> {
        self.waits.clone()
    }

    /// Replaces the engine's data with a snapshot's.
    fn load(&mut self, meta: &SnapshotMeta, data: &[u8]) -> Result<(), String> {
        let (head, rdb) = split_snapshot(data).ok_or("not a Latch raft snapshot")?;
        // A first-format snapshot does not say where the last write was: at the snapshot, at the
        // latest.
        let last_write =
            if data.starts_with(SNAP_TAG_V1) { meta.last_log_id.map_or(0, |l| l.index) } else { head.last_write };
        self.clock.set(head.time_ms);
        let srv = &self.srv;
        {
            let mut locked = srv.ks.lock_all();
            for s in locked.shards_mut() {
                for t in s.dbs.iter_mut() {
                    t.clear(head.time_ms);
                }
            }
            srv.scripting.flush_functions();
            // The file's counter is the group's: the load raises the counter to it.
            srv.fence.store(0, Ordering::SeqCst);
            srv.rdb_load_locked(&mut locked, rdb, false)?;
            let info = self.client.lock().info.clone();
            self.waits.load(srv, &mut locked, &info, head.waits)?;
        }
        srv.scripting.flush_scripts();
        for body in &head.scripts {
            srv.scripting.create_script(body).map_err(|e| format!("a script of the snapshot: {e:?}"))?;
        }
        self.last_applied = meta.last_log_id;
        self.last_write = last_write;
        self.membership = meta.last_membership.clone();
        Ok(())
    }

    /// Runs one committed entry (the next after the last applied) and returns what it answered.
    fn apply_one(&mut self, entry: Entry) -> Result<Reply, io::Error> {
        // Entries apply one after the other, none skipped: a hole in the log (openraft checks
        // only the first and the last index of what it reads for apply) would leave this
        // node's data silently behind the others', and a leader answering from it would
        // acknowledge writes the group loses. A node refusing to apply stops instead.
        if let Some(prev) = self.last_applied
            && entry.log_id.index != prev.index + 1
        {
            let e = io::Error::other(format!("apply of {} after {prev}: entries skipped", entry.log_id));
            tracing::error!("raft: {e}");
            return Err(e);
        }
        self.last_applied = Some(entry.log_id);
        Ok(match entry.payload {
            EntryPayload::Blank => Reply::default(),
            EntryPayload::Normal(req) => self.run(entry.log_id.index, req.time_ms, req.op),
            EntryPayload::Membership(m) => {
                self.membership = StoredMembership::new(Some(entry.log_id), m);
                Reply::default()
            }
        })
    }

    /// The engine's data as snapshot bytes, now (every shard held while the file is written).
    #[cfg(test)]
    fn snapshot_bytes(&self) -> Vec<u8> {
        let mut data = self.snapshot_head();
        let rdb = self.srv.rdb_snapshot_locked(&mut self.srv.ks.lock_all());
        data.extend_from_slice(&rdb);
        data
    }

    /// What a snapshot holds before the RDB file: the tag, raft time, the last write and the
    /// script cache.
    fn snapshot_head(&self) -> Vec<u8> {
        let mut data = SNAP_TAG.to_vec();
        data.extend_from_slice(&self.clock.applied_ms().to_le_bytes());
        data.extend_from_slice(&self.last_write.to_le_bytes());
        let mut scripts: Vec<(String, bytes::Bytes)> =
            self.srv.scripting.scripts.lock().iter().map(|(sha, m)| (sha.clone(), m.body.clone())).collect();
        scripts.sort();
        data.extend_from_slice(&(scripts.len() as u32).to_le_bytes());
        for (_, body) in &scripts {
            data.extend_from_slice(&(body.len() as u32).to_le_bytes());
            data.extend_from_slice(body);
        }
        let waits = postcard::to_allocvec(&self.waits.saved()).expect("waiters serialize");
        data.extend_from_slice(&(waits.len() as u32).to_le_bytes());
        data.extend_from_slice(&waits);
        data
    }

    /// Runs one committed command entry (the one at `index`); returns the engine's replies.
    fn run(&mut self, index: u64, time_ms: u64, op: Op) -> Reply {
        // Raft time only moves forward, whatever a leader's clock said.
        let now = self.clock.applied_ms().max(time_ms);
        if self.waits.is_empty() {
            self.clock.set(now);
        } else {
            // With lock waiters queued, the clock moves while every shard is held, and the waiters
            // whose deadline passed leave before the locks that expired at this time are handed
            // on: no other thread (a read's lazy expiry) sees this time before that is done.
            let mut locked = self.srv.ks.lock_all();
            self.clock.set(now);
            self.waits.time_out(now);
            self.srv.expire_for_waiters_in_order(&mut locked, now);
            drop(locked);
            self.waits.prune(&self.srv);
        }
        let work: Vec<Work> = match op {
            Op::Tick => return Reply::default(),
            Op::Commands(cmds) => cmds.into_iter().map(Work::Command).collect(),
            Op::Batch(work) => work,
        };
        let written_before = std::mem::replace(&mut self.last_write, index);
        let mut client = self.client.lock();
        let mut waits = Vec::new();
        let mut blocked = Vec::new();
        let replies = work
            .into_iter()
            .enumerate()
            .map(|(i, w)| {
                client.random = Some(Seeded::new(command_seed(index, i)));
                match w {
                    Work::Command(c) if is_lock_wait(&c.args) => match self.lock_wait(&mut client, c) {
                        Ok(reply) => reply,
                        Err(wait) => {
                            waits.push((i, wait));
                            None
                        }
                    },
                    Work::Command(c)
                        if self.srv.table.resolve(&c.args).is_ok_and(|cmd| route::blocks(cmd, &c.args)) =>
                    {
                        // A blocking command that finds nothing hands its request back: the client
                        // waits on the node it is connected to (see `Consensus::write`).
                        set_client(&mut client, c.db, c.resp3);
                        (client.deny_blocking, client.defer_blocking) = (false, true);
                        let reply = self.srv.execute(&mut client, &c.args);
                        (client.deny_blocking, client.defer_blocking) = (true, false);
                        match client.block.take() {
                            Some(request) => {
                                let timeout = request.deadline.map(|d| Duration::from_millis(d.saturating_sub(now)));
                                blocked.push((i, Some(BlockWait { request, timeout })));
                                None
                            }
                            None => reply,
                        }
                    }
                    Work::Command(c) => {
                        set_client(&mut client, c.db, c.resp3);
                        self.srv.execute(&mut client, &c.args)
                    }
                    Work::Serve(w) => {
                        set_client(&mut client, w.db, w.resp3);
                        let reply = self.srv.serve_now(&mut client, &w.args, &w.keys);
                        if reply.is_none() {
                            blocked.push((i, None));
                        }
                        reply
                    }
                    Work::CancelWait(c) => Some(Frame::Integer(self.waits.cancel(c.db, &c.key, &c.owner, None) as i64)),
                    Work::LeaveQueue(c) => {
                        Some(Frame::Integer(self.waits.cancel(c.db, &c.key, &c.owner, Some(c.ask)) as i64))
                    }
                    Work::Transaction(t) => {
                        // Earlier work of the same entry counts as a write after the check.
                        let written = if i == 0 { written_before } else { index };
                        if let Some(g) = &t.watch
                            && (written > g.checked_at || self.any_expired(&g.alive, now))
                        {
                            return Some(Frame::NullArray);
                        }
                        set_client(&mut client, t.db, t.resp3);
                        self.srv.execute(&mut client, &[Bytes::from_static(b"MULTI")]);
                        for args in &t.commands {
                            self.srv.execute(&mut client, args);
                        }
                        self.srv.execute(&mut client, &[Bytes::from_static(b"EXEC")])
                    }
                }
            })
            .collect();
        Reply(replies, waits, blocked)
    }

    /// Runs a `LOCK ... WAIT`: the reply when it is granted (or refused) at once, else the wait
    /// it queued. A waiter of the same owner already queued on the key is that wait: the request
    /// is a retry (after a lost connection), and keeps its place.
    fn lock_wait(&self, client: &mut Client, c: crate::types::Command) -> Result<Option<Frame>, Arc<LockWait>> {
        if let Some(w) = self.waits.ask_again(c.db, &c.args[1], &c.args[2]) {
            return Err(w);
        }
        set_client(client, c.db, c.resp3);
        let notify = Arc::new(tokio::sync::Notify::new());
        let ring = notify.clone();
        client.block_waker = Some(Arc::new(move || ring.notify_waiters()));
        client.deny_blocking = false;
        let reply = self.srv.execute(client, &c.args);
        client.deny_blocking = true;
        client.block_waker = None;
        match self.srv.hand_on_waiter(client) {
            None => Ok(reply),
            Some(w) => Err(self.waits.add(c.db, c.resp3, c.args, w, notify)),
        }
    }

    /// Whether a key of `keys` (database, key) is gone or past its TTL at raft time `now`: the
    /// same answer on every node, whether or not its expiry cycle removed the key yet.
    fn any_expired(&self, keys: &[(u32, Bytes)], now: u64) -> bool {
        if keys.is_empty() {
            return false;
        }
        let mut locked = self.srv.ks.lock_all();
        keys.iter().any(|(db, k)| {
            let t = &locked.shard_for(k).dbs[*db as usize];
            t.peek(k).is_none() || t.is_stale(k, now)
        })
    }
}

/// The apply client as the proposing client was: its database and protocol.
fn set_client(client: &mut Client, db: u32, resp3: bool) {
    client.db = db as usize;
    client.proto = if resp3 { resp::Protocol::Resp3 } else { resp::Protocol::Resp2 };
}

/// Splits snapshot bytes into what they hold besides the RDB file, and the RDB file.
fn split_snapshot(data: &[u8]) -> Option<(SnapshotHead, &[u8])> {
    fn u64_at(b: &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(b.get(..8)?.try_into().ok()?))
    }
    fn u32_at(b: &[u8]) -> Option<usize> {
        Some(u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize)
    }
    if let Some(rest) = data.strip_prefix(SNAP_TAG_V1) {
        return Some((SnapshotHead { time_ms: u64_at(rest)?, ..Default::default() }, &rest[8..]));
    }
    // Which form the waiters are in: 4 with their asks, 3 without, 2 none.
    let (rest, waits_form) = match (data.strip_prefix(SNAP_TAG), data.strip_prefix(SNAP_TAG_V3)) {
        (Some(rest), _) => (rest, 4),
        (None, Some(rest)) => (rest, 3),
        (None, None) => (data.strip_prefix(SNAP_TAG_V2)?, 2),
    };
    let (time_ms, last_write) = (u64_at(rest)?, u64_at(rest.get(8..)?)?);
    let n = u32_at(rest.get(16..)?)?;
    let mut at = 20;
    let mut scripts = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let len = u32_at(rest.get(at..)?)?;
        scripts.push(bytes::Bytes::copy_from_slice(rest.get(at + 4..at + 4 + len)?));
        at += 4 + len;
    }
    let mut waits = Vec::new();
    if waits_form > 2 {
        let len = u32_at(rest.get(at..)?)?;
        let bytes = rest.get(at + 4..at + 4 + len)?;
        waits = match waits_form {
            4 => postcard::from_bytes(bytes).ok()?,
            _ => postcard::from_bytes::<Vec<SavedWaitV3>>(bytes).ok()?.into_iter().map(SavedWait::from).collect(),
        };
        at += 4 + len;
    }
    Some((SnapshotHead { time_ms, last_write, scripts, waits }, &rest[at..]))
}

fn read_snapshot_file(dir: &Path) -> io::Result<Option<(Meta, Vec<u8>)>> {
    let data = match std::fs::read(snapshot_path(dir)) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "truncated raft snapshot file");
    let len = u32::from_le_bytes(data.get(..4).ok_or_else(bad)?.try_into().map_err(|_| bad())?) as usize;
    let meta = postcard::from_bytes(data.get(4..4 + len).ok_or_else(bad)?).map_err(io::Error::other)?;
    Ok(Some((meta, data[4 + len..].to_vec())))
}

/// The newest snapshot written to `dir/raft-snapshot` by this process. A snapshot is built on a
/// task of its own while the state machine may install a newer one from the leader: the file is
/// written under this lock and only by a snapshot newer than the one it holds, so a slow build
/// never puts an older snapshot over a newer one (whose log prefix is already purged).
#[derive(Clone, Default)]
struct SnapshotFile(Arc<Mutex<Option<LogId>>>);

impl SnapshotFile {
    /// Writes the snapshot unless the file holds a newer one; true if written.
    fn write(&self, dir: &Path, meta: &Meta, data: &[u8]) -> io::Result<bool> {
        let mut newest = self.0.lock();
        if newest.is_some() && *newest >= meta.last_log_id {
            return Ok(false);
        }
        write_snapshot_file(dir, meta, data)?;
        *newest = meta.last_log_id;
        Ok(true)
    }
}

fn write_snapshot_file(dir: &Path, meta: &SnapshotMeta, data: &[u8]) -> io::Result<()> {
    let m = postcard::to_allocvec(meta).map_err(io::Error::other)?;
    let mut out = Vec::with_capacity(4 + m.len() + data.len());
    out.extend_from_slice(&(m.len() as u32).to_le_bytes());
    out.extend_from_slice(&m);
    out.extend_from_slice(data);
    write_file(&snapshot_path(dir), &out, true)
}

/// A snapshot taken when openraft asked for a builder (the state machine is not applying then),
/// written to `dir` when built.
pub struct Builder {
    meta: SnapshotMeta,
    /// The head, and the RDB file too when it was written at once.
    data: Vec<u8>,
    /// The RDB file still to write: the fork-less background snapshot of the instant the builder
    /// was made (the shards are walked a chunk at a time while entries go on applying), with the
    /// snapshot slot it holds.
    background: Option<(engine::persistence::Snapshot, engine::persistence::ReplSnapshot, Arc<Server>)>,
    dir: PathBuf,
    file: SnapshotFile,
}

impl RaftSnapshotBuilder<TypeConfig> for Builder {
    type SnapshotData = SnapshotData;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        if let Some((snapshot, slot, srv)) = self.background.take() {
            let mut data = std::mem::take(&mut self.data);
            let written = tokio::task::spawn_blocking(move || {
                let r = snapshot.write(&mut data, &srv.fence);
                drop(slot);
                r.map(|()| data)
            })
            .await
            .map_err(io::Error::other)
            .and_then(|r| r);
            self.data = written?;
        }
        if !self.file.write(&self.dir, &self.meta, &self.data)? {
            tracing::info!(
                "raft: a newer snapshot was installed while the one at {:?} was built",
                self.meta.last_log_id
            );
        }
        Ok(Snapshot { meta: self.meta.clone(), snapshot: Cursor::new(self.data.clone()) })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotData = SnapshotData;
    type SnapshotBuilder = Builder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: futures_util::Stream<Item = Result<EntryResponder<TypeConfig>, io::Error>> + Unpin + Send,
    {
        use futures_util::StreamExt;
        while let Some(next) = entries.next().await {
            let (entry, responder) = next?;
            let reply = self.apply_one(entry)?;
            if let Some(r) = responder {
                r.send(reply);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Builder {
        let last = self.last_applied;
        let meta = SnapshotMeta { last_log_id: last, last_membership: self.membership.clone() };
        // The background snapshot when the slot is free (a BGSAVE or an AOF rewrite may hold
        // it); else the file now, with every shard held.
        let mut data = self.snapshot_head();
        let mut locked = self.srv.ks.lock_all();
        let background = match self.srv.claim_snapshot(&mut locked) {
            Some((snapshot, slot)) => Some((snapshot, slot, self.srv.clone())),
            None => {
                data.extend_from_slice(&self.srv.rdb_snapshot_locked(&mut locked));
                None
            }
        };
        drop(locked);
        Builder { meta, data, background, dir: self.dir.clone(), file: self.file.clone() }
    }

    async fn install_snapshot(&mut self, meta: &SnapshotMeta, snapshot: SnapshotData) -> Result<(), io::Error> {
        let data = snapshot.into_inner();
        self.load(meta, &data).map_err(io::Error::other)?;
        self.file.write(&self.dir, meta, &data)?;
        tracing::info!("raft: installed the snapshot at {:?}", meta.last_log_id);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        let read = read_snapshot_file(&self.dir)?;
        Ok(read.map(|(meta, data)| Snapshot { meta, snapshot: Cursor::new(data) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CommittedLeaderId;
    use crate::types::Request;
    use bytes::Bytes;
    use openraft::vote::RaftLeaderId;

    /// A test's directory, removed when the test is done with it.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let d = std::env::temp_dir().join(format!("latch-raft-sm-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            TempDir(d)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A state machine on a fresh engine whose clock reads `start_ms` until the first entry, and
    /// its directory (dropped after the machine, at the end of the test).
    fn machine(name: &str, start_ms: u64) -> (StateMachine, Arc<Server>, TempDir) {
        let clock = Arc::new(RaftClock::new(start_ms));
        let srv = Arc::new(Server::new(engine::config::Config::default(), clock.clone()));
        let dir = TempDir::new(name);
        (StateMachine::open(srv.clone(), clock, &dir.0).unwrap(), srv, dir)
    }

    /// Applies `log` as openraft would, one entry after another; what each answered.
    fn apply_entries(sm: &mut StateMachine, log: Vec<Entry>) -> Result<Vec<Reply>, io::Error> {
        log.into_iter().map(|e| sm.apply_one(e)).collect()
    }

    fn entry(index: u64, time_ms: u64, line: &str) -> Entry {
        let op = if line.is_empty() {
            Op::Tick
        } else {
            let args = line.split(' ').map(|w| Bytes::from(w.to_string())).collect();
            Op::Commands(vec![crate::types::Command { db: 0, resp3: false, args }])
        };
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Request { time_ms, op }),
        }
    }

    /// An entry of one command given as its arguments.
    fn entry_of(index: u64, time_ms: u64, args: &[&str]) -> Entry {
        let args = args.iter().map(|w| Bytes::from(w.to_string())).collect();
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Request {
                time_ms,
                op: Op::Commands(vec![crate::types::Command { db: 0, resp3: false, args }]),
            }),
        }
    }

    /// The first reply of each entry applied.
    fn apply_all(sm: &mut StateMachine, log: Vec<Entry>) -> Vec<Option<resp::Frame>> {
        let replies = apply_entries(sm, log).unwrap();
        let decoded = |f: resp::Frame| match f {
            resp::Frame::Encoded(b) => resp::decode_reply(&mut resp::BytesMut::from(&b[..])).unwrap().unwrap(),
            f => f,
        };
        replies.into_iter().map(|r| r.0.into_iter().next().flatten().map(decoded)).collect()
    }

    /// The keyspace's digest, as DEBUG DIGEST computes it.
    fn digest(srv: &Server) -> Option<resp::Frame> {
        let mut c = srv.new_client("test".into(), String::new());
        srv.execute(&mut c, &[Bytes::from("DEBUG"), Bytes::from("DIGEST")])
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    /// What a 0.9 build of Latch (openraft 0.9.25) left in a node's `dir` loads on this build: a
    /// 3-node group took 30 SETs, `LOCK mylock me 600000` and `INCR ctr`, snapshotted at index 39
    /// and was stopped (`testdata/openraft-0.9`; the log file cut at its last record). The log,
    /// the vote, the commit index, the snapshot with its membership, and the entries after it.
    #[test]
    fn a_nodes_files_from_the_openraft_0_9_build_load() {
        use crate::store::LogStore;
        use openraft::RaftLogReader;
        use openraft::storage::RaftLogStorage;
        let dir = TempDir::new("openraft-0.9");
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/openraft-0.9");
        for f in ["raft-log", "raft-vote", "raft-commit", "raft-snapshot"] {
            std::fs::copy(fixtures.join(f), dir.0.join(f)).unwrap();
        }
        let committed = Arc::new(AtomicU64::new(0));
        let mut log = LogStore::open(&dir.0, committed.clone()).unwrap();
        assert_eq!(committed.load(Ordering::Relaxed), 42, "the commit index");
        let state = block_on(log.get_log_state()).unwrap();
        assert_eq!(state.last_log_id.map(|l| l.index), Some(42));
        let vote = block_on(log.read_vote()).unwrap().expect("a vote");
        assert!(vote.committed);
        assert_eq!(vote.leader_id.node_id, 2);
        let first = state.last_purged_log_id.map_or(0, |l| l.index + 1);
        assert!(first <= 40, "the entries after the snapshot are kept (the log starts at {first})");
        let after: Vec<Entry> = block_on(log.try_get_log_entries(40..43)).unwrap();
        assert_eq!(after.iter().map(|e| e.log_id.index).collect::<Vec<_>>(), vec![40, 41, 42]);
        assert!(after.iter().all(|e| e.log_id.leader_id.node_id == 2));

        let clock = Arc::new(RaftClock::new(0));
        let srv = Arc::new(Server::new(engine::config::Config::default(), clock.clone()));
        let mut sm = StateMachine::open(srv.clone(), clock, &dir.0).unwrap();
        let (applied, membership) = block_on(sm.applied_state()).unwrap();
        assert_eq!(applied.map(|l| l.index), Some(39));
        let voters: Vec<u64> = membership.membership().voter_ids().collect();
        assert_eq!(voters, vec![1, 2, 3]);
        let mut c = srv.new_client("test".into(), String::new());
        let mut run =
            |args: &[&str]| srv.execute(&mut c, &args.iter().map(|a| Bytes::from(a.to_string())).collect::<Vec<_>>());
        assert_eq!(run(&["GET", "k30"]), Some(Frame::Bulk(Bytes::from("v30"))));
        for e in after {
            sm.apply_one(e).unwrap();
        }
        assert_eq!(run(&["GET", "ctr"]), Some(Frame::Bulk(Bytes::from("1"))));
        assert_eq!(run(&["DBSIZE"]), Some(Frame::Integer(32)));
    }

    #[test]
    fn nodes_applying_one_log_agree_on_data_ttls_and_tokens_and_a_snapshot_carries_them() {
        let log = vec![
            entry(1, 1_000_000, "SET k v PX 1000"),
            entry(2, 1_000_001, "LOCK l owner 5000"),
            entry(3, 1_000_002, "INCR c"),
            // A leader whose clock lagged: raft time does not go back.
            entry(4, 999_000, "SET j v PX 1500"),
            entry(5, 1_001_200, ""),
            entry(6, 1_001_201, "GET k"),
            entry(7, 1_001_202, "PTTL j"),
            entry(8, 1_001_203, "LOCK m owner 5000"),
        ];
        // Nodes started at different wall-clock times agree: only the entries' time counts.
        let (mut a, sa, _dir_a) = machine("a", 5_000_000);
        let (mut b, sb, _dir_b) = machine("b", 0);
        let ra = apply_entries(&mut a, log.clone()).unwrap();
        let rb = apply_entries(&mut b, log.clone()).unwrap();
        let ra: Vec<_> = ra.into_iter().map(|r| r.0.into_iter().next().flatten()).collect();
        let rb: Vec<_> = rb.into_iter().map(|r| r.0.into_iter().next().flatten()).collect();
        assert_eq!(ra, rb);
        // The TTL ran on raft time: k (PX 1000 at 1_000_000) is gone at 1_001_201, j has
        // 1500 - (1_001_202 - 1_000_002) = 300 ms left.
        assert_eq!(ra[5], Some(resp::Frame::Null));
        assert_eq!(ra[6], Some(resp::Frame::Integer(300)));
        let (Some(resp::Frame::Integer(t1)), Some(resp::Frame::Integer(t2))) = (&ra[1], &ra[7]) else {
            panic!("{ra:?}")
        };
        assert!(t1 < t2);
        assert_eq!(digest(&sa), digest(&sb));

        // A snapshot of one node installed on a new node gives the same data and counter. It is
        // the instant the builder was made (a background snapshot): a write applied while it is
        // built is not in it.
        let before = digest(&sa);
        let mut builder = block_on(a.get_snapshot_builder());
        assert!(sa.persistence.snapshot_busy(), "the builder holds the snapshot slot");
        let later = apply_entries(&mut a, vec![entry(9, 1_001_250, "SET late 1")]).unwrap();
        let snap = block_on(builder.build_snapshot()).unwrap();
        assert!(!sa.persistence.snapshot_busy(), "the slot is let go once built");
        let (mut c, sc, _dir_c) = machine("c", 7_000_000);
        block_on(c.install_snapshot(&snap.meta, snap.snapshot)).unwrap();
        assert_eq!(digest(&sc), before);
        assert_eq!(block_on(c.applied_state()).unwrap().0, Some(log[7].log_id));
        assert_eq!(later.len(), 1);
        apply_entries(&mut c, vec![entry(9, 1_001_250, "SET late 1")]).unwrap();
        assert_eq!(digest(&sa), digest(&sc));
        let next = vec![entry(10, 1_001_300, "LOCK n owner 5000")];
        let ra = apply_entries(&mut a, next.clone()).unwrap();
        let rc = apply_entries(&mut c, next).unwrap();
        assert_eq!(ra[0].0, rc[0].0);
        let Some(resp::Frame::Integer(t3)) = ra[0].0[0] else { panic!() };
        assert!(t3 > *t2);
        // A node restarted from its directory starts from the snapshot written there.
        let restarted = StateMachine::open(sa.clone(), Arc::new(RaftClock::new(0)), &a.dir).unwrap();
        assert_eq!(restarted.last_applied, Some(log[7].log_id));
    }

    /// `LOCK ... WAIT` queues in replicated state: every node grants the lock to its waiters in
    /// the same order, at the same entry, with the same tokens (UNLOCK, expiry on raft time), drops
    /// a waiter at its deadline before anything is handed on at that time, and a snapshot taken
    /// with waiters queued carries them to a node that then goes on alike.
    #[test]
    fn lock_waiters_are_replicated_state() {
        let log = vec![
            entry(1, 1_000, "LOCK l a 1000"),
            entry(2, 1_001, "LOCK l b 5000 WAIT 10000"),
            entry(3, 1_002, "LOCK l c 5000 WAIT 100"),
            entry(4, 1_003, "LOCK l d 5000 WAIT 0"),
            // A retry of b's request takes b's place, not a new one.
            entry(5, 1_004, "LOCK l b 5000 WAIT 10000"),
            entry(6, 1_005, "LOCKINFO l"),
            entry(7, 1_050, "UNLOCK l a"),
            // c's deadline (1_102) passes before b's lock expires: c is dropped, never granted.
            entry(8, 1_200, ""),
            entry(9, 1_201, "LOCKINFO l"),
            // b's TTL ends at 6_050: the tick at that time hands the lock to d.
            entry(10, 6_050, ""),
            entry(11, 6_051, "LOCKINFO l"),
        ];
        let run = |sm: &mut StateMachine, entries: &[Entry]| -> (Vec<Option<resp::Frame>>, Vec<Arc<LockWait>>) {
            let replies = apply_entries(sm, entries.to_vec()).unwrap();
            let frames = replies.iter().map(|r| r.0.first().cloned().flatten()).collect();
            let waits = replies.into_iter().flat_map(|r| r.1.into_iter().map(|(_, w)| w)).collect();
            (frames, waits)
        };
        let (mut a, sa, _dir_a) = machine("waits-a", 0);
        let (mut b, sb, _dir_b) = machine("waits-b", 9_000_000);
        let (ra, wa) = run(&mut a, &log);
        let (rb, _) = run(&mut b, &log);
        assert_eq!(ra, rb);
        assert_eq!(digest(&sa), digest(&sb));
        let Some(resp::Frame::Integer(t1)) = ra[0] else { panic!("{ra:?}") };
        assert_eq!(&ra[1..5], &[None, None, None, None], "queued, no reply yet");
        let owners: Vec<&[u8]> = wa.iter().map(|w| &w.id().2[..]).collect();
        assert_eq!(owners, vec![&b"b"[..], b"c", b"d", b"b"]);
        assert!(wa[0].same_place(&wa[3]), "the retry waits on the first request's place");
        assert_eq!((wa[0].ask(), wa[3].ask()), (1, 2), "the retry is the second ask");
        let info = |f: &Option<resp::Frame>| format!("{f:?}");
        assert!(info(&ra[5]).contains("Integer(3)"), "three waiters: {}", info(&ra[5]));
        let Some(resp::Frame::Integer(t2)) = wa[0].outcome() else { panic!("b not granted: {:?}", wa[0].outcome()) };
        assert_eq!(wa[1].outcome(), Some(resp::Frame::Null), "c timed out");
        let Some(resp::Frame::Integer(t3)) = wa[2].outcome() else { panic!("d not granted: {:?}", wa[2].outcome()) };
        assert!(t1 < t2 && t2 < t3, "{t1} {t2} {t3}");
        assert!(info(&ra[10]).contains("\"d\""), "{}", info(&ra[10]));

        // A snapshot with b, c and d queued, installed on a new node: it goes on as the others.
        let (mut c, sc, _dir_c) = machine("waits-c", 0);
        let (mut d, _sd, _dir_d) = machine("waits-d", 0);
        let _ = run(&mut c, &log[..5]);
        let mut builder = block_on(c.get_snapshot_builder());
        let snap = block_on(builder.build_snapshot()).unwrap();
        block_on(d.install_snapshot(&snap.meta, snap.snapshot)).unwrap();
        assert_eq!(d.waits.len(), 3);
        let (rc, _) = run(&mut c, &log[5..]);
        let (rd, _) = run(&mut d, &log[5..]);
        assert_eq!(rc, rd);
        assert_eq!(rc, ra[5..].to_vec());
        assert_eq!(digest(&sc), digest(&sa));
        assert_eq!(d.waits.len(), 0);
    }

    /// A waiter's connection that went away takes the wait out of the queue only if its owner
    /// did not ask for the place again since (its retry, on another connection, still waits); the
    /// count of asks travels in snapshots, so a node that installed one decides alike.
    #[test]
    fn a_leave_takes_the_place_only_for_the_last_ask() {
        let leave = |index: u64, time_ms: u64, ask: u64| Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Request {
                time_ms,
                op: Op::Batch(vec![Work::LeaveQueue(crate::types::LeaveQueue {
                    db: 0,
                    key: Bytes::from_static(b"l"),
                    owner: Bytes::from_static(b"b"),
                    ask,
                })]),
            }),
        };
        let first = vec![
            entry(1, 1_000, "LOCK l a 1000"),
            entry(2, 1_001, "LOCK l b 5000 WAIT 0"),
            entry(3, 1_002, "LOCK l b 5000 WAIT 0"),
            // The first connection went away after the retry: b keeps its place.
            leave(4, 1_003, 1),
        ];
        let then = vec![
            entry(5, 1_004, "LOCKINFO l"),
            // The retry's connection went away too: b leaves, and the release grants no one.
            leave(6, 1_005, 2),
            entry(7, 1_006, "UNLOCK l a"),
            entry(8, 1_007, "EXISTS l"),
        ];
        let (mut a, sa, _dir_a) = machine("leave-a", 0);
        let replies = apply_entries(&mut a, first.clone()).unwrap();
        let waits: Vec<Arc<LockWait>> = replies.into_iter().flat_map(|r| r.1.into_iter().map(|(_, w)| w)).collect();
        assert_eq!(waits.iter().map(|w| w.ask()).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(a.waits.len(), 1, "the leave of the first ask changed nothing");
        // A node that installs a snapshot taken here decides the second leave alike.
        let snap = block_on(block_on(a.get_snapshot_builder()).build_snapshot()).unwrap();
        let (mut b, sb, _dir_b) = machine("leave-b", 0);
        block_on(b.install_snapshot(&snap.meta, snap.snapshot)).unwrap();
        let ra = apply_all(&mut a, then.clone());
        let rb = apply_all(&mut b, then);
        assert_eq!(ra, rb);
        let info = format!("{:?}", ra[0]);
        assert!(info.contains("\"waiters\""), "{info}");
        assert_eq!(ra[1], Some(resp::Frame::Integer(1)), "the last ask's leave takes the place");
        assert_eq!(ra[3], Some(resp::Frame::Integer(0)), "no one was granted the lock");
        assert_eq!(waits[1].outcome(), Some(resp::Frame::Null));
        assert_eq!((a.waits.len(), b.waits.len()), (0, 0));
        assert_eq!(digest(&sa), digest(&sb));
    }

    /// A snapshot of the third format (no count of asks) still loads, each waiter at one ask.
    #[test]
    fn a_third_format_snapshot_loads_its_waiters() {
        let (mut a, _sa, _dir_a) = machine("v3-a", 0);
        apply_all(&mut a, vec![entry(1, 1_000, "LOCK l a 1000"), entry(2, 1_001, "LOCK l b 5000 WAIT 0")]);
        let v4 = a.snapshot_head();
        let (head, rest) = split_snapshot(&v4).unwrap();
        assert!(rest.is_empty());
        assert_eq!(head.waits.len(), 1);
        let v3_waits: Vec<SavedWaitV3> = postcard::from_bytes(
            &postcard::to_allocvec(&head.waits.iter().map(SavedWaitV3::of).collect::<Vec<_>>()).unwrap(),
        )
        .unwrap();
        let mut v3 = SNAP_TAG_V3.to_vec();
        v3.extend_from_slice(&head.time_ms.to_le_bytes());
        v3.extend_from_slice(&head.last_write.to_le_bytes());
        v3.extend_from_slice(&0u32.to_le_bytes());
        let w = postcard::to_allocvec(&v3_waits).unwrap();
        v3.extend_from_slice(&(w.len() as u32).to_le_bytes());
        v3.extend_from_slice(&w);
        v3.extend_from_slice(b"RDB");
        let (old, rdb) = split_snapshot(&v3).unwrap();
        assert_eq!(rdb, b"RDB");
        assert_eq!(old.waits, head.waits, "one ask each, as the fourth format has it here");
    }

    /// A snapshot built slowly never replaces, in the file, a newer one installed meanwhile.
    #[test]
    fn a_slow_build_does_not_overwrite_a_newer_installed_snapshot() {
        let log: Vec<Entry> = (1..=4).map(|i| entry(i, 1_000 + i, "INCR c")).collect();
        let (mut a, _sa, _dir_a) = machine("file-a", 0);
        let (mut b, _sb, _dir_b) = machine("file-b", 0);
        apply_entries(&mut a, log[..2].to_vec()).unwrap();
        apply_entries(&mut b, log.clone()).unwrap();
        let mut slow = block_on(a.get_snapshot_builder());
        let newer = block_on(block_on(b.get_snapshot_builder()).build_snapshot()).unwrap();
        block_on(a.install_snapshot(&newer.meta, newer.snapshot)).unwrap();
        block_on(slow.build_snapshot()).unwrap();
        let current = block_on(a.get_current_snapshot()).unwrap().expect("a snapshot");
        assert_eq!(current.meta.last_log_id, Some(log[3].log_id));
    }

    /// An entry that does not follow the last applied one (a hole in the log) is refused, and
    /// nothing of it or after it is applied: the node stops rather than diverge.
    #[test]
    fn entries_after_a_hole_are_refused() {
        let (mut a, sa, _dir) = machine("hole", 0);
        apply_entries(&mut a, vec![entry(1, 1_000, "INCR c"), entry(2, 1_001, "INCR c")]).unwrap();
        let before = digest(&sa);
        let r = apply_entries(&mut a, vec![entry(4, 1_003, "INCR c"), entry(5, 1_004, "INCR c")]);
        assert!(r.is_err(), "applied across a hole");
        assert_eq!(digest(&sa), before);
        assert_eq!(a.last_applied.map(|l| l.index), Some(2));
        // The entry that follows is applied.
        assert_eq!(apply_all(&mut a, vec![entry(3, 1_002, "INCR c")]), vec![Some(resp::Frame::Integer(3))]);
    }

    /// SPOP, random picks inside scripts and Lua's math.random come out alike on every node,
    /// including one that loaded the set from a snapshot (an intset's members come back sorted
    /// there, in the order they were added on the others).
    #[test]
    fn random_choices_agree_across_nodes_and_snapshots() {
        let (mut a, sa, _dir_a) = machine("rand-a", 0);
        let (mut b, sb, _dir_b) = machine("rand-b", 0);
        let members: Vec<String> = (0..60).map(|i| ((i * 37) % 101).to_string()).collect();
        let mut sadd = vec!["SADD", "s"];
        sadd.extend(members.iter().map(|m| m.as_str()));
        let mut hset = vec!["HSET", "h"];
        for m in &members {
            hset.extend([m.as_str(), "v"]);
        }
        let mut zadd = vec!["ZADD", "z"];
        let scores: Vec<String> = (0..members.len()).map(|i| ((i * 7) % 13).to_string()).collect();
        for (m, sc) in members.iter().zip(&scores) {
            zadd.extend([sc.as_str(), m.as_str()]);
        }
        let setup = vec![entry_of(1, 1_000, &sadd), entry_of(2, 1_001, &hset), entry_of(3, 1_001, &zadd)];
        apply_all(&mut a, setup.clone());
        apply_all(&mut b, setup);
        // A third node starts from a snapshot of the first.
        let mut builder = block_on(a.get_snapshot_builder());
        let snap = block_on(builder.build_snapshot()).unwrap();
        let (mut c, sc, _dir_c) = machine("rand-c", 0);
        block_on(c.install_snapshot(&snap.meta, snap.snapshot)).unwrap();
        let script = "return {redis.call('spop', KEYS[1]), redis.call('srandmember', KEYS[1], -4), \
                      redis.call('hrandfield', KEYS[2], 3), redis.call('zrandmember', KEYS[3]), \
                      redis.call('zrandmember', KEYS[3], -3, 'withscores'), math.random(1000000), math.random()}";
        let log = vec![
            entry(4, 1_002, "SPOP s"),
            entry(5, 1_003, "SPOP s 5"),
            entry_of(6, 1_004, &["EVAL", script, "3", "s", "h", "z"]),
            entry_of(7, 1_005, &["EVAL", script, "3", "s", "h", "z"]),
            entry(8, 1_006, "SPOP s 2"),
        ];
        let ra = apply_all(&mut a, log.clone());
        let rb = apply_all(&mut b, log.clone());
        let rc = apply_all(&mut c, log);
        assert_eq!(ra, rb);
        assert_eq!(ra, rc);
        // Different entries draw differently: two runs of one script pick differently.
        assert_ne!(ra[2], ra[3]);
        assert_eq!(digest(&sa), digest(&sb));
        assert_eq!(digest(&sa), digest(&sc));
        let card = |srv: &Server| {
            let mut cl = srv.new_client("t".into(), String::new());
            srv.execute(&mut cl, &[Bytes::from("SCARD"), Bytes::from("s")])
        };
        assert_eq!(card(&sa), Some(resp::Frame::Integer(60 - 1 - 5 - 2 - 2)));
    }

    /// Scripts loaded through the log and function libraries reach a node that installs a snapshot:
    /// the script cache travels in the snapshot, the libraries in its RDB file.
    #[test]
    fn snapshots_carry_scripts_and_functions() {
        let (mut a, _, _dir_a) = machine("scripts-a", 0);
        let body = "return redis.call('incr', KEYS[1])";
        let lib = "#!lua name=mylib\nredis.register_function('bump', function(keys) return redis.call('incrby', keys[1], 10) end)";
        let r = apply_all(
            &mut a,
            vec![entry_of(1, 1_000, &["SCRIPT", "LOAD", body]), entry_of(2, 1_001, &["FUNCTION", "LOAD", lib])],
        );
        let sha = engine::lua::script_sha(body.as_bytes());
        assert_eq!(r[0], Some(resp::Frame::bulk(sha.clone())));
        let mut builder = block_on(a.get_snapshot_builder());
        let snap = block_on(builder.build_snapshot()).unwrap();
        let (mut c, sc, _dir_c) = machine("scripts-c", 0);
        sc.scripting.create_script(&Bytes::from("return 'stale'")).unwrap();
        block_on(c.install_snapshot(&snap.meta, snap.snapshot)).unwrap();
        assert!(sc.scripting.scripts.lock().contains_key(&sha));
        // A node restarted from its directory gets them from the snapshot file.
        let clock = Arc::new(RaftClock::new(0));
        let fresh = Arc::new(Server::new(engine::config::Config::default(), clock.clone()));
        let reopened = StateMachine::open(fresh.clone(), clock, &a.dir).unwrap();
        assert_eq!(reopened.last_write, 2);
        assert!(fresh.scripting.scripts.lock().contains_key(&sha));
        assert!(fresh.scripting.function("bump").is_some());
        assert!(!sc.scripting.scripts.lock().contains_key(&engine::lua::script_sha(b"return 'stale'")));
        assert_eq!(c.last_write, 2);
        let log =
            vec![entry_of(3, 1_002, &["EVALSHA", &sha, "1", "k"]), entry_of(4, 1_003, &["FCALL", "bump", "1", "k"])];
        assert_eq!(apply_all(&mut a, log.clone()), apply_all(&mut c, log.clone()));
        assert_eq!(apply_all(&mut c, vec![entry(5, 1_004, "GET k")]), vec![Some(resp::Frame::bulk("11"))]);
        // A first-format snapshot still loads.
        let (head, rdb) = split_snapshot(&a.snapshot_bytes()).map(|(h, r)| (h, r.to_vec())).unwrap();
        let mut v1 = SNAP_TAG_V1.to_vec();
        v1.extend_from_slice(&head.time_ms.to_le_bytes());
        v1.extend_from_slice(&rdb);
        let (mut d, sd, _dir_d) = machine("scripts-d", 0);
        // What `a` holds now: entries up to 4 applied.
        let mut meta = snap.meta.clone();
        meta.last_log_id = Some(log[1].log_id);
        d.load(&meta, &v1).unwrap();
        assert_eq!(apply_all(&mut d, vec![entry(5, 1_004, "GET k")]), vec![Some(resp::Frame::bulk("11"))]);
        assert!(sd.scripting.scripts.lock().is_empty());
    }

    fn transaction(index: u64, time_ms: u64, lines: &[&str], watch: Option<crate::types::WatchGuard>) -> Entry {
        let commands = lines.iter().map(|l| l.split(' ').map(|w| Bytes::from(w.to_string())).collect()).collect();
        let t = crate::types::Transaction { db: 0, resp3: false, commands, watch };
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Request { time_ms, op: Op::Batch(vec![Work::Transaction(t)]) }),
        }
    }

    /// A transaction is one entry: every node runs it whole and answers EXEC's array; a watched
    /// one is aborted alike on every node when an entry after the leader's check carried commands
    /// or a watched key expired since.
    #[test]
    fn transactions_and_their_watch_guards_apply_alike() {
        let guard = |checked_at: u64, alive: &[&str]| {
            Some(crate::types::WatchGuard {
                checked_at,
                alive: alive.iter().map(|k| (0, Bytes::from(k.to_string()))).collect(),
            })
        };
        let log = vec![
            transaction(1, 1_000, &["INCR a", "INCR a", "SET t v PX 100"], None),
            // Checked at 1, nothing written since: runs.
            transaction(2, 1_001, &["INCR a"], guard(1, &["a", "t"])),
            entry(3, 1_002, "SET b 1"),
            // Checked at 2, but entry 3 wrote: aborted.
            transaction(4, 1_003, &["INCR a"], guard(2, &["a"])),
            // Checked at 4 (entry 4 counts as a write, so the check is at or after it): runs.
            transaction(5, 1_004, &["INCR a"], guard(5, &["a", "t"])),
            entry(6, 1_200, ""),
            // t was alive at the check and its TTL ran out on raft time since: aborted.
            transaction(7, 1_201, &["INCR a"], guard(6, &["a", "t"])),
            // A queuing error: EXECABORT, on every node.
            transaction(8, 1_202, &["INCR a", "NOSUCHCOMMAND x"], None),
            entry(9, 1_203, "GET a"),
        ];
        let (mut a, sa, _dir_a) = machine("tx-a", 0);
        let (mut b, sb, _dir_b) = machine("tx-b", 0);
        let ra = apply_all(&mut a, log.clone());
        assert_eq!(ra, apply_all(&mut b, log));
        use resp::Frame as F;
        assert_eq!(ra[0], Some(F::Array(vec![F::Integer(1), F::Integer(2), F::ok()])));
        assert_eq!(ra[1], Some(F::Array(vec![F::Integer(3)])));
        assert_eq!(ra[3], Some(F::NullArray));
        assert_eq!(ra[4], Some(F::Array(vec![F::Integer(4)])));
        assert_eq!(ra[6], Some(F::NullArray));
        assert!(matches!(&ra[7], Some(F::Error(e)) if e.starts_with(b"EXECABORT")), "{:?}", ra[7]);
        assert_eq!(ra[8], Some(F::bulk("4")));
        assert_eq!(digest(&sa), digest(&sb));
    }

    /// A blocking command that finds nothing changes nothing on any node and hands back what its
    /// client waits for (keys, timeout, timeout reply); the serve step proposed later pops the
    /// same element on every node, and one that finds nothing says so.
    #[test]
    fn blocking_commands_hand_back_their_wait_and_serve_steps_apply_alike() {
        let serve = |index: u64, time_ms: u64, args: &[&str], keys: &[&str]| Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Request {
                time_ms,
                op: Op::Batch(vec![Work::Serve(crate::types::ServeWaiter {
                    db: 0,
                    resp3: false,
                    args: args.iter().map(|w| Bytes::from(w.to_string())).collect(),
                    keys: keys.iter().map(|w| Bytes::from(w.to_string())).collect(),
                })]),
            }),
        };
        let log = vec![
            entry(1, 1_000, "BLPOP q other 1.5"),
            entry(2, 1_001, "RPUSH q a b"),
            serve(3, 1_002, &["BLPOP", "q", "other", "1.5"], &["q"]),
            serve(4, 1_003, &["BLPOP", "q", "other", "1.5"], &["other"]),
            entry(5, 1_004, "LRANGE q 0 -1"),
            entry(6, 1_005, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
            entry(7, 1_006, "BZPOPMIN z 0"),
        ];
        let (mut a, sa, _dir_a) = machine("block-a", 0);
        let (mut b, sb, _dir_b) = machine("block-b", 5_000_000);
        let ra = apply_entries(&mut a, log.clone()).unwrap();
        let rb = apply_entries(&mut b, log).unwrap();
        for r in [&ra, &rb] {
            // The blocking pop found nothing: no reply, what to wait for instead.
            assert_eq!(r[0].0, vec![None]);
            let Some(w) = &r[0].2[0].1 else { panic!("{:?}", r[0]) };
            assert_eq!(w.request.keys, vec![Bytes::from("q"), Bytes::from("other")]);
            assert_eq!(w.timeout, Some(Duration::from_millis(1500)));
            assert_eq!(w.request.timeout_reply, Frame::NullArray);
            // The serve step pops the first element; the one for a key still empty finds nothing.
            assert_eq!(r[2].0, vec![Some(Frame::Array(vec![Frame::bulk("q"), Frame::bulk("a")]))]);
            assert!(r[2].2.is_empty());
            assert_eq!(r[3].0, vec![None]);
            assert!(matches!(r[3].2[..], [(0, None)]));
            assert_eq!(r[4].0, vec![Some(Frame::Encoded(Bytes::from_static(b"*1\r\n$1\r\nb\r\n")))]);
            // XREADGROUP on a missing group answers at once; BZPOPMIN waits forever.
            assert!(matches!(&r[5].0[0], Some(Frame::Error(e)) if e.starts_with(b"NOGROUP")));
            assert!(r[5].2.is_empty());
            assert!(matches!(&r[6].2[..], [(0, Some(w))] if w.timeout.is_none()));
        }
        assert_eq!(digest(&sa), digest(&sb));
        // Nobody is left blocked on either node: the apply client never queues such a wait.
        assert_eq!(sa.blocked_clients.load(Ordering::Relaxed), 0);
        assert_eq!(sb.blocked_clients.load(Ordering::Relaxed), 0);
    }
}
