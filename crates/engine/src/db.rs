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
    /// The time keys expire by: `now`, or 0 while an AOF loads (Redis's loading mode, where no key
    /// expires until the load ends).
    expire_now: u64,
    /// What reads and writes record on the keys they reach; none for a CLIENT NO-TOUCH client's reads.
    access: crate::types::Access,
    no_touch: bool,
    /// Set under `maxmemory` with an evicting policy: new keys evict rather than grow a full table.
    evict: Option<&'l dyn MakeRoom>,
}

/// Makes room in a full table before a new key is added to it, under `maxmemory` with an evicting
/// policy (the runtime's eviction, `crate::evict`, implements it).
pub trait MakeRoom {
    /// Before `key` is stored in `t` (`with_ttl`: with a deadline) at `now_ms`: evicts from `t`
    /// if its growth would take used memory over the limit.
    fn make_room(&self, t: &mut Table, key: &[u8], with_ttl: bool, now_ms: u64);
}

impl<'l, 'k> Db<'l, 'k> {
    pub(crate) fn new(
        locked: &'l mut Locked<'k>,
        index: usize,
        now: u64,
        access: crate::types::Access,
        no_touch: bool,
        evict: Option<&'l dyn MakeRoom>,
    ) -> Self {
        Db { locked, index, now, expire_now: now, access, no_touch, evict }
    }

    /// With `loading`, Redis's loading mode: no key expires (an AOF replays commands on keys whose
    /// TTL may have passed since they were written; they expire once the load is over).
    pub(crate) fn loading_if(mut self, loading: bool) -> Self {
        if loading {
            self.expire_now = 0;
        }
        self
    }

    /// The table for a key about to be stored (`with_ttl`: with a deadline): room made first if
    /// storing it grows a full table (see [`MakeRoom`]).
    fn table_for_insert(&mut self, key: &[u8], with_ttl: bool) -> &mut Table {
        let (now, evict) = (self.now, self.evict);
        let t = self.table(key);
        if let Some(e) = evict {
            e.make_room(t, key, with_ttl, now);
        }
        t
    }

    /// The table holding `key` in this database.
    pub fn table(&mut self, key: &[u8]) -> &mut Table {
        let i = self.index;
        &mut self.locked.shard_for(key).dbs[i]
    }

    /// Looks a key up for reading: counts a keyspace hit or miss and refreshes its access time.
    pub fn read(&mut self, key: &[u8]) -> Option<&Entry> {
        let (now, i, no_touch, access) = (self.now, self.index, self.no_touch, self.access);
        let expire_now = self.expire_now;
        let hash = self.locked.known_hash(key);
        let crate::keyspace::Shard { dbs, hits, misses, .. } = self.locked.shard_for(key);
        match dbs[i].lookup_read_hashed(key, hash, expire_now) {
            Some(e) => {
                *hits += 1;
                if !no_touch {
                    access.touch(e, now);
                }
                Some(e)
            }
            None => {
                *misses += 1;
                None
            }
        }
    }

    /// [`Db::read`] with the key's TTL deadline (monotonic ms), in one lookup.
    pub fn read_with_deadline(&mut self, key: &[u8]) -> Option<(&Entry, Option<u64>)> {
        let (now, i, no_touch, access) = (self.now, self.index, self.no_touch, self.access);
        let expire_now = self.expire_now;
        let crate::keyspace::Shard { dbs, hits, misses, .. } = self.locked.shard_for(key);
        match dbs[i].lookup_read_with_deadline(key, expire_now) {
            Some((e, at)) => {
                *hits += 1;
                if !no_touch {
                    access.touch(e, now);
                }
                Some((&*e, at))
            }
            None => {
                *misses += 1;
                None
            }
        }
    }

    /// Looks a key up for reading without refreshing its access time (Redis's `LOOKUP_NOTOUCH`):
    /// counts a keyspace hit or miss. Used by EXISTS, TYPE, OBJECT.
    pub fn read_notouch(&mut self, key: &[u8]) -> Option<&Entry> {
        self.read_notouch_with_deadline(key).map(|(e, _)| e)
    }

    /// [`Db::read_notouch`] with the key's TTL deadline (monotonic ms), in one lookup: TTL, PTTL,
    /// EXPIRETIME.
    pub fn read_notouch_with_deadline(&mut self, key: &[u8]) -> Option<(&Entry, Option<u64>)> {
        let (now, i) = (self.expire_now, self.index);
        let crate::keyspace::Shard { dbs, hits, misses, .. } = self.locked.shard_for(key);
        match dbs[i].lookup_read_with_deadline(key, now) {
            Some((e, at)) => {
                *hits += 1;
                Some((&*e, at))
            }
            None => {
                *misses += 1;
                None
            }
        }
    }

    /// Looks a key up for modification (no statistics).
    pub fn write(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let (now, access, expire_now) = (self.now, self.access, self.expire_now);
        let hash = self.locked.known_hash(key);
        let e = self.table(key).lookup_for_write_hashed(key, hash, expire_now)?;
        access.touch(e, now);
        Some(e)
    }

    /// [`Db::write`] with the key's TTL deadline (monotonic ms), in one lookup (EXPIRE's
    /// conditions).
    pub fn write_with_deadline(&mut self, key: &[u8]) -> Option<(&mut Entry, Option<u64>)> {
        let (now, access, expire_now) = (self.now, self.access, self.expire_now);
        let (e, at) = self.table(key).lookup_for_write_with_deadline(key, expire_now)?;
        access.touch(e, now);
        Some((e, at))
    }

    /// [`Db::write`] for the rest of the view's borrow: the entry outlives the view (a handler
    /// that holds a value while it reports through its `Ctx` between lookups).
    pub fn into_write(self, key: &[u8]) -> Option<&'l mut Entry> {
        let (now, access, expire_now, i) = (self.now, self.access, self.expire_now, self.index);
        let e = self.locked.shard_for(key).dbs[i].lookup_for_write(key, expire_now)?;
        access.touch(e, now);
        Some(e)
    }

    /// [`Db::read`] for the rest of the view's borrow.
    pub fn into_read(self, key: &[u8]) -> Option<&'l Entry> {
        let (now, i, no_touch, access) = (self.now, self.index, self.no_touch, self.access);
        let expire_now = self.expire_now;
        let crate::keyspace::Shard { dbs, hits, misses, .. } = self.locked.shard_for(key);
        match dbs[i].lookup_read(key, expire_now) {
            Some(e) => {
                *hits += 1;
                if !no_touch {
                    access.touch(e, now);
                }
                Some(e)
            }
            None => {
                *misses += 1;
                None
            }
        }
    }

    /// [`Db::peek`] for the rest of the view's borrow.
    pub fn into_peek(self, key: &[u8]) -> Option<&'l Entry> {
        let (now, i) = (self.expire_now, self.index);
        self.locked.shard_for(key).dbs[i].lookup(key, now).map(|e| &*e)
    }

    /// True if the key exists (and is not expired). Does not count as a read.
    pub fn exists(&mut self, key: &[u8]) -> bool {
        let now = self.expire_now;
        self.table(key).lookup(key, now).is_some()
    }

    /// The live entry without touching statistics or access time (TYPE-like introspection).
    pub fn peek(&mut self, key: &[u8]) -> Option<&Entry> {
        let now = self.expire_now;
        self.table(key).lookup(key, now).map(|e| &*e)
    }

    /// Stores `value` under `key`. With `keep_ttl` an existing TTL survives, otherwise it is cleared.
    /// A key whose TTL passed is reclaimed first (an expiry, as Redis's `lookupKeyWrite` before
    /// `setKey`), so callers need not look the key up before overwriting it.
    pub fn set(&mut self, key: &[u8], value: Value, keep_ttl: bool) {
        let (now, access, expire_now) = (self.now, self.access, self.expire_now);
        let hash = self.locked.known_hash(key);
        // A kept TTL is an existing key's, whose place in the list is there already.
        let t = self.table_for_insert(key, false);
        let mut e = Entry::new(value);
        e.set_atime((now / 1000) as u32);
        let mut at = 0;
        if (keep_ttl || access != crate::types::Access::Lru)
            && let Some((old, old_at)) = t.lookup_with_deadline(key, expire_now)
        {
            if keep_ttl {
                at = old_at.unwrap_or(0);
            }
            // Under LFU an overwritten key keeps its (touched) counter, as Redis's dbSetValue.
            if access != crate::types::Access::Lru {
                access.touch(old, now);
                e.set_lfu(old.lfu());
            }
        }
        t.set_hashed(key, hash, e, at, expire_now);
    }

    /// Stores `value` with a deadline (monotonic ms; 0 = none).
    pub fn set_with_expire(&mut self, key: &[u8], value: Value, expire_at: u64) {
        let mut e = Entry::new(value);
        e.set_atime((self.now / 1000) as u32);
        self.insert_entry(key, e, expire_at);
    }

    /// Stores a whole entry with the deadline `at` (monotonic ms; 0 = none): RENAME and MOVE keep
    /// TTL and metadata (the pair [`Db::remove_with_deadline`] hands back), RESTORE sets them.
    /// A key at `key` whose TTL passed is reclaimed first, as by [`Db::set`].
    pub fn insert_entry(&mut self, key: &[u8], entry: Entry, at: u64) {
        let (hash, expire_now) = (self.locked.known_hash(key), self.expire_now);
        self.table_for_insert(key, at != 0).set_hashed(key, hash, entry, at, expire_now);
    }

    /// Deletes a key; returns the removed entry if it was live.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        self.remove_with_deadline(key).map(|(e, _)| e)
    }

    /// [`Db::remove`] that also hands back the key's deadline (0: none).
    pub fn remove_with_deadline(&mut self, key: &[u8]) -> Option<(Entry, u64)> {
        let now = self.expire_now;
        let t = self.table(key);
        t.lookup(key, now)?;
        t.remove_with_deadline(key)
    }

    /// Sets the deadline of a live key; false if absent.
    pub fn set_expire(&mut self, key: &[u8], at: u64) -> bool {
        let now = self.expire_now;
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
