//! Listening sockets and the checks at accept, as redis-server does them: `bind` addresses (`*`
//! every IPv4 interface, `::*` every IPv6 one, a leading `-` for an address that may be missing),
//! `tcp-backlog`, `tcp-keepalive`, and protected mode.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// Redis's reply to a connection refused by protected mode (`clientAcceptHandler`).
pub const DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected \
mode is enabled and no password is set for the default user. \
In this mode connections are only accepted from the loopback interface. \
If you want to connect from external computers to Redis you \
may adopt one of the following solutions: \
1) Just disable protected mode sending the command \
'CONFIG SET protected-mode no' from the loopback interface \
by connecting to Redis from the same host the server is \
running, however MAKE SURE Redis is not publicly accessible \
from internet if you do so. Use CONFIG REWRITE to make this \
change permanent. \
2) Alternatively you can just disable the protected mode by \
editing the Redis configuration file, and setting the protected \
mode option to 'no', and then restarting the server. \
3) If you started the server manually just for testing, restart \
it with the '--protected-mode no' option. \
4) Setup a an authentication password for the default user. \
NOTE: You only need to do one of the above things in order for \
the server to start accepting connections from the outside.\r\n";

/// One `bind` word: the socket address for `port`, and whether it may be missing (`-addr`).
pub fn bind_addr(word: &str, port: u16) -> Option<(SocketAddr, bool)> {
    let (optional, host) = match word.strip_prefix('-') {
        Some(h) => (true, h),
        None => (false, word),
    };
    let ip: IpAddr = match host {
        "*" => Ipv4Addr::UNSPECIFIED.into(),
        "::*" => Ipv6Addr::UNSPECIFIED.into(),
        h => h.parse().ok()?,
    };
    Some((SocketAddr::new(ip, port), optional))
}

/// A listening socket on `addr` as Redis makes one (`anetTcpServer`): SO_REUSEADDR, IPv6 sockets
/// IPv6-only (so `*` and `::*` can share a port), and `backlog` pending connections.
pub fn listen(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let domain = if addr.is_ipv6() { Domain::IPV6 } else { Domain::IPV4 };
    let s = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(backlog)?;
    TcpListener::from_std(s.into())
}

/// `/proc/sys/net/core/somaxconn`, which caps every listen backlog on Linux.
pub fn somaxconn() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn").ok()?.trim().parse().ok()
}

/// `tcp-keepalive` on an accepted connection, as Redis's `anetKeepAlive`: probes after `secs` idle,
/// every `secs / 3` (at least 1), 3 of them. 0 leaves keepalive off.
pub fn keepalive(sock: &TcpStream, secs: i64) -> io::Result<()> {
    if secs <= 0 {
        return Ok(());
    }
    let secs = secs as u64;
    let ka = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(secs))
        .with_interval(Duration::from_secs((secs / 3).max(1)))
        .with_retries(3);
    socket2::SockRef::from(sock).set_tcp_keepalive(&ka)
}

/// Whether protected mode refuses a connection from `peer` (Redis's `islocalClient`: only
/// 127.0.0.1 and ::1 are local): protected mode is on and the default user has no password.
pub fn protected_refuses(protected: bool, has_password: bool, peer: IpAddr) -> bool {
    let local = peer == IpAddr::V4(Ipv4Addr::LOCALHOST) || peer == IpAddr::V6(Ipv6Addr::LOCALHOST);
    protected && !has_password && !local
}

/// File descriptors Redis keeps for itself beyond one per client (`CONFIG_MIN_RESERVED_FDS`).
const RESERVED_FDS: u64 = 32;

/// Redis's `adjustOpenFilesLimit` at startup: raises the open-files limit to `maxclients` + 32 if it
/// is lower (down in steps of 16 to what the OS allows). Returns the `maxclients` the limit allows
/// (`maxclients` itself, or the limit minus 32), or `Err` with Redis's message when even that is
/// impossible; logs as Redis does.
pub fn adjust_open_files_limit(maxclients: u64) -> Result<u64, String> {
    let maxfiles = maxclients + RESERVED_FDS;
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the current limits into the struct it is given, a valid local.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == -1 {
        let e = io::Error::last_os_error();
        tracing::warn!(
            "Unable to obtain the current NOFILE limit ({e}), assuming 1024 and setting the max clients configuration accordingly."
        );
        return Ok(1024 - RESERVED_FDS);
    }
    let old = limit.rlim_cur;
    if old >= maxfiles {
        return Ok(maxclients);
    }
    let mut best = maxfiles;
    let mut error = None;
    while best > old {
        let want = libc::rlimit { rlim_cur: best, rlim_max: best };
        // SAFETY: setrlimit reads the struct it is given, a valid local; it changes only this
        // process's limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } != -1 {
            break;
        }
        error = Some(io::Error::last_os_error());
        if best < 16 {
            best = old;
            break;
        }
        best -= 16;
    }
    best = best.max(old);
    if best >= maxfiles {
        tracing::info!("Increased maximum number of open files to {maxfiles} (it was originally set to {old}).");
        return Ok(maxclients);
    }
    if best <= RESERVED_FDS {
        return Err(format!(
            "Your current 'ulimit -n' of {old} is not enough for the server to start. Please increase your open file limit to at least {maxfiles}. Exiting."
        ));
    }
    let reduced = best - RESERVED_FDS;
    // strerror's text, as Redis logs it (io::Error adds " (os error N)").
    let why = error.map(|e| e.to_string()).unwrap_or_default();
    let why = why.split(" (os error").next().unwrap_or_default();
    tracing::warn!("You requested maxclients of {maxclients} requiring at least {maxfiles} max file descriptors.");
    tracing::warn!("Server can't set maximum open files to {maxfiles} because of OS error: {why}.");
    tracing::warn!(
        "Current maximum open files is {best}. maxclients has been reduced to {reduced} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
    );
    Ok(reduced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_words_as_redis_reads_them() {
        assert_eq!(bind_addr("*", 6379), Some(("0.0.0.0:6379".parse().unwrap(), false)));
        assert_eq!(bind_addr("-::*", 6379), Some(("[::]:6379".parse().unwrap(), true)));
        assert_eq!(bind_addr("127.0.0.1", 1), Some(("127.0.0.1:1".parse().unwrap(), false)));
        assert_eq!(bind_addr("-::1", 1), Some(("[::1]:1".parse().unwrap(), true)));
        assert_eq!(bind_addr("nonsense", 1), None);
    }

    #[test]
    fn protected_mode_serves_loopback_or_a_password_only() {
        let remote: IpAddr = "192.0.2.7".parse().unwrap();
        let remote6: IpAddr = "2001:db8::1".parse().unwrap();
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let local6: IpAddr = "::1".parse().unwrap();
        assert!(protected_refuses(true, false, remote));
        assert!(protected_refuses(true, false, remote6));
        // Redis compares the address text with "127.0.0.1": the rest of 127/8 is not local.
        assert!(protected_refuses(true, false, "127.0.0.2".parse().unwrap()));
        assert!(!protected_refuses(true, false, local));
        assert!(!protected_refuses(true, false, local6));
        assert!(!protected_refuses(false, false, remote));
        assert!(!protected_refuses(true, true, remote));
    }

    #[tokio::test]
    async fn ipv4_and_ipv6_any_share_a_port_and_keepalive_applies() {
        let v4 = listen("0.0.0.0:0".parse().unwrap(), 511).unwrap();
        let port = v4.local_addr().unwrap().port();
        // IPv6-only: the same port on [::] does not collide with 0.0.0.0 (skipped without IPv6).
        if let Ok(v6) = listen(SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port), 511) {
            assert_eq!(v6.local_addr().unwrap().port(), port);
        }
        let client = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (accepted, _) = v4.accept().await.unwrap();
        keepalive(&accepted, 300).unwrap();
        let s = socket2::SockRef::from(&accepted);
        assert!(s.keepalive().unwrap());
        assert_eq!(s.tcp_keepalive_time().unwrap(), Duration::from_secs(300));
        assert_eq!(s.tcp_keepalive_interval().unwrap(), Duration::from_secs(100));
        assert_eq!(s.tcp_keepalive_retries().unwrap(), 3);
        drop(client);
    }
}
