//! Scripting and functions. Lua is not embedded yet, so no function library can exist: FUNCTION
//! FLUSH is exact (there is nothing to delete), and the other subcommands are unknown until the
//! scripting engine lands.

use super::BASE;
use crate::args::eq_ic;
use crate::command::{Command, Ctx, Flags, container_handler};
use resp::Frame;

static FUNCTION_SUBCOMMANDS: &[Command] = &[Command {
    name: "function|flush",
    arity: -2,
    flags: Flags::WRITE.or(Flags::NOSCRIPT),
    group: "scripting",
    since: "7.0.0",
    summary: "Deletes all libraries and functions.",
    complexity: "O(N) where N is the number of functions deleted",
    syntax: "[ASYNC | SYNC]",
    handler: function_flush,
    ..BASE
}];

/// Table entries.
pub static COMMANDS: &[Command] = &[Command {
    name: "function",
    arity: -2,
    group: "scripting",
    since: "7.0.0",
    summary: "A container for function commands.",
    complexity: "Depends on subcommand.",
    handler: container_handler,
    subcommands: FUNCTION_SUBCOMMANDS,
    ..BASE
}];

fn function_flush(ctx: &mut Ctx<'_, '_>) -> Frame {
    match ctx.argc() {
        2 => Frame::ok(),
        3 if eq_ic(ctx.arg(2), "async") || eq_ic(ctx.arg(2), "sync") => Frame::ok(),
        3 => Frame::error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"),
        // Redis's addReplySubcommandSyntaxError.
        _ => Frame::error("ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP."),
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    #[test]
    fn function_flush() {
        TestServer::new().transcript(
            r#"
            > FUNCTION FLUSH
            +OK
            > function flush async
            +OK
            > FUNCTION FLUSH now
            -ERR FUNCTION FLUSH only supports SYNC|ASYNC option
            > FUNCTION FLUSH a b
            -ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.
            "#,
        );
    }
}
