//! What the threads of one stdio session share: the scheduler's `State` behind one lock, and the
//! wake-ups between them (the reader thread, rmcp's loop and send futures, the writer thread).
//! Also the answer budget as rmcp's handlers see it ([`reserve`]).

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use rmcp::service::{RequestContext, RoleServer};

use super::direct::Hook;
use super::state::{RecState, State, Waiter};
use super::writer::{Sink, write_held};
use super::{BUDGET, INPUT_CAP, OUTPUT_CAP};

/// The state shared by the reader thread, rmcp's loop, send futures and the writer thread.
pub(super) struct Session {
    pub state: Mutex<State>,
    /// stdout (see `writer::Sink`).
    pub sink: Mutex<Sink>,
    /// Wakes `receive`: something to hand over, a slot freed, the end of input.
    pub ready: tokio::sync::Notify,
    /// Wakes the reader thread: room in the input or output queue.
    pub room: Condvar,
    /// Wakes the writer thread: something to write, or the end.
    pub writable: Condvar,
    /// Wakes notifications waiting for room in the output queue.
    pub out_room: tokio::sync::Notify,
    pub next_id: AtomicU64,
    /// The answer to `initialize` is queued (a session before 2026-07-28): the reader may
    /// answer requests itself (`direct`).
    pub direct_ok: AtomicBool,
    /// What the reader may answer itself besides `ping` (`direct::hook`), and the runtime
    /// that finishes what it cannot answer at once.
    pub direct: OnceLock<(Hook, tokio::runtime::Handle)>,
}

impl Session {
    pub fn new(sink: Mutex<Sink>) -> Session {
        Session {
            state: Mutex::new(State::new()),
            sink,
            ready: tokio::sync::Notify::new(),
            room: Condvar::new(),
            writable: Condvar::new(),
            out_room: tokio::sync::Notify::new(),
            next_id: AtomicU64::new(1),
            direct_ok: AtomicBool::new(false),
            direct: OnceLock::new(),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// After something was released (`st` still locked): wakes whoever may go on. Each wake-up
    /// is a system call, so only those that wait are woken.
    pub fn wake(&self, st: &State) {
        if !st.work.is_empty() || !st.control.is_empty() || st.eof {
            self.ready.notify_one();
        }
        if st.reader_waiting {
            self.room.notify_all();
        }
        self.out_room.notify_waiters();
    }

    /// Sends what the reader queued without waking the writer (`State::held`): writes it here
    /// when the writer sleeps (`writer::write_held`), else wakes it. Whether there was any.
    pub fn flush_held(&self) -> bool {
        let mut st = self.lock();
        if !st.held {
            return false;
        }
        st.held = false;
        if let Err(st) = write_held(self, st) {
            st.wake_writer(&self.writable);
        }
        true
    }

    /// The reader waits here until there is room to read one more line.
    pub fn wait_for_room(&self) {
        let mut st = self.lock();
        if st.held && st.out_bytes >= OUTPUT_CAP {
            st.held = false;
            st.wake_writer(&self.writable);
        }
        while !st.closed
            && (st.input_bytes >= INPUT_CAP || (st.out_bytes >= OUTPUT_CAP && !st.out_closed))
        {
            st.reader_waiting = true;
            st = self.room.wait(st).unwrap_or_else(|p| p.into_inner());
            st.reader_waiting = false;
        }
    }
}

/// Put in each request's extensions: which session and which request, for [`reserve`].
#[derive(Clone)]
pub(super) struct Ticket {
    pub session: Arc<Session>,
    pub id: u64,
}

/// Reserves `bytes` of the session's answer budget for the request of `cx`, waiting (in order
/// of asking) while the budget is spent; released when the request's answer has been written.
/// Call it before producing a large answer. Returns at once for a request this transport did
/// not hand over, or one already cancelled.
pub async fn reserve(cx: &RequestContext<RoleServer>, bytes: usize) {
    if let Some(ticket) = cx.extensions.get::<Ticket>() {
        reserve_with(ticket.clone(), bytes).await;
    }
}

pub(super) async fn reserve_with(ticket: Ticket, bytes: usize) {
    let waiting = {
        let mut st = ticket.session.lock();
        let st = &mut *st;
        let need = bytes.min(BUDGET);
        let free = st.waiters.is_empty() && st.used() + need <= BUDGET;
        match st.records.get_mut(&ticket.id) {
            Some(r) if r.state == RecState::Running && free => {
                r.held += need;
                st.reserved += need;
                return;
            }
            Some(r) if r.state == RecState::Running => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                st.waiters.push_back(Waiter {
                    record: ticket.id,
                    need,
                    tx,
                });
                rx
            }
            _ => return,
        }
    };
    // Granted, or dropped because the request ended: either way there is nothing left to wait.
    let _ = waiting.await;
}

/// Makes the reservation of the request of `cx` at least `total` bytes (at most the budget),
/// for an answer found to be large once the request runs (`providers::admit`). Returns at once
/// for a request this transport did not hand over.
pub async fn reserve_total(cx: &RequestContext<RoleServer>, total: usize) {
    if let Some(ticket) = cx.extensions.get::<Ticket>() {
        reserve_total_with(ticket.clone(), total).await;
    }
}

/// [`reserve_total`] for the request of `ticket`. What it lacks is taken at once when the
/// budget has room and nobody waits; otherwise the request gives back what it holds and waits
/// (in order) for the whole. So no request holds room while it waits for more: two reads each
/// holding their first 3 MiB and waiting for the rest of a full budget would wait for ever.
pub(super) async fn reserve_total_with(ticket: Ticket, total: usize) {
    let waiting = {
        let mut st = ticket.session.lock();
        let st = &mut *st;
        let total = total.min(BUDGET);
        let held = match st.records.get(&ticket.id) {
            Some(r) if r.state == RecState::Running => r.held,
            _ => return,
        };
        if held >= total {
            return;
        }
        let free = st.waiters.is_empty() && st.used() + (total - held) <= BUDGET;
        let Some(r) = st.records.get_mut(&ticket.id) else {
            return;
        };
        if free {
            r.held = total;
            st.reserved += total - held;
            return;
        }
        r.held = 0;
        st.reserved -= held;
        let (tx, rx) = tokio::sync::oneshot::channel();
        st.waiters.push_back(Waiter {
            record: ticket.id,
            need: total,
            tx,
        });
        // What it gave back may let the ones before it in (or, when nothing else is held, it).
        st.grant();
        rx
    };
    let _ = waiting.await;
}
