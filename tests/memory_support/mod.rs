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
//!
//! And, for a binary that runs the simulated server beside the code it measures (the namespace
//! benchmark), it counts apart what the threads marked by [`count_this_thread`] allocate and
//! free ([`apart_live_bytes`], [`apart_peak_bytes`]): mark a runtime's threads as they start,
//! and what that runtime's tasks hold is told from the server's. A block allocated on one side
//! and freed on the other skews both; the two sides share nothing but sockets.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

/// Forwards to [`System`] and keeps a running total of live bytes.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);
static APART_LIVE: AtomicIsize = AtomicIsize::new(0);
static APART_PEAK: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// Whether this thread's allocations are counted apart too. Const-initialized and without
    /// a destructor: reading it never allocates, at any point of a thread's life.
    static APART: Cell<bool> = const { Cell::new(false) };
}

fn counted_apart() -> bool {
    APART.with(Cell::get)
}

/// Adds `size` to the live total and raises the peak if the total passed it.
fn grow(size: usize) {
    let live = LIVE_BYTES.fetch_add(size, Ordering::Relaxed) + size;
    // A plain load first: the peak is rarely beaten, and `fetch_max` is a locked operation.
    if live > PEAK_BYTES.load(Ordering::Relaxed) {
        PEAK_BYTES.fetch_max(live, Ordering::Relaxed);
    }
    if counted_apart() {
        let size = isize::try_from(size).unwrap_or(isize::MAX);
        let live = APART_LIVE.fetch_add(size, Ordering::Relaxed) + size;
        if live > APART_PEAK.load(Ordering::Relaxed) {
            APART_PEAK.fetch_max(live, Ordering::Relaxed);
        }
    }
}

/// Takes `size` off the live totals.
fn shrink(size: usize) {
    LIVE_BYTES.fetch_sub(size, Ordering::Relaxed);
    if counted_apart() {
        let size = isize::try_from(size).unwrap_or(isize::MAX);
        APART_LIVE.fetch_sub(size, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to `System`; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grow(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrink(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Add before subtracting so the total never dips below what is really live.
        grow(new_size);
        shrink(layout.size());
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

/// Counts what the calling thread allocates and frees apart too, from now on (call it from a
/// runtime's `on_thread_start`).
pub fn count_this_thread() {
    APART.with(|apart| apart.set(true));
}

/// Bytes the marked threads allocated and did not free (negative if they freed more than they
/// allocated since they were marked: blocks made before).
pub fn apart_live_bytes() -> isize {
    APART_LIVE.load(Ordering::Relaxed)
}

/// The most [`apart_live_bytes`] has been since the last [`reset_apart_peak`].
pub fn apart_peak_bytes() -> isize {
    APART_PEAK.load(Ordering::Relaxed)
}

/// Starts a new high-water mark of the marked threads' bytes from what they hold now.
pub fn reset_apart_peak() {
    APART_PEAK.store(apart_live_bytes(), Ordering::Relaxed);
}
