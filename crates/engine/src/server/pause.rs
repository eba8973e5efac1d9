//! CLIENT PAUSE in the composition: the pause's state machine is `crate::pause`'s; what holds a
//! command back (its flags, a script's flags, an EXEC's queue) and what a held client becomes (a
//! blocked client) are decided here.

use super::Server;
use crate::client::Client;
use crate::command::Flags;
use crate::ctx::Command;
use crate::pause::PauseKind;
use crate::waiters::BlockRequest;
use bytes::Bytes;
use resp::Frame;
use std::sync::Arc;

impl Server {
    /// CLIENT PAUSE (see [`crate::pause::Pause::pause`]).
    pub fn pause_clients(&self, kind: PauseKind, end: u64, now: u64) {
        self.pause.pause(&self.ks, kind, end, now);
    }

    /// CLIENT UNPAUSE.
    pub fn unpause_clients(&self) {
        self.pause.unpause(&self.ks, self.clock.now_ms());
    }

    /// True while a pause is in force (Redis stops evicting then).
    pub fn pause_in_force(&self) -> bool {
        self.pause.in_force(&self.ks, || self.clock.now_ms())
    }

    /// The cron's part of a pause (see [`crate::pause::Pause::cron`]).
    pub fn pause_cron(&self, now: u64) {
        self.pause.cron(&self.ks, now);
    }

    /// Whether a pause of `kind` holds back `cmd` (Redis's `processCommand`: everything under ALL;
    /// under WRITE what may write or replicate, an EXEC by its queue).
    fn pause_holds(&self, kind: PauseKind, client: &Client, cmd: &Command, args: &[Bytes]) -> bool {
        let may_replicate = |c: &Command, a: &[Bytes]| {
            if self.scripting.is_script_call(c) {
                self.scripting.may_replicate(c, a)
            } else {
                c.flags.has(Flags::WRITE) || c.flags.has(Flags::MAY_REPLICATE)
            }
        };
        kind == PauseKind::All || client.multi.any_run(cmd, args, may_replicate)
    }

    /// Whether a pause holds back the primary's next command on this replica. Redis 7.0 pauses
    /// the master client like any other (only replicas' own connections are exempt): the
    /// replica goes on reading the stream, so `slave_read_repl_offset` grows while
    /// `slave_repl_offset` stands, and the link applies the command once the pause ends. One
    /// load when no pause is in force.
    pub fn pause_holds_primary(&self, client: &Client, args: &[Bytes]) -> bool {
        if !self.pause_in_force() {
            return false;
        }
        let Some(kind) = self.pause.paused(&self.ks, self.clock.now_ms()) else { return false };
        match self.table.resolve(args) {
            Ok(cmd) => self.pause_holds(kind, client, cmd, args),
            Err(_) => false,
        }
    }

    /// Called by `execute` once a command passed every other check: if a pause holds it back, the
    /// client waits, blocked (true; the command runs again when the pause ends). Without a pause,
    /// one load inline.
    #[inline]
    pub(crate) fn postpone_if_paused(
        &self,
        client: &mut Client,
        cmd: &'static Command,
        args: &[Bytes],
        now: u64,
    ) -> bool {
        self.pause.declared() && self.postpone_while_paused(client, cmd, args, now)
    }

    /// [`Server::postpone_if_paused`] once a pause was declared.
    #[inline(never)]
    fn postpone_while_paused(&self, client: &mut Client, cmd: &'static Command, args: &[Bytes], now: u64) -> bool {
        let held = self.pause.postpone(
            &self.ks,
            now,
            client.id,
            |kind| self.pause_holds(kind, client, cmd, args),
            || {
                let req =
                    BlockRequest { keys: Vec::new(), deadline: None, timeout_reply: Frame::Null, serve_args: None };
                Arc::new(client.waiter(cmd, args, req))
            },
        );
        let Some(w) = held else { return false };
        client.blocked = Some(w);
        self.mark_blocked(client, args);
        true
    }

    /// After `client` ran a command (or went away): the next released client may run.
    pub(crate) fn pause_turn_done(&self, client_id: u64) {
        self.pause.turn_done(client_id, || self.clock.now_ms());
    }
}
