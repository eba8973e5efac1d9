//! The TTL commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST.
//!
//! Deadlines are stored on the monotonic timeline (see [`crate::clock`]). Relative times are added to
//! the command's `now`; absolute Unix times are converted with the clock's wall offset on the way in
//! (EXPIREAT) and on the way out (EXPIRETIME), so stepping the wall clock never changes a relative TTL.

use super::base::{BASE, f};
use crate::args::eq_ic;
use crate::command::Keys;
use crate::ctx::{Command, Ctx};
use crate::error;
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command { name: "expire", arity: -3, flags: f::WF, keys: Keys::ONE, handler: expire, ..BASE },
    Command { name: "pexpire", arity: -3, flags: f::WF, keys: Keys::ONE, handler: pexpire, ..BASE },
    Command { name: "expireat", arity: -3, flags: f::WF, keys: Keys::ONE, handler: expireat, ..BASE },
    Command { name: "pexpireat", arity: -3, flags: f::WF, keys: Keys::ONE, handler: pexpireat, ..BASE },
    Command { name: "ttl", arity: 2, flags: f::RF, keys: Keys::ONE, handler: ttl, ..BASE },
    Command { name: "pttl", arity: 2, flags: f::RF, keys: Keys::ONE, handler: pttl, ..BASE },
    Command { name: "expiretime", arity: 2, flags: f::RF, keys: Keys::ONE, handler: expiretime, ..BASE },
    Command { name: "pexpiretime", arity: 2, flags: f::RF, keys: Keys::ONE, handler: pexpiretime, ..BASE },
    Command { name: "persist", arity: 2, flags: f::WF, keys: Keys::ONE, handler: persist, ..BASE },
];

#[derive(Default)]
struct Cond {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

/// Parses NX/XX/GT/LT from argument 3 on, with Redis's errors and precedence.
fn parse_cond(ctx: &Ctx<'_, '_>) -> Result<Cond, Frame> {
    let mut c = Cond::default();
    for a in &ctx.args[3..] {
        if eq_ic(a, "nx") {
            c.nx = true;
        } else if eq_ic(a, "xx") {
            c.xx = true;
        } else if eq_ic(a, "gt") {
            c.gt = true;
        } else if eq_ic(a, "lt") {
            c.lt = true;
        } else {
            return Err(Frame::error(format!("ERR Unsupported option {}", error::trunc(a, a.len()))));
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Err(Frame::error("ERR NX and XX, GT or LT options at the same time are not compatible"));
    }
    if c.gt && c.lt {
        return Err(Frame::error("ERR GT and LT options at the same time are not compatible"));
    }
    Ok(c)
}

/// EXPIRE family. `relative`: the time is a duration from now; `seconds`: the unit of argument 2.
fn expire_generic(ctx: &mut Ctx<'_, '_>, relative: bool, seconds: bool) -> Frame {
    let cond = match parse_cond(ctx) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let mut when = match ctx.int_arg(2) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let name = ctx.cmd.name;
    if seconds {
        match when.checked_mul(1000) {
            Some(ms) => when = ms,
            None => return error::invalid_expire(name),
        }
    }
    let now = ctx.now as i64;
    // The deadline on the monotonic timeline (may be negative: already expired).
    let deadline = if relative {
        match when.checked_add(now) {
            Some(d) => d,
            None => return error::invalid_expire(name),
        }
    } else {
        let off = ctx.srv.clock.wall_offset_ms();
        when.checked_sub(off).unwrap_or(if off < 0 { i64::MAX } else { i64::MIN })
    };
    let key = ctx.arg(1);
    let loading = ctx.client.loading;
    let mut db = ctx.db();
    let Some((_, at)) = db.write_with_deadline(key) else {
        return Frame::Integer(0);
    };
    let current = at.map(|d| i64::try_from(d).unwrap_or(i64::MAX));
    let refused = (cond.nx && current.is_some())
        || (cond.xx && current.is_none())
        // No TTL counts as infinite: GT never beats it, LT always does.
        || (cond.gt && current.is_none_or(|c| deadline <= c))
        || (cond.lt && current.is_some_and(|c| deadline >= c));
    if refused {
        return Frame::Integer(0);
    }
    // While an AOF loads, a deadline that passed is kept (Redis's checkAlreadyExpired): the
    // commands after it in the file ran on the key.
    if deadline <= now && !loading {
        db.remove(key);
        ctx.propagate_as(&[&b"DEL"[..], key]);
    } else {
        db.set_expire(key, deadline.max(1) as u64);
        // Relative or in seconds, it replays as the same absolute deadline in milliseconds.
        if relative || seconds {
            let at = ctx.to_unix_ms(deadline as u64).to_string();
            ctx.propagate_as(&[&b"PEXPIREAT"[..], key, at.as_bytes()]);
        }
    }
    ctx.changed(1);
    Frame::Integer(1)
}

fn expire(ctx: &mut Ctx<'_, '_>) -> Frame {
    expire_generic(ctx, true, true)
}

fn pexpire(ctx: &mut Ctx<'_, '_>) -> Frame {
    expire_generic(ctx, true, false)
}

fn expireat(ctx: &mut Ctx<'_, '_>) -> Frame {
    expire_generic(ctx, false, true)
}

fn pexpireat(ctx: &mut Ctx<'_, '_>) -> Frame {
    expire_generic(ctx, false, false)
}

/// TTL family: -2 missing, -1 no TTL, else the remaining time (`absolute`: the Unix deadline).
fn ttl_generic(ctx: &mut Ctx<'_, '_>, ms: bool, absolute: bool) -> Frame {
    let key = ctx.arg(1);
    let now = ctx.now as i64;
    let off = ctx.srv.clock.wall_offset_ms();
    let Some(at) = ctx.db().read_notouch_with_deadline(key).map(|(_, at)| at) else {
        return Frame::Integer(-2);
    };
    let Some(d) = at else {
        return Frame::Integer(-1);
    };
    let d = i64::try_from(d).unwrap_or(i64::MAX);
    let t = if absolute { d.saturating_add(off) } else { d.saturating_sub(now) }.max(0);
    Frame::Integer(if ms { t } else { t.saturating_add(500) / 1000 })
}

fn ttl(ctx: &mut Ctx<'_, '_>) -> Frame {
    ttl_generic(ctx, false, false)
}

fn pttl(ctx: &mut Ctx<'_, '_>) -> Frame {
    ttl_generic(ctx, true, false)
}

fn expiretime(ctx: &mut Ctx<'_, '_>) -> Frame {
    ttl_generic(ctx, false, true)
}

fn pexpiretime(ctx: &mut Ctx<'_, '_>) -> Frame {
    ttl_generic(ctx, true, true)
}

fn persist(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    let mut db = ctx.db();
    match db.write(key) {
        Some(e) if e.has_ttl() => {
            db.set_expire(key, 0);
            ctx.changed(1);
            Frame::Integer(1)
        }
        _ => Frame::Integer(0),
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    /// The test clock starts at this Unix time (ms) with a zero wall offset.
    const T0: i64 = 1_700_000_000_000;

    #[test]
    fn expire_then_key_disappears() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > SET x foobar
            +OK
            > EXPIRE x 5
            :1
            > TTL x
            :5
            > EXPIRE x 10
            :1
            > TTL x
            :10
            > EXPIRE x 2
            :1
            > GET x
            "foobar"
            "#,
        );
        ts.clock.advance_ms(2000);
        ts.transcript(
            r#"
            > GET x
            "foobar"
            > PTTL x
            :0
            > TTL x
            :0
            "#,
        );
        ts.clock.advance_ms(1);
        ts.transcript(
            r#"
            > GET x
            (nil)
            > TTL x
            :-2
            > EXISTS x
            :0
            "#,
        );
    }

    #[test]
    fn write_on_expiring_key_and_persist() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > SET x foo
            +OK
            > EXPIRE x 100
            :1
            > SET x bar
            +OK
            > TTL x
            :-1
            > EXPIRE x 100
            :1
            > PERSIST x
            :1
            > TTL x
            :-1
            > GET x
            "bar"
            > PERSIST x
            :0
            > PERSIST nokey
            :0
            > PERSIST
            -ERR wrong number of arguments for 'persist' command
            "#,
        );
    }

    #[test]
    fn millisecond_precision_and_rounding() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > SET x y
            +OK
            > PEXPIRE x 1499
            :1
            > PTTL x
            :1499
            > TTL x
            :1
            > PEXPIRE x 1500
            :1
            > TTL x
            :2
            > PEXPIRE x 100
            :1
            "#,
        );
        ts.clock.advance_ms(99);
        ts.transcript(
            r#"
            > PTTL x
            :1
            > TTL x
            :0
            > EXISTS x
            :1
            "#,
        );
        ts.clock.advance_ms(2);
        ts.transcript(
            r#"
            > EXISTS x
            :0
            "#,
        );
    }

    #[test]
    fn absolute_times() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("SET x y");
        // EXPIREAT / PEXPIREAT with times in the future, read back exactly.
        assert_eq!(c.run(&format!("EXPIREAT x {}", T0 / 1000 + 100)), ":1");
        assert_eq!(c.run("TTL x"), ":100");
        assert_eq!(c.run("PTTL x"), ":100000");
        assert_eq!(c.run("EXPIRETIME x"), format!(":{}", T0 / 1000 + 100));
        assert_eq!(c.run("PEXPIRETIME x"), format!(":{}", T0 + 100_000));
        assert_eq!(c.run(&format!("PEXPIREAT x {}", T0 + 1234)), ":1");
        assert_eq!(c.run("PTTL x"), ":1234");
        assert_eq!(c.run("PEXPIRETIME x"), format!(":{}", T0 + 1234));
        // EXPIRETIME rounds to the nearest second, as Redis does.
        assert_eq!(c.run("EXPIRETIME x"), format!(":{}", T0 / 1000 + 1));
        ts.clock.advance_ms(1235);
        assert_eq!(c.run("EXISTS x"), ":0");
        // A time in the past deletes the key at once.
        c.run("SET x y");
        assert_eq!(c.run(&format!("EXPIREAT x {}", T0 / 1000 - 1)), ":1");
        assert_eq!(c.run("EXISTS x"), ":0");
        c.run("SET x y");
        let now = T0 + 1235;
        assert_eq!(c.run(&format!("PEXPIREAT x {now}")), ":1", "deadline == now counts as expired");
        assert_eq!(c.run("EXISTS x"), ":0");
        c.run("SET x y");
        assert_eq!(c.run(&format!("PEXPIREAT x {}", now + 1)), ":1");
        assert_eq!(c.run("PTTL x"), ":1");
        ts.transcript(
            r#"
            > SET x y
            +OK
            > EXPIREAT x 0
            :1
            > EXISTS x
            :0
            > SET foo bar
            +OK
            > PEXPIREAT foo 9223372036854770000
            :1
            > PEXPIRETIME foo
            :9223372036854770000
            > EXPIRETIME foo
            :9223372036854770
            > PEXPIREAT foo -9223372036854770000
            :1
            > TTL foo
            :-2
            > SET foo bar
            +OK
            > EXPIREAT foo 9223372036854775
            :1
            > EXPIREAT foo 9223372036854776
            -ERR invalid expire time in 'expireat' command
            > EXPIREAT foo -9223372036854776
            -ERR invalid expire time in 'expireat' command
            > EXPIREAT nokey 100
            :0
            > PEXPIREAT nokey 100
            :0
            "#,
        );
    }

    /// Relative TTLs live on the monotonic timeline: stepping the wall clock does not change them,
    /// while absolute readings (EXPIRETIME) follow the new wall time.
    #[test]
    fn relative_ttl_survives_wall_clock_step() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("SET lock me");
        assert_eq!(c.run("PEXPIRE lock 30000"), ":1");
        assert_eq!(c.run("PEXPIRETIME lock"), format!(":{}", T0 + 30_000));
        ts.clock.step_wall_ms(3_600_000);
        assert_eq!(c.run("PTTL lock"), ":30000");
        assert_eq!(c.run("TTL lock"), ":30");
        assert_eq!(c.run("PEXPIRETIME lock"), format!(":{}", T0 + 3_600_000 + 30_000));
        ts.clock.step_wall_ms(-7_200_000);
        assert_eq!(c.run("PTTL lock"), ":30000");
        ts.clock.advance_ms(29_999);
        assert_eq!(c.run("GET lock"), "\"me\"");
        ts.clock.advance_ms(2);
        assert_eq!(c.run("GET lock"), "(nil)");
        // Absolute times given after the step are read against the new wall time.
        c.run("SET k v");
        let wall_now = T0 + 30_001 - 3_600_000;
        assert_eq!(c.run(&format!("PEXPIREAT k {}", wall_now + 5000)), ":1");
        assert_eq!(c.run("PTTL k"), ":5000");
        assert_eq!(c.run("PEXPIRETIME k"), format!(":{}", wall_now + 5000));
    }

    #[test]
    fn conditions_with_absolute_times() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("SET foo bar");
        assert_eq!(c.run(&format!("PEXPIREAT foo {} NX", T0 + 500)), ":1");
        assert_eq!(c.run(&format!("PEXPIREAT foo {} GT", T0 + 400)), ":0");
        assert_eq!(c.run(&format!("PEXPIREAT foo {} GT", T0 + 600)), ":1");
        assert_eq!(c.run(&format!("EXPIREAT foo {} LT", T0 / 1000 + 100)), ":0");
        assert_eq!(c.run(&format!("PEXPIREAT foo {} LT", T0 + 300)), ":1");
        assert_eq!(c.run("PTTL foo"), ":300");
    }

    #[test]
    fn expire_on_aggregates() {
        let ts = TestServer::new();
        {
            let mut l = ts.srv.ks.lock_all();
            let v = crate::value::Value::List(Box::new([crate::value::SmallBytes::from_slice(b"a")].into()));
            l.shard_for(b"l").dbs[0].insert(b"l", crate::value::Entry::new(v), 0);
        }
        ts.transcript(
            r#"
            > EXPIRE l 10
            :1
            > TTL l
            :10
            > PERSIST l
            :1
            > PEXPIRE l 10
            :1
            "#,
        );
        ts.clock.advance_ms(11);
        ts.transcript(
            r#"
            > TYPE l
            +none
            "#,
        );
    }

    /// Redis's "5 keys in, 5 keys out" and active expiry: keys with a TTL are reclaimed by the cycle.
    #[test]
    fn active_expiry_reclaims() {
        let ts = TestServer::new();
        let mut c = ts.client();
        for i in 0..3 {
            c.run(&format!("SET foo{i} bar"));
            c.run(&format!("PEXPIRE foo{i} 100"));
        }
        c.run("SET keep 1");
        assert_eq!(c.run("DBSIZE"), ":4");
        ts.clock.advance_ms(101);
        assert_eq!(ts.srv.active_expire_cycle(crate::clock::Clock::now_ms(&*ts.clock), 100), 3);
        assert_eq!(c.run("DBSIZE"), ":1");
    }
}
