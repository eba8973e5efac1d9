//! Latch's engine: everything between a decoded request and its reply, with no IO, in layers that
//! only import downward (ARCHITECTURE.md draws them; `tests/tidy.rs` enforces them):
//!
//! * base: [`primitives`] (the byte strings and hasher values are built from), [`value`] (what a
//!   key holds, kept small), [`types`], [`clock`] (injected time; TTLs run on a monotonic
//!   timeline), [`changes`] (the change stream's effects), [`args`], [`error`], [`glob`], [`host`],
//!   [`rdb`] (Redis's value encoding).
//! * store: [`keyspace`] (the sharded tables, locking, expiry index, SCAN positions), [`db`] (a
//!   database as a handler sees it).
//! * ops: [`ops`], data-type operations written once for every command path that reaches them.
//! * runtime: [`command`] (the command table and the handler context), [`server`] (shared state),
//!   [`dispatch`] ([`server::Server::execute`], the single entry point), [`client`], [`waiters`]
//!   (blocked clients), [`transactions`] (MULTI/WATCH state), [`lua`], [`config`], [`stats`],
//!   [`latency`], [`evict`] (`maxmemory`), [`docs`], [`persistence`] (RDB files).
//! * families: [`cmd`], one module per command family.
//! * assembly: `Server::new`, which joins the families to the runtime; the test kit.
//!
//! **Architecture invariant:** this crate knows nothing about sockets, files or tokio; the `server`
//! crate owns IO and calls [`server::Server::execute`].

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod acl;
pub mod args;
mod assemble;
pub mod changes;
pub mod client;
pub mod clients;
pub mod clock;
pub mod cmd;
pub mod command;
pub mod config;
pub mod ctx;
pub mod db;
pub mod densemap;
pub mod dispatch;
pub mod docs;
pub mod error;
pub mod evict;
pub mod geohash;
pub mod glob;
pub mod host;
pub mod keyspace;
pub mod latency;
pub mod lua;
pub mod lzf;
pub mod message;
pub mod notify;
pub mod ops;
pub mod pause;
pub mod persistence;
pub mod primitives;
pub mod pubsub;
pub mod random;
pub mod rdb;
pub mod repl;
pub mod server;
pub mod stats;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod tracking;
pub mod transactions;
pub mod types;
pub mod upstream;
pub mod value;
pub mod version;
pub mod waiters;

pub use bytes::Bytes;
pub use resp::{Frame, Protocol};
