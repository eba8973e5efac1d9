//! The process as redis-server runs it: `daemonize`, the pid file, and the startup banner (the
//! logo with its ` PID: ` line, which tools and Redis's test suite wait for).

use engine::config::Config;
use std::io::IsTerminal;

/// Redis's `daemonize()`: fork, the parent exits at once, the child starts a new session and its
/// standard streams go to /dev/null. Must run before any thread is started.
pub fn daemonize() {
    // SAFETY: called from `main` before the tokio runtime or any other thread of ours exists, so the
    // child is a complete copy of a single-threaded program (jemalloc's own fork handlers keep its
    // state consistent across fork, as for Redis's BGSAVE child). The parent calls only `_exit`.
    match unsafe { libc::fork() } {
        -1 => {
            eprintln!("Can't daemonize: fork failed: {}", std::io::Error::last_os_error());
            std::process::exit(1);
        }
        0 => {}
        // SAFETY: `_exit` ends the parent without running atexit handlers or destructors, the
        // state they would clean up now belongs to the child.
        _ => unsafe { libc::_exit(0) },
    }
    // SAFETY: `setsid` takes no pointers; it fails only if we already lead a process group, which a
    // fresh child of fork cannot.
    unsafe { libc::setsid() };
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        for fd in 0..=2 {
            // SAFETY: `null` is an open descriptor for the duration of the call; dup2 onto the
            // standard descriptors replaces them atomically and leaves `null` open (closed on drop).
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

/// The pid file, written at startup when `pidfile` is set or the server daemonized, removed at a
/// clean exit (dropped).
pub struct PidFile(Option<std::path::PathBuf>);

impl PidFile {
    /// Redis's `createPidFile`: a daemon with no `pidfile` writes `/var/run/latch.pid`; a failure to
    /// write is a warning, not fatal.
    pub fn create(config: &Config) -> PidFile {
        let daemon = config.get("daemonize").as_deref() == Some("yes");
        let path = match config.get("pidfile").filter(|p| !p.is_empty()) {
            Some(p) => p,
            None if daemon => "/var/run/latch.pid".to_string(),
            None => return PidFile(None),
        };
        match std::fs::write(&path, format!("{}\n", std::process::id())) {
            Ok(()) => PidFile(Some(path.into())),
            Err(e) => {
                tracing::warn!("Failed to write PID file: {}", crate::net::strerror(&e));
                PidFile(None)
            }
        }
    }
}

impl PidFile {
    /// Removes the file without a log line: a server that fails to start ends its log with why
    /// (Redis exits there, and the suite reads the last line).
    pub fn remove_quietly(mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            tracing::info!("Removing the pid file.");
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The logo, or Redis's one-line "Running mode" notice. The logo shows when `always-show-logo` is
/// on, or when the log is a terminal (stdout, no syslog), as in Redis.
pub fn announce(config: &Config, port: u16) {
    let yes = |name: &str| config.get(name).as_deref() == Some("yes");
    let to_terminal = config.get("logfile").unwrap_or_default().is_empty()
        && !yes("syslog-enabled")
        && std::io::stdout().is_terminal();
    if yes("always-show-logo") || to_terminal {
        crate::log::raw(&logo(port, std::process::id()));
    } else {
        tracing::info!("Running mode=standalone, port={port}.");
    }
}

fn logo(port: u16, pid: u32) -> String {
    let version = format!(
        "Latch {} (Redis {} compatible) {} bit",
        engine::server::LATCH_VERSION,
        engine::server::REDIS_VERSION,
        usize::BITS
    );
    let art = [
        r"            .-------.             ",
        r"          .'  .---.  '.           ",
        r"          |  |     |  |           ",
        r"          |  |     |  |           ",
        r"       .--'--'-----'--'--.        ",
        r"       |                 |        ",
        r"       |       (_)       |        ",
        r"       |       |_|       |        ",
        r"       |                 |        ",
        r"       '-----------------'        ",
    ];
    let side = [
        version,
        String::new(),
        "Running in standalone mode".to_string(),
        format!("Port: {port}"),
        format!("PID: {pid}"),
        String::new(),
        "Locks, counters, queues: SET NX PX and friends".to_string(),
    ];
    let mut out = String::from("\n");
    for (i, line) in art.iter().enumerate() {
        out.push_str(line);
        if let Some(s) = side.get(i.wrapping_sub(1)).filter(|s| !s.is_empty()) {
            out.push_str(s);
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_logo_carries_the_port_and_pid_lines_tools_wait_for() {
        let l = super::logo(6380, 4242);
        assert!(l.contains(" Port: 6380\n"), "{l}");
        assert!(l.contains(" PID: 4242\n"), "{l}");
    }
}
