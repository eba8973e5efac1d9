//! Shared by the cli crate's integration tests: the real latch-server, found next to latch-cli
//! (`target/<profile>/latch-server`; `cargo test --workspace` builds it).

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The latch-cli binary under test.
pub const LATCH_CLI: &str = env!("CARGO_BIN_EXE_latch-cli");

/// Starts latch-server on an ephemeral port (`--port 0`) and reads the port from its "Ready to accept
/// connections" line: unlike a port picked beforehand, no other test can take it first.
pub fn start_latch() -> (Child, u16) {
    let bin = Path::new(LATCH_CLI).with_file_name("latch-server");
    assert!(
        bin.exists(),
        "{} is not built: run `cargo build --bin latch-server` (cargo test --workspace does)",
        bin.display()
    );
    let mut child = Command::new(bin)
        .args(["--bind", "127.0.0.1", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn latch-server");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(addr) = line.split("Ready to accept connections tcp on ").nth(1) {
                let _ = tx.send(addr.rsplit(':').next().and_then(|p| p.trim().parse::<u16>().ok()));
            }
        }
    });
    let port = rx.recv_timeout(Duration::from_secs(20)).ok().flatten().expect("latch-server did not start");
    (child, port)
}
