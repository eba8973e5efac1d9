//! Latency figures, as Redis 7 keeps them:
//! - per-command latency histograms (`latency-tracking`), read by `INFO latencystats` as
//!   percentiles and by `LATENCY HISTOGRAM` as cumulative power-of-two buckets;
//! - the latency monitor (`latency-monitor-threshold`): named events (`command`, `fast-command`,
//!   `expire-cycle`...) that took at least the threshold, one sample per second kept for the last
//!   160, read by `LATENCY LATEST/HISTORY/GRAPH/DOCTOR` and cleared by `LATENCY RESET`.
//!
//! A histogram counts durations in microseconds (Redis's resolution too: it records `ustime()`
//! differences) in log-linear buckets: exact below 32 µs, then 16 buckets per power of two (a
//! bucket is at most 1/16 of its value wide); durations above one second count as one second, as
//! Redis's histograms top out there.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Durations above this (µs) count as this: Redis's `LATENCY_HISTOGRAM_MAX_VALUE` (1 s).
const MAX_US: u64 = 1_000_000;
const EXACT: usize = 32;
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
/// Buckets up to 2^20 µs (> 1 s).
pub const BUCKETS: usize = EXACT + (20 - 5 + 1) * SUB;

/// The bucket of a duration in µs.
pub fn bucket(us: u64) -> usize {
    let v = us.min(MAX_US);
    if v < EXACT as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // 5..=19
    let sub = ((v >> (e - SUB_BITS)) as usize) & (SUB - 1);
    EXACT + (e as usize - 5) * SUB + sub
}

/// The largest duration (µs) a bucket holds (hdr_histogram's "highest equivalent value").
pub fn bucket_top(i: usize) -> u64 {
    if i < EXACT {
        return i as u64;
    }
    let e = 5 + (i - EXACT) / SUB;
    let sub = ((i - EXACT) % SUB) as u64;
    let width = 1u64 << (e - SUB_BITS as usize);
    (((SUB as u64) + sub) << (e - SUB_BITS as usize)) + width - 1
}

/// One histogram's buckets; writers add with relaxed atomics.
pub struct Histogram(Box<[AtomicU64]>);

impl Default for Histogram {
    fn default() -> Self {
        Histogram((0..BUCKETS).map(|_| AtomicU64::new(0)).collect())
    }
}

impl Histogram {
    /// Counts one duration.
    pub fn record(&self, us: u64) {
        self.0[bucket(us)].fetch_add(1, Ordering::Relaxed);
    }

    /// Adds this histogram's counts into `into` (one per bucket).
    pub fn add_into(&self, into: &mut [u64]) {
        for (t, c) in into.iter_mut().zip(self.0.iter()) {
            *t += c.load(Ordering::Relaxed);
        }
    }

    /// Clears it.
    pub fn reset(&self) {
        for c in self.0.iter() {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// The value (µs) at `pct` percent of a histogram's counts (hdr_histogram's
/// `hdr_value_at_percentile`: the top of the bucket where the count reaches `pct`).
pub fn value_at_percentile(counts: &[u64], pct: f64) -> u64 {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return 0;
    }
    let want = ((pct.clamp(0.0, 100.0) / 100.0) * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (i, c) in counts.iter().enumerate() {
        seen += c;
        if seen >= want {
            return bucket_top(i);
        }
    }
    bucket_top(counts.len() - 1)
}

/// `LATENCY HISTOGRAM`'s buckets: (bucket in µs, calls that took at most that long), for the
/// power-of-two bounds 1024 ns · 2^k that Redis's log iteration walks, where the count grows.
pub fn cumulative_buckets(counts: &[u64]) -> Vec<(u64, u64)> {
    let total: u64 = counts.iter().sum();
    let mut out = Vec::new();
    let (mut prev, mut k) = (0u64, 0u32);
    while prev < total && k < 40 {
        let bound_us = (1024u64 << k) / 1000;
        let cum: u64 = counts.iter().enumerate().filter(|(i, _)| bucket_top(*i) <= bound_us).map(|(_, c)| c).sum();
        // The last bound takes in everything (durations are capped at one second).
        let cum = if bound_us >= MAX_US { total } else { cum };
        if cum > prev {
            out.push((bound_us, cum));
            prev = cum;
        }
        k += 1;
    }
    out
}

/// Samples kept per latency-monitor event (Redis's `LATENCY_TS_LEN`).
pub const HISTORY_LEN: usize = 160;

/// One event's history: at most one sample per second (the largest), the newest last.
#[derive(Default, Clone, Debug)]
pub struct EventHistory {
    /// (unix seconds, milliseconds), oldest first.
    pub samples: std::collections::VecDeque<(i64, u64)>,
    /// The largest latency ever recorded for the event (ms).
    pub max: u64,
}

/// The latency monitor's events.
#[derive(Default)]
pub struct Monitor {
    events: Mutex<BTreeMap<&'static str, EventHistory>>,
}

impl Monitor {
    /// Records that `event` took `ms` at `unix_s` (Redis's `latencyAddSample`): a second sample
    /// within the same second keeps the larger.
    pub fn add(&self, event: &'static str, unix_s: i64, ms: u64) {
        let mut ev = self.events.lock();
        let h = ev.entry(event).or_default();
        h.max = h.max.max(ms);
        match h.samples.back_mut() {
            Some(last) if last.0 == unix_s => last.1 = last.1.max(ms),
            _ => {
                if h.samples.len() == HISTORY_LEN {
                    h.samples.pop_front();
                }
                h.samples.push_back((unix_s, ms));
            }
        }
    }

    /// Every event's history, by name.
    pub fn snapshot(&self) -> BTreeMap<&'static str, EventHistory> {
        self.events.lock().clone()
    }

    /// Clears the named events (all when `names` is empty); how many there were.
    pub fn reset(&self, names: &[&[u8]]) -> usize {
        let mut ev = self.events.lock();
        if names.is_empty() {
            let n = ev.len();
            ev.clear();
            return n;
        }
        let mut n = 0;
        for name in names {
            let key = ev.keys().find(|k| k.as_bytes().eq_ignore_ascii_case(name)).copied();
            if let Some(k) = key {
                ev.remove(k);
                n += 1;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_then_one_sixteenth_wide() {
        for us in [0u64, 1, 31, 32, 33, 47, 48, 1000, 1023, 1024, 65_535, 999_999, 1_000_000] {
            let i = bucket(us);
            assert!(bucket_top(i) >= us, "{us}");
            assert!(i == 0 || bucket_top(i - 1) < us, "{us}");
            assert!((bucket_top(i) - us) * 16 <= us.max(16), "{us} in a bucket too wide");
        }
        assert_eq!(bucket(5_000_000), bucket(MAX_US));
        assert!(bucket(MAX_US) < BUCKETS);
    }

    #[test]
    fn percentiles_read_the_buckets() {
        let h = Histogram::default();
        for _ in 0..98 {
            h.record(1);
        }
        h.record(100);
        h.record(50_000);
        let mut c = vec![0; BUCKETS];
        h.add_into(&mut c);
        assert_eq!(value_at_percentile(&c, 50.0), 1);
        assert_eq!(value_at_percentile(&c, 99.0), bucket_top(bucket(100)));
        assert_eq!(value_at_percentile(&c, 100.0), bucket_top(bucket(50_000)));
        assert_eq!(value_at_percentile(&c, 0.0), 1);
        assert_eq!(value_at_percentile(&[0; BUCKETS], 50.0), 0);
        assert_eq!(cumulative_buckets(&c), vec![(1, 98), (131, 99), (67108, 100)]);
    }

    #[test]
    fn the_monitor_keeps_the_worst_sample_per_second_and_160_seconds() {
        let m = Monitor::default();
        m.add("command", 100, 5);
        m.add("command", 100, 9);
        m.add("command", 100, 7);
        m.add("command", 101, 3);
        let s = m.snapshot();
        assert_eq!(s["command"].samples, [(100, 9), (101, 3)]);
        assert_eq!(s["command"].max, 9);
        for t in 0..200 {
            m.add("expire-cycle", t, 1);
        }
        assert_eq!(m.snapshot()["expire-cycle"].samples.len(), HISTORY_LEN);
        assert_eq!(m.reset(&[b"nosuch"]), 0);
        assert_eq!(m.reset(&[b"COMMAND"]), 1);
        assert_eq!(m.reset(&[]), 1);
        assert!(m.snapshot().is_empty());
    }
}
