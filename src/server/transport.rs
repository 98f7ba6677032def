//! Newline-delimited JSON-RPC over byte streams (stdin/stdout), under rmcp's `Transport`, with
//! memory bounded by design whatever the client does.
//!
//! Written here rather than taken from rmcp because the protocol needs more than framing:
//! `-32700`/`-32600` for lines that are not messages, ids echoed exactly as written (integers
//! of any size), JSON-RPC batches answered as one array line, notifications that never end the
//! session, and backpressure instead of buffering.
//!
//! # Threads
//!
//! A reader thread splits stdin into lines (at most [`MAX_LINE`]; a longer one is answered with
//! `-32600` and skipped), parses them (`parse`) and queues the messages; rmcp's loop takes them
//! through [`LineTransport::receive`]. A writer thread writes what rmcp sends, in one buffered
//! write per burst, flushing when idle; a short answer alone in the queue while the writer
//! sleeps is written by rmcp's thread itself, without waiting (`Session::write_now`). Answers
//! are serialized by the send future (a large one on the blocking pool), so every byte waiting
//! for stdout is counted exactly.
//!
//! Once the answer to `initialize` is queued, the reader answers a bare `ping` (no params, or
//! `{}`) itself, as it answers a line that is not a message, and so does the server's
//! [`Shortcut`] for what it can answer at once (a small file's `resources/read`, a cached
//! `resources/list` page): the reply counts in the output queue like any other, so the bounds
//! below hold, and rmcp never sees the request. One thread hand-off (to the writer) instead of
//! three, and none of rmcp's per-request machinery (typed parse, task, cancellation token,
//! context). Pipelined `resources/read` lines are shared with a second reader thread
//! (`read_lines`): a small read costs five system calls, which cap one thread.
//!
//! # Ids
//!
//! rmcp never sees a client's id: each request gets an internal number, and its answer is
//! written with the client's id as the client wrote it (`parse::ClientId`). So an id beyond 64
//! bits comes back intact, two requests with the same id in flight are two requests (each
//! answered, each holding its own slot), and `notifications/cancelled` is matched by value and
//! reaches every request in flight with that id.
//!
//! # Bounds
//!
//! Requests are sorted into three classes:
//! - *control* (`initialize`, `ping`, `server/discover`, `logging/setLevel`,
//!   `resources/(un)subscribe`), notifications and the client's responses: never wait for a
//!   work slot, so a cancellation or a ping is handled however busy the server is (at most
//!   [`MAX_CONTROL`] control requests unwritten);
//! - *listen* (`subscriptions/listen`): a stream that stays open; it holds no work slot (at most
//!   [`MAX_LISTENS`] open);
//! - *work*: everything else. At most [`MAX_WORK`] are handed to rmcp at once, whatever their
//!   ids, and a slot is freed when the answer is *written* (or the request is cancelled), not
//!   when it is produced.
//!
//! Memory is bounded at every stage:
//! - input waiting for rmcp: at most [`INPUT_CAP`] bytes (a message costs its line plus 1 KiB);
//!   beyond that the reader stops reading stdin: the client waits on the pipe;
//! - output: when more than [`OUTPUT_CAP`] bytes wait for stdout (the client does not read),
//!   the reader stops reading stdin, no work request is handed to rmcp, and notifications wait
//!   (backpressure, not buffering). Control answers already taken still go out, which is
//!   bounded by the input cap. Once the client reads, everything resumes;
//! - answers being computed: a byte budget ([`BUDGET`]) shared by the session. A request that
//!   may produce a large answer (a read, a tool call) calls [`reserve`] before it starts; the
//!   reservation waits (in order) while reserved bytes plus bytes waiting for stdout exceed the
//!   budget. When the answer is serialized its reservation becomes its exact size, and that is
//!   released when the writer thread has written it;
//! - a batch's answers wait until the whole batch is done: at most [`BATCH_ANSWER_CAP`] bytes
//!   per batch (a member whose answer does not fit gets an error instead) and
//!   [`MAX_OPEN_BATCHES`] batches under way.
//!
//! # Session start
//!
//! Before the session starts (rmcp waits for `initialize` or a first 2026-07-28 request and
//! ends the session on anything else), notifications and responses are dropped here: a
//! notification never ends the process. The transport sees the start: the answer to
//! `initialize` was a result, or a request was handed over and rmcp asked for the next message
//! without answering it (rmcp then runs it inside the session).

mod parse;

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use rmcp::model::{
    ClientRequest, GetExtensions, GetMeta, JsonRpcMessage, NumberOrString, ProtocolVersion,
    ServerResult,
};
use rmcp::service::{RequestContext, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use parse::{Class, ClientId, IdKey, Parsed, error_line};

const MIB: usize = 1024 * 1024;

/// The largest incoming line (one JSON-RPC message or batch); a longer one gets `-32600`.
pub const MAX_LINE: usize = 16 * MIB;
/// Input parsed and waiting for rmcp, at most (each message counts its line + 1 KiB). This is
/// how far the reader looks ahead for a cancellation or a `ping` behind a flood of work: ~3 700
/// short requests (tried: 1 MiB saved ~2.5 MiB of peak RSS under 10 000 pipelined SQL queries,
/// but a `ping` behind 3 000 pipelined 1 MiB reads then waited for 2 000 of their answers).
pub const INPUT_CAP: usize = 4 * MIB;
/// What one queued message costs beyond its text (its parsed form).
const MESSAGE_COST: usize = 1024;
/// Bytes waiting for stdout beyond which nothing more is read or started.
pub const OUTPUT_CAP: usize = 8 * MIB;
/// Bytes reserved by answers being computed plus bytes waiting for stdout, at most. With the
/// process's own ~10 MiB this keeps a server under 64 MiB whatever the load (a debug build
/// maps ~27 MiB of itself); a release build under 32 MiB for pipelined 64 KiB and 1 MiB reads
/// (which map 12–15 MiB of the binary: the kernel maps a whole cached folio on a fault).
pub const BUDGET: usize = 12 * MIB;
/// Work requests handed to rmcp whose answers are not written yet, at most. Each is a task of
/// ~10 KB in rmcp plus what its handler holds; 64 keep two cores and the blocking pool busy
/// (256 gave no more throughput and 2.6 MB more heap under pipelined SQL queries).
pub const MAX_WORK: usize = 64;
/// Control requests handed to rmcp whose answers are not written yet, at most.
pub const MAX_CONTROL: usize = 1024;
/// Open `subscriptions/listen` streams, at most.
pub const MAX_LISTENS: usize = 1024;
/// The largest answer line of a batch.
pub const BATCH_ANSWER_CAP: usize = 16 * MIB;
/// Batches with requests under way, at most.
pub const MAX_OPEN_BATCHES: usize = 2;
/// What a `resources/read` (or a prompt embedding resources) reserves before it reads: a
/// 1 MiB binary file is 1 MiB read, 1.33 MiB of base64 and as much serialized.
pub const READ_RESERVE: usize = 3 * MIB;
/// What a `*/list` request reserves before it builds its page (a page of 1 000 resources, or
/// hundreds of tools with their schemas, is tens to hundreds of KiB).
pub const LIST_RESERVE: usize = MIB;
/// What a `tools/call` reserves before it runs (a tool's output is capped, 1 MiB by default,
/// and its answer's reservation becomes its size once serialized): 16 calls fit in the budget,
/// as many as tool processes run at once.
pub const TOOL_RESERVE: usize = BUDGET / 16;

/// Answers some requests on the reader thread, without rmcp, once the session started with
/// `initialize`: given the method and its params as written, the result's JSON, or `None` to
/// hand the request to rmcp as usual. It must answer at once (a few system calls at most): it
/// holds up the reading of the next line. Its answer is bounded like every answer (it counts in
/// the output queue, and the reader stops while that is full).
pub type Shortcut = Box<dyn Fn(&str, Option<&RawValue>) -> Option<Quick> + Send + Sync>;

/// A result the [`Shortcut`] gives (JSON): made for this request, or kept and shared by every
/// answer that gives it (a `tools/list` page), which the output queue then holds once however
/// many answers wait (each still counts its whole length against [`OUTPUT_CAP`]).
pub enum Quick {
    Owned(String),
    Shared(Arc<str>),
}

/// Answers the reader queued without waking the writer, at most (bytes): beyond, it wakes it.
const HOLD_CAP: usize = 64 * 1024;

/// The methods the reader answers itself: a bare `ping`, and what the [`Shortcut`] may answer.
const DIRECT_METHODS: &[&str] = &["ping", "resources/read", "resources/list", "tools/list"];

/// Reserves `bytes` of the session's answer budget for the request of `cx`, waiting (in order
/// of asking) while the budget is spent; released when the request's answer has been written.
/// Call it before producing a large answer. Returns at once for a request this transport did
/// not hand over, or one already cancelled.
pub async fn reserve(cx: &RequestContext<RoleServer>, bytes: usize) {
    if let Some(ticket) = cx.extensions.get::<Ticket>() {
        reserve_with(ticket.clone(), bytes).await;
    }
}

async fn reserve_with(ticket: Ticket, bytes: usize) {
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

/// Put in each request's extensions: which session and which request, for [`reserve`].
#[derive(Clone)]
struct Ticket {
    session: Arc<Session>,
    id: u64,
}

/// The state shared by the reader thread, rmcp's loop, send futures and the writer thread.
struct Session {
    state: Mutex<State>,
    /// stdout (see `Sink`).
    sink: Mutex<Sink>,
    /// Wakes `receive`: something to hand over, a slot freed, the end of input.
    ready: tokio::sync::Notify,
    /// Wakes the reader thread: room in the input or output queue.
    room: Condvar,
    /// Wakes the writer thread: something to write, or the end.
    writable: Condvar,
    /// Wakes notifications waiting for room in the output queue.
    out_room: tokio::sync::Notify,
    next_id: AtomicU64,
    /// The answer to `initialize` is queued: the reader answers a bare `ping` itself, and what
    /// the shortcut answers.
    fast_ping: AtomicBool,
    /// Whether the last `resources/read` line was answered directly (a small file): only then
    /// are reads shared with a second reader thread (`read_lines`); large reads go to rmcp,
    /// which a second thread would not make faster.
    direct_reads: AtomicBool,
    shortcut: OnceLock<Shortcut>,
    /// The file descriptor behind the sink when a write to it can be tried without blocking
    /// (a pipe or a Unix socket, `Output::write_directly`); -1 otherwise.
    nowait_fd: AtomicI32,
    /// The input's file descriptor when the reader may watch it a moment for the client's next
    /// line after answering (`Spin`, `Output::spin_on_input`); -1 otherwise.
    input_fd: AtomicI32,
}

impl Session {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// After something was released (`st` still locked): wakes whoever may go on. Each wake-up
    /// is a system call, so only those that wait are woken.
    fn wake(&self, st: &State) {
        if !st.work.is_empty() || !st.control.is_empty() {
            self.ready.notify_one();
        }
        if st.readers_waiting > 0 {
            self.room.notify_all();
        }
        self.out_room.notify_waiters();
    }

    /// Wakes the writer for the answers the reader queued without waking it.
    /// Sends what the reader answered; whether there was anything.
    fn flush_held(&self) -> bool {
        let mut st = self.lock();
        if !st.held {
            return false;
        }
        st.held = false;
        if st.writer_waiting
            && !st.out.is_empty()
            && let Ok(mut sink) = self.sink.try_lock()
        {
            // The writer sleeps: the reader writes the queue itself. Waking an idle CPU for the
            // writer costs more than the write (tens of microseconds on a quiet machine).
            let mut burst: Vec<Out> = st.out.drain(..).collect();
            drop(st);
            write_burst(self, &mut sink, &mut burst);
            return true;
        }
        st.wake_writer(&self.writable);
        true
    }

    /// Writes the answer just queued on the calling thread (rmcp's), when it is alone in the
    /// queue, short and the writer sleeps: waking the writer thread costs more than the write
    /// (a `futex` call, and tens of microseconds while an idle CPU wakes up). The write must not
    /// block this thread, which routes every request: it is tried with `RWF_NOWAIT` and at most
    /// `PIPE_BUF` bytes, which a pipe or a Unix socket takes whole or not at all; when the client
    /// has left no room, the answer stays queued for the writer as it would have.
    fn write_now(&self, mut st: MutexGuard<'_, State>) {
        let fd = self.nowait_fd.load(Ordering::Relaxed);
        let alone = fd >= 0
            && st.writer_waiting
            && !st.held
            && !st.out_closed
            && st.out.len() == 1
            && st.out[0].shared.is_none()
            && st.out[0].bytes.len() <= NOWAIT_MAX;
        let sink = alone
            .then(|| self.sink.try_lock().ok())
            .flatten()
            .filter(|k| !k.failed && k.w.buffer().is_empty());
        let Some(mut sink) = sink else {
            st.wake_writer(&self.writable);
            return;
        };
        let Some(out) = st.out.pop_front() else {
            return;
        };
        drop(st);
        let wrote = write_nowait(fd, &out.bytes);
        let len = out.bytes.len();
        match wrote {
            Ok(n) if n == len => {}
            Ok(n) if n > 0 => {
                // Not seen from a pipe or a Unix socket for so few bytes; the line is finished
                // before the sink is let go, so no other answer can come between its halves.
                tracing::debug!("a write without waiting took {n} of {len} bytes");
                if sink.w.write_all(&out.bytes[n..]).is_err() || sink.w.flush().is_err() {
                    sink.failed = true;
                }
            }
            failed => {
                if let Err(e) = &failed
                    && matches!(
                        e.raw_os_error(),
                        Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS | libc::EPERM)
                    )
                {
                    // A kernel without `RWF_NOWAIT` for this kind of file, or without
                    // `pwritev2` (before 4.6, qemu-user, a filter that refuses it): never again.
                    self.nowait_fd.store(-1, Ordering::Relaxed);
                }
                // Nothing was written (no room, or an error the writer will meet itself): the
                // answer goes back first in the queue, for the writer, before the sink is let
                // go (a writer finishing takes the sink before it looks at the queue).
                let mut st = self.lock();
                st.out.push_front(out);
                st.wake_writer(&self.writable);
                return;
            }
        }
        drop(sink);
        let mut st = self.lock();
        st.written(len, out.release);
        st.grant();
        self.wake(&st);
    }

    /// The reader waits here until there is room to read one more line.
    fn wait_for_room(&self) {
        let mut st = self.lock();
        if st.held && st.out_bytes >= OUTPUT_CAP {
            st.held = false;
            st.wake_writer(&self.writable);
        }
        while !st.closed
            && (st.input_bytes >= INPUT_CAP || (st.out_bytes >= OUTPUT_CAP && !st.out_closed))
        {
            st.readers_waiting += 1;
            st = self.room.wait(st).unwrap_or_else(|p| p.into_inner());
            st.readers_waiting -= 1;
        }
    }

    /// The answer to a bare `ping`, or to a request the [`Shortcut`] answers; `None` for
    /// anything else.
    fn answer_directly(&self, text: &[u8]) -> Option<Out> {
        let req = parse::direct(text, DIRECT_METHODS)?;
        if req.method == "ping" {
            let answer = parse::ping_answer(&req)?;
            tracing::info!("ping  0.0 ms ok");
            return Some(Out::line(answer));
        }
        Some(match self.shortcut.get()?(&req.method, req.params)? {
            Quick::Owned(result) => Out::line(parse::result_line(&req.id, &result)),
            Quick::Shared(result) => Out {
                bytes: parse::result_head(&req.id).into_bytes(),
                shared: Some(result),
                release: None,
            },
        })
    }

    /// One line from the reader: parsed here (outside the lock), then queued or answered.
    fn take_line(&self, line: &[u8]) {
        let text = parse::trim(line);
        if text.is_empty() {
            return;
        }
        let direct = if self.fast_ping.load(Ordering::Relaxed) {
            let answer = self.answer_directly(text);
            if answer.is_some() {
                self.direct_reads.store(true, Ordering::Relaxed);
            } else if parse::names(text, "resources/read") {
                self.direct_reads.store(false, Ordering::Relaxed);
            }
            answer
        } else {
            None
        };
        if let Some(answer) = direct {
            // Answered here, like a line that is not a message: no thread hand-off, no rmcp
            // machinery. Bounded like every reply (it counts in the output queue, and the reader
            // stops while that is full). Only after `initialize` was answered, so it never goes
            // out before that answer.
            let mut st = self.lock();
            st.enqueue(answer);
            // The writer is woken when the reader has no whole line left to take
            // (`flush_held`), or once enough is queued: one wake-up (a `futex` call, and a
            // `write`) per burst of pipelined requests, not per answer.
            st.held = true;
            if st.out_bytes >= HOLD_CAP {
                st.held = false;
                st.wake_writer(&self.writable);
            }
            return;
        }
        let mut next = || self.next_id.fetch_add(1, Ordering::Relaxed);
        if !parse::is_batch(text) {
            let parsed = parse::message(text, false, &mut next);
            let mut st = self.lock();
            st.apply(parsed, None, text.len() + MESSAGE_COST, &self.writable);
            drop(st);
            self.ready.notify_one();
            return;
        }
        let items = match parse::batch_items(text) {
            Ok(items) => items,
            Err(reply) => {
                self.lock().reply(reply, &self.writable);
                return;
            }
        };
        let parsed: Vec<(Parsed, usize)> = items
            .iter()
            .map(|item| {
                let text = parse::trim(item.get().as_bytes());
                (
                    parse::message(text, true, &mut next),
                    text.len() + MESSAGE_COST,
                )
            })
            .collect();
        let mut st = self.lock();
        let batch = st.next_batch;
        st.next_batch += 1;
        // Every request is counted before any answer is added: the batch goes out once the
        // last one is done.
        let pending = parsed
            .iter()
            .filter(|(p, _)| matches!(p, Parsed::Request { .. }))
            .count();
        st.batches.insert(
            batch,
            Batch {
                pending,
                filling: true,
                ..Batch::default()
            },
        );
        for (p, cost) in parsed {
            st.apply(p, Some(batch), cost, &self.writable);
        }
        // Every member is in: the batch may go out (now, if none of them waits for rmcp).
        if let Some(b) = st.batches.get_mut(&batch) {
            b.filling = false;
        }
        st.batch_progress(batch, &self.writable);
        drop(st);
        self.ready.notify_one();
    }
}

/// Where a request handed to rmcp is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecState {
    /// Being computed.
    Running,
    /// Its answer was produced (it waits for stdout, or in its batch).
    Answered,
    /// The client cancelled it: its slot and reservation are free already, and rmcp will drop
    /// its answer (or we do).
    Cancelled,
}

/// A request handed to rmcp.
struct Record {
    id: ClientId,
    class: Class,
    batch: Option<u64>,
    /// Bytes of the budget it reserved.
    held: usize,
    state: RecState,
}

/// A message read and not yet handed to rmcp.
struct Queued {
    /// Arrival order, across both queues.
    seq: u64,
    cost: usize,
    item: Item,
}

enum Item {
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
struct Batch {
    pending: usize,
    /// The answers so far, comma-separated.
    answers: Vec<u8>,
    /// Whether one of its requests was handed to rmcp (it counts among the open batches).
    opened: bool,
    /// Its members are still being sorted (`Session::take_line`): an answer written by us
    /// (`[1,2,3]` is three errors) does not end it yet.
    filling: bool,
}

/// One line for stdout: `bytes`, or (with `shared`) `bytes`, then the shared result, then
/// `SHARED_TAIL`.
struct Out {
    bytes: Vec<u8>,
    /// A result kept once for every answer that gives it ([`Quick::Shared`]).
    shared: Option<Arc<str>>,
    /// The request whose answer this is: released once written.
    release: Option<u64>,
}

/// What ends a line whose result is shared: the envelope's `}` and the newline.
const SHARED_TAIL: &[u8] = b"}\n";

impl Out {
    /// `text` as a line of its own (the newline added), released by nothing.
    fn line(text: String) -> Out {
        let mut bytes = text.into_bytes();
        bytes.push(b'\n');
        Out {
            bytes,
            shared: None,
            release: None,
        }
    }

    /// The bytes the line holds (and counts in the output queue).
    fn len(&self) -> usize {
        self.bytes.len()
            + self
                .shared
                .as_ref()
                .map_or(0, |r| r.len() + SHARED_TAIL.len())
    }

    fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(&self.bytes)?;
        if let Some(result) = &self.shared {
            w.write_all(result.as_bytes())?;
            w.write_all(SHARED_TAIL)?;
        }
        Ok(())
    }
}

/// A [`reserve`] waiting for budget.
struct Waiter {
    record: u64,
    need: usize,
    tx: tokio::sync::oneshot::Sender<()>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lifecycle {
    /// rmcp waits for `initialize` or a first stateless-era request; `pending` is the request
    /// last handed to it (and whether it was `initialize`).
    Before {
        pending: Option<(u64, bool)>,
    },
    Started,
}

struct State {
    seq: u64,
    work: VecDeque<Queued>,
    control: VecDeque<Queued>,
    input_bytes: usize,
    /// The input has ended.
    eof: bool,
    /// The transport is gone: the reader stops.
    closed: bool,
    lifecycle: Lifecycle,
    records: HashMap<u64, Record>,
    work_used: usize,
    control_used: usize,
    listens: usize,
    /// Requests whose cancellation was handed to rmcp: gone at the next `receive`.
    cancels_handed: Vec<u64>,
    batches: HashMap<u64, Batch>,
    next_batch: u64,
    open_batches: usize,
    out: VecDeque<Out>,
    out_bytes: usize,
    /// stdout failed: what is sent is dropped.
    out_closed: bool,
    /// How many reader threads (the reader, and the second one of `share_reads`) wait for room
    /// (`Session::room`).
    readers_waiting: usize,
    /// The writer thread waits for something to write (`Session::writable`).
    writer_waiting: bool,
    /// The reader queued answers without waking the writer (`Session::flush_held`).
    held: bool,
    /// `Output::finish`: the writer ends once the queue is empty.
    finishing: bool,
    /// The session started with `initialize` (its answer was a result) and a version before
    /// 2026-07-28: the reader may answer requests itself.
    initialized: bool,
    reserved: usize,
    waiters: VecDeque<Waiter>,
}

impl State {
    fn new() -> State {
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
            readers_waiting: 0,
            writer_waiting: false,
            held: false,
            finishing: false,
            initialized: false,
            reserved: 0,
            waiters: VecDeque::new(),
        }
    }

    /// Bytes of the budget in use.
    fn used(&self) -> usize {
        self.reserved + self.out_bytes
    }

    /// Queues what the reader parsed (or answers it, or cancels).
    fn apply(&mut self, parsed: Parsed, batch: Option<u64>, cost: usize, writable: &Condvar) {
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

    fn push(&mut self, item: Item, work: bool, cost: usize) {
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
    fn reply(&mut self, text: String, writable: &Condvar) {
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
    fn wake_writer(&self, writable: &Condvar) {
        if self.writer_waiting {
            writable.notify_one();
        }
    }

    fn enqueue(&mut self, out: Out) {
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
    fn pick(&mut self) -> Option<(Box<RxJsonRpcMessage<RoleServer>>, Option<u64>)> {
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

    fn may_start(&self, q: &Queued) -> bool {
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
    fn hand(&mut self, item: Item) -> Option<(Box<RxJsonRpcMessage<RoleServer>>, Option<u64>)> {
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
    fn cancel(&mut self, key: &IdKey, reason: Option<String>, writable: &Condvar) {
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
    fn end(&mut self, internal: u64) {
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
    fn release(&mut self, internal: u64) {
        self.end(internal);
        self.records.remove(&internal);
    }

    /// Grants waiting reservations, in order, while the budget allows.
    fn grant(&mut self) {
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
    fn batch_member_done(&mut self, batch: u64, writable: &Condvar) {
        if let Some(b) = self.batches.get_mut(&batch) {
            b.pending = b.pending.saturating_sub(1);
        }
        self.batch_progress(batch, writable);
    }

    /// One answer of a batch (ours or rmcp's).
    fn batch_answer(&mut self, batch: u64, answer: Vec<u8>, writable: &Condvar) {
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
    fn batch_progress(&mut self, batch: u64, writable: &Condvar) {
        if self.batches.get(&batch).is_none_or(|b| b.pending > 0 || b.filling) {
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
    /// (`Session::write_now`, or `wake_writer`): a batch's member waits with its batch.
    #[must_use]
    fn answered(&mut self, internal: u64, bytes: Vec<u8>, writable: &Condvar) -> bool {
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
    fn written(&mut self, len: usize, release: Option<u64>) {
        self.out_bytes -= len;
        if let Some(id) = release {
            self.release(id);
        }
    }
}

/// rmcp's `notifications/cancelled` for the request it knows as `internal`.
fn cancel_message(internal: u64, reason: Option<String>) -> Option<RxJsonRpcMessage<RoleServer>> {
    let msg = serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": internal, "reason": reason },
    });
    serde_json::from_value(msg).ok()
}

/// The output side: the writer thread, and a way to wait until all is written.
pub struct Output {
    session: Arc<Session>,
    done: tokio::sync::oneshot::Receiver<()>,
}

impl Output {
    /// Starts the writer thread on `write`.
    pub fn start<W: Write + Send + 'static>(write: W) -> Output {
        let write: Box<dyn Write + Send> = Box::new(write);
        let session = Arc::new(Session {
            sink: Mutex::new(Sink {
                w: std::io::BufWriter::with_capacity(64 * 1024, write),
                failed: false,
            }),
            state: Mutex::new(State::new()),
            ready: tokio::sync::Notify::new(),
            room: Condvar::new(),
            writable: Condvar::new(),
            out_room: tokio::sync::Notify::new(),
            next_id: AtomicU64::new(1),
            fast_ping: AtomicBool::new(false),
            direct_reads: AtomicBool::new(false),
            shortcut: OnceLock::new(),
            nowait_fd: AtomicI32::new(-1),
            input_fd: AtomicI32::new(-1),
        });
        let (done_tx, done) = tokio::sync::oneshot::channel();
        let s = session.clone();
        std::thread::Builder::new()
            .name("stdout".into())
            .spawn(move || {
                write_messages(&s);
                let _ = done_tx.send(());
            })
            .expect("spawning the stdout thread");
        Output { session, done }
    }

    /// Sets what the reader answers itself (before the transport starts: call it before
    /// `LineTransport::new`).
    pub fn shortcut(&self, shortcut: Shortcut) {
        let _ = self.session.shortcut.set(shortcut);
    }

    /// Lets rmcp's thread write a short answer itself to `fd`, the file descriptor the writer
    /// writes to (see `Session::write_now`), when it is a pipe or a Unix stream socket; anything
    /// else is left to the writer thread.
    pub fn write_directly(&self, fd: std::os::fd::RawFd) {
        if pipe_or_unix_stream(fd) {
            self.session.nowait_fd.store(fd, Ordering::Relaxed);
        }
    }

    /// Lets the reader watch `fd`, the input's file descriptor, a moment for the client's next
    /// line after it answered one itself (`Spin`), when it is a pipe or a Unix stream socket.
    pub fn spin_on_input(&self, fd: std::os::fd::RawFd) {
        if pipe_or_unix_stream(fd) {
            self.session.input_fd.store(fd, Ordering::Relaxed);
        }
    }

    /// Waits (at most `limit`) until everything queued is written.
    pub async fn finish(self, limit: Duration) {
        let Output { session, done } = self;
        session.lock().finishing = true;
        session.writable.notify_all();
        let _ = tokio::time::timeout(limit, done).await;
    }
}

/// Where answers go: stdout, buffered. Its lock is held while a burst is written, by the writer
/// thread or, when the writer sleeps, by the reader thread (`Session::flush_held`).
struct Sink {
    w: std::io::BufWriter<Box<dyn Write + Send>>,
    failed: bool,
}

/// The writer thread: writes queued lines, flushing when the queue is empty, and releases each
/// answer once written.
fn write_messages(session: &Session) {
    let mut burst: Vec<Out> = Vec::new();
    loop {
        {
            let mut st = session.lock();
            while st.out.is_empty() {
                if st.finishing {
                    drop(st);
                    // The sink first: an answer `Session::write_now` could not write is back in
                    // the queue by the time the sink is free.
                    let mut sink = lock_sink(session);
                    st = session.lock();
                    if !st.out.is_empty() {
                        continue;
                    }
                    drop(st);
                    let _ = sink.w.flush();
                    return;
                }
                st.writer_waiting = true;
                st = session.writable.wait(st).unwrap_or_else(|p| p.into_inner());
                st.writer_waiting = false;
            }
            burst.extend(st.out.drain(..));
        }
        write_burst(session, &mut lock_sink(session), &mut burst);
    }
}

fn lock_sink(session: &Session) -> MutexGuard<'_, Sink> {
    session.sink.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes `burst` (taken from the queue) in one go, releases each answer once written (a large
/// one as soon as it is, small ones together at the end), and flushes if nothing more waits.
fn write_burst(session: &Session, sink: &mut Sink, burst: &mut Vec<Out>) {
    let mut done: Vec<(usize, Option<u64>)> = Vec::new();
    let count = burst.len();
    for (i, out) in burst.drain(..).enumerate() {
        if !sink.failed && out.write_to(&mut sink.w).is_err() {
            sink.failed = true;
        }
        let len = out.len();
        done.push((len, out.release));
        drop(out);
        if len >= 64 * 1024 || i + 1 == count {
            let mut st = session.lock();
            for (len, release) in done.drain(..) {
                st.written(len, release);
            }
            st.grant();
            session.wake(&st);
        }
    }
    let mut st = session.lock();
    if !sink.failed && st.out.is_empty() {
        drop(st);
        sink.failed = sink.w.flush().is_err();
        st = session.lock();
    }
    if sink.failed && !st.out_closed {
        tracing::error!("writing stdout failed: answers are dropped from now on");
        st.out_closed = true;
        while let Some(out) = st.out.pop_front() {
            st.written(out.len(), out.release);
        }
        st.grant();
        session.wake(&st);
    }
}

/// The longest answer rmcp's thread writes itself (`Session::write_now`): `PIPE_BUF`, which a
/// pipe writes whole or not at all.
const NOWAIT_MAX: usize = libc::PIPE_BUF;

/// One `pwritev2(RWF_NOWAIT)` of `bytes` to `fd`: what fits now, or `EAGAIN`.
fn write_nowait(fd: std::os::fd::RawFd, bytes: &[u8]) -> std::io::Result<usize> {
    let fd = borrow_open(fd).ok_or_else(|| std::io::Error::from_raw_os_error(libc::EBADF))?;
    // `u64::MAX`: the file's own position (a pipe or a socket has none).
    let flags = rustix::io::ReadWriteFlags::NOWAIT;
    Ok(rustix::io::pwritev2(
        fd,
        &[std::io::IoSlice::new(bytes)],
        u64::MAX,
        flags,
    )?)
}

/// Whether `fd` is a pipe or a Unix stream socket: what takes a short write whole or not at all
/// (`write_now`), and what `poll` tells truly whether a line is waiting (`Spin`).
fn pipe_or_unix_stream(fd: std::os::fd::RawFd) -> bool {
    use rustix::net::{AddressFamily, SocketType, sockopt};
    let Some(fd) = borrow_open(fd) else {
        return false;
    };
    match rustix::fs::fstat(fd).map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode)) {
        Ok(rustix::fs::FileType::Fifo) => true,
        Ok(rustix::fs::FileType::Socket) => {
            sockopt::socket_domain(fd).is_ok_and(|d| d == AddressFamily::UNIX)
                && sockopt::socket_type(fd).is_ok_and(|t| t == SocketType::STREAM)
        }
        _ => false,
    }
}

/// `fd` (the sink's own descriptor, `Output::write_directly`, or the input's,
/// `Output::spin_on_input`) borrowed for a system call;
/// `None` for a negative one.
fn borrow_open(fd: std::os::fd::RawFd) -> Option<std::os::fd::BorrowedFd<'static>> {
    // SAFETY: the descriptor given to `write_directly` or `spin_on_input` stays open while the
    // session uses it (stdout or stdin, or a test's pipe), and is only used for the call it is
    // borrowed for.
    (fd >= 0).then(|| unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) })
}

/// A read answer whose contents are at most this many bytes is serialized in place: that
/// takes a few microseconds, less than the hand-off to the blocking pool and back.
const INLINE_SERIALIZE: usize = 16 * 1024;

/// The bytes of text or base64 one read content holds.
fn contents_len(c: &rmcp::model::ResourceContents) -> usize {
    match c {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.len(),
        rmcp::model::ResourceContents::BlobResourceContents { blob, .. } => blob.len(),
        // A kind rmcp may add: serialized on the blocking pool, to be safe.
        _ => usize::MAX / 2,
    }
}

/// About how many bytes a tool's result serializes to, as far as it matters: text contents and
/// structured content are counted (the latter up to `INLINE_SERIALIZE`); any other kind of
/// content, or `_meta`, counts as large, so it is serialized on the blocking pool.
fn tool_result_len(call: &rmcp::model::CallToolResult) -> usize {
    const LARGE: usize = usize::MAX / 2;
    if call.meta.is_some() {
        return LARGE;
    }
    let mut len = 0usize;
    for block in &call.content {
        match block {
            rmcp::model::ContentBlock::Text(t) if t.meta.is_none() && t.annotations.is_none() => {
                len = len.saturating_add(t.text.len());
            }
            _ => return LARGE,
        }
    }
    if let Some(value) = &call.structured_content {
        len = len.saturating_add(json_len_upto(value, INLINE_SERIALIZE + 1));
    }
    len
}

/// The bytes `value`'s strings and numbers hold (a lower bound of its JSON's length), counting
/// no further than `limit`: a huge value is not walked to its end.
fn json_len_upto(value: &serde_json::Value, limit: usize) -> usize {
    use serde_json::Value;
    let mut len = 0usize;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        if len >= limit {
            return limit;
        }
        let own = match v {
            Value::Null | Value::Bool(_) | Value::Number(_) => 8,
            Value::String(s) => s.len() + 2,
            // Each item is at least a byte: a long array or map is as long as the limit.
            Value::Array(items) if items.len() >= limit => return limit,
            Value::Object(map) if map.len() >= limit => return limit,
            Value::Array(items) => {
                stack.extend(items);
                2 + items.len()
            }
            Value::Object(map) => {
                stack.extend(map.values());
                map.keys()
                    .fold(2usize, |n, k| n.saturating_add(k.len() + 4))
            }
        };
        len = len.saturating_add(own);
    }
    len.min(limit)
}

/// The transport rmcp drives.
pub struct LineTransport {
    session: Arc<Session>,
}

impl LineTransport {
    /// Starts the reader thread on `read`; answers go to `output`. `eof` is cancelled when the
    /// input ends.
    pub fn new<R: Read + Send + 'static>(
        read: R,
        output: &Output,
        eof: CancellationToken,
    ) -> LineTransport {
        let session = output.session.clone();
        let s = session.clone();
        std::thread::Builder::new()
            .name("stdin".into())
            .spawn(move || {
                read_lines(&s, read);
                s.flush_held();
                // Before `receive` can see the end: whoever learns of it from rmcp finds the
                // token cancelled.
                eof.cancel();
                s.lock().eof = true;
                s.ready.notify_one();
            })
            .expect("spawning the stdin thread");
        LineTransport { session }
    }
}

impl Drop for LineTransport {
    fn drop(&mut self) {
        self.session.lock().closed = true;
        self.session.room.notify_all();
    }
}

/// Where an outgoing message goes, decided when rmcp sends it.
enum Route {
    /// The answer to request `internal`, to be written with the client's id.
    Answer {
        internal: u64,
        id: ClientId,
        listen: bool,
    },
    /// The answer to a cancelled request: not written.
    Drop,
    /// A notification (on a listen stream: that stream's client id).
    Notification(Option<(u64, ClientId)>),
    /// Anything else, as it is.
    AsIs,
}

impl rmcp::transport::Transport<RoleServer> for LineTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let route = self.route(&item);
        let session = self.session.clone();
        async move {
            match route {
                Route::Drop => {}
                Route::Answer {
                    internal,
                    id,
                    listen,
                } => {
                    let big = match &item {
                        JsonRpcMessage::Response(r) => match &r.result {
                            ServerResult::ReadResourceResult(read) => {
                                read.contents
                                    .iter()
                                    .fold(0usize, |n, c| n.saturating_add(contents_len(c)))
                                    > INLINE_SERIALIZE
                            }
                            ServerResult::CallToolResult(call) => {
                                tool_result_len(call) > INLINE_SERIALIZE
                            }
                            ServerResult::GetPromptResult(_) => true,
                            _ => false,
                        },
                        _ => false,
                    };
                    // The runtime has one thread, which routes every message: a large answer
                    // is serialized on the blocking pool.
                    let mut bytes = if big {
                        let moved = id.clone();
                        tokio::task::spawn_blocking(move || serialize_answer(&item, &moved))
                            .await
                            .unwrap_or_else(|e| {
                                error_line(&id, -32603, &format!("Internal error: {e}"))
                                    .into_bytes()
                            })
                    } else {
                        serialize_answer(&item, &id)
                    };
                    if listen {
                        splice_subscription_id(&mut bytes, internal, &id);
                    }
                    let mut st = session.lock();
                    let queued = st.answered(internal, bytes, &session.writable);
                    if st.initialized {
                        session.fast_ping.store(true, Ordering::Relaxed);
                    }
                    // A batch's request frees its slot here.
                    session.wake(&st);
                    if queued {
                        session.write_now(st);
                    }
                }
                Route::Notification(listen) => {
                    // Notifications wait while the client does not read (answers never do:
                    // they exist already).
                    loop {
                        let room = session.out_room.notified();
                        {
                            let st = session.lock();
                            if st.out_bytes < OUTPUT_CAP || st.out_closed || st.finishing {
                                break;
                            }
                        }
                        room.await;
                    }
                    let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
                    if let Some((internal, id)) = listen {
                        splice_subscription_id(&mut bytes, internal, &id);
                    }
                    bytes.push(b'\n');
                    let mut st = session.lock();
                    st.enqueue(Out {
                        bytes,
                        shared: None,
                        release: None,
                    });
                    st.wake_writer(&session.writable);
                }
                Route::AsIs => {
                    let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
                    bytes.push(b'\n');
                    let mut st = session.lock();
                    st.enqueue(Out {
                        bytes,
                        shared: None,
                        release: None,
                    });
                    st.wake_writer(&session.writable);
                }
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Cancellation-safe: a message is taken from the queue only when it is returned.
        loop {
            let ready = self.session.ready.notified();
            {
                let mut st = self.session.lock();
                let picked = st.pick();
                if !st.out.is_empty() {
                    // `pick` may have answered (a listen over the cap).
                    st.wake_writer(&self.session.writable);
                }
                if let Some((mut msg, internal)) = picked {
                    if st.readers_waiting > 0 {
                        self.session.room.notify_all();
                    }
                    drop(st);
                    if let (JsonRpcMessage::Request(r), Some(id)) = (&mut *msg, internal) {
                        r.request.extensions_mut().insert(Ticket {
                            session: self.session.clone(),
                            id,
                        });
                    }
                    return Some(*msg);
                }
                if st.eof && st.work.is_empty() && st.control.is_empty() {
                    return None;
                }
            }
            ready.await;
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl LineTransport {
    fn route(&self, item: &TxJsonRpcMessage<RoleServer>) -> Route {
        let answered = match item {
            JsonRpcMessage::Response(r) => Some((&r.id, true)),
            JsonRpcMessage::Error(e) => e.id.as_ref().map(|id| (id, false)),
            JsonRpcMessage::Notification(n) => {
                let listen = match n.notification.get_meta().subscription_id() {
                    Some(NumberOrString::Number(k)) => u64::try_from(k).ok().and_then(|k| {
                        let st = self.session.lock();
                        Some((k, st.records.get(&k)?.id.clone()))
                    }),
                    _ => None,
                };
                return Route::Notification(listen);
            }
            JsonRpcMessage::Request(_) => None,
        };
        let Some((NumberOrString::Number(n), is_result)) = answered else {
            return Route::AsIs;
        };
        let Ok(internal) = u64::try_from(*n) else {
            return Route::AsIs;
        };
        let mut st = self.session.lock();
        if !st.records.contains_key(&internal) {
            // Not a request we handed over (rmcp dropped the answer of a cancelled one):
            // never written with an id the client did not choose.
            tracing::debug!("dropped an answer for an unknown request {internal}");
            return Route::Drop;
        }
        if let Lifecycle::Before {
            pending: Some((pending, init)),
        } = st.lifecycle
            && pending == internal
        {
            st.lifecycle = if init && is_result {
                // The reader answers requests itself only in a session of a version before
                // 2026-07-28 (whose answers rmcp shapes differently: `resultType`, error codes).
                st.initialized = matches!(
                    item,
                    JsonRpcMessage::Response(r) if matches!(
                        &r.result,
                        ServerResult::InitializeResult(i)
                            if i.protocol_version.as_str() < ProtocolVersion::V_2026_07_28.as_str()
                    )
                );
                Lifecycle::Started
            } else {
                Lifecycle::Before { pending: None }
            };
        }
        match st.records.get_mut(&internal) {
            None => Route::Drop,
            Some(r) if r.state == RecState::Cancelled => {
                st.records.remove(&internal);
                Route::Drop
            }
            Some(r) => {
                r.state = RecState::Answered;
                Route::Answer {
                    internal,
                    id: r.id.clone(),
                    listen: r.class == Class::Listen,
                }
            }
        }
    }
}

/// An answer with the client's id, written as the client wrote it.
#[derive(Serialize)]
struct Answer<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a rmcp::model::ErrorData>,
}

/// About how long an answer's JSON is, so that a large one is not grown (and copied) a dozen
/// times on its way: a page of resources, or a read's contents.
fn size_hint(item: &TxJsonRpcMessage<RoleServer>) -> usize {
    const SMALL: usize = 256;
    let JsonRpcMessage::Response(r) = item else {
        return SMALL;
    };
    match &r.result {
        ServerResult::ListResourcesResult(l) => l.resources.iter().fold(SMALL, |n, r| {
            n + 96
                + r.uri.len()
                + r.name.len()
                + r.description.as_ref().map_or(0, String::len)
                + r.mime_type.as_ref().map_or(0, String::len)
        }),
        ServerResult::ReadResourceResult(read) => read.contents.iter().fold(SMALL, |n, c| {
            n.saturating_add(contents_len(c).min(1 << 24) + 128)
        }),
        _ => SMALL,
    }
}

fn serialize_answer(item: &TxJsonRpcMessage<RoleServer>, id: &ClientId) -> Vec<u8> {
    let raw = RawValue::from_string(id.raw.to_string());
    let written = raw.as_deref().map_err(|e| e.to_string()).and_then(|raw| {
        let answer = match item {
            JsonRpcMessage::Response(r) => Answer {
                jsonrpc: "2.0",
                id: raw,
                result: Some(&r.result),
                error: None,
            },
            JsonRpcMessage::Error(e) => Answer {
                jsonrpc: "2.0",
                id: raw,
                result: None,
                error: Some(&e.error),
            },
            _ => return Err("not an answer".to_owned()),
        };
        let mut out = Vec::with_capacity(size_hint(item));
        serde_json::to_writer(&mut out, &answer).map_err(|e| e.to_string())?;
        Ok(out)
    });
    written.unwrap_or_else(|e| {
        tracing::error!("an answer could not be serialized: {e}");
        error_line(id, -32603, &format!("Internal error: {e}")).into_bytes()
    })
}

/// Puts the client's id of a listen stream where rmcp wrote our internal one
/// (`_meta["io.modelcontextprotocol/subscriptionId"]`). The key cannot occur inside a JSON
/// string: there every `"` is escaped.
fn splice_subscription_id(bytes: &mut Vec<u8>, internal: u64, id: &ClientId) {
    let pattern = format!("\"io.modelcontextprotocol/subscriptionId\":{internal}");
    let Some(at) = bytes
        .windows(pattern.len())
        .position(|w| w == pattern.as_bytes())
    else {
        return;
    };
    let end = at + pattern.len();
    if bytes.get(end).is_some_and(u8::is_ascii_digit) {
        return;
    }
    let start = end - internal.to_string().len();
    bytes.splice(start..end, id.raw.bytes());
}

/// The most chunks waiting for the second reader (`share_reads`); more are taken by the reader.
const SHARED_CHUNKS: usize = 16;
/// Lines given to the second reader at a time: one hand-off (and at most one wake-up of it, and
/// of the writer when it has answered them) per chunk, not per line.
const CHUNK_LINES: usize = 16;
/// Only lines this short are shared (a `resources/read` request is a few hundred bytes).
const SHARED_LINE_MAX: usize = 4096;

/// The reader thread: splits input into lines of at most `MAX_LINE` bytes, reading one more
/// only when there is room for it.
///
/// Pipelined `resources/read` requests are shared with a second thread: each small read the
/// shortcut answers costs five system calls (`fstatat`, `openat`, `fstat`, `read`, `close`,
/// ~5.4 µs on the machine of BENCHMARKS.md, so at most ~185 000 a second on one thread even
/// without any JSON), and two threads make about twice as many. Only when more input is already
/// buffered (a client that waits for each answer gets it from this thread, with no hand-off),
/// only after `initialize` was answered (as for every direct answer), and every other such
/// line, in chunks of `CHUNK_LINES`, so both threads stay busy. Their answers may go out in
/// another order than the requests came, which JSON-RPC allows (ids match them up). Memory
/// stays bounded: at most `SHARED_CHUNKS` chunks of short lines wait, and the answers count
/// against the output budget like every other.
fn read_lines<R: Read>(session: &Session, read: R) {
    let two = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    std::thread::scope(|scope| {
        let mut helper: Option<std::sync::mpsc::SyncSender<Vec<u8>>> = None;
        let mut share = |chunk: Vec<u8>| -> Result<(), Vec<u8>> {
            let tx = helper.get_or_insert_with(|| {
                let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(SHARED_CHUNKS);
                let spawned = std::thread::Builder::new()
                    .name("stdin-2".into())
                    .spawn_scoped(scope, move || share_reads(session, &rx));
                if spawned.is_err() {
                    tracing::warn!("could not start a second reader thread");
                }
                tx
            });
            tx.try_send(chunk).map_err(|e| match e {
                std::sync::mpsc::TrySendError::Full(c)
                | std::sync::mpsc::TrySendError::Disconnected(c) => c,
            })
        };
        read_lines_sharing(session, read, two.then_some(&mut share));
        // Dropping the sender ends the second reader once it has taken every chunk it was
        // given (the scope waits for it): nothing given is lost at the end of the input.
        drop(helper);
    });
}

/// Takes every line of `chunk` (lines, each with its newline), each once there is room for it,
/// as the reader takes its own: the caps bound what both threads queue.
fn take_lines(session: &Session, chunk: &[u8]) {
    for line in chunk.split_inclusive(|b| *b == b'\n') {
        session.wait_for_room();
        session.take_line(line);
    }
}

/// The second reader: takes the chunks `read_lines` shares, and sends what it answered on its
/// way each time it has nothing left to take (as the reader does before it waits for input).
fn share_reads(session: &Session, chunks: &std::sync::mpsc::Receiver<Vec<u8>>) {
    loop {
        let chunk = match chunks.try_recv() {
            Ok(chunk) => chunk,
            Err(std::sync::mpsc::TryRecvError::Empty) => {
                session.flush_held();
                match chunks.recv() {
                    Ok(chunk) => chunk,
                    Err(_) => return,
                }
            }
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                session.flush_held();
                return;
            }
        };
        take_lines(session, &chunk);
    }
}

/// Whether `line` is one to share: a short `resources/read` request, after `initialize`, while
/// reads are answered directly (small files).
fn shareable(session: &Session, line: &[u8]) -> bool {
    line.len() <= SHARED_LINE_MAX
        && line.ends_with(b"\n")
        && session.fast_ping.load(Ordering::Relaxed)
        && session.direct_reads.load(Ordering::Relaxed)
        && parse::names(line, "resources/read")
}

/// How long the reader watches the input for the client's next line after it answered one
/// itself, before it sleeps in `read`. A sequential client (one request, wait for its answer,
/// the next) sends the next line within tens of microseconds; a thread asleep in `read` is
/// woken by it only after the kernel wakes its CPU, which on a virtual machine with idle CPUs
/// halted costs 20–40 µs per line: the sequential `ping` p50 was 33–60 µs against a null
/// server's 5–50 µs (BENCHMARKS.md, seventh pass).
const SPIN: std::time::Duration = std::time::Duration::from_micros(50);
/// Watches that saw nothing in a row before the reader stops watching (a client that does not
/// send at once, as an assistant between requests): then only one chance in `SPIN_RETRY` is
/// watched, so an idle session costs at most `SPIN` per `SPIN_RETRY` answers.
const SPIN_MISSES: u32 = 4;
const SPIN_RETRY: u32 = 64;

/// What one `Spin::watch` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// The input became readable (or closed, or failed: `read` will say) within `SPIN`.
    Caught,
    /// Nothing came within `SPIN`.
    Missed,
    /// Not watched (backing off after misses).
    Skipped,
}

/// The reader's short watch of its input (see `SPIN`).
#[derive(Default)]
struct Spin {
    misses: u32,
    skipped: u32,
}

impl Spin {
    /// Polls `fd` without blocking until it is readable or `SPIN` has passed.
    fn watch(&mut self, fd: std::os::fd::BorrowedFd<'_>) -> Watched {
        use rustix::event::{PollFd, PollFlags, poll};
        if self.misses >= SPIN_MISSES {
            self.skipped += 1;
            if self.skipped < SPIN_RETRY {
                return Watched::Skipped;
            }
            self.skipped = 0;
        }
        let start = std::time::Instant::now();
        let zero = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        loop {
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            if !matches!(poll(&mut fds, Some(&zero)), Ok(0)) {
                self.misses = 0;
                return Watched::Caught;
            }
            if start.elapsed() >= SPIN {
                self.misses += 1;
                return Watched::Missed;
            }
            std::hint::spin_loop();
        }
    }
}

/// Lines gathered for the second reader.
struct Chunk {
    bytes: Vec<u8>,
    lines: usize,
}

type Share<'a> = &'a mut dyn FnMut(Vec<u8>) -> Result<(), Vec<u8>>;

/// Gives the gathered lines to the second reader, or takes them here when it has no room.
fn give(session: &Session, chunk: &mut Chunk, share: &mut Option<Share<'_>>) {
    if chunk.lines == 0 {
        return;
    }
    let bytes = std::mem::take(&mut chunk.bytes);
    chunk.lines = 0;
    let refused = match share.as_mut() {
        Some(share) => share(bytes).err(),
        None => Some(bytes),
    };
    if let Some(bytes) = refused {
        take_lines(session, &bytes);
    }
}

fn read_lines_sharing<R: Read>(session: &Session, read: R, mut share: Option<Share<'_>>) {
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, read);
    let mut line = Vec::new();
    // Alternates the shareable lines between the two threads.
    let mut turn = false;
    let mut chunk = Chunk {
        bytes: Vec::new(),
        lines: 0,
    };
    let mut spin = Spin::default();
    loop {
        session.wait_for_room();
        if !reader.buffer().contains(&b'\n') {
            // The next read may wait for the client: what was gathered is given now, and what
            // was answered goes out first. Then, if the reader answered, a moment's watch for
            // the client's next line saves the wake-up of a sleeping thread (`SPIN`).
            give(session, &mut chunk, &mut share);
            if session.flush_held()
                && let Some(fd) = borrow_open(session.input_fd.load(Ordering::Relaxed))
            {
                spin.watch(fd);
            }
        }
        match read_line(&mut reader, &mut line) {
            Ok(Line::Complete) => {
                let gathered = share.is_some()
                    && reader.buffer().contains(&b'\n')
                    && shareable(session, &line)
                    && {
                        turn = !turn;
                        turn
                    };
                if gathered {
                    chunk.bytes.extend_from_slice(&line);
                    chunk.lines += 1;
                    if chunk.lines >= CHUNK_LINES {
                        give(session, &mut chunk, &mut share);
                    }
                } else {
                    session.take_line(&line);
                }
            }
            Ok(Line::TooLong) => {
                let id = parse::id_from_prefix(parse::trim(&line)).unwrap_or_else(ClientId::null);
                tracing::error!("refused an incoming message longer than {MAX_LINE} bytes");
                let text = error_line(
                    &id,
                    -32600,
                    &format!(
                        "Invalid Request: the message is longer than {} MiB",
                        MAX_LINE / MIB
                    ),
                );
                session.lock().reply(text, &session.writable);
            }
            Ok(Line::End) => {
                give(session, &mut chunk, &mut share);
                session.take_line(&line);
                return;
            }
            Err(e) => {
                give(session, &mut chunk, &mut share);
                tracing::error!("reading stdin failed: {e}");
                return;
            }
        }
        // A huge line leaves no huge buffer behind.
        if line.capacity() > MIB {
            line = Vec::new();
        } else {
            line.clear();
        }
    }
}

enum Line {
    /// `line` holds one line (with its newline).
    Complete,
    /// The line was longer than `MAX_LINE`: `line` holds its beginning, the rest was skipped.
    TooLong,
    /// The input ended; `line` holds what came after the last newline.
    End,
}

fn read_line<R: BufRead>(reader: &mut R, line: &mut Vec<u8>) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let (used, found) = {
            let buf = match reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(if too_long { Line::TooLong } else { Line::End });
            }
            let nl = buf.iter().position(|b| *b == b'\n');
            let take = nl.map_or(buf.len(), |i| i + 1);
            if !too_long {
                if line.len() + take > MAX_LINE {
                    too_long = true;
                } else {
                    line.extend_from_slice(&buf[..take]);
                }
            }
            (take, nl.is_some())
        };
        reader.consume(used);
        if found {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

#[cfg(test)]
mod tests;
