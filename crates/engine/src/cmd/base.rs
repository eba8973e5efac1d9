//! What every family's table rows share: the defaults of an entry and the flag shorthands.

use crate::command::{Flags, Keys};
use crate::ctx::{Command, container_handler};

/// Defaults for table entries: `Command { name: "get", ..., ..BASE }`.
pub const BASE: Command = Command {
    name: "",
    arity: 0,
    flags: Flags(0),
    keys: Keys::None,
    group: crate::command::Group::Generic,
    since: "1.0.0",
    summary: "",
    complexity: "O(1)",
    syntax: "",
    handler: container_handler,
    subcommands: &[],
    serve: None,
    ready: None,
    all_shards_if: None,
    id: Command::NO_ID,
};

/// Flag shorthands for tables.
pub mod f {
    use crate::command::Flags;
    /// write
    pub const W: Flags = Flags::WRITE;
    /// readonly
    pub const R: Flags = Flags::READONLY;
    /// fast
    pub const FAST: Flags = Flags::FAST;
    /// denyoom
    pub const DENYOOM: Flags = Flags::DENYOOM;
    /// write denyoom
    pub const WD: Flags = Flags::WRITE.or(Flags::DENYOOM);
    /// write denyoom fast
    pub const WDF: Flags = Flags::WRITE.or(Flags::DENYOOM).or(Flags::FAST);
    /// write fast
    pub const WF: Flags = Flags::WRITE.or(Flags::FAST);
    /// readonly fast
    pub const RF: Flags = Flags::READONLY.or(Flags::FAST);
}
