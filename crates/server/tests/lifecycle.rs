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
    // The SHUTDOWN's connection closes after the listeners did (Redis's closeListeningSockets): a
    // client reconnecting at once is refused, not served by a server on its way out.
    assert!(std::net::TcpStream::connect(("127.0.0.1", l.port)).is_err(), "a new client was accepted after SHUTDOWN");
    let st = l.wait_exit(Duration::from_secs(10)).expect("exited");
    assert!(st.success());
    assert!(!l.alive());
}

/// The id CLIENT ID gives for `raw`'s connection.
fn client_id(raw: &mut common::Raw) -> String {
    raw.call(b"CLIENT ID\r\n").trim_start_matches(':').trim_end().to_string()
}

#[test]
fn client_kill_closes_idle_blocked_and_uploading_connections() {
    let l = Latch::start(&[]);
    let mut admin = l.raw();

    let mut idle = l.raw();
    let id = client_id(&mut idle);
    assert_eq!(admin.call(format!("CLIENT KILL ID {id}\r\n").as_bytes()), ":1\r\n");
    assert!(idle.closed());

    let mut blocked = l.raw();
    let id = client_id(&mut blocked);
    blocked.send(b"BLPOP nolist 0\r\n");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(admin.call(format!("CLIENT KILL ID {id}\r\n").as_bytes()), ":1\r\n");
    assert!(blocked.closed());

    // A client in the middle of a large argument always has bytes ready to read: the kill must
    // still close it. Its writes fail once the server has closed (bounded: 60 s of 64 KiB writes).
    let mut up = l.raw();
    let id = client_id(&mut up);
    up.send(b"*2\r\n$4\r\nECHO\r\n$400000000\r\n");
    let mut s = up.s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let chunk = vec![b'x'; 65536];
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if s.write_all(&chunk).is_err() {
                return true;
            }
        }
        false
    });
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(admin.call(format!("CLIENT KILL ID {id}\r\n").as_bytes()), ":1\r\n");
    assert!(writer.join().unwrap(), "the uploading client was never disconnected");
    assert_eq!(admin.call(b"PING\r\n"), "+PONG\r\n");
}

/// What the server printed after startup, until its output closed.
fn rest_of_log(l: &Latch) -> String {
    let mut text = String::new();
    while let Ok(line) = l.log.recv_timeout(Duration::from_secs(20)) {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// A fatal signal leaves Redis's crash report in the log (the signal, `------ STACK TRACE ------`
/// and the stack that took it, here through DEBUG SEGFAULT's command), then the process dies of
/// that signal; SIGABRT sent with `kill` names its sender. `crash-log-enabled no` leaves the
/// report out.
#[test]
fn a_fatal_signal_writes_the_crash_report_and_the_process_dies_of_it() {
    use std::os::unix::process::ExitStatusExt;
    let mut l = Latch::start(&["--enable-debug-command", "yes"]);
    l.raw().send(&common::encode(&["DEBUG", "SEGFAULT"]));
    let status = l.wait_exit(Duration::from_secs(30)).expect("the server died");
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{status:?}");
    let text = rest_of_log(&l);
    assert!(text.contains("crashed by signal: 11"), "{text}");
    let trace = text.split("------ STACK TRACE ------").nth(1).unwrap_or_else(|| panic!("no stack trace: {text}"));
    assert!(trace.contains("engine::cmd::debug::debug"), "{trace}");
    assert!(text.contains("=== LATCH BUG REPORT END"), "{text}");

    let mut l = Latch::start(&[]);
    let killed = Command::new("kill").args(["-ABRT", &l.pid().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = l.wait_exit(Duration::from_secs(30)).expect("the server died");
    assert_eq!(status.signal(), Some(libc::SIGABRT), "{status:?}");
    let text = rest_of_log(&l);
    assert!(text.contains("crashed by signal: 6, si_code: 0"), "{text}");
    assert!(text.contains("Killed by PID: ") && text.contains("------ STACK TRACE ------"), "{text}");

    let mut l = Latch::start(&["--enable-debug-command", "yes", "--crash-log-enabled", "no"]);
    l.raw().send(&common::encode(&["DEBUG", "SEGFAULT"]));
    let status = l.wait_exit(Duration::from_secs(30)).expect("the server died");
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{status:?}");
    let text = rest_of_log(&l);
    assert!(!text.contains("crashed by signal") && !text.contains("STACK TRACE"), "{text}");
}
