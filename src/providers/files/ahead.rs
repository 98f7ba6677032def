//! Pages walked ahead of a client that pages on (`resources/list` of an unwatched files
//! source): once a page is served, the pages after it are walked on one thread of their own,
//! up to [`DEPTH`] of them, and served if they are asked for while fresh.
//!
//! A client that pages to the end asks for the next page as soon as it has the last, so with
//! one page walked ahead it still waits for most of a walk each time (the walk starts when the
//! page before it is served). With two, the walk of the page after next runs while the next
//! one is sent and read: the walking thread never waits for the client, and a page costs its
//! walk, not its walk plus its trip. Bounded: at most `DEPTH` pages kept, one walk at a time
//! whatever a client pipelines, and a page is served at most [`FRESH`] after its walk began
//! (as if the request had come that much earlier); older ones are dropped and walked again.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long after the start of its walk a page walked ahead may still be served.
pub(crate) const FRESH: Duration = Duration::from_millis(250);

/// How many pages are walked ahead of the last one served.
pub(crate) const DEPTH: usize = 2;

/// A page as walked: where the page after it starts.
pub(crate) trait Page: Send + 'static {
    /// The key to walk the next page after, if this page is full (`limit` items) and more
    /// follow.
    fn after(&self, limit: usize) -> Option<&str>;
}

/// The pages walked ahead of one source, and the one walk running.
#[derive(Debug)]
pub(crate) struct Ahead<P> {
    slot: Mutex<Slot<P>>,
    done: Condvar,
}

impl<P> Default for Ahead<P> {
    fn default() -> Self {
        Ahead {
            slot: Mutex::new(Slot {
                ready: VecDeque::new(),
                walking: None,
                queued: None,
                thread: false,
                epoch: 0,
            }),
            done: Condvar::new(),
        }
    }
}

#[derive(Debug)]
struct Slot<P> {
    /// Pages walked, oldest first, each the one after the page before it: at most `DEPTH`.
    ready: VecDeque<Ready<P>>,
    /// The walk running, and when it began.
    walking: Option<(Key, Instant)>,
    /// The walk to begin when the running one ends (or now, if none runs).
    queued: Option<Key>,
    /// Whether a thread runs the walks (`Ahead::run`): at most one.
    thread: bool,
    /// Moves on when the pages ahead no longer follow what was served: what a walk of an
    /// earlier epoch finds is dropped.
    epoch: u64,
}

/// A page to walk: the `limit` items after `after`.
#[derive(Debug, Clone)]
struct Key {
    after: String,
    limit: usize,
    epoch: u64,
}

impl Key {
    fn is(&self, after: &str, limit: usize) -> bool {
        self.after == after && self.limit == limit
    }
}

#[derive(Debug)]
struct Ready<P> {
    key: Key,
    started: Instant,
    page: P,
}

fn fresh(started: Instant, asked: Instant) -> bool {
    asked.saturating_duration_since(started) <= FRESH
}

impl<P: Page> Ahead<P> {
    fn lock(&self) -> MutexGuard<'_, Slot<P>> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The page of `limit` items after `after`, if it was walked ahead and its walk began at
    /// most [`FRESH`] before `asked`; a page found too old is dropped. If that page's walk is
    /// running (and fresh), waits for it when `wait`.
    pub(crate) fn take(&self, after: &str, limit: usize, asked: Instant, wait: bool) -> Option<P> {
        let mut slot = self.lock();
        loop {
            match slot.ready.front() {
                Some(r) if r.key.is(after, limit) => {
                    let r = slot.ready.pop_front()?;
                    return fresh(r.started, asked).then_some(r.page);
                }
                // The pages ahead follow another listing (`follow` starts again).
                Some(_) => return None,
                None => {}
            }
            let epoch = slot.epoch;
            let running = slot
                .walking
                .as_ref()
                .is_some_and(|(k, t)| k.epoch == epoch && k.is(after, limit) && fresh(*t, asked));
            if !wait || !running {
                return None;
            }
            slot = self.done.wait(slot).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Keeps the walk ahead going after `served` (a page of `limit` items was just served): if
    /// the pages ahead are not those after it, they are dropped and the walk starts again from
    /// its end. True when the caller must start a thread running [`Ahead::run`] (none runs);
    /// if it cannot, it calls [`Ahead::not_started`].
    pub(crate) fn follow(&self, served: &P, limit: usize) -> bool {
        let Some(next) = served.after(limit) else {
            return false;
        };
        let mut slot = self.lock();
        let epoch = slot.epoch;
        let current = |k: &Key| k.epoch == epoch && k.is(next, limit);
        let on_track = match slot.ready.front() {
            Some(r) => r.key.is(next, limit),
            None => {
                slot.walking.as_ref().is_some_and(|(k, _)| current(k))
                    || slot.queued.as_ref().is_some_and(current)
            }
        };
        if !on_track {
            slot.epoch = epoch.wrapping_add(1);
            slot.ready.clear();
            slot.queued = Some(Key {
                after: next.to_owned(),
                limit,
                epoch: slot.epoch,
            });
        } else if slot.queued.is_none()
            && slot.walking.as_ref().is_none_or(|(k, _)| k.epoch != epoch)
            && slot.ready.len() < DEPTH
        {
            // The walk stopped at `DEPTH` pages: one was taken, so it goes on after the last.
            slot.queued = slot
                .ready
                .back()
                .and_then(|r| r.page.after(r.key.limit))
                .map(|after| Key {
                    after: after.to_owned(),
                    limit,
                    epoch,
                });
        }
        if slot.queued.is_some() && !slot.thread {
            slot.thread = true;
            return true;
        }
        false
    }

    /// The thread [`Ahead::follow`] asked for could not be started: nothing is walked.
    pub(crate) fn not_started(&self) {
        let mut slot = self.lock();
        slot.thread = false;
        slot.queued = None;
        drop(slot);
        self.done.notify_all();
    }

    /// The walking thread: walks the queued pages (`walk(after, limit)`, `None` if it failed),
    /// each followed by the next while fewer than `DEPTH` wait, and returns when none is queued.
    pub(crate) fn run(&self, mut walk: impl FnMut(&str, usize) -> Option<P>) {
        loop {
            let (key, started) = {
                let mut slot = self.lock();
                let Some(key) = slot.queued.take() else {
                    slot.thread = false;
                    break;
                };
                let started = Instant::now();
                slot.walking = Some((key.clone(), started));
                (key, started)
            };
            // A panic in a walk leaves no page and does not end the thread's duty to clear
            // `thread`.
            let page = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                walk(&key.after, key.limit)
            }))
            .ok()
            .flatten();
            let mut slot = self.lock();
            slot.walking = None;
            if let Some(page) = page
                && key.epoch == slot.epoch
            {
                let next = page.after(key.limit).map(str::to_owned);
                let limit = key.limit;
                slot.ready.push_back(Ready { key, started, page });
                if slot.ready.len() < DEPTH
                    && slot.queued.is_none()
                    && let Some(after) = next
                {
                    let epoch = slot.epoch;
                    slot.queued = Some(Key {
                        after,
                        limit,
                        epoch,
                    });
                }
            }
            drop(slot);
            self.done.notify_all();
        }
        self.done.notify_all();
    }
}

#[cfg(test)]
impl<P: Page> Ahead<P> {
    /// Waits until no walk runs or is queued.
    pub(crate) fn wait_idle(&self) {
        let mut slot = self.lock();
        while slot.thread {
            slot = self.done.wait(slot).unwrap();
        }
    }

    /// Makes every page walked ahead look `age` old.
    pub(crate) fn age(&self, age: Duration) {
        let mut slot = self.lock();
        for r in &mut slot.ready {
            r.started = Instant::now().checked_sub(age).expect("a recent instant");
        }
    }

    /// The keys of the pages walked ahead, oldest first.
    pub(crate) fn ready(&self) -> Vec<String> {
        self.lock()
            .ready
            .iter()
            .map(|r| r.key.after.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page of a listing of the numbers 0..`END`: the numbers after `after`.
    #[derive(Debug, PartialEq)]
    struct Numbers(Vec<u32>);

    const END: u32 = 10;

    impl Page for Numbers {
        fn after(&self, limit: usize) -> Option<&str> {
            let last = *self.0.last()?;
            (self.0.len() == limit && last + 1 < END).then(|| NAMES[last as usize])
        }
    }

    const NAMES: [&str; END as usize] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

    fn walk(walked: &mut Vec<String>) -> impl FnMut(&str, usize) -> Option<Numbers> + '_ {
        move |after, limit| {
            walked.push(after.to_owned());
            let from: u32 = after.parse::<u32>().ok()? + 1;
            Some(Numbers((from..END).take(limit).collect()))
        }
    }

    fn page(of: &[u32]) -> Numbers {
        Numbers(of.to_vec())
    }

    /// An `Ahead` that served `served` (pages of `limit`) and walked what followed, and the
    /// keys it walked after.
    fn ahead_of(served: &[u32], limit: usize) -> (Ahead<Numbers>, Vec<String>) {
        let ahead = Ahead::default();
        let mut walked = Vec::new();
        assert!(ahead.follow(&page(served), limit), "a thread is needed");
        ahead.run(walk(&mut walked));
        (ahead, walked)
    }

    /// Served page 0-1: pages 2-3 and 4-5 are walked, no more until one is taken; taking 2-3
    /// walks 6-7 next. The last page is followed by nothing.
    #[test]
    fn walks_depth_pages_ahead_and_goes_on_as_they_are_taken() {
        let ahead = Ahead::default();
        let mut walked = Vec::new();
        assert!(ahead.follow(&page(&[0, 1]), 2), "a thread is needed");
        assert!(!ahead.follow(&page(&[0, 1]), 2), "one is already asked for");
        ahead.run(walk(&mut walked));
        assert_eq!(walked, ["1", "3"]);
        assert_eq!(ahead.ready(), ["1", "3"]);
        let now = Instant::now();
        assert_eq!(ahead.take("1", 2, now, true), Some(page(&[2, 3])));
        assert!(ahead.follow(&page(&[2, 3]), 2));
        ahead.run(walk(&mut walked));
        assert_eq!(walked, ["1", "3", "5"]);
        assert_eq!(ahead.ready(), ["3", "5"]);
        for (after, want) in [("3", [4, 5]), ("5", [6, 7])] {
            assert_eq!(ahead.take(after, 2, now, false), Some(page(&want)));
            if ahead.follow(&page(&want), 2) {
                ahead.run(walk(&mut walked));
            }
        }
        // 8-9 is the last page: walked, nothing after it.
        assert_eq!(walked, ["1", "3", "5", "7"]);
        assert_eq!(ahead.take("7", 2, now, false), Some(page(&[8, 9])));
        assert!(!ahead.follow(&page(&[8, 9]), 2));
        assert!(ahead.ready().is_empty());
    }

    /// A page served that the pages ahead do not follow (a listing begun again, another
    /// client, another page size) drops them and walks after it instead.
    #[test]
    fn another_listing_starts_the_walk_again() {
        let (ahead, mut walked) = ahead_of(&[4, 5], 2);
        assert_eq!(ahead.ready(), ["5", "7"]);
        let now = Instant::now();
        assert_eq!(ahead.take("1", 2, now, false), None, "not walked");
        assert_eq!(ahead.ready(), ["5", "7"], "kept until a page is served");
        assert!(ahead.follow(&page(&[0, 1]), 2));
        assert!(ahead.ready().is_empty());
        ahead.run(walk(&mut walked));
        assert_eq!(ahead.ready(), ["1", "3"]);
        // Another page size: walked again.
        assert_eq!(ahead.take("1", 3, now, false), None);
        assert!(ahead.follow(&page(&[0, 1, 2]), 3));
        ahead.run(walk(&mut walked));
        assert_eq!(ahead.ready(), ["2", "5"]);
        assert_eq!(walked, ["5", "7", "1", "3", "2", "5"]);
    }

    /// A page asked for more than `FRESH` after its walk began is dropped, not served; the
    /// pages after it are still served while fresh.
    #[test]
    fn pages_too_old_are_dropped() {
        let (ahead, mut walked) = ahead_of(&[0, 1], 2);
        let later = Instant::now() + FRESH * 2;
        assert_eq!(ahead.take("1", 2, later, true), None);
        assert_eq!(ahead.ready(), ["3"]);
        // Page 2-3 walked again by the caller, then served: 4-5 is still the next.
        assert!(ahead.follow(&page(&[2, 3]), 2));
        ahead.run(walk(&mut walked));
        assert_eq!(ahead.ready(), ["3", "5"]);
        ahead.age(FRESH * 2);
        assert_eq!(ahead.take("3", 2, Instant::now(), false), None);
    }

    /// A walk that panics or fails leaves no page, and the thread's end is recorded (the next
    /// page served asks for a thread again).
    #[test]
    fn a_failed_walk_leaves_nothing() {
        let ahead = Ahead::<Numbers>::default();
        assert!(ahead.follow(&page(&[0, 1]), 2));
        ahead.run(|_, _| panic!("a walk went wrong"));
        assert!(ahead.ready().is_empty());
        assert!(ahead.follow(&page(&[0, 1]), 2), "the thread ended");
        ahead.run(|_, _| None);
        assert!(ahead.ready().is_empty());
        assert!(ahead.follow(&page(&[0, 1]), 2));
        ahead.not_started();
        assert!(ahead.follow(&page(&[0, 1]), 2), "nothing runs");
    }

    /// A caller waits for the page being walked, on another thread, and gets it.
    #[test]
    fn a_page_being_walked_is_waited_for() {
        let ahead = std::sync::Arc::new(Ahead::default());
        assert!(ahead.follow(&page(&[0, 1]), 2));
        let (started, go) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
        let walker = {
            let ahead = ahead.clone();
            std::thread::spawn(move || {
                ahead.run(|after, limit| {
                    started.0.send(()).ok()?;
                    go.1.recv().ok()?;
                    let from: u32 = after.parse::<u32>().ok()? + 1;
                    Some(Numbers((from..END).take(limit).collect()))
                })
            })
        };
        started.1.recv().unwrap();
        let taker = {
            let ahead = ahead.clone();
            std::thread::spawn(move || ahead.take("1", 2, Instant::now(), true))
        };
        go.0.send(()).unwrap();
        assert_eq!(taker.join().unwrap(), Some(page(&[2, 3])));
        // The walk after it goes on; let it end (and the one after that fail).
        started.1.recv().unwrap();
        go.0.send(()).unwrap();
        drop(go.0);
        walker.join().unwrap();
        assert_eq!(ahead.ready(), ["3"]);
    }
}
