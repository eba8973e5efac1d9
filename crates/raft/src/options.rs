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
    /// Milliseconds between a leader's heartbeats (`raft-heartbeat-interval`).
    pub heartbeat_ms: u64,
    /// Milliseconds a follower waits for a heartbeat before it stands for election
    /// (`raft-election-timeout`): each wait is drawn between this and twice this.
    pub election_ms: u64,
}

/// An election timeout shorter than this many heartbeats is refused: a heartbeat or two delayed
/// would start an election (etcd's rule too).
pub const MIN_HEARTBEATS_PER_ELECTION: u64 = 5;

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
        Ok(Some(Options {
            id,
            port,
            peers,
            dir,
            snapshot_every: 10_000,
            join: false,
            heartbeat_ms: 100,
            election_ms: 600,
        }))
    }

    /// Sets the heartbeat interval and the election timeout (milliseconds), refusing an election
    /// timeout under [`MIN_HEARTBEATS_PER_ELECTION`] heartbeats.
    pub fn with_timing(mut self, heartbeat_ms: u64, election_ms: u64) -> Result<Options, String> {
        if election_ms < heartbeat_ms.saturating_mul(MIN_HEARTBEATS_PER_ELECTION) {
            return Err(format!(
                "raft-election-timeout {election_ms} should be at least {MIN_HEARTBEATS_PER_ELECTION} times raft-heartbeat-interval {heartbeat_ms}"
            ));
        }
        self.heartbeat_ms = heartbeat_ms;
        self.election_ms = election_ms;
        Ok(self)
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

    #[test]
    fn an_election_timeout_spans_at_least_five_heartbeats() {
        let dir = std::path::PathBuf::from(".");
        let o = Options::from_values(1, 0, "1=127.0.0.1:7001", dir).unwrap().unwrap();
        assert_eq!((o.heartbeat_ms, o.election_ms), (100, 600), "the defaults");
        let o = o.with_timing(200, 1000).unwrap();
        assert_eq!((o.heartbeat_ms, o.election_ms), (200, 1000));
        let e = o.clone().with_timing(200, 999).unwrap_err();
        assert_eq!(e, "raft-election-timeout 999 should be at least 5 times raft-heartbeat-interval 200");
        assert!(o.with_timing(u64::MAX, u64::MAX).is_ok(), "no overflow");
    }
}
