//! Native locks: LOCK, UNLOCK, LOCKEXTEND, LOCKINFO and FENCED.
//!
//! A lock is a key of type `lock` holding its owner and fencing token; its TTL is the key's TTL, so
//! `TTL`, `DEL`, `SCAN`, `TYPE`, MULTI and scripts see it like any key. Waiters (`LOCK ... WAIT`) block
//! without polling in a FIFO queue on the key, and the next one is granted the lock in the same step
//! as the release, the expiry or the deletion that freed it (see [`crate::waiters`]). Every grant gets
//! a fencing token from [`crate::server::Server::next_fence`], strictly increasing for every lock name.
//! `FENCED key token command ...` runs a command only while `token` is the lock's current grant, so
//! Latch itself can be the protected resource.
//!
//! ```text
//! LOCK key owner ttl-ms [WAIT timeout-ms]  -> token, or nil (held / timed out)
//! UNLOCK key owner                         -> 1 released (next waiter granted), 0 not the holder
//! LOCKEXTEND key owner ttl-ms              -> 1 extended, 0 not the holder
//! LOCKINFO key                             -> {owner, ttl, token, waiters} or nil
//! FENCED key token command [arg ...]       -> the command's reply, or -FENCED error if stale
//! LOCKRESTORE key owner unix-time-ms token -> OK (what a grant replays as)
//! ```
//!
//! In the change stream (see [`crate::changes`]) a grant propagates as `LOCKRESTORE` with its
//! absolute deadline and token, which also raises the server's fencing counter to the token, so a
//! replayed server never hands out a token at or below one it replayed. A re-entrant LOCK and
//! LOCKEXTEND propagate as `PEXPIREAT`, UNLOCK as `DEL`.

use super::base::BASE;
use crate::args::{eq_ic, parse_i64_strict};
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::error;
use crate::value::{Entry, LockValue, SmallBytes, Value};
use crate::waiters::{BlockRequest, Serve};
use bytes::Bytes;
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "lock",
        arity: -4,
        flags: Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST).or(Flags::BLOCKING),
        keys: Keys::ONE,
        group: crate::command::Group::Lock,
        since: "0.1.0",
        summary: "Acquires a lock for an owner with a TTL, optionally waiting in line for it. Returns the grant's fencing token.",
        syntax: "key owner milliseconds [WAIT timeout]",
        handler: lock,
        serve: Some(serve_lock),
        ..BASE
    },
    Command {
        name: "unlock",
        arity: 3,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Lock,
        since: "0.1.0",
        summary: "Releases a lock if the caller is its owner, granting it to the next waiter.",
        syntax: "key owner",
        handler: unlock,
        ..BASE
    },
    Command {
        name: "lockextend",
        arity: 4,
        flags: Flags::WRITE.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Lock,
        since: "0.1.0",
        summary: "Resets a lock's TTL if the caller is its owner.",
        syntax: "key owner milliseconds",
        handler: lockextend,
        ..BASE
    },
    Command {
        name: "lockinfo",
        arity: 2,
        flags: Flags::READONLY.or(Flags::FAST),
        keys: Keys::ONE,
        group: crate::command::Group::Lock,
        since: "0.1.0",
        summary: "Returns a lock's owner, remaining TTL, fencing token and number of waiters.",
        syntax: "key",
        handler: lockinfo,
        ..BASE
    },
    Command {
        name: "lockrestore",
        arity: 5,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::ONE,
        group: crate::command::Group::Lock,
        since: "0.2.0",
        summary: "Sets a lock's holder, absolute deadline and fencing token, as a replayed grant. Raises the fencing counter to the token.",
        syntax: "key owner unix-time-milliseconds token",
        handler: lockrestore,
        ..BASE
    },
    Command {
        name: "fenced",
        arity: -4,
        flags: Flags::WRITE.or(Flags::DENYOOM),
        keys: Keys::Custom { first: 1, last: 1, step: 1, find: fenced_keys },
        group: crate::command::Group::Lock,
        since: "0.1.0",
        summary: "Runs a command only if the given fencing token is the lock's current grant.",
        complexity: "O(1) plus the complexity of the command.",
        syntax: "key token command [arg [arg ...]]",
        handler: fenced,
        ..BASE
    },
];

/// The lock key plus the keys of the wrapped command (shifted by the three leading arguments).
fn fenced_keys(args: &[Bytes]) -> Vec<usize> {
    let mut v = vec![1];
    if args.len() > 3
        && let Ok(inner) = super::table().resolve(&args[3..])
        && inner.arity_ok(args.len() - 3)
        && !inner.needs_all_shards(&args[3..])
    {
        v.extend(inner.keys.positions(&args[3..]).into_iter().map(|i| i + 3));
    }
    v
}

fn parse_ttl(ctx: &Ctx<'_, '_>, i: usize) -> Result<u64, Frame> {
    match parse_i64_strict(ctx.arg(i)) {
        Some(ms) if ms > 0 => Ok(ms as u64),
        Some(_) => Err(error::invalid_expire(ctx.cmd.name)),
        None => Err(error::not_integer()),
    }
}

/// The lock at `key`: Ok(None) if free, WRONGTYPE if the key holds something else.
fn current(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<LockValue>, Frame> {
    match ctx.db().peek(key) {
        None => Ok(None),
        Some(Entry { value: Value::Lock(l), .. }) => Ok(Some((**l).clone())),
        Some(_) => Err(error::wrong_type()),
    }
}

/// Grants the free lock at `key` to `owner`.
fn grant(ctx: &mut Ctx<'_, '_>, key: &[u8], owner: &[u8], ttl: u64) -> Frame {
    let token = ctx.srv.next_fence();
    let deadline = ctx.now.saturating_add(ttl);
    let value = Value::Lock(Box::new(LockValue { owner: SmallBytes::from_slice(owner), token }));
    ctx.db().set_with_expire(key, value, deadline);
    ctx.changed(1);
    if ctx.propagating() {
        let (at, t) = (ctx.to_unix_ms(deadline).to_string(), token.to_string());
        ctx.propagate_as(&[&b"LOCKRESTORE"[..], key, owner, at.as_bytes(), t.as_bytes()]);
    }
    Frame::Integer(token.min(i64::MAX as u64) as i64)
}

/// Propagates a lock's new deadline as `PEXPIREAT`.
fn propagate_deadline(ctx: &mut Ctx<'_, '_>, key: &[u8], deadline: u64) {
    ctx.changed(1);
    if ctx.propagating() {
        let at = ctx.to_unix_ms(deadline).to_string();
        ctx.propagate_as(&[&b"PEXPIREAT"[..], key, at.as_bytes()]);
    }
}

fn lockrestore(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, owner) = (ctx.arg(1), ctx.arg(2));
    let Some(at) = parse_i64_strict(ctx.arg(3)).filter(|t| *t > 0) else { return error::invalid_expire("lockrestore") };
    let Some(token) = parse_i64_strict(ctx.arg(4)).filter(|t| *t > 0) else { return error::not_integer() };
    if let Err(e) = current(ctx, key) {
        return e;
    }
    let token = token as u64;
    ctx.srv.fence.fetch_max(token, std::sync::atomic::Ordering::Relaxed);
    let deadline = at.saturating_sub(ctx.srv.clock.wall_offset_ms());
    let value = Value::Lock(Box::new(LockValue { owner: SmallBytes::from_slice(owner), token }));
    let now = ctx.now as i64;
    let mut db = ctx.db();
    if deadline < now {
        // Already past its deadline (a key expires once its deadline is behind the clock): the
        // grant is over, as SET ... PXAT in the past.
        db.remove(key);
    } else {
        db.set_with_expire(key, value, deadline as u64);
    }
    ctx.changed(1);
    Frame::ok()
}

fn lock(ctx: &mut Ctx<'_, '_>) -> Frame {
    let ttl = match parse_ttl(ctx, 3) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let wait = match ctx.argc() {
        4 => None,
        6 if eq_ic(ctx.arg(4), "wait") => match parse_i64_strict(ctx.arg(5)) {
            Some(ms) if ms >= 0 => Some(ms as u64),
            Some(_) => return Frame::error("ERR timeout is negative"),
            None => return Frame::error("ERR timeout is not an integer or out of range"),
        },
        _ => return error::syntax(),
    };
    let (key, owner) = (ctx.arg(1), ctx.arg(2));
    match current(ctx, key) {
        Err(e) => return e,
        // Re-entrant for the same owner (a retried request after a lost reply): TTL reset, same token.
        Ok(Some(l)) if l.owner[..] == *owner => {
            let deadline = ctx.now.saturating_add(ttl);
            ctx.db().set_expire(key, deadline);
            propagate_deadline(ctx, key, deadline);
            return Frame::Integer(l.token.min(i64::MAX as u64) as i64);
        }
        Ok(Some(_)) => {}
        Ok(None) => {
            // Free, but others may be queued (freed by an expiry not yet served): they go first.
            let db = ctx.client.db;
            if !ctx.locked.shard_for(key).dbs[db].has_waiters(key) {
                return grant(ctx, key, owner, ttl);
            }
        }
    }
    match wait {
        Some(ms) if !ctx.client.deny_blocking => {
            let deadline = (ms > 0).then(|| ctx.now.saturating_add(ms));
            ctx.client.block = Some(BlockRequest {
                keys: vec![ctx.args[1].clone()],
                deadline,
                timeout_reply: Frame::Null,
                serve_args: None,
            });
            Frame::Null
        }
        _ => Frame::Null,
    }
}

fn serve_lock(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Serve {
    let Ok(ttl) = parse_ttl(ctx, 3) else { return Serve::NotNow };
    match current(ctx, key) {
        Ok(None) => {
            let owner = ctx.arg(2);
            Serve::Reply(grant(ctx, key, owner, ttl))
        }
        _ => Serve::NotNow,
    }
}

fn unlock(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, owner) = (ctx.arg(1), ctx.arg(2));
    match current(ctx, key) {
        Err(e) => e,
        Ok(Some(l)) if l.owner[..] == *owner => {
            // The removal marks the key ready: the next waiter is granted before our locks drop.
            ctx.db().remove(key);
            ctx.changed(1);
            ctx.propagate_as(&[&b"DEL"[..], key]);
            Frame::Integer(1)
        }
        Ok(_) => Frame::Integer(0),
    }
}

fn lockextend(ctx: &mut Ctx<'_, '_>) -> Frame {
    let ttl = match parse_ttl(ctx, 3) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let (key, owner) = (ctx.arg(1), ctx.arg(2));
    match current(ctx, key) {
        Err(e) => e,
        Ok(Some(l)) if l.owner[..] == *owner => {
            let deadline = ctx.now.saturating_add(ttl);
            ctx.db().set_expire(key, deadline);
            propagate_deadline(ctx, key, deadline);
            Frame::Integer(1)
        }
        Ok(_) => Frame::Integer(0),
    }
}

fn lockinfo(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let now = ctx.now;
    let db = ctx.client.db;
    let (owner, token, ttl) = match ctx.db().read_with_deadline(key) {
        None => return Frame::Null,
        Some((e, at)) => match &e.value {
            Value::Lock(l) => (l.owner.clone(), l.token, at.map_or(-1, |d| d.saturating_sub(now) as i64)),
            _ => return error::wrong_type(),
        },
    };
    let t = ctx.locked.shard_for(key).dbs[db].blocked_queue_len(key);
    let s = |x: &str| Frame::bulk(Bytes::copy_from_slice(x.as_bytes()));
    Frame::Map(vec![
        (s("owner"), Frame::Bulk(Bytes::copy_from_slice(&owner))),
        (s("ttl"), Frame::Integer(ttl)),
        (s("token"), Frame::Integer(token.min(i64::MAX as u64) as i64)),
        (s("waiters"), Frame::Integer(t as i64)),
    ])
}

fn fenced(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let Some(token) = parse_i64_strict(ctx.arg(2)).filter(|t| *t >= 0) else { return error::not_integer() };
    let inner = match ctx.srv.table.resolve(&ctx.args[3..]) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if !inner.arity_ok(ctx.argc() - 3) {
        return error::wrong_arity(inner.name);
    }
    if inner.needs_all_shards(&ctx.args[3..]) || inner.flags.has(Flags::NOSCRIPT) || inner.name == "fenced" {
        return Frame::error("ERR this command cannot be fenced");
    }
    match current(ctx, key) {
        Err(e) => return e,
        Ok(Some(l)) if l.token == token as u64 => {}
        Ok(Some(l)) => {
            return Frame::error(format!("FENCED token {token} is stale, the lock's current token is {}", l.token));
        }
        Ok(None) => return Frame::error(format!("FENCED token {token} is stale, the lock is not held")),
    }
    let args = &ctx.args[3..];
    // The wrapped command needs the user's permission as if sent alone.
    let context = if ctx.client.in_script {
        crate::acl::Context::Lua
    } else if ctx.client.multi.active() || ctx.client.in_exec {
        crate::acl::Context::Multi
    } else {
        crate::acl::Context::Toplevel
    };
    if let Err(d) = ctx.srv.acl_check(ctx.client, inner, args, context) {
        return Frame::error(d.reply(inner));
    }
    let deny = std::mem::replace(&mut ctx.client.deny_blocking, true);
    let reply = ctx.srv.call(ctx.client, ctx.locked, inner, args, ctx.now);
    ctx.client.deny_blocking = deny;
    reply
}

#[cfg(test)]
mod tests {
    use crate::testkit::{TestClient, TestServer};

    fn token(s: &str) -> i64 {
        s.strip_prefix(':').and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("not a token: {s}"))
    }

    fn served_token(c: &mut TestClient) -> i64 {
        let r = c.blocked_reply().expect("served");
        token(&r)
    }

    #[test]
    fn acquire_release_extend_info() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let t1 = token(&c.run("LOCK res alice 1000"));
        assert_eq!(c.run("LOCK res bob 1000"), "(nil)");
        // Re-entrant for the same owner: same token, TTL reset.
        ts.clock.advance_ms(400);
        assert_eq!(token(&c.run("LOCK res alice 1000")), t1);
        assert_eq!(c.run("PTTL res"), ":1000");
        assert_eq!(c.run("TYPE res"), "+lock");
        assert_eq!(c.run("GET res"), "-WRONGTYPE Operation against a key holding the wrong kind of value");
        assert_eq!(c.run("LOCKEXTEND res bob 5000"), ":0");
        assert_eq!(c.run("LOCKEXTEND res alice 5000"), ":1");
        assert_eq!(
            c.run("LOCKINFO res"),
            format!("{{\"owner\": \"alice\", \"ttl\": :5000, \"token\": :{t1}, \"waiters\": :0}}")
        );
        assert_eq!(c.run("UNLOCK res bob"), ":0");
        assert_eq!(c.run("UNLOCK res alice"), ":1");
        assert_eq!(c.run("UNLOCK res alice"), ":0");
        assert_eq!(c.run("LOCKINFO res"), "(nil)");
        assert_eq!(c.run("LOCK res alice 0"), "-ERR invalid expire time in 'lock' command");
        assert_eq!(c.run("LOCK res alice x"), "-ERR value is not an integer or out of range");
        assert_eq!(c.run("LOCK res alice 10 WAIT"), "-ERR syntax error");
        assert_eq!(c.run("SET str v"), "+OK");
        assert_eq!(c.run("LOCK str alice 10"), "-WRONGTYPE Operation against a key holding the wrong kind of value");
    }

    #[test]
    fn waiters_are_granted_in_arrival_order_in_the_release_step() {
        let ts = TestServer::new();
        let mut holder = ts.client();
        let mut w: Vec<TestClient> = (0..3).map(|_| ts.client()).collect();
        let t0 = token(&holder.run("LOCK res h 10000"));
        for (i, c) in w.iter_mut().enumerate() {
            assert_eq!(c.run(&format!("LOCK res w{i} 10000 WAIT 0")), "(no reply)");
        }
        assert!(holder.run("LOCKINFO res").contains("\"waiters\": :3"));
        // A newcomer without WAIT does not jump the queue.
        assert_eq!(holder.run("LOCK res newcomer 100"), "(nil)");
        assert_eq!(holder.run("UNLOCK res h"), ":1");
        // Granted in the same step: the lock is already w0's.
        let t1 = served_token(&mut w[0]);
        assert!(t1 > t0);
        assert!(holder.run("LOCKINFO res").contains("\"owner\": \"w0\""));
        assert_eq!(w[1].blocked_reply(), None);
        assert_eq!(w[0].run("UNLOCK res w0"), ":1");
        let t2 = served_token(&mut w[1]);
        assert!(t2 > t1);
        // Expiry frees it too: the cron hands it to the next waiter.
        ts.clock.advance_ms(10_001);
        ts.srv.active_expire_cycle(crate::clock::Clock::now_ms(&*ts.clock), 100);
        let t3 = served_token(&mut w[2]);
        assert!(t3 > t2);
        assert!(holder.run("LOCKINFO res").contains("\"owner\": \"w2\""));
    }

    #[test]
    fn a_waiter_that_gives_up_is_skipped_and_timeouts_reply_nil() {
        let ts = TestServer::new();
        let (mut h, mut a, mut b) = (ts.client(), ts.client(), ts.client());
        token(&h.run("LOCK res h 10000"));
        assert_eq!(a.run("LOCK res a 10000 WAIT 50"), "(no reply)");
        assert_eq!(b.run("LOCK res b 10000 WAIT 0"), "(no reply)");
        assert_eq!(a.time_out().as_deref(), Some("(nil)"));
        assert_eq!(h.run("UNLOCK res h"), ":1");
        served_token(&mut b);
        assert!(h.run("LOCKINFO res").contains("\"owner\": \"b\""));
    }

    #[test]
    fn fencing_tokens_never_go_back() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let t1 = token(&c.run("LOCK a x 1000"));
        assert_eq!(c.run("DEL a"), ":1");
        let t2 = token(&c.run("LOCK a x 1000"));
        assert_eq!(c.run("FLUSHALL"), "+OK");
        let t3 = token(&c.run("LOCK a x 1000"));
        let t4 = token(&c.run("LOCK other x 1000"));
        assert!(t1 < t2 && t2 < t3 && t3 < t4, "{t1} {t2} {t3} {t4}");
        // A fresh server (restart) starts above every earlier token, wall clock permitting.
        ts.clock.advance_ms(1);
        let ts2 = TestServer::new();
        ts2.clock.advance_ms(1);
        assert!(token(&ts2.client().run("LOCK a x 1000")) > t4);
    }

    #[test]
    fn fenced_writes_need_the_current_grant() {
        let ts = TestServer::new();
        let (mut a, mut b) = (ts.client(), ts.client());
        let ta = token(&a.run("LOCK res a 1000"));
        assert_eq!(a.run(&format!("FENCED res {ta} SET counter 1")), "+OK");
        // a's lock expires; b takes it; a's late write is refused.
        ts.clock.advance_ms(1001);
        let tb = token(&b.run("LOCK res b 1000"));
        assert_eq!(
            a.run(&format!("FENCED res {ta} INCR counter")),
            format!("-FENCED token {ta} is stale, the lock's current token is {tb}")
        );
        assert_eq!(b.run(&format!("FENCED res {tb} INCR counter")), ":2");
        assert_eq!(b.run(&format!("FENCED res {tb} GET")), "-ERR wrong number of arguments for 'get' command");
        assert_eq!(b.run(&format!("FENCED res {tb} FLUSHALL")), "-ERR this command cannot be fenced");
        assert_eq!(b.run("UNLOCK res b"), ":1");
        assert_eq!(
            b.run(&format!("FENCED res {tb} INCR counter")),
            format!("-FENCED token {tb} is stale, the lock is not held")
        );
        assert_eq!(b.run("GET counter"), "\"2\"");
    }

    #[test]
    fn flushall_and_swapdb_hand_freed_locks_to_waiters() {
        let ts = TestServer::new();
        let (mut h, mut w) = (ts.client(), ts.client());
        token(&h.run("LOCK res h 10000"));
        assert_eq!(w.run("LOCK res w 10000 WAIT 0"), "(no reply)");
        assert_eq!(h.run("FLUSHALL"), "+OK");
        served_token(&mut w);
        assert!(h.run("LOCKINFO res").contains("\"owner\": \"w\""));
        // SWAPDB with an empty database frees it as well.
        assert_eq!(w.run("LOCK res w2 10000 WAIT 0"), "(no reply)");
        assert_eq!(h.run("SWAPDB 0 1"), "+OK");
        served_token(&mut w);
        assert!(h.run("LOCKINFO res").contains("\"owner\": \"w2\""));
    }

    #[test]
    fn locks_in_transactions() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > MULTI
            +OK
            > LOCK res a 1000
            +QUEUED
            > LOCK res b 1000 WAIT 0
            +QUEUED
            > UNLOCK res a
            +QUEUED
            > EXEC
            "#
            .split("> EXEC")
            .next()
            .unwrap_or_default(),
        );
        let r = c.run("EXEC");
        assert!(r.starts_with("[:") && r.ends_with(", (nil), :1]"), "{r}");
    }
}

#[cfg(test)]
mod expiry_tests {
    use crate::testkit::TestServer;

    /// The fast waiter pass hands an expired lock to its waiter (what the server runs every 10 ms).
    #[test]
    fn fast_pass_hands_expired_locks_over() {
        let ts = TestServer::new();
        let (mut h, mut w) = (ts.client(), ts.client());
        assert!(h.run("LOCK res h 50").starts_with(':'));
        assert_eq!(w.run("LOCK res w 1000 WAIT 0"), "(no reply)");
        ts.clock.advance_ms(51);
        ts.srv.expire_for_waiters(crate::clock::Clock::now_ms(&*ts.clock));
        assert!(w.blocked_reply().is_some_and(|r| r.starts_with(':')));
        assert!(h.run("LOCKINFO res").contains("\"owner\": \"w\""));
    }
}
