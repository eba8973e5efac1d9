//! `cargo run -p xtask -- <task>`: Latch's maintenance tasks (see the library's docs).

use std::path::Path;

const HELP: &str = "usage: cargo run -p xtask -- <task>

tasks:
  redis-commands [--port PORT]   regenerate crates/engine/data/redis-7.0.15-commands.resp from
                                 redis-server 7.0.15 (started from PATH, or the one on 127.0.0.1:PORT)
  help                           this text";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("redis-commands") => {
            let port = match args.get(1).map(String::as_str) {
                Some("--port") => {
                    Some(args.get(2).and_then(|p| p.parse().ok()).unwrap_or_else(|| fail("--port needs a number")))
                }
                Some(other) => fail(&format!("unknown option {other}\n\n{HELP}")),
                None => None,
            };
            let server = if port.is_none() {
                Some(xtask::RedisServer::start().unwrap_or_else(|| fail("cannot start redis-server from PATH")))
            } else {
                None
            };
            let port = port.or(server.as_ref().map(|s| s.port)).expect("a port");
            let bytes = xtask::redis_commands(port).unwrap_or_else(|e| fail(&e.to_string()));
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            let path = root.join(xtask::DATA_FILE);
            std::fs::write(&path, &bytes).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
            println!("wrote {} ({} bytes)", xtask::DATA_FILE, bytes.len());
        }
        Some("help") | None => println!("{HELP}"),
        Some(other) => fail(&format!("unknown task {other}\n\n{HELP}")),
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("xtask: {msg}");
    std::process::exit(2)
}
