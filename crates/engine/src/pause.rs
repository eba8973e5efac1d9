//! CLIENT PAUSE: clients' commands, and the dataset, held still for a while.
//!
//! Redis 7.0's rule (`processCommand`): while a pause lasts, a command waits when the pause is `ALL`,
//! or when it is `WRITE` and the command may write or replicate: flagged `write` or
//! `may_replicate` (EVAL/EVALSHA/FCALL by their script's flags, see
//! [`crate::lua::Scripting::may_replicate`]), or an EXEC whose queue holds such a command. The check
//! comes after every other one (unknown command, arity, authentication, OOM, BUSY...), whose errors
//! are answered at once, and before MULTI queues the command. A waiting client is blocked as Redis
//! blocks it (`BLOCKED_POSTPONE`: INFO's `blocked_clients`, the `b` flag); when the pause ends
//! (CLIENT UNPAUSE, or its deadline, seen by the cron or by the next command), the waiting commands
//! run again from the start, in arrival order, and may be paused anew. While the pause lasts no key
//! is deleted because its TTL passed and nothing is evicted: reads see an expired key as gone, and it
//! is deleted once the pause is over ([`crate::keyspace::Keyspace::hold_expiry`]).
//!
//! A waiting command is a [`Waiter`] on no key. The end of the pause wakes it with
//! [`WaitState::Retry`], and the connection layer runs the command again, as it does for a blocked
//! command whose serve step needed other locks. Released clients are woken one at a time, the next
//! once the previous one has run its command (or gone): their arrival order holds whatever threads
//! their connections run on.
//!
//! Latch has one pause purpose (Redis also pauses for failover, which Latch does not do): a later
//! pause keeps the stronger kind and the later deadline of the two.

use crate::command::Runner;
use crate::keyspace::Keyspace;
use crate::waiters::{WaitState, Waiter};
use parking_lot::Mutex;
use resp::Frame;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// How long a released client may take to run its command again before the next one is woken
/// regardless (see [`Pause::cron`]).
pub const TURN_GRACE_MS: u64 = 100;

/// What a pause holds back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseKind {
    /// Commands that may write or replicate (`CLIENT PAUSE ... WRITE`).
    Write = 1,
    /// Every command (`CLIENT PAUSE ... ALL`, the default).
    All = 2,
}

/// The pause state of a server, and the clients it holds back (waiting to run commands of `R`).
pub struct Pause<R: Runner> {
    /// 0 when no pause lasts, else a [`PauseKind`]: the one load every command pays.
    kind: AtomicU8,
    /// The last millisecond of the pause (monotonic timeline), while `kind` is not 0.
    end: AtomicU64,
    /// The client woken to run its command again (0: none); the next one is woken once it has.
    in_flight: AtomicU64,
    /// When `in_flight` was woken (monotonic ms).
    released_ms: AtomicU64,
    /// Changes of the state above happen under this lock, as do the queue's.
    queue: Mutex<VecDeque<Arc<Waiter<R>>>>,
}

impl<R: Runner> Default for Pause<R> {
    fn default() -> Self {
        Pause {
            kind: AtomicU8::new(0),
            end: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            released_ms: AtomicU64::new(0),
            queue: Mutex::new(VecDeque::new()),
        }
    }
}

impl<R: Runner> Pause<R> {
    /// True when a pause was declared, whether or not its deadline passed: one load, false for
    /// nearly every command.
    #[inline]
    pub fn declared(&self) -> bool {
        self.kind.load(Ordering::Relaxed) != 0
    }

    /// The pause in force at `now`, if any, ignoring whether its deadline passed.
    fn kind(&self) -> Option<PauseKind> {
        match self.kind.load(Ordering::Relaxed) {
            0 => None,
            1 => Some(PauseKind::Write),
            _ => Some(PauseKind::All),
        }
    }
}

/// Parses CLIENT PAUSE's timeout (milliseconds) into the pause's last millisecond, as Redis's
/// `getTimeoutFromObjectOrReply`: 0 is a pause that is already over, and a deadline past the end of
/// the signed 64-bit timeline wraps in Redis, which also makes a pause that is over.
pub fn parse_pause_timeout(arg: &[u8], now: u64) -> Result<u64, Frame> {
    let ms = crate::args::parse_i64_strict(arg)
        .ok_or_else(|| Frame::error("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(Frame::error("ERR timeout is negative"));
    }
    if ms == 0 {
        return Ok(0);
    }
    Ok(i64::try_from(now).ok().and_then(|n| n.checked_add(ms)).map_or(0, |end| end as u64))
}

impl<R: Runner> Pause<R> {
    /// CLIENT PAUSE: pauses clients of `kind` until `end` (monotonic ms, the pause's last
    /// millisecond). A pause already in force keeps the stronger kind and the later end. Keys of
    /// `ks` stop expiring until then.
    pub fn pause(&self, ks: &Keyspace, kind: PauseKind, end: u64, now: u64) {
        let _q = self.queue.lock();
        let (kind, end) = match self.kind() {
            Some(old) => (old.max(kind), self.end.load(Ordering::Relaxed).max(end)),
            None => (kind, end),
        };
        if end < now {
            // Over before it began (a timeout of 0): nothing changes.
            return;
        }
        self.end.store(end, Ordering::Relaxed);
        self.kind.store(kind as u8, Ordering::Relaxed);
        ks.hold_expiry(end);
    }

    /// CLIENT UNPAUSE, or the pause's deadline passed (at `now`): the waiting clients run their
    /// commands again, in arrival order.
    pub fn unpause(&self, ks: &Keyspace, now: u64) {
        let mut q = self.queue.lock();
        if self.kind.swap(0, Ordering::Relaxed) == 0 {
            return;
        }
        self.end.store(0, Ordering::Relaxed);
        ks.hold_expiry(0);
        if self.in_flight.load(Ordering::Relaxed) == 0 {
            self.release_next(&mut q, now);
        }
    }

    /// The pause in force at `now`; one whose deadline passed ends here (Redis's
    /// `checkClientPauseTimeoutAndReturnIfPaused`).
    pub fn paused(&self, ks: &Keyspace, now: u64) -> Option<PauseKind> {
        let kind = self.kind()?;
        if self.end.load(Ordering::Relaxed) < now {
            self.unpause(ks, now);
            return None;
        }
        Some(kind)
    }

    /// True while a pause is in force (Redis stops evicting then): one load when none is; `now` is
    /// read only when one is.
    pub fn in_force(&self, ks: &Keyspace, now: impl FnOnce() -> u64) -> bool {
        self.kind().is_some() && self.paused(ks, now()).is_some()
    }

    /// The cron's part: ends a pause whose deadline passed, so that its clients run even when no
    /// command comes; and wakes the next released client when the one whose turn it is has not run
    /// its command within [`TURN_GRACE_MS`] (its connection is stuck writing earlier replies to a
    /// client that does not read): one stuck client does not hold up the others, as in Redis,
    /// which runs their commands whatever their output.
    pub fn cron(&self, ks: &Keyspace, now: u64) {
        if self.paused(ks, now).is_some() || self.in_flight.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut q = self.queue.lock();
        if self.kind().is_none()
            && self.in_flight.load(Ordering::Relaxed) != 0
            && now.saturating_sub(self.released_ms.load(Ordering::Relaxed)) > TURN_GRACE_MS
        {
            self.in_flight.store(0, Ordering::Relaxed);
            self.release_next(&mut q, now);
        }
    }

    /// Called once a command passed every other check: if the pause in force at `now` holds it back
    /// (`holds`, asked with the pause's kind), the waiter `wait` makes for it is queued and returned
    /// (the command runs again when the pause ends).
    pub fn postpone(
        &self,
        ks: &Keyspace,
        now: u64,
        client_id: u64,
        holds: impl FnOnce(PauseKind) -> bool,
        wait: impl FnOnce() -> Arc<Waiter<R>>,
    ) -> Option<Arc<Waiter<R>>> {
        self.paused(ks, now)?;
        // Queued under the lock that ends a pause, so that none ends between the check and the queue.
        let mut q = self.queue.lock();
        let kind = self.kind()?;
        if !holds(kind) {
            return None;
        }
        let w = wait();
        if self.in_flight.load(Ordering::Relaxed) == client_id {
            // Released, and paused again before its turn ended: it keeps its place at the front.
            q.push_front(w.clone());
        } else {
            q.push_back(w.clone());
        }
        Some(w)
    }

    /// After client `client_id` ran a command (or went away): if it was the released client whose
    /// turn it was, the next waiting client is woken.
    pub fn turn_done(&self, client_id: u64, now: impl FnOnce() -> u64) {
        if self.in_flight.load(Ordering::Relaxed) != client_id {
            return;
        }
        let mut q = self.queue.lock();
        if self.in_flight.load(Ordering::Relaxed) != client_id {
            return;
        }
        self.in_flight.store(0, Ordering::Relaxed);
        if self.kind().is_none() {
            self.release_next(&mut q, now());
        }
    }

    /// Wakes the first client of the queue still waiting to run its command again.
    fn release_next(&self, q: &mut VecDeque<Arc<Waiter<R>>>, now: u64) {
        while let Some(w) = q.pop_front() {
            if w.claim() {
                self.in_flight.store(w.info.id, Ordering::Relaxed);
                self.released_ms.store(now, Ordering::Relaxed);
                w.finish(WaitState::Retry);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::{TestClient, TestServer};

    /// A field of INFO, as a number.
    fn info_field(c: &mut TestClient, name: &str) -> u64 {
        let info = c.run("INFO");
        let at = info.find(&format!("{name}:")).unwrap_or_else(|| panic!("no {name} in INFO"));
        let digits: String = info[at + name.len() + 1..].chars().take_while(char::is_ascii_digit).collect();
        digits.parse().expect("a number")
    }

    fn advance(ts: &TestServer, ms: u64) {
        ts.clock.advance_ms(ms);
        ts.srv.pause_cron(crate::clock::Clock::now_ms(&*ts.clock));
    }

    /// CLIENT PAUSE WRITE and read-only scripts go by `may_replicate`, which COMMAND INFO does not
    /// show (so the metadata comparison cannot check it): the commands Redis 7.0.15 flags so
    /// (src/commands.c) have it here, and no other.
    #[test]
    fn may_replicate_flags_are_redis_s() {
        const REDIS: &[&str] = &["eval", "evalsha", "fcall", "publish", "spublish", "pfcount"];
        let ts = TestServer::new();
        for c in ts.srv.table.all() {
            for cmd in std::iter::once(*c).chain(c.subcommands.iter()) {
                let has = cmd.flags.has(crate::command::Flags::MAY_REPLICATE);
                assert_eq!(has, REDIS.contains(&cmd.name), "{} may_replicate", cmd.name);
            }
        }
    }

    #[test]
    fn pause_arguments() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > CLIENT PAUSE
            -ERR wrong number of arguments for 'client|pause' command
            > CLIENT PAUSE x
            -ERR timeout is not an integer or out of range
            > CLIENT PAUSE 1.5
            -ERR timeout is not an integer or out of range
            > CLIENT PAUSE 99999999999999999999
            -ERR timeout is not an integer or out of range
            > CLIENT PAUSE -1
            -ERR timeout is negative
            > CLIENT PAUSE 10 foo
            -ERR CLIENT PAUSE mode must be WRITE or ALL
            > CLIENT PAUSE x foo
            -ERR CLIENT PAUSE mode must be WRITE or ALL
            > CLIENT pause 10 write extra
            -ERR unknown subcommand or wrong number of arguments for 'pause'. Try CLIENT HELP.
            > CLIENT UNPAUSE x
            -ERR wrong number of arguments for 'client|unpause' command
            > CLIENT UNPAUSE
            +OK
            > CLIENT PAUSE 0
            +OK
            > SET k v
            +OK
            > CLIENT PAUSE 9223372036854775807 WRITE
            +OK
            > SET k v
            +OK
            "#,
        );
        assert!(ts.srv.pause.paused(&ts.srv.ks, 0).is_none());
    }

    #[test]
    fn write_pause_holds_writers_and_serves_readers() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        let mut writer = ts.client();
        let mut reader = ts.client();
        admin.transcript("> SET foo bar\n+OK\n> CLIENT PAUSE 100000 WRITE\n+OK");
        assert_eq!(writer.cmd(&["SET", "foo", "baz"]), None);
        assert!(writer.client.blocked.is_some());
        assert_eq!(writer.blocked_reply(), None);
        reader.transcript(
            r#"
            > GET foo
            "bar"
            > PING
            +PONG
            > EXISTS foo
            :1
            "#,
        );
        // Counted and shown as Redis shows a postponed client.
        assert_eq!(info_field(&mut reader, "blocked_clients"), 1);
        let list = reader.run("CLIENT LIST");
        let line = list.split("\\n").find(|l| l.contains(&format!("id={} ", writer.client.id))).expect("listed");
        assert!(line.contains(" flags=b ") && line.contains(" cmd=set "), "{line}");
        // CLIENT UNBLOCK does not release it (Redis 7.0.15 crashes on this).
        reader.transcript(&format!("> CLIENT UNBLOCK {}\n:0", writer.client.id));
        // Errors found before the pause check are answered at once.
        reader.transcript("> SET foo\n-ERR wrong number of arguments for 'set' command");
        admin.transcript("> CLIENT UNPAUSE\n+OK");
        assert_eq!(writer.blocked_reply().as_deref(), Some("+OK"));
        assert!(writer.client.blocked.is_none());
        assert_eq!(info_field(&mut reader, "blocked_clients"), 0);
        reader.transcript("> GET foo\n\"baz\"");
        assert!(!reader.run("CLIENT LIST").contains("flags=b"));
    }

    #[test]
    fn all_pause_holds_every_command_until_its_deadline() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        let mut other = ts.client();
        admin.transcript("> CLIENT PAUSE 100 ALL\n+OK");
        // Even reads and CLIENT UNPAUSE wait; arity errors do not.
        assert_eq!(other.cmd(&["GET", "foo"]), None);
        assert_eq!(admin.cmd(&["CLIENT", "UNPAUSE"]), None);
        let mut third = ts.client();
        third.transcript("> GET\n-ERR wrong number of arguments for 'get' command");
        // The deadline is the pause's last millisecond.
        advance(&ts, 100);
        assert_eq!(other.blocked_reply(), None);
        assert_eq!(admin.blocked_reply(), None);
        advance(&ts, 1);
        assert_eq!(other.blocked_reply().as_deref(), Some("(nil)"));
        assert_eq!(admin.blocked_reply().as_deref(), Some("+OK"));
        third.transcript("> PING\n+PONG");
    }

    #[test]
    fn a_pause_that_ended_is_seen_by_the_next_command_without_the_cron() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        admin.transcript("> CLIENT PAUSE 50 WRITE\n+OK");
        ts.clock.advance_ms(51);
        admin.transcript("> SET k v\n+OK");
    }

    #[test]
    fn a_later_pause_extends_and_strengthens_never_weakens() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        let mut c = ts.client();
        // A timeout of 0 changes nothing (CLIENT itself is not held back by a WRITE pause).
        admin.transcript("> CLIENT PAUSE 100 WRITE\n+OK\n> CLIENT PAUSE 0 WRITE\n+OK\n> CLIENT PAUSE 50 ALL\n+OK");
        // ALL now, until the later deadline (100 ms).
        assert_eq!(c.cmd(&["GET", "k"]), None);
        advance(&ts, 60);
        assert_eq!(c.blocked_reply(), None);
        advance(&ts, 41);
        assert_eq!(c.blocked_reply().as_deref(), Some("(nil)"));
        // A longer one pushes the end out.
        admin.transcript("> CLIENT PAUSE 10 WRITE\n+OK\n> CLIENT PAUSE 1000 WRITE\n+OK");
        assert_eq!(c.cmd(&["SET", "k", "v"]), None);
        advance(&ts, 500);
        assert_eq!(c.blocked_reply(), None);
        advance(&ts, 501);
        assert_eq!(c.blocked_reply().as_deref(), Some("+OK"));
    }

    #[test]
    fn released_clients_run_in_arrival_order_one_at_a_time() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        admin.transcript("> CLIENT PAUSE 100000 WRITE\n+OK");
        let mut clients: Vec<TestClient> = (0..4).map(|_| ts.client()).collect();
        for (i, c) in clients.iter_mut().enumerate() {
            assert_eq!(c.cmd(&["RPUSH", "l", &i.to_string()]), None);
        }
        // The third goes away while waiting: it is skipped.
        drop(clients.remove(2));
        admin.transcript("> CLIENT UNPAUSE\n+OK");
        // Only the first is woken; the others wait for their turn, whatever order their
        // connections look in.
        assert_eq!(clients[2].blocked_reply(), None);
        assert_eq!(clients[1].blocked_reply(), None);
        assert_eq!(clients[0].blocked_reply().as_deref(), Some(":1"));
        assert_eq!(clients[2].blocked_reply(), None);
        assert_eq!(clients[1].blocked_reply().as_deref(), Some(":2"));
        assert_eq!(clients[2].blocked_reply().as_deref(), Some(":3"));
        admin.transcript("> LRANGE l 0 -1\n[\"0\", \"1\", \"3\"]");
    }

    #[test]
    fn a_released_client_that_goes_away_passes_its_turn() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        admin.transcript("> CLIENT PAUSE 100000 WRITE\n+OK");
        let mut a = ts.client();
        let mut b = ts.client();
        assert_eq!(a.cmd(&["SET", "k", "a"]), None);
        assert_eq!(b.cmd(&["SET", "k", "b"]), None);
        admin.transcript("> CLIENT UNPAUSE\n+OK");
        // `a` was woken, and its connection closes before it runs the command again.
        let w = a.client.blocked.clone().expect("blocked");
        assert!(matches!(w.take(), crate::waiters::WaitState::Retry));
        ts.srv.unblocked(&mut a.client);
        drop(a);
        assert_eq!(b.blocked_reply().as_deref(), Some("+OK"));
        admin.transcript("> GET k\n\"b\"");
    }

    #[test]
    fn a_released_client_that_does_not_run_holds_the_others_up_only_briefly() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        admin.transcript("> CLIENT PAUSE 100000 WRITE\n+OK");
        let mut stuck = ts.client();
        let mut b = ts.client();
        assert_eq!(stuck.cmd(&["SET", "k", "stuck"]), None);
        assert_eq!(b.cmd(&["SET", "k", "b"]), None);
        admin.transcript("> CLIENT UNPAUSE\n+OK");
        // `stuck` is woken but its connection does not get to run the command.
        advance(&ts, super::TURN_GRACE_MS);
        assert_eq!(b.blocked_reply(), None);
        advance(&ts, 1);
        assert_eq!(b.blocked_reply().as_deref(), Some("+OK"));
        // It still runs its command when it gets to it.
        assert_eq!(stuck.blocked_reply().as_deref(), Some("+OK"));
        admin.transcript("> GET k\n\"stuck\"");
    }

    #[test]
    fn a_released_client_paused_again_keeps_its_place() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        admin.transcript("> CLIENT PAUSE 100000 WRITE\n+OK");
        let mut a = ts.client();
        let mut b = ts.client();
        assert_eq!(a.cmd(&["RPUSH", "l", "a"]), None);
        assert_eq!(b.cmd(&["RPUSH", "l", "b"]), None);
        admin.transcript("> CLIENT UNPAUSE\n+OK\n> CLIENT PAUSE 100000 WRITE\n+OK");
        // `a` runs again and is paused again; `b` is not woken meanwhile.
        assert_eq!(a.blocked_reply(), None);
        assert!(a.client.blocked.is_some());
        assert_eq!(b.blocked_reply(), None);
        admin.transcript("> CLIENT UNPAUSE\n+OK");
        assert_eq!(b.blocked_reply(), None);
        assert_eq!(a.blocked_reply().as_deref(), Some(":1"));
        assert_eq!(b.blocked_reply().as_deref(), Some(":2"));
    }

    #[test]
    fn transactions_under_a_write_pause() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        let mut c = ts.client();
        let mut reads = ts.client();
        c.transcript("> MULTI\n+OK\n> SET foo bar\n+QUEUED");
        admin.transcript("> SET foo old\n+OK\n> CLIENT PAUSE 100000 WRITE\n+OK");
        // A transaction of reads and admin commands runs.
        reads.transcript(
            r#"
            > MULTI
            +OK
            > PING
            +QUEUED
            > GET foo
            +QUEUED
            > EXEC
            [+PONG, "old"]
            "#,
        );
        // EXEC of a queued write waits, and so does queueing a write.
        assert_eq!(c.cmd(&["EXEC"]), None);
        reads.transcript("> MULTI\n+OK");
        assert_eq!(reads.cmd(&["INCR", "n"]), None);
        assert_eq!(info_field(&mut admin, "blocked_clients"), 2);
        admin.transcript("> CLIENT UNPAUSE\n+OK");
        assert_eq!(c.blocked_reply().as_deref(), Some("[+OK]"));
        assert_eq!(reads.blocked_reply().as_deref(), Some("+QUEUED"));
        reads.transcript("> EXEC\n[:1]");
    }

    #[test]
    fn a_pause_inside_a_transaction_starts_at_its_end() {
        let ts = TestServer::new();
        let mut c = ts.client();
        let mut other = ts.client();
        c.transcript(
            r#"
            > MULTI
            +OK
            > SET a 1
            +QUEUED
            > CLIENT PAUSE 100000 WRITE
            +QUEUED
            > SET b 2
            +QUEUED
            > EXEC
            [+OK, +OK, +OK]
            > GET b
            "2"
            "#,
        );
        assert_eq!(other.cmd(&["SET", "c", "3"]), None);
        c.transcript("> CLIENT UNPAUSE\n+OK");
        assert_eq!(other.blocked_reply().as_deref(), Some("+OK"));
    }

    #[test]
    fn scripts_by_their_flags() {
        let ts = TestServer::new();
        let mut admin = ts.client();
        let mut c = ts.client();
        admin.transcript(
            r##"
            > SET x y
            +OK
            > FUNCTION LOAD "#!lua name=lib\nredis.register_function{function_name='ro', callback=function() return 'hello' end, flags={'no-writes'}}\nredis.register_function('rw', function() return 'rw' end)"
            "lib"
            > SCRIPT LOAD "#!lua flags=no-writes\nreturn 2"
            "ae33f9227913b24d053a555637f98260b23bd3a3"
            > CLIENT PAUSE 100000 WRITE
            +OK
            "##,
        );
        c.transcript(
            r##"
            > EVAL "#!lua flags=no-writes\nreturn 'ro'" 0
            "ro"
            > EVAL_RO "return redis.call('get', KEYS[1])" 1 x
            "y"
            > EVALSHA ae33f9227913b24d053a555637f98260b23bd3a3 0
            :2
            > FCALL ro 0
            "hello"
            > FCALL_RO ro 0
            "hello"
            "##,
        );
        // May write or replicate: no shebang (EVAL is may_replicate), a shebang without no-writes, a
        // function without it, a script not found, PUBLISH.
        for cmd in [
            &["PUBLISH", "ch", "m"][..],
            &["SPUBLISH", "ch", "m"],
            &["EVAL", "return 1", "0"],
            &["EVAL", "#!lua\nreturn 1", "0"],
            &["FCALL", "rw", "0"],
            &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
        ] {
            let mut w = ts.client();
            assert_eq!(w.cmd(cmd), None, "{cmd:?}");
        }
    }

    #[test]
    fn keys_do_not_expire_during_a_pause() {
        let ts = TestServer::new();
        let mut c = ts.client();
        c.transcript(
            r#"
            > MULTI
            +OK
            > SET foo bar PX 10
            +QUEUED
            > SET bar foo PX 10
            +QUEUED
            > CLIENT PAUSE 50000 WRITE
            +QUEUED
            > EXEC
            [+OK, +OK, +OK]
            "#,
        );
        let expired = info_field(&mut c, "expired_keys");
        ts.clock.advance_ms(20);
        let now = crate::clock::Clock::now_ms(&*ts.clock);
        assert_eq!(ts.srv.active_expire_cycle(now, 1000), 0);
        // Logically expired for readers, still stored.
        c.transcript(
            r#"
            > GET foo
            (nil)
            > EXISTS bar
            :0
            > DBSIZE
            :2
            > SCAN 0
            ["0", []]
            "#,
        );
        // RANDOMKEY gives up looking for a live key (Redis 7.2's fix; 7.0 loops for ever).
        assert!(["\"foo\"", "\"bar\""].contains(&c.run("RANDOMKEY").as_str()));
        assert_eq!(info_field(&mut c, "expired_keys"), expired);
        c.transcript("> CLIENT UNPAUSE\n+OK\n> GET foo\n(nil)\n> DBSIZE\n:1");
        assert_eq!(info_field(&mut c, "expired_keys"), expired + 1);
        assert_eq!(ts.srv.active_expire_cycle(now, 1000), 1);
        assert_eq!(info_field(&mut c, "expired_keys"), expired + 2);
    }
}
