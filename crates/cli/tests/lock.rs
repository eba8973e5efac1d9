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
