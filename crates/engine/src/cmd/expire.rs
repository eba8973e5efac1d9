//! The TTL commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST.
//!
//! Deadlines are stored on the monotonic timeline (see [`crate::clock`]). Relative times are added to
//! the command's `now`; absolute Unix times are converted with the clock's wall offset on the way in
//! (EXPIREAT) and on the way out (EXPIRETIME), so stepping the wall clock never changes a relative TTL.

use super::{f, BASE};
use crate::args::eq_ic;
use crate::command::{Command, Ctx, Keys};
use crate::error;
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "expire",
        arity: -3,
        flags: f::WF,
        keys: Keys::ONE,
        summary: "Set a key's time to live in seconds",
        syntax: "key seconds [NX | XX | GT | LT]",
        handler: expire,
        ..BASE
    },
    Command {
        name: "pexpire",
        arity: -3,
        flags: f::WF,
        keys: Keys::ONE,
        since: "2.6.0",
        summary: "Set a key's time to live in milliseconds",
        syntax: "key milliseconds [NX | XX | GT | LT]",
        handler: pexpire,
        ..BASE
    },
    Command {
        name: "expireat",
        arity: -3,
        flags: f::WF,
        keys: Keys::ONE,
        since: "1.2.0",
        summary: "Set the expiration for a key as a UNIX timestamp",
        syntax: "key unix-time-seconds [NX | XX | GT | LT]",
        handler: expireat,
        ..BASE
    },
    Command {
        name: "pexpireat",
        arity: -3,
        flags: f::WF,
        keys: Keys::ONE,
        since: "2.6.0",
        summary: "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
        syntax: "key unix-time-milliseconds [NX | XX | GT | LT]",
        handler: pexpireat,
        ..BASE
    },
    Command {
        name: "ttl",
        arity: 2,
        flags: f::RF,
        keys: Keys::ONE,
        summary: "Get the time to live for a key in seconds",
        syntax: "key",
        handler: ttl,
        ..BASE
    },
    Command {
        name: "pttl",
        arity: 2,
        flags: f::RF,
        keys: Keys::ONE,
        since: "2.6.0",
        summary: "Get the time to live for a key in milliseconds",
        syntax: "key",
        handler: pttl,
        ..BASE
    },
    Command {
        name: "expiretime",
        arity: 2,
        flags: f::RF,
        keys: Keys::ONE,
        since: "7.0.0",
        summary: "Get the expiration Unix timestamp for a key",
        syntax: "key",
        handler: expiretime,
        ..BASE
    },
    Command {
        name: "pexpiretime",
        arity: 2,
        flags: f::RF,
        keys: Keys::ONE,
        since: "7.0.0",
        summary: "Get the expiration Unix timestamp for a key in milliseconds",
        syntax: "key",
        handler: pexpiretime,
        ..BASE
    },
    Command {
        name: "persist",
        arity: 2,
        flags: f::WF,
        keys: Keys::ONE,
        since: "2.2.0",
        summary: "Remove the expiration from a key",
        syntax: "key",
        handler: persist,
        ..BASE
    },
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
    let mut db = ctx.db();
    let Some(e) = db.write(key) else { return Frame::Integer(0) };
    let current = e.expire_at().map(|d| i64::try_from(d).unwrap_or(i64::MAX));
    let refused = (cond.nx && current.is_some())
        || (cond.xx && current.is_none())
        // No TTL counts as infinite: GT never beats it, LT always does.
        || (cond.gt && current.is_none_or(|c| deadline <= c))
        || (cond.lt && current.is_some_and(|c| deadline >= c));
    if refused {
        return Frame::Integer(0);
    }
    if deadline <= now {
        db.remove(key);
    } else {
        db.set_expire(key, deadline as u64);
    }
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
    let Some(at) = ctx.db().read_notouch(key).map(|e| e.expire_at()) else { return Frame::Integer(-2) };
    let Some(d) = at else { return Frame::Integer(-1) };
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
        Some(e) if e.expire_at().is_some() => {
            db.set_expire(key, 0);
            Frame::Integer(1)
        }
        _ => Frame::Integer(0),
    }
}
