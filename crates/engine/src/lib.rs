//! Latch's engine: everything between a decoded request and its reply, with no IO.
//!
//! * [`clock`]: injected time; TTLs run on a monotonic timeline.
//! * [`value`]: what a key holds, kept small.
//! * [`keyspace`]: the sharded tables, locking, expiry index, SCAN positions.
//! * [`db`]: a database as a handler sees it.
//! * [`ops`]: data-type operations written once, for every command path that reaches them.
//! * [`command`]: the command table and the handler context.
//! * [`cmd`]: the command families (one module each) and their handlers.
//! * [`changes`]: the change stream (dirty count, effects for the AOF and replicas).
//! * [`server`]: shared state and [`server::Server::execute`], the single entry point.
//! * [`evict`]: `maxmemory` and the eviction policies.
//! * [`stats`]: counters behind `INFO stats`/`commandstats`/`errorstats`, striped per thread.
//! * [`config`], [`client`], [`error`], [`args`], [`glob`]: supporting pieces.
//!
//! **Architecture invariant:** this crate knows nothing about sockets, tokio or threads; the `server`
//! crate owns IO and calls [`server::Server::execute`].

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod args;
mod assemble;
pub mod blocking;
pub mod changes;
pub mod client;
pub mod clock;
pub mod cmd;
pub mod command;
pub mod config;
pub mod db;
pub mod docs;
pub mod error;
pub mod evict;
pub mod glob;
pub mod host;
pub mod keyspace;
pub mod latency;
pub mod lua;
pub mod multi;
pub mod ops;
pub mod server;
pub mod stats;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod types;
pub mod value;

pub use bytes::Bytes;
pub use resp::{Frame, Protocol};
