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

/// Under a low open-files limit, maxclients is lowered to the limit minus Redis's 32 reserved
/// descriptors, with Redis's log lines; clients beyond maxclients get Redis's error at once.
#[test]
fn maxclients_follows_the_open_files_limit() {
    use std::io::{BufRead, BufReader};
    let bin = env!("CARGO_BIN_EXE_latch-server");
    let mut child = std::process::Command::new("sh")
        .args(["-c", &format!("ulimit -n 100 && exec '{bin}' --bind 127.0.0.1 --port 0")])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut log = String::new();
    let port: u16 = loop {
        let line = lines.next().expect("server output").unwrap();
        log.push_str(&line);
        log.push('\n');
        if let Some(addr) = line.split("Ready to accept connections tcp on ").nth(1) {
            break addr.rsplit(':').next().unwrap().trim().parse().unwrap();
        }
    };
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    std::io::Write::write_all(&mut s, b"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$10\r\nmaxclients\r\n").unwrap();
    let mut reply = [0u8; 64];
    let n = std::io::Read::read(&mut s, &mut reply).unwrap();
    let got_max = reply[..n].to_vec();
    // More clients than the limit allows: Redis's error, and the value unchanged.
    std::io::Write::write_all(&mut s, b"*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$10\r\nmaxclients\r\n$3\r\n100\r\n")
        .unwrap();
    let mut set = [0u8; 256];
    let m = std::io::Read::read(&mut s, &mut set).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(got_max, b"*2\r\n$10\r\nmaxclients\r\n$2\r\n68\r\n");
    assert_eq!(
        String::from_utf8_lossy(&set[..m]),
        "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able \
         to handle the specified number of clients, try with 68\r\n"
    );
    assert!(log.contains("You requested maxclients of 10000 requiring at least 10032 max file descriptors."), "{log}");
    assert!(
        log.contains(
            "Current maximum open files is 100. maxclients has been reduced to 68 to compensate for low ulimit. \
             If you need higher maxclients increase 'ulimit -n'."
        ),
        "{log}"
    );

    let l = Latch::start(&["--maxclients", "2"]);
    let (mut a, mut b) = (l.raw(), l.raw());
    assert_eq!(a.cmd(&[b"PING"]), "+PONG\r\n");
    assert_eq!(b.cmd(&[b"PING"]), "+PONG\r\n");
    let mut c = l.raw();
    let mut got = Vec::new();
    std::io::Read::read_to_end(&mut c.s, &mut got).unwrap();
    assert_eq!(got, b"-ERR max number of clients reached\r\n");
    let stats = a.cmd(&[b"INFO", b"stats"]);
    assert!(stats.contains("rejected_connections:1"), "{stats}");
}

/// `rename-command` in the configuration, as in Redis: the old name is unknown (to clients and to
/// scripts), the new one runs the command, an empty name disables it, and bad lines stop startup.
#[test]
fn rename_command() {
    let l = Latch::start(&["--rename-command", "config", "", "--rename-command", "set", "myset"]);
    let mut r = l.raw();
    assert_eq!(r.cmd(&[b"SET", b"a", b"1"]), "-ERR unknown command 'SET', with args beginning with: 'a' '1' \r\n");
    assert_eq!(r.cmd(&[b"MYSET", b"a", b"1"]), "+OK\r\n");
    assert_eq!(
        r.cmd(&[b"CONFIG", b"GET", b"port"]),
        "-ERR unknown command 'CONFIG', with args beginning with: 'GET' 'port' \r\n"
    );
    assert!(
        r.cmd(&[b"EVAL", b"return redis.call('set','b',1)", b"0"])
            .starts_with("-ERR Unknown Redis command called from script")
    );
    assert_eq!(r.cmd(&[b"EVAL", b"return redis.call('myset','b',1)", b"0"]), "+OK\r\n");
    // COMMAND INFO finds it by its new name and reports its own, as Redis does.
    assert!(r.cmd(&[b"COMMAND", b"INFO", b"myset"]).starts_with("*1\r\n*10\r\n$3\r\nset\r\n"));
    assert_eq!(r.cmd(&[b"COMMAND", b"INFO", b"config"]), "*1\r\n*-1\r\n");
    for (args, why) in [
        (["--rename-command", "nosuch", "x"], "No such command in rename-command"),
        (["--rename-command", "get", "set"], "Target command name already exists"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_latch-server")).args(args).output().unwrap();
        assert!(!out.status.success());
        let text = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(why), "{text}");
    }
}
