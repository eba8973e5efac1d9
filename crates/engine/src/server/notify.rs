//! Keyspace notifications and invalidations in the composition: a command's key log, sorted by
//! `crate::notify`, goes to pub/sub (the events) and to client tracking (the invalidations).

use super::Server;
use crate::keyspace::Locked;
use crate::notify::{Ran, channels, digest, events, key_log_for};
use std::sync::atomic::Ordering;

impl Server {
    /// Publishes one keyspace event, on the channels `notify-keyspace-events` asks for (Redis's
    /// `notifyKeyspaceEvent`).
    pub fn notify_keyspace_event(&self, class: u32, event: &str, db: usize, key: &[u8]) {
        let flags = self.config.notify_keyspace_events.load(Ordering::Relaxed);
        if flags & class == 0 {
            return;
        }
        if self.pubsub.is_empty(crate::pubsub::Kind::Channel) && self.pubsub.is_empty(crate::pubsub::Kind::Pattern) {
            return;
        }
        for (channel, message) in channels(flags, event, db, key) {
            self.publish(false, &channel, &message);
        }
    }

    /// Makes the tables log what keyspace notifications and client tracking need, after
    /// `notify-keyspace-events` changed or tracking was turned on or off.
    pub fn sync_key_log(&self) {
        let flags = self.config.notify_keyspace_events.load(Ordering::Relaxed);
        self.ks.set_key_log(key_log_for(flags, self.tracking.any()));
    }

    /// Raises what happened to the locked shards' keys since the last call: the tables' own events
    /// (expired, evicted, new), the invalidations of client tracking, then the events of the
    /// command that `ran` (None outside commands), in database `db`.
    pub(crate) fn raise_key_events(
        &self,
        locked: &mut Locked<'_>,
        ran: Option<Ran<'_>>,
        db: usize,
        cause: crate::tracking::Cause<'_>,
    ) {
        let mut log = Vec::new();
        for s in locked.shards_mut() {
            s.take_log(&mut log);
        }
        if log.is_empty() {
            return;
        }
        let d = digest(log, ran.as_ref());
        for (class, event, kdb, key) in &d.table_events {
            self.notify_keyspace_event(*class, event, *kdb, key);
        }
        // A command that changed nothing (dirty 0: SREM of a missing member) invalidates and
        // raises nothing of its own, whatever paths it took.
        let real = ran.as_ref().is_none_or(|r| r.changed);
        if self.tracking.any() {
            let mut keys: indexmap::IndexSet<&[u8], foldhash::fast::RandomState> =
                d.gone.iter().map(|k| &k[..]).collect();
            if real {
                keys.extend(d.changed.iter().map(|(_, k)| &k[..]));
            }
            self.invalidate_keys(&keys.into_iter().collect::<Vec<_>>(), cause);
        }
        let Some(Ran { name, args, changed: true, named }) = ran else { return };
        if self.config.notify_keyspace_events.load(Ordering::Relaxed) == 0 {
            return;
        }
        for (kdb, key) in d.changed {
            let exists = locked.shard_for(&key).dbs[kdb].peek(&key).is_some();
            if !named.is_empty() {
                for event in named {
                    self.notify_keyspace_event(crate::notify::STREAM, event, kdb, &key);
                }
                continue;
            }
            for (class, event) in events(name, args, &key, exists, kdb != db) {
                self.notify_keyspace_event(class, event, kdb, &key);
            }
        }
    }
}
