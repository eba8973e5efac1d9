//! Which commands go through the log, which read after a linearizable check, which run on the
//! node alone, and which consensus mode refuses; and Redis Cluster's key slots.

use bytes::Bytes;
use engine::command::{Flags, Group};
use engine::ctx::{Command, CommandTable};

/// How a command is served in consensus mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Runs on this node alone (connection state, server administration, PING...).
    Local,
    /// `INFO`: runs here, and gains the `consensus` section.
    Info,
    /// A `CLUSTER` subcommand, answered from the group's state.
    Cluster,
    /// `READONLY`, `READWRITE`, `ASKING`: accepted (`+OK`) so cluster clients work.
    Ok,
    /// Reads keys: on the leader after a linearizable check, elsewhere `-MOVED`.
    Read,
    /// Changes data: proposed to the group by the leader, answered after commit and apply.
    Write,
    /// EXEC: the transaction queued on this node is proposed as one entry.
    Exec,
    /// Cannot be made deterministic (or would step around the log) in phase 1.
    Unsupported,
}

/// What may be queued in MULTI in consensus mode besides reads and writes: commands that answer
/// alike on the node that applies the transaction and change none of the applying client's state.
/// (`quit` and `reset` are not queued: they end the transaction on the client's node.)
pub const QUEUEABLE_LOCAL: &[&str] = &["ping", "echo", "time", "unwatch", "quit", "reset"];

/// Writes a follower runs itself instead of redirecting: SCRIPT LOAD and SCRIPT FLUSH change only
/// the node's script cache, which no applied entry depends on (the log carries script bodies), and
/// Redis Cluster clients send them to every node, replicas included (a replica of Redis accepts
/// them). On the leader they go through the log, so that every node learns the script.
pub const FOLLOWERS_RUN_LOCALLY: &[&str] = &["script|load", "script|flush"];

/// Commands refused by name: replication and debugging commands, the ones that would block an
/// applying node, and the ones that would stop a script in the middle on one node only (SCRIPT
/// KILL, FUNCTION KILL) or run one outside the log (SCRIPT DEBUG).
const UNSUPPORTED: &[&str] = &[
    "script|kill",
    "function|kill",
    "script|debug",
    "debug",
    "migrate",
    "replicaof",
    "slaveof",
    "sync",
    "psync",
    "failover",
    "wait",
    "waitaof",
    "client|pause",
];

/// The class of `cmd` called with `args` (`table` resolves the command `FENCED` wraps).
pub fn classify(table: &CommandTable, cmd: &Command, args: &[Bytes]) -> Class {
    classify_with(table, cmd, args, false)
}

/// The class of `cmd` queued in MULTI: as [`classify`], except that a blocking command is a read
/// or a write like any other (inside a transaction it answers at once, as if timed out).
pub fn classify_queued(table: &CommandTable, cmd: &Command, args: &[Bytes]) -> Class {
    classify_with(table, cmd, args, true)
}

fn classify_with(table: &CommandTable, cmd: &Command, args: &[Bytes], queued: bool) -> Class {
    let name = cmd.name;
    // FENCED runs the command it wraps in the same entry: what is refused alone is refused inside,
    // and so is a LOCK ... WAIT (a wait is a client's, not a command's inside another).
    if name == "fenced"
        && let Some(inner_args) = args.get(3..).filter(|a| !a.is_empty())
        && let Ok(inner) = table.resolve(inner_args)
        && (classify_with(table, inner, inner_args, queued) == Class::Unsupported
            || crate::waits::is_lock_wait(inner_args)
            || blocks(inner, inner_args))
    {
        return Class::Unsupported;
    }
    // DEBUG DIGEST and DIGEST-VALUE read this node's own data, as they are: how the nodes of a
    // group are compared (tests/faults.rs). Every other DEBUG subcommand is refused.
    if name == "debug"
        && !queued
        && args.get(1).is_some_and(|s| s.eq_ignore_ascii_case(b"digest") || s.eq_ignore_ascii_case(b"digest-value"))
    {
        return Class::Local;
    }
    if UNSUPPORTED.contains(&name) {
        return Class::Unsupported;
    }
    match name {
        // MULTI queues on the node the client is on; EXEC proposes the transaction. WATCH watches
        // on the leader, whose check at EXEC decides for every node (see `Consensus::exec`).
        "exec" => return Class::Exec,
        "watch" => return Class::Read,
        "multi" | "discard" | "unwatch" => return Class::Local,
        // Scripts and functions run on every node from the log (EVALSHA carries its script's
        // body there, see `Consensus::write`); so does what defines them, so that every node knows
        // a script or function an EVALSHA or FCALL proposed later names.
        "eval" | "evalsha" | "fcall" | "script|load" | "script|flush" => return Class::Write,
        "function|load" | "function|delete" | "function|flush" | "function|restore" => return Class::Write,
        // The read-only variants read on the leader, like any read.
        "eval_ro" | "evalsha_ro" | "fcall_ro" => return Class::Read,
        // The node's own script cache and function libraries (the same on every node that has
        // applied as far).
        "script|exists" | "script|help" | "script" | "function|list" | "function|dump" | "function|stats"
        | "function|help" | "function" => return Class::Local,
        _ => {}
    }
    if cmd.group == Group::Cluster {
        return if name.starts_with("cluster|") { Class::Cluster } else { Class::Ok };
    }
    if name == "info" {
        return Class::Info;
    }
    // Blocking commands are reads and writes like the others: a pop or XREADGROUP that finds
    // nothing waits on the leader and is proposed again when its key can serve it (see
    // `Consensus::write`); XREAD ... BLOCK waits as a read on the leader, served by the applies.
    if cmd.flags.has(Flags::WRITE) {
        Class::Write
    } else if cmd.flags.has(Flags::READONLY) {
        Class::Read
    } else {
        Class::Local
    }
}

/// Whether `cmd` called with `args` may block: the blocking pops, XREAD and XREADGROUP with
/// BLOCK. Not `LOCK ... WAIT`, which queues in the replicated waiter queue (see `waits`).
pub fn blocks(cmd: &Command, args: &[Bytes]) -> bool {
    cmd.flags.has(Flags::BLOCKING)
        && match cmd.name {
            "lock" => false,
            "xread" | "xreadgroup" => args.iter().any(|a| a.eq_ignore_ascii_case(b"block")),
            _ => true,
        }
}

/// The slot of the command's first key (0 for a command without keys), for `-MOVED`.
pub fn first_key_slot(cmd: &Command, args: &[Bytes]) -> u16 {
    cmd.keys.positions(args).first().and_then(|&i| args.get(i)).map_or(0, |k| key_slot(k))
}

/// Redis Cluster's hash slot of `key`: CRC16 (XMODEM) of the key, or of its `{hash tag}` when it
/// has a non-empty one, modulo 16384.
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let close = key[open + 1..].iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &key[open + 1..open + 1 + close])
    });
    crc16(tagged.unwrap_or(key)) & 0x3fff
}

/// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as Redis's `crc16.c`.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis_cluster() {
        // Redis's crc16.c test vector and CLUSTER KEYSLOT values from a real Redis Cluster.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    }

    #[test]
    fn commands_are_classified_from_the_table() {
        let srv = engine::server::Server::new(
            engine::config::Config::default(),
            std::sync::Arc::new(engine::clock::ManualClock::new(1)),
        );
        let class = |line: &str| {
            let args: Vec<Bytes> = line.split(' ').map(|w| Bytes::copy_from_slice(w.as_bytes())).collect();
            classify(srv.table, srv.table.resolve(&args).unwrap(), &args)
        };
        assert_eq!(class("set k v"), Class::Write);
        assert_eq!(class("lock k o 1000"), Class::Write);
        assert_eq!(class("lock k o 1000 wait 10"), Class::Write);
        assert_eq!(class("fenced f 1 lock k o 1000 wait 10"), Class::Unsupported);
        assert_eq!(class("get k"), Class::Read);
        assert_eq!(class("lockinfo k"), Class::Read);
        assert_eq!(class("ping"), Class::Local);
        assert_eq!(class("multi"), Class::Local);
        assert_eq!(class("exec"), Class::Exec);
        assert_eq!(class("watch k"), Class::Read);
        assert_eq!(class("discard"), Class::Local);
        assert_eq!(class("eval x 0"), Class::Write);
        assert_eq!(class("evalsha x 0"), Class::Write);
        assert_eq!(class("eval_ro x 0"), Class::Read);
        assert_eq!(class("fcall f 0"), Class::Write);
        assert_eq!(class("fcall_ro f 0"), Class::Read);
        assert_eq!(class("script load x"), Class::Write);
        assert_eq!(class("script flush"), Class::Write);
        assert_eq!(class("script exists x"), Class::Local);
        assert_eq!(class("script kill"), Class::Unsupported);
        assert_eq!(class("function load x"), Class::Write);
        assert_eq!(class("function list"), Class::Local);
        assert_eq!(class("function kill"), Class::Unsupported);
        assert_eq!(class("blpop k 0"), Class::Write);
        assert_eq!(class("bzpopmin k 0"), Class::Write);
        assert_eq!(class("blmove a b left right 0"), Class::Write);
        assert_eq!(class("xread block 0 streams s $"), Class::Read);
        assert_eq!(class("xreadgroup group g c block 0 streams s >"), Class::Write);
        assert_eq!(class("spop k"), Class::Write);
        assert_eq!(class("srandmember k"), Class::Read);
        assert_eq!(class("cluster slots"), Class::Cluster);
        assert_eq!(class("readonly"), Class::Ok);
        assert_eq!(class("info consensus"), Class::Info);
        assert_eq!(class("flushall"), Class::Write);
        assert_eq!(class("fenced k 1 set k v"), Class::Write);
        assert_eq!(class("fenced k 1 spop s"), Class::Write);
        assert_eq!(class("fenced k 1 eval x 0"), Class::Write);
        assert_eq!(class("fenced k 1 blpop s 0"), Class::Unsupported);
        assert_eq!(class("fenced k 1 xreadgroup group g c block 0 streams s >"), Class::Unsupported);
        assert_eq!(class("fenced k 1 xreadgroup group g c streams s >"), Class::Write);
        assert_eq!(class("debug digest"), Class::Local);
        assert_eq!(class("debug digest-value k"), Class::Local);
        assert_eq!(class("debug sleep 0"), Class::Unsupported);
        let blocks = |line: &str| {
            let args: Vec<Bytes> = line.split(' ').map(|w| Bytes::copy_from_slice(w.as_bytes())).collect();
            blocks(srv.table.resolve(&args).unwrap(), &args)
        };
        assert!(blocks("blpop k 0") && blocks("bzmpop 0 1 k min") && blocks("xread block 0 streams s $"));
        assert!(!blocks("lock k o 1000 wait 10") && !blocks("xread streams s 0") && !blocks("lpop k"));
        let queued = |line: &str| {
            let args: Vec<Bytes> = line.split(' ').map(|w| Bytes::copy_from_slice(w.as_bytes())).collect();
            classify_queued(srv.table, srv.table.resolve(&args).unwrap(), &args)
        };
        assert_eq!(queued("blpop k 0"), Class::Write);
        assert_eq!(queued("lock k o 1000 wait 10"), Class::Write);
        assert_eq!(queued("debug sleep 0"), Class::Unsupported);
        assert_eq!(queued("exec"), Class::Exec);
    }
}
