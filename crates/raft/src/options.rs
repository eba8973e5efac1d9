//! The consensus options: `raft-id`, `raft-port`, `raft-peers` (config directives and
//! `--name value` arguments alike, through the engine's configuration rows).

use crate::types::NodeId;
use std::collections::BTreeMap;

/// A node's view of its group, as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// This node's id (`raft-id`, 1 or more).
    pub id: NodeId,
    /// The port this node's raft transport listens on (`raft-port`).
    pub port: u16,
    /// Every member (this node included): id to `host:port` of its raft transport (`raft-peers`).
    pub peers: BTreeMap<NodeId, String>,
    /// The directory holding the log, the vote and snapshots (`dir`).
    pub dir: std::path::PathBuf,
    /// Entries between two snapshots (`raft-snapshot-every`); older entries are then purged.
    pub snapshot_every: u64,
    /// Joins a running group (`raft-join yes`): the node does not initialize a group of its own
    /// and waits to be added (`CLUSTER MEET` sent to the group's leader).
    pub join: bool,
}

impl Options {
    /// Reads the options from the configuration's values; None when `raft-id` is 0 (consensus
    /// mode off), an error when they are inconsistent.
    pub fn from_values(id: i64, port: i64, peers: &str, dir: std::path::PathBuf) -> Result<Option<Options>, String> {
        if id == 0 {
            if !peers.is_empty() || port != 0 {
                return Err("raft-port and raft-peers need raft-id".into());
            }
            return Ok(None);
        }
        let peers = parse_peers(peers)?;
        let id = id as NodeId;
        let Some(own) = peers.get(&id) else {
            return Err(format!("raft-peers does not list this node's raft-id {id}"));
        };
        let own_port = own.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok());
        let port = match (port, own_port) {
            (0, Some(p)) => p,
            (p, Some(q)) if p as u16 == q => q,
            (p, _) => return Err(format!("raft-port {p} is not the port raft-peers gives node {id} ({own})")),
        };
        Ok(Some(Options { id, port, peers, dir, snapshot_every: 10_000, join: false }))
    }

    /// The host part of this node's own raft address: the host clients reach it on too.
    pub fn own_host(&self) -> &str {
        self.peers.get(&self.id).and_then(|a| a.rsplit_once(':')).map_or("127.0.0.1", |(h, _)| h)
    }
}

/// Parses `1=127.0.0.1:7001,2=127.0.0.1:7002`.
pub fn parse_peers(text: &str) -> Result<BTreeMap<NodeId, String>, String> {
    let mut peers = BTreeMap::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("invalid raft-peers entry '{part}' (expected id=host:port)");
        let (id, addr) = part.split_once('=').ok_or_else(bad)?;
        let id: NodeId = id.trim().parse().map_err(|_| bad())?;
        let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
        if id == 0 || host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
            return Err(bad());
        }
        if peers.insert(id, addr.trim().to_string()).is_some() {
            return Err(format!("raft-peers names node {id} twice"));
        }
    }
    if peers.is_empty() {
        return Err("raft-peers is empty".into());
    }
    Ok(peers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_and_own_port_is_checked() {
        let p = parse_peers("1=127.0.0.1:7001, 2=127.0.0.1:7002,3=127.0.0.1:7003").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[&2], "127.0.0.1:7002");
        assert!(parse_peers("1=127.0.0.1").is_err());
        assert!(parse_peers("x=127.0.0.1:1").is_err());
        assert!(parse_peers("1=a:1,1=b:2").is_err());
        assert!(parse_peers("0=a:1").is_err());
        let dir = std::path::PathBuf::from(".");
        let o = Options::from_values(2, 0, "1=127.0.0.1:7001,2=127.0.0.1:7002", dir.clone()).unwrap().unwrap();
        assert_eq!((o.id, o.port, o.own_host()), (2, 7002, "127.0.0.1"));
        assert!(Options::from_values(2, 7005, "1=127.0.0.1:7001,2=127.0.0.1:7002", dir.clone()).is_err());
        assert!(Options::from_values(4, 0, "1=127.0.0.1:7001", dir.clone()).is_err());
        assert_eq!(Options::from_values(0, 0, "", dir.clone()).unwrap(), None);
        assert!(Options::from_values(0, 0, "1=127.0.0.1:7001", dir).is_err());
    }
}
