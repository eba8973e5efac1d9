//! The list family.

use crate::command::Command;

/// Table entries.
pub static COMMANDS: &[Command] = &[];
