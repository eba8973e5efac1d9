//! Fault injection against a consensus group, in the manner of Jepsen (docs/consensus.md, "Fault
//! injection"). Real `latch-server` nodes on 127.0.0.1 reach each other only through a proxy on
//! every directed link, which this test cuts and heals. Clients take a lock (`LOCK`, half of them
//! waiting in the group's replicated queue with `LOCK ... WAIT`), increment a
//! counter through `FENCED` with the grant's token, and release (`UNLOCK`), while a nemesis kills
//! nodes with SIGKILL, pauses them with SIGSTOP past the lock's TTL, partitions the group (a node
//! isolated, the leader isolated, a minority from a majority, a bridge) and jumps nodes' wall
//! clocks (libfaketime, when installed). Afterwards the history is checked:
//!
//! - every increment that passed `FENCED` did so under a token at least as high as every
//!   increment before it (the counter's value orders them): never two holders writing at once;
//! - a grant that completed before another began has the lower token, and distinct owners never
//!   share a token;
//! - no acknowledged increment is lost: acknowledged <= final counter <= acknowledged + those
//!   whose outcome is unknown (a reply lost in a fault), and no two acknowledgements carry the
//!   same value;
//! - after a fault is healed, a grant completes within two election timeouts plus the lock's TTL
//!   (a holder cut off by the fault may have to be waited out);
//! - at the end every node holds the counter the leader holds (`DEBUG DIGEST-VALUE`).
//!
//! Beside them a queue runs through the same faults: a producer pushes numbered elements
//! (`RPUSH`) and two consumers wait for them with `BLPOP` (a blocked client waits on the leader and
//! is served through the log, docs/consensus.md, "Blocking commands"). Checked at the end, with the
//! list's remaining elements: no element is delivered twice or both delivered and still queued,
//! none comes from nowhere (every element delivered or left was pushed), and no acknowledged push
//! is lost beyond the pops whose outcome is unknown (a pop applied whose reply a fault lost takes
//! its element with it, as in Redis when a client dies after its pop).
//!
//! `cargo test` runs the short form (3 nodes, about 25 s of faults, every kind at least once).
//! `scripts/fault-test.sh` runs it for as long as asked with 3 and 5 nodes:
//! `LATCH_FAULT_SECS` (seconds of faults), `LATCH_FAULT_NODES` (3 or 5), `LATCH_FAULT_SEED`,
//! `LATCH_FAULT_SNAPSHOT_EVERY` (the nodes' `raft-snapshot-every`, 300 by default: a snapshot and
//! a purge of the log every few seconds, so that compaction races replication, restarts and
//! snapshot installs under every fault).

mod common;

use bytes::BytesMut;
use common::group::{DEADLINE, Group, call};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The lock's TTL, in ms.
const TTL_MS: u64 = 1000;
/// The longest election timeout: twice `raft-election-timeout`, left at its default (600 ms).
const ELECTION_MS: u64 = 1200;
/// How long a client waits for a reply before taking its outcome as unknown.
const REPLY_TIMEOUT: Duration = Duration::from_secs(3);
/// Increments per grant.
const WRITES_PER_GRANT: usize = 3;
/// How long a waiting client's `LOCK ... WAIT` waits (under [`REPLY_TIMEOUT`]).
const WAIT_MS: &str = "1500";
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

// ---------------------------------------------------------------------------------------------
// The proxy: one listener per directed link between nodes.

/// One directed link: node `from` reaches node `to` through `port`.
struct Link {
    from: u64,
    to: u64,
    /// Cut: nothing passes; connections opened meanwhile are accepted and never answered.
    cut: AtomicBool,
    /// Bumped by every cut: forwarding connections of an older epoch close.
    epoch: AtomicU64,
}

struct Proxy {
    links: Vec<Arc<Link>>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    fn new() -> Proxy {
        Proxy { links: Vec::new(), stop: Arc::new(AtomicBool::new(false)) }
    }

    /// Starts a link from `from` to `to`'s raft port `target`; returns the port `from` uses.
    fn add(&mut self, from: u64, to: u64, target: u16) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy listener");
        let port = listener.local_addr().expect("addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let link = Arc::new(Link { from, to, cut: AtomicBool::new(false), epoch: AtomicU64::new(0) });
        self.links.push(link.clone());
        let stop = self.stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        let (link, stop) = (link.clone(), stop.clone());
                        std::thread::spawn(move || serve(client, target, &link, &stop));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        port
    }

    /// Cuts every link between a node of `a` and a node of `b`, both ways.
    fn cut(&self, a: &[u64], b: &[u64]) {
        for l in &self.links {
            if (a.contains(&l.from) && b.contains(&l.to)) || (b.contains(&l.from) && a.contains(&l.to)) {
                l.cut.store(true, Ordering::SeqCst);
                l.epoch.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    fn heal(&self) {
        for l in &self.links {
            l.cut.store(false, Ordering::SeqCst);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One connection through a link: forwarded both ways while the link is up and its epoch is the
/// one it started in; held unanswered if it arrived while the link was cut.
fn serve(client: TcpStream, target: u16, link: &Arc<Link>, stop: &Arc<AtomicBool>) {
    let live = || !link.cut.load(Ordering::SeqCst) && !stop.load(Ordering::Relaxed);
    if !live() {
        // A black hole: read and drop until the sender gives up.
        let _ = client.set_read_timeout(Some(Duration::from_millis(100)));
        let mut buf = [0u8; 65536];
        let mut c = &client;
        loop {
            match c.read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    }
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], target));
    let Ok(server) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else { return };
    let _ = server.set_nodelay(true);
    let _ = client.set_nodelay(true);
    let epoch = link.epoch.load(Ordering::SeqCst);
    let (c2, s2) = (client.try_clone().expect("clone"), server.try_clone().expect("clone"));
    let (l2, st2) = (link.clone(), stop.clone());
    let back = std::thread::spawn(move || pump(s2, c2, &l2, epoch, &st2));
    pump(client, server, link, epoch, stop);
    let _ = back.join();
}

/// Copies `from` to `to` until either closes or the link is cut; then closes both.
fn pump(mut from: TcpStream, mut to: TcpStream, link: &Link, epoch: u64, stop: &AtomicBool) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = [0u8; 65536];
    loop {
        if link.cut.load(Ordering::SeqCst) || link.epoch.load(Ordering::SeqCst) != epoch || stop.load(Ordering::Relaxed)
        {
            break;
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

// ---------------------------------------------------------------------------------------------
// Clients and their history.

/// What one client saw of one request.
enum Outcome {
    /// The reply.
    Reply(resp::Frame),
    /// No reply (timeout, closed connection): it may or may not have been applied.
    Unknown,
}

/// A client's connection to one node at a time, following `-MOVED` and moving on from nodes
/// that do not answer.
struct Client {
    ports: Vec<u16>,
    at: usize,
    conn: Option<(TcpStream, BytesMut)>,
}

impl Client {
    fn new(ports: Vec<u16>, at: usize) -> Client {
        Client { ports, at, conn: None }
    }

    fn next_node(&mut self) {
        self.conn = None;
        self.at = (self.at + 1) % self.ports.len();
    }

    /// Sends `args` to the current node: its reply, or Unknown (and the next node is tried next).
    fn send(&mut self, args: &[&str]) -> Outcome {
        if self.conn.is_none() {
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.ports[self.at]));
            match TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
                Ok(s) => {
                    let _ = s.set_read_timeout(Some(REPLY_TIMEOUT));
                    self.conn = Some((s, BytesMut::new()));
                }
                Err(_) => {
                    self.next_node();
                    // Nothing was sent: a definite failure, reported as a redirection.
                    return Outcome::Reply(resp::Frame::Error("CLUSTERDOWN unreachable".into()));
                }
            }
        }
        let (s, buf) = self.conn.as_mut().expect("connected");
        if s.write_all(&common::encode(args)).is_err() {
            self.next_node();
            return Outcome::Unknown;
        }
        loop {
            if let Ok(Some(f)) = resp::decode_reply(buf) {
                return Outcome::Reply(f);
            }
            let mut chunk = [0u8; 4096];
            match s.read(&mut chunk) {
                Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => {
                    self.next_node();
                    return Outcome::Unknown;
                }
            }
        }
    }

    /// Follows a `-MOVED slot host:port` to the node it names.
    fn follow(&mut self, err: &str) -> bool {
        let Some(port) = err.strip_prefix("MOVED ").and_then(|r| r.rsplit(':').next()?.parse::<u16>().ok()) else {
            return false;
        };
        if let Some(i) = self.ports.iter().position(|p| *p == port) {
            self.conn = None;
            self.at = i;
        }
        true
    }
}

/// A grant as the client saw it.
#[derive(Clone, Debug)]
struct Grant {
    owner: String,
    token: i64,
    /// When the owner's first attempt was sent (a retried attempt may have been the one applied).
    invoked: Instant,
    completed: Instant,
}

/// An increment acknowledged by the group.
#[derive(Clone, Debug)]
struct Incr {
    token: i64,
    value: i64,
    owner: String,
    /// The node that answered, and when (ms into the run).
    port: u16,
    at_ms: u64,
}

#[derive(Default)]
struct History {
    grants: Vec<Grant>,
    incrs: Vec<Incr>,
    /// Increments whose outcome is unknown.
    unknown_incrs: u64,
    /// Requests sent, all kinds.
    ops: u64,
    fenced_off: u64,
}

/// One client's loop until `stop`: lock, increment through FENCED, release.
fn client_loop(id: usize, ports: Vec<u16>, stop: Arc<AtomicBool>, history: Arc<Mutex<History>>, t0: Instant) {
    let mut c = Client::new(ports.clone(), id % ports.len());
    let mut rng = StdRng::seed_from_u64(id as u64);
    let ttl = TTL_MS.to_string();
    let mut cycle = 0u64;
    while !stop.load(Ordering::Relaxed) {
        cycle += 1;
        let owner = format!("c{id}-{cycle}");
        let invoked = Instant::now();
        // Acquire: retried with the same owner, so a grant whose reply was lost comes back with
        // its token (LOCK by the holder is re-entrant).
        let mut token = None;
        let mut ops = 0;
        // Odd clients wait in the group's replicated queue (a retry takes its place again); even
        // ones try and back off.
        let wait = id % 2 == 1;
        let lock: &[&str] =
            if wait { &["LOCK", "lk", &owner, &ttl, "WAIT", WAIT_MS] } else { &["LOCK", "lk", &owner, &ttl] };
        while token.is_none() && !stop.load(Ordering::Relaxed) {
            ops += 1;
            match c.send(lock) {
                Outcome::Reply(resp::Frame::Integer(t)) => token = Some(t),
                Outcome::Reply(resp::Frame::Error(e)) => {
                    if !c.follow(&String::from_utf8_lossy(&e)) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                Outcome::Reply(_) => std::thread::sleep(Duration::from_millis(rng.random_range(5..30))),
                Outcome::Unknown => {}
            }
            if invoked.elapsed() > Duration::from_secs(20) {
                break;
            }
        }
        let Some(token) = token else {
            history.lock().unwrap().ops += ops;
            continue;
        };
        let grant = Grant { owner: owner.clone(), token, invoked, completed: Instant::now() };
        let (t, mut incrs, mut unknown, mut fenced) = (token.to_string(), Vec::new(), 0, 0);
        'writes: for _ in 0..WRITES_PER_GRANT {
            loop {
                ops += 1;
                let port = c.ports[c.at];
                match c.send(&["FENCED", "lk", &t, "INCR", "counter"]) {
                    Outcome::Reply(resp::Frame::Integer(v)) => {
                        let at_ms = t0.elapsed().as_millis() as u64;
                        incrs.push(Incr { token, value: v, owner: owner.clone(), port, at_ms });
                        break;
                    }
                    Outcome::Reply(resp::Frame::Error(e)) => {
                        let e = String::from_utf8_lossy(&e).into_owned();
                        if e.starts_with("FENCED") {
                            fenced += 1;
                            break 'writes;
                        }
                        if c.follow(&e) {
                            continue;
                        }
                        if e.starts_with("CLUSTERDOWN unreachable") {
                            continue;
                        }
                        // Another error after the request reached a node (no leader, not
                        // committed in time): it may still be applied.
                        unknown += 1;
                        break 'writes;
                    }
                    Outcome::Reply(other) => panic!("FENCED INCR answered {other:?}"),
                    Outcome::Unknown => {
                        unknown += 1;
                        break 'writes;
                    }
                }
            }
        }
        // Release; the TTL frees the lock if this does not reach the group.
        for _ in 0..3 {
            ops += 1;
            match c.send(&["UNLOCK", "lk", &owner]) {
                Outcome::Reply(resp::Frame::Error(e)) if c.follow(&String::from_utf8_lossy(&e)) => continue,
                _ => break,
            }
        }
        let mut h = history.lock().unwrap();
        h.grants.push(grant);
        h.incrs.extend(incrs);
        h.unknown_incrs += unknown;
        h.fenced_off += fenced;
        h.ops += ops;
    }
}

/// The queue's history: what was pushed (acknowledged, or with an unknown outcome) and popped.
#[derive(Default)]
struct QueueHistory {
    acked: Vec<u64>,
    /// Pushes whose outcome is unknown (never sent again: each element is pushed at most once).
    unknown_pushes: Vec<u64>,
    delivered: Vec<u64>,
    /// Pops whose outcome is unknown: each may have taken an element whose reply was lost.
    unknown_pops: u64,
    ops: u64,
}

/// The queue's producer until `stop`: `RPUSH q <n>` for n = 1, 2, ..., one every few ms. A push
/// answered `-MOVED` (or never sent) is sent again; one whose outcome is unknown is not.
fn producer_loop(ports: Vec<u16>, stop: Arc<AtomicBool>, q: Arc<Mutex<QueueHistory>>) {
    let mut c = Client::new(ports, 0);
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let e = n.to_string();
        loop {
            q.lock().unwrap().ops += 1;
            match c.send(&["RPUSH", "q", &e]) {
                Outcome::Reply(resp::Frame::Integer(_)) => {
                    q.lock().unwrap().acked.push(n);
                    break;
                }
                Outcome::Reply(resp::Frame::Error(err)) => {
                    let err = String::from_utf8_lossy(&err).into_owned();
                    if c.follow(&err) || err.starts_with("CLUSTERDOWN unreachable") {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                    q.lock().unwrap().unknown_pushes.push(n);
                    break;
                }
                Outcome::Reply(other) => panic!("RPUSH answered {other:?}"),
                Outcome::Unknown => {
                    q.lock().unwrap().unknown_pushes.push(n);
                    break;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A consumer until `stop`: `BLPOP q 1`, following `-MOVED` (nothing was popped then).
fn consumer_loop(id: usize, ports: Vec<u16>, stop: Arc<AtomicBool>, q: Arc<Mutex<QueueHistory>>) {
    let mut c = Client::new(ports, id);
    while !stop.load(Ordering::Relaxed) {
        q.lock().unwrap().ops += 1;
        match c.send(&["BLPOP", "q", "1"]) {
            Outcome::Reply(resp::Frame::Array(a)) => {
                let e = match a.get(1) {
                    Some(resp::Frame::Bulk(b)) => String::from_utf8_lossy(b).parse::<u64>().ok(),
                    _ => None,
                };
                let e = e.unwrap_or_else(|| panic!("BLPOP answered {a:?}"));
                q.lock().unwrap().delivered.push(e);
            }
            // Timed out: nothing there.
            Outcome::Reply(resp::Frame::NullArray | resp::Frame::Null) => {}
            Outcome::Reply(resp::Frame::Error(err)) => {
                let err = String::from_utf8_lossy(&err).into_owned();
                if !c.follow(&err) && !err.starts_with("CLUSTERDOWN unreachable") {
                    // No leader, not committed in time: the pop may still apply.
                    q.lock().unwrap().unknown_pops += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            Outcome::Reply(other) => panic!("BLPOP answered {other:?}"),
            Outcome::Unknown => q.lock().unwrap().unknown_pops += 1,
        }
    }
}

/// The queue's violations, given what is left in the list at the end, and how many acknowledged
/// pushes were neither delivered nor left (taken by pops whose replies were lost).
fn check_queue(q: &QueueHistory, remaining: &[u64]) -> (Vec<String>, usize) {
    let mut violations = Vec::new();
    let pushed: std::collections::HashSet<u64> = q.acked.iter().chain(&q.unknown_pushes).copied().collect();
    let mut seen: HashMap<u64, &str> = HashMap::new();
    for (e, where_) in q.delivered.iter().map(|e| (e, "delivered")).chain(remaining.iter().map(|e| (e, "left"))) {
        if let Some(before) = seen.insert(*e, where_) {
            violations.push(format!("element {e} {before} and {where_} again"));
        }
        if !pushed.contains(e) {
            violations.push(format!("element {e} {where_} but never pushed"));
        }
    }
    let lost: Vec<u64> = q.acked.iter().filter(|e| !seen.contains_key(e)).copied().collect();
    if lost.len() as u64 > q.unknown_pops {
        let first: Vec<u64> = lost.iter().take(10).copied().collect();
        violations.push(format!(
            "{} acknowledged pushes neither delivered nor left (first {first:?}), {} pops with an unknown outcome",
            lost.len(),
            q.unknown_pops
        ));
    }
    (violations, lost.len())
}

// ---------------------------------------------------------------------------------------------
// The nemesis.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Fault {
    KillLeader,
    KillFollower,
    PauseLeader,
    PauseFollower,
    IsolateLeader,
    IsolateFollower,
    MajorityMinority,
    Bridge,
    ClockJump,
}

const FAULTS: [Fault; 9] = [
    Fault::KillLeader,
    Fault::KillFollower,
    Fault::PauseLeader,
    Fault::PauseFollower,
    Fault::IsolateLeader,
    Fault::IsolateFollower,
    Fault::MajorityMinority,
    Fault::Bridge,
    Fault::ClockJump,
];

/// `effects` gets, for each isolated leader, whether the rest elected another meanwhile.
fn inject(
    fault: Fault,
    g: &mut Group,
    proxy: &Proxy,
    rng: &mut StdRng,
    clocks: &[(u64, std::path::PathBuf)],
    effects: &mut Vec<bool>,
    note: &mut String,
) -> Instant {
    let ids: Vec<u64> = g.nodes.iter().map(|n| n.id).collect();
    let leader = g.leader_within(Duration::from_secs(5)).unwrap_or(ids[0]);
    let follower = *ids.iter().filter(|i| **i != leader).nth(rng.random_range(0..ids.len() - 1)).expect("a follower");
    let hold = Duration::from_millis(rng.random_range(1500..4000));
    *note = format!("leader {leader} (port {}), follower {follower}", g.port(leader));
    match fault {
        Fault::KillLeader | Fault::KillFollower => {
            let victim = if fault == Fault::KillLeader { leader } else { follower };
            g.node(victim).kill();
            std::thread::sleep(hold);
            g.restart(victim);
        }
        Fault::PauseLeader | Fault::PauseFollower => {
            let victim = if fault == Fault::PauseLeader { leader } else { follower };
            g.node(victim).signal("STOP");
            // Past the lock's TTL: its holder's lease ends while the node is frozen.
            std::thread::sleep(Duration::from_millis(TTL_MS) + hold);
            g.node(victim).signal("CONT");
        }
        Fault::IsolateLeader | Fault::IsolateFollower => {
            let victim = if fault == Fault::IsolateLeader { leader } else { follower };
            let rest: Vec<u64> = ids.iter().copied().filter(|i| *i != victim).collect();
            proxy.cut(&[victim], &rest);
            if fault == Fault::IsolateLeader {
                // The cut bites: the others elect a leader among themselves.
                let deadline = Instant::now() + Duration::from_secs(10);
                let elected = loop {
                    let ports: Vec<u16> = rest.iter().map(|id| g.port(*id)).collect();
                    if ports.iter().any(|p| {
                        common::group::info(*p).and_then(|i| i.get("consensus_role").cloned()).as_deref()
                            == Some("leader")
                    }) {
                        break true;
                    }
                    if Instant::now() > deadline {
                        break false;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                };
                effects.push(elected);
            }
            std::thread::sleep(hold);
            proxy.heal();
        }
        Fault::MajorityMinority => {
            let mut shuffled = ids.clone();
            shuffled.shuffle(rng);
            let (minority, majority) = shuffled.split_at(ids.len() / 2);
            note.push_str(&format!(", cut {minority:?} from {majority:?}"));
            proxy.cut(minority, majority);
            std::thread::sleep(hold);
            proxy.heal();
        }
        Fault::Bridge => {
            // One node sees both halves; the halves do not see each other.
            let mut shuffled = ids.clone();
            shuffled.shuffle(rng);
            let half = (ids.len() - 1) / 2;
            let (a, rest) = shuffled.split_at(half);
            let b = &rest[1..];
            note.push_str(&format!(", cut {a:?} from {b:?}"));
            proxy.cut(a, b);
            std::thread::sleep(hold);
            proxy.heal();
        }
        Fault::ClockJump => {
            // Wall clocks jump by up to a minute either way, one node at a time, and stay there:
            // raft time and lock TTLs must not care.
            for (_, file) in clocks {
                let secs: i64 = rng.random_range(-60..=60);
                std::fs::write(file, format!("{secs:+}s\n")).expect("faketime file");
                std::thread::sleep(Duration::from_millis(300));
            }
            std::thread::sleep(hold);
        }
    }
    Instant::now()
}

// ---------------------------------------------------------------------------------------------
// The run and its checks.

struct Report {
    nodes: u64,
    secs: u64,
    faults: BTreeMap<Fault, u64>,
    ops: u64,
    grants: usize,
    acked: usize,
    unknown: u64,
    fenced_off: u64,
    counter: i64,
    max_resume: Duration,
    /// The leader's last snapshot index at the end (how much compaction the run saw).
    snapshot_index: String,
    /// The queue: pushes acknowledged, elements delivered, pops with an unknown outcome, elements
    /// left at the end, acknowledged pushes lost with a pop's reply.
    queue: (usize, usize, u64, usize, usize),
    violations: Vec<String>,
}

fn run(name: &str, nodes: u64, secs: u64, seed: u64, snapshot_every: u64) -> Report {
    let proxy = std::cell::RefCell::new(Proxy::new());
    let faketime = std::path::Path::new(LIBFAKETIME).exists();
    let clock_dir = common::TempDir::new(&format!("faults-{name}-clocks"));
    let clock_file = |id: u64| clock_dir.0.join(format!("faketime-{id}"));
    let env = |id: u64| {
        if !faketime {
            return Vec::new();
        }
        std::fs::write(clock_file(id), "+0s\n").expect("faketime file");
        vec![
            ("LD_PRELOAD".to_string(), LIBFAKETIME.to_string()),
            ("FAKETIME_TIMESTAMP_FILE".to_string(), clock_file(id).display().to_string()),
            ("FAKETIME_CACHE_DURATION".to_string(), "1".to_string()),
            ("FAKETIME_DONT_FAKE_MONOTONIC".to_string(), "1".to_string()),
        ]
    };
    // `Group` keeps its extra arguments as `&'static str`: one small leak per run.
    let every: &'static str = Box::leak(snapshot_every.to_string().into_boxed_str());
    let extra = ["--raft-snapshot-every", every];
    let mut g = Group::build(name, nodes, &extra, |from, to, port| proxy.borrow_mut().add(from, to, port), env);
    let proxy = proxy.into_inner();
    let clocks: Vec<(u64, std::path::PathBuf)> =
        if faketime { (1..=nodes).map(|id| (id, clock_file(id))).collect() } else { Vec::new() };
    g.leader();
    let ports: Vec<u16> = g.nodes.iter().map(|n| n.port).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let history = Arc::new(Mutex::new(History::default()));
    let t0 = Instant::now();
    let clients: Vec<_> = (0..4)
        .map(|i| {
            let (p, s, h) = (ports.clone(), stop.clone(), history.clone());
            std::thread::spawn(move || client_loop(i, p, s, h, t0))
        })
        .collect();
    let queue = Arc::new(Mutex::new(QueueHistory::default()));
    let mut queue_threads = Vec::new();
    {
        let (p, s, q) = (ports.clone(), stop.clone(), queue.clone());
        queue_threads.push(std::thread::spawn(move || producer_loop(p, s, q)));
    }
    for i in 0..2 {
        let (p, s, q) = (ports.clone(), stop.clone(), queue.clone());
        queue_threads.push(std::thread::spawn(move || consumer_loop(i + 1, p, s, q)));
    }

    let mut rng = StdRng::seed_from_u64(seed);
    let mut faults = BTreeMap::new();
    let mut heals = Vec::new();
    let mut elections = Vec::new();
    let mut fault_log = Vec::new();
    let start = Instant::now();
    let kinds: Vec<Fault> = FAULTS.iter().copied().filter(|f| *f != Fault::ClockJump || faketime).collect();
    let mut i = 0;
    while start.elapsed() < Duration::from_secs(secs) || i < kinds.len() {
        // Every kind once in order, then at random.
        let fault = if i < kinds.len() { kinds[i] } else { kinds[rng.random_range(0..kinds.len())] };
        i += 1;
        let began = t0.elapsed().as_millis();
        let mut note = String::new();
        heals.push(inject(fault, &mut g, &proxy, &mut rng, &clocks, &mut elections, &mut note));
        let leader = g.agreed_leader().map(|l| g.port(l));
        fault_log.push(format!(
            "{began} ms: {fault:?} ({note}), healed at {} ms; leader now on port {leader:?}",
            t0.elapsed().as_millis()
        ));
        *faults.entry(fault).or_insert(0) += 1;
        // A quiet spell long enough to see grants resume.
        std::thread::sleep(Duration::from_millis(2 * ELECTION_MS + TTL_MS + 1500));
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients.into_iter().chain(queue_threads) {
        c.join().expect("client");
    }
    let elapsed = start.elapsed().as_secs();

    // The final counter, read from the leader once the group is whole.
    let leader = g.leader();
    let counter = {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let r = call(g.port(leader), &["GET", "counter"]).unwrap_or_default();
            if let Some(v) = r.lines().nth(1).and_then(|v| v.parse::<i64>().ok()) {
                break v;
            }
            if r == "$-1\r\n" {
                break 0;
            }
            assert!(Instant::now() < deadline, "no counter from the leader: {r:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let h = std::mem::take(&mut *history.lock().unwrap());
    let (mut violations, max_resume) = check(&h, counter, &heals);
    // What is left in the queue, read from the leader.
    let remaining: Vec<u64> = {
        let deadline = Instant::now() + DEADLINE;
        loop {
            match call(g.port(leader), &["LRANGE", "q", "0", "-1"]) {
                Some(r) if r.starts_with('*') => {
                    break r.lines().skip(1).filter(|l| !l.starts_with('$')).filter_map(|l| l.parse().ok()).collect();
                }
                r => assert!(Instant::now() < deadline, "no queue from the leader: {r:?}"),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let q = std::mem::take(&mut *queue.lock().unwrap());
    let (queue_violations, lost) = check_queue(&q, &remaining);
    violations.extend(queue_violations);
    let queue = (q.acked.len(), q.delivered.len(), q.unknown_pops, remaining.len(), lost);
    // Every node holds the same counter once it has caught up (its own data, not the leader's).
    let digest = |port| call(port, &["DEBUG", "DIGEST-VALUE", "counter"]);
    let want = digest(g.port(leader));
    for n in &g.nodes {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let got = digest(n.port);
            if got == want {
                break;
            }
            if Instant::now() > deadline {
                violations.push(format!("node {} holds another counter than the leader: {got:?}, {want:?}", n.id));
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    if !violations.is_empty() {
        for line in &fault_log {
            println!("  fault: {line}");
        }
    }
    for (i, elected) in elections.iter().enumerate() {
        if !elected {
            violations.push(format!("isolated leader {i}: the others elected no leader (is the proxy on the path?)"));
        }
    }
    let snapshot_index = common::group::info(g.port(leader))
        .and_then(|i| i.get("consensus_snapshot_index").cloned())
        .unwrap_or_default();
    Report {
        nodes,
        secs: elapsed,
        snapshot_index,
        queue,
        faults,
        ops: h.ops + q.ops,
        grants: h.grants.len(),
        acked: h.incrs.len(),
        unknown: h.unknown_incrs,
        fenced_off: h.fenced_off,
        counter,
        max_resume,
        violations,
    }
}

/// The history's violations, and the longest wait for a grant after a heal.
fn check(h: &History, counter: i64, heals: &[Instant]) -> (Vec<String>, Duration) {
    let mut violations = Vec::new();

    // Fencing: in counter order, tokens never go down.
    let mut incrs = h.incrs.clone();
    incrs.sort_by_key(|i| i.value);
    for w in incrs.windows(2) {
        if w[0].value == w[1].value {
            let (a, b) = (&w[0], &w[1]);
            violations.push(format!(
                "two increments acknowledged with the same value {}: {} (token {}) by port {} at {} ms, {} (token {}) by port {} at {} ms",
                a.value, a.owner, a.token, a.port, a.at_ms, b.owner, b.token, b.port, b.at_ms
            ));
        }
        if w[1].token < w[0].token {
            let (a, b) = (&w[0], &w[1]);
            violations.push(format!(
                "{} wrote {} with token {} after {} wrote {} with token {}",
                b.owner, b.value, b.token, a.owner, a.value, a.token
            ));
        }
    }
    // Counter: nothing acknowledged is lost, nothing appears from nowhere.
    let acked = h.incrs.len() as i64;
    if counter < acked || counter > acked + h.unknown_incrs as i64 {
        violations.push(format!("counter {counter}, {acked} increments acknowledged, {} unknown", h.unknown_incrs));
    }
    if let Some(max) = incrs.last()
        && max.value > counter
    {
        violations.push(format!("an increment was acknowledged as {} but the counter is {counter}", max.value));
    }
    // Grants: real-time order implies token order; owners never share a token.
    let mut by_token: HashMap<i64, &str> = HashMap::new();
    for gr in &h.grants {
        if let Some(o) = by_token.insert(gr.token, &gr.owner)
            && o != gr.owner
        {
            violations.push(format!("token {} granted to {o} and {}", gr.token, gr.owner));
        }
    }
    let mut done = h.grants.clone();
    done.sort_by_key(|g| g.completed);
    let mut by_invoke = h.grants.clone();
    by_invoke.sort_by_key(|g| g.invoked);
    let (mut k, mut max_before) = (0, None::<&Grant>);
    for b in &by_invoke {
        while k < done.len() && done[k].completed < b.invoked {
            if max_before.is_none_or(|m| done[k].token > m.token) {
                max_before = Some(&done[k]);
            }
            k += 1;
        }
        if let Some(a) = max_before
            && a.token >= b.token
            && a.owner != b.owner
        {
            violations.push(format!("grant {b:?} began after grant {a:?} completed, with a token not above it"));
        }
    }
    // Liveness: a grant completes soon after each heal.
    let bound = Duration::from_millis(2 * ELECTION_MS + TTL_MS) + REPLY_TIMEOUT;
    let mut max_resume = Duration::ZERO;
    for healed in heals {
        match done.iter().find(|g| g.completed >= *healed) {
            Some(g) => {
                let d = g.completed - *healed;
                max_resume = max_resume.max(d);
                if d > bound {
                    violations.push(format!("no grant for {d:?} after a heal (bound {bound:?})"));
                }
            }
            None => violations.push("no grant after a heal".to_string()),
        }
    }
    (violations, max_resume)
}

fn print(r: &Report) {
    let faults: Vec<String> = r.faults.iter().map(|(f, n)| format!("{f:?}={n}")).collect();
    println!(
        "faults: nodes={} secs={} ops={} grants={} increments_acked={} increments_unknown={} fenced_off={} counter={} max_resume_ms={} snapshot_index={} pushes_acked={} pops_delivered={} pops_unknown={} queue_left={} queue_lost={} faults=[{}] violations={}",
        r.nodes,
        r.secs,
        r.ops,
        r.grants,
        r.acked,
        r.unknown,
        r.fenced_off,
        r.counter,
        r.max_resume.as_millis(),
        r.snapshot_index,
        r.queue.0,
        r.queue.1,
        r.queue.2,
        r.queue.3,
        r.queue.4,
        faults.join(" "),
        r.violations.len()
    );
    for v in &r.violations {
        println!("  violation: {v}");
    }
}

#[test]
fn locks_and_fenced_counters_survive_kills_pauses_partitions_and_clock_jumps() {
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (secs, nodes, seed) = (env("LATCH_FAULT_SECS", 25), env("LATCH_FAULT_NODES", 3), env("LATCH_FAULT_SEED", 1));
    assert!(nodes == 3 || nodes == 5, "LATCH_FAULT_NODES is 3 or 5");
    let r = run("run", nodes, secs, seed, env("LATCH_FAULT_SNAPSHOT_EVERY", 300));
    print(&r);
    assert!(r.violations.is_empty(), "{} violations", r.violations.len());
    // The run did something under every fault.
    assert!(r.grants > 10 && r.acked > 10, "too little work: {} grants, {} increments", r.grants, r.acked);
    assert!(r.queue.1 > 10, "too little work: {} elements delivered", r.queue.1);
}

#[test]
fn the_queue_checker_finds_each_kind_of_violation() {
    let good = || QueueHistory {
        acked: vec![1, 2, 3, 5],
        unknown_pushes: vec![4],
        delivered: vec![1, 2],
        unknown_pops: 1,
        ops: 9,
    };
    // 3 and 5 are left; 4 may or may not have been pushed.
    assert_eq!(check_queue(&good(), &[3, 5]), (vec![], 0));
    assert_eq!(check_queue(&good(), &[3, 4, 5]), (vec![], 0));
    // One acknowledged push lost, within the pops with an unknown outcome; two are not.
    assert_eq!(check_queue(&good(), &[5]), (vec![], 1));
    assert!(check_queue(&good(), &[]).0.iter().any(|v| v.contains("2 acknowledged pushes neither delivered nor left")));
    // An element delivered twice, or delivered and left.
    let mut q = good();
    q.delivered.push(1);
    assert!(check_queue(&q, &[3, 5]).0.iter().any(|v| v.contains("element 1 delivered and delivered again")));
    assert!(check_queue(&good(), &[2, 3, 5]).0.iter().any(|v| v.contains("element 2 delivered and left again")));
    // An element from nowhere.
    assert!(check_queue(&good(), &[3, 5, 9]).0.iter().any(|v| v.contains("element 9 left but never pushed")));
}

#[test]
fn the_checker_finds_each_kind_of_violation() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let grant = |owner: &str, token, invoked, completed| Grant {
        owner: owner.into(),
        token,
        invoked: at(invoked),
        completed: at(completed),
    };
    let incr = |owner: &str, token, value| Incr { token, value, owner: owner.into(), port: 1, at_ms: 0 };
    let good = || History {
        grants: vec![grant("a", 10, 0, 5), grant("b", 11, 20, 25)],
        incrs: vec![incr("a", 10, 1), incr("a", 10, 2), incr("b", 11, 3)],
        unknown_incrs: 1,
        ops: 8,
        fenced_off: 0,
    };
    let heals = [at(1)];
    let (v, resume) = check(&good(), 3, &heals);
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(resume, Duration::from_millis(4));
    assert!(check(&good(), 4, &heals).0.is_empty(), "one unknown increment may have applied");

    // A stale holder's write passed after the newer holder's.
    let mut h = good();
    h.incrs.push(incr("a", 10, 4));
    assert!(check(&h, 4, &heals).0.iter().any(|v| v.contains("a wrote 4 with token 10 after b wrote 3")));
    // An acknowledged increment lost, or one from nowhere.
    assert!(check(&good(), 2, &heals).0.iter().any(|v| v.contains("counter 2")));
    assert!(check(&good(), 5, &heals).0.iter().any(|v| v.contains("counter 5")));
    // Two acknowledgements of the same value.
    let mut h = good();
    h.incrs[1].value = 1;
    assert!(check(&h, 3, &heals).0.iter().any(|v| v.contains("same value 1")));
    // A grant begun after another completed, with a lower token; a token shared by two owners.
    let mut h = good();
    h.grants[1].token = 9;
    assert!(check(&h, 3, &heals).0.iter().any(|v| v.contains("not above it")));
    let mut h = good();
    h.grants[1].token = 10;
    assert!(check(&h, 3, &heals).0.iter().any(|v| v.contains("token 10 granted to a and b")));
    // No grant long after a heal.
    let h = History { grants: vec![grant("a", 10, 0, 20_000)], ..good() };
    assert!(check(&h, 3, &heals).0.iter().any(|v| v.contains("no grant for")));
}
