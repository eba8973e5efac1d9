//! Command families. Each module exports `COMMANDS`, a slice of table entries with their handlers;
//! handlers parse, operate through [`crate::db::Db`], and return a reply.

pub mod acl;
pub mod base;
pub mod bits;
pub mod blocking;
pub mod client;
pub mod cluster;
pub mod connection;
pub mod debug;
pub mod expire;
pub mod geo;
pub mod hash;
pub mod hyperloglog;
pub mod introspection;
pub mod keyspace;
pub mod latency;
pub mod list;
pub mod lock;
pub mod lolwut;
pub mod memory;
pub mod migrate;
pub mod module;
pub mod multi;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod set;
pub mod sort;
pub mod stream;
pub mod string;
pub mod zset;

use crate::ctx::Command;

/// Every family's table, in the order COMMAND lists them (sorted later).
pub static FAMILIES: &[&[Command]] = &[
    connection::COMMANDS,
    client::COMMANDS,
    server::COMMANDS,
    debug::COMMANDS,
    latency::COMMANDS,
    module::COMMANDS,
    introspection::COMMANDS,
    keyspace::COMMANDS,
    migrate::COMMANDS,
    expire::COMMANDS,
    string::COMMANDS,
    bits::COMMANDS,
    hyperloglog::COMMANDS,
    list::COMMANDS,
    memory::COMMANDS,
    hash::COMMANDS,
    set::COMMANDS,
    sort::COMMANDS,
    zset::COMMANDS,
    geo::COMMANDS,
    stream::COMMANDS,
    multi::COMMANDS,
    blocking::COMMANDS,
    lock::COMMANDS,
    cluster::COMMANDS,
    scripting::COMMANDS,
    pubsub::COMMANDS,
    acl::COMMANDS,
    replication::COMMANDS,
];

/// The command table, built once, for code that must resolve commands without a server at hand
/// (key extraction of commands that wrap other commands, such as FENCED).
pub fn table() -> &'static crate::ctx::CommandTable {
    static TABLE: std::sync::OnceLock<crate::ctx::CommandTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| crate::ctx::CommandTable::new(FAMILIES))
}

pub use crate::args::repr;
