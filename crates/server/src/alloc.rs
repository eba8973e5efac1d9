//! Used memory as jemalloc counts it: INFO's `used_memory` and what `maxmemory` limits.
//!
//! jemalloc keeps, for each thread, the bytes the thread allocated and the bytes it freed, in its
//! size classes (what a block really takes, as Redis's `zmalloc` counts). It maintains them on its
//! fast path whatever we do, so counting adds nothing to an allocation. Each thread publishes its net
//! (allocated − freed) into a cache line of its own when it calls [`publish`]: connections do after
//! each batch of commands, the cron after its work, and [`used`] first publishes the caller's.
//! [`used`] sums the lines. A block freed by another thread than the one that allocated it moves
//! both threads' nets by its size, so the sum is exact once both have published; what a thread did
//! since its last publication is not seen yet. Threads beyond the slots share one counter.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use tikv_jemalloc_ctl::thread::{ThreadLocal, allocatedp, deallocatedp};

/// Published nets; the threads of a running server (tokio workers, the blocking pool over time)
/// fit many times over.
const SLOTS: usize = 128;

/// One thread's net, alone in its pair of cache lines (adjacent-line prefetch).
#[repr(align(128))]
struct Slot(AtomicI64);

static COUNTS: [Slot; SLOTS] = [const { Slot(AtomicI64::new(0)) }; SLOTS];
/// Slots handed out so far (may exceed `SLOTS`: those threads add to `SHARED`).
static NEXT: AtomicUsize = AtomicUsize::new(0);
static SHARED: AtomicI64 = AtomicI64::new(0);

/// This thread's jemalloc counters and where it publishes them.
struct Counters {
    allocated: ThreadLocal<u64>,
    deallocated: ThreadLocal<u64>,
    slot: usize,
    /// The net last added to `SHARED` (threads without a slot of their own).
    last: Cell<i64>,
}

impl Counters {
    fn register() -> Option<Counters> {
        Some(Counters {
            allocated: allocatedp::read().ok()?,
            deallocated: deallocatedp::read().ok()?,
            slot: NEXT.fetch_add(1, Ordering::Relaxed),
            last: Cell::new(0),
        })
    }

    fn net(&self) -> i64 {
        self.allocated.get().wrapping_sub(self.deallocated.get()) as i64
    }

    fn publish(&self) {
        let net = self.net();
        match COUNTS.get(self.slot) {
            Some(s) => s.0.store(net, Ordering::Relaxed),
            None => {
                SHARED.fetch_add(net - self.last.replace(net), Ordering::Relaxed);
            }
        }
    }
}

thread_local! {
    static MINE: Option<Counters> = Counters::register();
}

/// Publishes this thread's net allocation (cheap: two reads of jemalloc's thread state and a store).
pub fn publish() {
    let _ = MINE.try_with(|m| {
        if let Some(m) = m {
            m.publish()
        }
    });
}

/// Bytes the process holds from jemalloc, as far as every thread has published.
pub fn used() -> u64 {
    publish();
    let n = NEXT.load(Ordering::Relaxed).min(SLOTS);
    let sum: i64 =
        COUNTS[..n].iter().map(|s| s.0.load(Ordering::Relaxed)).sum::<i64>() + SHARED.load(Ordering::Relaxed);
    sum.max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's published net.
    fn mine() -> i64 {
        MINE.with(|m| m.as_ref().map(|m| COUNTS[m.slot].0.load(Ordering::Relaxed)).unwrap_or(0))
    }

    // The unit-test binary allocates through jemalloc (main.rs), on every thread.
    #[test]
    fn counts_size_classes_and_frees_across_threads() {
        let (block, grown) = std::thread::spawn(|| {
            publish();
            let start = mine();
            let v: Vec<u8> = Vec::with_capacity(100);
            publish();
            // jemalloc's size class for 100 bytes is 112.
            assert_eq!(mine() - start, 112);
            let mut v = std::hint::black_box(v);
            v.reserve_exact(5000);
            publish();
            (v, mine() - start)
        })
        .join()
        .unwrap();
        assert_eq!(grown, 5120);
        // Freed on another thread: that thread's net goes down by as much.
        let freed = std::thread::spawn(move || {
            publish();
            let start = mine();
            drop(block);
            publish();
            mine() - start
        })
        .join()
        .unwrap();
        assert_eq!(freed, -5120);
        assert!(used() > 0);
    }
}
