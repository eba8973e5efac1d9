//! Time, injected.
//!
//! Every TTL in the keyspace is a deadline on a *monotonic* millisecond timeline. That timeline starts at
//! the Unix time of server start and then advances with `Instant`, so it reads like Unix milliseconds but
//! never jumps when the wall clock is stepped: a lock taken with `PX 30000` lives 30 seconds whatever NTP
//! does. Absolute times given by clients (`EXPIREAT`, `PXAT`, `EXPIRETIME`) are converted at the edge with
//! [`Clock::wall_offset_ms`].
//!
//! Tests use [`ManualClock`] and advance it instead of sleeping.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of time for the engine.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds on the monotonic timeline (see the module docs).
    fn now_ms(&self) -> u64;
    /// Microseconds on the same monotonic timeline (used for latency statistics and `TIME`).
    fn now_us(&self) -> u64 {
        self.now_ms() * 1000
    }
    /// A reading for measuring durations only (command latency statistics): microseconds from an
    /// unspecified origin, possibly running a little fast or slow against the timeline. Never compare
    /// it with the timeline or a deadline.
    fn ticks_us(&self) -> u64 {
        self.now_us()
    }
    /// [`Clock::now_ms`] and [`Clock::ticks_us`] together, as a command starts: one reading of the
    /// clock where the two calls would each make one.
    fn stamp(&self) -> (u64, u64) {
        (self.now_ms(), self.ticks_us())
    }
    /// `unix_ms - monotonic_ms`: add it to a monotonic deadline to get Unix milliseconds.
    fn wall_offset_ms(&self) -> i64;
    /// Current Unix time in milliseconds, as seen through the offset.
    fn unix_ms(&self) -> i64 {
        self.now_ms() as i64 + self.wall_offset_ms()
    }
}

/// The real clock. The timeline follows `std::time::Instant` (the OS monotonic clock, which NTP
/// keeps in step with the wall clock), so the wall offset stays put and `PXAT` then `PTTL` reads back
/// exactly. Reading `Instant` costs a call into the vDSO each time, and a command reads the time
/// when it starts: so the clock reads the CPU's invariant TSC through `quanta` (one instruction)
/// and adds the skew between the two, which it measures again from `Instant` once a millisecond of
/// TSC time has passed since the last measure. The TSC's calibrated rate is off by a few parts per
/// million: that is a few nanoseconds between two measures, where following the TSC alone
/// drifted the timeline 1.5 ms from the wall clock within minutes. A measure can move the
/// timeline back by that much (Redis's own clock, `gettimeofday`, goes back as far as the wall
/// clock is stepped); a jump of the TSC (a VM resumed) is corrected at the next reading.
/// Durations ([`Clock::ticks_us`]) are the TSC alone, about 15 ns a read here against 35 ns for
/// `Instant`.
pub struct SystemClock {
    ticks: quanta::Clock,
    /// The TSC reading the ticks count from.
    raw_start: u64,
    start: std::time::Instant,
    start_unix_us: u64,
    /// Timeline nanoseconds since `start` minus ticks nanoseconds since `raw_start`, as last
    /// measured ([`SystemClock::measure`]).
    skew_ns: AtomicI64,
    /// The ticks (nanoseconds) from which the skew is measured again.
    measure_at_ns: AtomicU64,
    /// Cached offset between wall and monotonic time. It only changes when the two drift apart by more
    /// than [`SystemClock::RESYNC_MS`], so converting `EXPIREAT t` and reading back `EXPIRETIME` round-trips
    /// exactly while the wall clock behaves.
    offset_ms: AtomicI64,
}

impl SystemClock {
    /// Drift between wall and monotonic time tolerated before the offset is re-read.
    pub const RESYNC_MS: i64 = 1000;
    /// TSC time between two measures of its skew against the monotonic clock.
    const MEASURE_EVERY_NS: u64 = 1_000_000;

    /// Creates a clock whose monotonic timeline starts at the current Unix time.
    pub fn new() -> SystemClock {
        // Calibrating the TSC takes a while: do it first, then read the two clocks the timeline is
        // made of back to back.
        let ticks = quanta::Clock::new();
        let start_unix_us = unix_now_us();
        let start = std::time::Instant::now();
        SystemClock {
            raw_start: ticks.raw(),
            ticks,
            start,
            start_unix_us,
            skew_ns: AtomicI64::new(0),
            // The first reading measures.
            measure_at_ns: AtomicU64::new(0),
            offset_ms: AtomicI64::new(0),
        }
    }

    /// Re-reads the wall clock and adopts the new offset if it moved by more than `RESYNC_MS`
    /// (called from the server cron).
    pub fn resync(&self) {
        let mono = self.now_ms() as i64;
        let wall = (unix_now_us() / 1000) as i64;
        let fresh = wall - mono;
        let cur = self.offset_ms.load(Ordering::Relaxed);
        if (fresh - cur).abs() > Self::RESYNC_MS {
            self.offset_ms.store(fresh, Ordering::Relaxed);
        }
    }

    /// Nanoseconds of the TSC since `raw_start`.
    #[inline]
    fn ticks_ns(&self) -> u64 {
        self.ticks.delta_as_nanos(self.raw_start, self.ticks.raw())
    }

    /// Timeline nanoseconds since `start` at the ticks reading `t` (just taken).
    #[inline]
    fn timeline_ns(&self, t: u64) -> u64 {
        if t >= self.measure_at_ns.load(Ordering::Relaxed) {
            return self.measure();
        }
        t.saturating_add_signed(self.skew_ns.load(Ordering::Relaxed))
    }

    /// Reads the monotonic clock, and the ticks beside it: the new skew. Two threads measuring at
    /// once store skews a few nanoseconds apart; either is right.
    #[cold]
    fn measure(&self) -> u64 {
        let mono = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let t = self.ticks_ns();
        self.skew_ns.store(mono as i64 - t as i64, Ordering::Relaxed);
        self.measure_at_ns.store(t.saturating_add(Self::MEASURE_EVERY_NS), Ordering::Relaxed);
        mono
    }

    fn us_at(&self, t: u64) -> u64 {
        self.start_unix_us + self.timeline_ns(t) / 1000
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

fn unix_now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }
    fn now_us(&self) -> u64 {
        self.us_at(self.ticks_ns())
    }
    fn ticks_us(&self) -> u64 {
        self.ticks_ns() / 1000
    }
    fn stamp(&self) -> (u64, u64) {
        let t = self.ticks_ns();
        (self.us_at(t) / 1000, t / 1000)
    }
    fn wall_offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }
}

/// A clock that only moves when told to; for tests.
pub struct ManualClock {
    now_us: AtomicU64,
    offset_ms: AtomicI64,
}

impl ManualClock {
    /// A clock at `start_ms` on both timelines.
    pub fn new(start_ms: u64) -> ManualClock {
        ManualClock { now_us: AtomicU64::new(start_ms * 1000), offset_ms: AtomicI64::new(0) }
    }
    /// Moves monotonic time forward.
    pub fn advance_ms(&self, ms: u64) {
        self.now_us.fetch_add(ms * 1000, Ordering::Relaxed);
    }
    /// Steps the wall clock (monotonic time is unaffected), as an NTP step or an operator would.
    pub fn step_wall_ms(&self, delta: i64) {
        self.offset_ms.fetch_add(delta, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_us.load(Ordering::Relaxed) / 1000
    }
    fn now_us(&self) -> u64 {
        self.now_us.load(Ordering::Relaxed)
    }
    fn wall_offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timeline plus the wall offset is the wall clock: `TIME`, and `PXAT` then `PTTL`, depend on
    /// it. (A timeline started before the TSC's calibration lagged by the calibration's length, and
    /// one driven by the TSC drifted further every minute.) The best of a few tries, so that a
    /// preemption between the two reads cannot fail it.
    #[test]
    fn system_clock_reads_the_wall_clock() {
        let c = SystemClock::new();
        let best = (0..20)
            .map(|_| {
                let ours = c.now_us() as i64 + c.wall_offset_ms() * 1000;
                (ours - unix_now_us() as i64).abs()
            })
            .min()
            .unwrap();
        assert!(best < 200, "timeline is {best} us away from the wall clock");
    }

    /// The timeline read through the TSC stays on `Instant`'s: each reading lies between the
    /// monotonic clock read just before and just after it (a few microseconds of slack for the
    /// TSC's rate and the rounding), across many measures of the skew, and `stamp` reads the
    /// same two clocks as `now_ms` and `ticks_us`.
    #[test]
    fn the_timeline_follows_the_monotonic_clock() {
        let c = SystemClock::new();
        let mono_us = |c: &SystemClock| c.start_unix_us + c.start.elapsed().as_micros() as u64;
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(30);
        let mut n = 0u64;
        while std::time::Instant::now() < deadline {
            let before = mono_us(&c);
            let ours = c.now_us();
            let after = mono_us(&c);
            assert!(ours + 5 >= before && ours <= after + 5, "{ours} not within [{before}, {after}]");
            n += 1;
            if n.is_multiple_of(64) {
                std::thread::sleep(std::time::Duration::from_micros(300));
            }
        }
        let (ms, ticks) = c.stamp();
        assert!(ms.abs_diff(c.now_ms()) <= 1 && ticks.abs_diff(c.ticks_us()) < 1000);
    }

    #[test]
    fn ticks_measure_durations() {
        let c = SystemClock::new();
        let t0 = c.ticks_us();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(c.ticks_us() >= t0 + 1000);
    }
}
