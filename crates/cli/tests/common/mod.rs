//! Shared by the cli crate's integration tests: the real latch-server, found next to latch-cli
//! (`target/<profile>/latch-server`; `cargo test --workspace` builds it).

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The latch-cli binary under test.
pub const LATCH_CLI: &str = env!("CARGO_BIN_EXE_latch-cli");

/// Starts latch-server on a port that was free a moment ago; if another process took it first (the
/// server logs "Failed listening on port"), tries another, as Redis's own test harness does.
pub fn start_latch() -> (Child, u16) {
    let bin = Path::new(LATCH_CLI).with_file_name("latch-server");
    assert!(
        bin.exists(),
        "{} is not built: run `cargo build --bin latch-server` (cargo test --workspace does)",
        bin.display()
    );
    for _ in 0..20 {
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("free port").port();
        // No RDB file: these servers neither save one nor load one a developer left behind.
        let mut child = Command::new(&bin)
            .args([
                "--bind",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--dbfilename",
                "latch-cli-tests-none.rdb",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn latch-server");
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if line.contains("Ready to accept connections") {
                    let _ = tx.send(true);
                } else if line.contains("Failed listening on port") {
                    let _ = tx.send(false);
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(true) => return (child, port),
            Ok(false) => {
                let _ = child.wait();
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("latch-server did not start");
            }
        }
    }
    panic!("latch-server found no free port")
}
