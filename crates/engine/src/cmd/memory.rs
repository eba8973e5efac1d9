//! MEMORY: USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE, HELP, and the figures `INFO memory` shares.
//!
//! Used memory is the allocator's count ([`crate::host::Host::used_memory`]), as Redis's is; what it is
//! made of is estimated from the data structures' sizes (see [`crate::value::Value::heap_size`] and
//! `Table::overhead_bytes`):
//! - `MEMORY USAGE key` = the table slot (key header + [`Entry`] + stored hash + index), the key's
//!   heap bytes when it does not fit inline, the expiry index entry when the key has a TTL, and the
//!   value's heap. `SAMPLES` is parsed and validated as Redis does but ignored: the estimate always
//!   covers every element (it is O(N), like `SAMPLES 0`).
//! - Overhead (`used_memory_overhead`, `MEMORY STATS`) = memory at startup + client buffers + the
//!   tables' structures; the dataset is the rest of used memory. Both are O(shards), never O(keys).
//! - `MEMORY MALLOC-STATS` answers as a Redis built without jemalloc; `MEMORY PURGE` is a no-op.

use super::base::BASE;
use crate::args::eq_ic;
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::error;
use crate::value::{Entry, Value};
use bytes::Bytes;
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] =
    &[Command { name: "memory", arity: -2, group: crate::command::Group::Server, subcommands: SUBCOMMANDS, ..BASE }];

static SUBCOMMANDS: &[Command] = &[
    Command {
        name: "memory|doctor",
        arity: 2,
        flags: Flags::ALL_SHARDS,
        group: crate::command::Group::Server,
        handler: doctor,
        ..BASE
    },
    Command {
        name: "memory|help",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE),
        group: crate::command::Group::Server,
        handler: help,
        ..BASE
    },
    Command {
        name: "memory|malloc-stats",
        arity: 2,
        group: crate::command::Group::Server,
        handler: malloc_stats,
        ..BASE
    },
    Command { name: "memory|purge", arity: 2, group: crate::command::Group::Server, handler: purge, ..BASE },
    Command {
        name: "memory|stats",
        arity: 2,
        flags: Flags::ALL_SHARDS,
        group: crate::command::Group::Server,
        handler: stats,
        ..BASE
    },
    Command {
        name: "memory|usage",
        arity: -3,
        flags: Flags::READONLY,
        keys: Keys::Range { first: 2, last: 2, step: 1 },
        group: crate::command::Group::Server,
        handler: usage,
        ..BASE
    },
];

fn help(ctx: &mut Ctx<'_, '_>) -> Frame {
    const HELP: &[&str] = &[
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
    ];
    super::keyspace::help_reply(ctx.arg(0), HELP)
}

/// Bytes of one key's table slot: the key, the entry and the index bucket (as `Table` lays them out).
const SLOT_BYTES: usize = crate::keyspace::Table::SLOT_BYTES;
/// Bytes a TTL adds: the key's place in its table's list of keys with a TTL, and its deadline.
const EXPIRY_BYTES: usize = crate::keyspace::Table::TTL_BYTES;

/// Estimated bytes used by a key and its value; a stream's nodes are sampled `samples` at a time
/// (0: all), as Redis samples them.
pub fn key_usage(key: &[u8], e: &Entry, samples: usize) -> usize {
    // A key is a `Str`: inline up to `Str::INLINE` bytes, else one exact block.
    let key_heap = if key.len() > crate::value::Str::INLINE { key.len() } else { 0 };
    let ttl = if e.has_ttl() { EXPIRY_BYTES } else { 0 };
    let value = match &e.value {
        Value::Stream(s) => s.redis_usage(samples),
        v => v.heap_size(),
    };
    SLOT_BYTES + key_heap + ttl + value
}

/// How many of a value's parts `MEMORY USAGE` samples without `SAMPLES` (Redis's
/// `OBJ_COMPUTE_SIZE_DEF_SAMPLES`).
const DEFAULT_SAMPLES: usize = 5;

fn usage(ctx: &mut Ctx<'_, '_>) -> Frame {
    let mut j = 3;
    let mut samples = DEFAULT_SAMPLES;
    while j < ctx.argc() {
        if eq_ic(ctx.arg(j), "samples") && j + 1 < ctx.argc() {
            match ctx.int_arg(j + 1) {
                Ok(n) if n < 0 => return error::syntax(),
                Ok(n) => samples = n as usize,
                Err(e) => return e,
            }
            j += 2;
        } else {
            return error::syntax();
        }
    }
    let key = ctx.arg(2);
    match ctx.db().peek(key) {
        Some(e) => Frame::Integer(key_usage(key, e, samples) as i64),
        None => Frame::Null,
    }
}

/// What Redis's `getMemoryOverheadData` gathers, for `INFO memory` and `MEMORY STATS`.
#[derive(Default)]
pub struct Figures {
    /// `used_memory`.
    pub used: u64,
    /// `used_memory_peak`.
    pub peak: u64,
    /// `used_memory_startup`.
    pub startup: u64,
    /// `mem_clients_normal`: query and output buffers of the connected clients but replicas
    /// (Redis counts a replica's output in the replication buffer, [`Figures::repl`]).
    pub clients: u64,
    /// The replication buffer: `mem_replication_backlog`, `mem_clients_slaves`,
    /// `mem_total_replication_buffers`.
    pub repl: crate::repl::BufferMemory,
    /// `mem_aof_buffer`.
    pub aof_buffer: u64,
    /// `mem_not_counted_for_evict`.
    pub not_counted: u64,
    /// `used_memory_overhead`.
    pub overhead: u64,
    /// `used_memory_dataset`.
    pub dataset: u64,
    /// Keys over all databases.
    pub keys: u64,
    /// (db, main overhead, expires overhead) for non-empty databases.
    pub dbs: Vec<(usize, u64, u64)>,
    /// `used_memory_rss`: the process's resident set.
    pub rss: u64,
    /// `allocator_allocated`, `allocator_active`, `allocator_resident`: the allocator's totals,
    /// or where it gives none Redis's stand-ins (the resident set less Lua's memory, that again,
    /// `used_memory`), so that the ratios below still say something.
    pub allocator: crate::host::AllocatorStats,
}

impl Figures {
    /// `allocator_frag_ratio` and `allocator_frag_bytes`: pages the allocator keeps active beyond
    /// what it handed out (the bytes are C's `size_t` difference, as Redis computes it).
    pub fn allocator_frag(&self) -> (f64, u64) {
        let a = &self.allocator;
        (ratio(a.active, a.allocated), a.active.wrapping_sub(a.allocated))
    }
    /// `allocator_rss_ratio` and `allocator_rss_bytes`: resident pages beyond the active ones.
    pub fn allocator_rss(&self) -> (f64, i64) {
        let a = &self.allocator;
        (ratio(a.resident, a.active), a.resident.wrapping_sub(a.active) as i64)
    }
    /// `rss_overhead_ratio` and `rss_overhead_bytes`: the resident set beyond the allocator's.
    pub fn rss_overhead(&self) -> (f64, i64) {
        (ratio(self.rss, self.allocator.resident), self.rss.wrapping_sub(self.allocator.resident) as i64)
    }
    /// `mem_fragmentation_ratio` and `mem_fragmentation_bytes`: the resident set against
    /// `used_memory`, everything between them included.
    pub fn total_frag(&self) -> (f64, i64) {
        (ratio(self.rss, self.used), self.rss.wrapping_sub(self.used) as i64)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Calls its argument on every shard (locking each in turn, or over shards already locked).
pub type EachShard<'a> = &'a mut dyn FnMut(&mut dyn FnMut(&mut crate::keyspace::Shard));

/// Reads used memory (raising the peak) and estimates its parts; `shards` visits every shard.
pub fn figures(srv: &crate::server::Server, shards: EachShard<'_>) -> Figures {
    use std::sync::atomic::Ordering;
    let mut f = Figures { used: srv.config.host().used_memory(), ..Figures::default() };
    f.peak = srv.memory_peak.fetch_max(f.used, Ordering::Relaxed).max(f.used);
    f.startup = srv.memory_startup.load(Ordering::Relaxed);
    f.clients = srv
        .clients
        .snapshot()
        .iter()
        .filter(|c| !c.has_flag('S'))
        .map(|c| (c.qbuf_cap.load(Ordering::Relaxed) + c.output_pending()) as u64)
        .sum();
    f.repl = srv.repl.memory();
    f.aof_buffer = srv.changes.aof_buffer_bytes();
    f.not_counted = f.repl.not_counted + f.aof_buffer;
    let mut per_db = vec![(0u64, 0u64, 0u64); srv.ks.ndbs()];
    let mut tables = 0u64;
    shards(&mut |s| {
        for (i, table) in s.dbs.iter().enumerate() {
            tables += table.overhead_bytes() as u64;
            if let Some(d) = per_db.get_mut(i) {
                d.0 += table.len() as u64;
                d.1 += (table.len() * SLOT_BYTES) as u64;
                d.2 += (table.volatile_len() * EXPIRY_BYTES) as u64;
            }
        }
    });
    f.keys = per_db.iter().map(|d| d.0).sum();
    f.dbs = per_db.into_iter().enumerate().filter(|(_, d)| d.0 > 0).map(|(i, d)| (i, d.1, d.2)).collect();
    f.overhead = f.startup + f.clients + f.repl.backlog + f.repl.replicas + f.aof_buffer + tables;
    f.dataset = f.used.saturating_sub(f.overhead);
    let host = srv.config.host();
    f.rss = host.rss_bytes();
    f.allocator = host.allocator_stats();
    if f.allocator.resident == 0 {
        f.allocator.resident = f.rss.saturating_sub(srv.scripting.memory_info().vm_bytes);
    }
    if f.allocator.active == 0 {
        f.allocator.active = f.allocator.resident;
    }
    if f.allocator.allocated == 0 {
        f.allocator.allocated = f.used;
    }
    f
}

fn stats(ctx: &mut Ctx<'_, '_>) -> Frame {
    let srv = ctx.srv;
    let t = figures(srv, &mut |f| {
        for s in ctx.locked.shards_mut() {
            f(s)
        }
    });
    let used = t.used;
    let int = |n: u64| Frame::Integer(n.min(i64::MAX as u64) as i64);
    let name = |s: &str| Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()));
    let mut m: Vec<(Frame, Frame)> = vec![
        (name("peak.allocated"), int(t.peak)),
        (name("total.allocated"), int(used)),
        (name("startup.allocated"), int(t.startup)),
        (name("replication.backlog"), int(t.repl.backlog)),
        (name("clients.slaves"), int(t.repl.replicas)),
        (name("clients.normal"), int(t.clients)),
        (name("cluster.links"), int(0)),
        (name("aof.buffer"), int(t.aof_buffer)),
        (name("lua.caches"), int(0)),
        (name("functions.caches"), int(0)),
    ];
    for (db, main, exp) in &t.dbs {
        let inner = vec![
            (name("overhead.hashtable.main"), int(*main)),
            (name("overhead.hashtable.expires"), int(*exp)),
            (name("overhead.hashtable.slot-to-keys"), int(0)),
        ];
        m.push((name(&format!("db.{db}")), Frame::Map(inner)));
    }
    let (frag, frag_bytes) = t.allocator_frag();
    let (alloc_rss, alloc_rss_bytes) = t.allocator_rss();
    let (rss_extra, rss_extra_bytes) = t.rss_overhead();
    let (total_frag, total_frag_bytes) = t.total_frag();
    m.extend([
        (name("overhead.total"), int(t.overhead)),
        (name("keys.count"), int(t.keys)),
        (name("keys.bytes-per-key"), int(used.saturating_sub(t.startup).checked_div(t.keys).unwrap_or(0))),
        (name("dataset.bytes"), int(t.dataset)),
        (name("dataset.percentage"), Frame::Double(ratio(t.dataset * 100, used.saturating_sub(t.startup)))),
        (name("peak.percentage"), Frame::Double(ratio(used * 100, t.peak))),
        (name("allocator.allocated"), int(t.allocator.allocated)),
        (name("allocator.active"), int(t.allocator.active)),
        (name("allocator.resident"), int(t.allocator.resident)),
        (name("allocator-fragmentation.ratio"), Frame::Double(frag)),
        (name("allocator-fragmentation.bytes"), Frame::Integer(frag_bytes as i64)),
        (name("allocator-rss.ratio"), Frame::Double(alloc_rss)),
        (name("allocator-rss.bytes"), Frame::Integer(alloc_rss_bytes)),
        (name("rss-overhead.ratio"), Frame::Double(rss_extra)),
        (name("rss-overhead.bytes"), Frame::Integer(rss_extra_bytes)),
        (name("fragmentation"), Frame::Double(total_frag)),
        (name("fragmentation.bytes"), Frame::Integer(total_frag_bytes)),
    ]);
    Frame::Map(m)
}

fn verbatim(s: &str) -> Frame {
    Frame::Verbatim { format: *b"txt", text: Bytes::copy_from_slice(s.as_bytes()) }
}

fn doctor(ctx: &mut Ctx<'_, '_>) -> Frame {
    // Redis's threshold for "too little data to say anything" is 5 MB.
    if ctx.srv.config.host().used_memory() < 5 * 1024 * 1024 {
        return verbatim(
            "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.",
        );
    }
    verbatim("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.")
}

fn malloc_stats(_: &mut Ctx<'_, '_>) -> Frame {
    Frame::Bulk(Bytes::from_static(b"Stats not supported for the current allocator"))
}

fn purge(_: &mut Ctx<'_, '_>) -> Frame {
    Frame::ok()
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;
    use resp::Frame;

    #[test]
    fn memory_usage_and_errors() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > memory usage nokey
            (nil)
            > set k v
            +OK
            > memory usage k samples
            -ERR syntax error
            > memory usage k samples -1
            -ERR syntax error
            > memory usage k samples x
            -ERR value is not an integer or out of range
            > memory usage k foo 1
            -ERR syntax error
            > memory usage
            -ERR wrong number of arguments for 'memory|usage' command
            > memory foo
            -ERR unknown subcommand 'foo'. Try MEMORY HELP.
            > memory purge
            +OK
            > memory malloc-stats
            "Stats not supported for the current allocator"
            "#,
        );
        let small: i64 = c.run("memory usage k samples 0")[1..].parse().unwrap();
        assert!(small > 0);
        c.run("rpush l aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
        let big: i64 = c.run("memory usage l")[1..].parse().unwrap();
        assert!(big > small + 80, "{big} vs {small}");
    }

    /// Keys of up to 22 bytes are inline (no heap); a longer one costs its bytes.
    #[test]
    fn memory_usage_counts_a_key_heap_only_past_the_inline_bytes() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let usage = |c: &mut crate::testkit::TestClient, k: &str| {
            c.run(&format!("set {k} v"));
            match c.cmd(&["memory", "usage", k]).unwrap() {
                Frame::Integer(n) => n,
                f => panic!("{f:?}"),
            }
        };
        let (short, inline, long) =
            (usage(&mut c, "k"), usage(&mut c, &"k".repeat(22)), usage(&mut c, &"k".repeat(23)));
        assert_eq!(short, inline);
        assert_eq!(long, inline + 23);
    }

    #[test]
    fn memory_stats_help_doctor() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("set k v");
        let Frame::Array(h) = c.cmd(&["memory", "help"]).unwrap() else { panic!() };
        assert_eq!(h.len(), 14);
        let Frame::Map(m) = c.cmd(&["memory", "stats"]).unwrap() else { panic!() };
        assert_eq!(m.len(), 28);
        assert!(
            m.iter().any(|(k, v)| matches!(k, Frame::Bulk(b) if &b[..] == b"keys.count") && *v == Frame::Integer(1))
        );
        assert!(matches!(c.cmd(&["memory", "doctor"]).unwrap(), Frame::Verbatim { .. }));
    }
}
