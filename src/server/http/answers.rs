//! The bytes HTTP answers may hold at once, all clients together ([`ANSWER_BUDGET`]): what
//! stdio's per-session budget (`transport::reserve`) is for one client, for the many clients of
//! `serve --http`. A client that asks for large answers and never reads them would otherwise
//! hold each one in the server until its connection closes (200 connections each reading a
//! 5 MiB file and never taking the answer: 1.1 GiB).
//!
//! A request that may produce a large answer reserves before it starts (`super::super::reserve`,
//! the same call sites as on stdio); reservations wait while the answers held exceed the
//! budget, in order for each client address, the addresses taking turns: a client with many
//! answers waiting (or never read) delays its own next ones, not another client's, which gets
//! the next room that comes back. Handshake-era sessions hold their answers in their streams
//! (`sessions.rs`), counted here too. When the answer is made its reservation becomes its exact size (it may go
//! over: an answer already made is never held back, so nothing holds room while it waits for
//! more), and the room comes back when the answer has been sent, or its connection dropped (a
//! connection whose client takes nothing for `idle_timeout` is dropped: `conns.rs`).
//!
//! While reservations wait, the budget is *squeezed*: a client that has taken nothing of its
//! answer for [`SQUEEZED`] is dropped then, not after the whole `idle_timeout`, so clients that
//! never read delay the others' answers by about a second per budget's worth of them rather
//! than by `idle_timeout` (75 s by default). `conns::Watched` asks [`Budget::pressed`] and is
//! woken by [`Budget::squeezed`] when the waiting begins.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;

use crate::server::shared::lock;

/// Answers held at once, all connections together (bytes).
pub(super) const ANSWER_BUDGET: usize = 32 * 1024 * 1024;

/// How long a client may take nothing of its answer while other answers wait for room (or
/// `idle_timeout`, when that is shorter).
pub(super) const SQUEEZED: Duration = Duration::from_secs(1);

/// The room answers take, shared by every request.
pub(super) struct Budget {
    cap: usize,
    st: Mutex<State>,
    /// Woken when reservations begin to wait (the queue was empty).
    squeeze: Arc<Notify>,
}

struct State {
    used: usize,
    next: u64,
    /// Reservations waiting, in order, per client address (`None`: not known).
    queues: HashMap<Option<IpAddr>, VecDeque<Waiter>>,
    /// The addresses with reservations waiting, in the order they take turns.
    turns: VecDeque<Option<IpAddr>>,
}

impl State {
    fn waiting(&self) -> bool {
        !self.turns.is_empty()
    }
}

struct Waiter {
    id: u64,
    need: usize,
    tx: tokio::sync::oneshot::Sender<()>,
}

impl Budget {
    pub(super) fn new(cap: usize) -> Arc<Budget> {
        Arc::new(Budget {
            cap,
            st: Mutex::new(State {
                used: 0,
                next: 0,
                queues: HashMap::new(),
                turns: VecDeque::new(),
            }),
            squeeze: Arc::new(Notify::new()),
        })
    }

    /// Whether reservations are waiting for room.
    pub(super) fn pressed(&self) -> bool {
        lock(&self.st).waiting()
    }

    /// Ready when reservations begin to wait. Poll it (which registers it) before asking
    /// [`Budget::pressed`], so that a squeeze beginning in between is not missed.
    pub(super) fn squeezed(&self) -> OwnedNotified {
        self.squeeze.clone().notified_owned()
    }

    /// Grants waiting reservations while they fit (the first always fits when nothing is
    /// held): the first of the address whose turn it is, which then goes last.
    fn grant(st: &mut State, cap: usize) {
        while let Some(&client) = st.turns.front() {
            let queue = st
                .queues
                .get_mut(&client)
                .expect("an address with a turn has a queue");
            let need = queue
                .front()
                .expect("a queue with a turn is not empty")
                .need;
            if st.used > 0 && st.used + need > cap {
                return;
            }
            let w = queue.pop_front().expect("a front");
            let emptied = queue.is_empty();
            st.turns.pop_front();
            if emptied {
                st.queues.remove(&client);
            } else {
                st.turns.push_back(client);
            }
            st.used += w.need;
            if w.tx.send(()).is_err() {
                // Its request went away meanwhile.
                st.used -= w.need;
            }
        }
    }

    /// Takes `need` bytes (at most the budget) for `client`, waiting while the budget is spent
    /// (see the module doc). Dropping the future gives up its place (or what it was granted).
    async fn take(self: &Arc<Budget>, need: usize, client: Option<IpAddr>) -> usize {
        let need = need.min(self.cap);
        let (id, rx) = {
            let mut st = lock(&self.st);
            if !st.waiting() && (st.used == 0 || st.used + need <= self.cap) {
                st.used += need;
                return need;
            }
            let (tx, rx) = tokio::sync::oneshot::channel();
            let id = st.next;
            st.next += 1;
            if !st.waiting() {
                // Only when the waiting begins: stalled connections then look again.
                self.squeeze.notify_waiters();
            }
            let queue = st.queues.entry(client).or_default();
            if queue.is_empty() {
                st.turns.push_back(client);
            }
            st.queues
                .get_mut(&client)
                .expect("made above")
                .push_back(Waiter { id, need, tx });
            (id, rx)
        };
        let mut place = Place {
            budget: self,
            id,
            client,
            need,
            rx: Some(rx),
        };
        let rx = place.rx.as_mut().expect("set above");
        // The sender lives in the queue until it is granted: an error cannot happen while
        // `place` is alive, but if it did the room was never taken.
        let granted = rx.await.is_ok();
        place.rx = None;
        if granted { need } else { 0 }
    }

    pub(super) fn give(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut st = lock(&self.st);
        st.used = st.used.saturating_sub(bytes);
        Budget::grant(&mut st, self.cap);
    }

    pub(super) fn add(&self, bytes: usize) {
        lock(&self.st).used += bytes;
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(super) fn used(&self) -> usize {
        lock(&self.st).used
    }
}

/// A place in the queue; dropped before it was granted, it leaves the queue (or gives back
/// what was granted in the meantime) and lets the next one in.
struct Place<'a> {
    budget: &'a Arc<Budget>,
    id: u64,
    client: Option<IpAddr>,
    need: usize,
    rx: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else {
            return;
        };
        let mut st = lock(&self.budget.st);
        let mut found = false;
        if let Some(queue) = st.queues.get_mut(&self.client)
            && let Some(at) = queue.iter().position(|w| w.id == self.id)
        {
            queue.remove(at);
            found = true;
            if queue.is_empty() {
                st.queues.remove(&self.client);
                st.turns.retain(|c| *c != self.client);
            }
        }
        if !found && rx.try_recv().is_ok() {
            st.used = st.used.saturating_sub(self.need);
        }
        Budget::grant(&mut st, self.budget.cap);
    }
}

/// One request's share of the budget, put in its extensions by the front (and so in rmcp's
/// `http::request::Parts`, where handlers find it); given back when its answer has been sent.
#[derive(Clone)]
pub(crate) struct Answer(Arc<Share>);

struct Share {
    budget: Arc<Budget>,
    client: Option<IpAddr>,
    held: Mutex<Held>,
}

#[derive(Clone, Copy)]
enum Held {
    Bytes(usize),
    /// The answer was sent (or dropped): nothing more is taken.
    Done,
}

impl Answer {
    pub(super) fn new(budget: &Arc<Budget>, client: Option<IpAddr>) -> Answer {
        Answer(Arc::new(Share {
            budget: budget.clone(),
            client,
            held: Mutex::new(Held::Bytes(0)),
        }))
    }

    /// Reserves `bytes` for the answer being made, waiting while the budget is spent. A
    /// request that already holds room takes more without waiting (it never holds room while
    /// it waits).
    pub(crate) async fn reserve(&self, bytes: usize) {
        let holds = match *lock(&self.0.held) {
            Held::Done => return,
            Held::Bytes(n) => n,
        };
        let got = if holds > 0 {
            self.0.budget.add(bytes);
            bytes
        } else {
            self.0.budget.take(bytes, self.0.client).await
        };
        let mut held = lock(&self.0.held);
        match &mut *held {
            Held::Bytes(n) => *n += got,
            // Sent while this waited (the request went away): give it back.
            Held::Done => self.0.budget.give(got),
        }
    }

    /// The answer is made and weighs `bytes`: that is what it holds until it is sent.
    pub(super) fn settle(&self, bytes: usize) {
        let mut held = lock(&self.0.held);
        if let Held::Bytes(n) = &mut *held {
            if bytes > *n {
                self.0.budget.add(bytes - *n);
            } else {
                self.0.budget.give(*n - bytes);
            }
            *n = bytes;
        }
    }

    /// The answer was sent, or its request dropped: its room comes back.
    pub(super) fn done(&self) {
        let mut held = lock(&self.0.held);
        if let Held::Bytes(n) = std::mem::replace(&mut *held, Held::Done) {
            self.0.budget.give(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;

    /// Polls `f` once: whether it is still waiting.
    fn pending<F: Future>(f: Pin<&mut F>) -> bool {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        f.poll(&mut cx).is_pending()
    }

    #[tokio::test]
    async fn reservations_wait_in_order_and_settle_to_the_answer() {
        let b = Budget::new(100);
        let first = Answer::new(&b, None);
        first.reserve(60).await;
        let second = Answer::new(&b, None);
        let third = Answer::new(&b, None);
        let mut s = Box::pin(second.reserve(60));
        assert!(pending(s.as_mut()), "60 + 60 > 100");
        // A small one behind it waits too (in order), though it would fit.
        let mut t = Box::pin(third.reserve(10));
        assert!(pending(t.as_mut()));
        // The first answer weighs 30: the second fits now, then the third.
        first.settle(30);
        s.await;
        t.await;
        assert_eq!(b.used(), 100);
        // An answer may weigh more than it reserved: it is counted, not held back.
        second.settle(200);
        assert_eq!(b.used(), 240);
        let fourth = Answer::new(&b, None);
        let mut f = Box::pin(fourth.reserve(1));
        assert!(pending(f.as_mut()));
        for a in [&first, &second, &third] {
            a.done();
        }
        f.await;
        assert_eq!(b.used(), 1);
        fourth.done();
        assert_eq!(b.used(), 0);
    }

    #[tokio::test]
    async fn a_reservation_given_up_while_waiting_leaves_no_trace() {
        let b = Budget::new(100);
        let first = Answer::new(&b, None);
        first.reserve(100).await;
        let second = Answer::new(&b, None);
        let mut s = Box::pin(second.reserve(50));
        assert!(pending(s.as_mut()));
        drop(s);
        let third = Answer::new(&b, None);
        let mut t = Box::pin(third.reserve(50));
        assert!(pending(t.as_mut()));
        first.done();
        t.await;
        assert_eq!(b.used(), 50, "the second's place was given up");
        // Done before its reservation: later reservations take nothing.
        third.done();
        third.reserve(10).await;
        assert_eq!(b.used(), 0);
    }

    #[tokio::test]
    async fn client_addresses_take_turns() {
        let b = Budget::new(100);
        let many: IpAddr = "127.0.0.2".parse().unwrap();
        let one: IpAddr = "127.0.0.1".parse().unwrap();
        let held = Answer::new(&b, Some(many));
        held.reserve(100).await;
        // The first address queues ten reservations, then the second one.
        let queued: Vec<Answer> = (0..10).map(|_| Answer::new(&b, Some(many))).collect();
        let mut waits: Vec<_> = queued.iter().map(|a| Box::pin(a.reserve(60))).collect();
        for w in &mut waits {
            assert!(pending(w.as_mut()));
        }
        let other = Answer::new(&b, Some(one));
        let mut theirs = Box::pin(other.reserve(60));
        assert!(pending(theirs.as_mut()));
        // Room comes back: the first address had its turn (the first of its ten), then the
        // other address's comes before its nine others.
        held.done();
        waits.remove(0).await;
        assert!(pending(waits[0].as_mut()));
        assert!(pending(theirs.as_mut()), "60 + 60 > 100");
        queued[0].done();
        theirs.await;
        assert!(pending(waits[0].as_mut()));
        other.done();
        waits.remove(0).await;
    }

    #[tokio::test]
    async fn more_than_the_budget_is_granted_when_nothing_is_held() {
        let b = Budget::new(100);
        let a = Answer::new(&b, None);
        a.reserve(1_000).await;
        assert_eq!(b.used(), 100, "a reservation takes at most the budget");
        a.settle(1_000);
        a.done();
        assert_eq!(b.used(), 0);
    }
}
