//! Keyspace notifications (`notify-keyspace-events`), raised from the change stream rather than by
//! handlers, so that no command can forget one.
//!
//! While some class is enabled, the tables log what happens to their keys ([`KeyEvent`]: changed,
//! added, expired, evicted; `Table::touch`, the path every modification takes to tell WATCH, logs
//! the changes). After each command, [`Server::raise_key_events`] takes that log from the command's
//! shards and turns it into Redis's events: `expired`, `evicted` and `new` as the tables saw them,
//! then, for each key the command changed, the event Redis raises for that command ([`events`]),
//! plus `del` when the command emptied an aggregate. Keys the command did not change raise
//! nothing (a `DEL` of a missing key), nor does a command that changed nothing at all (its dirty
//! count is 0: an `SREM` of a missing member). The cron's and eviction's
//! deletions are raised by the pass that made them ([`Server::serve_ready`] runs after both).
//!
//! Latch adds class `L` for native locks: `lock_acquired`, `lock_handed_over` (a waiter got the
//! lock when it was freed), `lock_released`, `lock_extended` and `lock_expired`. `A` does not
//! include it, as it does not include `m` and `n`.

use crate::keyspace::KeyEvent;
use crate::value::Key;
use bytes::Bytes;

/// `K`: `__keyspace@<db>__:<key>` channels.
pub const KEYSPACE: u32 = 1;
/// `E`: `__keyevent@<db>__:<event>` channels.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted set commands.
pub const ZSET: u32 = 1 << 7;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `x`: expired keys.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: evicted keys.
pub const EVICTED: u32 = 1 << 9;
/// `m`: reads that found no key.
pub const KEYMISS: u32 = 1 << 11;
/// `n`: new keys.
pub const NEW: u32 = 1 << 14;
/// `L` (Latch's own): native locks.
pub const LOCK: u32 = 1 << 15;

/// The [`KeyEvent`]s the tables must log for `flags` (0 when nothing would be published).
pub fn key_log_mask(flags: u32) -> u32 {
    if flags & (KEYSPACE | KEYEVENT) == 0 || flags & !(KEYSPACE | KEYEVENT) == 0 {
        return 0;
    }
    let mut mask = KeyEvent::Changed.bit();
    if flags & (EXPIRED | LOCK) != 0 {
        mask |= KeyEvent::Expired { lock: false }.bit();
    }
    if flags & EVICTED != 0 {
        mask |= KeyEvent::Evicted.bit();
    }
    if flags & NEW != 0 {
        mask |= KeyEvent::New.bit();
    }
    if flags & KEYMISS != 0 {
        mask |= KeyEvent::Missed.bit();
    }
    mask
}

/// An event: its class and name.
type Ev = (u32, &'static str);

/// The command whose changes are being raised.
pub struct Ran<'a> {
    /// Its name (lowercase), or what a served waiter's step did (`lpop`, `lmove`...).
    pub name: &'a str,
    /// Its arguments.
    pub args: &'a [Bytes],
    /// It changed data (its dirty count is not 0, or it asked to be propagated).
    pub changed: bool,
    /// The stream events it named (`Ctx::event`): raised for its key instead of [`events`]'s.
    pub named: &'a [&'static str],
}

fn has(args: &[Bytes], word: &str) -> bool {
    args.iter().skip(1).any(|a| a.eq_ignore_ascii_case(word.as_bytes()))
}

/// The events Redis raises for `key`, which command `name` (lowercase; `args` its arguments)
/// changed; `exists` tells whether the key is there after it, `moved_away` whether it changed in
/// the database the command did not select (MOVE's and COPY's other database).
pub fn events(name: &str, args: &[Bytes], key: &[u8], exists: bool, other_db: bool) -> Vec<Ev> {
    let arg = |i: usize| args.get(i).map(|a| &a[..]);
    let is = |i: usize| arg(i) == Some(key);
    // Emptied aggregates are deleted after the command's own event.
    let then_del = |ev: Ev| if exists { vec![ev] } else { vec![ev, (GENERIC, "del")] };
    let stored = |ev: Ev| if exists { vec![ev] } else { vec![(GENERIC, "del")] };
    let pop_end = |i: usize| if arg(i).is_some_and(|a| a.eq_ignore_ascii_case(b"left")) { "lpop" } else { "rpop" };
    let push_end = |i: usize| if arg(i).is_some_and(|a| a.eq_ignore_ascii_case(b"left")) { "lpush" } else { "rpush" };
    match name {
        "set" => {
            let ttl = ["ex", "px", "exat", "pxat"].iter().any(|w| has(args, w));
            if ttl { vec![(STRING, "set"), (GENERIC, "expire")] } else { vec![(STRING, "set")] }
        }
        "setex" | "psetex" => vec![(STRING, "set"), (GENERIC, "expire")],
        "setnx" | "mset" | "msetnx" | "getset" => vec![(STRING, "set")],
        "append" => vec![(STRING, "append")],
        "setrange" => vec![(STRING, "setrange")],
        "incr" | "decr" | "incrby" | "decrby" => vec![(STRING, "incrby")],
        "incrbyfloat" => vec![(STRING, "incrbyfloat")],
        "setbit" | "bitfield" => vec![(STRING, "setbit")],
        // PFMERGE raises `pfadd` too ("a mass-add of elements"); PFCOUNT's cache write raises none.
        "pfadd" | "pfmerge" => vec![(STRING, "pfadd")],
        "bitop" => stored((STRING, "set")),
        "del" | "unlink" | "getdel" => vec![(GENERIC, "del")],
        "getex" if !exists => vec![(GENERIC, "del")],
        "getex" if has(args, "persist") => vec![(GENERIC, "persist")],
        "getex" | "expire" | "pexpire" | "expireat" | "pexpireat" => stored((GENERIC, "expire")),
        "persist" => vec![(GENERIC, "persist")],
        "rename" | "renamenx" if is(1) => vec![(GENERIC, "rename_from")],
        "rename" | "renamenx" => vec![(GENERIC, "rename_to")],
        "move" if other_db => vec![(GENERIC, "move_to")],
        "move" => vec![(GENERIC, "move_from")],
        "copy" => vec![(GENERIC, "copy_to")],
        "restore" => vec![(GENERIC, "restore")],
        "sort" => stored((GENERIC, "sortstore")),
        "migrate" => vec![(GENERIC, "del")],
        "lpush" | "lpushx" => vec![(LIST, "lpush")],
        "rpush" | "rpushx" => vec![(LIST, "rpush")],
        "linsert" => vec![(LIST, "linsert")],
        "lset" => vec![(LIST, "lset")],
        "lpop" | "blpop" => then_del((LIST, "lpop")),
        "rpop" | "brpop" => then_del((LIST, "rpop")),
        "ltrim" => then_del((LIST, "ltrim")),
        "lrem" => then_del((LIST, "lrem")),
        "rpoplpush" | "brpoplpush" => {
            // The source first; one key can be both (a rotation).
            let mut v = Vec::new();
            if is(1) {
                v.extend(then_del((LIST, "rpop")));
            }
            if is(2) {
                v.push((LIST, "lpush"));
            }
            v
        }
        "lmove" | "blmove" => {
            let mut v = Vec::new();
            if is(1) {
                v.extend(then_del((LIST, pop_end(3))));
            }
            if is(2) {
                v.push((LIST, push_end(4)));
            }
            v
        }
        "lmpop" | "blmpop" => {
            let left = args.iter().any(|a| a.eq_ignore_ascii_case(b"left"));
            then_del((LIST, if left { "lpop" } else { "rpop" }))
        }
        "sadd" => vec![(SET, "sadd")],
        "srem" => then_del((SET, "srem")),
        "spop" => then_del((SET, "spop")),
        "smove" if is(1) => then_del((SET, "srem")),
        "smove" => vec![(SET, "sadd")],
        "sinterstore" => stored((SET, "sinterstore")),
        "sunionstore" => stored((SET, "sunionstore")),
        "sdiffstore" => stored((SET, "sdiffstore")),
        "hset" | "hsetnx" | "hmset" => vec![(HASH, "hset")],
        "hdel" => then_del((HASH, "hdel")),
        "hincrby" => vec![(HASH, "hincrby")],
        "hincrbyfloat" => vec![(HASH, "hincrbyfloat")],
        "zadd" if has(args, "incr") => vec![(ZSET, "zincr")],
        "zadd" => vec![(ZSET, "zadd")],
        "zincrby" => vec![(ZSET, "zincr")],
        "zrem" => then_del((ZSET, "zrem")),
        "zremrangebyscore" => then_del((ZSET, "zremrangebyscore")),
        "zremrangebyrank" => then_del((ZSET, "zremrangebyrank")),
        "zremrangebylex" => then_del((ZSET, "zremrangebylex")),
        "zpopmin" | "bzpopmin" => then_del((ZSET, "zpopmin")),
        "zpopmax" | "bzpopmax" => then_del((ZSET, "zpopmax")),
        "zmpop" | "bzmpop" => {
            let min = args.iter().any(|a| a.eq_ignore_ascii_case(b"min"));
            then_del((ZSET, if min { "zpopmin" } else { "zpopmax" }))
        }
        "zunionstore" => stored((ZSET, "zunionstore")),
        "zinterstore" => stored((ZSET, "zinterstore")),
        "zdiffstore" => stored((ZSET, "zdiffstore")),
        "zrangestore" => stored((ZSET, "zrangestore")),
        // GEOADD runs as the ZADD it is rewritten into; a search stores its result or deletes it.
        "geoadd" => vec![(ZSET, "zadd")],
        "georadius" | "georadiusbymember" => stored((ZSET, "georadiusstore")),
        "geosearchstore" => stored((ZSET, "geosearchstore")),
        "lock" => vec![(LOCK, "lock_acquired")],
        "lock_served" => vec![(LOCK, "lock_handed_over")],
        "unlock" => vec![(LOCK, "lock_released")],
        "lockextend" => vec![(LOCK, "lock_extended")],
        _ => Vec::new(),
    }
}

/// A key log sorted for raising: the tables' own events (expired, evicted, new, missed) in the
/// order they happened, the keys that went (expired or evicted), and the keys changed, each once,
/// in the order of the command's arguments (the source before the destination).
pub struct Digest {
    /// `(class, event, db, key)`, to publish first.
    pub table_events: Vec<(u32, &'static str, usize, Key)>,
    /// Keys expired or evicted: invalidated whatever the command did.
    pub gone: Vec<Key>,
    /// `(db, key)` changed by the command.
    pub changed: indexmap::IndexSet<(usize, Key), foldhash::fast::RandomState>,
}

/// Sorts the tables' key `log` for the command that `ran` (None outside commands).
pub fn digest(log: Vec<(usize, Key, KeyEvent)>, ran: Option<&Ran<'_>>) -> Digest {
    // Each changed key once, in the order the tables logged it (a set: a DEL of many keys must not
    // cost their square).
    let mut d = Digest { table_events: Vec::new(), gone: Vec::new(), changed: Default::default() };
    for (kdb, key, ev) in log {
        match ev {
            KeyEvent::Expired { lock } => {
                d.table_events.push((EXPIRED, "expired", kdb, key.clone()));
                if lock {
                    d.table_events.push((LOCK, "lock_expired", kdb, key.clone()));
                }
                d.gone.push(key);
            }
            KeyEvent::Evicted => {
                d.table_events.push((EVICTED, "evicted", kdb, key.clone()));
                d.gone.push(key);
            }
            KeyEvent::New => d.table_events.push((NEW, "new", kdb, key)),
            KeyEvent::Missed => d.table_events.push((KEYMISS, "keymiss", kdb, key)),
            KeyEvent::Changed => {
                d.changed.insert((kdb, key));
            }
        }
    }
    if let Some(r) = ran {
        let mut first: std::collections::HashMap<&[u8], usize, foldhash::fast::RandomState> = Default::default();
        for (i, a) in r.args.iter().enumerate().skip(1) {
            first.entry(&a[..]).or_insert(i);
        }
        d.changed.sort_by_cached_key(|(_, k)| first.get(&k[..]).copied().unwrap_or(usize::MAX));
    }
    d
}

/// The channels and messages of one keyspace event under `flags` (`notify-keyspace-events`):
/// `__keyspace@<db>__:<key>` carrying the event, `__keyevent@<db>__:<event>` carrying the key.
pub fn channels(flags: u32, event: &str, db: usize, key: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::with_capacity(2);
    if flags & KEYSPACE != 0 {
        let mut ch = format!("__keyspace@{db}__:").into_bytes();
        ch.extend_from_slice(key);
        out.push((ch, event.as_bytes().to_vec()));
    }
    if flags & KEYEVENT != 0 {
        out.push((format!("__keyevent@{db}__:{event}").into_bytes(), key.to_vec()));
    }
    out
}

/// What the tables must log for `flags` and for client tracking (`tracking`: a client tracks
/// keys).
pub fn key_log_for(flags: u32, tracking: bool) -> u32 {
    let t = if tracking {
        KeyEvent::Changed.bit() | KeyEvent::Expired { lock: false }.bit() | KeyEvent::Evicted.bit()
    } else {
        0
    };
    key_log_mask(flags) | t
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    /// What a `PSUBSCRIBE *` client receives while `commands` run, one event per line
    /// (`<channel> <message>`).
    fn events_of(flags: &str, commands: &[&str]) -> Vec<String> {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run(&format!("CONFIG SET notify-keyspace-events {flags}"));
        let mut sub = ts.client();
        sub.run("PSUBSCRIBE *");
        for line in commands {
            c.run(line);
        }
        event_lines(&mut sub)
    }

    /// The events a `PSUBSCRIBE *` client received, one per line (`<channel> <message>`).
    fn event_lines(sub: &mut crate::testkit::TestClient) -> Vec<String> {
        sub.pushes()
            .into_iter()
            .map(|m| {
                let inner = m.trim_start_matches('[').trim_end_matches(']');
                let parts: Vec<&str> = inner.split(", ").map(|p| p.trim_matches('"')).collect();
                format!("{} {}", parts[2], parts[3])
            })
            .collect()
    }

    /// [`event_lines`] of `__keyevent@0__` channels, without the channel's prefix: "set k".
    fn db0_events(sub: &mut crate::testkit::TestClient) -> Vec<String> {
        event_lines(sub).iter().map(|e| e.trim_start_matches("__keyevent@0__:").to_string()).collect()
    }

    #[test]
    fn generic_and_string_events() {
        assert_eq!(
            events_of("KEA", &["SET k v", "SET k v EX 100", "DEL k missing", "DEL missing", "APPEND a x", "INCR n"]),
            [
                "__keyspace@0__:k set",
                "__keyevent@0__:set k",
                "__keyspace@0__:k set",
                "__keyevent@0__:set k",
                "__keyspace@0__:k expire",
                "__keyevent@0__:expire k",
                "__keyspace@0__:k del",
                "__keyevent@0__:del k",
                "__keyspace@0__:a append",
                "__keyevent@0__:append a",
                "__keyspace@0__:n incrby",
                "__keyevent@0__:incrby n",
            ]
        );
    }

    #[test]
    fn emptied_aggregates_rename_and_masks() {
        assert_eq!(
            events_of("Elg", &["RPUSH l a", "LPOP l", "SADD s x", "RPUSH m a", "LREM m 0 zz", "RENAME m q"]),
            [
                "__keyevent@0__:rpush l",
                "__keyevent@0__:lpop l",
                "__keyevent@0__:del l",
                "__keyevent@0__:rpush m",
                "__keyevent@0__:rename_from m",
                "__keyevent@0__:rename_to q",
            ]
        );
        assert_eq!(
            events_of("En", &["SET a 1", "SET a 2", "RPUSH b x"]),
            ["__keyevent@0__:new a", "__keyevent@0__:new b"]
        );
        assert_eq!(events_of("K", &["SET a 1"]), Vec::<String>::new());
        assert_eq!(
            events_of("Em", &["GET nothing", "SET a 1", "GET a", "EXISTS gone"]),
            ["__keyevent@0__:keymiss nothing", "__keyevent@0__:keymiss gone"]
        );
    }

    /// A SET over an expired key reclaims it first, NX and XX or not: `expired`, then the SET's
    /// own event when it writes (Redis's setGenericCommand looks the key up for writing first, and
    /// setKey does for MSET). A plain SET and MSET do it in the write's own probe of the table.
    #[test]
    fn a_set_over_an_expired_key_expires_it_first() {
        for (set, want) in [
            ("SET k w", &["set k", "expired k", "set k"][..]),
            ("SET k w NX", &["set k", "expired k", "set k"]),
            ("SET k w XX", &["set k", "expired k"]),
            ("SET k w GET", &["set k", "expired k", "set k"]),
            ("SET k w PX 100", &["set k", "expired k", "set k"]),
            ("PSETEX k 100 w", &["set k", "expired k", "set k"]),
            ("MSET k w", &["set k", "expired k", "set k"]),
        ] {
            let ts = TestServer::new();
            let mut c = ts.client();
            c.run("CONFIG SET notify-keyspace-events Ex$");
            let mut sub = ts.client();
            sub.run("PSUBSCRIBE *");
            c.run("SET k v PX 10");
            ts.clock.advance_ms(20);
            c.run(set);
            assert_eq!(db0_events(&mut sub), want, "{set}");
        }
    }

    /// RENAME over a key whose TTL passed expires it first, as Redis's lookupKeyWrite of the
    /// destination does (Redis 7.0.15: `expired k`, `rename_from s`, `rename_to k`, and
    /// `expired_keys` counts it).
    #[test]
    fn a_rename_over_an_expired_key_expires_it_first() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("CONFIG SET notify-keyspace-events Exg");
        c.run("SET k v PX 10");
        c.run("SET s x");
        let mut sub = ts.client();
        sub.run("PSUBSCRIBE *");
        ts.clock.advance_ms(20);
        assert_eq!(c.run("RENAME s k"), "+OK");
        assert_eq!(db0_events(&mut sub), ["expired k", "rename_from s", "rename_to k"]);
        assert!(c.run("INFO stats").contains("expired_keys:1"));
        assert_eq!(c.run("GET k"), "\"x\"");
    }

    #[test]
    fn expired_keys_and_locks() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.run("CONFIG SET notify-keyspace-events ExL");
        let mut sub = ts.client();
        sub.run("PSUBSCRIBE *");
        c.run("SET k v PX 10");
        c.run("LOCK lk owner 10");
        c.run("LOCK held owner 10000");
        c.run("UNLOCK held owner");
        ts.clock.advance_ms(20);
        c.run("GET k");
        ts.srv.active_expire_cycle(crate::clock::Clock::now_ms(&*ts.clock), 100);
        let got = sub.pushes();
        let want = [
            "[\"pmessage\", \"*\", \"__keyevent@0__:lock_acquired\", \"lk\"]",
            "[\"pmessage\", \"*\", \"__keyevent@0__:lock_acquired\", \"held\"]",
            "[\"pmessage\", \"*\", \"__keyevent@0__:lock_released\", \"held\"]",
            "[\"pmessage\", \"*\", \"__keyevent@0__:expired\", \"k\"]",
            "[\"pmessage\", \"*\", \"__keyevent@0__:expired\", \"lk\"]",
            "[\"pmessage\", \"*\", \"__keyevent@0__:lock_expired\", \"lk\"]",
        ];
        assert_eq!(got, want);
    }
}
