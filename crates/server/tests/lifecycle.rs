//! Startup, configuration errors and shutdown of the real binary.

mod common;
use common::Latch;
use std::process::Command;
use std::time::Duration;

#[test]
fn unknown_option_stops_startup_naming_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_latch-server")).args(["--frobnicate", "yes"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("frobnicate"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_latch-server")).args(["--port", "notaport"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("port"));
}

#[test]
fn config_file_then_arguments() {
    let dir = std::env::temp_dir().join(format!("latch-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("latch.conf");
    std::fs::write(&path, "# test\ndatabases 4\nhz 20\n").unwrap();
    let l = Latch::start(&[path.to_str().unwrap(), "--hz", "30"]);
    let mut raw = l.raw();
    assert_eq!(raw.call(b"SELECT 3\r\n"), "+OK\r\n");
    assert_eq!(raw.call(b"SELECT 4\r\n"), "-ERR DB index is out of range\r\n");
    drop(l);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn sigterm_exits_cleanly() {
    let mut l = Latch::start(&[]);
    assert_eq!(l.raw().call(b"PING\r\n"), "+PONG\r\n");
    let st = Command::new("kill").args(["-TERM", &l.pid().to_string()]).status().unwrap();
    assert!(st.success());
    let st = l.wait_exit(Duration::from_secs(10)).expect("exited");
    assert!(st.success(), "{st:?}");
}

#[test]
fn shutdown_command_stops_the_server() {
    let mut l = Latch::start(&[]);
    let mut raw = l.raw();
    raw.send(b"SHUTDOWN NOSAVE\r\n");
    assert!(raw.closed());
    let st = l.wait_exit(Duration::from_secs(10)).expect("exited");
    assert!(st.success());
    assert!(!l.alive());
}
