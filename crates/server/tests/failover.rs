//! Failover under a stock Sentinel, through the real binaries on 127.0.0.1: writes that `WAIT`
//! confirmed survive `kill -9` of the primary and the sentinel's promotion of a replica, and the
//! fencing tokens of native locks keep growing across every failover (the short form of
//! `scripts/failover-test.sh`).

mod common;

use common::{Latch, Raw, TempDir, free_port};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A stock `redis-sentinel` (redis-server started with `--sentinel`), killed on drop.
struct Sentinel {
    child: Child,
    port: u16,
    _dir: TempDir,
}

impl Sentinel {
    /// Monitors the primary on `primary_port` as `mymaster`, quorum 1; None when redis-server is
    /// not installed and the run said to go without it. `down-after-milliseconds` is 2000, as in
    /// Redis's own Sentinel tests: after a switch the sentinel sends its first PING to the new
    /// primary one ping period (1000 ms) later, and counts the primary down once
    /// `down-after-milliseconds` have passed since the switch without a reply (sentinel.c:
    /// `sentinelResetMaster`, `sentinelSendPeriodicCommands`). At 1000 the two raced: a primary
    /// promoted a second before was judged down before its first PONG came, the sentinel failed
    /// over again, and the test's new replica was left chained under a replica.
    fn start(primary_port: u16) -> Option<Sentinel> {
        for attempt in 0..5 {
            let port = free_port();
            let dir = TempDir::new(&format!("sentinel-{port}-{attempt}"));
            let conf = std::path::Path::new(dir.path()).join("sentinel.conf");
            let text = format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nlogfile sentinel.log\nsentinel monitor mymaster 127.0.0.1 {primary_port} 1\n\
                 sentinel down-after-milliseconds mymaster 2000\nsentinel failover-timeout mymaster 2000\n",
                dir.path()
            );
            std::fs::write(&conf, text).expect("sentinel.conf");
            let child = match Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
            {
                Ok(c) => c,
                Err(_) => {
                    assert!(
                        std::env::var_os("LATCH_TESTS_WITHOUT_REDIS").is_some(),
                        "redis-server is not on PATH (apt-get install redis-server), so the Sentinel failover test \
                         cannot run; set LATCH_TESTS_WITHOUT_REDIS=1 to skip it knowingly"
                    );
                    return None;
                }
            };
            let s = Sentinel { child, port, _dir: dir };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    // Ours, and not another test's process that took the port first.
                    let mut c = Raw::connect(port);
                    if c.cmd(&[b"INFO", b"server"]).contains(&format!("process_id:{}\r", s.child.id())) {
                        return Some(s);
                    }
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("no sentinel started")
    }

    /// What the sentinel logged (for a failure's message).
    fn log(&self) -> String {
        std::fs::read_to_string(std::path::Path::new(self._dir.path()).join("sentinel.log")).unwrap_or_default()
    }

    /// True once no failover is under way (the primary's flags are just `master`): a failover
    /// ends when the sentinel saw every replica follow the promoted one.
    fn settled(&self) -> bool {
        Raw::connect(self.port).cmd(&[b"SENTINEL", b"MASTER", b"mymaster"]).contains("\r\nflags\r\n$6\r\nmaster\r\n")
    }

    /// The port of the primary the sentinel names now.
    fn primary_port(&self) -> Option<u16> {
        let reply = Raw::connect(self.port).cmd(&[b"SENTINEL", b"GET-MASTER-ADDR-BY-NAME", b"mymaster"]);
        reply.lines().nth(4).and_then(|p| p.trim().parse().ok())
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (bounded) until the node on `port` reports `online` replicas.
fn wait_online(port: u16, online: usize, context: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = Raw::connect(port).cmd(&[b"INFO", b"replication"]);
        if info.matches("state=online").count() >= online {
            return;
        }
        assert!(Instant::now() < deadline, "{online} replicas never came online:\n{info}\n{}", context());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An integer reply.
fn int(reply: &str) -> i64 {
    reply.trim().trim_start_matches(':').parse().unwrap_or_else(|_| panic!("not an integer: {reply:?}"))
}

#[test]
fn waited_writes_and_fencing_survive_kill_9_and_sentinel_promotion() {
    let node = |replicaof: Option<u16>| {
        let of = replicaof.map(|p| p.to_string());
        let mut args = vec!["--repl-diskless-sync-delay", "0", "--save", ""];
        if let Some(p) = &of {
            args.extend(["--replicaof", "127.0.0.1", p.as_str()]);
        }
        Latch::start(&args)
    };
    let first = node(None);
    let mut nodes = vec![node(Some(first.port)), node(Some(first.port))];
    nodes.insert(0, first);
    wait_online(nodes[0].port, 2, String::new);
    let Some(sentinel) = Sentinel::start(nodes[0].port) else { return };
    // The sentinel learns the replicas from the primary's INFO: each round waits until it knows
    // every live replica of ours as a healthy one, so the next failover re-points each of them.
    // Counting healthy entries is not enough: a killed primary stays listed as a replica with
    // flags `slave` until `down-after-milliseconds` pass, and once it stood in for the new node
    // the sentinel had not discovered yet, which then stayed behind the next killed primary.
    let knows_replicas = |ports: &[u16]| {
        let reply = Raw::connect(sentinel.port).cmd(&[b"SENTINEL", b"REPLICAS", b"mymaster"]);
        ports.iter().all(|port| {
            let name = format!("127.0.0.1:{port}");
            reply.split("\r\nname\r\n").any(|entry| {
                entry.split("\r\n").nth(1) == Some(name.as_str()) && entry.contains("\r\nflags\r\n$5\r\nslave\r\n")
            })
        })
    };
    let (mut confirmed, mut max_token) = (Vec::new(), 0i64);
    for round in 0..2 {
        let deadline = Instant::now() + Duration::from_secs(60);
        let primary = sentinel.primary_port().expect("a primary");
        let replicas: Vec<u16> = nodes.iter().map(|n| n.port).filter(|&p| p != primary).collect();
        assert_eq!(replicas.len(), 2, "round {round}: two replicas of ours");
        while !knows_replicas(&replicas) {
            let replicas = Raw::connect(sentinel.port).cmd(&[b"SENTINEL", b"REPLICAS", b"mymaster"]);
            assert!(
                Instant::now() < deadline,
                "round {round}: the sentinel never saw both replicas:\n{replicas}\nsentinel:\n{}",
                sentinel.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let p = sentinel.primary_port().expect("a primary");
        let at = nodes.iter().position(|n| n.port == p).expect("the primary is one of ours");
        let mut c = Raw::connect(p);
        for k in 0..20 {
            let key = format!("r{round}:k{k}");
            assert_eq!(c.cmd(&[b"SET", key.as_bytes(), b"v"]), "+OK\r\n");
            if int(&c.cmd(&[b"WAIT", b"1", b"1000"])) >= 1 {
                confirmed.push(key);
            }
        }
        let token = int(&c.cmd(&[b"LOCK", format!("job{round}").as_bytes(), b"owner", b"60000"]));
        assert!(token > max_token, "round {round}: token {token} after {max_token}");
        assert!(int(&c.cmd(&[b"WAIT", b"1", b"1000"])) >= 1, "the grant reached a replica");
        max_token = token;
        // kill -9 (Drop kills with SIGKILL), then the sentinel promotes a replica.
        drop(nodes.remove(at));
        let deadline = Instant::now() + Duration::from_secs(40);
        let new = loop {
            if let Some(n) = sentinel.primary_port().filter(|&n| n != p)
                && Raw::connect(n).cmd(&[b"ROLE"]).contains("master")
            {
                break n;
            }
            assert!(Instant::now() < deadline, "round {round}: no failover within 40 s; sentinel:\n{}", sentinel.log());
            std::thread::sleep(Duration::from_millis(100));
        };
        let mut c = Raw::connect(new);
        for key in &confirmed {
            assert_eq!(c.cmd(&[b"EXISTS", key.as_bytes()]), ":1\r\n", "round {round}: {key} was lost");
        }
        let next = int(&c.cmd(&[b"LOCK", format!("probe{round}").as_bytes(), b"owner", b"1000"]));
        assert!(next > max_token, "round {round}: the new primary granted {next} after {max_token}");
        max_token = next;
        // A new node takes the killed one's place as a replica of the new primary; the sentinel
        // re-points the other replica.
        nodes.push(node(Some(new)));
        wait_online(new, 2, || sentinel.log());
        let deadline = Instant::now() + Duration::from_secs(30);
        while !sentinel.settled() {
            assert!(
                Instant::now() < deadline,
                "round {round}: the failover never ended; sentinel:\n{}",
                sentinel.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    assert!(confirmed.len() >= 30, "most writes were confirmed by WAIT: {}", confirmed.len());
}
