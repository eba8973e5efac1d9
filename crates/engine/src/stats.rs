//! Server statistics (`INFO stats`, `INFO commandstats`, `INFO errorstats`).
//!
//! Every command, on every thread, bumps the total command count and its own command's counters;
//! `INFO` reads them rarely. Counters that all threads write would bounce their cache lines between
//! the cores on every command, so those are split in stripes: each thread writes the stripe picked by
//! a per-thread number (handed out in turn when a thread first counts something), and readers sum the
//! stripes. Threads that end up on the same stripe stay correct (the adds are atomic), they only share
//! the lines again. Error statistics are written on errors only and stay plain.

use crate::command::{Command, Runner};
use parking_lot::Mutex;
use resp::Frame;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// One command's counters (`INFO commandstats`), summed over the stripes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CmdStats {
    /// Calls that ran the handler.
    pub calls: u64,
    /// Total microseconds in the handler.
    pub usec: u64,
    /// Calls refused before running (arity, auth...).
    pub rejected: u64,
    /// Calls whose handler replied with an error.
    pub failed: u64,
}

/// One command's counters in one stripe: 64 bytes, a cache line. The latency histogram is
/// allocated the first time the command runs on the stripe with `latency-tracking` on.
#[derive(Default)]
#[repr(align(64))]
struct CmdCounters {
    calls: AtomicU64,
    usec: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
    latency: std::sync::OnceLock<crate::latency::Histogram>,
}

/// Unused [`CmdCounters`] before and after a stripe's commands: 128 bytes, so that no cache line (nor
/// the pair of lines the adjacent-line prefetcher fetches together) holds counters of two stripes.
const PAD: usize = 4;

/// The counters one thread writes. Aligned so that stripes never share a cache line pair.
#[repr(align(128))]
struct Stripe {
    commands: AtomicU64,
    /// Changes to the data (`Server::changes_since_save` reads the sum); beside `commands`, whose
    /// cache line every command touches anyway. Not reset by CONFIG RESETSTAT, as in Redis.
    dirty: AtomicU64,
    net_input_bytes: AtomicU64,
    net_output_bytes: AtomicU64,
    /// Indexed by [`Command::id`] + [`PAD`].
    cmd: Box<[CmdCounters]>,
}

impl Stripe {
    fn new(ncmds: usize) -> Stripe {
        Stripe {
            commands: AtomicU64::new(0),
            dirty: AtomicU64::new(0),
            net_input_bytes: AtomicU64::new(0),
            net_output_bytes: AtomicU64::new(0),
            cmd: (0..ncmds + 2 * PAD).map(|_| CmdCounters::default()).collect(),
        }
    }

    /// `cmd`'s counters (None for [`Command::NO_ID`], which is past the end of any table).
    fn cmd<R: Runner>(&self, cmd: &Command<R>) -> Option<&CmdCounters> {
        self.cmd[PAD..self.cmd.len() - PAD].get(usize::from(cmd.id))
    }
}

/// This thread's number, for picking a stripe.
fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    // While the thread's locals are being destroyed: stripe 0 is as good as any.
    NUMBER
        .try_with(|n| {
            if n.get() == usize::MAX {
                n.set(NEXT.fetch_add(1, Ordering::Relaxed) & (usize::MAX >> 1));
            }
            n.get()
        })
        .unwrap_or(0)
}

/// Stripes for this machine: twice the cores, so that the runtime's workers, plus the odd blocking or
/// cron thread, rarely share one.
fn default_stripes() -> usize {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    (cores * 2).clamp(1, 64)
}

/// Values freed off the command path (UNLINK, `lazyfree-lazy-user-del`): INFO's
/// `lazyfree_pending_objects` and `lazyfreed_objects`.
#[derive(Debug, Default)]
pub struct LazyFree {
    /// Handed to a background thread, not freed yet.
    pub pending: AtomicU64,
    /// Freed in the background since the last CONFIG RESETSTAT.
    pub freed: AtomicU64,
}

/// Server statistics.
pub struct Stats {
    stripes: Box<[Stripe]>,
    /// `stripes.len() - 1` (a power of two).
    mask: usize,
    /// Error replies sent.
    pub error_replies: AtomicU64,
    /// Error replies by prefix (`ERR`, `WRONGTYPE`...).
    pub errors: Mutex<BTreeMap<String, u64>>,
}

impl Default for Stats {
    /// Statistics for no command (they count totals only).
    fn default() -> Stats {
        Stats::new(0)
    }
}

impl Stats {
    /// Statistics for the `ncmds` commands of a command table
    /// ([`crate::ctx::CommandTable::id_count`]), striped for the machine's cores.
    pub fn new(ncmds: usize) -> Stats {
        Stats::with_stripes(ncmds, default_stripes())
    }

    /// [`Stats::new`] with `stripes` stripes (rounded up to a power of two).
    pub fn with_stripes(ncmds: usize, stripes: usize) -> Stats {
        let n = stripes.clamp(1, 1024).next_power_of_two();
        Stats {
            stripes: (0..n).map(|_| Stripe::new(ncmds)).collect(),
            mask: n - 1,
            error_replies: AtomicU64::new(0),
            errors: Mutex::new(BTreeMap::new()),
        }
    }

    fn stripe(&self) -> &Stripe {
        &self.stripes[thread_number() & self.mask]
    }

    /// Counts a call of `cmd` that ran its handler for `usec` microseconds (`failed` if it replied
    /// with an error), and a command processed (`total_commands_processed`).
    pub fn count_call<R: Runner>(&self, cmd: &Command<R>, usec: u64, failed: bool, dirty: u64) {
        let s = self.stripe();
        s.commands.fetch_add(1, Ordering::Relaxed);
        if dirty > 0 {
            s.dirty.fetch_add(dirty, Ordering::Relaxed);
        }
        if let Some(c) = s.cmd(cmd) {
            c.calls.fetch_add(1, Ordering::Relaxed);
            c.usec.fetch_add(usec, Ordering::Relaxed);
            if failed {
                c.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Counts a failed reply of a call of `cmd` already counted (a blocked command answered later
    /// with an error: Redis's `updateStatsOnUnblock`).
    pub fn count_failed<R: Runner>(&self, cmd: &Command<R>) {
        if let Some(c) = self.stripe().cmd(cmd) {
            c.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts `n` changes to the data made outside a command's call (eviction, a served waiter).
    pub fn add_dirty(&self, n: u64) {
        self.stripe().dirty.fetch_add(n, Ordering::Relaxed);
    }

    /// Changes to the data since the server started (Redis's `server.dirty`, never reset here).
    pub fn dirty(&self) -> u64 {
        self.stripes.iter().fold(0u64, |acc, s| acc.wrapping_add(s.dirty.load(Ordering::Relaxed)))
    }

    /// Adds a call of `cmd` that took `usec` to its latency histogram (`latency-tracking`).
    pub fn record_latency<R: Runner>(&self, cmd: &Command<R>, usec: u64) {
        if let Some(c) = self.stripe().cmd(cmd) {
            c.latency.get_or_init(Default::default).record(usec);
        }
    }

    /// `cmd`'s latency histogram summed over the stripes (bucket counts, see [`crate::latency`]),
    /// or None when no call was recorded.
    pub fn latency<R: Runner>(&self, cmd: &Command<R>) -> Option<Vec<u64>> {
        let mut counts = vec![0u64; crate::latency::BUCKETS];
        for h in self.stripes.iter().filter_map(|s| s.cmd(cmd).and_then(|c| c.latency.get())) {
            h.add_into(&mut counts);
        }
        counts.iter().any(|&c| c > 0).then_some(counts)
    }

    /// Counts a call of `cmd` refused before its handler ran.
    pub fn count_rejected<R: Runner>(&self, cmd: &Command<R>) {
        if let Some(c) = self.stripe().cmd(cmd) {
            c.rejected.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts bytes read from a client.
    pub fn add_net_input(&self, n: u64) {
        self.stripe().net_input_bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts bytes written to a client.
    pub fn add_net_output(&self, n: u64) {
        self.stripe().net_output_bytes.fetch_add(n, Ordering::Relaxed);
    }

    fn sum(&self, f: impl Fn(&Stripe) -> &AtomicU64) -> u64 {
        self.stripes.iter().fold(0u64, |acc, s| acc.wrapping_add(f(s).load(Ordering::Relaxed)))
    }

    /// Commands that ran (`total_commands_processed`): calls counted by [`Stats::count_call`].
    pub fn commands(&self) -> u64 {
        self.sum(|s| &s.commands)
    }

    /// Bytes read from clients (`total_net_input_bytes`).
    pub fn net_input_bytes(&self) -> u64 {
        self.sum(|s| &s.net_input_bytes)
    }

    /// Bytes written to clients (`total_net_output_bytes`).
    pub fn net_output_bytes(&self) -> u64 {
        self.sum(|s| &s.net_output_bytes)
    }

    /// The counters of `cmd` (None for a command no table numbered, or numbered by a larger table).
    pub fn cmd<R: Runner>(&self, cmd: &Command<R>) -> Option<CmdStats> {
        let mut t = CmdStats::default();
        for s in self.stripes.iter() {
            let c = s.cmd(cmd)?;
            t.calls = t.calls.wrapping_add(c.calls.load(Ordering::Relaxed));
            t.usec = t.usec.wrapping_add(c.usec.load(Ordering::Relaxed));
            t.rejected = t.rejected.wrapping_add(c.rejected.load(Ordering::Relaxed));
            t.failed = t.failed.wrapping_add(c.failed.load(Ordering::Relaxed));
        }
        Some(t)
    }

    /// Counts `f` if it is an error reply (`total_error_replies`, `INFO errorstats`).
    #[inline]
    pub fn count_error(&self, f: &Frame) {
        if let Frame::Error(msg) = f {
            self.count_error_text(msg);
        }
    }

    /// [`Stats::count_error`] of an error reply, out of line: most replies are not errors.
    #[inline(never)]
    fn count_error_text(&self, msg: &[u8]) {
        self.error_replies.fetch_add(1, Ordering::Relaxed);
        let prefix = msg.split(|b| *b == b' ').next().unwrap_or(b"ERR");
        let prefix = String::from_utf8_lossy(&prefix[..prefix.len().min(64)]).into_owned();
        let mut errs = self.errors.lock();
        // Redis caps the number of distinct error prefixes tracked at 128.
        if errs.len() < 128 || errs.contains_key(&prefix) {
            *errs.entry(prefix).or_insert(0) += 1;
        }
    }

    /// Clears counters (CONFIG RESETSTAT).
    pub fn reset(&self) {
        for s in self.stripes.iter() {
            for c in s.cmd.iter() {
                c.calls.store(0, Ordering::Relaxed);
                c.usec.store(0, Ordering::Relaxed);
                c.rejected.store(0, Ordering::Relaxed);
                c.failed.store(0, Ordering::Relaxed);
                if let Some(h) = c.latency.get() {
                    h.reset();
                }
            }
            s.commands.store(0, Ordering::Relaxed);
            s.net_input_bytes.store(0, Ordering::Relaxed);
            s.net_output_bytes.store(0, Ordering::Relaxed);
        }
        self.errors.lock().clear();
        self.error_replies.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(name: &str) -> &'static crate::ctx::Command {
        crate::cmd::table().get(name.as_bytes()).expect("known command")
    }

    #[test]
    fn threads_count_into_stripes_and_reads_sum_them() {
        let table = crate::cmd::table();
        // Two stripes for eight threads: collisions must not lose counts; 64: one stripe each.
        for stripes in [1, 2, 64] {
            let stats = Stats::with_stripes(table.id_count(), stripes);
            std::thread::scope(|s| {
                for t in 0..8u64 {
                    let stats = &stats;
                    s.spawn(move || {
                        for i in 0..1000u64 {
                            stats.count_call(cmd("get"), t, i % 10 == 0, 0);
                            if i % 100 == 0 {
                                stats.count_rejected(cmd("set"));
                            }
                            stats.add_net_input(3);
                            stats.add_net_output(5);
                        }
                    });
                }
            });
            assert_eq!(stats.commands(), 8000, "{stripes} stripes");
            assert_eq!(stats.net_input_bytes(), 24_000);
            assert_eq!(stats.net_output_bytes(), 40_000);
            let get = stats.cmd(cmd("get")).expect("get is numbered");
            // usec: thread t adds t a thousand times.
            assert_eq!(get, CmdStats { calls: 8000, usec: 28_000, rejected: 0, failed: 800 });
            let set = stats.cmd(cmd("set")).expect("set is numbered");
            assert_eq!(set, CmdStats { calls: 0, usec: 0, rejected: 80, failed: 0 });
            assert_eq!(stats.cmd(cmd("del")), Some(CmdStats::default()));
            stats.reset();
            assert_eq!((stats.commands(), stats.net_input_bytes(), stats.net_output_bytes()), (0, 0, 0));
            assert_eq!(stats.cmd(cmd("get")), Some(CmdStats::default()));
            assert_eq!(stats.cmd(cmd("set")), Some(CmdStats::default()));
        }
    }

    #[test]
    fn subcommands_have_their_own_counters_and_unnumbered_commands_none() {
        let table = crate::cmd::table();
        let stats = Stats::new(table.id_count());
        let config = cmd("config");
        let get = config.subcommands.iter().find(|s| s.name == "config|get").expect("config|get");
        stats.count_call(get, 7, false, 0);
        assert_eq!(stats.cmd(get), Some(CmdStats { calls: 1, usec: 7, rejected: 0, failed: 0 }));
        assert_eq!(stats.cmd(config), Some(CmdStats::default()));
        // The definitions themselves (never handed out by a table) have no counters, and counting
        // them is a no-op rather than a panic or someone else's counter.
        let def = crate::cmd::FAMILIES.iter().flat_map(|f| f.iter()).find(|c| c.name == "get").expect("get");
        stats.count_call(def, 1, true, 0);
        stats.count_rejected(def);
        assert_eq!(stats.cmd(def), None);
        assert!(table.all().iter().all(|c| stats.cmd(c) == Some(CmdStats::default()) || std::ptr::eq(*c, config)));
        // A table smaller than the command's id: no counters either.
        assert_eq!(Stats::new(0).cmd(cmd("get")), None);
    }

    #[test]
    fn info_sums_commands_run_on_several_threads() {
        let ts = crate::testkit::TestServer::new();
        let args = |v: &[&str]| v.iter().map(|s| bytes::Bytes::copy_from_slice(s.as_bytes())).collect::<Vec<_>>();
        std::thread::scope(|s| {
            for t in 0..4 {
                let srv = &ts.srv;
                s.spawn(move || {
                    let mut c = srv.new_client(format!("127.0.0.1:{}", 40000 + t), "127.0.0.1:6379".into());
                    for _ in 0..250 {
                        srv.execute(&mut c, &args(&["GET", "k"]));
                        srv.execute(&mut c, &args(&["INCR", "k"]));
                        srv.execute(&mut c, &args(&["GET"]));
                    }
                });
            }
        });
        let mut c = ts.client();
        let Some(Frame::Verbatim { text, .. }) = c.cmd(&["INFO", "commandstats"]) else { panic!("INFO") };
        let info = String::from_utf8_lossy(&text).into_owned();
        assert!(
            info.contains("cmdstat_get:calls=1000,usec=0,usec_per_call=0.00,rejected_calls=1000,failed_calls=0\r\n"),
            "{info}"
        );
        assert!(
            info.contains("cmdstat_incr:calls=1000,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n"),
            "{info}"
        );
        assert_eq!(c.run("GET k"), "\"1000\"");
    }

    #[test]
    fn dirty_sums_the_adds_of_every_thread_and_survives_resetstat() {
        let stats = Stats::new(4);
        std::thread::scope(|s| {
            for t in 1..=6 {
                let stats = &stats;
                s.spawn(move || (0..500).for_each(|_| stats.add_dirty(t)));
            }
        });
        stats.add_dirty(1);
        assert_eq!(stats.dirty(), 500 * 21 + 1);
        stats.reset();
        assert_eq!(stats.dirty(), 500 * 21 + 1, "CONFIG RESETSTAT leaves the change count alone");
    }

    #[test]
    fn threads_get_distinct_numbers() {
        let mine = thread_number();
        assert_eq!(thread_number(), mine, "stable within a thread");
        let others: Vec<usize> = (0..4).map(|_| std::thread::spawn(thread_number).join().expect("thread")).collect();
        for (i, n) in others.iter().enumerate() {
            assert_ne!(*n, mine);
            assert!(!others[..i].contains(n), "{others:?}");
        }
    }
}
