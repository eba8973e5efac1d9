//! Pub/sub: who listens to which channels, patterns and shard channels, and delivery of messages
//! that answer no command of the client receiving them (pub/sub messages, subscription
//! confirmations, MONITOR lines, tracking invalidations) to its [`crate::clients::Outbox`].
//!
//! A message is encoded once, in RESP2 (`*3\r\n$7\r\nmessage\r\n...`), and shared by every
//! receiver: a RESP3 connection writes its first byte as `>` (a push), the only difference between
//! the two forms. Delivery never waits for the receiver: a client whose queued output goes over its
//! class's `client-output-buffer-limit` (pubsub while it has subscriptions, else normal) is closed,
//! as Redis closes it, and the publisher goes on.

use crate::clients::ClientInfo;
use bytes::{BufMut, Bytes, BytesMut};
use indexmap::{IndexMap, IndexSet};
use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::Ordering;

type Listeners = Vec<Arc<ClientInfo>>;
type Map = IndexMap<Bytes, Listeners, foldhash::fast::RandomState>;

/// The server's side: channel (pattern, shard channel) -> subscribed clients, in subscription order.
#[derive(Default)]
pub struct PubSub {
    channels: RwLock<Map>,
    patterns: RwLock<Map>,
    shard: RwLock<Map>,
}

/// A client's side: what it is subscribed to, in subscription order.
#[derive(Default, Debug)]
pub struct Subscriptions {
    /// SUBSCRIBE.
    pub channels: IndexSet<Bytes, foldhash::fast::RandomState>,
    /// PSUBSCRIBE.
    pub patterns: IndexSet<Bytes, foldhash::fast::RandomState>,
    /// SSUBSCRIBE.
    pub shard: IndexSet<Bytes, foldhash::fast::RandomState>,
}

impl Subscriptions {
    /// Channels and patterns: the count (P)SUBSCRIBE and (P)UNSUBSCRIBE reply with.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }
    /// The count a (un)subscription of `kind` confirms with: shard channels count apart.
    pub fn count_of(&self, kind: Kind) -> usize {
        if kind == Kind::Shard { self.shard.len() } else { self.count() }
    }
    /// Every subscription, shard channels included: the client is in pub/sub mode while it is not 0.
    pub fn total(&self) -> usize {
        self.count() + self.shard.len()
    }

    fn set_mut(&mut self, kind: Kind) -> &mut IndexSet<Bytes, foldhash::fast::RandomState> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// Mirrors these subscriptions in the client's shared info (`sub=`, `psub=`, `ssub=`, flag `P`).
    fn show_in(&self, info: &ClientInfo) {
        info.sub.store(self.channels.len(), Ordering::Relaxed);
        info.psub.store(self.patterns.len(), Ordering::Relaxed);
        info.ssub.store(self.shard.len(), Ordering::Relaxed);
        info.set_flag('P', self.total() > 0);
    }
}

/// Which family a subscription belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// SUBSCRIBE / UNSUBSCRIBE / PUBLISH.
    Channel,
    /// PSUBSCRIBE / PUNSUBSCRIBE.
    Pattern,
    /// SSUBSCRIBE / SUNSUBSCRIBE / SPUBLISH.
    Shard,
}

impl Kind {
    fn words(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Kind::Channel => (b"subscribe", b"unsubscribe"),
            Kind::Pattern => (b"psubscribe", b"punsubscribe"),
            Kind::Shard => (b"ssubscribe", b"sunsubscribe"),
        }
    }
}

use crate::message::encode_message;
use crate::message::put_bulk;

/// A (un)subscription confirmation: `[kind, channel or nil, count]`; the nil is `_` for a RESP3
/// client (the only part of a message that is not the same in both protocols but its first byte).
fn confirmation(word: &[u8], channel: Option<&[u8]>, count: usize, resp3: bool) -> Bytes {
    let mut out = BytesMut::with_capacity(48 + channel.map_or(0, <[u8]>::len));
    out.put_slice(b"*3\r\n");
    put_bulk(&mut out, word);
    match channel {
        Some(c) => put_bulk(&mut out, c),
        None if resp3 => out.put_slice(b"_\r\n"),
        None => out.put_slice(b"$-1\r\n"),
    }
    out.put_u8(b':');
    out.put_slice(itoa::Buffer::new().format(count).as_bytes());
    out.put_slice(b"\r\n");
    out.freeze()
}

impl PubSub {
    fn map(&self, kind: Kind) -> &RwLock<Map> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard,
        }
    }

    /// Subscribers authenticated as `user` whose channels or patterns `allowed` (ACL channel
    /// patterns) no longer covers: Redis's `ACLKillPubsubClientsIfNeeded` disconnects them.
    pub fn subscribers_outside(&self, user: &[u8], allowed: &[Vec<u8>]) -> Vec<Arc<ClientInfo>> {
        let mut out: Vec<Arc<ClientInfo>> = Vec::new();
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for (channel, listeners) in self.map(kind).read().iter() {
                let ok = allowed.iter().any(|a| {
                    if kind == Kind::Pattern { a[..] == channel[..] } else { crate::glob::matches(a, channel, false) }
                });
                if ok {
                    continue;
                }
                for l in listeners {
                    if *l.user.lock() == user && !out.iter().any(|o| o.id == l.id) {
                        out.push(l.clone());
                    }
                }
            }
        }
        out
    }

    /// Channels (patterns, shard channels) with at least one subscriber.
    pub fn len(&self, kind: Kind) -> usize {
        self.map(kind).read().len()
    }

    /// True when nobody is subscribed to anything of `kind`.
    pub fn is_empty(&self, kind: Kind) -> bool {
        self.len(kind) == 0
    }

    /// Subscribers of `channel` (of a pattern or shard channel, by `kind`).
    pub fn numsub(&self, kind: Kind, channel: &[u8]) -> usize {
        self.map(kind).read().get(channel).map_or(0, Vec::len)
    }

    /// Channels of `kind` matching `pattern` (all without one), as PUBSUB CHANNELS lists them.
    pub fn list(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.map(kind)
            .read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| crate::glob::matches(p, c, false)))
            .cloned()
            .collect()
    }
}

impl PubSub {
    /// PUBLISH / SPUBLISH: hands `message` to `deliver` for each subscriber of `channel` (and, for
    /// plain channels, of each pattern matching it), encoded once per channel or pattern. Returns
    /// how many received it.
    pub fn publish(
        &self,
        shard: bool,
        channel: &[u8],
        message: &[u8],
        mut deliver: impl FnMut(&ClientInfo, Bytes),
    ) -> usize {
        let mut receivers = 0;
        let kind = if shard { Kind::Shard } else { Kind::Channel };
        {
            let map = self.map(kind).read();
            if let Some(subs) = map.get(channel) {
                let word: &[u8] = if shard { b"smessage" } else { b"message" };
                let msg = encode_message(&[word, channel, message]);
                for c in subs {
                    deliver(c, msg.clone());
                }
                receivers += subs.len();
            }
        }
        if !shard {
            let patterns = self.patterns.read();
            for (pattern, subs) in patterns.iter() {
                if !crate::glob::matches(pattern, channel, false) {
                    continue;
                }
                let msg = encode_message(&[b"pmessage", pattern, channel, message]);
                for c in subs {
                    deliver(c, msg.clone());
                }
                receivers += subs.len();
            }
        }
        receivers
    }

    /// Subscribes the client of `info` (whose side is `subs`) to `channels` of `kind`, handing
    /// `confirm` each confirmation.
    pub fn subscribe(
        &self,
        subs: &mut Subscriptions,
        info: &Arc<ClientInfo>,
        kind: Kind,
        channels: &[Bytes],
        mut confirm: impl FnMut(Bytes),
    ) {
        for ch in channels {
            if subs.set_mut(kind).insert(ch.clone()) {
                self.map(kind).write().entry(ch.clone()).or_default().push(info.clone());
            }
            confirm(confirmation(kind.words().0, Some(ch), subs.count_of(kind), false));
        }
        subs.show_in(info);
    }

    /// Unsubscribes the client of `info` from `channels` of `kind` (from all of them when
    /// `channels` is empty), handing `confirm` each confirmation when `notify` (one with a nil
    /// channel when there was nothing to leave; RESP3's null when `resp3`).
    #[allow(clippy::too_many_arguments)]
    pub fn unsubscribe(
        &self,
        subs: &mut Subscriptions,
        info: &ClientInfo,
        resp3: bool,
        kind: Kind,
        channels: &[Bytes],
        notify: bool,
        mut confirm: impl FnMut(Bytes),
    ) {
        let all: Vec<Bytes>;
        let list = if channels.is_empty() {
            all = subs.set_mut(kind).iter().cloned().collect();
            &all[..]
        } else {
            channels
        };
        for ch in list {
            // Leaving every channel: the order of what stays does not matter (nothing stays), so
            // each removal is O(1), not a shift of the rest.
            let left = if channels.is_empty() {
                subs.set_mut(kind).swap_remove(ch)
            } else {
                subs.set_mut(kind).shift_remove(ch)
            };
            if left {
                leave(&mut self.map(kind).write(), ch, info.id);
            }
            if notify {
                confirm(confirmation(kind.words().1, Some(ch), subs.count_of(kind), false));
            }
        }
        if notify && list.is_empty() {
            confirm(confirmation(kind.words().1, None, subs.count_of(kind), resp3));
        }
        subs.show_in(info);
    }

    /// Leaves every subscription without a word to the client (RESET, a closed connection).
    pub fn unsubscribe_all(&self, subs: &mut Subscriptions, info: &ClientInfo) {
        if subs.total() == 0 {
            return;
        }
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            self.unsubscribe(subs, info, false, kind, &[], false, |_| {});
        }
    }

    /// Removes a closing client (`id`, whose side was `subs`) from every channel, pattern and shard
    /// channel it listened to.
    pub fn forget(&self, subs: &Subscriptions, id: u64) {
        for (kind, set) in
            [(Kind::Channel, &subs.channels), (Kind::Pattern, &subs.patterns), (Kind::Shard, &subs.shard)]
        {
            if set.is_empty() {
                continue;
            }
            let mut map = self.map(kind).write();
            for ch in set {
                leave(&mut map, ch, id);
            }
        }
    }
}

/// Takes client `id` off `ch`'s subscribers; a channel left with none goes.
fn leave(map: &mut Map, ch: &[u8], id: u64) {
    if let Some(subs) = map.get_mut(ch) {
        subs.retain(|c| c.id != id);
        if subs.is_empty() {
            map.shift_remove(ch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_confirmations_are_resp2_arrays() {
        assert_eq!(
            &encode_message(&[b"message", b"ch", b"hi"])[..],
            b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
        );
        assert_eq!(&confirmation(b"unsubscribe", None, 0, false)[..], b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n");
        assert_eq!(&confirmation(b"unsubscribe", None, 0, true)[..], b"*3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n");
        assert_eq!(
            &confirmation(b"subscribe", Some(b"a"), 2, false)[..],
            b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:2\r\n"
        );
    }
}
