//! Listening as redis-server does: `bind * -::*` with protected mode on still serves loopback
//! clients (the refusal of other addresses is unit-tested in `net.rs`: tests only connect to
//! loopback), and the socket options are reported as configured.

mod common;
use common::Latch;

#[test]
fn wildcard_bind_in_protected_mode_serves_loopback() {
    let l = Latch::start(&["--bind", "* -::*"]);
    let mut r = l.raw();
    assert_eq!(r.cmd(&[b"PING"]), "+PONG\r\n");
    assert_eq!(r.cmd(&[b"CONFIG", b"GET", b"bind"]), "*2\r\n$4\r\nbind\r\n$6\r\n* -::*\r\n");
    assert_eq!(r.cmd(&[b"CONFIG", b"GET", b"protected-mode"]), "*2\r\n$14\r\nprotected-mode\r\n$3\r\nyes\r\n");
    let stats = r.cmd(&[b"INFO", b"stats"]);
    assert!(stats.contains("rejected_connections:0"), "{stats}");
}

#[test]
fn invalid_bind_stops_startup() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_latch-server"))
        .args(["--port", "0", "--bind", "nonsense-address"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Invalid bind address 'nonsense-address'"));
    assert_eq!(r.cmd(&[b"PING"]), "+PONG\r\n");
}
