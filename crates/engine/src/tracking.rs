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

use crate::client::Client;
use crate::clients::ClientInfo;
use crate::server::Server;
use bytes::{BufMut, Bytes, BytesMut};
use indexmap::IndexMap;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
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
    clients: Vec<Arc<ClientInfo>>,
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

impl<'a> Cause<'a> {
    /// The client whose command runs: its own messages wait for its reply.
    pub fn of(client: &'a mut Client) -> Cause<'a> {
        Cause { id: client.id, after_reply: Some(&mut client.after_reply) }
    }
}

/// `*<n>\r\n` then each key as a bulk string: the payload of an invalidation.
fn key_array<'a>(keys: impl ExactSizeIterator<Item = &'a [u8]>) -> Bytes {
    let mut out = BytesMut::new();
    out.put_u8(b'*');
    out.put_slice(itoa::Buffer::new().format(keys.len()).as_bytes());
    out.put_slice(b"\r\n");
    for k in keys {
        crate::pubsub::put_bulk(&mut out, k);
    }
    out.freeze()
}

/// The message `to` gets: `[invalidate, payload]` (a push for RESP3) or, on a RESP2 connection
/// that subscribed (a redirect target), `[message, __redis__:invalidate, payload]`. None when
/// `to` cannot receive it (RESP2 and not subscribed).
fn invalidation(to: &ClientInfo, redirected: bool, payload: &[u8]) -> Option<Bytes> {
    let mut out = BytesMut::with_capacity(48 + payload.len());
    if to.resp.load(Ordering::Relaxed) >= 3 {
        out.put_slice(b"*2\r\n$10\r\ninvalidate\r\n");
    } else if redirected && to.has_flag('P') {
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
        crate::pubsub::put_message(&mut out, proto, m);
    }
    resp::Frame::Encoded(out.freeze())
}

impl Server {
    /// Sends an invalidation about `payload` (an array of keys, or a null) to tracking client
    /// `c`, or to the client it redirects to (Redis's `sendTrackingMessage`). `after_reply`: `c`
    /// is running the command that caused it, and its own messages wait for the reply.
    fn send_invalidation(&self, c: &ClientInfo, payload: &[u8], after_reply: Option<&mut Vec<Bytes>>) {
        let redirect = c.tracking.lock().as_ref().map_or(0, |t| t.redirect);
        let (to, redirected) = if redirect != 0 {
            match self.clients.get(redirect) {
                Some(r) => (r, true),
                None => {
                    if let Some(t) = c.tracking.lock().as_mut() {
                        t.broken = true;
                    }
                    c.set_flag('R', true);
                    if c.resp.load(Ordering::Relaxed) >= 3 {
                        // `[tracking-redir-broken, <id as an integer>]`.
                        let msg = Bytes::from(
                            [
                                &b"*2\r\n$21\r\ntracking-redir-broken\r\n:"[..],
                                itoa::Buffer::new().format(redirect).as_bytes(),
                                b"\r\n",
                            ]
                            .concat(),
                        );
                        match after_reply {
                            Some(q) => q.push(msg),
                            None => self.deliver(c, msg),
                        }
                    }
                    return;
                }
            }
        } else {
            match self.clients.get(c.id) {
                Some(me) => (me, false),
                None => return,
            }
        };
        let Some(msg) = invalidation(&to, redirected, payload) else { return };
        match after_reply {
            Some(q) if !redirected => q.push(msg),
            _ => self.deliver(&to, msg),
        }
    }

    /// Invalidates `keys` (changed, expired or evicted; any database), for the clients that read
    /// them and the BCAST prefixes they match (Redis's `trackingInvalidateKey`).
    pub(crate) fn invalidate_keys(&self, keys: &[&[u8]], mut cause: Cause<'_>) {
        if self.tracking.clients.load(Ordering::Relaxed) == 0 {
            return;
        }
        {
            let mut prefixes = self.tracking.prefixes.lock();
            if !prefixes.is_empty() {
                for key in keys {
                    for (p, state) in prefixes.iter_mut() {
                        if key.starts_with(p) {
                            state.keys.insert(Bytes::copy_from_slice(key), cause.id);
                            self.tracking.pending.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
        }
        for key in keys {
            let ids = {
                let mut t = self.tracking.table.lock();
                let Some(ids) = t.keys.swap_remove(*key) else { continue };
                t.items -= ids.len();
                ids
            };
            let payload = key_array(std::iter::once(*key));
            for id in ids {
                let Some(target) = self.clients.get(id) else { continue };
                let (on, bcast, noloop) = match target.tracking.lock().as_ref() {
                    Some(t) => (true, t.bcast, t.noloop),
                    None => (false, false, false),
                };
                if !on || bcast || (noloop && id == cause.id) {
                    continue;
                }
                let own = if id == cause.id { cause.after_reply.as_deref_mut() } else { None };
                self.send_invalidation(&target, &payload, own);
            }
        }
    }

    /// FLUSHALL / FLUSHDB: every tracking client is told to drop everything (a null payload), and
    /// the table empties (Redis's `trackingInvalidateKeysOnFlush`).
    pub(crate) fn invalidate_all(&self, mut cause: Cause<'_>) {
        // Keys remembered for clients that turned tracking off since are dropped too.
        if self.tracking.clients.load(Ordering::Relaxed) == 0 {
            *self.tracking.table.lock() = Table::default();
            return;
        }
        for c in self.clients.snapshot() {
            if c.tracking.lock().is_none() {
                continue;
            }
            let null: &[u8] = if c.resp.load(Ordering::Relaxed) >= 3 { b"_\r\n" } else { b"$-1\r\n" };
            let own = if c.id == cause.id { cause.after_reply.as_deref_mut() } else { None };
            self.send_invalidation(&c, null, own);
        }
        *self.tracking.table.lock() = Table::default();
    }

    /// Remembers the keys a read command of `client` touched (Redis's `trackingRememberKeys`),
    /// unless OPTIN/OPTOUT and CLIENT CACHING say otherwise.
    pub(crate) fn remember_keys(&self, client: &Client, cmd: &crate::ctx::Command, args: &[Bytes]) {
        {
            let t = client.info.tracking.lock();
            let Some(t) = t.as_ref() else { return };
            if t.bcast || (t.optin && !t.caching) || (t.optout && t.caching) {
                return;
            }
        }
        if cmd.flags.has(crate::command::Flags::PUBSUB) {
            return;
        }
        let pos = cmd.keys.positions(args);
        if pos.is_empty() {
            return;
        }
        let mut table = self.tracking.table.lock();
        for i in pos {
            let ids = table.keys.entry(args[i].clone()).or_default();
            if !ids.contains(&client.id) {
                ids.push(client.id);
                table.items += 1;
            }
        }
    }

    /// Turns tracking on for `client` with `opts` (checked by the caller), registering its BCAST
    /// prefixes (the empty prefix when none is given).
    pub(crate) fn enable_tracking(&self, client: &mut Client, opts: ClientTracking) {
        if client.info.tracking.lock().is_none() {
            self.tracking.clients.fetch_add(1, Ordering::Relaxed);
        }
        let mut prefixes = opts.prefixes.clone();
        if opts.bcast && prefixes.is_empty() {
            prefixes.insert(Bytes::new());
        }
        {
            let mut table = self.tracking.prefixes.lock();
            for p in &prefixes {
                let state = table.entry(p.clone()).or_default();
                if !state.clients.iter().any(|c| c.id == client.id) {
                    state.clients.push(client.info.clone());
                }
            }
        }
        {
            let mut t = client.info.tracking.lock();
            let old_prefixes = t.as_ref().map(|t| t.prefixes.clone()).unwrap_or_default();
            let mut all = old_prefixes;
            all.extend(prefixes);
            *t = Some(ClientTracking { prefixes: all, broken: false, caching: false, ..opts.clone() });
        }
        let i = &client.info;
        i.set_flag('t', true);
        i.set_flag('R', false);
        i.set_flag('B', opts.bcast);
        client.tracking = true;
        self.sync_key_log();
    }

    /// Turns tracking off for `client` (CLIENT TRACKING off, RESET).
    pub fn disable_tracking(&self, client: &mut Client) {
        self.forget_tracking(&client.info);
        client.tracking = false;
    }

    /// Turns tracking off for the client `info` describes (also when its connection closes).
    pub(crate) fn forget_tracking(&self, info: &ClientInfo) {
        let Some(t) = info.tracking.lock().take() else { return };
        if !t.prefixes.is_empty() {
            let mut table = self.tracking.prefixes.lock();
            for p in &t.prefixes {
                if let Some(state) = table.get_mut(p) {
                    state.clients.retain(|c| c.id != info.id);
                    if state.clients.is_empty() {
                        table.remove(p);
                    }
                }
            }
        }
        self.tracking.clients.fetch_sub(1, Ordering::Relaxed);
        for f in ['t', 'R', 'B'] {
            info.set_flag(f, false);
        }
        self.sync_key_log();
    }

    /// Sends the keys changed under each BCAST prefix since the last call, one message per prefix
    /// (Redis's `trackingBroadcastInvalidationMessages`, run before it sleeps; here after each
    /// command). A NOLOOP client does not hear of the keys it changed itself.
    pub(crate) fn broadcast_invalidations(&self, mut cause: Cause<'_>) {
        if !self.tracking.pending.swap(false, Ordering::Relaxed) {
            return;
        }
        type Followers = Vec<Arc<ClientInfo>>;
        let work: Vec<(Followers, BTreeMap<Bytes, u64>)> = {
            let mut table = self.tracking.prefixes.lock();
            table
                .values_mut()
                .filter(|s| !s.keys.is_empty())
                .map(|s| (s.clients.clone(), std::mem::take(&mut s.keys)))
                .collect()
        };
        for (clients, keys) in work {
            let all = key_array(keys.keys().map(|k| &k[..]));
            for c in clients {
                let noloop = c.tracking.lock().as_ref().is_some_and(|t| t.noloop);
                let payload = if noloop {
                    let mine: Vec<&[u8]> = keys.iter().filter(|(_, by)| **by != c.id).map(|(k, _)| &k[..]).collect();
                    if mine.is_empty() {
                        continue;
                    }
                    key_array(mine.into_iter())
                } else {
                    all.clone()
                };
                let own = if c.id == cause.id { cause.after_reply.as_deref_mut() } else { None };
                self.send_invalidation(&c, &payload, own);
            }
        }
    }

    /// Sends what BCAST clients have to hear of changes made outside commands (the cron's
    /// expiries), as Redis does before it sleeps.
    pub fn broadcast_tracking(&self) {
        self.broadcast_invalidations(Cause { id: 0, after_reply: None });
    }

    /// Keeps the tracking table within `tracking-table-max-keys` by invalidating keys at random,
    /// with more effort each pass that ends still over it (Redis's `trackingLimitUsedSlots`).
    pub fn limit_tracking_table(&self) {
        if self.tracking.clients.load(Ordering::Relaxed) == 0 {
            return;
        }
        let max = self.config.get_i64("tracking-table-max-keys").max(0) as usize;
        if max == 0 {
            return;
        }
        if self.tracking.table.lock().keys.len() <= max {
            self.tracking.limit_passes.store(0, Ordering::Relaxed);
            return;
        }
        let mut effort = 100 * (self.tracking.limit_passes.load(Ordering::Relaxed) + 1);
        while effort > 0 {
            effort -= 1;
            let key = {
                let t = self.tracking.table.lock();
                if t.keys.is_empty() {
                    break;
                }
                let i = rand::random_range(0..t.keys.len());
                t.keys.get_index(i).map(|(k, _)| k.clone())
            };
            let Some(key) = key else { break };
            self.invalidate_keys(&[&key], Cause { id: 0, after_reply: None });
            if self.tracking.table.lock().keys.len() <= max {
                self.tracking.limit_passes.store(0, Ordering::Relaxed);
                return;
            }
        }
        self.tracking.limit_passes.fetch_add(1, Ordering::Relaxed);
    }

    /// INFO's `tracking_total_keys`, `tracking_total_items`, `tracking_total_prefixes`.
    pub fn tracking_totals(&self) -> (usize, usize, usize) {
        let t = self.tracking.table.lock();
        (t.keys.len(), t.items, self.tracking.prefixes.lock().len())
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
