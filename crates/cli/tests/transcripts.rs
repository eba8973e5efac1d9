//! Runs the latch-cli binary the way tests/data/record_sessions.py ran the real redis-cli 7.0.15
//! (piped sessions and one-shot commands, in order, against a fresh server) and compares stdout,
//! stderr and exit status with the recording in tests/data/sessions.txt.
//!
//! The server is a real redis-server from PATH (Latch's own server is still growing its command
//! families); without one the test prints a notice and passes.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::LATCH_CLI;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Undoes the recorder's escaping: `\r`, `\n`, `\\` and `\xHH`.
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            match b.get(i + 1) {
                Some(b'r') => out.push(b'\r'),
                Some(b'n') => out.push(b'\n'),
                Some(b'\\') => out.push(b'\\'),
                Some(b'x') => {
                    out.push(u8::from_str_radix(std::str::from_utf8(&b[i + 2..i + 4]).unwrap(), 16).unwrap());
                    i += 2;
                }
                other => panic!("bad escape {other:?} in {s}"),
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

#[derive(Default, Debug)]
struct Run {
    title: String,
    args: Vec<String>,
    cmds: Option<String>,
    stdin: Option<Vec<u8>>,
    rc: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn parse_runs(text: &str) -> Vec<Run> {
    let mut runs = Vec::new();
    for block in text.split("\n=== ").skip(1) {
        let mut run = Run::default();
        let mut lines = block.lines();
        run.title = lines.next().unwrap().to_string();
        let mut target = 0; // 1 = stdout, 2 = stderr
        for line in lines {
            let out = match target {
                1 => Some(&mut run.stdout),
                2 => Some(&mut run.stderr),
                _ => None,
            };
            if let Some(a) = line.strip_prefix("arg ") {
                run.args.push(a.to_string());
            } else if let Some(c) = line.strip_prefix("cmds ") {
                run.cmds = Some(c.to_string());
            } else if let Some(s) = line.strip_prefix("stdin ") {
                run.stdin = Some(unescape(s));
            } else if let Some(rc) = line.strip_prefix("rc ") {
                run.rc = rc.parse().unwrap();
            } else if line == "stdout" {
                target = 1;
            } else if line == "stderr" {
                target = 2;
            } else if let Some((tag, rest)) = line.split_once(' ') {
                let out = out.expect("output line outside stdout/stderr");
                match tag {
                    "|" => out.extend_from_slice(rest.as_bytes()),
                    "|x" => out.extend_from_slice(&unescape(rest)),
                    "|-" => out.extend_from_slice(rest.as_bytes()),
                    "|-x" => out.extend_from_slice(&unescape(rest)),
                    _ => panic!("bad line {line:?}"),
                }
                if !tag.starts_with("|-") {
                    out.push(b'\n');
                }
            } else {
                assert!(line.is_empty(), "bad line {line:?}");
            }
        }
        runs.push(run);
    }
    runs
}

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts redis-server on a free port. redis-server has no "port 0", so a port picked here can be
/// taken by another test's server first; the answer to INFO tells whether the server on the port is
/// ours (same process id), and another port is tried if not.
fn start_redis() -> Option<Server> {
    for _ in 0..5 {
        let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        let info = latch_cli(&["-p".into(), port.to_string(), "INFO".into(), "server".into()], b"");
        let ours = format!("process_id:{}", server.child.id());
        if String::from_utf8_lossy(&info.stdout).lines().any(|l| l.trim() == ours) {
            return Some(server);
        }
        let _ = server.child.kill();
    }
    panic!("could not start a redis-server of our own");
}

fn latch_cli(args: &[String], stdin: &[u8]) -> std::process::Output {
    let mut child = Command::new(LATCH_CLI)
        .args(args)
        .env_remove("FAKETTY")
        .env_remove("LATCHCLI_AUTH")
        .env_remove("REDISCLI_AUTH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // A one-shot run may not read its stdin at all: a broken pipe is fine.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().unwrap()
}

#[test]
fn redis_cli_transcripts() {
    let Some(server) = start_redis() else {
        // A missing reference server is an error, not a pass: say so loudly, unless the run asked
        // to go without one.
        assert!(
            std::env::var_os("LATCH_TESTS_WITHOUT_REDIS").is_some(),
            "redis-server is not on PATH (apt-get install redis-server), so the redis-cli transcripts \
             cannot be checked against it; set LATCH_TESTS_WITHOUT_REDIS=1 to skip them knowingly"
        );
        println!("LATCH_TESTS_WITHOUT_REDIS set: skipping the transcripts against redis-server");
        return;
    };
    check_transcripts(&server, &[]);
}

/// The same recorded redis-cli sessions, against Latch's own server: latch-cli + latch-server print
/// what redis-cli + redis-server print. Runs whose output depends on server-specific text (command
/// documentation for HELP) are listed with the reason.
#[test]
fn redis_cli_transcripts_against_latch() {
    let (child, port) = common::start_latch();
    let server = Server { child, port };
    check_transcripts(&server, LATCH_SKIPS);
}

/// Recorded runs not replayed against Latch, and why.
const LATCH_SKIPS: &[(&str, &str)] = &[
    ("oneshot help", "HELP prints the server's COMMAND DOCS text, whose wording is Latch's own"),
    ("oneshot help group", "HELP prints the server's COMMAND DOCS text, whose wording is Latch's own"),
];

fn check_transcripts(server: &Server, skips: &[(&str, &str)]) {
    let text = std::fs::read_to_string(data_dir().join("sessions.txt")).unwrap();
    let runs = parse_runs(&text);
    assert!(runs.len() >= 40, "only {} runs parsed", runs.len());
    let mut failures = Vec::new();
    for run in &runs {
        if skips.iter().any(|(t, _)| run.title == *t) {
            continue;
        }
        let mut args: Vec<String> = Vec::new();
        if !run.args.iter().any(|a| a == "-p" || a == "-u") {
            args.extend(["-p".to_string(), server.port.to_string()]);
        }
        args.extend(run.args.iter().map(|a| a.replace("{port}", &server.port.to_string())));
        let stdin = match &run.cmds {
            Some(f) => std::fs::read(data_dir().join(f)).unwrap(),
            None => run.stdin.clone().unwrap_or_default(),
        };
        let out = latch_cli(&args, &stdin);
        let rc = out.status.code().unwrap_or(-1);
        if rc != run.rc || out.stdout != run.stdout || out.stderr != run.stderr {
            failures.push(format!(
                "{} ({args:?}):\n  rc want {} got {rc}\n  stdout want {:?}\n  stdout got  {:?}\n  stderr want {:?}\n  \
                 stderr got  {:?}",
                run.title,
                run.rc,
                String::from_utf8_lossy(&run.stdout),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&run.stderr),
                String::from_utf8_lossy(&out.stderr),
            ));
        }
    }
    assert!(failures.is_empty(), "{} of {} runs differ:\n{}", failures.len(), runs.len(), failures.join("\n"));
}

/// Behaviour of latch-cli's own (no redis-cli recording): TLS setup errors, bad options.
#[test]
fn own_messages() {
    // A CA file that is not there: the TLS setup fails before connecting, as redis-cli's does.
    let out = latch_cli(&["--tls".into(), "--cacert".into(), "/nonexistent/ca.crt".into(), "ping".into()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Could not negotiate a TLS connection"));

    let out = latch_cli(&["-2".into(), "-3".into(), "ping".into()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stderr, b"Options -2 and -3 are mutually exclusive.\n");

    let out = latch_cli(&["--no-such-option".into()], b"");
    assert_eq!(out.status.code(), Some(1));

    let out = latch_cli(&["-v".into()], b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.starts_with(b"latch-cli "));

    // Piped session against a closed port: each command reports the refused connection.
    let out = latch_cli(&["-p".into(), "1".into()], b"ping\nhelp\n");
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("Could not connect to Redis at 127.0.0.1:1: Connection refused").count(), 2, "{err}");
    assert!(out.stdout.starts_with(b"latch-cli "), "plain help works offline");
}
