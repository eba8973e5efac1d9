//! A consensus group of real `latch-server` processes on 127.0.0.1 (docs/consensus.md), for
//! tests/consensus.rs and tests/faults.rs: start, `kill -9`, restart, find the leader, talk to a
//! node over one connection per command.

use super::{TempDir, free_port};
use bytes::BytesMut;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a group may take to elect a leader, fail over or catch up on this 2-core machine.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// One node: its ports, how it reaches its peers, its directory, its process while it runs.
pub struct Node {
    pub id: u64,
    pub port: u16,
    pub raft_port: u16,
    /// Its `raft-peers`: its own raft address, and the route it takes to each other member.
    pub peers: String,
    /// Environment it runs with (e.g. libfaketime's).
    pub env: Vec<(String, String)>,
    pub dir: TempDir,
    pub child: Option<Child>,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Node {
    /// Starts (or restarts) the node, and waits for "Ready". Node 3 reads its consensus options
    /// from a config file, the others from arguments: the same names work both ways.
    pub fn start(&mut self, extra: &[&str]) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_latch-server"));
        if self.id == 3 {
            let conf = self.dir.0.join("latch.conf");
            let text = format!("raft-id {}\nraft-port {}\nraft-peers {}\n", self.id, self.raft_port, self.peers);
            std::fs::write(&conf, text).expect("config file");
            cmd.arg(conf);
        } else {
            cmd.args(["--raft-id", &self.id.to_string(), "--raft-port", &self.raft_port.to_string()]);
            cmd.args(["--raft-peers", &self.peers]);
        }
        let mut child = cmd
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--save", ""])
            .args(["--dir", self.dir.path()])
            .args(extra)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&self.dir.0)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn latch-server");
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + DEADLINE;
        let mut log = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.contains("Ready to accept connections") => break,
                Ok(line) => {
                    log.push_str(&line);
                    log.push('\n');
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("node {} did not start; log:\n{log}", self.id);
                }
            }
        }
        // Keep draining the log so the server never blocks on a full pipe.
        std::thread::spawn(move || while rx.recv().is_ok() {});
        self.child = Some(child);
    }

    /// `kill -9` (SIGKILL) of the node's process, which this test started.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// Sends `signal` (e.g. "STOP", "CONT") to the node's process, which this test started.
    pub fn signal(&self, signal: &str) {
        if let Some(c) = &self.child {
            let ok = Command::new("kill").args([&format!("-{signal}"), &c.id().to_string()]).status();
            assert!(ok.is_ok_and(|s| s.success()), "kill -{signal} node {}", self.id);
        }
    }
}

/// A group of nodes on free loopback ports, each with a directory of its own.
pub struct Group {
    pub nodes: Vec<Node>,
    pub extra: Vec<&'static str>,
}

impl Group {
    /// Three nodes reaching each other directly.
    pub fn start(name: &str) -> Group {
        Group::start_with(name, &[])
    }

    /// Three nodes whose processes get `extra` arguments.
    pub fn start_with(name: &str, extra: &[&'static str]) -> Group {
        Group::build(name, 3, extra, |_, _, port| port, |_| Vec::new())
    }

    /// `n` nodes, not started yet: node `from` reaches node `to`'s raft port `port` at
    /// `route(from, to, port)`, and runs with `env(id)`.
    pub fn build(
        name: &str,
        n: u64,
        extra: &[&'static str],
        route: impl Fn(u64, u64, u16) -> u16,
        env: impl Fn(u64) -> Vec<(String, String)>,
    ) -> Group {
        let ids: Vec<(u64, u16, u16)> = (1..=n).map(|id| (id, free_port(), free_port())).collect();
        let nodes = ids
            .iter()
            .map(|&(id, port, raft_port)| {
                let peers = ids
                    .iter()
                    .map(|&(to, _, rp)| format!("{to}=127.0.0.1:{}", if to == id { rp } else { route(id, to, rp) }))
                    .collect::<Vec<_>>()
                    .join(",");
                Node {
                    id,
                    port,
                    raft_port,
                    peers,
                    env: env(id),
                    dir: TempDir::new(&format!("consensus-{name}-{id}")),
                    child: None,
                }
            })
            .collect();
        let mut g = Group { nodes, extra: extra.to_vec() };
        for id in 1..=n {
            g.restart(id);
        }
        g
    }

    pub fn node(&mut self, id: u64) -> &mut Node {
        self.nodes.iter_mut().find(|n| n.id == id).expect("node")
    }

    /// Starts node `id` (again, from its directory).
    pub fn restart(&mut self, id: u64) {
        let extra = self.extra.clone();
        self.node(id).start(&extra);
    }

    /// Waits until every running node names the same leader, which says it leads; returns it.
    pub fn leader(&self) -> u64 {
        self.leader_within(DEADLINE).unwrap_or_else(|| panic!("no agreed leader within {DEADLINE:?}"))
    }

    /// [`Group::leader`], or None if the nodes agree on none within `wait`.
    pub fn leader_within(&self, wait: Duration) -> Option<u64> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(l) = self.agreed_leader() {
                return Some(l);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The leader every running node names, if they agree and it says it leads.
    pub fn agreed_leader(&self) -> Option<u64> {
        let views: Vec<(u64, Option<Info>)> =
            self.nodes.iter().filter(|n| n.running()).map(|n| (n.id, info(n.port))).collect();
        let leaders: Vec<Option<u64>> =
            views.iter().map(|(_, i)| i.as_ref().and_then(|i| i.get("consensus_leader")?.parse().ok())).collect();
        let l = (*leaders.first()?)?;
        let leads = views.iter().any(|(id, i)| {
            *id == l && i.as_ref().and_then(|i| i.get("consensus_role")).map(String::as_str) == Some("leader")
        });
        (leaders.iter().all(|x| *x == Some(l)) && leads).then_some(l)
    }

    pub fn port(&self, id: u64) -> u16 {
        self.nodes.iter().find(|n| n.id == id).expect("node").port
    }
}

pub type Info = std::collections::BTreeMap<String, String>;

/// `INFO consensus` of the node on `port` as fields, or None if it does not answer.
pub fn info(port: u16) -> Option<Info> {
    let reply = call(port, &["INFO", "consensus"])?;
    let text = reply.split_once("\r\n")?.1;
    Some(
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_string(), v.trim_end().to_string()))
            .collect(),
    )
}

/// Sends one command to 127.0.0.1:`port` on a fresh connection and returns the reply's bytes as
/// text, or None when the node cannot be reached.
pub fn call(port: u16, args: &[&str]) -> Option<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(15))).ok()?;
    s.write_all(&super::encode(args)).ok()?;
    let reply = super::read_reply(&mut s, &mut BytesMut::new())?;
    Some(String::from_utf8_lossy(&reply).into_owned())
}
