//! CLUSTER, READONLY, READWRITE and ASKING: Latch has no cluster mode, so every one of them answers
//! as a Redis started with `cluster-enabled no` does (`ERR This instance has cluster support
//! disabled`). The table entries carry Redis's metadata so `COMMAND`, arity checks and the script
//! rules (`CLUSTER RESET` is `noscript`) behave the same.

use super::base::BASE;
use crate::command::Flags;
use crate::ctx::{Command, Ctx};
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "cluster",
        arity: -2,
        flags: Flags(0),
        group: crate::command::Group::Cluster,
        subcommands: SUBCOMMANDS,
        ..BASE
    },
    Command {
        name: "readonly",
        arity: 1,
        flags: Flags::FAST.or(Flags::LOADING).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "readwrite",
        arity: 1,
        flags: Flags::FAST.or(Flags::LOADING).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "asking",
        arity: 1,
        flags: Flags::FAST,
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
];

static SUBCOMMANDS: &[Command] = &[
    Command {
        name: "cluster|addslots",
        arity: -3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|addslotsrange",
        arity: -4,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|bumpepoch",
        arity: 2,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|count-failure-reports",
        arity: 3,
        flags: Flags::ADMIN.or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|countkeysinslot",
        arity: 3,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|delslots",
        arity: -3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|delslotsrange",
        arity: -4,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|failover",
        arity: -2,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|flushslots",
        arity: 2,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|forget",
        arity: 3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|getkeysinslot",
        arity: 4,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|help",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|info",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|keyslot",
        arity: 3,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|links",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|meet",
        arity: -4,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|myid",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|nodes",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|replicas",
        arity: 3,
        flags: Flags::ADMIN.or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|replicate",
        arity: 3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|reset",
        arity: -2,
        flags: Flags::ADMIN.or(Flags::STALE).or(Flags::NOSCRIPT),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|saveconfig",
        arity: 2,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|set-config-epoch",
        arity: 3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|setslot",
        arity: -4,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|shards",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|slaves",
        arity: 3,
        flags: Flags::ADMIN.or(Flags::STALE),
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|slots",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        handler: cluster_disabled,
        ..BASE
    },
];

fn cluster_disabled(_ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::error("ERR This instance has cluster support disabled")
}
