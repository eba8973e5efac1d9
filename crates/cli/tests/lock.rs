//! `latch-cli lock` against a real latch-server, found next to this test's latch-cli
//! (`target/<profile>/latch-server`; `cargo test --workspace` builds it).

mod common;
use common::{LATCH_CLI, start_latch};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

struct Server(Child, u16);

impl Server {
    fn start() -> Server {
        let (child, port) = start_latch();
        Server(child, port)
    }

    fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(LATCH_CLI).arg("-p").arg(self.1.to_string()).args(args).output().expect("run latch-cli")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn four_shell_loops_count_exactly() {
    let s = Server::start();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/lock-loops.sh");
    let out = Command::new("sh")
        .arg(script)
        .env("LATCH_CLI", LATCH_CLI)
        .env("PORT", s.1.to_string())
        .env("LOOPS", "4")
        .env("ITER", "15")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("counter 60, expected 60"), "{stdout}");
}

#[test]
fn exit_status_follows_the_command() {
    let s = Server::start();
    let out = s.cli(&["lock", "k", "--", "sh", "-c", "echo $LATCH_LOCK_NAME; exit 7"]);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "k\n");
    // The lock was released.
    assert_eq!(String::from_utf8_lossy(&s.cli(&["EXISTS", "k"]).stdout), "0\n");
    // Options after `lock` and before it.
    let out = Command::new(LATCH_CLI)
        .args(["lock", "-p", &s.1.to_string(), "k", "--fence", "--", "sh", "-c", "echo $LATCH_LOCK_FENCE"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // Latch's native LOCK hands out the server's fencing token (above the Unix time in µs).
    let fence: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().expect("a fencing token");
    assert!(fence > 1_000_000_000_000_000, "{fence}");
    // Not found / killed by a signal.
    assert_eq!(s.cli(&["lock", "k", "--", "/nonexistent/cmd"]).status.code(), Some(127));
    assert_eq!(s.cli(&["lock", "k", "--", "sh", "-c", "kill -9 $$"]).status.code(), Some(137));
}

#[test]
fn held_lock_times_out_with_status_1() {
    let s = Server::start();
    assert!(s.cli(&["SET", "busy", "someone"]).status.success());
    let t = Instant::now();
    let out = s.cli(&["lock", "busy", "--wait", "200", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not acquired within 200 ms"));
    assert!(t.elapsed() < Duration::from_secs(5));
    let out = s.cli(&["lock", "busy", "--wait", "0", "--conflict-exit-code", "75", "--", "true"]);
    assert_eq!(out.status.code(), Some(75));
    // The other holder's lock is untouched.
    assert_eq!(String::from_utf8_lossy(&s.cli(&["GET", "busy"]).stdout), "someone\n");
}

#[test]
fn sigterm_is_forwarded_then_the_lock_released() {
    let s = Server::start();
    let mut child = Command::new(LATCH_CLI)
        .args(["-p", &s.1.to_string(), "lock", "sig", "--ttl", "300", "--", "sleep", "20"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while String::from_utf8_lossy(&s.cli(&["EXISTS", "sig"]).stdout) != "1\n" {
        assert!(Instant::now() < deadline, "lock never taken");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Held past its TTL by the watchdog.
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(String::from_utf8_lossy(&s.cli(&["EXISTS", "sig"]).stdout), "1\n");
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "latch-cli did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(st.code(), Some(143), "sleep was terminated by the forwarded SIGTERM");
    assert_eq!(String::from_utf8_lossy(&s.cli(&["EXISTS", "sig"]).stdout), "0\n");
}

/// `--group`: a Latch consensus group of three nodes on 127.0.0.1. The command runs while the
/// leader is killed with SIGKILL; the watchdog keeps extending the lock through the new leader,
/// so the command is never told the lock was lost and the lock is released at the end.
#[test]
fn a_group_lock_survives_kill_9_of_the_leader() {
    let bin = Path::new(LATCH_CLI).with_file_name("latch-server");
    let free = || std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let (ports, raft): (Vec<u16>, Vec<u16>) = (1..=3).map(|_| (free(), free())).unzip();
    let peers = (0..3).map(|i| format!("{}=127.0.0.1:{}", i + 1, raft[i])).collect::<Vec<_>>().join(",");
    let dirs: Vec<_> =
        (0..3).map(|i| std::env::temp_dir().join(format!("latch-cli-group-{}-{i}", std::process::id()))).collect();
    let mut nodes: Vec<Server> = (0..3)
        .map(|i| {
            let _ = std::fs::remove_dir_all(&dirs[i]);
            std::fs::create_dir_all(&dirs[i]).expect("dir");
            let child = Command::new(&bin)
                .args(["--bind", "127.0.0.1", "--port", &ports[i].to_string(), "--save", ""])
                .args(["--raft-id", &(i + 1).to_string(), "--raft-peers", &peers])
                .arg("--dir")
                .arg(&dirs[i])
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn latch-server");
            Server(child, ports[i])
        })
        .collect();
    // The leader, once every node names it.
    let deadline = Instant::now() + Duration::from_secs(20);
    let leader = loop {
        let named: Vec<String> = nodes
            .iter()
            .map(|n| String::from_utf8_lossy(&n.cli(&["INFO", "consensus"]).stdout).to_string())
            .map(|i| i.lines().find_map(|l| l.strip_prefix("consensus_leader:")).unwrap_or("").trim().to_string())
            .collect();
        if !named[0].is_empty() && named.iter().all(|n| *n == named[0]) {
            break named[0].parse::<usize>().expect("leader id") - 1;
        }
        assert!(Instant::now() < deadline, "no leader: {named:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    // The leader last, so that the first request goes to a follower and follows MOVED.
    let mut order: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    order.push(leader);
    let group = order.iter().map(|&i| format!("127.0.0.1:{}", ports[i])).collect::<Vec<_>>().join(",");
    let run = Command::new(LATCH_CLI)
        .args(["lock", "--group", &group, "--ttl", "3000", "job", "--", "sh", "-c", "sleep 7; echo done"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("latch-cli lock");
    std::thread::sleep(Duration::from_millis(1500));
    let held = String::from_utf8_lossy(&nodes[leader].cli(&["LOCKINFO", "job"]).stdout).to_string();
    assert!(!held.trim().is_empty() && !held.contains("nil"), "the lock is held: {held:?}");
    let _ = nodes[leader].0.kill();
    let out = run.wait_with_output().expect("latch-cli lock ends");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout, "done\n");
    assert!(!stderr.contains("lost"), "{stderr}");
    // Released at the end: the new leader (one of the survivors; followers answer MOVED) has
    // no such key.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let answers: Vec<String> = (0..3)
            .filter(|&i| i != leader)
            .map(|i| String::from_utf8_lossy(&nodes[i].cli(&["EXISTS", "job"]).stdout).trim().to_string())
            .collect();
        if answers.iter().any(|a| a == "0") {
            break;
        }
        assert!(Instant::now() < deadline, "the lock was not released: {answers:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(nodes);
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}
