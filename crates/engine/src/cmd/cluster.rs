//! CLUSTER, READONLY, READWRITE and ASKING: Latch has no cluster mode, so every one of them answers
//! as a Redis started with `cluster-enabled no` does (`ERR This instance has cluster support
//! disabled`). The table entries carry Redis's metadata so `COMMAND`, arity checks and the script
//! rules (`CLUSTER RESET` is `noscript`) behave the same.

use super::BASE;
use crate::command::{Command, Ctx, Flags};
use resp::Frame;

/// Table entries.
pub static COMMANDS: &[Command] = &[
    Command {
        name: "cluster",
        arity: -2,
        flags: Flags(0),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "A container for cluster commands",
        complexity: "Depends on subcommand.",
        subcommands: SUBCOMMANDS,
        ..BASE
    },
    Command {
        name: "readonly",
        arity: 1,
        flags: Flags::FAST.or(Flags::LOADING).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Enables read queries for a connection to a cluster replica node",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "readwrite",
        arity: 1,
        flags: Flags::FAST.or(Flags::LOADING).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Disables read queries for a connection to a cluster replica node",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "asking",
        arity: 1,
        flags: Flags::FAST,
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Sent by cluster clients after an -ASK redirect",
        complexity: "O(1)",
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
        since: "3.0.0",
        summary: "Assign new hash slots to receiving node",
        complexity: "O(N) where N is the total number of hash slot arguments",
        syntax: "slot [slot ...]",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|addslotsrange",
        arity: -4,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "7.0.0",
        summary: "Assign new hash slots to receiving node",
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        syntax: "start-slot end-slot [start-slot end-slot ...]",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|bumpepoch",
        arity: 2,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Advance the cluster config epoch",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|count-failure-reports",
        arity: 3,
        flags: Flags::ADMIN.or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Return the number of failure reports active for a given node",
        complexity: "O(N) where N is the number of failure reports",
        syntax: "node-id",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|countkeysinslot",
        arity: 3,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Return the number of local keys in the specified hash slot",
        complexity: "O(1)",
        syntax: "slot",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|delslots",
        arity: -3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Set hash slots as unbound in receiving node",
        complexity: "O(N) where N is the total number of hash slot arguments",
        syntax: "slot [slot ...]",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|delslotsrange",
        arity: -4,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "7.0.0",
        summary: "Set hash slots as unbound in receiving node",
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        syntax: "start-slot end-slot [start-slot end-slot ...]",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|failover",
        arity: -2,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Forces a replica to perform a manual failover of its master.",
        complexity: "O(1)",
        syntax: "[FORCE | TAKEOVER]",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|flushslots",
        arity: 2,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Delete a node's own slots information",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|forget",
        arity: 3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Remove a node from the nodes table",
        complexity: "O(1)",
        syntax: "node-id",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|getkeysinslot",
        arity: 4,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Return local key names in the specified hash slot",
        complexity: "O(log(N)) where N is the number of requested keys",
        syntax: "slot count",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|help",
        arity: 2,
        flags: Flags::LOADING.or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|info",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Provides info about Redis Cluster node state",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|keyslot",
        arity: 3,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Returns the hash slot of the specified key",
        complexity: "O(N) where N is the number of bytes in the key",
        syntax: "key",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|links",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        since: "7.0.0",
        summary: "Returns a list of all TCP links to and from peer nodes in cluster",
        complexity: "O(N) where N is the total number of Cluster nodes",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|meet",
        arity: -4,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Force a node cluster to handshake with another node",
        complexity: "O(1)",
        syntax: "ip port [cluster-bus-port]",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|myid",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Return the node id",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|nodes",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Get Cluster config for the node",
        complexity: "O(N) where N is the total number of Cluster nodes",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|replicas",
        arity: 3,
        flags: Flags::ADMIN.or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "5.0.0",
        summary: "List replica nodes of the specified master node",
        complexity: "O(1)",
        syntax: "node-id",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|replicate",
        arity: 3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Reconfigure a node as a replica of the specified master node",
        complexity: "O(1)",
        syntax: "node-id",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|reset",
        arity: -2,
        flags: Flags::ADMIN.or(Flags::STALE).or(Flags::NOSCRIPT),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Reset a Redis Cluster node",
        complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
        syntax: "[HARD | SOFT]",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|saveconfig",
        arity: 2,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Forces the node to save cluster state on disk",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|set-config-epoch",
        arity: 3,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Set the configuration epoch in a new node",
        complexity: "O(1)",
        syntax: "config-epoch",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|setslot",
        arity: -4,
        flags: Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Bind a hash slot to a specific node",
        complexity: "O(1)",
        syntax: "slot IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|shards",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        since: "7.0.0",
        summary: "Get array of cluster slots to node mappings",
        complexity: "O(N) where N is the total number of cluster nodes",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|slaves",
        arity: 3,
        flags: Flags::ADMIN.or(Flags::STALE),
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "List replica nodes of the specified master node",
        complexity: "O(1)",
        syntax: "node-id",
        handler: cluster_disabled,
        ..BASE
    },
    Command {
        name: "cluster|slots",
        arity: 2,
        flags: Flags::STALE,
        group: crate::command::Group::Cluster,
        since: "3.0.0",
        summary: "Get array of Cluster slot to node mappings",
        complexity: "O(N) where N is the total number of Cluster nodes",
        handler: cluster_disabled,
        ..BASE
    },
];

fn cluster_disabled(_ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::error("ERR This instance has cluster support disabled")
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    #[test]
    fn every_cluster_command_reports_cluster_mode_disabled() {
        TestServer::new().transcript(
            r#"
            > CLUSTER INFO
            -ERR This instance has cluster support disabled
            > CLUSTER HELP
            -ERR This instance has cluster support disabled
            > CLUSTER KEYSLOT foo
            -ERR This instance has cluster support disabled
            > CLUSTER KEYSLOT
            -ERR wrong number of arguments for 'cluster|keyslot' command
            > CLUSTER FOO
            -ERR unknown subcommand 'FOO'. Try CLUSTER HELP.
            > CLUSTER
            -ERR wrong number of arguments for 'cluster' command
            > READONLY
            -ERR This instance has cluster support disabled
            > READWRITE
            -ERR This instance has cluster support disabled
            > ASKING
            -ERR This instance has cluster support disabled
            > EVAL "return redis.pcall('cluster','reset')" 0
            -ERR This Redis command is not allowed from script
            > EVAL "return redis.pcall('cluster','info')" 0
            -ERR This instance has cluster support disabled
            > EVAL "return redis.pcall('blpop','x',0)" 0
            -ERR This Redis command is not allowed from script
            "#,
        );
    }
}
