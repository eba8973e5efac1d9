//! Replication commands, the primary's side: SYNC, PSYNC, REPLCONF and ROLE (Redis's
//! `replication.c`). SYNC and PSYNC hold every shard, so the snapshot of a full sync and the
//! stream's offset are one instant; the connection then sends the replica its sync
//! ([`crate::repl::SyncJob`]).

use super::base::{BASE, f};
use crate::command::{Flags, Group};
use crate::ctx::{Command, Ctx};
use bytes::Bytes;
use resp::Frame;

const REPL: Flags = Flags::ADMIN.or(Flags::NOSCRIPT).or(Flags::NO_ASYNC_LOADING).or(Flags::NO_MULTI);

/// The family's table rows.
pub static COMMANDS: &[Command] = &[
    Command { name: "sync", arity: 1, flags: REPL.or(Flags::ALL_SHARDS), group: Group::Server, handler: sync, ..BASE },
    Command {
        name: "psync",
        arity: -3,
        flags: REPL.or(Flags::ALL_SHARDS),
        group: Group::Server,
        handler: psync,
        ..BASE
    },
    Command {
        name: "replconf",
        arity: -1,
        flags: Flags::ADMIN.or(Flags::NOSCRIPT).or(Flags::LOADING).or(Flags::STALE).or(Flags::ALLOW_BUSY),
        group: Group::Server,
        handler: replconf,
        ..BASE
    },
    Command {
        name: "replicaof",
        arity: 3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::NOSCRIPT).or(Flags::STALE).or(Flags::ALL_SHARDS),
        group: Group::Server,
        handler: replicaof,
        ..BASE
    },
    Command {
        name: "slaveof",
        arity: 3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::NOSCRIPT).or(Flags::STALE).or(Flags::ALL_SHARDS),
        group: Group::Server,
        handler: replicaof,
        ..BASE
    },
    Command {
        name: "failover",
        arity: -1,
        flags: Flags::ADMIN.or(Flags::NOSCRIPT).or(Flags::STALE),
        group: Group::Server,
        handler: failover,
        ..BASE
    },
    Command { name: "wait", arity: 3, flags: Flags::NOSCRIPT, group: Group::Generic, handler: wait, ..BASE },
    Command {
        name: "role",
        arity: 1,
        flags: Flags::NOSCRIPT.or(Flags::LOADING).or(Flags::STALE).or(f::FAST),
        group: Group::Server,
        handler: role,
        ..BASE
    },
];

/// SYNC: a full sync without `+FULLRESYNC` (the replica gets `$<len>` and the file).
fn sync(ctx: &mut Ctx<'_, '_>) -> Frame {
    start(ctx, None)
}

/// PSYNC replid offset: `+CONTINUE` and the stream from `offset`, or `+FULLRESYNC replid offset`
/// and a full sync.
fn psync(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Ok(offset) = ctx.int_arg(2) else {
        ctx.srv.config.host().log(
            crate::host::LogLevel::Warning,
            &format!("Replica {} asks for synchronization but with a wrong offset", ctx.client.info.addr),
        );
        return crate::error::not_integer();
    };
    let replid = ctx.arg(1);
    // `PSYNC <replid> <offset> FAILOVER`: the primary hands over to this replica (FAILOVER).
    if ctx.argc() > 3 && ctx.arg(3).eq_ignore_ascii_case(b"failover") && !ctx.client.info.has_flag('S') {
        ctx.srv.log_link(true, &format!("Failover request received for replid {}.", String::from_utf8_lossy(replid)));
        if !ctx.srv.upstream.is_replica() {
            return Frame::error("ERR PSYNC FAILOVER can't be sent to a master.");
        }
        if replid != ctx.srv.repl.replid().as_bytes() {
            return Frame::error("ERR PSYNC FAILOVER replid must match my replid.");
        }
        ctx.srv.promote_locked(ctx.locked);
        ctx.srv.log_link(
            false,
            &format!(
                "MASTER MODE enabled (failover request from 'id={} addr={}')",
                ctx.client.id, ctx.client.info.addr
            ),
        );
    }
    if !matches!(*ctx.srv.upstream.failover.lock(), crate::upstream::Failover::None) {
        return Frame::error("NOMASTERLINK Can't SYNC while failing over");
    }
    start(ctx, Some((replid, offset)))
}

fn start(ctx: &mut Ctx<'_, '_>, psync: Option<(&[u8], i64)>) -> Frame {
    // A replica's own SYNC or PSYNC once it is one is ignored (Redis's `syncCommand`).
    if ctx.client.info.has_flag('S') {
        ctx.client.suppress_reply = true;
        return Frame::Null;
    }
    // A replica serves replicas of its own only while it follows its primary.
    if ctx.srv.upstream.is_replica() && !ctx.srv.upstream.link_up() {
        return Frame::error("NOMASTERLINK Can't SYNC while not connected with my master");
    }
    match ctx.srv.start_sync(ctx.client, ctx.locked, psync) {
        Some(reply) => reply,
        None => {
            ctx.client.suppress_reply = true;
            Frame::Null
        }
    }
}

/// REPLCONF option value ...: what a replica announces (`listening-port`, `ip-address`, `capa`),
/// acknowledges (`ack`, no reply) or is asked (`getack`, acted on by replicas only).
fn replconf(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc().is_multiple_of(2) {
        return crate::error::syntax();
    }
    let (mut port, mut ip, mut capa) = (None, None, Vec::new());
    let mut i = 1;
    while i < ctx.argc() {
        let (opt, val) = (ctx.arg(i), ctx.arg(i + 1));
        match opt.to_ascii_lowercase().as_slice() {
            b"listening-port" => match crate::args::parse_i64_strict(val).and_then(|p| u16::try_from(p).ok()) {
                Some(p) => port = Some(p),
                None => return crate::error::not_integer(),
            },
            b"ip-address" => {
                if val.len() >= 46 {
                    return Frame::error(format!(
                        "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                        val.len()
                    ));
                }
                ip = Some(String::from_utf8_lossy(val).into_owned());
            }
            b"capa" => capa.push(String::from_utf8_lossy(val).to_ascii_lowercase()),
            b"ack" => {
                // Only a replica acknowledges, and nothing answers it (Redis's `replconfCommand`).
                if ctx.client.info.has_flag('S')
                    && let Some(off) = crate::args::parse_i64_strict(val)
                {
                    ctx.srv.repl.ack(ctx.client.id, off.max(0) as u64, ctx.now);
                }
                ctx.client.suppress_reply = true;
                return Frame::Null;
            }
            b"getack" => {
                // A replica answers its primary with an ACK of what it applied before this
                // command (Redis's `replicationSendAck`); a primary ignores it.
                if ctx.client.from_primary {
                    let off = ctx.srv.repl.offset().to_string();
                    return Frame::Array(
                        ["REPLCONF", "ACK", off.as_str()]
                            .iter()
                            .map(|a| Frame::Bulk(Bytes::copy_from_slice(a.as_bytes())))
                            .collect(),
                    );
                }
                ctx.client.suppress_reply = true;
                return Frame::Null;
            }
            b"rdb-only" | b"rdb-filter-only" => {}
            _ => {
                return Frame::error(format!("ERR Unrecognized REPLCONF option: {}", String::from_utf8_lossy(opt)));
            }
        }
        i += 2;
    }
    let capa: Vec<&str> = capa.iter().map(String::as_str).collect();
    ctx.srv.repl.announce(&ctx.client.info, port, ip, &capa);
    Frame::ok()
}

/// REPLICAOF host port | NO ONE (and SLAVEOF): follows a primary, or becomes one.
fn replicaof(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (host, port) = (ctx.arg(1), ctx.arg(2));
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        return ctx.srv.replicaof(ctx.client, ctx.locked, None);
    }
    if ctx.client.info.has_flag('S') {
        return Frame::error("ERR Command is not valid when client is a replica.");
    }
    let Some(port) = crate::args::parse_i64_strict(port) else { return crate::error::not_integer() };
    let Ok(port) = u16::try_from(port) else { return Frame::error("ERR Invalid master port") };
    let host = String::from_utf8_lossy(host).into_owned();
    ctx.srv.replicaof(ctx.client, ctx.locked, Some(crate::upstream::Primary { host, port }))
}

/// FAILOVER [TO host port] [FORCE] [ABORT] [TIMEOUT ms]: hands the primary's role to a replica
/// once it caught up (Redis's `failoverCommand`).
fn failover(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.argc() == 2 && ctx.arg(1).eq_ignore_ascii_case(b"abort") {
        return ctx.srv.failover_abort_command();
    }
    let (mut timeout, mut force, mut target) = (0i64, false, None);
    let mut j = 1;
    while j < ctx.argc() {
        let a = ctx.arg(j);
        if a.eq_ignore_ascii_case(b"timeout") && j + 1 < ctx.argc() && timeout == 0 {
            let Some(t) = crate::args::parse_i64_strict(ctx.arg(j + 1)) else { return crate::error::not_integer() };
            if t <= 0 {
                return Frame::error("ERR FAILOVER timeout must be greater than 0");
            }
            timeout = t;
            j += 2;
        } else if a.eq_ignore_ascii_case(b"to") && j + 2 < ctx.argc() && target.is_none() {
            let Some(port) = crate::args::parse_i64_strict(ctx.arg(j + 2)) else { return crate::error::not_integer() };
            let host = String::from_utf8_lossy(ctx.arg(j + 1)).into_owned();
            target = Some(crate::upstream::Primary { host, port: u16::try_from(port).unwrap_or(0) });
            j += 3;
        } else if a.eq_ignore_ascii_case(b"force") && !force {
            force = true;
            j += 1;
        } else {
            return crate::error::syntax();
        }
    }
    ctx.srv.failover_start(target, timeout as u64, force, ctx.now)
}

/// WAIT numreplicas timeout: how many replicas acknowledged this client's writes (everything the
/// stream held when WAIT ran), once `numreplicas` did or `timeout` ms passed (0: no limit).
fn wait(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.srv.upstream.is_replica() {
        return Frame::error(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        );
    }
    let Some(want) = crate::args::parse_i64_strict(ctx.arg(1)) else { return crate::error::not_integer() };
    let Some(timeout) = crate::args::parse_i64_strict(ctx.arg(2)) else {
        return Frame::error("ERR timeout is not an integer or out of range");
    };
    if timeout < 0 {
        return Frame::error("ERR timeout is negative");
    }
    let offset = ctx.srv.repl.offset();
    let (reached, _) = ctx.srv.repl.acked(offset);
    if reached as i64 >= want || ctx.client.in_exec || ctx.client.deny_blocking {
        return Frame::Integer(reached as i64);
    }
    ctx.client.wait_acks = Some(crate::client::WaitAcks {
        offset,
        replicas: want as usize,
        deadline: (timeout > 0).then(|| ctx.now.saturating_add(timeout as u64)),
    });
    // The replicas are asked for an acknowledgement now (Redis asks once per event loop).
    ctx.srv.feed_replicas(&["REPLCONF", "GETACK", "*"]);
    ctx.client.suppress_reply = true;
    Frame::Null
}

/// ROLE: a primary's `master`, the replication offset, and each replica's ip, port and
/// acknowledged offset; a replica's `slave`, its primary, the link's state and the offset.
fn role(ctx: &mut Ctx<'_, '_>) -> Frame {
    let bulk = |s: &str| Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()));
    if let Some(p) = ctx.srv.upstream.primary() {
        let state = ctx.srv.upstream.state();
        let offset = if ctx.srv.upstream.master_client.load(std::sync::atomic::Ordering::Relaxed) != 0 {
            ctx.srv.repl.offset() as i64
        } else {
            -1
        };
        return Frame::Array(vec![
            bulk("slave"),
            bulk(&p.host),
            Frame::Integer(i64::from(p.port)),
            bulk(state.role_name()),
            Frame::Integer(offset),
        ]);
    }
    let replicas = ctx
        .srv
        .repl
        .role_replicas()
        .into_iter()
        .map(|(ip, port, ack)| Frame::Array(vec![bulk(&ip), bulk(&port.to_string()), bulk(&ack.to_string())]))
        .collect();
    Frame::Array(vec![bulk("master"), Frame::Integer(ctx.srv.repl.offset() as i64), Frame::Array(replicas)])
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    /// REPLICAOF moves the process's `oom_score_adj` to the replica's class of
    /// `oom-score-adj-values`, and REPLICAOF NO ONE back to the primary's (Redis's
    /// "CONFIG SET oom-score-adj works as expected").
    #[test]
    fn replicaof_moves_the_oom_score_between_classes() {
        let (ts, host) = TestServer::with_host();
        let score = || host.oom_score_adj.load(std::sync::atomic::Ordering::Relaxed);
        let mut c = ts.client();
        assert_eq!(c.run("CONFIG SET oom-score-adj-values \"15 20 30\" oom-score-adj yes"), "+OK");
        assert_eq!(score(), 15);
        assert_eq!(c.run("REPLICAOF localhost 1"), "+OK");
        assert_eq!(score(), 20);
        assert_eq!(c.run("REPLICAOF NO ONE"), "+OK");
        assert_eq!(score(), 15);
    }

    /// Once SYNC made a connection a replica's, it may not touch the keyspace (Redis's
    /// "Replica can't interact with the keyspace"); commands that do not touch it still run.
    #[test]
    fn a_replica_connection_does_not_touch_the_keyspace() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript("> SET k v\n+OK\n> GET k\n\"v\"");
        c.run("SYNC");
        assert!(c.client.is_replica);
        assert!(c.client.info.has_flag('S'));
        c.transcript(
            "> GET k\n-ERR Replica can't interact with the keyspace\n> SET k w\n-ERR Replica can't interact with the keyspace\n> PING\n+PONG",
        );
        assert_eq!(ts.client().run("GET k"), "\"v\"");
    }
}
