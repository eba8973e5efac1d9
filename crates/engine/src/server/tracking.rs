//! Client-side caching in the composition: the tracking table and the BCAST prefixes are
//! `crate::tracking`'s; here their ids meet the clients (their options, protocol, outbox,
//! redirect target) and the messages go out.

use super::Server;
use crate::client::Client;
use crate::clients::ClientInfo;
use crate::tracking::{Cause, ClientTracking, invalidation, key_array};
use bytes::Bytes;
use std::sync::atomic::Ordering;

impl<'a> Cause<'a> {
    /// The client whose command runs: its own messages wait for its reply.
    pub fn of(client: &'a mut Client) -> Cause<'a> {
        Cause { id: client.id, after_reply: Some(&mut client.after_reply) }
    }
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
        let resp3 = to.resp.load(Ordering::Relaxed) >= 3;
        let Some(msg) = invalidation(resp3, to.has_flag('P'), redirected, payload) else { return };
        match after_reply {
            Some(q) if !redirected => q.push(msg),
            _ => self.deliver(&to, msg),
        }
    }

    /// Invalidates `keys` (changed, expired or evicted; any database), for the clients that read
    /// them and the BCAST prefixes they match (Redis's `trackingInvalidateKey`).
    pub(crate) fn invalidate_keys(&self, keys: &[&[u8]], mut cause: Cause<'_>) {
        if !self.tracking.any() {
            return;
        }
        self.tracking.note_for_prefixes(keys, cause.id);
        for key in keys {
            let Some(ids) = self.tracking.take_readers(key) else { continue };
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
        if !self.tracking.any() {
            self.tracking.clear();
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
        self.tracking.clear();
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
        self.tracking.remember(client.id, args, pos);
    }

    /// Turns tracking on for `client` with `opts` (checked by the caller), registering its BCAST
    /// prefixes (the empty prefix when none is given).
    pub(crate) fn enable_tracking(&self, client: &mut Client, opts: ClientTracking) {
        if client.info.tracking.lock().is_none() {
            self.tracking.count_client(true);
        }
        let mut prefixes = opts.prefixes.clone();
        if opts.bcast && prefixes.is_empty() {
            prefixes.insert(Bytes::new());
        }
        self.tracking.add_prefixes(client.id, &prefixes);
        {
            let mut t = client.info.tracking.lock();
            let old_prefixes = t.as_ref().map(|t| t.prefixes.clone()).unwrap_or_default();
            let mut all = old_prefixes;
            all.extend(prefixes);
            client.info.tracking_mem.store(prefixes_mem(&all), Ordering::Relaxed);
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
        info.tracking_mem.store(0, Ordering::Relaxed);
        self.tracking.remove_prefixes(info.id, &t.prefixes);
        self.tracking.count_client(false);
        for f in ['t', 'R', 'B'] {
            info.set_flag(f, false);
        }
        self.sync_key_log();
    }

    /// Sends the keys changed under each BCAST prefix since the last call, one message per prefix
    /// (Redis's `trackingBroadcastInvalidationMessages`, run before it sleeps; here after each
    /// command). A NOLOOP client does not hear of the keys it changed itself.
    pub(crate) fn broadcast_invalidations(&self, mut cause: Cause<'_>) {
        for (ids, keys) in self.tracking.take_broadcasts() {
            let all = key_array(keys.keys().map(|k| &k[..]));
            for c in ids.into_iter().filter_map(|id| self.clients.get(id)) {
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
        if !self.tracking.any() {
            return;
        }
        let max = self.config.get_i64("tracking-table-max-keys").max(0) as usize;
        if max == 0 {
            return;
        }
        if self.tracking.keys_len() <= max {
            self.tracking.set_limit_passes(0);
            return;
        }
        let mut effort = 100 * (self.tracking.limit_passes() + 1);
        while effort > 0 {
            effort -= 1;
            let Some(key) = self.tracking.random_key() else { break };
            self.invalidate_keys(&[&key], Cause { id: 0, after_reply: None });
            if self.tracking.keys_len() <= max {
                self.tracking.set_limit_passes(0);
                return;
            }
        }
        self.tracking.set_limit_passes(self.tracking.limit_passes() + 1);
    }

    /// INFO's `tracking_total_keys`, `tracking_total_items`, `tracking_total_prefixes`.
    pub fn tracking_totals(&self) -> (usize, usize, usize) {
        self.tracking.totals()
    }
}

/// What a client's BCAST prefixes take, as counted in its memory: each prefix's bytes and about
/// 64 more for its entries in the client's set and in the server's prefix table (Redis counts 32
/// bytes for each node of its prefix tree).
fn prefixes_mem(prefixes: &std::collections::BTreeSet<Bytes>) -> usize {
    prefixes.iter().map(|p| p.len() + 64).sum()
}
