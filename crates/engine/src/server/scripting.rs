//! Scripts in the composition: what a running script reaches of the server, the calling client
//! and its locked shards ([`ScriptHost`]): `redis.call`'s checks (NOSCRIPT, ACL, read-only
//! scripts, replicas, OOM, the shards a script may still take) and the command it runs through
//! dispatch. `crate::lua` owns the VMs and knows no server.

use super::Server;
use crate::client::Client;
use crate::command::Flags;
use crate::ctx::Command;
use crate::keyspace::Locked;
use crate::lua::{Outcome, ScriptCall, ScriptHost, ensure_shards};
use bytes::Bytes;
use resp::{Frame, Protocol};
use std::sync::atomic::Ordering;

/// The command running a script: the server, its client and locked shards, its time.
pub struct ScriptRun<'a, 'k> {
    /// The server.
    pub srv: &'a Server,
    /// The caller.
    pub client: &'a mut Client,
    /// The shards the command holds (the declared keys', or all).
    pub locked: &'a mut Locked<'k>,
    /// The command's time.
    pub now: u64,
    /// The EVAL/EVALSHA/FCALL (for the BUSY check while it waits for a VM).
    pub cmd: &'static Command,
    /// The client's state while the script runs, kept by [`ScriptHost::enter`].
    saved: Option<(usize, Protocol, bool, bool)>,
}

impl<'a, 'k> ScriptRun<'a, 'k> {
    /// The script host of `cmd`, run by `client` on `srv` holding `locked` at `now`.
    pub fn new(
        srv: &'a Server,
        client: &'a mut Client,
        locked: &'a mut Locked<'k>,
        now: u64,
        cmd: &'static Command,
    ) -> Self {
        ScriptRun { srv, client, locked, now, cmd, saved: None }
    }
}

impl ScriptRun<'_, '_> {
    /// `redis.call`'s checks, then the command (Redis's scriptCall).
    fn call_checked(&mut self, named: Option<u16>, argv: &[Bytes], s: &ScriptCall<'_>) -> Outcome {
        let refuse = |m: &[u8]| Outcome::Refused(m.to_vec(), false);
        if argv.is_empty() {
            return refuse(b"Please specify at least one argument for this redis lib call");
        }
        let srv = self.srv;
        let resolved = match named.and_then(|id| srv.commands.by_id(id)) {
            // The default table's command: right unless this server renamed commands.
            Some(cmd) if std::ptr::eq(srv.table, srv.commands) => Ok(cmd),
            _ => srv.table.resolve(argv),
        };
        let cmd = match resolved {
            Ok(cmd) if cmd.arity_ok(argv.len()) => cmd,
            Ok(_) => return refuse(b"Wrong number of args calling Redis command from script"),
            Err(_) => return refuse(b"Unknown Redis command called from script"),
        };
        if cmd.flags.has(Flags::NOSCRIPT) && !srv.debug.disable_deny_scripts.load(Ordering::Relaxed) {
            return refuse(b"This Redis command is not allowed from script");
        }
        if let Err(d) = srv.acl_check(self.client, cmd, argv, crate::acl::Context::Lua) {
            return Outcome::Refused(format!("The user executing the script {}", d.message()).into_bytes(), false);
        }
        // Redis's scriptVerifyAllowStale.
        if !cmd.flags.has(Flags::STALE) && !self.client.from_primary && srv.running_stale() {
            return refuse(b"Can not execute the command on a stale replica");
        }
        if s.read_only && (cmd.flags.has(Flags::WRITE) || cmd.flags.has(Flags::MAY_REPLICATE)) {
            return refuse(b"Write commands are not allowed from read-only scripts.");
        }
        // Redis's scriptVerifyWriteCommandAllow: a read-only replica refuses the script's writes
        // (not its primary's), and so does a primary short of good replicas; once the script wrote,
        // it is not failed half done.
        if cmd.flags.has(Flags::WRITE) && !s.run.wrote.load(Ordering::Relaxed) {
            if !self.client.from_primary && srv.read_only_replica() {
                return Outcome::Refused(super::replication::READONLY.as_bytes().to_vec(), true);
            }
            if srv.writes_need_replicas() {
                return Outcome::Refused(crate::error::NOREPLICAS.as_bytes().to_vec(), true);
            }
        }
        // Redis's scriptVerifyOOM: over the limit when the script started, its first write that
        // may grow memory is refused (a later one is not: the script cannot stop half done).
        if cmd.flags.has(Flags::DENYOOM)
            && self.client.oom
            && !s.allow_oom
            && !s.run.wrote.load(Ordering::Relaxed)
            && srv.config.maxmemory.load(Ordering::Relaxed) > 0
        {
            return Outcome::Refused(crate::error::OOM.as_bytes().to_vec(), true);
        }
        // A script whose effects every node computes for itself (consensus mode) may only call
        // commands that answer alike on every node holding the same data.
        if self.client.random.is_some() && NODE_DEPENDENT.contains(&cmd.name) {
            return refuse(NODE_DEPENDENT_REFUSED);
        }
        if s.run.restart.load(Ordering::Relaxed) {
            return refuse(RESTARTING);
        }
        if let Err(key) = ensure_shards(&srv.ks, s, self.locked, cmd, argv) {
            // Nothing written yet: the run is thrown away and starts again holding every shard.
            if !s.run.wrote.load(Ordering::Relaxed) {
                s.run.restart.store(true, Ordering::Relaxed);
                return refuse(RESTARTING);
            }
            let msg = format!(
                "the script accessed key '{}', which it did not declare, after writing, while another client held it; \
                 declare every key the script uses in KEYS",
                String::from_utf8_lossy(&key)
            );
            return Outcome::Refused(msg.into_bytes(), false);
        }
        if cmd.flags.has(Flags::WRITE) {
            s.run.wrote.store(true, Ordering::Relaxed);
        }
        let resp3 = s.run.resp.load(Ordering::Relaxed) == 3;
        self.client.proto = if resp3 { Protocol::Resp3 } else { Protocol::Resp2 };
        self.client.propagate_to = s.run.repl.load(Ordering::Relaxed);
        let mut reply = srv.call(self.client, self.locked, cmd, argv, self.now);
        self.client.propagate_to = crate::changes::Effect::ALL;
        if self.client.random.is_some() {
            sort_for_script(cmd.name, &mut reply);
        }
        Outcome::Reply(reply, resp3)
    }

    /// Counts what a command called from the script ends in, as Redis's scriptCall does: an error
    /// reply or a refusal in the error statistics, a refusal of a known command in its
    /// `rejected_calls` (its calls and failures are counted where it runs).
    fn count_outcome(&self, argv: &[Bytes], o: &Outcome) {
        let stats = &self.srv.stats;
        match o {
            Outcome::Reply(f, _) if f.is_error() => stats.count_error(f),
            Outcome::Refused(msg, from_reply) if msg.as_slice() != RESTARTING => {
                let text = if *from_reply { msg.clone() } else { [b"ERR ".as_slice(), msg].concat() };
                stats.count_error(&Frame::Error(Bytes::from(text)));
                if !argv.is_empty()
                    && let Ok(cmd) = self.srv.table.resolve(argv)
                    && cmd.arity_ok(argv.len())
                {
                    stats.count_rejected(cmd);
                }
            }
            _ => {}
        }
    }
}

/// Commands whose reply can differ between nodes holding the same data, refused to a script that runs
/// on every node (consensus mode: a client with a seeded generator): Redis 7.0's
/// `NONDETERMINISTIC_OUTPUT` commands, less those such a script gets alike everywhere (SPOP,
/// SRANDMEMBER, HRANDFIELD, ZRANDMEMBER draw from the seeded generator in a canonical order; TIME,
/// TTL, PTTL and the stream commands' times read the group's raft time), plus DBSIZE (a node's
/// count includes the expired keys it has not reclaimed yet) and MEMORY USAGE (allocation history).
/// The rest read a node's memory layout (RANDOMKEY, the SCANs), its encodings or access clocks
/// (OBJECT, DUMP) or its own state.
const NODE_DEPENDENT: &[&str] = &[
    "randomkey",
    "scan",
    "sscan",
    "hscan",
    "zscan",
    "dbsize",
    "dump",
    "object|encoding",
    "object|freq",
    "object|idletime",
    "object|refcount",
    "memory|usage",
    "memory|stats",
    "memory|doctor",
    "memory|malloc-stats",
    "info",
    "lastsave",
    "client|info",
    "client|list",
    "function|stats",
    "slowlog|get",
    "slowlog|len",
    "latency|doctor",
    "latency|graph",
    "latency|histogram",
    "latency|history",
    "latency|latest",
    "xinfo|consumers",
];

/// The refusal of a [`NODE_DEPENDENT`] command.
const NODE_DEPENDENT_REFUSED: &[u8] =
    b"This Redis command is not allowed from script in consensus mode: its reply may differ between nodes";

/// Sorts the reply of a command whose elements come in an order of the node's memory (Redis 7.0's
/// `NONDETERMINISTIC_OUTPUT_ORDER`: KEYS, SMEMBERS, SINTER, SUNION, SDIFF, HKEYS, HVALS, HGETALL), as
/// Redis before 5.0 sorted them for scripts it replicated verbatim: a script that runs on every node
/// then sees them alike. HGETALL's field-value pairs are sorted by field.
fn sort_for_script(name: &str, reply: &mut Frame) {
    let pairs = match name {
        "keys" | "smembers" | "sinter" | "sunion" | "sdiff" | "hkeys" | "hvals" => false,
        "hgetall" => true,
        _ => return,
    };
    if let Frame::Encoded(b) = reply
        && let Ok(Some(f)) = resp::decode_reply(&mut resp::BytesMut::from(&b[..]))
    {
        *reply = f;
    }
    let bytes = |f: &Frame| match f {
        Frame::Bulk(b) | Frame::Simple(b) => b.clone(),
        _ => Bytes::new(),
    };
    match reply {
        Frame::Array(items) | Frame::Set(items) if !pairs => items.sort_by_key(|f| bytes(f)),
        Frame::Array(items) if pairs && items.len() % 2 == 0 => {
            let mut kv: Vec<(Frame, Frame)> = Vec::with_capacity(items.len() / 2);
            let mut it = std::mem::take(items).into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                kv.push((k, v));
            }
            kv.sort_by_key(|(k, _)| bytes(k));
            *items = kv.into_iter().flat_map(|(k, v)| [k, v]).collect();
        }
        Frame::Map(kv) if pairs => kv.sort_by_key(|(k, _)| bytes(k)),
        _ => {}
    }
}

/// The refusal that restarts a run holding every shard: internal, not an error of the script's.
const RESTARTING: &[u8] = b"ERR script restarting with every shard";

impl ScriptHost for ScriptRun<'_, '_> {
    fn call(&mut self, named: Option<u16>, argv: &[Bytes], s: &ScriptCall<'_>) -> Outcome {
        let o = self.call_checked(named, argv, s);
        self.count_outcome(argv, &o);
        o
    }

    fn error_counted(&mut self) {
        self.client.error_counted = true;
    }

    fn acl_allows(&self, argv: &[Bytes]) -> Result<bool, &'static str> {
        // Resolved in the table as defined: a top-level command, or a container's subcommand when
        // one is named.
        let found = self.srv.commands.get(&argv[0]).and_then(|cmd| {
            if cmd.subcommands.is_empty() || argv.len() == 1 {
                return Some(cmd);
            }
            cmd.subcommands.iter().find(|s| {
                s.name.rsplit('|').next().is_some_and(|n| n.eq_ignore_ascii_case(&String::from_utf8_lossy(&argv[1])))
            })
        });
        let Some(cmd) = found else { return Err("Invalid command passed to redis.acl_check_cmd()") };
        Ok(match &self.client.user {
            Some(u) if !u.unrestricted() => self.srv.acl.check(u, cmd, argv).is_ok(),
            _ => true,
        })
    }

    fn long_op(&self) {
        self.srv.long_op();
    }

    fn busy_error(&self) -> Option<Frame> {
        self.srv.busy_error(self.cmd)
    }

    fn now_ms(&self) -> u64 {
        self.srv.clock.now_ms()
    }

    fn started_ms(&self) -> u64 {
        self.now
    }

    fn busy_reply_threshold(&self) -> i64 {
        self.srv.config.busy_reply_threshold.load(Ordering::Relaxed)
    }

    fn writes_need_replicas(&self) -> bool {
        self.srv.writes_need_replicas()
    }

    fn oom(&self) -> bool {
        self.client.oom
    }

    fn running_stale(&self) -> bool {
        !self.client.from_primary && self.srv.running_stale()
    }

    fn enter(&mut self) {
        let c = &mut *self.client;
        // Blocking commands called from a script answer at once, as if timed out (Redis).
        let deny = std::mem::replace(&mut c.deny_blocking, true);
        // A seeded client's run draws from its seed each time (a run thrown away and started again
        // draws the same).
        if let Some(r) = &mut c.random {
            r.restart();
        }
        let in_script = std::mem::replace(&mut c.in_script, true);
        self.saved = Some((c.db, c.proto, deny, in_script));
    }

    fn leave(&mut self) {
        if let Some((db, proto, deny, in_script)) = self.saved.take() {
            let c = &mut *self.client;
            c.db = db;
            c.proto = proto;
            c.deny_blocking = deny;
            c.in_script = in_script;
        }
    }

    fn relock_all(&mut self) {
        self.locked.relock_all();
    }

    fn random_seed(&self) -> Option<u64> {
        self.client.random.as_ref().map(|r| r.seed())
    }
}
