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
    /// `unix_ms - monotonic_ms`: add it to a monotonic deadline to get Unix milliseconds.
    fn wall_offset_ms(&self) -> i64;
    /// Current Unix time in milliseconds, as seen through the offset.
    fn unix_ms(&self) -> i64 {
        self.now_ms() as i64 + self.wall_offset_ms()
    }
}

/// The real clock. The timeline advances with `std::time::Instant` (the OS monotonic clock, which NTP
/// keeps in step with the wall clock), so the wall offset stays put and `PXAT` then `PTTL` reads back
/// exactly. Durations ([`Clock::ticks_us`], two reads per command and per command a script runs) go
/// through `quanta`: the CPU's invariant TSC where there is one, about 15 ns a read here against 35 ns
/// for `Instant`. The TSC's calibrated rate is off by a few parts per million, which is nothing for a
/// latency but drifted the timeline 1.5 ms from the wall clock within minutes when the timeline used it.
pub struct SystemClock {
    ticks: quanta::Clock,
    ticks_start: quanta::Instant,
    start: std::time::Instant,
    start_unix_us: u64,
    /// Cached offset between wall and monotonic time. It only changes when the two drift apart by more
    /// than [`SystemClock::RESYNC_MS`], so converting `EXPIREAT t` and reading back `EXPIRETIME` round-trips
    /// exactly while the wall clock behaves.
    offset_ms: AtomicI64,
}

impl SystemClock {
    /// Drift between wall and monotonic time tolerated before the offset is re-read.
    pub const RESYNC_MS: i64 = 1000;

    /// Creates a clock whose monotonic timeline starts at the current Unix time.
    pub fn new() -> SystemClock {
        // Calibrating the TSC takes a while: do it first, then read the two clocks the timeline is
        // made of back to back.
        let ticks = quanta::Clock::new();
        let start_unix_us = unix_now_us();
        let start = std::time::Instant::now();
        SystemClock { ticks_start: ticks.now(), ticks, start, start_unix_us, offset_ms: AtomicI64::new(0) }
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
        self.start_unix_us + self.start.elapsed().as_micros() as u64
    }
    fn ticks_us(&self) -> u64 {
        self.ticks.now().saturating_duration_since(self.ticks_start).as_micros() as u64
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

    #[test]
    fn ticks_measure_durations() {
        let c = SystemClock::new();
        let t0 = c.ticks_us();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(c.ticks_us() >= t0 + 1000);
    }
}
