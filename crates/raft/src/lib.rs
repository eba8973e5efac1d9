//! Latch's consensus mode: 3 or 5 `latch-server` nodes form one Raft group (openraft 0.10) and
//! every write command goes through its log before it runs, on every node, in log order.
//!
//! - `types`: the openraft type configuration and the log's entries (client commands with the
//!   leader's raft time).
//! - `store`: the log and the vote in files under `dir`; an append is reported flushed (and a
//!   follower acknowledges it) only after its fsync.
//! - `machine`: the state machine, which runs committed commands on the node's `engine::Server`
//!   with the engine clock following raft time; snapshots are the engine's RDB files.
//! - `net`: the framed TCP transport on the raft port.
//! - `route`: which commands are proposed, read after a linearizable check, run locally or
//!   refused; Redis Cluster key slots for `-MOVED`.
//! - `waits`: lock waiters (`LOCK ... WAIT`) as replicated state, and the handle their clients
//!   wait on.
//! - `node`: the running node ([`Consensus`]) the connection layer talks to, `CLUSTER` and
//!   `INFO consensus`.
//!
//! Every openraft type stays inside this crate: the server crate sees [`Consensus`],
//! [`Decision`], [`Answer`], [`BlockWait`], [`Options`], [`RaftClock`] and [`LockWait`] only.

mod machine;
mod net;
mod node;
mod options;
mod route;
mod store;
mod types;
mod waits;

pub use machine::RaftClock;
pub use node::{Answer, CLUSTERDOWN, Consensus, Decision};
pub use options::Options;
pub use route::key_slot;
pub use types::BlockWait;
pub use waits::LockWait;
