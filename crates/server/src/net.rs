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

/// Redis's `listenToPort`: a socket for every `bind` word at `port` (none for port 0). A failure is
/// logged as Redis logs it, then skipped (an optional address the machine lacks) or fatal for the
/// whole set: "Failed listening on port N (TCP), aborting." and no socket is kept.
/// `tls` names the kind in the log ("TCP" or "TLS").
pub fn listen_all(binds: &str, port: u16, backlog: i32, tls: bool) -> Result<Vec<TcpListener>, ()> {
    let mut listeners = Vec::new();
    for word in binds.split_whitespace().filter(|_| port != 0) {
        let (host, optional) = bind_word(word);
        match listen(host, port, backlog) {
            Ok(l) => listeners.push(l),
            Err(e) => {
                tracing::warn!("Warning: Could not create server TCP listening socket {host}:{port}: {}", e.msg);
                if !e.skippable(optional) {
                    let kind = if tls { "TLS" } else { "TCP" };
                    tracing::error!("Failed listening on port {port} ({kind}), aborting.");
                    return Err(());
                }
            }
        }
    }
    Ok(listeners)
}

/// The running accept loops of one kind (plain TCP or TLS), kept so that CONFIG SET
/// `bind`/`port`/`tls-port` can replace them.
pub struct Listening {
    tls: bool,
    runtime: tokio::runtime::Handle,
    backlog: i32,
    /// Starts an accept loop on a socket.
    spawn: Box<dyn Fn(TcpListener) -> tokio::task::JoinHandle<()> + Send + Sync>,
    /// The loops running now, and the (bind, port) they serve.
    loops: std::sync::Mutex<(Vec<tokio::task::JoinHandle<()>>, String, u16)>,
}

static LISTENING: std::sync::OnceLock<Listening> = std::sync::OnceLock::new();
static LISTENING_TLS: std::sync::OnceLock<Listening> = std::sync::OnceLock::new();

/// Starts accept loops on `listeners` (bound to `binds` at `port`; TLS ones if `tls`) and
/// remembers them for [`relisten`]. Called once per kind, from inside the runtime.
pub fn serve(
    tls: bool,
    listeners: Vec<TcpListener>,
    binds: &str,
    port: u16,
    backlog: i32,
    spawn: impl Fn(TcpListener) -> tokio::task::JoinHandle<()> + Send + Sync + 'static,
) {
    let loops = listeners.into_iter().map(&spawn).collect();
    let l = Listening {
        tls,
        runtime: tokio::runtime::Handle::current(),
        backlog,
        spawn: Box::new(spawn),
        loops: std::sync::Mutex::new((loops, binds.to_string(), port)),
    };
    let _ = if tls { LISTENING_TLS.set(l) } else { LISTENING.set(l) };
}

/// Closes every listening socket, plain and TLS, at shutdown (Redis's `closeListeningSockets`): a
/// client connecting while the server exits is refused rather than served. Returns once the accept
/// loops have dropped their sockets.
pub async fn close_all() {
    for l in [LISTENING.get(), LISTENING_TLS.get()].into_iter().flatten() {
        let old: Vec<_> = l.loops.lock().unwrap_or_else(|e| e.into_inner()).0.drain(..).collect();
        old.iter().for_each(|t| t.abort());
        for t in old {
            let _ = t.await;
        }
    }
}

/// CONFIG SET `bind`/`port`/`tls-port` (Redis's `changeListener`): the current sockets of the kind
/// are closed, then `binds` at `port` are listened on; if that fails, the previous sockets are
/// made again and the error returned.
pub fn relisten(tls: bool, binds: &str, port: u16) -> Result<(), String> {
    let l = if tls { LISTENING_TLS.get() } else { LISTENING.get() };
    let Some(l) = l else { return Err("not listening".into()) };
    let mut loops = l.loops.lock().unwrap_or_else(|e| e.into_inner());
    // Close the sockets first: a new one on the same address and port could not be bound beside
    // them. A loop drops its socket when its task ends; wait for that.
    let old: Vec<_> = loops.0.drain(..).collect();
    old.iter().for_each(|t| t.abort());
    let wait = || {
        l.runtime.block_on(async {
            for t in old {
                let _ = t.await;
            }
        })
    };
    match tokio::runtime::Handle::try_current() {
        Ok(_) => tokio::task::block_in_place(wait),
        Err(_) => wait(),
    }
    let _inside = l.runtime.enter();
    match listen_all(binds, port, l.backlog, l.tls) {
        Ok(listeners) => {
            loops.0 = listeners.into_iter().map(&l.spawn).collect();
            loops.1 = binds.to_string();
            loops.2 = port;
            Ok(())
        }
        Err(()) => {
            tracing::warn!("Failed to bind, trying to restore old listening sockets.");
            let (old_binds, old_port) = (loops.1.clone(), loops.2);
            match listen_all(&old_binds, old_port, l.backlog, l.tls) {
                Ok(listeners) => loops.0 = listeners.into_iter().map(&l.spawn).collect(),
                Err(()) => tracing::warn!("Failed to restore old listening sockets."),
            }
            Err(format!("could not listen on {binds} port {port}"))
        }
    }
}

/// One `bind` word: the address to listen on, and whether it may be missing (a leading `-`).
pub fn bind_word(word: &str) -> (&str, bool) {
    match word.strip_prefix('-') {
        Some(host) => (host, true),
        None => (word, false),
    }
}

/// Why a listening socket could not be made: Redis's `neterr` text (`bind: Cannot assign requested
/// address`, a name lookup's `Name or service not known`...) and the errno it left, if any.
#[derive(Debug)]
pub struct ListenError {
    /// The text Redis logs after "Could not create server TCP listening socket host:port: ".
    pub msg: String,
    /// The OS error; none after a failed name lookup.
    pub errno: Option<i32>,
}

impl ListenError {
    fn os(what: &str, e: io::Error) -> ListenError {
        ListenError { msg: format!("{what}: {}", strerror(&e)), errno: e.raw_os_error() }
    }

    /// Whether startup goes on without this address, as Redis's `listenToPort` decides: an optional
    /// address (`-addr`) the machine does not have, or an address family or protocol the machine does
    /// not support (optional or not).
    pub fn skippable(&self, optional: bool) -> bool {
        match self.errno {
            Some(libc::EADDRNOTAVAIL) => optional,
            Some(e) => [
                libc::ENOPROTOOPT,
                libc::EPROTONOSUPPORT,
                libc::ESOCKTNOSUPPORT,
                libc::EPFNOSUPPORT,
                libc::EAFNOSUPPORT,
            ]
            .contains(&e),
            None => false,
        }
    }
}

/// strerror's text for an OS error (io::Error's Display adds " (os error N)").
pub(crate) fn strerror(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A listening socket on `host`:`port` as Redis's `_anetTcpServer` makes one: an IPv6 socket when the
/// address has a `:`, IPv4 otherwise; `*` (and `::*` for IPv6) is every interface, anything else goes
/// through `getaddrinfo` (so host names work) and the first address a socket can be made for is used.
/// SO_REUSEADDR, IPv6 sockets IPv6-only (so `*` and `::*` share a port), `backlog` pending connections.
pub fn listen(host: &str, port: u16, backlog: i32) -> Result<TcpListener, ListenError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let v6 = host.contains(':');
    let addrs = match host {
        "*" if !v6 => vec![SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port)],
        "::*" => vec![SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port)],
        h => resolve(h, port, v6)?,
    };
    let mut last = None;
    for addr in addrs {
        let domain = if addr.is_ipv6() { Domain::IPV6 } else { Domain::IPV4 };
        let s = match Socket::new(domain, Type::STREAM, Some(Protocol::TCP)) {
            Ok(s) => s,
            Err(e) => {
                last = e.raw_os_error();
                continue;
            }
        };
        if v6 {
            s.set_only_v6(true).map_err(|e| ListenError::os("setsockopt", e))?;
        }
        s.set_reuse_address(true).map_err(|e| ListenError::os("setsockopt SO_REUSEADDR", e))?;
        s.bind(&addr.into()).map_err(|e| ListenError::os("bind", e))?;
        s.listen(backlog).map_err(|e| ListenError::os("listen", e))?;
        s.set_nonblocking(true).map_err(|e| ListenError::os("fcntl(F_SETFL,O_NONBLOCK)", e))?;
        return TcpListener::from_std(s.into()).map_err(|e| ListenError::os("listen", e));
    }
    Err(ListenError { msg: format!("unable to bind socket, errno: {}", last.unwrap_or(0)), errno: last })
}

/// Listens on the Unix socket at `path`, as Redis's initServer does: a file left at the path (a
/// previous run's socket) is removed first, and `perm` (`unixsocketperm`), when not 0, becomes the
/// file's mode. The error reads as Redis's log has it ("Permission denied", ...).
pub fn listen_unix(path: &str, perm: u32) -> Result<tokio::net::UnixListener, String> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_file(path);
    let l = tokio::net::UnixListener::bind(path).map_err(|e| strerror(&e))?;
    if perm != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm)).map_err(|e| strerror(&e))?;
    }
    Ok(l)
}

/// The addresses `host` names for a TCP socket of one family (std's lookup is `getaddrinfo`); a
/// failure is `gai_strerror`'s text, as Redis logs it.
fn resolve(host: &str, port: u16, v6: bool) -> Result<Vec<SocketAddr>, ListenError> {
    use std::net::ToSocketAddrs;
    let addrs = (host, port).to_socket_addrs().map_err(|e| {
        let text = e.to_string();
        let msg = text.strip_prefix("failed to lookup address information: ").unwrap_or(&text).to_string();
        ListenError { msg, errno: None }
    })?;
    let out: Vec<SocketAddr> = addrs.filter(|a| a.is_ipv6() == v6).collect();
    if out.is_empty() {
        // getaddrinfo with the family in its hints fails this way when the name has no such address.
        return Err(ListenError { msg: "Address family for hostname not supported".into(), errno: None });
    }
    Ok(out)
}

/// `/proc/sys/net/core/somaxconn`, which caps every listen backlog on Linux.
/// The value Redis's `checkTcpBacklogSettings` warns about: positive and lower than `backlog`.
pub fn somaxconn() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn").ok()?.trim().parse().ok()
}

/// Redis's startup warning when `/proc/sys/net/core/somaxconn` caps the `tcp-backlog`, if it does.
pub fn backlog_warning(backlog: i32, somaxconn: Option<i32>) -> Option<String> {
    let max = somaxconn.filter(|&m| m > 0 && m < backlog)?;
    Some(format!(
        "WARNING: The TCP backlog setting of {backlog} cannot be enforced because /proc/sys/net/core/somaxconn is set to the lower value of {max}."
    ))
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
    let why = error.map(|e| strerror(&e)).unwrap_or_default();
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
        assert_eq!(bind_word("*"), ("*", false));
        assert_eq!(bind_word("-::*"), ("::*", true));
        assert_eq!(bind_word("-::1"), ("::1", true));
    }

    #[tokio::test]
    async fn listen_resolves_and_fails_as_redis() {
        // Names resolve, in the family the word asks for (no ':' is IPv4).
        let l = listen("localhost", 0, 16).unwrap();
        assert_eq!(l.local_addr().unwrap().ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        let l = listen("127.0.0.1", 0, 16).unwrap();
        assert!(l.local_addr().unwrap().port() > 0);
        // An address this machine does not have (TEST-NET-1): EADDRNOTAVAIL, skipped only if optional.
        let e = listen("192.0.2.1", 0, 16).unwrap_err();
        assert_eq!(e.msg, "bind: Cannot assign requested address");
        assert!(e.skippable(true) && !e.skippable(false));
        // The port taken: not skippable even if optional.
        let e = listen("127.0.0.1", l.local_addr().unwrap().port(), 16).unwrap_err();
        assert_eq!(e.msg, "bind: Address already in use");
        assert!(!e.skippable(true));
    }

    #[test]
    fn backlog_warning_as_redis() {
        assert_eq!(
            backlog_warning(511, Some(128)).unwrap(),
            "WARNING: The TCP backlog setting of 511 cannot be enforced because /proc/sys/net/core/somaxconn is set to the lower value of 128."
        );
        assert_eq!(backlog_warning(511, Some(4096)), None);
        assert_eq!(backlog_warning(511, Some(0)), None);
        assert_eq!(backlog_warning(511, None), None);
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
        let v4 = listen("*", 0, 511).unwrap();
        let port = v4.local_addr().unwrap().port();
        // IPv6-only: the same port on [::] does not collide with 0.0.0.0 (skipped without IPv6).
        if let Ok(v6) = listen("::*", port, 511) {
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
