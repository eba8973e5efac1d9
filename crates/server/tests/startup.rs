//! The startup contract of redis-server, which operators' tools and Redis's own test harness rely
//! on: the log's line format, the logo's ` PID: ` line, `pidfile`, `daemonize`, a port in use,
//! `port 0`, and the last words at shutdown.

mod common;
use common::Latch;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_latch-server");

/// A temporary directory of this test's own, removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("latch-startup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    fn path(&self, f: &str) -> String {
        self.0.join(f).to_str().unwrap().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every line the server writes after "Ready to accept connections", until it exits.
fn rest_of_log(l: &mut Latch) -> String {
    let mut out = String::new();
    while let Ok(line) = l.log.recv_timeout(Duration::from_secs(10)) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `pid:M dd Mon yyyy hh:mm:ss.mmm <mark> message`, as Redis's serverLogRaw writes it.
fn is_redis_log_line(line: &str, pid: u32) -> bool {
    let Some(rest) = line.strip_prefix(&format!("{pid}:M ")) else { return false };
    let b = rest.as_bytes();
    // "25 Nov 2026 14:35:56.626 * "
    rest.len() > 27
        && b[..2].iter().all(u8::is_ascii_digit)
        && b[2] == b' '
        && ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].contains(&&rest[3..6])
        && b[6] == b' '
        && b[7..11].iter().all(u8::is_ascii_digit)
        && &rest[11..12] == " "
        && b[14] == b':'
        && b[17] == b':'
        && b[20] == b'.'
        && b[24] == b' '
        && matches!(b[25], b'.' | b'-' | b'*' | b'#')
        && b[26] == b' '
}

#[test]
fn the_log_reads_like_redis_servers_with_the_logo_and_its_pid_line() {
    let (mut l, log) = Latch::start_exact(&["--bind", "127.0.0.1", "--port", "$PORT", "--always-show-logo", "yes"]);
    let pid = l.pid();
    assert!(log.contains(&format!(" PID: {pid}\n")), "{log}");
    assert!(log.contains(&format!(" Port: {}\n", l.port)), "{log}");
    let prefixed: Vec<&str> = log.lines().filter(|x| x.starts_with(&format!("{pid}:"))).collect();
    assert!(prefixed.len() >= 4, "{log}");
    for line in &prefixed {
        assert!(is_redis_log_line(line, pid), "not in Redis's format: {line:?}");
    }
    let pos = |s: &str| log.find(s).unwrap_or_else(|| panic!("no {s:?} in\n{log}"));
    assert!(pos("Latch is starting") < pos(" PID: "));
    assert!(pos(" PID: ") < pos("# Server initialized"));
    assert!(pos("# Server initialized") < pos("* Ready to accept connections"));
    assert_eq!(log.matches("Ready to accept connections").count(), 1, "{log}");
    assert!(log.contains("# Warning: no config file specified"), "{log}");

    // Without always-show-logo (and not on a terminal): Redis's one-line notice instead.
    let (_m, log) = Latch::start_exact(&["--bind", "127.0.0.1", "--port", "$PORT"]);
    assert!(!log.contains(" PID: "), "{log}");
    assert!(log.contains("* Running mode=standalone, port="), "{log}");

    // SIGTERM: Redis's last words.
    assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    let rest = rest_of_log(&mut l);
    assert!(rest.contains("# Received SIGTERM scheduling shutdown..."), "{rest}");
    assert!(rest.contains("# User requested shutdown..."), "{rest}");
    assert!(rest.contains("ready to exit, bye bye..."), "{rest}");
}

#[test]
fn pidfile_holds_the_pid_while_running_and_is_removed_at_exit() {
    let dir = TempDir::new("pidfile");
    let pidfile = dir.path("latch.pid");
    let (mut l, _) = Latch::start_exact(&["--bind", "127.0.0.1", "--port", "$PORT", "--pidfile", &pidfile]);
    assert_eq!(std::fs::read_to_string(&pidfile).unwrap(), format!("{}\n", l.pid()));
    let mut r = l.raw();
    r.send(b"SHUTDOWN NOSAVE\r\n");
    assert!(r.closed());
    let st = l.wait_exit(Duration::from_secs(10)).expect("exited");
    assert!(st.success());
    assert!(rest_of_log(&mut l).contains("* Removing the pid file."));
    assert!(!std::path::Path::new(&pidfile).exists());

    // A pid file that cannot be written is a warning, not a reason to stop.
    let (_l, log) = Latch::start_exact(&[
        "--bind",
        "127.0.0.1",
        "--port",
        "$PORT",
        "--pidfile",
        &dir.path("no/such/dir/latch.pid"),
    ]);
    assert!(log.contains("# Failed to write PID file: No such file or directory"), "{log}");
}

#[test]
fn daemonize_detaches_writes_the_pidfile_and_logs_to_the_logfile() {
    let dir = TempDir::new("daemon");
    let (pidfile, logfile) = (dir.path("d.pid"), dir.path("d.log"));
    for _ in 0..20 {
        let port = common::free_port();
        // The command returns once the parent has forked the daemon and exited.
        let st = Command::new(BIN)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--daemonize", "yes"])
            .args(["--pidfile", &pidfile, "--logfile", &logfile, "--always-show-logo", "yes"])
            // SIGTERM saves (Redis's default save points): into this test's directory.
            .args(["--dir", &dir.path(".")])
            .status()
            .unwrap();
        assert!(st.success());
        let deadline = Instant::now() + Duration::from_secs(20);
        let log = loop {
            let log = std::fs::read_to_string(&logfile).unwrap_or_default();
            if log.contains("Ready to accept connections") || log.contains("Failed listening") {
                break log;
            }
            assert!(Instant::now() < deadline, "the daemon did not start; log:\n{log}");
            std::thread::sleep(Duration::from_millis(20));
        };
        if log.contains("Failed listening") {
            let _ = std::fs::remove_file(&logfile);
            continue;
        }
        let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        // Stops the daemon (this test's own grandchild) if an assertion below fails.
        struct StopOnDrop(u32);
        impl Drop for StopOnDrop {
            fn drop(&mut self) {
                let _ = Command::new("kill").args(["-TERM", &self.0.to_string()]).status();
            }
        }
        let stop = StopOnDrop(pid);
        assert!(log.contains(&format!(" PID: {pid}\n")), "{log}");
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        std::io::Write::write_all(&mut s, b"PING\r\n").unwrap();
        let mut buf = [0u8; 7];
        std::io::Read::read_exact(&mut s, &mut buf).unwrap();
        assert_eq!(&buf, b"+PONG\r\n");
        // The daemon is this test's own child's child: stop it by the pid it wrote (once: the
        // guard is disarmed, so that a pid reused later is never signalled).
        std::mem::forget(stop);
        assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::path::Path::new(&pidfile).exists() {
            assert!(Instant::now() < deadline, "the daemon did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = std::fs::read_to_string(&logfile).unwrap();
        assert!(log.contains("ready to exit, bye bye..."), "{log}");
        return;
    }
    panic!("no free port");
}

#[test]
fn a_port_in_use_is_fatal_with_redis_words() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = Command::new(BIN).args(["--bind", "127.0.0.1", "--port", &port.to_string()]).output().unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{log}");
    assert!(
        log.contains(&format!(
            "# Warning: Could not create server TCP listening socket 127.0.0.1:{port}: bind: Address already in use"
        )),
        "{log}"
    );
    assert!(log.contains(&format!("# Failed listening on port {port} (TCP), aborting.")), "{log}");
    assert!(!log.contains(" PID: ") && !log.contains("Ready to accept"), "{log}");
}

#[test]
fn port_0_disables_tcp_as_in_redis() {
    let out = Command::new(BIN).args(["--bind", "127.0.0.1", "--port", "0"]).output().unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{log}");
    assert!(log.contains("# Configured to not listen anywhere, exiting."), "{log}");
}

#[test]
fn an_unknown_directive_in_the_file_is_reported_as_redis_does() {
    let dir = TempDir::new("baddirective");
    let conf = dir.path("bad.conf");
    std::fs::write(&conf, "port 6379\nfrobnicate yes\n").unwrap();
    let out = Command::new(BIN).arg(&conf).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("*** FATAL CONFIG FILE ERROR"), "{err}");
    assert!(err.contains("Reading the configuration file, at line 2\n>>> 'frobnicate yes'\nBad directive or wrong number of arguments"), "{err}");
}

/// DEBUG MALLCTL reaches the binary's jemalloc, as Redis's does (unit/memefficiency reads
/// `arenas.page` with it); an unknown key is jemalloc's error.
#[test]
fn debug_mallctl_reads_jemalloc() {
    let l = Latch::start(&["--enable-debug-command", "yes"]);
    let mut r = l.raw();
    let page = r.cmd(&[b"DEBUG", b"MALLCTL", b"arenas.page"]);
    let n: i64 = page.trim_start_matches(':').trim().parse().unwrap_or_else(|_| panic!("{page:?}"));
    assert!(n >= 4096 && n.count_ones() == 1, "{page}");
    assert!(r.cmd(&[b"DEBUG", b"MALLCTL", b"no.such.key"]).starts_with("-ERR "));
}

/// CONFIG SET loglevel takes effect at once: a listener's verbose "Listening on" line is not
/// written at `warning`, and is at `verbose`.
#[test]
fn config_set_loglevel_applies_at_once() {
    let (l, _) = Latch::start_exact(&["--bind", "127.0.0.1", "--port", "$PORT"]);
    let mut r = l.raw();
    let (quiet, loud) = (common::free_port(), common::free_port());
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"loglevel", b"warning"]), "+OK\r\n");
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"port", quiet.to_string().as_bytes()]), "+OK\r\n");
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"loglevel", b"verbose"]), "+OK\r\n");
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"port", loud.to_string().as_bytes()]), "+OK\r\n");
    let mut seen = String::new();
    while let Ok(line) = l.log.recv_timeout(Duration::from_secs(5)) {
        seen.push_str(&line);
        seen.push('\n');
        if line.contains(&format!("Listening on 127.0.0.1:{loud}")) {
            break;
        }
    }
    assert!(seen.contains(&format!("- Listening on 127.0.0.1:{loud}")), "{seen}");
    assert!(!seen.contains(&format!("Listening on 127.0.0.1:{quiet}")), "{seen}");
}

#[test]
fn dash_v_answers_in_redis_servers_form_with_the_redis_version_latch_implements() {
    let out = Command::new(BIN).arg("-v").output().expect("run -v");
    let text = String::from_utf8_lossy(&out.stdout);
    // Tools parse ` v=MAJOR.` (the `redis` crate's test harness, for one).
    let v = text.split_whitespace().find_map(|w| w.strip_prefix("v=")).expect("a v= field");
    assert_eq!(v, engine::server::REDIS_VERSION, "{text}");
    assert!(text.starts_with("Latch server v=7.") && text.contains(" build=latch-"), "{text}");
}

/// `watchdog-period`: a server held by DEBUG SLEEP past the period logs Redis's watchdog block
/// once; with the period at 0 (the default) nothing is logged for the same stall.
#[test]
fn the_watchdog_logs_a_stall_longer_than_its_period() {
    let l = Latch::start(&["--enable-debug-command", "yes"]);
    let mut r = l.raw();
    let stall_logged = |r: &mut common::Raw| {
        assert_eq!(r.cmd(&[b"DEBUG", b"SLEEP", b"0.6"]), "+OK\r\n");
        assert_eq!(r.cmd(&[b"PING"]), "+PONG\r\n");
        let mut seen = String::new();
        while let Ok(line) = l.log.recv_timeout(Duration::from_millis(700)) {
            seen.push_str(&line);
            seen.push('\n');
        }
        seen
    };
    let off = stall_logged(&mut r);
    assert!(!off.contains("WATCHDOG"), "{off}");
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"watchdog-period", b"200"]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(300));
    let on = stall_logged(&mut r);
    assert_eq!(on.matches("--- WATCHDOG TIMER EXPIRED ---").count(), 1, "{on}");
    assert!(on.contains("The cron has not run for"), "{on}");
}

/// The process title as `/proc/PID/cmdline` shows it, up to its first NUL (Redis's test reads the
/// file and splits it on spaces).
fn title(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    String::from_utf8_lossy(raw.split(|&b| b == 0).next().unwrap_or_default()).into_owned()
}

#[test]
fn the_process_title_follows_proc_title_template() {
    let dir = TempDir::new("proctitle");
    let (conf, sock) = (dir.path("latch.conf"), dir.path("latch.sock"));
    std::fs::write(&conf, format!("unixsocket {sock}\nsave \"\"\n")).unwrap();
    let l = Latch::start(&[&conf]);
    let (pid, port) = (l.pid(), l.port);
    // Redis's default template, "{title} {listen-addr} {server-mode}", replaces the arguments.
    assert_eq!(title(pid), format!("{BIN} 127.0.0.1:{port}"));
    let mut r = l.raw();
    let template = "TEST {title} {listen-addr} {port} {tls-port} {unixsocket} {config-file}";
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"proc-title-template", template.as_bytes()]), "+OK\r\n");
    let conf_abs = std::fs::canonicalize(&conf).unwrap();
    let want = format!("TEST {BIN} 127.0.0.1:{port} {port} 0 {sock} {}", conf_abs.display());
    assert_eq!(title(pid), want);
    // That title is longer than the arguments were: it runs on into what was the environment.
    let port_s = port.to_string();
    let args_len: usize =
        [BIN, conf.as_str(), "--bind", "127.0.0.1", "--port", &port_s].iter().map(|a| a.len() + 1).sum();
    assert!(want.len() > args_len, "{} <= {args_len}", want.len());
    // Shorter than them; "{{" is a literal brace and "}" alone is literal.
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"proc-title-template", b"{{x} {port}"]), "+OK\r\n");
    assert_eq!(title(pid), format!("{{x}} {port}"));
    assert_eq!(r.cmd(&[b"CONFIG", b"GET", b"proc-title-template"]).lines().nth(4), Some("{{x} {port}"));
    for bad in ["{invalid-var}", "{title}", "{port", "x {"] {
        let reply = r.cmd(&[b"CONFIG", b"SET", b"proc-title-template", bad.as_bytes()]);
        assert!(reply.contains("template format is invalid or contains unknown variables"), "{bad}: {reply}");
    }
    assert_eq!(title(pid), format!("{{x}} {port}"));
    // The server still reads its environment after giving its memory to the title.
    assert_eq!(r.cmd(&[b"PING"]), "+PONG\r\n");

    // set-proc-title no: the arguments stay, until the template is set.
    let l = Latch::start(&["--set-proc-title", "no"]);
    let args = std::fs::read(format!("/proc/{}/cmdline", l.pid())).unwrap();
    let args: Vec<&[u8]> = args.split(|&b| b == 0).collect();
    assert_eq!(args[0], BIN.as_bytes());
    assert!(args.contains(&&b"--set-proc-title"[..]), "{args:?}");
    let mut r = l.raw();
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"proc-title-template", b"{title} {port}"]), "+OK\r\n");
    assert_eq!(title(l.pid()), format!("{BIN} {}", l.port));
}
