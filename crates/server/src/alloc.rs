//! The process's allocator: jemalloc, counted, so that `used_memory` (INFO, `maxmemory`) is what the
//! program holds, as Redis's `zmalloc_used_memory` is.
//!
//! Each allocation adds jemalloc's usable size for it (`nallocx`: the size class the block really
//! takes, as Redis counts `zmalloc_size`), each free subtracts it. Counting costs no shared write on the
//! hot path: every thread owns a cache line of [`SLOTS`] and adds to it with a plain load and store;
//! [`used`] sums the lines. A block freed on another thread than the one that allocated it leaves one
//! slot up and the other down by the same amount, so the sum is exact. Threads beyond the slots share
//! one atomic counter. A thread's slot outlives it: what it allocated and never freed is still held.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use tikv_jemallocator::Jemalloc;

/// Per-thread counters; the threads of a running server (tokio workers, the blocking pool, jemalloc's
/// background thread) fit many times over.
const SLOTS: usize = 128;

#[repr(align(64))]
struct Slot(AtomicI64);

static COUNTS: [Slot; SLOTS] = [const { Slot(AtomicI64::new(0)) }; SLOTS];
/// Slots handed out so far (may exceed `SLOTS`: those threads use `SHARED`).
static NEXT: AtomicUsize = AtomicUsize::new(0);
static SHARED: AtomicI64 = AtomicI64::new(0);

thread_local! {
    /// This thread's slot, `usize::MAX` until its first allocation. Const-initialised and without a
    /// destructor, so reading it never allocates (it is read from inside the allocator).
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn add(delta: i64) {
    let slot = MY_SLOT.with(|s| {
        let mut i = s.get();
        if i == usize::MAX {
            i = NEXT.fetch_add(1, Ordering::Relaxed);
            s.set(i);
        }
        i
    });
    match COUNTS.get(slot) {
        // Only this thread writes its slot: load + store is an exact add, readers see either value.
        Some(Slot(c)) => c.store(c.load(Ordering::Relaxed) + delta, Ordering::Relaxed),
        None => {
            SHARED.fetch_add(delta, Ordering::Relaxed);
        }
    }
}

/// Bytes the program holds from the allocator (usable sizes), over all threads.
pub fn used() -> u64 {
    let n = NEXT.load(Ordering::Relaxed).min(SLOTS);
    let sum: i64 =
        COUNTS[..n].iter().map(|s| s.0.load(Ordering::Relaxed)).sum::<i64>() + SHARED.load(Ordering::Relaxed);
    sum.max(0) as u64
}

/// The bytes jemalloc really gives a request of `layout`: its size class.
fn usable(layout: Layout) -> i64 {
    // jemalloc's MALLOCX_LG_ALIGN; natural alignment (<= 16) needs no flag.
    let flags = if layout.align() <= 16 { 0 } else { layout.align().trailing_zeros() as i32 };
    // SAFETY: nallocx only computes a size class from its arguments (it touches no memory), and
    // GlobalAlloc callers guarantee a non-zero size, the one input nallocx leaves undefined.
    unsafe { tikv_jemalloc_sys::nallocx(layout.size(), flags) as i64 }
}

/// jemalloc with every block counted (see the module docs).
pub struct Counting;

// SAFETY: every method forwards to `Jemalloc`'s with the caller's arguments unchanged, so the
// GlobalAlloc contract holds as it does for `Jemalloc`. The counting beside it touches only
// atomics and a const-initialised thread-local without destructor: it never allocates, never
// unwinds, and never reads the blocks.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received (see the impl's comment).
        let p = unsafe { Jemalloc.alloc(layout) };
        if !p.is_null() {
            add(usable(layout));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { Jemalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            add(usable(layout));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-usable(layout));
        // SAFETY: forwarded as received.
        unsafe { Jemalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { Jemalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // The caller guarantees `new_size` with `layout`'s alignment is a valid non-zero layout.
            let new = Layout::from_size_align(new_size, layout.align()).map_or(0, usable);
            add(new - usable(layout));
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's slot (the unit-test binary allocates through `Counting` on every thread, so the
    /// process total moves under other tests' feet; one thread's own slot does not).
    fn mine() -> i64 {
        let i = MY_SLOT.with(Cell::get);
        COUNTS.get(i).map_or(0, |s| s.0.load(Ordering::Relaxed))
    }

    #[test]
    fn counts_usable_sizes_and_frees_across_threads() {
        let layout = Layout::from_size_align(100, 8).unwrap();
        let big = Layout::from_size_align(5000, 8).unwrap();
        // Allocated on one fresh thread, grown there, freed on another: each slot moves by the
        // usable sizes, and the two moves cancel out.
        let (addr, grown) = std::thread::spawn(move || {
            let start = mine();
            // SAFETY: a valid non-zero layout; the block is freed below with its final layout.
            let p = unsafe { Counting.alloc(layout) };
            assert!(!p.is_null());
            // jemalloc's size class for 100 bytes is 112.
            assert_eq!(mine() - start, 112);
            // SAFETY: `p` came from Counting.alloc with `layout`.
            let p = unsafe { Counting.realloc(p, layout, 5000) };
            assert!(!p.is_null());
            (p as usize, mine() - start)
        })
        .join()
        .unwrap();
        assert_eq!(grown, 5120);
        let freed = std::thread::spawn(move || {
            let start = mine();
            // SAFETY: the block from above, freed once with its current layout.
            unsafe { Counting.dealloc(addr as *mut u8, big) };
            mine() - start
        })
        .join()
        .unwrap();
        assert_eq!(freed, -5120);
        assert!(used() > 0);
        assert_eq!(usable(Layout::from_size_align(100, 64).unwrap()), 128);
    }
}
