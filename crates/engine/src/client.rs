//! Per-connection state and the registry of connected clients.
//!
//! [`Client`] is owned by the connection task and passed to handlers. The part other clients may read
//! (`CLIENT LIST`, `CLIENT KILL`, `INFO clients`) lives in [`ClientInfo`], shared through an `Arc`.

use parking_lot::Mutex;
use resp::Protocol;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// What happens to replies (`CLIENT REPLY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReplyMode {
    /// Normal.
    #[default]
    On,
    /// No replies until `CLIENT REPLY ON`.
    Off,
    /// Skip the reply of the next command only.
    Skip,
    /// Internal: the command after a `CLIENT REPLY SKIP` is running; its reply is dropped.
    SkipThis,
}

/// A connection's state as handlers see it.
pub struct Client {
    /// Unique, increasing id (`CLIENT ID`).
    pub id: u64,
    /// Selected database.
    pub db: usize,
    /// Negotiated protocol.
    pub proto: Protocol,
    /// Whether AUTH succeeded (or no password is required).
    pub authenticated: bool,
    /// Reply mode.
    pub reply_mode: ReplyMode,
    /// Close the connection once the current reply is written (QUIT, protocol errors, CLIENT KILL self).
    pub close_after_reply: bool,
    /// `CLIENT NO-TOUCH on`: reads do not update access times.
    pub no_touch: bool,
    /// `CLIENT NO-EVICT on`.
    pub no_evict: bool,
    /// Set by MONITOR.
    pub monitor: bool,
    /// Drop the reply of the command now running (SHUTDOWN, which closes instead of replying).
    pub suppress_reply: bool,
    /// Shared, externally visible information.
    pub info: Arc<ClientInfo>,
}

impl Client {
    /// A new client registered in `registry`.
    pub fn new(registry: &ClientRegistry, addr: String, laddr: String, now_ms: u64, authenticated: bool) -> Client {
        let info = registry.register(addr, laddr, now_ms);
        Client {
            id: info.id,
            db: 0,
            proto: Protocol::Resp2,
            authenticated,
            reply_mode: ReplyMode::On,
            close_after_reply: false,
            no_touch: false,
            no_evict: false,
            monitor: false,
            suppress_reply: false,
            info,
        }
    }
}

/// The shared part of a client.
pub struct ClientInfo {
    /// Client id.
    pub id: u64,
    /// Peer address `ip:port`.
    pub addr: String,
    /// Local address `ip:port`.
    pub laddr: String,
    /// Creation time (monotonic ms).
    pub created_ms: u64,
    /// Time of the last command (monotonic ms).
    pub last_active_ms: AtomicU64,
    /// `CLIENT SETNAME`.
    pub name: Mutex<Option<Vec<u8>>>,
    /// `CLIENT SETINFO LIB-NAME`.
    pub lib_name: Mutex<Option<Vec<u8>>>,
    /// `CLIENT SETINFO LIB-VER`.
    pub lib_ver: Mutex<Option<Vec<u8>>>,
    /// Last command name (`cmd=` in CLIENT LIST).
    pub last_cmd: Mutex<&'static str>,
    /// Selected db, mirrored for CLIENT LIST.
    pub db: AtomicUsize,
    /// Protocol version, mirrored for CLIENT LIST.
    pub resp: AtomicUsize,
    /// Query buffer length, kept by the connection layer.
    pub qbuf: AtomicUsize,
    /// Output buffer bytes pending, kept by the connection layer.
    pub omem: AtomicUsize,
    /// Flag letters for CLIENT LIST (`N`, `M` for monitor, `x` in MULTI...), kept by the engine.
    pub flags: Mutex<String>,
    /// Set when the client must be disconnected (CLIENT KILL, SHUTDOWN).
    pub killed: AtomicBool,
    waker: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
}

impl ClientInfo {
    /// Installs the function the connection layer wants called when this client is killed.
    pub fn set_waker(&self, f: Box<dyn Fn() + Send + Sync>) {
        *self.waker.lock() = Some(f);
    }
    /// Marks the client killed and wakes its connection task.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        if let Some(w) = &*self.waker.lock() {
            w();
        }
    }
}

/// All connected clients.
#[derive(Default)]
pub struct ClientRegistry {
    next_id: AtomicU64,
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    /// Connections accepted since start.
    pub total_connections: AtomicU64,
    /// Connections refused because of maxclients.
    pub rejected_connections: AtomicU64,
}

impl ClientRegistry {
    /// Registers a new connection.
    pub fn register(&self, addr: String, laddr: String, now_ms: u64) -> Arc<ClientInfo> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let info = Arc::new(ClientInfo {
            id,
            addr,
            laddr,
            created_ms: now_ms,
            last_active_ms: AtomicU64::new(now_ms),
            name: Mutex::new(None),
            lib_name: Mutex::new(None),
            lib_ver: Mutex::new(None),
            last_cmd: Mutex::new("NULL"),
            db: AtomicUsize::new(0),
            resp: AtomicUsize::new(2),
            qbuf: AtomicUsize::new(0),
            omem: AtomicUsize::new(0),
            flags: Mutex::new(String::from("N")),
            killed: AtomicBool::new(false),
            waker: Mutex::new(None),
        });
        self.clients.lock().insert(id, info.clone());
        self.total_connections.fetch_add(1, Ordering::Relaxed);
        info
    }

    /// Removes a closed connection.
    pub fn unregister(&self, id: u64) {
        self.clients.lock().remove(&id);
    }

    /// A snapshot of the connected clients, by id.
    pub fn snapshot(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().values().cloned().collect()
    }

    /// Number of connected clients.
    pub fn len(&self) -> usize {
        self.clients.lock().len()
    }

    /// True when nobody is connected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Looks a client up by id.
    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }
}
