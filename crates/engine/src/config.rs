//! Runtime configuration: one table of parameters serves the config file, `--name value` arguments,
//! `CONFIG GET/SET/REWRITE`, and the hot values the engine reads on every command (kept in atomics).
//!
//! [`PARAMS`] lists every parameter Redis 7.0.15 accepts (its `standardConfig` table, TLS included),
//! with the same names, aliases, defaults, ranges and validation messages, plus Latch's own `shards`.
//! Validation is pure ([`Config::validate`]): CONFIG SET checks every pair before storing any, so a
//! multi-parameter SET is atomic.

use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, Ordering};

/// How a parameter's value is validated and normalised.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// yes/no.
    Bool,
    /// Integer (Redis's strict `string2ll`) in [min, max].
    Int(i64, i64),
    /// Memory size with unit suffixes (b, k, kb, m, mb, g, gb), in [min, max] bytes; shown in bytes.
    Memory(i64, i64),
    /// Memory size or a percentage (`10%`, stored as Redis does, negative internally).
    MemoryPercent(i64, i64),
    /// Octal number in [min, max].
    Octal(i64, i64),
    /// One of these words (case-insensitive); words sharing a value are synonyms, the first is shown.
    Enum(&'static [(&'static str, u32)]),
    /// Several space-separated words of this table, OR-ed together.
    EnumFlags(&'static [(&'static str, u32)]),
    /// Any string, with an optional validity check returning Redis's message.
    Str(Option<StrCheck>),
    /// A parameter with its own syntax (`save`, `bind`, `dir`, `client-output-buffer-limit`...).
    Special,
}

/// A string parameter's validity check, returning Redis's message on failure.
pub type StrCheck = fn(&str) -> Result<(), &'static str>;

/// Can only be set at startup.
pub const IMM: u8 = 1;
/// Not matched by CONFIG GET patterns (exact names only).
pub const HIDDEN: u8 = 2;
/// Settable at runtime only when `enable-protected-configs` allows it.
pub const PROT: u8 = 4;
/// Value is a secret (CONFIG SET arguments redacted in Redis).
pub const SENS: u8 = 8;
/// The value is split on spaces into several arguments.
pub const MULTI: u8 = 16;

/// A parameter definition.
pub struct Param {
    /// Name as in redis.conf.
    pub name: &'static str,
    /// Older name accepted too.
    pub alias: Option<&'static str>,
    /// [`IMM`], [`HIDDEN`], [`PROT`], [`SENS`], [`MULTI`].
    pub flags: u8,
    /// Validation.
    pub kind: Kind,
    /// Default value, as CONFIG GET shows it.
    pub default: &'static str,
    /// What storing a new value does beyond keeping it for CONFIG GET (the hot copy the engine reads
    /// per command, the log level...), as Redis's `standardConfig` points at its variable.
    pub apply: Option<fn(&Config, &str)>,
}

impl Param {
    /// Can only be set at startup.
    pub fn immutable(&self) -> bool {
        self.flags & IMM != 0
    }
}

use Param as P;

const I32MAX: i64 = i32::MAX as i64;
const I32MIN: i64 = i32::MIN as i64;
const U32MAX: i64 = u32::MAX as i64;
const I64MAX: i64 = i64::MAX;

const E_SUPERVISED: &[(&str, u32)] = &[("upstart", 1), ("systemd", 2), ("auto", 3), ("no", 0)];
const E_SYSLOG: &[(&str, u32)] = &[
    ("user", 0),
    ("local0", 1),
    ("local1", 2),
    ("local2", 3),
    ("local3", 4),
    ("local4", 5),
    ("local5", 6),
    ("local6", 7),
    ("local7", 8),
];
const E_DISKLESS_LOAD: &[(&str, u32)] = &[("disabled", 0), ("on-empty-db", 1), ("swapdb", 2)];
const E_LOGLEVEL: &[(&str, u32)] = &[("debug", 0), ("verbose", 1), ("notice", 2), ("warning", 3)];
const E_MAXMEMORY_POLICY: &[(&str, u32)] = &[
    ("volatile-lru", 0),
    ("volatile-lfu", 1),
    ("volatile-random", 2),
    ("volatile-ttl", 3),
    ("allkeys-lru", 4),
    ("allkeys-lfu", 5),
    ("allkeys-random", 6),
    ("noeviction", 7),
];
const E_FSYNC: &[(&str, u32)] = &[("everysec", 0), ("always", 1), ("no", 2)];
const E_OOM: &[(&str, u32)] = &[("no", 0), ("yes", 1), ("relative", 1), ("absolute", 2)];
const E_PUBSUB_DEFAULT: &[(&str, u32)] = &[("allchannels", 1), ("resetchannels", 0)];
const E_SANITIZE: &[(&str, u32)] = &[("no", 0), ("yes", 1), ("clients", 2)];
const E_PROTECTED: &[(&str, u32)] = &[("no", 0), ("yes", 1), ("local", 2)];
const E_ENDPOINT: &[(&str, u32)] = &[("ip", 0), ("hostname", 1), ("unknown-endpoint", 2)];
const E_PROPAGATION: &[(&str, u32)] = &[("ignore", 0), ("panic", 1), ("panic-on-replicas", 2)];
const E_TLS_AUTH: &[(&str, u32)] = &[("no", 0), ("yes", 1), ("optional", 2)];
const E_SHUTDOWN: &[(&str, u32)] = &[("default", 0), ("save", 1), ("nosave", 2), ("now", 4), ("force", 8)];

/// `sanitize-dump-payload`: when RESTORE checks a payload deeply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sanitize {
    /// Never (`no`).
    No = 0,
    /// Always (`yes`).
    Yes = 1,
    /// For clients other than the primary's link and users with `skip-sanitize-payload`.
    Clients = 2,
}

impl Sanitize {
    fn from_setting(v: &str) -> Sanitize {
        match v {
            "yes" => Sanitize::Yes,
            "clients" => Sanitize::Clients,
            _ => Sanitize::No,
        }
    }
}

/// An integer value already validated by its row's [`Kind`] (what `apply` functions read).
fn int(v: &str) -> i64 {
    v.parse().unwrap_or(0)
}

/// A hot copy of a size limit (its row keeps it at 0 or more).
fn size(a: &AtomicI64) -> usize {
    a.load(Relaxed).max(0) as usize
}

fn valid_hostname(v: &str) -> Result<(), &'static str> {
    if v.len() >= 256 {
        return Err("Hostnames must be less than 256 characters");
    }
    if !v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.') {
        return Err("Hostnames may only contain alphanumeric characters, hyphens or dots");
    }
    Ok(())
}
fn is_base_name(v: &str) -> bool {
    !v.contains('/') && !v.contains('\\')
}
fn valid_dbfilename(v: &str) -> Result<(), &'static str> {
    if is_base_name(v) { Ok(()) } else { Err("dbfilename can't be a path, just a filename") }
}
fn valid_aof_filename(v: &str) -> Result<(), &'static str> {
    if v.is_empty() {
        Err("appendfilename can't be empty")
    } else if !is_base_name(v) {
        Err("appendfilename can't be a path, just a filename")
    } else {
        Ok(())
    }
}
fn valid_aof_dirname(v: &str) -> Result<(), &'static str> {
    if v.is_empty() {
        Err("appenddirname can't be empty")
    } else if !is_base_name(v) {
        Err("appenddirname can't be a path, just a dirname")
    } else {
        Ok(())
    }
}
/// Redis's `sdstemplate` as `expandProcTitleTemplate` uses it: `{name}` is replaced by `var(name)`,
/// `{{` is a literal `{` (a `}` alone is literal too); None for an unknown variable (`var` answers
/// None) or a brace left open. The result is trimmed of spaces.
pub fn expand_proc_title(template: &str, var: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if let Some(quoted) = after.strip_prefix('{') {
            out.push('{');
            rest = quoted;
            continue;
        }
        if after.is_empty() {
            return None;
        }
        let close = after.find('}')?;
        out.push_str(&var(&after[..close])?);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Some(out.trim_matches(' ').to_string())
}

/// Redis's `validateProcTitleTemplate`: the template expands (known variables only, no brace left
/// open) to something with an empty title. The other variables are given the values a server
/// without a Unix socket has, so `{unixsocket}` alone is refused.
fn valid_proc_title(v: &str) -> Result<(), &'static str> {
    const ERR: &str = "template format is invalid or contains unknown variables";
    let var = |name: &str| match name {
        "title" | "server-mode" | "unixsocket" => Some(String::new()),
        "listen-addr" => Some("*:6379".to_string()),
        "port" | "tls-port" => Some("0".to_string()),
        "config-file" => Some("-".to_string()),
        _ => None,
    };
    match expand_proc_title(v, &var) {
        Some(title) if !title.is_empty() => Ok(()),
        _ => Err(ERR),
    }
}

/// Every parameter Latch knows, in Redis's table order.
pub static PARAMS: &[Param] = &[
    // Latch's own: number of keyspace shards (0 = 16 per core). Immutable, and hidden from glob
    // patterns as Redis hides its own internal parameters: tools that CONFIG SET every parameter
    // `CONFIG GET *` lists back to its value (Redis's "CONFIG sanity" test) skip it.
    P { name: "shards", alias: None, flags: IMM | HIDDEN, kind: Kind::Int(0, 4096), default: "0", apply: None },
    // Latch's own: consensus mode (docs/consensus.md). `raft-id` 0 is off; these are read once
    // at startup by the server crate, which validates them together (hidden, as `shards` is).
    P { name: "raft-id", alias: None, flags: IMM | HIDDEN, kind: Kind::Int(0, 1 << 40), default: "0", apply: None },
    P { name: "raft-port", alias: None, flags: IMM | HIDDEN, kind: Kind::Int(0, 65535), default: "0", apply: None },
    P { name: "raft-peers", alias: None, flags: IMM | HIDDEN, kind: Kind::Str(None), default: "", apply: None },
    // A node that joins a running group (added by `CLUSTER MEET` on its leader) instead of
    // initializing one with `raft-peers`.
    P { name: "raft-join", alias: None, flags: IMM | HIDDEN, kind: Kind::Bool, default: "no", apply: None },
    // Entries between two snapshots of the state machine (after which older entries are purged).
    P {
        name: "raft-snapshot-every",
        alias: None,
        flags: IMM | HIDDEN,
        kind: Kind::Int(2, I32MAX),
        default: "10000",
        apply: None,
    },
    // Heartbeats from a leader to its followers, and how long a follower goes without one before
    // it stands for election (a random time between the timeout and twice it), in milliseconds:
    // etcd's `--heartbeat-interval` and `--election-timeout`. A longer timeout rides out a loaded
    // machine's stalls; a shorter one fails over faster.
    P {
        name: "raft-heartbeat-interval",
        alias: None,
        flags: IMM | HIDDEN,
        kind: Kind::Int(1, 60_000),
        default: "100",
        apply: None,
    },
    P {
        name: "raft-election-timeout",
        alias: None,
        flags: IMM | HIDDEN,
        kind: Kind::Int(1, 300_000),
        default: "600",
        apply: None,
    },
    // Latch's own: whether eviction may remove native locks (LOCK). No by default: a held lock that
    // disappears breaks mutual exclusion (docs/locks.md).
    P {
        name: "evict-native-locks",
        alias: None,
        flags: 0,
        kind: Kind::Bool,
        default: "no",
        apply: Some(|c, v| c.evict_native_locks.store(v == "yes", Relaxed)),
    },
    // Booleans. Latch acts on none of these except `appendonly` (reported in INFO, no AOF is written) and
    // `latency-tracking`; the rest are accepted-but-inert: stored and reported so clients and Redis's test
    // suite can set them.
    P { name: "rdbchecksum", alias: None, flags: IMM, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "daemonize", alias: None, flags: IMM, kind: Kind::Bool, default: "no", apply: None },
    P { name: "io-threads-do-reads", alias: None, flags: IMM, kind: Kind::Bool, default: "no", apply: None },
    P { name: "always-show-logo", alias: None, flags: IMM, kind: Kind::Bool, default: "no", apply: None },
    P { name: "protected-mode", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P {
        name: "rdbcompression",
        alias: None,
        flags: 0,
        kind: Kind::Bool,
        default: "yes",
        apply: Some(|c, v| c.rdbcompression.store(v == "yes", Relaxed)),
    },
    P { name: "rdb-del-sync-files", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "activerehashing", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "stop-writes-on-bgsave-error", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "set-proc-title", alias: None, flags: IMM, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "dynamic-hz", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "lazyfree-lazy-eviction", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "lazyfree-lazy-expire", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "lazyfree-lazy-server-del", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P {
        name: "lazyfree-lazy-user-del",
        alias: None,
        flags: 0,
        kind: Kind::Bool,
        default: "no",
        apply: Some(|c, v| c.lazyfree_lazy_user_del.store(v == "yes", Relaxed)),
    },
    P { name: "lazyfree-lazy-user-flush", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "repl-disable-tcp-nodelay", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "repl-diskless-sync", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "aof-rewrite-incremental-fsync", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "no-appendfsync-on-rewrite", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "cluster-require-full-coverage", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "rdb-save-incremental-fsync", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "aof-load-truncated", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "aof-use-rdb-preamble", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P {
        name: "aof-timestamp-enabled",
        alias: None,
        flags: 0,
        kind: Kind::Bool,
        default: "no",
        apply: Some(|c, v| c.aof_timestamps.store(v == "yes", Relaxed)),
    },
    P {
        name: "cluster-replica-no-failover",
        alias: Some("cluster-slave-no-failover"),
        flags: 0,
        kind: Kind::Bool,
        default: "no",
        apply: None,
    },
    P {
        name: "replica-lazy-flush",
        alias: Some("slave-lazy-flush"),
        flags: 0,
        kind: Kind::Bool,
        default: "no",
        apply: None,
    },
    P {
        name: "replica-serve-stale-data",
        alias: Some("slave-serve-stale-data"),
        flags: 0,
        kind: Kind::Bool,
        default: "yes",
        apply: None,
    },
    P {
        name: "replica-read-only",
        alias: Some("slave-read-only"),
        flags: 0,
        kind: Kind::Bool,
        default: "yes",
        apply: None,
    },
    P {
        name: "replica-ignore-maxmemory",
        alias: Some("slave-ignore-maxmemory"),
        flags: 0,
        kind: Kind::Bool,
        default: "yes",
        apply: None,
    },
    P { name: "jemalloc-bg-thread", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "activedefrag", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "syslog-enabled", alias: None, flags: IMM, kind: Kind::Bool, default: "no", apply: None },
    P { name: "cluster-enabled", alias: None, flags: IMM, kind: Kind::Bool, default: "no", apply: None },
    P { name: "appendonly", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "cluster-allow-reads-when-down", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P {
        name: "cluster-allow-pubsubshard-when-down",
        alias: None,
        flags: 0,
        kind: Kind::Bool,
        default: "yes",
        apply: None,
    },
    P {
        name: "crash-log-enabled",
        alias: None,
        flags: 0,
        kind: Kind::Bool,
        default: "yes",
        apply: Some(|c, v| c.crash_log_enabled.store(v == "yes", Relaxed)),
    },
    P { name: "crash-memcheck-enabled", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "use-exit-on-panic", alias: None, flags: HIDDEN, kind: Kind::Bool, default: "no", apply: None },
    P { name: "disable-thp", alias: None, flags: IMM, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "cluster-allow-replica-migration", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "replica-announced", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P {
        name: "latency-tracking",
        alias: None,
        flags: 0,
        kind: Kind::Bool,
        default: "yes",
        apply: Some(|c, v| c.latency_tracking.store(v == "yes", Relaxed)),
    },
    P { name: "aof-disable-auto-gc", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "replica-ignore-disk-write-errors", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    // Strings. `logfile` is read by latch-server at startup; `dbfilename` is reported only. The rest
    // (ACL file, unix socket, cluster, cpu lists, TLS-less announce options...) are accepted-but-inert.
    P { name: "aclfile", alias: None, flags: IMM, kind: Kind::Str(None), default: "", apply: None },
    P { name: "unixsocket", alias: None, flags: IMM, kind: Kind::Str(None), default: "", apply: None },
    P { name: "pidfile", alias: None, flags: IMM, kind: Kind::Str(None), default: "", apply: None },
    P {
        name: "replica-announce-ip",
        alias: Some("slave-announce-ip"),
        flags: 0,
        kind: Kind::Str(None),
        default: "",
        apply: None,
    },
    P { name: "masteruser", alias: None, flags: SENS, kind: Kind::Str(None), default: "", apply: None },
    P { name: "cluster-announce-ip", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P {
        name: "cluster-config-file",
        alias: None,
        flags: IMM,
        kind: Kind::Str(None),
        default: "nodes.conf",
        apply: None,
    },
    P {
        name: "cluster-announce-hostname",
        alias: None,
        flags: 0,
        kind: Kind::Str(Some(valid_hostname)),
        default: "",
        apply: None,
    },
    P { name: "syslog-ident", alias: None, flags: IMM, kind: Kind::Str(None), default: "redis", apply: None },
    P {
        name: "dbfilename",
        alias: None,
        flags: PROT,
        kind: Kind::Str(Some(valid_dbfilename)),
        default: "dump.rdb",
        apply: None,
    },
    P {
        name: "appendfilename",
        alias: None,
        flags: IMM,
        kind: Kind::Str(Some(valid_aof_filename)),
        default: "appendonly.aof",
        apply: None,
    },
    P {
        name: "appenddirname",
        alias: None,
        flags: IMM,
        kind: Kind::Str(Some(valid_aof_dirname)),
        default: "appendonlydir",
        apply: None,
    },
    P { name: "server_cpulist", alias: None, flags: IMM, kind: Kind::Str(None), default: "", apply: None },
    P { name: "bio_cpulist", alias: None, flags: IMM, kind: Kind::Str(None), default: "", apply: None },
    P { name: "aof_rewrite_cpulist", alias: None, flags: IMM, kind: Kind::Str(None), default: "", apply: None },
    P { name: "bgsave_cpulist", alias: None, flags: IMM, kind: Kind::Str(None), default: "", apply: None },
    P { name: "ignore-warnings", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P {
        name: "proc-title-template",
        alias: None,
        flags: 0,
        kind: Kind::Str(Some(valid_proc_title)),
        default: "{title} {listen-addr} {server-mode}",
        // Applied at once, whatever `set-proc-title` says (Redis's `applyProcTitleTemplate`).
        apply: Some(|c, v| c.set_proc_title(v)),
    },
    P { name: "bind-source-addr", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "logfile", alias: None, flags: IMM, kind: Kind::Str(None), default: "", apply: None },
    // `requirepass` is live (AUTH); `masterauth` is accepted-but-inert (no replication).
    P { name: "masterauth", alias: None, flags: SENS, kind: Kind::Str(None), default: "", apply: None },
    P {
        name: "requirepass",
        alias: None,
        flags: SENS,
        kind: Kind::Str(None),
        default: "",
        apply: Some(|c, v| {
            *c.requirepass.write() = v.as_bytes().to_vec();
            c.apply_requirepass();
        }),
    },
    // Enumerations. `loglevel` (startup), `maxmemory-policy` (LFU counters, OBJECT FREQ) and
    // `enable-debug-command` (DEBUG) are live; the others are accepted-but-inert.
    P { name: "supervised", alias: None, flags: IMM, kind: Kind::Enum(E_SUPERVISED), default: "no", apply: None },
    P { name: "syslog-facility", alias: None, flags: IMM, kind: Kind::Enum(E_SYSLOG), default: "local0", apply: None },
    P {
        name: "repl-diskless-load",
        alias: None,
        flags: 0,
        kind: Kind::Enum(E_DISKLESS_LOAD),
        default: "disabled",
        apply: None,
    },
    P {
        name: "loglevel",
        alias: None,
        flags: 0,
        kind: Kind::Enum(E_LOGLEVEL),
        default: "notice",
        apply: Some(|c, v| c.host.set_log_level(v)),
    },
    P {
        name: "maxmemory-policy",
        alias: None,
        flags: 0,
        kind: Kind::Enum(E_MAXMEMORY_POLICY),
        default: "noeviction",
        apply: Some(|c, v| {
            let p = Policy::parse(v).unwrap_or(Policy::NoEviction);
            c.maxmemory_policy.store(p as u8, Relaxed);
        }),
    },
    P {
        name: "appendfsync",
        alias: None,
        flags: 0,
        kind: Kind::Enum(E_FSYNC),
        default: "everysec",
        apply: Some(|c, v| c.appendfsync_always.store(v == "always", Relaxed)),
    },
    P { name: "oom-score-adj", alias: None, flags: 0, kind: Kind::Enum(E_OOM), default: "no", apply: None },
    P {
        name: "acl-pubsub-default",
        alias: None,
        flags: 0,
        kind: Kind::Enum(E_PUBSUB_DEFAULT),
        default: "resetchannels",
        apply: Some(|c, v| c.acl_pubsub_all.store(v == "allchannels", Relaxed)),
    },
    P {
        name: "sanitize-dump-payload",
        alias: None,
        flags: 0,
        kind: Kind::Enum(E_SANITIZE),
        default: "no",
        apply: Some(|c, v| c.sanitize_dump_payload.store(Sanitize::from_setting(v) as u8, Relaxed)),
    },
    P {
        name: "enable-protected-configs",
        alias: None,
        flags: IMM,
        kind: Kind::Enum(E_PROTECTED),
        default: "no",
        apply: None,
    },
    P {
        name: "enable-debug-command",
        alias: None,
        flags: IMM,
        kind: Kind::Enum(E_PROTECTED),
        default: "no",
        apply: None,
    },
    P {
        name: "enable-module-command",
        alias: None,
        flags: IMM,
        kind: Kind::Enum(E_PROTECTED),
        default: "no",
        apply: None,
    },
    P {
        name: "cluster-preferred-endpoint-type",
        alias: None,
        flags: 0,
        kind: Kind::Enum(E_ENDPOINT),
        default: "ip",
        apply: None,
    },
    P {
        name: "propagation-error-behavior",
        alias: None,
        flags: 0,
        kind: Kind::Enum(E_PROPAGATION),
        default: "ignore",
        apply: None,
    },
    P {
        name: "shutdown-on-sigint",
        alias: None,
        flags: MULTI,
        kind: Kind::EnumFlags(E_SHUTDOWN),
        default: "default",
        apply: None,
    },
    P {
        name: "shutdown-on-sigterm",
        alias: None,
        flags: MULTI,
        kind: Kind::EnumFlags(E_SHUTDOWN),
        default: "default",
        apply: None,
    },
    // Integers. Live: `databases`, `port`, `io-threads` (Latch: 0 = one per core but one), `timeout`, `hz`,
    // `maxclients`, `slowlog-*`, `proto-max-bulk-len`, `client-query-buffer-limit`. Encoding thresholds,
    // cluster, replication, defrag, AOF and RDB knobs are accepted-but-inert. CONFIG SET `port` or
    // `bind` listens anew (through the host) before the value is stored.
    P { name: "databases", alias: None, flags: IMM, kind: Kind::Int(1, I32MAX), default: "16", apply: None },
    P { name: "port", alias: None, flags: 0, kind: Kind::Int(0, 65535), default: "6379", apply: None },
    // TLS (Redis's rows when built with TLS; docs/tls.md). The values are kept here; the server's
    // TLS layer reads them when it (re)configures, through `Host::configure_tls` below.
    P { name: "tls-port", alias: None, flags: 0, kind: Kind::Int(0, 65535), default: "0", apply: None },
    P {
        name: "tls-session-cache-size",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "20480",
        apply: None,
    },
    P {
        name: "tls-session-cache-timeout",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "300",
        apply: None,
    },
    P { name: "tls-cluster", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "tls-replication", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "tls-auth-clients", alias: None, flags: 0, kind: Kind::Enum(E_TLS_AUTH), default: "yes", apply: None },
    P { name: "tls-prefer-server-ciphers", alias: None, flags: 0, kind: Kind::Bool, default: "no", apply: None },
    P { name: "tls-session-caching", alias: None, flags: 0, kind: Kind::Bool, default: "yes", apply: None },
    P { name: "tls-cert-file", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-key-file", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-key-file-pass", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-client-cert-file", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-client-key-file", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-client-key-file-pass", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-dh-params-file", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-ca-cert-file", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-ca-cert-dir", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-protocols", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-ciphers", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "tls-ciphersuites", alias: None, flags: 0, kind: Kind::Str(None), default: "", apply: None },
    P { name: "io-threads", alias: None, flags: IMM, kind: Kind::Int(0, 128), default: "0", apply: None },
    P {
        name: "auto-aof-rewrite-percentage",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "100",
        apply: None,
    },
    P {
        name: "cluster-replica-validity-factor",
        alias: Some("cluster-slave-validity-factor"),
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "10",
        apply: None,
    },
    P {
        name: "list-max-listpack-size",
        alias: Some("list-max-ziplist-size"),
        flags: 0,
        kind: Kind::Int(I32MIN, I32MAX),
        default: "-2",
        apply: None,
    },
    P { name: "tcp-keepalive", alias: None, flags: 0, kind: Kind::Int(0, I32MAX), default: "300", apply: None },
    P {
        name: "cluster-migration-barrier",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "1",
        apply: None,
    },
    P { name: "active-defrag-cycle-min", alias: None, flags: 0, kind: Kind::Int(1, 99), default: "1", apply: None },
    P { name: "active-defrag-cycle-max", alias: None, flags: 0, kind: Kind::Int(1, 99), default: "25", apply: None },
    P {
        name: "active-defrag-threshold-lower",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, 1000),
        default: "10",
        apply: None,
    },
    P {
        name: "active-defrag-threshold-upper",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, 1000),
        default: "100",
        apply: None,
    },
    P {
        name: "lfu-log-factor",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "10",
        apply: Some(|c, v| c.lfu_log_factor.store(int(v), Relaxed)),
    },
    P {
        name: "lfu-decay-time",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "1",
        apply: Some(|c, v| c.lfu_decay_time.store(int(v), Relaxed)),
    },
    P {
        name: "replica-priority",
        alias: Some("slave-priority"),
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "100",
        apply: None,
    },
    P {
        name: "repl-diskless-sync-delay",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "5",
        apply: None,
    },
    P { name: "maxmemory-samples", alias: None, flags: 0, kind: Kind::Int(1, I32MAX), default: "5", apply: None },
    P {
        name: "maxmemory-eviction-tenacity",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, 100),
        default: "10",
        apply: None,
    },
    P {
        name: "timeout",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "0",
        apply: Some(|c, v| c.timeout.store(int(v), Relaxed)),
    },
    P {
        name: "replica-announce-port",
        alias: Some("slave-announce-port"),
        flags: 0,
        kind: Kind::Int(0, 65535),
        default: "0",
        apply: None,
    },
    P { name: "tcp-backlog", alias: None, flags: IMM, kind: Kind::Int(0, I32MAX), default: "511", apply: None },
    P { name: "cluster-port", alias: None, flags: IMM, kind: Kind::Int(0, 65535), default: "0", apply: None },
    P {
        name: "cluster-announce-bus-port",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, 65535),
        default: "0",
        apply: None,
    },
    P { name: "cluster-announce-port", alias: None, flags: 0, kind: Kind::Int(0, 65535), default: "0", apply: None },
    P {
        name: "cluster-announce-tls-port",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, 65535),
        default: "0",
        apply: None,
    },
    P { name: "repl-timeout", alias: None, flags: 0, kind: Kind::Int(1, I32MAX), default: "60", apply: None },
    P {
        name: "repl-ping-replica-period",
        alias: Some("repl-ping-slave-period"),
        flags: 0,
        kind: Kind::Int(1, I32MAX),
        default: "10",
        apply: None,
    },
    P { name: "list-compress-depth", alias: None, flags: 0, kind: Kind::Int(0, I32MAX), default: "0", apply: None },
    P {
        name: "rdb-key-save-delay",
        alias: None,
        flags: HIDDEN,
        kind: Kind::Int(I32MIN, I32MAX),
        default: "0",
        apply: None,
    },
    P {
        name: "key-load-delay",
        alias: None,
        flags: HIDDEN,
        kind: Kind::Int(I32MIN, I32MAX),
        default: "0",
        apply: None,
    },
    P { name: "active-expire-effort", alias: None, flags: 0, kind: Kind::Int(1, 10), default: "1", apply: None },
    P {
        name: "hz",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "10",
        apply: Some(|c, v| c.hz.store(int(v).clamp(1, 500) as u64, Relaxed)),
    },
    P {
        name: "min-replicas-to-write",
        alias: Some("min-slaves-to-write"),
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "0",
        apply: Some(|c, v| c.min_replicas_to_write.store(int(v), Relaxed)),
    },
    P {
        name: "min-replicas-max-lag",
        alias: Some("min-slaves-max-lag"),
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "10",
        apply: Some(|c, v| c.min_replicas_max_lag.store(int(v), Relaxed)),
    },
    P { name: "watchdog-period", alias: None, flags: HIDDEN, kind: Kind::Int(0, I32MAX), default: "0", apply: None },
    P { name: "shutdown-timeout", alias: None, flags: 0, kind: Kind::Int(0, I32MAX), default: "10", apply: None },
    P {
        name: "repl-diskless-sync-max-replicas",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I32MAX),
        default: "0",
        apply: None,
    },
    P {
        name: "maxclients",
        alias: None,
        flags: 0,
        kind: Kind::Int(1, U32MAX),
        default: "10000",
        apply: Some(|c, v| c.maxclients.store(int(v), Relaxed)),
    },
    P { name: "unixsocketperm", alias: None, flags: IMM, kind: Kind::Octal(0, 0o777), default: "0", apply: None },
    P { name: "socket-mark-id", alias: None, flags: IMM, kind: Kind::Int(0, U32MAX), default: "0", apply: None },
    P {
        name: "active-defrag-max-scan-fields",
        alias: None,
        flags: 0,
        kind: Kind::Int(1, I64MAX),
        default: "1000",
        apply: None,
    },
    P {
        name: "slowlog-max-len",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I64MAX),
        default: "128",
        apply: Some(|c, v| c.slowlog_max_len.store(int(v), Relaxed)),
    },
    P { name: "acllog-max-len", alias: None, flags: 0, kind: Kind::Int(0, I64MAX), default: "128", apply: None },
    P {
        name: "busy-reply-threshold",
        alias: Some("lua-time-limit"),
        flags: 0,
        kind: Kind::Int(0, I64MAX),
        default: "5000",
        apply: Some(|c, v| c.busy_reply_threshold.store(int(v), Relaxed)),
    },
    P {
        name: "cluster-node-timeout",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I64MAX),
        default: "15000",
        apply: None,
    },
    P {
        name: "slowlog-log-slower-than",
        alias: None,
        flags: 0,
        kind: Kind::Int(-1, I64MAX),
        default: "10000",
        apply: Some(|c, v| c.slowlog_log_slower_than.store(int(v), Relaxed)),
    },
    P {
        name: "latency-monitor-threshold",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I64MAX),
        default: "0",
        apply: Some(|c, v| c.latency_monitor_threshold.store(int(v), Relaxed)),
    },
    P {
        name: "proto-max-bulk-len",
        alias: None,
        flags: 0,
        kind: Kind::Memory(1048576, I64MAX),
        default: "536870912",
        apply: Some(|c, v| c.proto_max_bulk_len.store(int(v), Relaxed)),
    },
    P {
        name: "stream-node-max-entries",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I64MAX),
        default: "100",
        apply: Some(|c, v| c.stream_node_max_entries.store(int(v), Relaxed)),
    },
    P {
        name: "repl-backlog-size",
        alias: None,
        flags: 0,
        kind: Kind::Memory(1, I64MAX),
        default: "1048576",
        apply: None,
    },
    P {
        name: "maxmemory",
        alias: None,
        flags: 0,
        kind: Kind::Memory(0, I64MAX),
        default: "0",
        apply: Some(|c, v| c.maxmemory.store(int(v).max(0) as u64, Relaxed)),
    },
    P {
        name: "cluster-link-sendbuf-limit",
        alias: None,
        flags: 0,
        kind: Kind::Memory(0, I64MAX),
        default: "0",
        apply: None,
    },
    P {
        name: "hash-max-listpack-entries",
        alias: Some("hash-max-ziplist-entries"),
        flags: 0,
        kind: Kind::Int(0, I64MAX),
        default: "512",
        apply: Some(|c, v| c.hash_max_listpack_entries.store(int(v), Relaxed)),
    },
    P {
        name: "set-max-intset-entries",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I64MAX),
        default: "512",
        apply: Some(|c, v| c.set_max_intset_entries.store(int(v), Relaxed)),
    },
    P {
        name: "zset-max-listpack-entries",
        alias: Some("zset-max-ziplist-entries"),
        flags: 0,
        kind: Kind::Int(0, I64MAX),
        default: "128",
        apply: Some(|c, v| c.zset_max_listpack_entries.store(int(v), Relaxed)),
    },
    P {
        name: "active-defrag-ignore-bytes",
        alias: None,
        flags: 0,
        kind: Kind::Memory(1, I64MAX),
        default: "104857600",
        apply: None,
    },
    P {
        name: "hash-max-listpack-value",
        alias: Some("hash-max-ziplist-value"),
        flags: 0,
        kind: Kind::Memory(0, I64MAX),
        default: "64",
        apply: Some(|c, v| c.hash_max_listpack_value.store(int(v), Relaxed)),
    },
    P {
        name: "stream-node-max-bytes",
        alias: None,
        flags: 0,
        kind: Kind::Memory(0, I64MAX),
        default: "4096",
        apply: Some(|c, v| c.stream_node_max_bytes.store(int(v), Relaxed)),
    },
    P {
        name: "zset-max-listpack-value",
        alias: Some("zset-max-ziplist-value"),
        flags: 0,
        kind: Kind::Memory(0, I64MAX),
        default: "64",
        apply: Some(|c, v| c.zset_max_listpack_value.store(int(v), Relaxed)),
    },
    P {
        name: "hll-sparse-max-bytes",
        alias: None,
        flags: 0,
        kind: Kind::Memory(0, I64MAX),
        default: "3000",
        apply: Some(|c, v| c.hll_sparse_max_bytes.store(int(v), Relaxed)),
    },
    P {
        name: "tracking-table-max-keys",
        alias: None,
        flags: 0,
        kind: Kind::Int(0, I64MAX),
        default: "1000000",
        apply: None,
    },
    P {
        name: "client-query-buffer-limit",
        alias: None,
        flags: 0,
        kind: Kind::Memory(1048576, I64MAX),
        default: "1073741824",
        apply: Some(|c, v| c.client_query_buffer_limit.store(int(v), Relaxed)),
    },
    P {
        name: "maxmemory-clients",
        alias: None,
        flags: 0,
        kind: Kind::MemoryPercent(-100, I64MAX),
        default: "0",
        apply: Some(|c, v| {
            let hot = match v.strip_suffix('%') {
                Some(p) => -p.parse::<i64>().unwrap_or(0).abs(),
                None => parse_memory(v).unwrap_or(0),
            };
            c.maxmemory_clients.store(hot, Relaxed);
        }),
    },
    P { name: "repl-backlog-ttl", alias: None, flags: 0, kind: Kind::Int(0, I64MAX), default: "3600", apply: None },
    P {
        name: "auto-aof-rewrite-min-size",
        alias: None,
        flags: 0,
        kind: Kind::Memory(0, I64MAX),
        default: "67108864",
        apply: None,
    },
    P {
        name: "loading-process-events-interval-bytes",
        alias: None,
        flags: HIDDEN,
        kind: Kind::Int(1024, I32MAX),
        default: "2097152",
        apply: None,
    },
    // Parameters with their own syntax. `bind` is live (startup); `dir` is used by CONFIG REWRITE and
    // reported; `client-output-buffer-limit` is live for its normal class (Latch has no pub/sub or
    // replica clients); `save`, `oom-score-adj-values`, `replicaof` and
    // `latency-tracking-info-percentiles` are validated and stored but inert; `notify-keyspace-events` is
    // validated and normalised as Redis does.
    P { name: "dir", alias: None, flags: PROT, kind: Kind::Special, default: ".", apply: None },
    P { name: "save", alias: None, flags: MULTI, kind: Kind::Special, default: "3600 1 300 100 60 10000", apply: None },
    P {
        name: "client-output-buffer-limit",
        alias: None,
        flags: MULTI,
        kind: Kind::Special,
        default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        apply: Some(|c, v| {
            let limits = |class: &str| {
                let words: Vec<&str> = v.split_whitespace().collect();
                words
                    .chunks(4)
                    .find(|c| c.first() == Some(&class))
                    .and_then(|c| {
                        Some(crate::config::ObufLimits {
                            hard: c.get(1)?.parse().ok()?,
                            soft: c.get(2)?.parse().ok()?,
                            soft_secs: c.get(3)?.parse().ok()?,
                        })
                    })
                    .unwrap_or_default()
            };
            *c.obuf_limits.write() = [limits("normal"), limits("pubsub"), limits("slave")];
        }),
    },
    P {
        name: "oom-score-adj-values",
        alias: None,
        flags: MULTI,
        kind: Kind::Special,
        default: "0 200 800",
        apply: None,
    },
    P {
        name: "notify-keyspace-events",
        alias: None,
        flags: 0,
        kind: Kind::Special,
        default: "",
        apply: Some(|c, v| c.notify_keyspace_events.store(keyspace_events_flags(v).unwrap_or(0), Relaxed)),
    },
    P { name: "bind", alias: None, flags: MULTI, kind: Kind::Special, default: "* -::*", apply: None },
    P { name: "replicaof", alias: Some("slaveof"), flags: IMM | MULTI, kind: Kind::Special, default: "", apply: None },
    P {
        name: "latency-tracking-info-percentiles",
        alias: None,
        flags: MULTI,
        kind: Kind::Special,
        default: "50 99 99.9",
        apply: None,
    },
];

/// The live configuration.
pub struct Config {
    values: RwLock<BTreeMap<&'static str, String>>,
    /// Hot copy of `proto-max-bulk-len`.
    pub proto_max_bulk_len: AtomicI64,
    /// Hot copy of `hll-sparse-max-bytes`: the size past which a sparse HyperLogLog turns dense.
    pub hll_sparse_max_bytes: AtomicI64,
    /// Hot copy of `stream-node-max-bytes`: the size past which XADD starts a new stream node.
    pub stream_node_max_bytes: AtomicI64,
    /// Hot copy of `stream-node-max-entries`: the entries past which XADD starts a new node.
    pub stream_node_max_entries: AtomicI64,
    /// Hot copy of `hash-max-listpack-entries`: the fields past which HSET turns a listpack into a
    /// hash table (`OBJECT ENCODING`).
    pub hash_max_listpack_entries: AtomicI64,
    /// Hot copy of `hash-max-listpack-value`: the length of a field or value past which HSET turns
    /// a listpack into a hash table.
    pub hash_max_listpack_value: AtomicI64,
    /// Hot copy of `zset-max-listpack-entries`: the members past which ZADD turns a listpack into a
    /// skiplist (`OBJECT ENCODING`).
    pub zset_max_listpack_entries: AtomicI64,
    /// Hot copy of `zset-max-listpack-value`: the length of a member past which ZADD turns a
    /// listpack into a skiplist.
    pub zset_max_listpack_value: AtomicI64,
    /// Hot copy of `set-max-intset-entries`: the members past which SADD turns an intset into a
    /// hash table (`OBJECT ENCODING`).
    pub set_max_intset_entries: AtomicI64,
    /// Hot copy of `client-query-buffer-limit`.
    pub client_query_buffer_limit: AtomicI64,
    /// Hot copy of `slowlog-log-slower-than` (microseconds, -1 disables).
    pub slowlog_log_slower_than: AtomicI64,
    /// Hot copy of `slowlog-max-len`.
    pub slowlog_max_len: AtomicI64,
    /// The config file's `rename-command` lines, in order (the server builds its command table
    /// from them).
    pub renames: parking_lot::Mutex<Vec<(String, String)>>,
    /// Hot copy of `maxclients`.
    pub maxclients: AtomicI64,
    /// Hot copy of `timeout` (seconds, 0 = never).
    pub timeout: AtomicI64,
    /// Hot copy of `hz` (clamped to 1..=500 as Redis does).
    pub hz: AtomicU64,
    /// True when a new connection must authenticate: the `default` user has a password or is off
    /// (Redis's `authRequired`); kept by `requirepass` and the ACL commands.
    pub has_password: AtomicBool,
    /// What `requirepass` sets the password of: the ACL's `default` user, bound by the server
    /// ([`Config::bind_default_user`]).
    default_user: RwLock<Option<std::sync::Arc<dyn DefaultPassword>>>,
    /// Hot copy of `acl-pubsub-default` (`allchannels`).
    pub acl_pubsub_all: AtomicBool,
    /// The config file's `user` lines (name and rules), created once the server exists.
    pub acl_user_lines: parking_lot::Mutex<Vec<Vec<bytes::Bytes>>>,
    /// Hot copy of `busy-reply-threshold` (alias `lua-time-limit`), milliseconds.
    pub busy_reply_threshold: AtomicI64,
    /// Hot copy of `maxmemory` (bytes, 0 = no limit).
    pub maxmemory: AtomicU64,
    /// Hot copy of `maxmemory-policy`: [`crate::evict::Policy`] as its index in `MAXMEMORY_POLICIES`.
    pub maxmemory_policy: AtomicU8,
    /// Hot copy of `lfu-log-factor`.
    pub lfu_log_factor: AtomicI64,
    /// Hot copy of `lfu-decay-time` (minutes per point of decay, 0 = none).
    pub lfu_decay_time: AtomicI64,
    /// Hot copy of `evict-native-locks`.
    pub evict_native_locks: AtomicBool,
    /// Hot copy of `maxmemory-clients`: bytes when positive, a percentage of `maxmemory` when
    /// negative (`-10` for `10%`), 0 for no limit.
    pub maxmemory_clients: AtomicI64,
    /// Hot copy of `latency-tracking` (per-command latency histograms).
    pub latency_tracking: AtomicBool,
    /// Hot copy of `crash-log-enabled`, read by the fatal-signal handler (which takes no lock).
    pub crash_log_enabled: AtomicBool,
    /// Hot copy of `client-output-buffer-limit` for the normal and pubsub classes.
    pub obuf_limits: RwLock<[crate::config::ObufLimits; 3]>,
    /// Hot copy of `notify-keyspace-events` (the bits of [`keyspace_events_flags`]).
    pub notify_keyspace_events: std::sync::atomic::AtomicU32,
    /// Hot copy of `latency-monitor-threshold` (milliseconds, 0 = the latency monitor is off).
    pub latency_monitor_threshold: AtomicI64,
    /// `appendfsync always`: a reply waits until its write is on disk (read per reply flush).
    pub appendfsync_always: AtomicBool,
    /// `aof-timestamp-enabled`: `#TS:` annotations in the AOF (read per published change).
    pub aof_timestamps: AtomicBool,
    /// `lazyfree-lazy-user-del`: DEL frees as UNLINK does (read per DEL).
    pub lazyfree_lazy_user_del: AtomicBool,
    /// `rdbcompression` (read per DUMP).
    pub rdbcompression: AtomicBool,
    /// `sanitize-dump-payload` as a [`Sanitize`] (read per RESTORE).
    sanitize_dump_payload: AtomicU8,
    /// `min-replicas-to-write` (0 = off).
    min_replicas_to_write: AtomicI64,
    /// `min-replicas-max-lag` (0 = the check is off).
    min_replicas_max_lag: AtomicI64,
    requirepass: RwLock<Vec<u8>>,
    host: std::sync::Arc<dyn crate::host::Host>,
    /// The process's own `oom_score_adj` from before `oom-score-adj` was turned on (Redis's
    /// `oom_score_adj_base`), to add to and to give back when it is turned off.
    oom_base: parking_lot::Mutex<Option<i64>>,
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

/// Looks a parameter up by name or alias, case-insensitively.
pub fn find(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.name.eq_ignore_ascii_case(name) || p.alias.is_some_and(|a| a.eq_ignore_ascii_case(name)))
}

/// Parses a memory size the way Redis's `memtoull` does ("1gb", "512mb", "100k", "42"; units are
/// case-insensitive; no sign).
pub fn parse_memory(s: &str) -> Option<i64> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mul: i64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if num.len() >= 128 {
        return None;
    }
    let n: i64 = if num.is_empty() { 0 } else { num.parse().ok()? };
    n.checked_mul(mul)
}

/// C `strtoll(s, &end, base)` requiring the whole string to be consumed (leading spaces and a sign
/// allowed, empty string = 0), as Redis's special parameters parse their numbers.
fn strtoll_full(s: &str, base: u32) -> Option<i64> {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() {
        return if t.is_empty() { Some(0) } else { None };
    }
    let v = i64::from_str_radix(digits, base).ok()?;
    if digits.starts_with(['+', '-']) {
        return None;
    }
    Some(if neg { -v } else { v })
}

/// Redis's keyspace-events class letters to flags (`None` on an unknown letter).
pub fn keyspace_events_flags(s: &str) -> Option<u32> {
    let mut f = 0;
    for c in s.chars() {
        f |= match c {
            'A' => NOTIFY_ALL,
            'g' => 1 << 2,
            '$' => 1 << 3,
            'l' => 1 << 4,
            's' => 1 << 5,
            'h' => 1 << 6,
            'z' => 1 << 7,
            'x' => 1 << 8,
            'e' => 1 << 9,
            'K' => 1,
            'E' => 1 << 1,
            't' => 1 << 10,
            'm' => 1 << 11,
            'd' => 1 << 13,
            'n' => 1 << 14,
            // Latch's own: native locks (crate::notify).
            'L' => 1 << 15,
            _ => return None,
        };
    }
    Some(f)
}

const NOTIFY_ALL: u32 =
    (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 13);

/// Keyspace-events flags back to Redis's canonical letters.
pub fn keyspace_events_string(f: u32) -> String {
    let mut s = String::new();
    if f & NOTIFY_ALL == NOTIFY_ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (2, 'g'),
            (3, '$'),
            (4, 'l'),
            (5, 's'),
            (6, 'h'),
            (7, 'z'),
            (8, 'x'),
            (9, 'e'),
            (10, 't'),
            (13, 'd'),
            (14, 'n'),
        ] {
            if f & (1 << bit) != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [(0, 'K'), (1, 'E'), (11, 'm'), (15, 'L')] {
        if f & (1 << bit) != 0 {
            s.push(c);
        }
    }
    s
}

/// C `"%f"` then Redis's `trimDoubleString` (drop trailing zeros and a trailing dot).
fn trim_double(v: f64) -> String {
    let s = format!("{v:.6}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// Splits a multi-argument value on single spaces, as Redis's `sdssplitlen(value, " ")` does
/// (an empty value gives no arguments).
fn split_multi(v: &str) -> Vec<&str> {
    if v.is_empty() { Vec::new() } else { v.split(' ').collect() }
}

fn enum_name(table: &[(&'static str, u32)], v: u32, bitflags: bool) -> String {
    if let Some((n, _)) = table.iter().find(|(_, x)| *x == v) {
        return n.to_string();
    }
    let mut names = Vec::new();
    let mut unmatched = v;
    for (n, x) in table {
        if bitflags && *x != 0 && *x == (unmatched & *x) {
            names.push(*n);
            unmatched &= !*x;
        }
    }
    if names.is_empty() || unmatched != 0 { "unknown".into() } else { names.join(" ") }
}

fn enum_error(table: &[(&'static str, u32)]) -> String {
    let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
    format!("argument(s) must be one of the following: {}", names.join(", "))
}

fn bounds(v: i64, min: i64, max: i64) -> Result<(), String> {
    if v < min || v > max {
        return Err(format!("argument must be between {min} and {max} inclusive"));
    }
    Ok(())
}

/// Validates and normalises `value` for `p` (the form CONFIG GET will show). `current` is the value
/// now stored (`client-output-buffer-limit` only updates the classes given). The error is the reason
/// part of Redis's message.
pub fn validate(p: &Param, value: &str, current: &str) -> Result<String, String> {
    match p.kind {
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            // Latch has no active defragmentation: it refuses it as a Redis built without its
            // modified jemalloc does (`isValidActiveDefrag`), Debian's among them.
            "yes" if p.name == "activedefrag" => Err("Active defragmentation cannot be enabled: it requires a Redis \
                 server compiled with a modified Jemalloc like the one shipped by default with the Redis source \
                 distribution"
                .into()),
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Int(min, max) => {
            let v = crate::args::parse_i64_strict(value.as_bytes())
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            bounds(v, min, max)?;
            if p.name == "hz" {
                // Redis accepts any value and clamps it (CONFIG_MIN_HZ..CONFIG_MAX_HZ).
                return Ok(v.clamp(1, 500).to_string());
            }
            Ok(v.to_string())
        }
        Kind::Memory(min, max) => {
            let v = parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())?;
            bounds(v, min, max)?;
            Ok(v.to_string())
        }
        Kind::MemoryPercent(min, max) => {
            if let Some(v) = parse_memory(value) {
                bounds(v, min, max)?;
                return Ok(v.to_string());
            }
            let pct = value
                .strip_suffix('%')
                .filter(|n| !n.is_empty())
                .and_then(|n| crate::args::parse_i64_strict(n.as_bytes()))
                .filter(|n| *n >= 0)
                .ok_or_else(|| "argument must be a memory or percent value".to_string())?;
            if -pct < min {
                return Err(format!("percentage argument must be less or equal to {}", -min));
            }
            Ok(format!("{pct}%"))
        }
        Kind::Octal(min, max) => {
            let v = strtoll_full(value, 8)
                .filter(|_| !value.is_empty())
                .ok_or_else(|| "argument couldn't be parsed as an octal number".to_string())?;
            if v < min || v > max {
                return Err(format!("argument must be between {min:o} and {max:o} inclusive"));
            }
            Ok(format!("{v:o}"))
        }
        Kind::Enum(table) => {
            let v = table.iter().find(|(n, _)| n.eq_ignore_ascii_case(value)).map(|(_, v)| *v);
            let v = v.ok_or_else(|| enum_error(table))?;
            Ok(enum_name(table, v, false))
        }
        Kind::EnumFlags(table) => {
            let words = split_multi(value);
            if words.is_empty() {
                return Err(enum_error(table));
            }
            let mut v = 0;
            for w in words {
                let hit = table
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case(w))
                    .fold(None, |a, (_, x)| Some(a.unwrap_or(0) | x));
                v |= hit.ok_or_else(|| enum_error(table))?;
            }
            if v & 1 != 0 && v & 2 != 0 {
                return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
            }
            Ok(enum_name(table, v, true))
        }
        Kind::Str(check) => {
            if let Some(f) = check {
                f(value).map_err(str::to_string)?;
            }
            Ok(value.to_string())
        }
        Kind::Special => validate_special(p.name, value, current),
    }
}

fn validate_special(name: &str, value: &str, current: &str) -> Result<String, String> {
    match name {
        "save" => {
            let args = if value.is_empty() { Vec::new() } else { split_multi(value) };
            let invalid = || "Invalid save parameters".to_string();
            if args.len() % 2 != 0 {
                return Err(invalid());
            }
            let mut out = Vec::new();
            for (j, a) in args.iter().enumerate() {
                let v = strtoll_full(a, 10).ok_or_else(invalid)?;
                if (j % 2 == 0 && v < 1) || (j % 2 == 1 && v < 0) {
                    return Err(invalid());
                }
                out.push(if j % 2 == 1 { (v as i32).to_string() } else { v.to_string() });
            }
            Ok(out.join(" "))
        }
        "client-output-buffer-limit" => {
            let args = split_multi(value);
            if !args.len().is_multiple_of(4) {
                return Err("Wrong number of arguments in buffer limit configuration.".into());
            }
            let mut classes: Vec<(String, String, String)> = Vec::new();
            let cur = split_multi(current);
            for c in cur.chunks(4) {
                if let [n, h, s, t] = c {
                    classes.push((n.to_string(), format!("{h} {s} {t}"), String::new()));
                }
            }
            for c in args.chunks(4) {
                let class = match c[0].to_ascii_lowercase().as_str() {
                    "normal" => "normal",
                    "slave" | "replica" => "slave",
                    "pubsub" => "pubsub",
                    _ => {
                        return Err("Invalid client class specified in buffer limit configuration.".into());
                    }
                };
                let hard = parse_memory(c[1]);
                let soft = parse_memory(c[2]);
                let secs = strtoll_full(c[3], 10).filter(|s| *s >= 0 && *s <= i32::MAX as i64);
                let (Some(h), Some(s), Some(t)) = (hard, soft, secs) else {
                    return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into());
                };
                if let Some(e) = classes.iter_mut().find(|e| e.0 == class) {
                    e.1 = format!("{h} {s} {t}");
                }
            }
            Ok(classes.iter().map(|(n, v, _)| format!("{n} {v}")).collect::<Vec<_>>().join(" "))
        }
        "oom-score-adj-values" => {
            let args = split_multi(value);
            if args.len() != 3 {
                return Err("wrong number of arguments".into());
            }
            let mut out = Vec::new();
            for a in args {
                let v = strtoll_full(a, 10).filter(|v| (-2000..=2000).contains(v)).ok_or_else(|| {
                    "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".to_string()
                })?;
                out.push(v.to_string());
            }
            Ok(out.join(" "))
        }
        "notify-keyspace-events" => keyspace_events_flags(value)
            .map(keyspace_events_string)
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()),
        "bind" => {
            let args = split_multi(value);
            if args.len() > 16 {
                return Err("Too many bind addresses specified.".into());
            }
            Ok(args.join(" "))
        }
        "replicaof" => {
            let args = split_multi(value);
            if args.len() != 2 {
                return Err("wrong number of arguments".into());
            }
            if args[0].eq_ignore_ascii_case("no") && args[1].eq_ignore_ascii_case("one") {
                return Ok(String::new());
            }
            let port = strtoll_full(args[1], 10).filter(|p| (0..=65535).contains(p));
            let port = port.ok_or_else(|| "Invalid master port".to_string())?;
            Ok(format!("{} {port}", args[0]))
        }
        "latency-tracking-info-percentiles" => {
            let args = split_multi(value);
            let mut out = Vec::new();
            for a in args.iter().filter(|_| !(args.len() == 1 && args[0].is_empty())) {
                let v = crate::args::parse_f64(a.as_bytes())
                    .ok_or_else(|| "Invalid latency-tracking-info-percentiles parameters".to_string())?;
                if !(0.0..=100.0).contains(&v) {
                    return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into());
                }
                out.push(trim_double(v));
            }
            Ok(out.join(" "))
        }
        _ => Ok(value.to_string()),
    }
}

impl Config {
    /// Defaults.
    pub fn new() -> Config {
        Config::with_host(std::sync::Arc::new(crate::host::MemoryHost::default()))
    }

    /// Defaults, with the operating system reached through `host` (see [`crate::host`]).
    pub fn with_host(host: std::sync::Arc<dyn crate::host::Host>) -> Config {
        let c = Config {
            values: RwLock::new(BTreeMap::new()),
            proto_max_bulk_len: AtomicI64::new(0),
            hll_sparse_max_bytes: AtomicI64::new(0),
            stream_node_max_bytes: AtomicI64::new(0),
            stream_node_max_entries: AtomicI64::new(0),
            set_max_intset_entries: AtomicI64::new(0),
            zset_max_listpack_entries: AtomicI64::new(0),
            zset_max_listpack_value: AtomicI64::new(0),
            hash_max_listpack_entries: AtomicI64::new(0),
            hash_max_listpack_value: AtomicI64::new(0),
            client_query_buffer_limit: AtomicI64::new(0),
            slowlog_log_slower_than: AtomicI64::new(0),
            slowlog_max_len: AtomicI64::new(0),
            renames: parking_lot::Mutex::default(),
            maxclients: AtomicI64::new(0),
            timeout: AtomicI64::new(0),
            hz: AtomicU64::new(10),
            has_password: AtomicBool::new(false),
            default_user: RwLock::new(None),
            acl_pubsub_all: AtomicBool::new(false),
            acl_user_lines: parking_lot::Mutex::default(),
            busy_reply_threshold: AtomicI64::new(0),
            maxmemory: AtomicU64::new(0),
            maxmemory_policy: AtomicU8::new(0),
            lfu_log_factor: AtomicI64::new(0),
            lfu_decay_time: AtomicI64::new(0),
            evict_native_locks: AtomicBool::new(false),
            maxmemory_clients: AtomicI64::new(0),
            latency_tracking: AtomicBool::new(true),
            crash_log_enabled: AtomicBool::new(true),
            obuf_limits: RwLock::default(),
            notify_keyspace_events: std::sync::atomic::AtomicU32::new(0),
            latency_monitor_threshold: AtomicI64::new(0),
            min_replicas_to_write: AtomicI64::new(0),
            appendfsync_always: AtomicBool::new(false),
            aof_timestamps: AtomicBool::new(false),
            lazyfree_lazy_user_del: AtomicBool::new(false),
            rdbcompression: AtomicBool::new(true),
            sanitize_dump_payload: AtomicU8::new(Sanitize::No as u8),
            min_replicas_max_lag: AtomicI64::new(0),
            requirepass: RwLock::new(Vec::new()),
            host,
            oom_base: parking_lot::Mutex::new(None),
        };
        for p in PARAMS {
            let v = if p.name == "dir" { c.host.working_dir() } else { p.default.to_string() };
            c.store(p, v);
        }
        c
    }

    /// The value of a parameter, as CONFIG GET shows it.
    pub fn get(&self, name: &str) -> Option<String> {
        let p = find(name)?;
        self.values.read().get(p.name).cloned()
    }

    /// `sanitize-dump-payload`, from its hot copy.
    pub fn sanitize_dump_payload(&self) -> Sanitize {
        match self.sanitize_dump_payload.load(Ordering::Relaxed) {
            1 => Sanitize::Yes,
            2 => Sanitize::Clients,
            _ => Sanitize::No,
        }
    }

    /// The normal class's `client-output-buffer-limit` (0 = no limit).
    pub fn normal_obuf_limits(&self) -> crate::config::ObufLimits {
        self.obuf_limits.read()[0]
    }

    /// The pubsub class's `client-output-buffer-limit` (0 = no limit).
    pub fn pubsub_obuf_limits(&self) -> crate::config::ObufLimits {
        self.obuf_limits.read()[1]
    }

    /// The replica class's `client-output-buffer-limit` (0 = no limit).
    pub fn replica_obuf_limits(&self) -> crate::config::ObufLimits {
        self.obuf_limits.read()[2]
    }

    /// An integer parameter (0 if unset or not numeric).
    pub fn get_i64(&self, name: &str) -> i64 {
        self.get(name).and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    /// The password, if one is required.
    pub fn requirepass(&self) -> Option<Vec<u8>> {
        let p = self.requirepass.read();
        (!p.is_empty()).then(|| p.clone())
    }

    /// Sets one parameter. `startup` allows immutable parameters. The error text is the reason part of
    /// Redis's message (the caller wraps it).
    pub fn set(&self, name: &str, value: &str, startup: bool) -> Result<(), String> {
        let p = find(name).ok_or_else(|| "Unknown option or number of arguments for CONFIG SET".to_string())?;
        if p.immutable() && !startup {
            return Err("can't set immutable config".into());
        }
        let cur = self.values.read().get(p.name).cloned().unwrap_or_default();
        let norm = self.check(p, value, &cur)?;
        self.store(p, norm);
        Ok(())
    }

    /// Whether CONFIG SET of `pairs` must wait for the data to load (Redis's `DENY_LOADING_CONFIG`:
    /// `appendonly`, `dir`, `repl-diskless-load`), as Redis answers it with `-LOADING` first.
    pub fn denied_while_loading(pairs: &[(&[u8], &[u8])], allow_protected: bool) -> bool {
        pairs.iter().any(|(name, _)| {
            find(&String::from_utf8_lossy(name)).is_some_and(|p| {
                matches!(p.name, "appendonly" | "dir" | "repl-diskless-load")
                    && !p.immutable()
                    && (p.flags & PROT == 0 || allow_protected)
            })
        })
    }

    /// CONFIG SET with Redis 7's semantics: every (name, value) pair is checked (unknown name,
    /// immutable, protected, duplicate, then each value) before any is stored, so either all change or
    /// none. `allow_protected` tells whether `enable-protected-configs` lets this client change `dir`
    /// and `dbfilename`. The error is the full reply text.
    pub fn set_many(&self, pairs: &[(&[u8], &[u8])], allow_protected: bool) -> Result<(), String> {
        let mut unknown: Option<String> = None;
        let mut failed: Option<(String, &str)> = None;
        let mut found: Vec<&'static Param> = Vec::new();
        for (name, _) in pairs {
            let n = String::from_utf8_lossy(name);
            let Some(p) = find(&n) else {
                if unknown.is_none() && failed.is_none() {
                    unknown = Some(n.to_string());
                }
                continue;
            };
            if unknown.is_some() || failed.is_some() {
                continue;
            }
            if p.immutable() || (p.flags & PROT != 0 && !allow_protected) {
                let why = if p.immutable() { "can't set immutable config" } else { "can't set protected config" };
                failed = Some((n.to_string(), why));
                continue;
            }
            if found.iter().any(|q| std::ptr::eq(*q, p)) {
                failed = Some((n.to_string(), "duplicate parameter"));
            }
            found.push(p);
        }
        if let Some(n) = unknown {
            return Err(format!("ERR Unknown option or number of arguments for CONFIG SET - '{n}'"));
        }
        if let Some((n, why)) = failed {
            return Err(format!("ERR CONFIG SET failed (possibly related to argument '{n}') - {why}"));
        }
        let mut normalized = Vec::with_capacity(pairs.len());
        {
            let vals = self.values.read();
            for (p, (_, v)) in found.iter().zip(pairs) {
                let cur = vals.get(p.name).map(String::as_str).unwrap_or("");
                match self.check(p, &String::from_utf8_lossy(v), cur) {
                    // More clients need more file descriptors (Redis's updateMaxclients).
                    Ok(n) if p.name == "maxclients" && n.parse::<u64>().unwrap_or(0) > cur.parse().unwrap_or(0) => {
                        let want: u64 = n.parse().unwrap_or(0);
                        match self.host().open_files_for(want) {
                            Ok(got) if got < want => {
                                return Err(format!(
                                    "ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating \
                                     system is not able to handle the specified number of clients, try with {got}"
                                ));
                            }
                            _ => normalized.push(n),
                        }
                    }
                    Ok(n) => normalized.push(n),
                    Err(e) => {
                        return Err(format!("ERR CONFIG SET failed (possibly related to argument '{}') - {e}", p.name));
                    }
                }
            }
        }
        // New listening sockets first (Redis's changeListener): if they cannot be had, nothing
        // changes and the old ones stay.
        let pos = |name: &str| found.iter().position(|p| p.name == name);
        if let (bind_at, port_at) = (pos("bind"), pos("port"))
            && (bind_at.is_some() || port_at.is_some())
        {
            let bind = bind_at.map_or_else(|| self.get("bind").unwrap_or_default(), |i| normalized[i].clone());
            let port = port_at.map_or_else(|| self.get_i64("port"), |i| normalized[i].parse().unwrap_or(0));
            let tls_port = self.get_i64("tls-port") as u16;
            let tls_failed = bind_at.is_some() && tls_port != 0 && self.host().relisten_tls(&bind, tls_port).is_err();
            if tls_failed || self.host().relisten(&bind, port as u16).is_err() {
                return Err(match bind_at {
                    Some(_) => "ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.".into(),
                    None => "ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port".into(),
                });
            }
        }
        // TLS (Redis's applyTlsCfg and applyTLSPort): while TLS is on (a TLS port, or TLS for
        // replication or cluster), a change of any TLS parameter builds the TLS configuration anew
        // from the files; if that fails nothing changes and the old configuration stays. A new
        // `tls-port` is listened on after that. `tls-auth-clients` is read per connection.
        let tls_at: Vec<usize> = (0..found.len())
            .filter(|&i| found[i].name.starts_with("tls-") && found[i].name != "tls-auth-clients")
            .collect();
        if let Some(&first) = tls_at.first() {
            let value =
                |name: &str| pos(name).map_or_else(|| self.get(name).unwrap_or_default(), |i| normalized[i].clone());
            let on = value("tls-port") != "0" || value("tls-replication") == "yes" || value("tls-cluster") == "yes";
            if on && self.host().configure_tls(&value).is_err() {
                return Err(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{}') - Unable to update TLS configuration. Check server logs.",
                    found[first].name
                ));
            }
            if pos("tls-port").is_some() {
                let port = value("tls-port").parse().unwrap_or(0);
                if self.host().relisten_tls(&value("bind"), port).is_err() {
                    return Err(
                        "ERR CONFIG SET failed (possibly related to argument 'tls-port') - Unable to listen on this port".into()
                    );
                }
            }
        }
        // oom-score-adj: the process's score changes before the values are stored (Redis's
        // setOOMScoreAdj); if it cannot, nothing changes.
        if let (mode_at, values_at) = (pos("oom-score-adj"), pos("oom-score-adj-values"))
            && (mode_at.is_some() || values_at.is_some())
        {
            let mode = mode_at.map_or_else(|| self.get("oom-score-adj").unwrap_or_default(), |i| normalized[i].clone());
            let values = values_at
                .map_or_else(|| self.get("oom-score-adj-values").unwrap_or_default(), |i| normalized[i].clone());
            if self.apply_oom_score_adj(&mode, &values).is_err() {
                let name = if mode_at.is_some() { "oom-score-adj" } else { "oom-score-adj-values" };
                return Err(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - Failed to set current oom_score_adj. Check server logs."
                ));
            }
        }
        for (p, v) in found.into_iter().zip(normalized) {
            self.store(p, v);
        }
        Ok(())
    }

    /// Sets the process's `oom_score_adj` as `oom-score-adj` (`mode`) and the entry of
    /// `oom-score-adj-values` for its class say: the base plus the value (`yes`/`relative`), the
    /// value alone (`absolute`), or the base given back (`no`). The class is a replica's (the
    /// second entry) while `replicaof` names a primary, a primary's (the first) otherwise, as
    /// Redis's `setOOMScoreAdj(-1)` picks it. Called at startup and by CONFIG SET.
    pub fn apply_oom_score_adj(&self, mode: &str, values: &str) -> Result<(), String> {
        let mut base = self.oom_base.lock();
        if mode == "no" {
            return match base.take() {
                Some(b) => self.host.set_oom_score_adj(b),
                None => Ok(()),
            };
        }
        let class = usize::from(self.get("replicaof").is_some_and(|p| !p.is_empty()));
        let value: i64 = values.split_whitespace().nth(class).and_then(|v| v.parse().ok()).unwrap_or(0);
        let b = match *base {
            Some(b) => b,
            None => self.host.oom_score_adj().unwrap_or(0),
        };
        let want = if mode == "absolute" { value } else { b + value };
        self.host.set_oom_score_adj(want.clamp(-1000, 1000))?;
        *base = Some(b);
        Ok(())
    }

    /// [`Config::apply_oom_score_adj`] with the settings as they are: at startup, and after the
    /// process changed class (it became a replica or a primary: Redis's `replicationSetMaster`
    /// and `replicationUnsetMaster`).
    pub fn apply_current_oom_score_adj(&self) -> Result<(), String> {
        match (self.get("oom-score-adj"), self.get("oom-score-adj-values")) {
            (Some(mode), Some(values)) => self.apply_oom_score_adj(&mode, &values),
            _ => Ok(()),
        }
    }

    /// The operating-system services behind this configuration, shared (for work that outlives a
    /// command: a background save).
    pub fn host_arc(&self) -> std::sync::Arc<dyn crate::host::Host> {
        self.host.clone()
    }

    /// `template` (`proc-title-template`'s form) expanded for this configuration, the process's
    /// `argv0` and its config file (`-` for none): Redis's `redisProcTitleGetVariable`.
    pub fn proc_title(&self, template: &str, argv0: &str, config_file: &str) -> Option<String> {
        let (port, tls_port) = (self.get_i64("port"), self.get_i64("tls-port"));
        let unixsocket = self.get("unixsocket").unwrap_or_default();
        let var = |name: &str| {
            Some(match name {
                "title" => argv0.to_string(),
                "listen-addr" if port != 0 || tls_port != 0 => {
                    let bind = self.get("bind").unwrap_or_default();
                    let first = bind.split_whitespace().next().unwrap_or("*").to_string();
                    format!("{first}:{}", if port != 0 { port } else { tls_port })
                }
                "listen-addr" => format!("unixsocket:{unixsocket}"),
                "server-mode" if self.get("cluster-enabled").as_deref() == Some("yes") => "[cluster]".to_string(),
                "server-mode" => String::new(),
                "config-file" => config_file.to_string(),
                "port" => port.to_string(),
                "tls-port" => tls_port.to_string(),
                "unixsocket" => unixsocket.clone(),
                _ => return None,
            })
        };
        expand_proc_title(template, &var)
    }

    /// Sets the process title from `template` (`proc-title-template`'s form) through the host.
    pub fn set_proc_title(&self, template: &str) {
        self.host.set_proc_title(&|argv0, file| self.proc_title(template, argv0, file));
    }

    /// The operating-system services behind this configuration.
    pub fn host(&self) -> &dyn crate::host::Host {
        &*self.host
    }

    /// [`validate`], plus the checks that need the machine (`dir` must be an existing directory,
    /// stored absolute as Redis's `getcwd` shows it).
    fn check(&self, p: &Param, value: &str, current: &str) -> Result<String, String> {
        let v = validate(p, value, current)?;
        if p.name == "dir" { self.host.resolve_dir(&v) } else { Ok(v) }
    }

    fn store(&self, p: &'static Param, v: String) {
        if let Some(apply) = p.apply {
            apply(self, &v);
        }
        self.values.write().insert(p.name, v);
    }

    /// `set-max-intset-entries`, from its hot copy: the members past which SADD makes an intset a
    /// hash table.
    pub fn intset_max(&self) -> usize {
        size(&self.set_max_intset_entries)
    }

    /// `hash-max-listpack-entries` and `hash-max-listpack-value`, from their hot copies.
    pub fn hash_listpack_limits(&self) -> (usize, usize) {
        (size(&self.hash_max_listpack_entries), size(&self.hash_max_listpack_value))
    }

    /// `zset-max-listpack-entries` and `zset-max-listpack-value`, from their hot copies.
    pub fn zset_listpack_limits(&self) -> (usize, usize) {
        (size(&self.zset_max_listpack_entries), size(&self.zset_max_listpack_value))
    }

    /// The `*-max-*` limits that decide which encoding Redis would give a value (OBJECT ENCODING,
    /// and the encodings RDB files and DUMP payloads are written in).
    pub fn encoding_limits(&self) -> crate::value::EncodingLimits {
        let (hash_entries, hash_value) = self.hash_listpack_limits();
        let (zset_entries, zset_value) = self.zset_listpack_limits();
        crate::value::EncodingLimits {
            hash_entries,
            hash_value,
            set_intset: self.intset_max(),
            zset_entries,
            zset_value,
        }
    }

    /// What an access to a key records: the LFU counter too under an LFU policy.
    pub fn access(&self) -> crate::types::Access {
        if self.policy().is_lfu() {
            crate::types::Access::Lfu {
                log_factor: self.lfu_log_factor.load(Ordering::Relaxed).clamp(0, u32::MAX as i64) as u32,
                decay_minutes: self.lfu_decay_time.load(Ordering::Relaxed).clamp(0, u32::MAX as i64) as u32,
            }
        } else {
            crate::types::Access::Lru
        }
    }

    /// The eviction policy (`maxmemory-policy`).
    pub fn policy(&self) -> Policy {
        Policy::from_index(self.maxmemory_policy.load(Ordering::Relaxed))
    }

    /// The limit on all clients' memory together (`maxmemory-clients`), in bytes; 0 for none (a
    /// percentage of an unset `maxmemory` is none too).
    pub fn clients_memory_limit(&self) -> u64 {
        match self.maxmemory_clients.load(Ordering::Relaxed) {
            b if b >= 0 => b as u64,
            p => self.maxmemory.load(Ordering::Relaxed).saturating_mul(p.unsigned_abs()) / 100,
        }
    }

    /// `min-replicas-to-write` and `min-replicas-max-lag`, when both are set (Redis's
    /// `checkGoodReplicasStatus` applies only then).
    pub fn min_replicas(&self) -> Option<(u64, u64)> {
        let (n, lag) =
            (self.min_replicas_to_write.load(Ordering::Relaxed), self.min_replicas_max_lag.load(Ordering::Relaxed));
        (n > 0 && lag > 0).then_some((n as u64, lag as u64))
    }

    /// CONFIG GET: for each argument, an exact (case-insensitive) name or alias is reported under the
    /// name as given; a glob pattern matches names and aliases (hidden parameters excluded), an alias
    /// only when its parameter is not already reported. Each parameter appears once.
    pub fn get_matching(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let vals = self.values.read();
        let mut out: Vec<(String, String)> = Vec::new();
        let push = |key: String, p: &'static Param, out: &mut Vec<(String, String)>| {
            if out.iter().any(|(k, _)| k.eq_ignore_ascii_case(&key)) {
                return;
            }
            out.push((key, vals.get(p.name).cloned().unwrap_or_default()));
        };
        for pat in patterns {
            if !pat.iter().any(|c| matches!(c, b'[' | b'*' | b'?')) {
                let name = String::from_utf8_lossy(pat).into_owned();
                if let Some(p) = find(&name) {
                    push(name, p, &mut out);
                }
                continue;
            }
            for p in PARAMS.iter().filter(|p| p.flags & HIDDEN == 0) {
                if crate::glob::matches(pat, p.name.as_bytes(), true) {
                    push(p.name.to_string(), p, &mut out);
                }
            }
            // An alias matching the pattern is reported too, beside its parameter's own name (Redis
            // registers aliases as configs of their own).
            for p in PARAMS.iter().filter(|p| p.flags & HIDDEN == 0) {
                if let Some(a) = p.alias
                    && crate::glob::matches(pat, a.as_bytes(), true)
                {
                    push(a.to_string(), p, &mut out);
                }
            }
        }
        out
    }

    /// (name, value) pairs whose name or alias matches the glob `pattern`, in table order.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let vals = self.values.read();
        let mut out = Vec::new();
        for p in PARAMS {
            let hit = crate::glob::matches(pattern, p.name.as_bytes(), true)
                || p.alias.is_some_and(|a| crate::glob::matches(pattern, a.as_bytes(), true));
            if hit && let Some(v) = vals.get(p.name) {
                out.push((p.name, v.clone()));
            }
        }
        out
    }

    /// Every (name, value), sorted by name, for CONFIG REWRITE.
    pub fn all(&self) -> Vec<(&'static str, String)> {
        self.values.read().iter().map(|(k, v)| (*k, v.clone())).collect()
    }
}

/// CONFIG REWRITE's text transformation (pure): given the old file and the current configuration,
/// returns the new file. As Redis does: lines of known parameters are replaced in place by the current
/// value (the first occurrence; later ones are dropped), comments and unknown directives are kept,
/// parameters that differ from their default and were not in the file are appended after a
/// `# Generated by CONFIG REWRITE` line. Multi-argument values (`save`, `client-output-buffer-limit`)
/// get one line per group, as Redis writes them.
pub fn rewrite_text(old: &str, config: &Config) -> String {
    rewrite_text_with(old, config, false)
}

/// [`rewrite_text`]; with `force_all` (DEBUG CONFIG-REWRITE-FORCE-ALL) every parameter is written,
/// defaults included.
pub fn rewrite_text_with(old: &str, config: &Config, force_all: bool) -> String {
    rewrite_text_users(old, config, force_all, None)
}

/// [`rewrite_text_with`], with the ACL users as `user` lines (Redis's rewriteConfigUserOption):
/// `users` replaces the file's `user` lines (the first one's place, the others dropped, new ones
/// appended); None leaves them as they are.
pub fn rewrite_text_users(old: &str, config: &Config, force_all: bool, users: Option<&[String]>) -> String {
    const SIGNATURE: &str = "# Generated by CONFIG REWRITE";
    let vals = config.all();
    let mut users_done = false;
    let value_of = |name: &str| vals.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()).unwrap_or_default();
    let mut out: Vec<String> = Vec::new();
    let mut done: Vec<&'static str> = Vec::new();
    for line in old.lines() {
        let t = line.trim();
        if t == SIGNATURE {
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            out.push(line.to_string());
            continue;
        }
        let name = t.split_whitespace().next().unwrap_or("");
        if let Some(users) = users
            && name.eq_ignore_ascii_case("user")
        {
            if !users_done {
                users_done = true;
                out.extend(users.iter().cloned());
            }
            continue;
        }
        match find(name) {
            Some(p) => {
                if !done.contains(&p.name) {
                    done.push(p.name);
                    out.extend(directive_lines(p, &value_of(p.name)));
                }
            }
            None => out.push(line.to_string()),
        }
    }
    let mut appended = false;
    for p in PARAMS {
        if done.contains(&p.name) {
            continue;
        }
        let v = value_of(p.name);
        let default = if p.name == "dir" { v.clone() } else { p.default.to_string() };
        if v == default && !force_all {
            continue;
        }
        if !appended {
            out.push(SIGNATURE.to_string());
            appended = true;
        }
        out.extend(directive_lines(p, &v));
    }
    if let Some(users) = users
        && !users_done
        && !users.is_empty()
    {
        if !appended {
            out.push(SIGNATURE.to_string());
        }
        out.extend(users.iter().cloned());
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

fn quote_conf(v: &str) -> String {
    let plain = !v.is_empty() && v.bytes().all(|c| c.is_ascii_graphic() && c != b'"' && c != b'\'' && c != b'\\');
    if plain { v.to_string() } else { crate::args::repr(v.as_bytes()) }
}

fn directive_lines(p: &Param, v: &str) -> Vec<String> {
    let words = split_multi(v);
    match p.name {
        // Not a replica: no line (Redis's rewriteConfigReplicaOfOption).
        "replicaof" if words.is_empty() => Vec::new(),
        "save" if words.is_empty() => vec!["save \"\"".into()],
        "save" => words.chunks(2).map(|c| format!("save {}", c.join(" "))).collect(),
        "client-output-buffer-limit" => {
            words.chunks(4).map(|c| format!("client-output-buffer-limit {}", c.join(" "))).collect()
        }
        _ if p.flags & MULTI != 0 && !words.is_empty() => {
            vec![format!("{} {}", p.name, words.iter().map(|w| quote_conf(w)).collect::<Vec<_>>().join(" "))]
        }
        _ => vec![format!("{} {}", p.name, quote_conf(v))],
    }
}

/// What `requirepass` sets: the password of the ACL's `default` user (Redis's
/// `ACLUpdateDefaultUserPassword`). The ACL's user implements it, so that this table names no ACL
/// type.
pub trait DefaultPassword: Send + Sync {
    /// Sets the password (`nopass` when empty); returns whether the user now needs one to
    /// authenticate (Redis's `authRequired`).
    fn set_password(&self, pass: &[u8]) -> bool;
}

impl Config {
    /// Binds the user `requirepass` sets the password of, and sets it from the current value.
    pub fn bind_default_user(&self, user: std::sync::Arc<dyn DefaultPassword>) {
        *self.default_user.write() = Some(user);
        self.apply_requirepass();
    }

    /// `requirepass`'s value applied to the default user, if bound; `has_password` follows.
    fn apply_requirepass(&self) {
        let pass = self.requirepass.read().clone();
        let needs = match &*self.default_user.read() {
            Some(u) => u.set_password(&pass),
            None => !pass.is_empty(),
        };
        self.has_password.store(needs, Ordering::Relaxed);
    }
}

/// `maxmemory-policy`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Policy {
    /// `volatile-lru`
    VolatileLru = 0,
    /// `volatile-lfu`
    VolatileLfu = 1,
    /// `volatile-random`
    VolatileRandom = 2,
    /// `volatile-ttl`
    VolatileTtl = 3,
    /// `allkeys-lru`
    AllkeysLru = 4,
    /// `allkeys-lfu`
    AllkeysLfu = 5,
    /// `allkeys-random`
    AllkeysRandom = 6,
    /// `noeviction`
    NoEviction = 7,
}

const POLICIES: [(Policy, &str); 8] = [
    (Policy::VolatileLru, "volatile-lru"),
    (Policy::VolatileLfu, "volatile-lfu"),
    (Policy::VolatileRandom, "volatile-random"),
    (Policy::VolatileTtl, "volatile-ttl"),
    (Policy::AllkeysLru, "allkeys-lru"),
    (Policy::AllkeysLfu, "allkeys-lfu"),
    (Policy::AllkeysRandom, "allkeys-random"),
    (Policy::NoEviction, "noeviction"),
];

impl Policy {
    /// The policy a `maxmemory-policy` value names.
    pub fn parse(s: &str) -> Option<Policy> {
        POLICIES.iter().find(|(_, n)| n.eq_ignore_ascii_case(s)).map(|(p, _)| *p)
    }
    /// The policy stored as `p as u8`.
    pub fn from_index(i: u8) -> Policy {
        POLICIES.get(i as usize).map_or(Policy::NoEviction, |(p, _)| *p)
    }
    /// An LFU policy (keys keep an access-frequency counter).
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::VolatileLfu | Policy::AllkeysLfu)
    }
    /// An LRU or LFU policy (Redis then stops sharing small integers: each key needs its own metadata).
    pub fn tracks_access(self) -> bool {
        matches!(self, Policy::VolatileLru | Policy::AllkeysLru | Policy::VolatileLfu | Policy::AllkeysLfu)
    }
}

/// Output limits of a client's class (`client-output-buffer-limit`): hard bytes, soft bytes, soft
/// seconds; 0 disables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObufLimits {
    /// Close at once at this many bytes.
    pub hard: u64,
    /// Close when over this many bytes for more than `soft_secs`.
    pub soft: u64,
    /// See `soft`.
    pub soft_secs: u64,
}

impl ObufLimits {
    /// Whether `used` bytes put a client over these limits, at Unix second `now_s`; `since` keeps
    /// when the soft limit was first reached (Redis's `checkClientOutputBufferLimits`).
    pub fn over(&self, used: u64, now_s: u64, since: &mut Option<u64>) -> bool {
        if used == 0 {
            *since = None;
            return false;
        }
        if self.hard != 0 && used >= self.hard {
            return true;
        }
        if self.soft == 0 || used < self.soft {
            *since = None;
            return false;
        }
        now_s - *since.get_or_insert(now_s) > self.soft_secs
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn policies_by_name_and_index() {
        for (p, name) in POLICIES {
            assert_eq!(Policy::parse(name), Some(p));
            assert_eq!(Policy::from_index(p as u8), p);
        }
        assert_eq!(Policy::parse("ALLKEYS-LRU"), Some(Policy::AllkeysLru));
        assert_eq!(Policy::parse("lru"), None);
    }

    use super::*;

    /// Redis keeps save's changes count in a C int: a larger count reads back wrapped, and the
    /// wrapped value is refused (redis-server 7.0.15 answers the same; found by the config fuzzer).
    #[test]
    fn redis_cannot_reload_as_in_redis() {
        let c = Config::new();
        c.set("save", "3 66666666666", false).unwrap();
        assert_eq!(c.get("save").as_deref(), Some("3 -2052810070"));
        assert!(c.set("save", "3 -2052810070", false).is_err());
        assert!(crate::testkit::redis_cannot_reload("save", "3 -2052810070"));
        assert!(!crate::testkit::redis_cannot_reload("save", "3 100"));
        // replicaof "no one" reads back empty, which Redis does not load either.
        c.set("replicaof", "no one", true).unwrap();
        assert_eq!(c.get("replicaof").as_deref(), Some(""));
        assert!(c.set("replicaof", "", true).is_err());
        assert!(crate::testkit::redis_cannot_reload("replicaof", ""));
    }

    #[test]
    fn oom_score_adj_moves_the_process_score_as_redis() {
        let host = std::sync::Arc::new(crate::host::MemoryHost::default());
        host.oom_score_adj.store(22, Ordering::Relaxed);
        let c = Config::with_host(host.clone());
        let score = || host.oom_score_adj.load(Ordering::Relaxed);
        c.set_many(&[(b"oom-score-adj-values", b"10 20 30"), (b"oom-score-adj", b"yes")], false).unwrap();
        assert_eq!(score(), 32);
        c.set_many(&[(b"oom-score-adj-values", b"15 20 30")], false).unwrap();
        assert_eq!(score(), 37);
        c.set_many(&[(b"oom-score-adj", b"absolute")], false).unwrap();
        assert_eq!(score(), 15);
        c.set_many(&[(b"oom-score-adj", b"no")], false).unwrap();
        assert_eq!(score(), 22);
        // Off: the values do not touch the score.
        host.oom_score_adj.store(24, Ordering::Relaxed);
        c.set_many(&[(b"oom-score-adj-values", b"1 1 1")], false).unwrap();
        assert_eq!(score(), 24);
        // Clamped to the kernel's range.
        c.set_many(&[(b"oom-score-adj-values", b"2000 0 0"), (b"oom-score-adj", b"relative")], false).unwrap();
        assert_eq!(score(), 1000);
        // A replica's class takes the second value; a primary's again the first.
        c.set_many(&[(b"oom-score-adj-values", b"15 20 30")], false).unwrap();
        assert_eq!(score(), 39);
        c.set("replicaof", "localhost 1", true).unwrap();
        c.apply_current_oom_score_adj().unwrap();
        assert_eq!(score(), 44);
        c.set("replicaof", "no one", true).unwrap();
        c.apply_current_oom_score_adj().unwrap();
        assert_eq!(score(), 39);
    }

    /// As Redis built without its own jemalloc (Debian's): no active defragmentation to turn on.
    #[test]
    fn active_defragmentation_is_refused_as_redis_without_defrag_refuses_it() {
        let c = Config::new();
        assert_eq!(
            c.set("activedefrag", "yes", false),
            Err("Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified \
                 Jemalloc like the one shipped by default with the Redis source distribution"
                .to_string())
        );
        assert_eq!(c.get("activedefrag").as_deref(), Some("no"));
        c.set("activedefrag", "no", false).unwrap();
    }

    #[test]
    fn the_encoding_limits_default_to_the_rows_defaults() {
        assert_eq!(Config::new().encoding_limits(), crate::value::EncodingLimits::default());
    }

    #[test]
    fn defaults_and_validation() {
        let c = Config::new();
        assert_eq!(c.get("port").as_deref(), Some("6379"));
        // Redis 7's: every interface, protected mode on.
        assert_eq!(c.get("bind").as_deref(), Some("* -::*"));
        assert_eq!(c.get("protected-mode").as_deref(), Some("yes"));
        assert_eq!(c.proto_max_bulk_len.load(Ordering::Relaxed), 512 * 1024 * 1024);
        c.set("maxmemory", "1mb", false).unwrap();
        assert_eq!(c.get("maxmemory").as_deref(), Some("1048576"));
        assert!(c.set("databases", "1", false).is_err());
        assert!(c.set("hz", "-1", false).is_err());
        assert!(c.set("appendonly", "maybe", false).is_err());
        c.set("requirepass", "s3cret", false).unwrap();
        assert_eq!(c.requirepass().as_deref(), Some(&b"s3cret"[..]));
    }

    #[test]
    fn table_is_consistent() {
        let c = Config::new();
        let mut names = std::collections::HashSet::new();
        for p in PARAMS {
            assert!(names.insert(p.name), "duplicate {}", p.name);
            if let Some(a) = p.alias {
                assert!(names.insert(a), "duplicate alias {a}");
            }
            if p.name != "dir" && p.name != "replicaof" {
                let v = validate(p, p.default, p.default).unwrap_or_else(|e| panic!("{}: {e}", p.name));
                assert_eq!(v, p.default, "{} default is not normalised", p.name);
            }
            assert!(c.get(p.name).is_some());
        }
        assert!(PARAMS.len() > 150);
    }

    #[test]
    fn special_formats() {
        let c = Config::new();
        let ok = |n: &str, v: &str| c.set(n, v, false).unwrap_or_else(|e| panic!("{n} {v}: {e}"));
        ok("save", "");
        assert_eq!(c.get("save").unwrap(), "");
        ok("save", "100 +5 20 0");
        assert_eq!(c.get("save").unwrap(), "100 5 20 0");
        assert_eq!(c.set("save", "10 abc", false).unwrap_err(), "Invalid save parameters");
        assert_eq!(c.set("save", "0 1", false).unwrap_err(), "Invalid save parameters");
        assert_eq!(c.set("save", "10", false).unwrap_err(), "Invalid save parameters");
        ok("client-output-buffer-limit", "pubsub 1mb 2k 5 replica 0 0 0");
        assert_eq!(c.get("client-output-buffer-limit").unwrap(), "normal 0 0 0 slave 0 0 0 pubsub 1048576 2000 5");
        assert!(
            c.set("client-output-buffer-limit", "master 1 1 1", false).unwrap_err().starts_with("Invalid client class")
        );
        assert!(c.set("client-output-buffer-limit", "normal 1 1", false).unwrap_err().starts_with("Wrong number"));
        assert!(c.set("client-output-buffer-limit", "normal x 1 1", false).unwrap_err().starts_with("Error in hard"));
        ok("notify-keyspace-events", "KEA");
        assert_eq!(c.get("notify-keyspace-events").unwrap(), "AKE");
        ok("notify-keyspace-events", "Kz");
        assert_eq!(c.get("notify-keyspace-events").unwrap(), "zK");
        ok("notify-keyspace-events", "Eg$lshzxetdnm");
        assert_eq!(c.get("notify-keyspace-events").unwrap(), "AEm");
        assert_eq!(
            c.set("notify-keyspace-events", "Q", false).unwrap_err(),
            "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
        );
        ok("maxmemory", "1GB");
        assert_eq!(c.get("maxmemory").unwrap(), "1073741824");
        ok("maxmemory", "");
        assert_eq!(c.get("maxmemory").unwrap(), "0");
        assert_eq!(c.set("maxmemory", "-1", false).unwrap_err(), "argument must be a memory value");
        ok("maxmemory-clients", "10%");
        assert_eq!(c.get("maxmemory-clients").unwrap(), "10%");
        assert_eq!(
            c.set("maxmemory-clients", "101%", false).unwrap_err(),
            "percentage argument must be less or equal to 100"
        );
        ok("hz", "0");
        assert_eq!(c.get("hz").unwrap(), "1");
        ok("hz", "100000");
        assert_eq!(c.get("hz").unwrap(), "500");
        assert_eq!(c.set("hz", "01", false).unwrap_err(), "argument couldn't be parsed into an integer");
        assert_eq!(c.set("maxclients", "0", false).unwrap_err(), "argument must be between 1 and 4294967295 inclusive");
        assert_eq!(
            c.set("loglevel", "foo", false).unwrap_err(),
            "argument(s) must be one of the following: debug, verbose, notice, warning"
        );
        ok("oom-score-adj", "relative");
        assert_eq!(c.get("oom-score-adj").unwrap(), "yes");
        ok("shutdown-on-sigterm", "now SAVE");
        assert_eq!(c.get("shutdown-on-sigterm").unwrap(), "save now");
        assert_eq!(
            c.set("shutdown-on-sigterm", "save nosave", false).unwrap_err(),
            "shutdown options SAVE and NOSAVE can't be used simultaneously"
        );
        ok("latency-tracking-info-percentiles", "50.0 99.99 100");
        assert_eq!(c.get("latency-tracking-info-percentiles").unwrap(), "50 99.99 100");
        assert_eq!(c.set("dbfilename", "a/b", false).unwrap_err(), "dbfilename can't be a path, just a filename");
        assert_eq!(c.set("oom-score-adj-values", "0 1", false).unwrap_err(), "wrong number of arguments");
        assert!(c.set("dir", "/nonexistent/latch", false).unwrap_err().contains("No such file"));
        ok("slave-read-only", "NO");
        assert_eq!(c.get("replica-read-only").unwrap(), "no");
    }

    #[test]
    fn set_many_is_atomic_and_reports_like_redis() {
        let c = Config::new();
        let e = c.set_many(&[(b"maxmemory", b"10"), (b"foo", b"1")], true).unwrap_err();
        assert_eq!(e, "ERR Unknown option or number of arguments for CONFIG SET - 'foo'");
        let e = c.set_many(&[(b"maxmemory", b"10"), (b"MAXMEMORY", b"1")], true).unwrap_err();
        assert_eq!(e, "ERR CONFIG SET failed (possibly related to argument 'MAXMEMORY') - duplicate parameter");
        let e = c.set_many(&[(b"maxmemory", b"10"), (b"lua-time-limit", b"x")], true).unwrap_err();
        assert_eq!(
            e,
            "ERR CONFIG SET failed (possibly related to argument 'busy-reply-threshold') - argument couldn't be parsed into an integer"
        );
        assert_eq!(c.get("maxmemory").unwrap(), "0", "nothing stored on failure");
        let e = c.set_many(&[(b"daemonize", b"yes")], true).unwrap_err();
        assert_eq!(e, "ERR CONFIG SET failed (possibly related to argument 'daemonize') - can't set immutable config");
        let e = c.set_many(&[(b"dir", b"/")], false).unwrap_err();
        assert_eq!(e, "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config");
        c.set_many(&[(b"maxmemory", b"10"), (b"hz", b"20")], true).unwrap();
        assert_eq!(c.get("maxmemory").unwrap(), "10");
        assert_eq!(c.hz.load(Ordering::Relaxed), 20);
    }

    #[test]
    fn get_matching_like_redis() {
        let c = Config::new();
        let g = |p: &[&[u8]]| c.get_matching(p).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(g(&[b"MAXMEMORY", b"maxmemory"]), vec!["MAXMEMORY"]);
        // Name and alias both, as redis-server 7.0.15 answers `CONFIG GET *-read-only`.
        assert_eq!(g(&[b"*-read-only"]), vec!["replica-read-only", "slave-read-only"]);
        assert!(g(&[b"slave-*"]).contains(&"slave-read-only".to_string()));
        assert_eq!(g(&[b"slave-read-only", b"replica-read-only"]), vec!["slave-read-only", "replica-read-only"]);
        assert!(!g(&[b"*"]).contains(&"watchdog-period".to_string()), "hidden");
        assert_eq!(g(&[b"watchdog-period"]), vec!["watchdog-period"]);
        assert!(g(&[b"nosuch"]).is_empty());
    }

    /// ACL users replace the file's `user` lines where the first one was, or are appended; an
    /// empty list (an aclfile holds them) drops them.
    #[test]
    fn rewrite_puts_the_users_where_the_user_lines_were() {
        let c = Config::new();
        let old = "user old on nopass\nport 6379\nuser other off\n";
        let users = ["user a on".to_string(), "user default on nopass ~* &* +@all".to_string()];
        assert_eq!(
            rewrite_text_users(old, &c, false, Some(&users)),
            "user a on\nuser default on nopass ~* &* +@all\nport 6379\n"
        );
        assert_eq!(rewrite_text_users(old, &c, false, Some(&[])), "port 6379\n");
        assert_eq!(
            rewrite_text_users("port 6379\n", &c, false, Some(&users)),
            "port 6379\n# Generated by CONFIG REWRITE\nuser a on\nuser default on nopass ~* &* +@all\n"
        );
        assert_eq!(rewrite_text_users(old, &c, false, None), old);
    }

    #[test]
    fn rewrite_keeps_unknown_lines_and_appends_changes() {
        let c = Config::new();
        c.set("maxmemory", "100", false).unwrap();
        c.set("save", "10 1 20 2", false).unwrap();
        let old = "# comment\nmaxmemory 5\nmaxmemory 6\nloadmodule x.so\nhz 10\n";
        let new = rewrite_text(old, &c);
        assert_eq!(
            new,
            "# comment\nmaxmemory 100\nloadmodule x.so\nhz 10\n# Generated by CONFIG REWRITE\nsave 10 1\nsave 20 2\n"
        );
    }

    #[test]
    fn proc_title_templates_expand_as_sdstemplate_does() {
        let var = |name: &str| match name {
            "title" => Some("bin".to_string()),
            "port" => Some("6379".to_string()),
            "server-mode" => Some(String::new()),
            _ => None,
        };
        let e = |t: &str| expand_proc_title(t, &var);
        assert_eq!(e("{title} {port} {server-mode}").as_deref(), Some("bin 6379"));
        assert_eq!(e("  {{x} a}b {title}  ").as_deref(), Some("{x} a}b bin"));
        assert_eq!(e("{title}{port}").as_deref(), Some("bin6379"));
        assert_eq!(e("{nope}"), None);
        assert_eq!(e("{port"), None);
        assert_eq!(e("x {"), None);
        assert!(valid_proc_title("{title} {listen-addr} {server-mode}").is_ok());
        assert!(valid_proc_title("}").is_ok());
        assert!(valid_proc_title("{{").is_ok());
        for bad in ["{title}", "{server-mode} {title}", "{unixsocket}", "  ", "{invalid-var}"] {
            assert!(valid_proc_title(bad).is_err(), "{bad}");
        }
        let c = Config::default();
        c.set("port", "7000", true).unwrap();
        c.set("bind", "127.0.0.2 ::1", true).unwrap();
        let title = |t: &str| c.proc_title(t, "srv", "/etc/latch.conf");
        assert_eq!(title("{title} {listen-addr} {server-mode}").as_deref(), Some("srv 127.0.0.2:7000"));
        assert_eq!(title("{config-file} {tls-port} [{unixsocket}]").as_deref(), Some("/etc/latch.conf 0 []"));
        c.set("port", "0", true).unwrap();
        c.set("unixsocket", "/tmp/s", true).unwrap();
        assert_eq!(title("{listen-addr}").as_deref(), Some("unixsocket:/tmp/s"));
    }
}
