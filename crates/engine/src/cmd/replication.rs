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
    let Ok(offset) = ctx.int_arg(2) else { return crate::error::not_integer() };
    let replid = ctx.arg(1);
    start(ctx, Some((replid, offset)))
}

fn start(ctx: &mut Ctx<'_, '_>, psync: Option<(&[u8], i64)>) -> Frame {
    // A replica's own SYNC or PSYNC once it is one is ignored (Redis's `syncCommand`).
    if ctx.client.info.has_flag('S') {
        ctx.client.suppress_reply = true;
        return Frame::Null;
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
                // A primary ignores it; a replica answers its primary with an ACK.
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

/// ROLE: `master`, the replication offset, and each replica's ip, port and acknowledged offset.
fn role(ctx: &mut Ctx<'_, '_>) -> Frame {
    let bulk = |s: &str| Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()));
    let replicas = ctx
        .srv
        .repl
        .role_replicas()
        .into_iter()
        .map(|(ip, port, ack)| Frame::Array(vec![bulk(&ip), bulk(&port.to_string()), bulk(&ack.to_string())]))
        .collect();
    Frame::Array(vec![bulk("master"), Frame::Integer(ctx.srv.repl.offset() as i64), Frame::Array(replicas)])
}
