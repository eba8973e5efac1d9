//! Blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP.
//!
//! Each handler first tries to serve at once, exactly like its non-blocking twin. When every key is
//! empty it asks to block (`ctx.client.block`); `Server::execute` queues the client on its keys. A
//! later write to one of them runs this family's `serve_*` function for the first waiter, under the
//! writer's locks (see [`crate::waiters`]). Inside EXEC (and scripts) blocking is denied and the
//! timeout reply comes at once, as in Redis.

use super::base::BASE;
use crate::command::{Flags, Keys};
use crate::ctx::{Command, Ctx};
use crate::types::access::{MPop, bulk, parse_mpop};
use crate::value::SmallBytes;
use crate::waiters::{BlockRequest, Serve, parse_timeout};
use bytes::Bytes;
use resp::Frame;

const BLOCKING_WRITE: Flags = Flags::WRITE.or(Flags::BLOCKING);

fn numkeys_at_2(args: &[Bytes]) -> Vec<usize> {
    crate::types::access::numkeys_keys::<2>(args)
}

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "blpop",
        arity: -3,
        flags: BLOCKING_WRITE.or(Flags::NOSCRIPT),
        keys: Keys::Range { first: 1, last: -2, step: 1 },
        group: crate::command::Group::List,
        handler: blpop,
        serve: Some(serve_bpop),
        ready: Some(list_ready),
        ..BASE
    },
    Command {
        name: "brpop",
        arity: -3,
        flags: BLOCKING_WRITE.or(Flags::NOSCRIPT),
        keys: Keys::Range { first: 1, last: -2, step: 1 },
        group: crate::command::Group::List,
        handler: brpop,
        serve: Some(serve_bpop),
        ready: Some(list_ready),
        ..BASE
    },
    Command {
        name: "blmove",
        arity: 6,
        flags: BLOCKING_WRITE.or(Flags::DENYOOM).or(Flags::NOSCRIPT),
        keys: Keys::Range { first: 1, last: 2, step: 1 },
        group: crate::command::Group::List,
        handler: blmove,
        serve: Some(serve_bmove),
        ready: Some(list_ready),
        ..BASE
    },
    Command {
        name: "brpoplpush",
        arity: 4,
        flags: BLOCKING_WRITE.or(Flags::DENYOOM).or(Flags::NOSCRIPT),
        keys: Keys::Range { first: 1, last: 2, step: 1 },
        group: crate::command::Group::List,
        handler: brpoplpush,
        serve: Some(serve_bmove),
        ready: Some(list_ready),
        ..BASE
    },
    Command {
        name: "blmpop",
        arity: -5,
        flags: BLOCKING_WRITE,
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: numkeys_at_2 },
        group: crate::command::Group::List,
        handler: blmpop,
        serve: Some(serve_bmpop),
        ready: Some(list_ready),
        ..BASE
    },
    Command {
        name: "bzpopmin",
        arity: -3,
        flags: BLOCKING_WRITE.or(Flags::FAST).or(Flags::NOSCRIPT),
        keys: Keys::Range { first: 1, last: -2, step: 1 },
        group: crate::command::Group::SortedSet,
        handler: bzpopmin,
        serve: Some(serve_bzpop),
        ready: Some(zset_ready),
        ..BASE
    },
    Command {
        name: "bzpopmax",
        arity: -3,
        flags: BLOCKING_WRITE.or(Flags::FAST).or(Flags::NOSCRIPT),
        keys: Keys::Range { first: 1, last: -2, step: 1 },
        group: crate::command::Group::SortedSet,
        handler: bzpopmax,
        serve: Some(serve_bzpop),
        ready: Some(zset_ready),
        ..BASE
    },
    Command {
        name: "bzmpop",
        arity: -5,
        flags: BLOCKING_WRITE,
        keys: Keys::Custom { first: 0, last: 0, step: 0, find: numkeys_at_2 },
        group: crate::command::Group::SortedSet,
        handler: bzmpop,
        serve: Some(serve_bzmpop),
        ready: Some(zset_ready),
        ..BASE
    },
];

use super::list::{End, parse_end};

/// Asks to block on `keys` (or answers `timeout_reply` at once when blocking is denied).
fn block(ctx: &mut Ctx<'_, '_>, keys: Vec<Bytes>, deadline: Option<u64>, timeout_reply: Frame) -> Frame {
    if ctx.client.deny_blocking {
        return timeout_reply;
    }
    ctx.client.block = Some(BlockRequest { keys, deadline, timeout_reply, serve_args: None });
    // Not sent: Server::execute replaces it with the waiter's eventual reply.
    Frame::Null
}

/// Whether `key` holds a live value that `is` accepts, looked at without a lookup's side effects
/// (an expired key is not reclaimed, no statistics).
fn holds(ctx: &mut Ctx<'_, '_>, key: &[u8], is: fn(&crate::value::Value) -> bool) -> bool {
    let (db, now) = (ctx.client.db, ctx.now);
    let t = &ctx.locked.shard_for(key).dbs[db];
    t.peek(key).is_some_and(|e| is(&e.value)) && !t.is_stale(key, now)
}

/// Whether `key` holds a list (never empty: an emptied list is deleted), which serves a blocked pop.
fn list_ready(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> bool {
    holds(ctx, key, |v| matches!(v, crate::value::Value::List(_)))
}

/// Whether `key` holds a sorted set (never empty), which serves a blocked pop.
fn zset_ready(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> bool {
    holds(ctx, key, |v| matches!(v, crate::value::Value::ZSet(_)))
}

// ---- lists ---------------------------------------------------------------------------------------
//
// The operations are the plain commands' (`cmd::list::pop`, `cmd::list::lmove_op`,
// `cmd::zset::pop`), which also say what a served waiter propagates as.

use super::list::{lmove_op, pop, pop_first};

fn pop_reply(key: &[u8], v: &[SmallBytes]) -> Frame {
    Frame::Array(vec![bulk(key), Frame::Array(v.iter().map(|x| bulk(x)).collect())])
}

fn bpop_end(cmd: &str) -> End {
    if cmd == "blpop" { End::Left } else { End::Right }
}

fn bpop(ctx: &mut Ctx<'_, '_>) -> Frame {
    let deadline = match parse_timeout(ctx.arg(ctx.argc() - 1), ctx.now) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let end = bpop_end(ctx.cmd.name);
    let keys = &ctx.args[1..ctx.args.len() - 1];
    match pop_first(ctx, keys, end, 1, false) {
        Ok(Some((key, mut v))) => Frame::Array(vec![bulk(key), bulk(&v.remove(0))]),
        Ok(None) => block(ctx, keys.to_vec(), deadline, Frame::NullArray),
        Err(e) => e,
    }
}

fn blpop(ctx: &mut Ctx<'_, '_>) -> Frame {
    bpop(ctx)
}
fn brpop(ctx: &mut Ctx<'_, '_>) -> Frame {
    bpop(ctx)
}

fn serve_bpop(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Serve {
    let end = bpop_end(ctx.cmd.name);
    match pop(ctx, key, end, 1, false) {
        Ok(Some(mut v)) => Serve::Reply(Frame::Array(vec![bulk(key), bulk(&v.remove(0))])),
        _ => Serve::NotNow,
    }
}

/// (from, to, timeout argument index) of BLMOVE / BRPOPLPUSH.
fn bmove_args(ctx: &Ctx<'_, '_>) -> Result<(End, End, usize), Frame> {
    if ctx.cmd.name == "brpoplpush" {
        Ok((End::Right, End::Left, 3))
    } else {
        Ok((parse_end(ctx.arg(3))?, parse_end(ctx.arg(4))?, 5))
    }
}

fn bmove(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (from, to, ti) = match bmove_args(ctx) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let deadline = match parse_timeout(ctx.arg(ti), ctx.now) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    match lmove_op(ctx, src, dst, from, to) {
        Ok(Some(v)) => bulk(&v),
        Ok(None) => block(ctx, vec![ctx.args[1].clone()], deadline, Frame::Null),
        Err(e) => e,
    }
}

fn blmove(ctx: &mut Ctx<'_, '_>) -> Frame {
    bmove(ctx)
}
fn brpoplpush(ctx: &mut Ctx<'_, '_>) -> Frame {
    bmove(ctx)
}

fn serve_bmove(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Serve {
    let Ok((from, to, _)) = bmove_args(ctx) else { return Serve::NotNow };
    let dst = ctx.arg(2);
    // The destination may live in a shard the writer does not hold: take it without waiting, or let
    // the waiter run its command itself.
    let shard = ctx.srv.ks.shard_of(dst);
    if !ctx.locked.try_add(shard) {
        return Serve::Retry;
    }
    match lmove_op(ctx, key, dst, from, to) {
        Ok(Some(v)) => Serve::Reply(bulk(&v)),
        Ok(None) => Serve::NotNow,
        Err(e) => Serve::Reply(e),
    }
}

fn blmpop(ctx: &mut Ctx<'_, '_>) -> Frame {
    let deadline = match parse_timeout(ctx.arg(1), ctx.now) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let MPop { keys, first: left, count } = match parse_mpop(ctx.args, 2, ["left", "right"]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let end = if left { End::Left } else { End::Right };
    let keys = &ctx.args[keys];
    match pop_first(ctx, keys, end, count, true) {
        Ok(Some((key, v))) => pop_reply(key, &v),
        Ok(None) => block(ctx, keys.to_vec(), deadline, Frame::NullArray),
        Err(e) => e,
    }
}

fn serve_bmpop(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Serve {
    let Ok(MPop { first: left, count, .. }) = parse_mpop(ctx.args, 2, ["left", "right"]) else { return Serve::NotNow };
    let end = if left { End::Left } else { End::Right };
    match pop(ctx, key, end, count, true) {
        Ok(Some(v)) => Serve::Reply(pop_reply(key, &v)),
        _ => Serve::NotNow,
    }
}

// ---- sorted sets ---------------------------------------------------------------------------------

use super::zset::{pop as pop_zset, pop_first as pop_first_zset};

fn bzpop_reply(key: &[u8], (m, score): &(SmallBytes, f64)) -> Frame {
    Frame::Array(vec![bulk(key), bulk(m), Frame::Double(*score)])
}

fn bzpop(ctx: &mut Ctx<'_, '_>, max: bool) -> Frame {
    let deadline = match parse_timeout(ctx.arg(ctx.argc() - 1), ctx.now) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let keys = &ctx.args[1..ctx.args.len() - 1];
    match pop_first_zset(ctx, keys, max, 1, false) {
        Ok(Some((key, v))) => bzpop_reply(key, &v[0]),
        Ok(None) => block(ctx, keys.to_vec(), deadline, Frame::NullArray),
        Err(e) => e,
    }
}

fn bzpopmin(ctx: &mut Ctx<'_, '_>) -> Frame {
    bzpop(ctx, false)
}
fn bzpopmax(ctx: &mut Ctx<'_, '_>) -> Frame {
    bzpop(ctx, true)
}

fn serve_bzpop(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Serve {
    let max = ctx.cmd.name == "bzpopmax";
    match pop_zset(ctx, key, max, 1, false) {
        Ok(Some(v)) => Serve::Reply(bzpop_reply(key, &v[0])),
        _ => Serve::NotNow,
    }
}

fn bzmpop_reply(key: &[u8], items: &[(SmallBytes, f64)]) -> Frame {
    let pairs = items.iter().map(|(m, s)| Frame::Array(vec![bulk(m), Frame::Double(*s)])).collect();
    Frame::Array(vec![bulk(key), Frame::Array(pairs)])
}

fn bzmpop(ctx: &mut Ctx<'_, '_>) -> Frame {
    let deadline = match parse_timeout(ctx.arg(1), ctx.now) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let MPop { keys, first: min, count } = match parse_mpop(ctx.args, 2, ["min", "max"]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let keys = &ctx.args[keys];
    match pop_first_zset(ctx, keys, !min, count, true) {
        Ok(Some((key, v))) => bzmpop_reply(key, &v),
        Ok(None) => block(ctx, keys.to_vec(), deadline, Frame::NullArray),
        Err(e) => e,
    }
}

fn serve_bzmpop(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Serve {
    let Ok(MPop { first: min, count, .. }) = parse_mpop(ctx.args, 2, ["min", "max"]) else { return Serve::NotNow };
    match pop_zset(ctx, key, !min, count, true) {
        Ok(Some(v)) => Serve::Reply(bzmpop_reply(key, &v)),
        _ => Serve::NotNow,
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    #[test]
    fn waiters_are_served_in_arrival_order_by_the_writer() {
        let ts = TestServer::new();
        let (mut a, mut b, mut w) = (ts.client(), ts.client(), ts.client());
        assert_eq!(a.run("BLPOP jobs 0"), "(no reply)");
        assert_eq!(b.run("BRPOP other jobs 0"), "(no reply)");
        assert_eq!(ts.srv.blocked_clients.load(std::sync::atomic::Ordering::Relaxed), 2);
        assert_eq!(a.blocked_reply(), None);
        // One push serves the first waiter only, in the same step: the element is never visible.
        assert_eq!(w.run("RPUSH jobs j1"), ":1");
        assert_eq!(w.run("LLEN jobs"), ":0");
        assert_eq!(a.blocked_reply().as_deref(), Some(r#"["jobs", "j1"]"#));
        assert_eq!(b.blocked_reply(), None);
        // Two more elements: the second waiter gets one, one stays.
        assert_eq!(w.run("RPUSH jobs j2 j3"), ":2");
        assert_eq!(b.blocked_reply().as_deref(), Some(r#"["jobs", "j3"]"#));
        assert_eq!(w.run("LRANGE jobs 0 -1"), r#"["j2"]"#);
        assert_eq!(ts.srv.blocked_clients.load(std::sync::atomic::Ordering::Relaxed), 0);
    }

    #[test]
    fn timeout_and_transactions() {
        let ts = TestServer::new();
        let (mut a, mut w) = (ts.client(), ts.client());
        assert_eq!(a.run("BLMOVE src dst LEFT RIGHT 0.1"), "(no reply)");
        assert_eq!(a.time_out().as_deref(), Some("(nil)"));
        // A timed-out waiter is skipped: the element stays.
        assert_eq!(w.run("RPUSH src x"), ":1");
        assert_eq!(w.run("LLEN src"), ":1");
        // Inside MULTI a blocking command answers at once.
        w.transcript(
            r#"
            > MULTI
            +OK
            > BLPOP empty 0
            +QUEUED
            > EXEC
            [(nil-array)]
            "#,
        );
        // BLMOVE is served by the push, moving the element.
        assert_eq!(a.run("BLMOVE src2 dst LEFT RIGHT 0"), "(no reply)");
        assert_eq!(w.run("LPUSH src2 v"), ":1");
        assert_eq!(a.blocked_reply().as_deref(), Some(r#""v""#));
        assert_eq!(w.run("LRANGE dst 0 -1"), r#"["v"]"#);
        // Pushed then deleted inside one transaction: nobody is woken (served after the EXEC).
        assert_eq!(a.run("BLPOP iso 0"), "(no reply)");
        assert_eq!(w.run("MULTI"), "+OK");
        assert_eq!(w.run("LPUSH iso x"), "+QUEUED");
        assert_eq!(w.run("DEL iso"), "+QUEUED");
        assert_eq!(w.run("EXEC"), "[:1, :1]");
        assert_eq!(a.blocked_reply(), None);
        let id = a.client.id;
        assert_eq!(w.run(&format!("CLIENT UNBLOCK {id} ERROR")), ":1");
        assert_eq!(a.blocked_reply().as_deref(), Some("-UNBLOCKED client unblocked via CLIENT UNBLOCK"));
        assert_eq!(w.run(&format!("CLIENT UNBLOCK {id}")), ":0");
        // Sorted sets too.
        assert_eq!(a.run("BZPOPMIN zz 0"), "(no reply)");
        assert_eq!(w.run("ZADD zz 3 m"), ":1");
        assert_eq!(a.blocked_reply().as_deref(), Some(r#"["zz", "m", ,3]"#));
    }
}

#[cfg(test)]
mod order_tests {
    use crate::testkit::TestServer;

    /// Keys made ready by one command are served in the order they became ready (Redis's
    /// "BLMPOP with multiple blocked clients").
    #[test]
    fn ready_keys_are_served_in_order() {
        let ts = TestServer::new();
        let (mut a, mut b, mut w) = (ts.client(), ts.client(), ts.client());
        assert_eq!(a.run("BLMPOP 0 2 blist blist2 LEFT COUNT 1"), "(no reply)");
        assert_eq!(b.run("BLMPOP 0 2 blist blist2 RIGHT COUNT 10"), "(no reply)");
        w.run("MULTI");
        w.run("LPUSH blist a b c d e");
        w.run("LPUSH blist2 1 2 3 4 5");
        assert_eq!(w.run("EXEC"), "[:5, :5]");
        assert_eq!(a.blocked_reply().as_deref(), Some(r#"["blist", ["e"]]"#));
        assert_eq!(b.blocked_reply().as_deref(), Some(r#"["blist", ["a", "b", "c", "d"]]"#));
    }
}

#[cfg(test)]
mod ringing_tests {
    use crate::ctx::Waiter;
    use crate::testkit::{TestClient, TestServer, decoded, show};
    use crate::waiters::WaitState;
    use bytes::Bytes;
    use std::sync::Arc;

    /// Runs `line` for `c` with its blocking handed back, and queues what it asked to block on as
    /// a ringing waiter (what a consensus node does for a client of its own).
    fn block_ringing(ts: &TestServer, c: &mut TestClient, line: &str, timeout_reply: &str) -> Arc<Waiter> {
        c.client.defer_blocking = true;
        assert_eq!(c.run(line), timeout_reply);
        c.client.defer_blocking = false;
        let req = c.client.block.take().expect("it asked to block");
        let args: Vec<Bytes> = resp::split_args(line.as_bytes()).expect("args").into_iter().map(Bytes::from).collect();
        ts.srv.block_ringing(&mut c.client, &args, req).expect("queued")
    }

    /// The keys that rang `w` if it was rung (it is then running); None otherwise.
    fn rung(w: &Waiter) -> Option<Vec<String>> {
        match w.take() {
            WaitState::Rung(keys) => Some(keys.iter().map(|k| String::from_utf8_lossy(k).into_owned()).collect()),
            _ => None,
        }
    }

    /// The run of a rung waiter: its serve step for `keys`, in [`show`] form.
    fn run(ts: &TestServer, c: &mut TestClient, w: &Waiter, keys: &[&str]) -> Option<String> {
        let keys: Vec<Bytes> = keys.iter().map(|k| Bytes::copy_from_slice(k.as_bytes())).collect();
        ts.srv.serve_now(&mut c.client, &w.args, &keys).map(|f| show(&decoded(f)))
    }

    /// The waiter's connection is done with it.
    fn leave(ts: &TestServer, c: &mut TestClient, w: &Waiter, keys: &[&str]) {
        w.end();
        ts.srv.unblocked(&mut c.client);
        let keys: Vec<Bytes> = keys.iter().map(|k| Bytes::copy_from_slice(k.as_bytes())).collect();
        ts.srv.pass_on(0, &keys);
    }

    #[test]
    fn ringing_waiters_are_rung_in_order_and_serve_themselves() {
        let ts = TestServer::new();
        let (mut a, mut b, mut w) = (ts.client(), ts.client(), ts.client());
        let wa = block_ringing(&ts, &mut a, "BLPOP jobs 0", "(nil-array)");
        let wb = block_ringing(&ts, &mut b, "BRPOP other jobs 0", "(nil-array)");
        assert_eq!(ts.srv.blocked_clients.load(std::sync::atomic::Ordering::Relaxed), 2);
        // A push rings the first waiter only and serves nobody: the elements stay for its run.
        assert_eq!(w.run("RPUSH jobs j1 j2"), ":2");
        assert_eq!(w.run("LLEN jobs"), ":2");
        assert_eq!(rung(&wa), Some(vec!["jobs".to_string()]));
        assert_eq!(rung(&wb), None);
        // Someone else takes everything first: the run finds nothing and the waiter waits again,
        // in its place (a deletion rings nobody).
        assert_eq!(w.run("DEL jobs"), ":1");
        assert_eq!(run(&ts, &mut a, &wa, &["jobs"]), None);
        assert_eq!(wa.rest(), None);
        assert!(matches!(wa.take(), WaitState::Waiting));
        assert_eq!(w.run("RPUSH jobs j3"), ":1");
        assert_eq!(rung(&wa), Some(vec!["jobs".to_string()]));
        assert_eq!(rung(&wb), None);
        // A push while it runs tells it to try again (not the second waiter, which waits for its
        // outcome); its run pops the first element.
        assert_eq!(w.run("RPUSH jobs j4"), ":2");
        assert_eq!(rung(&wb), None);
        assert_eq!(run(&ts, &mut a, &wa, &["jobs"]).as_deref(), Some(r#"["jobs", "j3"]"#));
        assert_eq!(rung(&wb), None);
        // Served, it leaves: the next waiter gets its turn, and takes what is left.
        leave(&ts, &mut a, &wa, &["jobs"]);
        assert_eq!(rung(&wb), Some(vec!["jobs".to_string()]));
        assert_eq!(run(&ts, &mut b, &wb, &["jobs"]).as_deref(), Some(r#"["jobs", "j4"]"#));
        leave(&ts, &mut b, &wb, &["other", "jobs"]);
        assert_eq!(w.run("EXISTS jobs"), ":0");
        assert_eq!(ts.srv.blocked_clients.load(std::sync::atomic::Ordering::Relaxed), 0);

        // A key of another type does not ring a sorted-set waiter; a sorted set does.
        let wz = block_ringing(&ts, &mut a, "BZPOPMIN mixed 0", "(nil-array)");
        assert_eq!(w.run("RPUSH mixed x"), ":1");
        assert_eq!(rung(&wz), None);
        assert_eq!(w.run("DEL mixed"), ":1");
        assert_eq!(w.run("ZADD mixed 2 m"), ":1");
        assert_eq!(rung(&wz), Some(vec!["mixed".to_string()]));
        assert_eq!(run(&ts, &mut a, &wz, &["mixed"]).as_deref(), Some(r#"["mixed", "m", ,2]"#));
        leave(&ts, &mut a, &wz, &["mixed"]);

        // A key written between the command and the queueing rings the waiter as it is queued.
        a.client.defer_blocking = true;
        assert_eq!(a.run("BLMOVE src dst LEFT RIGHT 0"), "(nil)");
        a.client.defer_blocking = false;
        let req = a.client.block.take().expect("it asked to block");
        assert_eq!(req.keys, vec![Bytes::from_static(b"src")], "BLMOVE blocks on its source only");
        assert_eq!(w.run("RPUSH src s1"), ":1");
        let args: Vec<Bytes> = ["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"].iter().map(|a| Bytes::from(*a)).collect();
        let wm = ts.srv.block_ringing(&mut a.client, &args, req).expect("queued");
        assert_eq!(rung(&wm), Some(vec!["src".to_string()]));
        assert_eq!(run(&ts, &mut a, &wm, &["src"]).as_deref(), Some(r#""s1""#));
        leave(&ts, &mut a, &wm, &["src"]);
        assert_eq!(w.run("LRANGE dst 0 -1"), r#"["s1"]"#);
    }

    /// A ringing waiter does not stand in the way of the waiters served by the writer: an XREAD
    /// reader queued behind a ringing XREADGROUP reader is served by the XADD that rings it.
    #[test]
    fn waiters_behind_a_ringing_one_are_served() {
        let ts = TestServer::new();
        let (mut a, mut b, mut w) = (ts.client(), ts.client(), ts.client());
        assert_eq!(w.run("XGROUP CREATE s g $ MKSTREAM"), "+OK");
        let wa = block_ringing(&ts, &mut a, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >", "(nil-array)");
        assert_eq!(b.run("XREAD BLOCK 0 STREAMS s $"), "(no reply)");
        assert_eq!(w.run("XADD s 1-1 f v"), r#""1-1""#);
        assert_eq!(b.blocked_reply().as_deref(), Some(r#"[["s", [["1-1", ["f", "v"]]]]]"#));
        assert_eq!(rung(&wa), Some(vec!["s".to_string()]));
        assert_eq!(run(&ts, &mut a, &wa, &["s"]).as_deref(), Some(r#"[["s", [["1-1", ["f", "v"]]]]]"#));
        leave(&ts, &mut a, &wa, &["s"]);
        // The group's last delivered ID moved: a group reader is not rung by what it read.
        let wa = block_ringing(&ts, &mut a, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >", "(nil-array)");
        assert_eq!(rung(&wa), None);
        // CLIENT UNBLOCK answers a waiting ringing waiter as any other.
        assert_eq!(w.run(&format!("CLIENT UNBLOCK {} ERROR", a.client.id)), ":1");
        assert!(matches!(wa.take(), WaitState::Served(f) if f.is_error()));
        leave(&ts, &mut a, &wa, &["s"]);
    }
}
