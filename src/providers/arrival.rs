//! When the requests a thread answers arrived: a thread that reads requests (the stdio reader)
//! calls [`input_arrived`] each time a read of its input returns, so everything it answers
//! from then on was sent before that moment. A check made on that thread after the moment
//! (a kept read's `fstatat`, `files::read::read_cached`) holds for every request of the same
//! input, which pipelined small reads share instead of checking one file again per request.
//! On any other thread (the runtime, HTTP) the arrival is unknown and every check is made.
//!
//! What it buys: pipelined 100-byte reads ~1.6× (283 000 → 463 000–470 000/s; the reader
//! thread's `fstatat` was a third of its time; BENCHMARKS.md, "Issue 30, the kept read's
//! check"), the figure issue 30 bounds. A request read alone (a person's, an assistant's) is
//! checked as before.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

thread_local! {
    static ARRIVED: Cell<u64> = const { Cell::new(0) };
}

/// Numbers every read of every input thread: equal numbers mean the same read on one thread.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// Marks a read of this thread's input that just returned.
pub(crate) fn input_arrived() {
    ARRIVED.with(|a| a.set(NEXT.fetch_add(1, Ordering::Relaxed)));
}

/// The last read of this thread's input, or 0 on a thread that reads none.
pub(crate) fn current() -> u64 {
    ARRIVED.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_read_is_a_new_arrival_and_other_threads_have_none() {
        assert_eq!(current(), 0);
        input_arrived();
        let first = current();
        assert_ne!(first, 0);
        assert_eq!(current(), first);
        input_arrived();
        assert_ne!(current(), first);
        assert_eq!(std::thread::spawn(current).join().expect("thread"), 0);
    }
}
