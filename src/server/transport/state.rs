//! The scheduler: what the reader parsed, queued by class until rmcp may take it; the requests
//! rmcp runs (their work slots and reserved bytes) until their answers are written; batches
//! until their last answer; and the output queue with its byte count. All of it is one `State`
//! behind the session's lock; the threads only call its methods (`session.rs`).
//!
//! Invariants (tests in `tests.rs`): at most [`MAX_WORK`] work requests are handed over and
//! not written whatever their ids; control requests never wait for a work slot; a slot and a
//! reservation are freed when the answer is written or the request cancelled; reservations are
//! granted in order; a batch goes out as one line once its last member is done.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar};

use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::service::{RoleServer, RxJsonRpcMessage};
use tokio_util::sync::CancellationToken;

use super::parse::{Class, ClientId, IdKey, Parsed, error_line};
use super::{
    BATCH_ANSWER_CAP, BUDGET, MAX_CONTROL, MAX_LISTENS, MAX_OPEN_BATCHES, MAX_WORK, MESSAGE_COST,
    MIB, OUTPUT_CAP,
};

/// Where a request handed to rmcp is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RecState {
    /// Being computed.
    Running,
    /// Its answer was produced (it waits for stdout, or in its batch).
    Answered,
    /// The client cancelled it: its slot and reservation are free already, and rmcp will drop
    /// its answer (or we do).
    Cancelled,
}

/// A request handed to rmcp.
pub(super) struct Record {
    pub id: ClientId,
    pub class: Class,
    pub batch: Option<u64>,
    /// Bytes of the budget it reserved.
    pub held: usize,
    pub state: RecState,
    /// A request the transport runs itself (`direct`), still running: cancelled through this.
    pub stop: Option<CancellationToken>,
}

/// A message read and not yet handed to rmcp.
pub(super) struct Queued {
    /// Arrival order, across both queues.
    pub seq: u64,
    pub cost: usize,
    pub item: Item,
}

pub(super) enum Item {
    Request {
        msg: Box<RxJsonRpcMessage<RoleServer>>,
        internal: u64,
        id: ClientId,
        class: Class,
        batch: Option<u64>,
    },
    Notification(Box<RxJsonRpcMessage<RoleServer>>),
    /// `notifications/cancelled` for a request rmcp runs, by its internal id.
    Cancel(Box<RxJsonRpcMessage<RoleServer>>, u64),
    Response(Box<RxJsonRpcMessage<RoleServer>>),
}

/// A batch under way: its answers so far, and how many of its requests are not done.
#[derive(Default)]
pub(super) struct Batch {
    pub pending: usize,
    /// The answers so far, comma-separated.
    pub answers: Vec<u8>,
    /// Whether one of its requests was handed to rmcp (it counts among the open batches).
    pub opened: bool,
    /// Its members are still being sorted (`Session::take_line`): an answer written by us
    /// (`[1,2,3]` is three errors) does not end it yet.
    pub filling: bool,
}

/// One line for stdout: `bytes` (with its newline), or with `shared`: `bytes`, the shared
/// result, then [`SHARED_TAIL`].
pub(super) struct Out {
    pub bytes: Vec<u8>,
    /// A result kept once for every answer that gives it (a `tools/list` page, `direct.rs`):
    /// a thousand pipelined listings hold one copy. Buys the peak RSS of 1 000 pipelined
    /// `tools/list` of a 202-tool manifest: 28–30 → 20 MiB (BENCHMARKS.md, issue 30).
    pub shared: Option<Arc<str>>,
    /// The request whose answer this is: released once written.
    pub release: Option<u64>,
}

/// What ends a line whose result is shared: the envelope's `}` and the newline.
pub(super) const SHARED_TAIL: &[u8] = b"}\n";

impl Out {
    /// The bytes the line holds (and counts in the output queue: a shared result whole).
    pub fn len(&self) -> usize {
        self.bytes.len()
            + self
                .shared
                .as_ref()
                .map_or(0, |r| r.len() + SHARED_TAIL.len())
    }

    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        w.write_all(&self.bytes)?;
        if let Some(result) = &self.shared {
            w.write_all(result.as_bytes())?;
            w.write_all(SHARED_TAIL)?;
        }
        Ok(())
    }
}

/// A [`reserve`] waiting for budget.
pub(super) struct Waiter {
    pub record: u64,
    pub need: usize,
    pub tx: tokio::sync::oneshot::Sender<()>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lifecycle {
    /// rmcp waits for `initialize` or a first stateless-era request; `pending` is the request
    /// last handed to it (and whether it was `initialize`).
    Before {
        pending: Option<(u64, bool)>,
    },
    Started,
}

pub(super) struct State {
    pub seq: u64,
    pub work: VecDeque<Queued>,
    pub control: VecDeque<Queued>,
    pub input_bytes: usize,
    /// The input has ended.
    pub eof: bool,
    /// The transport is gone: the reader stops.
    pub closed: bool,
    pub lifecycle: Lifecycle,
    pub records: HashMap<u64, Record>,
    pub work_used: usize,
    pub control_used: usize,
    pub listens: usize,
    /// Requests whose cancellation was handed to rmcp: gone at the next `receive`.
    pub cancels_handed: Vec<u64>,
    pub batches: HashMap<u64, Batch>,
    pub next_batch: u64,
    pub open_batches: usize,
    pub out: VecDeque<Out>,
    pub out_bytes: usize,
    /// stdout failed: what is sent is dropped.
    pub out_closed: bool,
    /// The reader thread waits for room (`Session::room`).
    pub reader_waiting: bool,
    /// The writer thread waits for something to write (`Session::writable`).
    pub writer_waiting: bool,
    /// The reader queued answers without waking the writer (`Session::flush_held`).
    pub held: bool,
    /// `Output::finish`: the writer ends once the queue is empty.
    pub finishing: bool,
    /// The session started with `initialize` (its answer was a result) and a version before
    /// 2026-07-28: the reader may answer requests itself (`direct`).
    pub initialized: bool,
    /// Requests the transport runs itself that are not done (`Record::stop`).
    pub direct_running: usize,
    pub reserved: usize,
    pub waiters: VecDeque<Waiter>,
}

impl State {
    pub fn new() -> State {
        State {
            seq: 0,
            work: VecDeque::new(),
            control: VecDeque::new(),
            input_bytes: 0,
            eof: false,
            closed: false,
            lifecycle: Lifecycle::Before { pending: None },
            records: HashMap::new(),
            work_used: 0,
            control_used: 0,
            listens: 0,
            cancels_handed: Vec::new(),
            batches: HashMap::new(),
            next_batch: 0,
            open_batches: 0,
            out: VecDeque::new(),
            out_bytes: 0,
            out_closed: false,
            reader_waiting: false,
            writer_waiting: false,
            held: false,
            finishing: false,
            initialized: false,
            direct_running: 0,
            reserved: 0,
            waiters: VecDeque::new(),
        }
    }

    /// Bytes of the budget in use.
    pub fn used(&self) -> usize {
        self.reserved + self.out_bytes
    }

    /// Queues what the reader parsed (or answers it, or cancels).
    pub fn apply(&mut self, parsed: Parsed, batch: Option<u64>, cost: usize, writable: &Condvar) {
        let (item, work) = match parsed {
            Parsed::Nothing => return,
            Parsed::Reply(text) => match batch {
                Some(b) => return self.batch_answer(b, text.into_bytes(), writable),
                None => return self.reply(text, writable),
            },
            Parsed::Cancel { key, reason } => return self.cancel(&key, reason, writable),
            Parsed::Request {
                msg,
                internal,
                id,
                class,
            } => {
                let work = class == Class::Work;
                let item = Item::Request {
                    msg,
                    internal,
                    id,
                    class,
                    batch,
                };
                (item, work)
            }
            Parsed::Notification(msg) => (Item::Notification(msg), false),
            Parsed::Response(msg) => (Item::Response(msg), false),
        };
        self.push(item, work, cost);
    }

    pub fn push(&mut self, item: Item, work: bool, cost: usize) {
        if self.closed {
            return;
        }
        self.seq += 1;
        self.input_bytes += cost;
        let q = Queued {
            seq: self.seq,
            cost,
            item,
        };
        if work {
            self.work.push_back(q);
        } else {
            self.control.push_back(q);
        }
    }

    /// An answer written by us (not rmcp's): straight to the output queue.
    pub fn reply(&mut self, text: String, writable: &Condvar) {
        let mut bytes = text.into_bytes();
        bytes.push(b'\n');
        self.enqueue(Out {
            bytes,
            shared: None,
            release: None,
        });
        self.wake_writer(writable);
    }

    /// Wakes the writer thread if it waits for something to write.
    pub fn wake_writer(&self, writable: &Condvar) {
        if self.writer_waiting {
            writable.notify_one();
        }
    }

    pub fn enqueue(&mut self, out: Out) {
        if self.out_closed {
            if let Some(id) = out.release {
                self.release(id);
            }
            return;
        }
        self.out_bytes += out.len();
        self.out.push_back(out);
    }

    /// The next message for rmcp, if one may go now. Control messages never wait for work
    /// slots; otherwise arrival order is kept.
    pub fn pick(&mut self) -> Option<(Box<RxJsonRpcMessage<RoleServer>>, Option<u64>)> {
        // rmcp has processed every cancellation handed to it before this call, so the answers
        // of those requests will never come: forget them.
        for id in std::mem::take(&mut self.cancels_handed) {
            self.records.remove(&id);
        }
        // A request handed over before the session started and not answered since: rmcp
        // runs it inside the session, which has started.
        if let Lifecycle::Before { pending: Some(_) } = self.lifecycle {
            self.lifecycle = Lifecycle::Started;
        }
        loop {
            let work = self.work.front().is_some_and(|q| self.may_start(q));
            let control = self.control.front().is_some_and(|q| self.may_start(q));
            let from_work = match (work, control) {
                (true, true) => self.work.front()?.seq < self.control.front()?.seq,
                (true, false) => true,
                (false, true) => false,
                (false, false) => return None,
            };
            let q = if from_work {
                self.work.pop_front()?
            } else {
                self.control.pop_front()?
            };
            self.input_bytes -= q.cost;
            if let Some(handed) = self.hand(q.item) {
                return Some(handed);
            }
        }
    }

    pub fn may_start(&self, q: &Queued) -> bool {
        match &q.item {
            Item::Request {
                class: Class::Work,
                batch,
                ..
            } => {
                let batch_ok = match batch.and_then(|b| self.batches.get(&b)) {
                    Some(b) if !b.opened => self.open_batches < MAX_OPEN_BATCHES,
                    _ => true,
                };
                self.work_used < MAX_WORK && self.out_bytes < OUTPUT_CAP && batch_ok
            }
            Item::Request {
                class: Class::Control,
                ..
            } => self.control_used < MAX_CONTROL,
            _ => true,
        }
    }

    /// Hands one message over (or drops it: before the session starts, only requests go).
    pub fn hand(&mut self, item: Item) -> Option<(Box<RxJsonRpcMessage<RoleServer>>, Option<u64>)> {
        let started = self.lifecycle == Lifecycle::Started;
        match item {
            Item::Request {
                msg,
                internal,
                id,
                class,
                batch,
            } => {
                if class == Class::Listen && self.listens >= MAX_LISTENS {
                    let text = error_line(
                        &id,
                        -32000,
                        &format!(
                            "too many open subscriptions/listen streams ({MAX_LISTENS}): cancel one first"
                        ),
                    );
                    let mut bytes = text.into_bytes();
                    bytes.push(b'\n');
                    self.enqueue(Out {
                        bytes,
                        shared: None,
                        release: None,
                    });
                    return None;
                }
                match class {
                    Class::Work => self.work_used += 1,
                    Class::Control => self.control_used += 1,
                    Class::Listen => self.listens += 1,
                }
                if let Some(b) = batch.and_then(|b| self.batches.get_mut(&b))
                    && !b.opened
                {
                    b.opened = true;
                    self.open_batches += 1;
                }
                if let Lifecycle::Before { .. } = self.lifecycle {
                    let init = matches!(
                        &*msg,
                        JsonRpcMessage::Request(r)
                            if matches!(r.request, ClientRequest::InitializeRequest(_))
                    );
                    self.lifecycle = Lifecycle::Before {
                        pending: Some((internal, init)),
                    };
                }
                self.records.insert(
                    internal,
                    Record {
                        id,
                        class,
                        batch,
                        held: 0,
                        state: RecState::Running,
                        stop: None,
                    },
                );
                Some((msg, Some(internal)))
            }
            Item::Cancel(msg, internal) => {
                if started {
                    self.cancels_handed.push(internal);
                    Some((msg, None))
                } else {
                    self.records.remove(&internal);
                    None
                }
            }
            Item::Notification(msg) | Item::Response(msg) => {
                if started {
                    Some((msg, None))
                } else {
                    tracing::debug!("ignored a message before the session started");
                    None
                }
            }
        }
    }

    /// `notifications/cancelled` from the client: a request still queued is dropped (never
    /// run, never answered); one rmcp runs is cancelled there; one already answered (or never
    /// seen) is nothing to do.
    pub fn cancel(&mut self, key: &IdKey, reason: Option<String>, writable: &Condvar) {
        let mut dropped = Vec::new();
        for queue in [&mut self.work, &mut self.control] {
            let mut i = 0;
            while i < queue.len() {
                if matches!(&queue[i].item, Item::Request { id, .. } if id.key == *key) {
                    if let Some(q) = queue.remove(i) {
                        dropped.push(q);
                    }
                } else {
                    i += 1;
                }
            }
        }
        for q in dropped {
            self.input_bytes -= q.cost;
            if let Item::Request { batch: Some(b), .. } = q.item {
                self.batch_member_done(b, writable);
            }
        }
        let running: Vec<u64> = self
            .records
            .iter()
            .filter(|(_, r)| r.state == RecState::Running && r.id.key == *key)
            .map(|(k, _)| *k)
            .collect();
        for internal in running {
            if let Some(stop) = self.records.get_mut(&internal).and_then(|r| r.stop.take()) {
                // Run here, not by rmcp: it stops, and nothing of it is left.
                stop.cancel();
                self.direct_running -= 1;
                self.release(internal);
                continue;
            }
            self.end(internal);
            if let Some(r) = self.records.get_mut(&internal) {
                r.state = RecState::Cancelled;
            }
            let batch = self.records.get(&internal).and_then(|r| r.batch);
            if let Some(b) = batch {
                self.batch_member_done(b, writable);
            }
            if let Some(msg) = cancel_message(internal, reason.clone()) {
                self.push(Item::Cancel(Box::new(msg), internal), false, MESSAGE_COST);
            }
        }
        self.grant();
    }

    /// Frees what a request holds (its slot and reservation); the record stays.
    pub fn end(&mut self, internal: u64) {
        let Some(r) = self.records.get_mut(&internal) else {
            return;
        };
        if r.state != RecState::Cancelled {
            match r.class {
                Class::Work => self.work_used -= 1,
                Class::Control => self.control_used -= 1,
                Class::Listen => self.listens -= 1,
            }
        }
        self.reserved -= r.held;
        r.held = 0;
        self.waiters.retain(|w| w.record != internal);
    }

    /// The request is done: its answer was written (or will never be).
    pub fn release(&mut self, internal: u64) {
        self.end(internal);
        self.records.remove(&internal);
    }

    /// Grants waiting reservations, in order, while the budget allows.
    pub fn grant(&mut self) {
        while let Some(w) = self.waiters.front() {
            // One reservation larger than what is free waits until everything is free.
            if self.used() + w.need > BUDGET && self.used() > 0 {
                return;
            }
            let Some(w) = self.waiters.pop_front() else {
                return;
            };
            if let Some(r) = self.records.get_mut(&w.record)
                && r.state == RecState::Running
                && w.tx.send(()).is_ok()
            {
                r.held += w.need;
                self.reserved += w.need;
            }
        }
    }

    /// One member of a batch is done without an answer (cancelled).
    pub fn batch_member_done(&mut self, batch: u64, writable: &Condvar) {
        if let Some(b) = self.batches.get_mut(&batch) {
            b.pending = b.pending.saturating_sub(1);
        }
        self.batch_progress(batch, writable);
    }

    /// One answer of a batch (ours or rmcp's).
    pub fn batch_answer(&mut self, batch: u64, answer: Vec<u8>, writable: &Condvar) {
        if let Some(b) = self.batches.get_mut(&batch) {
            if !b.answers.is_empty() {
                b.answers.push(b',');
            }
            b.answers.extend_from_slice(&answer);
        }
        self.batch_progress(batch, writable);
    }

    /// A batch whose requests are all done goes out as one line (nothing if all were
    /// notifications).
    pub fn batch_progress(&mut self, batch: u64, writable: &Condvar) {
        if self
            .batches
            .get(&batch)
            .is_none_or(|b| b.pending > 0 || b.filling)
        {
            return;
        }
        let Some(b) = self.batches.remove(&batch) else {
            return;
        };
        if b.opened {
            self.open_batches -= 1;
        }
        if b.answers.is_empty() {
            return;
        }
        let mut bytes = Vec::with_capacity(b.answers.len() + 3);
        bytes.push(b'[');
        bytes.extend_from_slice(&b.answers);
        bytes.extend_from_slice(b"]\n");
        self.enqueue(Out {
            bytes,
            shared: None,
            release: None,
        });
        self.wake_writer(writable);
    }

    /// rmcp produced the answer of `internal`, serialized as `bytes` (without a newline).
    /// Returns whether it was queued on its own and the writer is still to be woken for it
    /// (`wake_writer`): a batch's member waits with its batch.
    #[must_use]
    pub fn answered(&mut self, internal: u64, bytes: Vec<u8>, writable: &Condvar) -> bool {
        let Some(r) = self.records.get_mut(&internal) else {
            return false;
        };
        if r.state == RecState::Cancelled {
            self.records.remove(&internal);
            return false;
        }
        self.reserved -= r.held;
        r.held = 0;
        match r.batch {
            None => {
                let mut bytes = bytes;
                bytes.push(b'\n');
                self.enqueue(Out {
                    bytes,
                    shared: None,
                    release: Some(internal),
                });
                self.grant();
                true
            }
            Some(batch) => {
                // Its slot is free now; its answer waits with the batch's.
                let id = r.id.clone();
                self.release(internal);
                let room = self
                    .batches
                    .get(&batch)
                    .map_or(0, |b| BATCH_ANSWER_CAP.saturating_sub(b.answers.len() + 3));
                let answer = if bytes.len() < room {
                    bytes
                } else {
                    error_line(
                        &id,
                        -32603,
                        &format!(
                            "the answers of this batch exceed {} MiB: send this request on its own",
                            BATCH_ANSWER_CAP / MIB
                        ),
                    )
                    .into_bytes()
                };
                if let Some(b) = self.batches.get_mut(&batch) {
                    b.pending = b.pending.saturating_sub(1);
                }
                self.batch_answer(batch, answer, writable);
                self.grant();
                false
            }
        }
    }

    /// The writer wrote `len` bytes (the answer of `release`).
    pub fn written(&mut self, len: usize, release: Option<u64>) {
        self.out_bytes -= len;
        if let Some(id) = release {
            self.release(id);
        }
    }
}

/// rmcp's `notifications/cancelled` for the request it knows as `internal`.
pub(super) fn cancel_message(
    internal: u64,
    reason: Option<String>,
) -> Option<RxJsonRpcMessage<RoleServer>> {
    let msg = serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": internal, "reason": reason },
    });
    serde_json::from_value(msg).ok()
}
