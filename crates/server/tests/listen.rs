//! The network side of redis-server, through the real binary: `bind` (Redis's log lines for an
//! address that cannot be had, optional addresses, host names, `* -::*` in protected mode),
//! `tcp-backlog` and `tcp-keepalive` on the sockets (read back with `ss` where it is installed),
//! `maxclients` (at startup against the open-files limit, and at runtime), and `rename-command`.
//! The refusal of non-loopback addresses is unit-tested in `net.rs`.
//!
//! Every connection here goes to a loopback address; addresses this machine does not have are only
//! ever bound (and fail), never connected to.

mod common;
use common::Latch;
use std::io::Read;
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_latch-server");

/// Runs the server with `args` until it exits by itself; its exit status and output.
fn run_to_exit(args: &[&str]) -> (std::process::ExitStatus, String) {
    let out = Command::new(BIN).args(args).output().expect("run latch-server");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status, text)
}

/// `ss` output lines for `args`, or None where `ss` is not installed.
fn ss(args: &[&str]) -> Option<Vec<String>> {
    let out = Command::new("ss").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect())
}

#[test]
fn bind_failures_log_and_stop_as_redis() {
    let p = common::free_port().to_string();
    // 192.0.2.1 is TEST-NET-1: no machine has it, so binding fails with EADDRNOTAVAIL.
    let (st, log) = run_to_exit(&["--port", &p, "--bind", "192.0.2.1"]);
    assert_eq!(st.code(), Some(1), "{log}");
    assert!(
        log.contains(&format!(
            "Warning: Could not create server TCP listening socket 192.0.2.1:{p}: bind: Cannot assign requested address"
        )),
        "{log}"
    );
    assert!(log.contains(&format!("Failed listening on port {p} (TCP), aborting.")), "{log}");

    // Optional and missing: skipped after the same warning; with nothing else, Redis's last words.
    let (st, log) = run_to_exit(&["--port", &p, "--bind", "-192.0.2.1"]);
    assert_eq!(st.code(), Some(1), "{log}");
    assert!(log.contains(&format!("Could not create server TCP listening socket 192.0.2.1:{p}: bind: ")), "{log}");
    assert!(log.contains("Configured to not listen anywhere, exiting."), "{log}");
    assert!(!log.contains("Failed listening"), "{log}");

    // A name that does not resolve is fatal (the text after ':' is the resolver's gai_strerror).
    let (st, log) = run_to_exit(&["--port", &p, "--bind", "nonsense-address"]);
    assert_eq!(st.code(), Some(1), "{log}");
    assert!(
        log.contains(&format!("Warning: Could not create server TCP listening socket nonsense-address:{p}: ")),
        "{log}"
    );
    assert!(log.contains(&format!("Failed listening on port {p} (TCP), aborting.")), "{log}");
}

#[test]
fn optional_addresses_are_skipped_and_names_resolve() {
    let (s, log) = Latch::start_exact(&["--port", "$PORT", "--bind", "-192.0.2.1 127.0.0.1", "--loglevel", "verbose"]);
    assert!(
        log.contains(&format!(
            "Warning: Could not create server TCP listening socket 192.0.2.1:{}: bind: Cannot assign requested address",
            s.port
        )),
        "{}",
        log
    );
    assert!(log.contains(&format!("Listening on 127.0.0.1:{}", s.port)), "{}", log);
    assert_eq!(call(("127.0.0.1", s.port), "PING"), "+PONG\r\n");
    assert_eq!(call(("127.0.0.1", s.port), "CONFIG GET bind"), "*2\r\n$4\r\nbind\r\n$20\r\n-192.0.2.1 127.0.0.1\r\n");

    // getaddrinfo, as Redis: a host name binds its IPv4 address (no ':' in the word).
    let (s, log) = Latch::start_exact(&["--port", "$PORT", "--bind", "localhost", "--loglevel", "verbose"]);
    assert!(log.contains(&format!("Listening on 127.0.0.1:{}", s.port)), "{}", log);
    assert_eq!(call(("127.0.0.1", s.port), "PING"), "+PONG\r\n");
}

/// Sends one inline command to `addr` on a new connection and returns the first complete reply.
fn call(addr: (&str, u16), line: &str) -> String {
    let mut c = std::net::TcpStream::connect(addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    std::io::Write::write_all(&mut c, format!("{line}\r\n").as_bytes()).unwrap();
    let mut buf = bytes::BytesMut::new();
    loop {
        let mut probe = buf.clone();
        if let Ok(Some(_)) = resp::decode_reply(&mut probe) {
            return String::from_utf8_lossy(&buf).into_owned();
        }
        let mut chunk = [0u8; 4096];
        let n = c.read(&mut chunk).unwrap();
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn protected_mode_serves_loopback_and_follows_config_set() {
    // The default: protected mode on, no password.
    let l = Latch::start(&[]);
    let mut r = l.raw();
    assert_eq!(r.cmd(&[b"CONFIG", b"GET", b"protected-mode"]), "*2\r\n$14\r\nprotected-mode\r\n$3\r\nyes\r\n");
    for _ in 0..3 {
        assert_eq!(l.raw().cmd(&[b"PING"]), "+PONG\r\n");
    }
    // Changed live: new loopback connections are served whatever the setting.
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"protected-mode", b"no"]), "+OK\r\n");
    assert_eq!(l.raw().cmd(&[b"PING"]), "+PONG\r\n");
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"protected-mode", b"yes", b"requirepass", b"pw"]), "+OK\r\n");
    let mut c = l.raw();
    assert!(c.cmd(&[b"PING"]).starts_with("-NOAUTH"));
    assert_eq!(c.cmd(&[b"AUTH", b"pw"]), "+OK\r\n");
    let stats = c.cmd(&[b"INFO", b"stats"]);
    assert!(stats.contains("rejected_connections:0"), "{stats}");
    assert!(stats.contains("total_connections_received:6"), "{stats}");

    // ::1 is local too (skipped where the machine has no IPv6 loopback).
    if std::net::TcpListener::bind("[::1]:0").is_ok() {
        let (s, _) = Latch::start_exact(&["--port", "$PORT", "--bind", "::1"]);
        assert_eq!(call(("::1", s.port), "PING"), "+PONG\r\n");
    }
}

#[test]
fn tcp_backlog_is_the_listen_backlog() {
    let (s, _) = Latch::start_exact(&["--port", "$PORT", "--bind", "127.0.0.1", "--tcp-backlog", "100"]);
    let somaxconn: Option<i32> =
        std::fs::read_to_string("/proc/sys/net/core/somaxconn").ok().and_then(|t| t.trim().parse().ok());
    if let Some(lines) = ss(&["-ltnH", &format!("sport = :{}", s.port)]) {
        // A listening socket's Send-Q is its backlog.
        let line = lines.iter().find(|l| l.contains(&format!("127.0.0.1:{}", s.port))).expect("listening socket");
        let backlog: i32 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert_eq!(backlog, somaxconn.map_or(100, |m| m.min(100)), "{line}");
    }
    // Above somaxconn: Redis's warning.
    if let Some(max) = somaxconn.filter(|&m| m > 0 && m < i32::MAX) {
        let want = max + 1;
        let (_s, log) =
            Latch::start_exact(&["--port", "$PORT", "--bind", "127.0.0.1", "--tcp-backlog", &want.to_string()]);
        let warning = format!(
            "WARNING: The TCP backlog setting of {want} cannot be enforced because /proc/sys/net/core/somaxconn is set to the lower value of {max}."
        );
        assert!(log.contains(&warning), "{}", log);
    }
}

#[test]
fn tcp_keepalive_applies_to_new_connections() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    assert_eq!(r.cmd(&[b"CONFIG", b"GET", b"tcp-keepalive"]), "*2\r\n$13\r\ntcp-keepalive\r\n$3\r\n300\r\n");
    // The server's side of a connection from `c`, as ss shows it (timer:(keepalive,...) when on).
    let server_side = |c: &common::Raw| -> Option<String> {
        let peer = c.s.local_addr().unwrap().port();
        let lines = ss(&["-tnoH", "state", "established", &format!("( sport = :{} and dport = :{peer} )", l.port)])?;
        Some(lines.concat())
    };
    let Some(line) = server_side(&r) else { return };
    // 300 s, counting down: "5min" at once, "4min" a moment later.
    assert!(line.contains("timer:(keepalive,4min") || line.contains("timer:(keepalive,5min"), "{line}");
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"tcp-keepalive", b"30"]), "+OK\r\n");
    let mut c = l.raw();
    assert_eq!(c.cmd(&[b"PING"]), "+PONG\r\n");
    let line = server_side(&c).unwrap();
    assert!(line.contains("timer:(keepalive,2") || line.contains("timer:(keepalive,30sec"), "{line}");
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"tcp-keepalive", b"0"]), "+OK\r\n");
    let mut c = l.raw();
    assert_eq!(c.cmd(&[b"PING"]), "+PONG\r\n");
    let line = server_side(&c).unwrap();
    assert!(!line.is_empty() && !line.contains("keepalive"), "{line}");
}

#[test]
fn maxclients_at_runtime() {
    let l = Latch::start(&["--maxclients", "2"]);
    let (mut a, mut b) = (l.raw(), l.raw());
    assert_eq!(a.cmd(&[b"PING"]), "+PONG\r\n");
    assert_eq!(b.cmd(&[b"PING"]), "+PONG\r\n");
    let mut c = l.raw();
    let mut got = Vec::new();
    c.s.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"-ERR max number of clients reached\r\n");
    // Raised live: the next connection is served; lowered below the clients connected, nobody is
    // dropped but newcomers are refused.
    assert_eq!(a.cmd(&[b"CONFIG", b"SET", b"maxclients", b"3"]), "+OK\r\n");
    let mut d = l.raw();
    assert_eq!(d.cmd(&[b"PING"]), "+PONG\r\n");
    assert_eq!(a.cmd(&[b"CONFIG", b"SET", b"maxclients", b"1"]), "+OK\r\n");
    assert_eq!(d.cmd(&[b"PING"]), "+PONG\r\n");
    let mut e = l.raw();
    let mut got = Vec::new();
    e.s.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"-ERR max number of clients reached\r\n");
    let stats = a.cmd(&[b"INFO", b"stats"]);
    assert!(stats.contains("rejected_connections:2"), "{stats}");
    assert!(stats.contains("total_connections_received:3"), "{stats}");
    assert_eq!(a.cmd(&[b"CONFIG", b"GET", b"maxclients"]), "*2\r\n$10\r\nmaxclients\r\n$1\r\n1\r\n");
}

#[test]
fn rename_command_from_a_file_and_its_errors() {
    let dir = std::env::temp_dir().join(format!("latch-network-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("rename.conf");
    std::fs::write(&conf, "# renames\nrename-command SET MySet\nrename-command flushall \"\"\n").unwrap();
    let l = Latch::start(&[conf.to_str().unwrap()]);
    let mut r = l.raw();
    let plain_server = Latch::start(&[]);
    let mut plain = plain_server.raw();
    let count = |r: &mut common::Raw| r.cmd(&[b"COMMAND", b"COUNT"])[1..].trim_end().parse::<i64>().unwrap();
    // Names are case-insensitive, as Redis's command table.
    assert_eq!(r.cmd(&[b"myset", b"k", b"v"]), "+OK\r\n");
    assert_eq!(r.cmd(&[b"MYSET", b"k", b"w"]), "+OK\r\n");
    assert_eq!(r.cmd(&[b"GET", b"k"]), "$1\r\nw\r\n");
    assert_eq!(r.cmd(&[b"set", b"k", b"v"]), "-ERR unknown command 'set', with args beginning with: 'k' 'v' \r\n");
    assert_eq!(r.cmd(&[b"FLUSHALL"]), "-ERR unknown command 'FLUSHALL', with args beginning with: \r\n");
    // A disabled command leaves the table; a renamed one is still counted, and its statistics keep
    // its own name.
    assert_eq!(count(&mut r), count(&mut plain) - 1);
    assert!(r.cmd(&[b"INFO", b"commandstats"]).contains("cmdstat_set:calls=2,"));
    assert_eq!(r.cmd(&[b"COMMAND", b"GETKEYS", b"myset", b"k", b"v"]), "*1\r\n$1\r\nk\r\n");
    assert_eq!(r.cmd(&[b"COMMAND", b"INFO", b"set"]), "*1\r\n*-1\r\n");
    // Inside scripts: the old name is unknown, the new one runs.
    assert_eq!(
        r.cmd(&[b"EVAL", b"return redis.pcall('set','k','v')", b"0"]),
        "-ERR Unknown Redis command called from script\r\n"
    );
    assert_eq!(r.cmd(&[b"EVAL", b"return redis.call('MYSET','k','x')", b"0"]), "+OK\r\n");

    // Errors stop startup as Redis's, with Redis's line numbers: command-line options come after
    // the file and a newline (line 2 when there is no file).
    let bad = dir.join("bad.conf");
    std::fs::write(&bad, "port 6379\nrename-command nosuch x\n").unwrap();
    let (st, log) = run_to_exit(&[bad.to_str().unwrap()]);
    assert_eq!(st.code(), Some(1));
    assert!(log.contains("at line 2\n>>> 'rename-command nosuch x'\nNo such command in rename-command"), "{log}");
    let (st, log) = run_to_exit(&["--rename-command", "get"]);
    assert_eq!(st.code(), Some(1));
    assert!(
        log.contains("at line 2\n>>> 'rename-command \"get\"'\nBad directive or wrong number of arguments"),
        "{log}"
    );
    let (st, log) = run_to_exit(&["--rename-command", "GET", "Set"]);
    assert_eq!(st.code(), Some(1));
    assert!(log.contains(">>> 'rename-command \"GET\" \"Set\"'\nTarget command name already exists"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

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

/// Under a low open-files limit, maxclients is lowered to the limit minus Redis's 32 reserved
/// descriptors, with Redis's log lines; clients beyond maxclients get Redis's error at once.
#[test]
fn maxclients_follows_the_open_files_limit() {
    use std::io::{BufRead, BufReader};
    let bin = env!("CARGO_BIN_EXE_latch-server");
    let port = common::free_port();
    let mut child = std::process::Command::new("sh")
        .args(["-c", &format!("ulimit -n 100 && exec '{bin}' --bind 127.0.0.1 --port {port}")])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut log = String::new();
    loop {
        let line = lines.next().expect("server output").unwrap();
        log.push_str(&line);
        log.push('\n');
        if line.contains("Ready to accept connections") {
            break;
        }
    }
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

/// CONFIG SET port / bind listen anew (Redis's changeListener); when the new sockets cannot be had
/// the old ones stay, with Redis's error texts.
#[test]
fn config_set_port_and_bind_move_the_listener() {
    let l = Latch::start(&[]);
    let mut r = l.raw();
    let new_port = common::free_port();
    let set = format!("CONFIG SET port {new_port}\r\n");
    assert_eq!(r.call(set.as_bytes()), "+OK\r\n");
    assert_eq!(call(("127.0.0.1", new_port), "PING"), "+PONG\r\n");
    assert!(std::net::TcpStream::connect(("127.0.0.1", l.port)).is_err(), "the old port still listens");
    assert_eq!(
        call(("127.0.0.1", new_port), "CONFIG GET port"),
        format!("*2\r\n$4\r\nport\r\n${}\r\n{new_port}\r\n", new_port.to_string().len())
    );

    // A port in use: refused, still listening where it was.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port();
    assert_eq!(
        r.call(format!("CONFIG SET port {taken_port}\r\n").as_bytes()),
        "-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port\r\n"
    );
    assert_eq!(call(("127.0.0.1", new_port), "PING"), "+PONG\r\n");

    // An address that is not one.
    assert_eq!(
        r.call(b"CONFIG SET bind 999.999.999.999\r\n"),
        "-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.\r\n"
    );
    assert_eq!(call(("127.0.0.1", new_port), "PING"), "+PONG\r\n");
    assert_eq!(call(("127.0.0.1", new_port), "CONFIG GET bind"), "*2\r\n$4\r\nbind\r\n$9\r\n127.0.0.1\r\n");
}

/// A connection's `laddr` is its own address (Redis's getsockname), not the listener's wildcard:
/// CLIENT KILL LADDR finds clients by the address they connected to.
#[test]
fn laddr_is_the_connections_own_address() {
    let (s, _) = Latch::start_exact(&["--port", "$PORT", "--bind", "0.0.0.0"]);
    let mut c = s.raw();
    let info = c.call(b"CLIENT INFO\r\n");
    assert!(info.contains(&format!(" laddr=127.0.0.1:{} ", s.port)), "{info}");
    let mut other = s.raw();
    assert_eq!(other.call(b"PING\r\n"), "+PONG\r\n");
    assert_eq!(c.call(format!("CLIENT KILL LADDR 127.0.0.1:{}\r\n", s.port).as_bytes()), ":1\r\n");
    assert!(other.closed());
}

/// `unixsocket` / `unixsocketperm`: the socket is made (a stale file at the path replaced) with
/// the mode asked for, its clients carry the `U` flag and `path:0` addresses, and SHUTDOWN removes
/// the file, as redis-server does.
#[test]
fn unix_socket_serves_with_its_mode_and_is_removed_at_shutdown() {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixStream;
    let dir = common::TempDir::new("unixsocket");
    let path = format!("{}/latch.sock", dir.path());
    std::fs::write(&path, b"stale").unwrap();
    let mut srv = Latch::start(&["--unixsocket", &path, "--unixsocketperm", "700"]);
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    let mut s = UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let read_reply = |s: &mut UnixStream| {
        let mut buf = vec![0u8; 4096];
        let n = s.read(&mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n").unwrap();
    assert_eq!(read_reply(&mut s), "+OK\r\n");
    s.write_all(b"*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n").unwrap();
    let info = read_reply(&mut s);
    assert!(info.contains(&format!(" addr={path}:0 laddr={path}:0 ")), "{info}");
    assert!(info.contains(" flags=U "), "{info}");
    // The TCP listener serves the same data.
    assert_eq!(srv.raw().cmd(&[b"GET", b"k"]), "$1\r\nv\r\n");
    s.write_all(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n").unwrap();
    assert!(srv.wait_exit(Duration::from_secs(10)).is_some());
    assert!(std::fs::metadata(&path).is_err(), "the socket file outlived the server");
}
