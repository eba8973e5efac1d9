//! `maxmemory` in the composition: eviction (`crate::evict`) runs on the server's keyspace,
//! configuration and counters, and hands freed keys' waiters back to dispatch.

use super::Server;
use crate::evict::{Evicted, Hooks, Scope, TableEviction};
use crate::keyspace::{Locked, Table};

impl Hooks for Server {
    fn serve_ready(&self, locked: &mut Locked<'_>, now: u64) {
        Server::serve_ready(self, locked, now);
    }
    fn latency_sample(&self, event: &'static str, ms: u64) {
        Server::latency_sample(self, event, ms);
    }
    fn paused(&self) -> bool {
        self.pause_in_force()
    }
    fn not_counted_memory(&self) -> u64 {
        Server::not_counted_memory(self)
    }
}

impl crate::db::MakeRoom for Server {
    fn make_room(&self, t: &mut Table, key: &[u8], with_ttl: bool, now_ms: u64) {
        if let Some(e) = self.table_evictor() {
            e.make_room(t, key, with_ttl, now_ms);
        }
    }
}

impl Server {
    fn table_evictor(&self) -> Option<TableEviction<'_>> {
        TableEviction::new(&self.config, &self.evictor, || self.pause_in_force(), || self.not_counted_memory())
    }

    /// Used memory that `maxmemory` does not count (Redis's `freeMemoryGetNotCountedMemory`): the
    /// replication buffer beyond the backlog's share (the replicas' output) and the AOF
    /// buffer. INFO shows it as `mem_not_counted_for_evict`.
    pub fn not_counted_memory(&self) -> u64 {
        self.repl.not_counted_memory() + self.changes.aof_buffer_bytes()
    }

    /// What a command's [`crate::db::Db`] evicts through when a new key would grow a full table, or
    /// None when nothing is evicted (no `maxmemory`, or `noeviction`).
    pub fn table_eviction(&self) -> Option<&dyn crate::db::MakeRoom> {
        self.table_evictor().map(|_| self as &dyn crate::db::MakeRoom)
    }

    /// Redis's `performEvictions` on this server (see [`Scope::perform_evictions`]).
    pub fn perform_evictions(&self) -> Evicted {
        let scope = Scope {
            ks: &self.ks,
            config: &self.config,
            clock: &*self.clock,
            evictor: &self.evictor,
            stats: &self.stats,
            hooks: self,
        };
        scope.perform_evictions()
    }
}
