//! Client-side caching (`CLIENT TRACKING`), as Redis 7.0's tracking.c.
//!
//! A tracking client's reads remember their keys in the tracking table (key -> client ids; keys
//! of every database together, as in Redis). A key changed by any path that tells WATCH (the
//! tables' key log, see `crate::notify`) is invalidated: each client that read it gets an
//! `invalidate` message (a RESP3 push, or a `__redis__:invalidate` message on the connection it
//! redirects to) and the key leaves the table. In BCAST mode clients register prefixes instead:
//! changed keys matching a prefix are collected and sent after the command, one message per prefix.
//!
//! A message for the client whose command caused it goes after that command's reply (Redis's
//! pending invalidations): it is kept in `Client::after_reply` until the connection wrote the reply.

use bytes::{BufMut, Bytes, BytesMut};
use indexmap::IndexMap;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A client's tracking state (kept in its shared info: invalidations read it).
#[derive(Default, Debug, Clone)]
pub struct ClientTracking {
    /// Client id the messages go to (0: this connection).
    pub redirect: u64,
    /// BCAST mode.
    pub bcast: bool,
    /// OPTIN mode.
    pub optin: bool,
    /// OPTOUT mode.
    pub optout: bool,
    /// NOLOOP: no messages about keys this client changed.
    pub noloop: bool,
    /// CLIENT CACHING yes (OPTIN) / no (OPTOUT) was given for the next command.
    pub caching: bool,
    /// The redirect client went away.
    pub broken: bool,
    /// BCAST prefixes.
    pub prefixes: BTreeSet<Bytes>,
}

/// Keys changed under one BCAST prefix since the last broadcast, and who follows it.
#[derive(Default)]
struct Prefix {
    /// Ids of the clients registered under the prefix.
    clients: Vec<u64>,
    /// Changed key -> id of the client that changed it last (0: the server).
    keys: BTreeMap<Bytes, u64>,
}

/// The server's side.
#[derive(Default)]
pub struct Tracking {
    /// Clients with tracking on (INFO `tracking_clients`).
    pub clients: AtomicUsize,
    table: Mutex<Table>,
    prefixes: Mutex<BTreeMap<Bytes, Prefix>>,
    /// Some prefix has keys to broadcast.
    pending: AtomicBool,
    /// Passes of the table limit that ended still over it (Redis's `timeout_counter`).
    limit_passes: AtomicUsize,
}

#[derive(Default)]
struct Table {
    keys: IndexMap<Bytes, Vec<u64>, foldhash::fast::RandomState>,
    items: usize,
}

/// Who caused an invalidation: the client whose command runs (for NOLOOP, and to hold its own
/// messages until its reply is out), if any.
pub struct Cause<'a> {
    /// The client id (0: the server itself, the cron or eviction).
    pub id: u64,
    /// Where its own messages wait for its reply.
    pub after_reply: Option<&'a mut Vec<Bytes>>,
}

/// `*<n>\r\n` then each key as a bulk string: the payload of an invalidation.
pub fn key_array<'a>(keys: impl ExactSizeIterator<Item = &'a [u8]>) -> Bytes {
    let mut out = BytesMut::new();
    out.put_u8(b'*');
    out.put_slice(itoa::Buffer::new().format(keys.len()).as_bytes());
    out.put_slice(b"\r\n");
    for k in keys {
        crate::message::put_bulk(&mut out, k);
    }
    out.freeze()
}

/// The message a client gets: `[invalidate, payload]` (a push for RESP3) or, on a RESP2
/// connection that subscribed (a redirect target), `[message, __redis__:invalidate, payload]`.
/// None when it cannot receive it (RESP2 and not subscribed).
pub fn invalidation(resp3: bool, subscribed: bool, redirected: bool, payload: &[u8]) -> Option<Bytes> {
    let mut out = BytesMut::with_capacity(48 + payload.len());
    if resp3 {
        out.put_slice(b"*2\r\n$10\r\ninvalidate\r\n");
    } else if redirected && subscribed {
        out.put_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n");
    } else {
        return None;
    }
    out.put_slice(payload);
    Some(out.freeze())
}

/// `reply` followed by `msgs` on the wire, for a client speaking `proto`.
pub(crate) fn followed_by(reply: resp::Frame, proto: resp::Protocol, msgs: &[Bytes]) -> resp::Frame {
    if msgs.is_empty() {
        return reply;
    }
    let mut out = BytesMut::new();
    resp::encode(&reply, proto, &mut out);
    for m in msgs {
        crate::message::put_message(&mut out, proto, m);
    }
    resp::Frame::Encoded(out.freeze())
}

impl Tracking {
    /// Whether any client tracks keys: the one load a change pays when none does.
    pub fn any(&self) -> bool {
        self.clients.load(Ordering::Relaxed) != 0
    }

    /// Collects `keys` (changed by client `by`, 0 for the server) under every BCAST prefix they
    /// match, for [`Tracking::take_broadcasts`].
    pub fn note_for_prefixes(&self, keys: &[&[u8]], by: u64) {
        let mut prefixes = self.prefixes.lock();
        if prefixes.is_empty() {
            return;
        }
        for key in keys {
            for (p, state) in prefixes.iter_mut() {
                if key.starts_with(p) {
                    state.keys.insert(Bytes::copy_from_slice(key), by);
                    self.pending.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// Takes `key` out of the tracking table: the ids of the clients that read it.
    pub fn take_readers(&self, key: &[u8]) -> Option<Vec<u64>> {
        let mut t = self.table.lock();
        let ids = t.keys.swap_remove(key)?;
        t.items -= ids.len();
        Some(ids)
    }

    /// Empties the tracking table (FLUSHALL, FLUSHDB).
    pub fn clear(&self) {
        *self.table.lock() = Table::default();
    }

    /// Remembers that client `id` read the keys at `positions` of `args`.
    pub fn remember(&self, id: u64, args: &[Bytes], positions: impl IntoIterator<Item = usize>) {
        let mut table = self.table.lock();
        for i in positions {
            let ids = table.keys.entry(args[i].clone()).or_default();
            if !ids.contains(&id) {
                ids.push(id);
                table.items += 1;
            }
        }
    }

    /// Counts a client that turned tracking on (`on`) or off.
    pub fn count_client(&self, on: bool) {
        if on {
            self.clients.fetch_add(1, Ordering::Relaxed);
        } else {
            self.clients.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Registers client `id` under BCAST `prefixes`.
    pub fn add_prefixes<'p>(&self, id: u64, prefixes: impl IntoIterator<Item = &'p Bytes>) {
        let mut table = self.prefixes.lock();
        for p in prefixes {
            let state = table.entry(p.clone()).or_default();
            if !state.clients.contains(&id) {
                state.clients.push(id);
            }
        }
    }

    /// Takes client `id` off BCAST `prefixes`; a prefix left with no client goes.
    pub fn remove_prefixes<'p>(&self, id: u64, prefixes: impl IntoIterator<Item = &'p Bytes>) {
        let mut table = self.prefixes.lock();
        for p in prefixes {
            if let Some(state) = table.get_mut(p) {
                state.clients.retain(|c| *c != id);
                if state.clients.is_empty() {
                    table.remove(p);
                }
            }
        }
    }

    /// The keys changed under each BCAST prefix since the last call, with the ids of the prefix's
    /// clients; nothing when nothing changed.
    pub fn take_broadcasts(&self) -> Vec<(Vec<u64>, BTreeMap<Bytes, u64>)> {
        if !self.pending.swap(false, Ordering::Relaxed) {
            return Vec::new();
        }
        let mut table = self.prefixes.lock();
        table
            .values_mut()
            .filter(|s| !s.keys.is_empty())
            .map(|s| (s.clients.clone(), std::mem::take(&mut s.keys)))
            .collect()
    }

    /// Keys in the table.
    pub fn keys_len(&self) -> usize {
        self.table.lock().keys.len()
    }

    /// A key of the table at random.
    pub fn random_key(&self) -> Option<Bytes> {
        let t = self.table.lock();
        if t.keys.is_empty() {
            return None;
        }
        let i = rand::random_range(0..t.keys.len());
        t.keys.get_index(i).map(|(k, _)| k.clone())
    }

    /// Passes of `tracking-table-max-keys` enforcement in a row that ended still over the limit
    /// (each pass tries harder).
    pub fn limit_passes(&self) -> usize {
        self.limit_passes.load(Ordering::Relaxed)
    }

    /// See [`Tracking::limit_passes`].
    pub fn set_limit_passes(&self, n: usize) {
        self.limit_passes.store(n, Ordering::Relaxed);
    }

    /// INFO's `tracking_total_keys`, `tracking_total_items`, `tracking_total_prefixes`.
    pub fn totals(&self) -> (usize, usize, usize) {
        let t = self.table.lock();
        (t.keys.len(), t.items, self.prefixes.lock().len())
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    #[test]
    fn resp3_invalidation_follows_the_reply_and_noloop() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let mut other = ts.client();
        c.run("HELLO 3");
        c.transcript(
            r#"
            > CLIENT TRACKING on
            +OK
            > GET a
            (nil)
            > SET a 1
            +OK | >["invalidate", ["a"]]
            > GET a
            "1"
            "#,
        );
        other.run("SET a 2");
        assert_eq!(c.pushes(), [">[\"invalidate\", [\"a\"]]"]);
        // Invalidated once: the key left the table until read again.
        other.run("SET a 3");
        assert_eq!(c.pushes(), Vec::<String>::new());
        c.transcript(
            r#"
            > CLIENT TRACKING on NOLOOP
            +OK
            > GET a
            "3"
            > SET a 4
            +OK
            > CLIENT TRACKINGINFO
            {"flags": ~["on", "noloop"], "redirect": :0, "prefixes": []}
            > CLIENT GETREDIR
            :0
            > CLIENT TRACKING off
            +OK
            > CLIENT GETREDIR
            :-1
            "#,
        );
        assert!(other.run("INFO").contains("tracking_clients:0"));
    }

    #[test]
    fn redirect_to_a_resp2_subscriber_bcast_and_flush() {
        let ts = TestServer::new();
        let mut sub = ts.client();
        let mut c = ts.client();
        let mut w = ts.client();
        let id = sub.client.id;
        sub.run("SUBSCRIBE __redis__:invalidate");
        c.run(&format!("CLIENT TRACKING on REDIRECT {id}"));
        c.run("MGET k1 k2");
        w.run("DEL k1");
        assert_eq!(sub.pushes(), Vec::<String>::new(), "DEL of a missing key changes nothing");
        w.run("MSET k1 a k2 b");
        assert_eq!(
            sub.pushes(),
            ["[\"message\", \"__redis__:invalidate\", [\"k1\"]]", "[\"message\", \"__redis__:invalidate\", [\"k2\"]]"]
        );
        c.run("CLIENT TRACKING off");
        c.transcript(
            r#"
            > CLIENT TRACKING on BCAST PREFIX a: PREFIX b: REDIRECT 999
            -ERR The client ID you want redirect to does not exist
            > CLIENT TRACKING on PREFIX a:
            -ERR PREFIX option requires BCAST mode to be enabled
            > CLIENT TRACKING on BCAST PREFIX a: PREFIX a:b
            -ERR Prefix 'a:' overlaps with another provided prefix 'a:b'. Prefixes for a single client must not overlap.
            "#,
        );
        c.run(&format!("CLIENT TRACKING on BCAST PREFIX a: PREFIX b: REDIRECT {id}"));
        w.run("MSET a:1 x b:1 y c:1 z a:2 w");
        assert_eq!(
            sub.pushes(),
            [
                "[\"message\", \"__redis__:invalidate\", [\"a:1\", \"a:2\"]]",
                "[\"message\", \"__redis__:invalidate\", [\"b:1\"]]"
            ]
        );
        w.run("FLUSHALL");
        assert_eq!(sub.pushes(), ["[\"message\", \"__redis__:invalidate\", (nil)]"]);
        drop(sub);
        w.run("SET a:1 x");
        c.run("HELLO 3");
        assert_eq!(
            c.run("CLIENT TRACKINGINFO"),
            "{\"flags\": ~[\"on\", \"bcast\", \"broken_redirect\"], \"redirect\": :2, \"prefixes\": [\"a:\", \"b:\"]}"
                .replace(":2", &format!(":{id}"))
        );
    }

    #[test]
    fn optin_optout_and_the_table_limit() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let mut w = ts.client();
        c.run("HELLO 3");
        c.run("CLIENT TRACKING on OPTIN");
        c.run("GET x");
        c.run("CLIENT CACHING yes");
        c.run("GET y");
        w.run("MSET x 1 y 2");
        assert_eq!(c.pushes(), [">[\"invalidate\", [\"y\"]]"]);
        c.transcript(
            r#"
            > CLIENT CACHING no
            -ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.
            > CLIENT TRACKING on OPTOUT
            -ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.
            "#,
        );
        c.run("CLIENT TRACKING off");
        c.run("CLIENT TRACKING on");
        c.run("MGET a b c");
        assert!(w.run("INFO stats").contains("tracking_total_keys:3"));
        w.run("CONFIG SET tracking-table-max-keys 1");
        w.run("PING");
        assert_eq!(c.pushes().len(), 2, "two keys leave the table, each with an invalidation");
        assert!(w.run("INFO stats").contains("tracking_total_keys:1"));
    }
}
