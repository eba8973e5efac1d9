//! Connection commands: PING, ECHO, QUIT, SELECT...

use super::{BASE, f};
use crate::command::{Command, Ctx, Flags};
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "ping",
        arity: -1,
        flags: Flags::FAST,
        group: "connection",
        summary: "Returns the server's liveliness response.",
        syntax: "[message]",
        handler: ping,
        ..BASE
    },
    Command {
        name: "echo",
        arity: 2,
        flags: Flags::FAST,
        group: "connection",
        summary: "Returns the given string.",
        syntax: "message",
        handler: echo,
        ..BASE
    },
    Command {
        name: "quit",
        arity: -1,
        flags: Flags::ALLOW_BUSY.or(Flags::NO_AUTH).or(Flags::FAST),
        group: "connection",
        summary: "Closes the connection.",
        handler: quit,
        ..BASE
    },
    Command {
        name: "select",
        arity: 2,
        flags: f::FAST.or(Flags::LOADING).or(Flags::STALE),
        group: "connection",
        summary: "Changes the selected database.",
        syntax: "index",
        handler: select,
        ..BASE
    },
];

fn ping(ctx: &mut Ctx<'_, '_>) -> Frame {
    match ctx.argc() {
        1 => Frame::simple("PONG"),
        2 => Frame::bulk(ctx.args[1].clone()),
        _ => crate::error::wrong_arity("ping"),
    }
}

fn echo(ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::bulk(ctx.args[1].clone())
}

fn quit(ctx: &mut Ctx<'_, '_>) -> Frame {
    ctx.client.close_after_reply = true;
    Frame::ok()
}

fn select(ctx: &mut Ctx<'_, '_>) -> Frame {
    let Ok(i) = ctx.int_arg(1) else { return crate::error::not_integer() };
    if i < 0 || i as usize >= ctx.srv.ks.ndbs() {
        return crate::error::db_out_of_range();
    }
    ctx.client.db = i as usize;
    Frame::ok()
}
