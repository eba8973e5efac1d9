//! Error replies, byte for byte as Redis 7 sends them. Handlers build errors only from here, so a
//! wording fix happens in one place.

use resp::Frame;

/// `-ERR syntax error`
pub fn syntax() -> Frame {
    Frame::error("ERR syntax error")
}
/// `-WRONGTYPE ...`
pub fn wrong_type() -> Frame {
    Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value")
}
/// Integer argument that does not parse or is out of range.
pub fn not_integer() -> Frame {
    Frame::error("ERR value is not an integer or out of range")
}
/// Float argument that does not parse.
pub fn not_float() -> Frame {
    Frame::error("ERR value is not a valid float")
}
/// INCR family overflow.
pub fn overflow() -> Frame {
    Frame::error("ERR increment or decrement would overflow")
}
/// SELECT / MOVE / COPY with a bad database.
pub fn db_out_of_range() -> Frame {
    Frame::error("ERR DB index is out of range")
}
/// RENAME and friends on a missing key.
pub fn no_such_key() -> Frame {
    Frame::error("ERR no such key")
}
/// Expire arithmetic that overflows or a non-positive time for SET EX/SETEX.
pub fn invalid_expire(cmd: &str) -> Frame {
    Frame::error(format!("ERR invalid expire time in '{cmd}' command"))
}
/// Strings may not grow beyond proto-max-bulk-len.
pub fn string_too_long() -> Frame {
    Frame::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
}
/// Arity mismatch; `name` is the command's name as the client typed it, lowercased as Redis does.
pub fn wrong_arity(name: &str) -> Frame {
    Frame::error(format!("ERR wrong number of arguments for '{name}' command"))
}
/// A value that must be a positive/non-negative number.
pub fn out_of_range(what: &str) -> Frame {
    Frame::error(format!("ERR {what} is out of range"))
}
/// Unknown subcommand of a container command.
pub fn unknown_subcommand(sub: &[u8], cmd: &str) -> Frame {
    Frame::error(format!("ERR unknown subcommand '{}'. Try {} HELP.", trunc(sub, 128), cmd.to_ascii_uppercase()))
}
/// Unknown command, with Redis's preview of the first arguments.
pub fn unknown_command(args: &[bytes::Bytes]) -> Frame {
    let mut msg = format!("ERR unknown command '{}', with args beginning with: ", trunc(&args[0], 128));
    for a in args.iter().skip(1) {
        if msg.len() >= 128 {
            break;
        }
        let room = 128usize.saturating_sub(msg.len());
        msg.push('\'');
        msg.push_str(&trunc(a, room));
        msg.push_str("' ");
    }
    Frame::error(msg)
}
/// NOAUTH before AUTH when requirepass is set.
pub fn noauth() -> Frame {
    Frame::error("NOAUTH Authentication required.")
}

/// Lossy, length-limited rendering of client bytes inside an error message; CR/LF become spaces so
/// the reply stays one line.
pub fn trunc(b: &[u8], max: usize) -> String {
    let b = &b[..b.len().min(max)];
    String::from_utf8_lossy(b).replace(['\r', '\n'], " ")
}
/// MOVE / COPY onto the same key in the same database.
pub fn same_object() -> Frame {
    Frame::error("ERR source and destination objects are the same")
}
/// Redis's `getRangeLongFromObjectOrReply` without a custom message (e.g. an `int` argument such as
/// a database index that parses but does not fit in 32 bits).
pub fn value_range(min: i64, max: i64) -> Frame {
    Frame::error(format!("ERR value is out of range, value must between {min} and {max}"))
}

/// Redis's `-MASTERDOWN`, with `replica-serve-stale-data no` while the link is down.
pub const MASTERDOWN: &str = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// A write refused because `min-replicas-to-write` good replicas are not connected.
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
/// Writes refused after a failed background save (`stop-writes-on-bgsave-error`).
pub const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// Redis's `shared.oomerr`: a command that may grow memory, refused while used memory is over
/// `maxmemory` and nothing can be evicted.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// `-BUSY` while an EVAL script runs.
pub const BUSY_EVAL: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// `-BUSY` while a function runs.
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
/// A HyperLogLog command on a string that is not one (Redis's `isHLLObjectOrReply`).
pub fn not_hll() -> Frame {
    Frame::error("WRONGTYPE Key is not a valid HyperLogLog string value.")
}
/// A HyperLogLog whose registers do not decode.
pub fn corrupt_hll() -> Frame {
    Frame::error("INVALIDOBJ Corrupted HLL object detected")
}
