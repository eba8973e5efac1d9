//! The string family.

use super::{BASE, f};
use crate::command::{Command, Ctx, Keys};
use crate::value::Value;
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "get",
        arity: 2,
        flags: f::RF,
        keys: Keys::ONE,
        group: "string",
        summary: "Returns the string value of a key.",
        syntax: "key",
        handler: get,
        ..BASE
    },
    Command {
        name: "set",
        arity: -3,
        flags: f::WD,
        keys: Keys::ONE,
        group: "string",
        summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
        syntax: "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]",
        handler: set,
        ..BASE
    },
];

fn get(ctx: &mut Ctx<'_, '_>) -> Frame {
    let key = ctx.arg(1);
    match ctx.db().read_string(key) {
        Ok(Some(v)) => Frame::Bulk(bytes::Bytes::copy_from_slice(&v.as_bytes().unwrap_or_default())),
        Ok(None) => Frame::Null,
        Err(e) => e,
    }
}

fn set(ctx: &mut Ctx<'_, '_>) -> Frame {
    let (key, val) = (ctx.arg(1), ctx.arg(2));
    ctx.db().set(key, Value::string(val), false);
    Frame::ok()
}
