//! A counting global allocator for `workqueue_timers.rs`, which measures the heap bytes a queue
//! holds per waiting timer.
//!
//! Including this module installs the allocator for the whole binary it is compiled into, and
//! only that binary: the library never counts. The figure is requested bytes; the system
//! allocator rounds each request up to its size class on top.
//!
//! kube-gc's own memory tests and benchmarks have a counting allocator of their own
//! (`tests/memory_support/` at the repository's top, which also keeps a peak for the soak). This
//! one is the crate's, so that its package builds its benchmarks without reaching outside itself.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Forwards to [`System`] and keeps a running total of live bytes.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Add before subtracting so the total never dips below what is really live.
        LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
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
