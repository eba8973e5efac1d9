//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Queuing happens in `Server::execute`. EXEC locks, in one ascending pass, every shard that any
//! queued command or any watched key lives in (all shards if one queued command needs them all),
//! checks WATCH under those locks, and runs the queued handlers against the same locks: the
//! transaction is atomic with respect to every client on every core.

use super::base::BASE;
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use resp::Frame;
use std::sync::atomic::Ordering;

const TX: Flags = Flags::NOSCRIPT.or(Flags::LOADING).or(Flags::STALE);

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "multi",
        arity: 1,
        flags: TX.or(Flags::FAST).or(Flags::ALLOW_BUSY),
        group: crate::command::Group::Transactions,
        handler: multi,
        ..BASE
    },
    Command {
        name: "exec",
        arity: 1,
        flags: TX.or(Flags::SKIP_SLOWLOG),
        group: crate::command::Group::Transactions,
        handler: exec,
        ..BASE
    },
    Command {
        name: "discard",
        arity: 1,
        flags: TX.or(Flags::FAST).or(Flags::ALLOW_BUSY),
        group: crate::command::Group::Transactions,
        handler: discard,
        ..BASE
    },
    Command {
        name: "watch",
        arity: -2,
        flags: TX.or(Flags::FAST).or(Flags::ALLOW_BUSY),
        keys: Keys::ALL,
        group: crate::command::Group::Transactions,
        handler: watch,
        ..BASE
    },
    Command {
        name: "unwatch",
        arity: 1,
        flags: TX.or(Flags::FAST).or(Flags::ALLOW_BUSY),
        group: crate::command::Group::Transactions,
        handler: unwatch,
        ..BASE
    },
];

fn multi(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.client.multi.active() {
        return Frame::error("ERR MULTI calls can not be nested");
    }
    ctx.client.multi.queued = Some(Vec::new());
    ctx.client.multi.aborted = false;
    ctx.client.info.set_flag('x', true);
    ctx.client.info.multi.store(0, Ordering::Relaxed);
    Frame::ok()
}

/// Leaves MULTI and unwatches everything (DISCARD, EXEC, RESET), keeping CLIENT LIST in step.
pub(crate) fn leave(ctx: &mut Ctx<'_, '_>) {
    ctx.client.leave_multi();
}

fn discard(ctx: &mut Ctx<'_, '_>) -> Frame {
    if !ctx.client.multi.active() {
        return Frame::error("ERR DISCARD without MULTI");
    }
    leave(ctx);
    Frame::ok()
}

fn watch(ctx: &mut Ctx<'_, '_>) -> Frame {
    if ctx.client.multi.active() {
        return Frame::error("ERR WATCH inside MULTI is not allowed");
    }
    // No point in watching more once the client is dirty.
    if ctx.client.multi.watch.dirty.load(Ordering::Relaxed) {
        return Frame::ok();
    }
    let (db, now) = (ctx.client.db, ctx.now);
    for key in &ctx.args[1..] {
        if ctx.client.multi.watched.iter().any(|(d, k, _)| *d == db && k[..] == key[..]) {
            continue;
        }
        let state = ctx.client.multi.watch.clone();
        let reg = ctx.locked.shard_for(key).dbs[db].watch(key, &state, now);
        ctx.client.multi.watched.push((db, crate::value::Key::from_slice(key), reg));
    }
    ctx.client.info.set_watch_state(Some(ctx.client.multi.watch.clone()));
    // Each watched key costs its entry in the client's list (Redis's multiStateMemOverhead).
    let per_key = std::mem::size_of::<(usize, crate::value::Key, std::sync::Arc<crate::keyspace::WatchedKey>)>();
    ctx.client.info.watched_mem.store(ctx.client.multi.watched.len() * per_key, Ordering::Relaxed);
    Frame::ok()
}

fn unwatch(ctx: &mut Ctx<'_, '_>) -> Frame {
    ctx.client.multi.unwatch();
    ctx.client.info.set_watch_state(None);
    ctx.client.info.watched_mem.store(0, Ordering::Relaxed);
    Frame::ok()
}

fn exec(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Some(queued) = ctx.client.multi.queued.take() else {
        return Frame::error("ERR EXEC without MULTI");
    };
    let srv = ctx.srv;
    let all = queued.iter().any(|(c, args)| c.needs_all_shards(args));
    // Waits for locks are bounded like any command's: a script running past busy-reply-threshold
    // makes the EXEC fail with BUSY instead of waiting for it.
    let cmd = ctx.cmd;
    let give_up = || srv.busy_error(cmd).is_some();
    let locked = if all {
        srv.ks.lock_all_until(&give_up)
    } else {
        let mut shards: Vec<usize> = Vec::new();
        for (c, args) in &queued {
            shards.extend(c.keys.positions(args).into_iter().map(|i| srv.ks.shard_of(&args[i])));
        }
        shards.extend(ctx.client.multi.watched.iter().map(|(_, k, _)| srv.ks.shard_of(k)));
        srv.ks.lock_shards_until(shards, &give_up)
    };
    let Some(mut locked) = locked else {
        leave(ctx);
        let why = srv.busy_error(cmd).unwrap_or_else(|| Frame::error(crate::error::BUSY_EVAL));
        let Frame::Error(m) = why else { return why };
        return Frame::error(format!("EXECABORT Transaction discarded because of: {}", String::from_utf8_lossy(&m)));
    };
    let now = ctx.now;
    // A watched key that expired since WATCH counts as modified (Redis's isWatchedKeyExpired).
    let expired = ctx
        .client
        .multi
        .watched
        .iter()
        .any(|(db, k, reg)| !reg.expired.load(Ordering::Relaxed) && locked.shard_for(k).dbs[*db].is_stale(k, now));
    let dirty = expired || ctx.client.multi.watch.dirty.load(Ordering::Relaxed);
    if ctx.client.multi.aborted {
        leave(ctx);
        return Frame::error("EXECABORT Transaction discarded because of previous errors.");
    }
    if dirty {
        leave(ctx);
        return Frame::NullArray;
    }
    leave(ctx);
    let mut replies = Vec::with_capacity(queued.len());
    // Blocking commands inside a transaction answer at once as if timed out.
    let deny = std::mem::replace(&mut ctx.client.deny_blocking, true);
    ctx.client.in_exec = true;
    for (cmd, args) in &queued {
        // Permissions are checked again: the rules may have changed since the command was queued.
        let reply = match srv.acl_check(ctx.client, cmd, args, crate::acl::Context::Multi) {
            Ok(()) => srv.call(ctx.client, &mut locked, cmd, args, now),
            Err(d) => Frame::error(format!(
                "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC \
                 call. This command is no longer allowed for the following reason: {}",
                d.exec_reason()
            )),
        };
        // Each command's error counts in INFO errorstats, as if it had been sent alone.
        srv.stats.count_error(&reply);
        replies.push(reply);
    }
    ctx.client.deny_blocking = deny;
    ctx.client.in_exec = false;
    // The transaction's effects go out under its locks, then the clients blocked on keys it
    // changed are served, before its locks drop.
    srv.publish_changes(ctx.client, &mut locked, now);
    srv.serve_ready(&mut locked, now);
    Frame::Array(replies)
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    /// INFO and CONFIG RESETSTAT walk every shard: inside EXEC (with a key locking one shard) and
    /// in a script they must not wait on a shard their caller holds (this hung the connection and
    /// the shard for good; found by the commands fuzzer).
    #[test]
    fn whole_keyspace_commands_inside_exec_and_scripts_do_not_deadlock() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r##"
            > MULTI
            +OK
            > SET k v
            +QUEUED
            > INFO keyspace
            +QUEUED
            > CONFIG RESETSTAT
            +QUEUED
            > EXEC
            [+OK, "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n", +OK]
            "##,
        );
        // A script that declared its key (so that later runs lock only that key's shard).
        for _ in 0..3 {
            let r = c.run("EVAL \"redis.call('set', KEYS[1], 'x') return redis.call('info', 'keyspace')\" 1 k");
            assert!(r.contains("db0:keys=1"), "{r}");
        }
        assert_eq!(c.run("GET k"), "\"x\"");
    }

    #[test]
    fn errors_inside_exec_count_in_errorstats() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > SET a b
            +OK
            > MULTI
            +OK
            > INCR a
            +QUEUED
            > EXEC
            [-ERR value is not an integer or out of range]
            > EXEC
            -ERR EXEC without MULTI
            "#,
        );
        assert_eq!(ts.srv.stats.errors.lock().get("ERR"), Some(&2));
    }

    #[test]
    fn watch_detects_other_clients_and_expiry() {
        let ts = TestServer::new();
        let mut a = ts.client();
        let mut b = ts.client();
        assert_eq!(a.run("SET k 1"), "+OK");
        assert_eq!(a.run("WATCH k"), "+OK");
        assert_eq!(b.run("SET k 2"), "+OK");
        assert_eq!(a.run("MULTI"), "+OK");
        assert_eq!(a.run("SET k 3"), "+QUEUED");
        assert_eq!(a.run("EXEC"), "(nil-array)");
        assert_eq!(a.run("GET k"), "\"2\"");
        // Untouched watch: EXEC runs; the watch is gone afterwards.
        assert_eq!(a.run("WATCH k"), "+OK");
        assert_eq!(a.run("MULTI"), "+OK");
        assert_eq!(a.run("SET k 3"), "+QUEUED");
        assert_eq!(a.run("EXEC"), "[+OK]");
        assert_eq!(b.run("SET k 4"), "+OK");
        assert_eq!(a.run("MULTI"), "+OK");
        assert_eq!(a.run("EXEC"), "[]");
        // UNWATCH forgets.
        assert_eq!(a.run("WATCH k"), "+OK");
        assert_eq!(b.run("SET k 5"), "+OK");
        assert_eq!(a.run("UNWATCH"), "+OK");
        assert_eq!(a.run("MULTI"), "+OK");
        assert_eq!(a.run("EXEC"), "[]");
        // A watched key with a TTL that passes before EXEC fails the transaction.
        assert_eq!(a.run("SET t 1"), "+OK");
        let deadline = crate::clock::Clock::now_ms(&*ts.clock) + 100;
        assert!(ts.srv.ks.lock_all().shard_for(b"t").dbs[0].set_expire(b"t", deadline));
        assert_eq!(a.run("WATCH t"), "+OK");
        ts.clock.advance_ms(200);
        assert_eq!(a.run("MULTI"), "+OK");
        assert_eq!(a.run("EXEC"), "(nil-array)");
        // DISCARD unwatches too.
        assert_eq!(a.run("WATCH k"), "+OK");
        assert_eq!(a.run("MULTI"), "+OK");
        assert_eq!(a.run("DISCARD"), "+OK");
        assert_eq!(b.run("SET k 6"), "+OK");
        assert_eq!(a.run("MULTI"), "+OK");
        assert_eq!(a.run("EXEC"), "[]");
    }

    #[test]
    fn failed_setnx_does_not_touch_watchers() {
        let ts = TestServer::new();
        let mut a = ts.client();
        let mut b = ts.client();
        assert_eq!(a.run("SET k 1"), "+OK");
        assert_eq!(a.run("WATCH k"), "+OK");
        assert_eq!(b.run("SETNX k 2"), ":0");
        assert_eq!(a.run("MULTI"), "+OK");
        assert_eq!(a.run("GET k"), "+QUEUED");
        assert_eq!(a.run("EXEC"), "[\"1\"]");
    }
}
