//! [`engine::host::Host`] on the real operating system: process figures from `/proc`, real files,
//! TCP client connections.

use engine::host::{Host, HostConn};
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

/// The machine Latch runs on.
pub struct OsHost;

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

impl Host for OsHost {
    /// The binary's global allocator (main.rs). Without a version: the jemalloc crate does not expose
    /// it, and Redis's own tests only look for the word (`*jemalloc*`).
    fn allocator(&self) -> &'static str {
        "jemalloc"
    }

    /// jemalloc's totals after advancing its epoch (it caches them until then), as Redis's
    /// `zmalloc_get_allocator_info` does.
    fn allocator_stats(&self) -> engine::host::AllocatorStats {
        use tikv_jemalloc_ctl::{epoch, stats};
        if epoch::advance().is_err() {
            return engine::host::AllocatorStats::default();
        }
        let read = |r: tikv_jemalloc_ctl::Result<usize>| r.map_or(0, |n| n as u64);
        engine::host::AllocatorStats {
            allocated: read(stats::allocated::read()),
            active: read(stats::active::read()),
            resident: read(stats::resident::read()),
        }
    }

    /// The counting allocator's total (`alloc.rs`).
    fn used_memory(&self) -> u64 {
        crate::alloc::used()
    }

    fn set_proc_title(&self, title: &dyn Fn(&str, &str) -> Option<String>) {
        crate::proctitle::set(title)
    }

    fn open_files_for(&self, maxclients: u64) -> Result<u64, String> {
        crate::net::adjust_open_files_limit(maxclients)
    }

    /// jemalloc's mallctl, as Redis's `mallctl_int`: the value's width is not known, so 8, 4 and
    /// then 1 byte are tried (jemalloc refuses a size that is not the key's own).
    fn mallctl(&self, name: &str, value: Option<i64>) -> Option<Result<i64, String>> {
        use tikv_jemalloc_ctl::raw;
        if name.contains('\0') {
            return Some(Err("Invalid argument".into()));
        }
        let key = format!("{name}\0");
        let key = key.as_bytes();
        // jemalloc's own description of the failure (the crate does not expose the errno).
        let errno = |e: tikv_jemalloc_ctl::Error| e.to_string();
        // SAFETY: `key` is NUL-terminated without interior NULs (checked above), as `raw` requires.
        // Every type tried (i64, i32, u8) is valid for any bit pattern, and jemalloc reads or writes
        // only when the size given is the key's own (EINVAL otherwise), so no value is made from
        // bytes of another type and no write goes past the buffer. Booleans are read as u8 and
        // written as 0 or 1.
        let r = unsafe {
            if let Ok(old) = raw::read::<i64>(key) {
                value.map_or(Ok(()), |v| raw::write::<i64>(key, v)).map(|()| old)
            } else if let Ok(old) = raw::read::<i32>(key) {
                value.map_or(Ok(()), |v| raw::write::<i32>(key, v as i32)).map(|()| i64::from(old))
            } else {
                match raw::read::<u8>(key) {
                    Ok(old) => {
                        value.map_or(Ok(()), |v| raw::write::<u8>(key, u8::from(v != 0))).map(|()| i64::from(old))
                    }
                    Err(e) => Err(e),
                }
            }
        };
        Some(r.map_err(errno))
    }

    /// `/proc/self/oom_score_adj`.
    fn oom_score_adj(&self) -> Option<i64> {
        read("/proc/self/oom_score_adj").and_then(|s| s.trim().parse().ok())
    }

    fn set_oom_score_adj(&self, value: i64) -> Result<(), String> {
        std::fs::write("/proc/self/oom_score_adj", format!("{value}\n")).map_err(|e| {
            tracing::warn!("Unable to write oom_score_adj: {}", crate::net::strerror(&e));
            e.to_string()
        })
    }

    fn relisten(&self, bind: &str, port: u16) -> Result<(), String> {
        crate::net::relisten(false, bind, port)
    }

    fn relisten_tls(&self, bind: &str, port: u16) -> Result<(), String> {
        crate::net::relisten(true, bind, port)
    }

    fn configure_tls(&self, value: &dyn Fn(&str) -> String) -> Result<(), String> {
        crate::tls::configure(value)
    }

    fn set_log_level(&self, loglevel: &str) {
        crate::log::set_level(loglevel);
    }

    fn segfault(&self) {
        // SAFETY: raise takes a plain signal number and touches no memory of ours; the handler
        // `crash::install` set (or the default action) then ends the process.
        unsafe {
            libc::raise(libc::SIGSEGV);
        }
    }
    fn print(&self, text: &str) {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }

    fn log(&self, level: engine::host::LogLevel, msg: &str) {
        use engine::host::LogLevel;
        match level {
            LogLevel::Debug => tracing::trace!("{msg}"),
            LogLevel::Verbose => tracing::debug!("{msg}"),
            LogLevel::Notice => tracing::info!("{msg}"),
            LogLevel::Warning => tracing::warn!("{msg}"),
        }
    }

    /// Second field of `/proc/self/statm`, in 4 KiB pages.
    fn rss_bytes(&self) -> u64 {
        read("/proc/self/statm")
            .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
            .map_or(0, |pages| pages.saturating_mul(4096))
    }

    /// `MemTotal` of `/proc/meminfo`.
    fn total_memory_bytes(&self) -> u64 {
        read("/proc/meminfo")
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<u64>().ok()))
            })
            .map_or(0, |kb| kb.saturating_mul(1024))
    }

    fn pid(&self) -> u32 {
        std::process::id()
    }

    /// utime and stime (fields 14 and 15) of `/proc/self/stat`, in clock ticks of 1/100 s.
    fn cpu_seconds(&self) -> (f64, f64) {
        let Some(s) = read("/proc/self/stat") else { return (0.0, 0.0) };
        // The command name (field 2) may contain spaces; fields resume after the last ')'.
        let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) as f64 / 100.0;
        // After ')', field 3 is at index 0: utime (14) is index 11, stime (15) index 12.
        (ticks(11), ticks(12))
    }

    fn os(&self) -> String {
        let release = read("/proc/sys/kernel/osrelease").unwrap_or_default();
        let os = match std::env::consts::OS {
            "linux" => "Linux",
            "macos" => "Darwin",
            o => o,
        };
        format!("{os} {} {}", release.trim(), std::env::consts::ARCH)
    }

    fn working_dir(&self) -> String {
        std::env::current_dir().map(|d| d.to_string_lossy().into_owned()).unwrap_or_else(|_| ".".into())
    }

    fn read_file(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    /// Writes a temporary file beside `path` and renames it over the original, as Redis does.
    fn replace_file(&self, path: &Path, contents: &str) -> io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".tmp-{}", std::process::id()));
        std::fs::write(&tmp, contents)?;
        std::fs::rename(&tmp, path)
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    /// Redis's `rdbSave`: a temporary file in the same directory, fsync, rename, then the
    /// directory's fsync so that the rename itself is on disk.
    fn write_durably(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.write_durably_with(path, &mut |w| w.write_all(data))
    }

    fn write_durably_with(
        &self,
        path: &Path,
        fill: &mut dyn FnMut(&mut dyn io::Write) -> io::Result<()>,
    ) -> io::Result<()> {
        use std::io::Write;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        // Unique per write: a SHUTDOWN's save may overlap a background one.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!("temp-{}-{n}.rdb", std::process::id()));
        let result = (|| {
            let mut f = io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
            fill(&mut f)?;
            f.flush()?;
            f.get_ref().sync_all()?;
            drop(f);
            std::fs::rename(&tmp, path)?;
            std::fs::File::open(dir)?.sync_all()
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    fn rename_durably(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)?;
        let dir = to.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::File::open(dir)?.sync_all()
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn in_background(&self, job: Box<dyn FnOnce() + Send>) -> io::Result<()> {
        std::thread::Builder::new()
            .name("latch-bgsave".into())
            .spawn(move || {
                // Below the threads that serve clients: a snapshot takes longer on a busy machine
                // rather than slowing the commands down (Redis's child competes at equal priority).
                // SAFETY: setpriority takes plain integers; `who` 0 with PRIO_PROCESS names the
                // calling thread on Linux (its tid), and a failure only leaves the priority as is.
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, 0, 10);
                }
                job();
                // What the job allocated and freed (a value freed by UNLINK, a snapshot's buffers)
                // counts in used_memory from now on.
                crate::alloc::publish();
            })
            .map(drop)
    }

    /// Redis's `anetTcpGenericConnect` with a timeout: every address the name resolves to is tried
    /// in turn, each given `timeout_ms`. A name that does not resolve is `InvalidInput`.
    fn connect(&self, host: &str, port: u16, timeout_ms: u64) -> io::Result<Box<dyn HostConn>> {
        let timeout = Duration::from_millis(timeout_ms.max(1));
        let unresolved = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        let addrs = (host, port).to_socket_addrs().map_err(|e| unresolved(e.to_string()))?;
        let mut last = unresolved(format!("{host} resolves to no address"));
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => {
                    s.set_nodelay(true)?;
                    return Ok(Box::new(Tcp(s)));
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn resolve_dir(&self, value: &str) -> Result<String, String> {
        let path = Path::new(value);
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Ok(std::fs::canonicalize(path)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| value.into())),
            Ok(_) => Err("Not a directory".into()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err("No such file or directory".into()),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Err("Permission denied".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// A connection from [`OsHost::connect`].
struct Tcp(TcpStream);

impl io::Read for Tcp {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl io::Write for Tcp {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl HostConn for Tcp {
    fn set_timeout(&mut self, timeout_ms: u64) -> io::Result<()> {
        let t = Some(Duration::from_millis(timeout_ms.max(1)));
        self.0.set_read_timeout(t)?;
        self.0.set_write_timeout(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let h = OsHost;
        assert!(h.rss_bytes() > 0);
        assert!(h.total_memory_bytes() > 0);
        assert!(h.os().starts_with("Linux"));
        assert_eq!(h.resolve_dir("/nonexistent-dir-xyz"), Err("No such file or directory".into()));
        assert!(h.resolve_dir("/tmp").is_ok());
    }

    #[test]
    fn connects_with_timeouts() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = l.local_addr().expect("addr").port();
        let mut c = OsHost.connect("127.0.0.1", port, 1000).expect("connect");
        let (mut peer, _) = l.accept().expect("accept");
        c.write_all(b"PING\r\n").expect("write");
        let mut got = [0u8; 6];
        peer.read_exact(&mut got).expect("peer reads");
        assert_eq!(&got, b"PING\r\n");
        // Nothing comes back: the read gives up after the timeout.
        c.set_timeout(50).expect("timeout");
        let e = c.read(&mut got).expect_err("times out");
        assert!(engine::host::is_timeout(&e), "{e:?}");
        drop(l);
        drop(peer);
        // A port nobody listens on; a name nobody has.
        let e = OsHost.connect("127.0.0.1", port, 1000).err().expect("refused");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        let e = OsHost.connect("nonexistent.invalid", port, 1000).err().expect("unresolved");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
