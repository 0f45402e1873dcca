//! A counting global allocator for the binaries that measure memory (`tests/*_memory.rs`, the
//! soak, and the TTL, garbage-collector, retention and informer-sync benchmarks). The workqueue
//! crate's timer benchmark counts with its own, so that crate's package stands alone
//! (`crates/workqueue/benches/support/counting_alloc.rs`).
//!
//! Including this module installs the allocator for the whole binary it is compiled into, and
//! only that binary: the library never counts. The figures are requested bytes; the system
//! allocator rounds each request up to its size class on top.
//!
//! It also keeps the high-water mark of live bytes since the last [`reset_peak`], for the soak's
//! peak-memory report; binaries that only need [`live_bytes`] leave those two unused.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Forwards to [`System`] and keeps a running total of live bytes.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Adds `size` to the live total and raises the peak if the total passed it.
fn grow(size: usize) {
    let live = LIVE_BYTES.fetch_add(size, Ordering::Relaxed) + size;
    // A plain load first: the peak is rarely beaten, and `fetch_max` is a locked operation.
    if live > PEAK_BYTES.load(Ordering::Relaxed) {
        PEAK_BYTES.fetch_max(live, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to `System`; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grow(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Add before subtracting so the total never dips below what is really live.
        grow(new_size);
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes currently allocated by this process (requested sizes).
pub fn live_bytes() -> usize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// The most bytes allocated at once since the last [`reset_peak`] (or since the start).
pub fn peak_bytes() -> usize {
    PEAK_BYTES.load(Ordering::Relaxed)
}

/// Starts a new high-water mark from what is live now.
pub fn reset_peak() {
    PEAK_BYTES.store(live_bytes(), Ordering::Relaxed);
}
