//! [`Db`]: one database as seen by a handler, over the shards the command locked.
//!
//! Reads go through [`Db::read`] (counts hits/misses, updates the access clock), writes through
//! [`Db::write`], [`Db::set`] and [`Db::remove`]. Keeping every mutation behind these few methods is
//! what lets WATCH and keyspace notifications hook in at one place.

use crate::error;
use crate::keyspace::{Locked, Table};
use crate::value::{Entry, Value};
use resp::Frame;

/// A database view for one command.
pub struct Db<'l, 'k> {
    locked: &'l mut Locked<'k>,
    /// Database number.
    pub index: usize,
    /// The command's time (monotonic ms).
    pub now: u64,
    no_touch: bool,
}

impl<'l, 'k> Db<'l, 'k> {
    pub(crate) fn new(locked: &'l mut Locked<'k>, index: usize, now: u64, no_touch: bool) -> Self {
        Db { locked, index, now, no_touch }
    }

    /// The table holding `key` in this database.
    pub fn table(&mut self, key: &[u8]) -> &mut Table {
        let i = self.index;
        &mut self.locked.shard_for(key).dbs[i]
    }

    /// Looks a key up for reading: counts a keyspace hit or miss and refreshes its access time.
    pub fn read(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let (now, i, no_touch) = (self.now, self.index, self.no_touch);
        let crate::keyspace::Shard { dbs, hits, misses, .. } = self.locked.shard_for(key);
        match dbs[i].lookup(key, now) {
            Some(e) => {
                *hits += 1;
                if !no_touch {
                    touch(e, now);
                }
                Some(e)
            }
            None => {
                *misses += 1;
                None
            }
        }
    }

    /// Looks a key up for reading without refreshing its access time (Redis's `LOOKUP_NOTOUCH`):
    /// counts a keyspace hit or miss. Used by EXISTS, TYPE, TTL, OBJECT.
    pub fn read_notouch(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let (now, i) = (self.now, self.index);
        let crate::keyspace::Shard { dbs, hits, misses, .. } = self.locked.shard_for(key);
        match dbs[i].lookup(key, now) {
            Some(e) => {
                *hits += 1;
                Some(e)
            }
            None => {
                *misses += 1;
                None
            }
        }
    }

    /// Looks a key up for modification (no statistics).
    pub fn write(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let now = self.now;
        let e = self.table(key).lookup_for_write(key, now)?;
        touch(e, now);
        Some(e)
    }

    /// True if the key exists (and is not expired). Does not count as a read.
    pub fn exists(&mut self, key: &[u8]) -> bool {
        let now = self.now;
        self.table(key).lookup(key, now).is_some()
    }

    /// The live entry without touching statistics or access time (TYPE-like introspection).
    pub fn peek(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let now = self.now;
        self.table(key).lookup(key, now)
    }

    /// Stores `value` under `key`. With `keep_ttl` an existing TTL survives, otherwise it is cleared.
    pub fn set(&mut self, key: &[u8], value: Value, keep_ttl: bool) {
        let now = self.now;
        let t = self.table(key);
        let expire_at = if keep_ttl { t.lookup(key, now).map(|e| e.expire_at).unwrap_or(0) } else { 0 };
        let mut e = Entry::new(value);
        e.expire_at = expire_at;
        touch(&mut e, now);
        t.insert(key, e);
    }

    /// Stores `value` with a deadline (monotonic ms; 0 = none).
    pub fn set_with_expire(&mut self, key: &[u8], value: Value, expire_at: u64) {
        let mut e = Entry::new(value);
        e.expire_at = expire_at;
        touch(&mut e, self.now);
        self.table(key).insert(key, e);
    }

    /// Stores a whole entry (RENAME, MOVE, COPY keep TTL and metadata).
    pub fn insert_entry(&mut self, key: &[u8], entry: Entry) {
        self.table(key).insert(key, entry);
    }

    /// Deletes a key; returns the removed entry if it was live.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let now = self.now;
        let t = self.table(key);
        t.lookup(key, now)?;
        t.remove(key)
    }

    /// Sets the deadline of a live key; false if absent.
    pub fn set_expire(&mut self, key: &[u8], at: u64) -> bool {
        let now = self.now;
        let t = self.table(key);
        if t.lookup(key, now).is_none() {
            return false;
        }
        t.set_expire(key, at)
    }

    /// Reads a string value for a read-only command: Ok(None) if missing, WRONGTYPE for other types.
    pub fn read_string(&mut self, key: &[u8]) -> Result<Option<&Value>, Frame> {
        match self.read(key) {
            None => Ok(None),
            Some(e) if e.value.is_string() => Ok(Some(&e.value)),
            Some(_) => Err(error::wrong_type()),
        }
    }

    /// Gets a string value for modification: Ok(None) if missing, WRONGTYPE for other types.
    pub fn write_string(&mut self, key: &[u8]) -> Result<Option<&mut Entry>, Frame> {
        match self.write(key) {
            None => Ok(None),
            Some(e) if e.value.is_string() => Ok(Some(e)),
            Some(_) => Err(error::wrong_type()),
        }
    }

    /// Iterates over this database's tables in every locked shard.
    pub fn tables(&mut self) -> impl Iterator<Item = &mut Table> {
        let i = self.index;
        self.locked.shards_mut().map(move |s| &mut s.dbs[i])
    }

    /// The underlying locks (for commands spanning databases such as SWAPDB and FLUSHALL).
    pub fn locked(&mut self) -> &mut Locked<'k> {
        self.locked
    }
}

/// Refreshes LRU/LFU metadata on access.
fn touch(e: &mut Entry, now: u64) {
    e.atime = (now / 1000) as u32;
    crate::types::lfu_incr(e);
}
