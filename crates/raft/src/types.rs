//! The group's type configuration and what travels through its log.

use bytes::Bytes;
use resp::Frame;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::io::Cursor;

openraft::declare_raft_types!(
    /// Latch's openraft configuration: entries carry [`Request`]s, the state machine answers
    /// [`Reply`]s, nodes are numbered by `raft-id` and addressed by their raft port (snapshots are
    /// RDB files in memory: [`SnapshotData`]).
    pub TypeConfig:
        D = Request,
        R = Reply,
        NodeId = u64,
        Node = openraft::BasicNode,
        AsyncRuntime = openraft::TokioRuntime,
);

/// What a snapshot travels and installs as: the snapshot file's bytes.
pub type SnapshotData = Cursor<Vec<u8>>;

/// One entry of the log: the leader's raft time when it proposed it, and what to do.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Request {
    /// The proposing leader's raft time in milliseconds (see `machine`): applying the entry moves
    /// every node's engine clock to at least this.
    pub time_ms: u64,
    /// The work.
    pub op: Op,
}

impl std::fmt::Display for Request {
    /// A summary for openraft's logs: the raft time and what the entry holds, not its arguments.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.op {
            Op::Commands(c) => write!(f, "t={} commands({})", self.time_ms, c.len()),
            Op::Tick => write!(f, "t={} tick", self.time_ms),
            Op::Batch(w) => write!(f, "t={} batch({})", self.time_ms, w.len()),
        }
    }
}

/// A client's write command.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Command {
    /// The database the client had selected.
    pub db: u32,
    /// Whether the client speaks RESP3 (replies are shaped for it on the leader).
    pub resp3: bool,
    /// The argument vector, command name first.
    pub args: Vec<Bytes>,
}

/// What an entry does once committed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Op {
    /// Clients' write commands, run on every node's engine in log order: the writes that
    /// arrived while the previous entry was being committed go in one entry (one fsync and one
    /// round trip for all of them).
    Commands(Vec<Command>),
    /// Only time passes: the leader proposes one while keys with a TTL exist, so that expiry
    /// (decided on raft time) does not wait for the next write.
    Tick,
    /// Clients' writes and transactions, run in log order like [`Op::Commands`] (which the leader
    /// still proposes when an entry holds no transaction).
    Batch(Vec<Work>),
}

/// One client's work in an [`Op::Batch`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Work {
    /// A write command.
    Command(Command),
    /// A MULTI ... EXEC transaction.
    Transaction(Transaction),
    /// A lock waiter whose client went away leaves the queue (if still in it). Proposed by
    /// earlier versions; [`Work::LeaveQueue`] now.
    CancelWait(CancelWait),
    /// A lock waiter's connection went away: its wait leaves the queue, if still in it and if its
    /// owner did not ask for the place again since.
    LeaveQueue(LeaveQueue),
    /// A blocked client's key can serve it now (a blocking pop or XREADGROUP waiting on the
    /// leader, see `engine::waiters`' ringing waiters): every node runs the command's serve step.
    Serve(ServeWaiter),
}

/// What [`Work::Serve`] runs: the serve step of a blocked command for the first of `keys` that
/// serves it, as the write that made the key ready would have served a waiter in Redis.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ServeWaiter {
    /// The database the client had selected.
    pub db: u32,
    /// Whether the client speaks RESP3.
    pub resp3: bool,
    /// The blocked command's serve arguments (XREADGROUP's as its blocked form: `COUNT` given).
    pub args: Vec<Bytes>,
    /// The keys written since it blocked, in the order they rang.
    pub keys: Vec<Bytes>,
}

/// Which ask of which waiter [`Work::LeaveQueue`] takes out of the queue.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct LeaveQueue {
    /// The database.
    pub db: u32,
    /// The lock's key.
    pub key: Bytes,
    /// The waiting owner.
    pub owner: Bytes,
    /// The ask the connection made (1 for the first request, then one more per retry).
    pub ask: u64,
}

/// Which waiter [`Work::CancelWait`] removes: `owner`'s on `key` in database `db`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct CancelWait {
    /// The database.
    pub db: u32,
    /// The lock's key.
    pub key: Bytes,
    /// The waiting owner.
    pub owner: Bytes,
}

/// A client's transaction, queued on the node it is connected to and proposed at EXEC: every node
/// runs MULTI, the commands and EXEC on its engine, and the client gets the leader's EXEC reply.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Transaction {
    /// The database the client had selected.
    pub db: u32,
    /// Whether the client speaks RESP3.
    pub resp3: bool,
    /// The queued commands' argument vectors.
    pub commands: Vec<Vec<Bytes>>,
    /// The client's WATCH, checked by the leader: the transaction runs only if nothing could have
    /// changed the watched keys since.
    pub watch: Option<WatchGuard>,
}

/// What every node checks of a watched transaction, so that all of them abort it or none: the
/// leader found the watched keys unchanged after applying every entry up to `checked_at`, so the
/// transaction is aborted (EXEC answers a null array) if an entry after that one carried commands
/// (any commands: a conservative test that needs no record of which keys an entry changed), or if
/// a key that was alive at the check has expired since (raft time went on through ticks).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct WatchGuard {
    /// The log index the leader had applied when it checked the watched keys.
    pub checked_at: u64,
    /// The watched keys (database, key) that existed, unexpired, at the check.
    pub alive: Vec<(u32, Bytes)>,
}

/// What applying an entry answered: the engine's reply to each of its commands, in order (none
/// for ticks, membership and blank entries). Replies are handed from the state machine to the
/// `client_write` caller on the same node and never cross the network, so they serialize as
/// nothing and deserialize as an empty `Reply` (openraft's `serde` feature asks for the traits).
///
/// The second part names the commands that queued as lock waiters (`LOCK ... WAIT`), by their
/// place in the first, with the handle their proposer waits on (see `waits`). The third names the
/// blocking commands and [`Work::Serve`] runs that found nothing to serve them: a blocking command
/// hands back what its client waits for.
#[derive(Debug, Default)]
pub struct Reply(
    pub Vec<Option<Frame>>,
    pub Vec<(usize, std::sync::Arc<crate::waits::LockWait>)>,
    pub Vec<(usize, Option<BlockWait>)>,
);

/// What a blocking command that found nothing (a pop, XREADGROUP ... BLOCK) leaves its client to
/// wait for: the engine's request (its keys, timeout reply and serve arguments, see
/// `engine::client::Client::defer_blocking`) and the timeout, as a duration (None: forever).
pub struct BlockWait {
    /// What the command asked to block on.
    pub request: engine::waiters::BlockRequest,
    /// How long it may wait (its deadline less the raft time it was applied at).
    pub timeout: Option<std::time::Duration>,
}

impl std::fmt::Debug for BlockWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockWait").field("keys", &self.request.keys).field("timeout", &self.timeout).finish()
    }
}

impl Serialize for Reply {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

impl<'de> Deserialize<'de> for Reply {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Reply, D::Error> {
        <()>::deserialize(d)?;
        Ok(Reply::default())
    }
}

/// A node id.
pub type NodeId = u64;
/// A log entry.
pub type Entry = openraft::alias::EntryOf<TypeConfig>;
/// A log position.
pub type LogId = openraft::alias::LogIdOf<TypeConfig>;
/// The vote a node keeps.
pub type Vote = openraft::alias::VoteOf<TypeConfig>;
/// The leader id a log position names (term and node).
#[cfg(test)]
pub type CommittedLeaderId = openraft::alias::CommittedLeaderIdOf<TypeConfig>;
/// A snapshot's description.
pub type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;
/// A snapshot with its data.
pub type Snapshot = openraft::alias::SnapshotOf<TypeConfig, SnapshotData>;
/// The membership a log or snapshot holds, with the log id that set it.
pub type StoredMembership = openraft::alias::StoredMembershipOf<TypeConfig>;
