//! The one place that answers requests without rmcp: the stdio reader thread answers a bare
//! `ping` itself, and runs a plain `resources/read`, `resources/list` or `tools/list` (no
//! `_meta`, params it can read) through the same async calls as rmcp's handler
//! (`Registry::read`, `Registry::list_resources_page`, `Snapshot::tool_page`), polled once
//! on the reader: what is done at once (a small file, a cached page) is answered there; what
//! is not is finished on the runtime, as a request of its own (a work slot, reserved bytes,
//! cancellable by `notifications/cancelled`), without rmcp's per-request machinery.
//!
//! What it buys: no thread hand-off and no rmcp task for what the reader can answer at once.
//! In the suite (BENCHMARKS.md), pipelined `ping` ~1.1 M/s against ~25 000/s through rmcp,
//! pipelined small reads and `list/1` ~10× and ~30× what rmcp's path makes, `tools/list` of a
//! 202-tool manifest 3× faster; and a bare `ping` is answered while the routing thread is busy.
//! Only the last is something a client may feel (a liveness check never waits behind work);
//! the rest is kept because the suite's figures must stay within 1.5× (issue 30). Only in a
//! session that started with `initialize` before 2026-07-28 (whose answers rmcp shapes
//! differently), only once its answer is queued, and only while the budget has room (so it
//! never passes a request waiting for bytes); its answers count in the output queue like any
//! other. The test `reads_and_listings_answered_on_the_reader_are_what_rmcp_answers`
//! (tests/it/protocol.rs) compares every kind of answer with rmcp's.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use rmcp::model::{
    ErrorData, JsonRpcMessage, ListResourcesResult, NumberOrString, ReadResourceResult,
    ServerResult,
};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::super::convert::{contents, error, resource};
use super::super::shared::Shared;
use super::adapter::{deliver, route, serialize_answer};
use super::parse::{self, ClientId};
use super::session::{Session, Ticket, reserve_total_with};
use super::state::{Out, RecState, Record, State};
use super::{BUDGET, LIST_RESERVE, MAX_WORK, OUTPUT_CAP, READ_RESERVE};
use crate::providers::admit;
use crate::quote::{Quote, quote};

/// The methods the reader may answer itself: a bare `ping`, and what the [`Hook`] may answer.
const METHODS: &[&str] = &["ping", "resources/read", "resources/list", "tools/list"];

/// Answers the reader queued without waking the writer, at most (bytes): beyond, it wakes it.
/// The writer is otherwise woken once the reader has no whole line left (`Session::flush_held`):
/// one wake-up (a `futex` call, and a `write`) per burst of pipelined requests, not per answer.
/// Buys pipelined small reads ~1.3× and `list/1` ~1.9× (BENCHMARKS.md, issue 14's second pass).
const HOLD_CAP: usize = 64 * 1024;

/// What the reader may answer itself besides `ping`: given the method and its params as
/// written, a [`Job`], or `None` to leave the request to rmcp.
pub type Hook = Box<dyn Fn(&str, Option<&RawValue>) -> Option<Job> + Send + Sync>;

/// A request the reader runs itself.
pub struct Job {
    /// Bytes of the answer budget it reserves while it runs (as rmcp's handler would).
    pub reserve: usize,
    /// Whether its source may find its answer large and ask for room (`providers::admit`): a
    /// read. A listing's page is bounded; it runs without an admitter.
    pub admits: bool,
    /// What the log line names (a URI, quoted when logged), or nothing.
    pub subject: String,
    pub answer: Answer,
}

/// A result as rmcp's handler would give it.
pub enum Reply {
    Result(Box<ServerResult>),
    /// Serialized already, as rmcp serializes it (a `tools/list` page kept per manifest, a
    /// `resources/list` page kept while its listings stand).
    Json(Arc<str>),
}

/// Answers `text` here, or starts it here; `false` leaves it to rmcp.
pub(super) fn answer(session: &Arc<Session>, text: &[u8]) -> bool {
    let Some(req) = parse::direct(text, METHODS) else {
        return false;
    };
    if req.method == "ping" {
        let Some(line) = parse::ping_answer(&req) else {
            return false;
        };
        tracing::info!("ping  0.0 ms ok");
        LINE.with_borrow_mut(|bytes| {
            bytes.clear();
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
            hold_line(session, &mut session.lock(), bytes);
        });
        return true;
    }
    let Some((hook, runtime)) = session.direct.get() else {
        return false;
    };
    let Some(job) = hook(&req.method, req.params) else {
        return false;
    };
    let internal = session.next_id.fetch_add(1, Ordering::Relaxed);
    if !session.lock().start_direct(internal, &req.id, job.reserve) {
        return false;
    }
    let method = req.method.into_owned();
    let start = std::time::Instant::now();
    let mut answer = if job.admits {
        admitted(session, internal, job.reserve, job.answer)
    } else {
        job.answer
    };
    match answer
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(reply) => {
            log(&method, &job.subject, start, &reply);
            LINE.with_borrow_mut(|bytes| {
                bytes.clear();
                let shared = line_of(bytes, &req.id, internal, reply);
                let mut st = session.lock();
                // Its answer is bounded and counts in the output queue: its slot is free now.
                st.release(internal);
                match shared {
                    Some(page) => hold(
                        session,
                        &mut st,
                        Out {
                            bytes: bytes.clone(),
                            shared: Some(page),
                            release: None,
                        },
                    ),
                    None => hold_line(session, &mut st, bytes),
                }
                drop(st);
                if bytes.capacity() > LINE_KEPT {
                    *bytes = Vec::new();
                }
            });
        }
        Poll::Pending => {
            let stop = CancellationToken::new();
            {
                let mut st = session.lock();
                if let Some(r) = st.records.get_mut(&internal) {
                    r.stop = Some(stop.clone());
                    st.direct_running += 1;
                }
            }
            let session = session.clone();
            let subject = job.subject;
            runtime.spawn(async move {
                tokio::select! {
                    reply = answer => {
                        log(&method, &subject, start, &reply);
                        finish(session, internal, reply).await;
                    }
                    _ = stop.cancelled() => {}
                }
            });
        }
    }
    true
}

thread_local! {
    /// The reader's answer, written here and then copied into the output queue
    /// ([`hold_line`]): no allocation per answer, and none freed by the writer's thread (which
    /// contended for the allocator's lock with the reader's). With [`hold_line`], buys
    /// pipelined small reads ~1.17× and `list/1` ~1.1× (BENCHMARKS.md, "Issue 30, the kept read's
    /// check"), the figures issue 30 bounds.
    static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What [`LINE`] keeps between answers at most (bytes): a larger answer's room is given back.
const LINE_KEPT: usize = 1024 * 1024;

/// Writes the answer line of `reply` into `bytes` (empty), as `serialize_answer` writes it;
/// a page serialized already is returned to follow the line's head, which `bytes` then holds.
fn line_of(
    bytes: &mut Vec<u8>,
    id: &ClientId,
    internal: u64,
    reply: Result<Reply, ErrorData>,
) -> Option<Arc<str>> {
    match reply {
        Ok(Reply::Json(page)) => {
            parse::push_result_head(bytes, id);
            return Some(page);
        }
        Ok(Reply::Result(result)) => {
            // As `serialize_answer` writes it, without an envelope to build first.
            parse::push_result_head(bytes, id);
            match serde_json::to_writer(&mut *bytes, &result) {
                Ok(()) => bytes.extend_from_slice(b"}\n"),
                Err(e) => {
                    tracing::error!("an answer could not be serialized: {e}");
                    bytes.clear();
                    bytes.extend_from_slice(
                        parse::error_line(id, -32603, &format!("Internal error: {e}")).as_bytes(),
                    );
                    bytes.push(b'\n');
                }
            }
        }
        other => {
            bytes.extend_from_slice(&serialize_answer(&message(internal, other), id));
            bytes.push(b'\n');
        }
    }
    None
}

/// The future of a job the reader runs, with `providers::admit` asked of the session's budget,
/// as `server::admitted` does for rmcp's requests: a source that finds its answer will be large
/// (a files source, once it has opened a file of several MiB) waits, holding its work slot,
/// until the budget has room for it, before it reads a byte (`reserve_total_with`). Without
/// this, 8 reads of a 256 MiB file on this path were read at once (1.9 GiB).
type Answer = Pin<Box<dyn Future<Output = Result<Reply, ErrorData>> + Send>>;

fn admitted(session: &Arc<Session>, internal: u64, reserved: usize, answer: Answer) -> Answer {
    let ticket = Ticket {
        session: session.clone(),
        id: internal,
    };
    // What the answer is expected to weigh so far: its first reservation, then each size a
    // source said it would make.
    let want = Arc::new(AtomicUsize::new(reserved));
    let admitter: admit::Admitter = Arc::new(move |bytes| {
        let total = want
            .fetch_add(bytes, Ordering::AcqRel)
            .saturating_add(bytes);
        Box::pin(reserve_total_with(ticket.clone(), total))
    });
    Box::pin(admit::with(admitter, answer))
}

/// Delivers what a request started by the reader answered, as rmcp's answers are delivered.
async fn finish(session: Arc<Session>, internal: u64, reply: Result<Reply, ErrorData>) {
    let id = {
        let mut st = session.lock();
        // Cancelled meanwhile (its record is gone): nothing is written.
        let Some(r) = st.records.get_mut(&internal) else {
            return;
        };
        if r.stop.take().is_none() {
            return;
        }
        let id = r.id.clone();
        st.direct_running -= 1;
        id
    };
    if let Ok(Reply::Json(json)) = &reply {
        let bytes = parse::result_line(&id, json).into_bytes();
        let mut st = session.lock();
        if st.answered(internal, bytes, &session.writable) {
            st.wake_writer(&session.writable);
        }
        session.wake(&st);
        return;
    }
    let item = message(internal, reply);
    let route = route(&session, &item);
    // Writing to a queue cannot fail.
    let _ = deliver(session, item, route).await;
}

/// The answer as rmcp's loop would hand it to the transport (with our internal id).
fn message(
    internal: u64,
    reply: Result<Reply, ErrorData>,
) -> rmcp::service::TxJsonRpcMessage<rmcp::service::RoleServer> {
    let id = NumberOrString::Number(internal as i64);
    match reply {
        Ok(Reply::Result(result)) => JsonRpcMessage::response(*result, id),
        Ok(Reply::Json(_)) => JsonRpcMessage::error(
            ErrorData::internal_error("a serialized result where none was expected", None),
            Some(id),
        ),
        Err(e) => JsonRpcMessage::error(e, Some(id)),
    }
}

/// One line per request, as `server::Gate` logs those rmcp runs.
fn log(method: &str, subject: &str, start: std::time::Instant, reply: &Result<Reply, ErrorData>) {
    if !tracing::enabled!(tracing::Level::INFO) {
        return;
    }
    let outcome = match reply {
        Ok(_) => "ok".to_owned(),
        Err(e) => format!("error {}", e.code.0),
    };
    let subject = if subject.is_empty() {
        String::new()
    } else {
        quote(subject, Quote::Plain)
    };
    tracing::info!(
        "{method} {subject} {:.1} ms {outcome}",
        start.elapsed().as_secs_f64() * 1000.0
    );
}

/// The reader's input, each read of it marked as an arrival (`providers::arrival`): a kept
/// small read checked on the reader after the input's last read is not checked again for the
/// other requests that read brought (pipelined reads of one file).
pub(super) struct Arrivals<R>(pub R);

impl<R: std::io::Read> std::io::Read for Arrivals<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        crate::providers::arrival::input_arrived();
        Ok(n)
    }
}

/// Queues an answer of the reader's without waking the writer (see [`HOLD_CAP`]).
fn hold(session: &Session, st: &mut State, out: Out) {
    st.enqueue(out);
    held(session, st);
}

/// [`hold`] for an answer line written in `line`: added to the end of the queue's last line
/// when that one is plain bytes released by nothing (an answer of the reader's, an error
/// line) and has room below [`HOLD_CAP`], else queued as a line of its own. Pipelined answers
/// go out as one buffer per [`HOLD_CAP`], allocated and grown on the reader.
fn hold_line(session: &Session, st: &mut State, line: &[u8]) {
    match st.out.back_mut() {
        Some(last)
            if !st.out_closed
                && last.shared.is_none()
                && last.release.is_none()
                && last.bytes.len() + line.len() <= HOLD_CAP =>
        {
            last.bytes.extend_from_slice(line);
            st.out_bytes += line.len();
        }
        _ => st.enqueue(Out {
            bytes: line.to_vec(),
            shared: None,
            release: None,
        }),
    }
    held(session, st);
}

fn held(session: &Session, st: &mut State) {
    st.held = true;
    if st.out_bytes >= HOLD_CAP {
        st.held = false;
        st.wake_writer(&session.writable);
    }
}

impl State {
    /// Takes a work slot and `need` bytes of the budget for a request the reader runs, if it
    /// may start now: a slot, the output queue and the budget have room, and no reservation
    /// waits (so what runs here holds at most `BUDGET / need` slots, and never passes a request
    /// of rmcp's waiting for bytes). `false`: it goes to rmcp like any request.
    fn start_direct(&mut self, internal: u64, id: &ClientId, need: usize) -> bool {
        let need = need.min(BUDGET);
        let admitted = !self.closed
            && self.work_used < MAX_WORK
            && self.out_bytes < OUTPUT_CAP
            && self.waiters.is_empty()
            && self.used() + need <= BUDGET;
        if admitted {
            self.work_used += 1;
            self.reserved += need;
            self.records.insert(
                internal,
                Record {
                    id: id.clone(),
                    class: parse::Class::Work,
                    batch: None,
                    held: need,
                    state: RecState::Running,
                    stop: None,
                },
            );
        }
        admitted
    }
}

/// The server's [`Hook`]: `resources/read`, `resources/list` and `tools/list` as rmcp's handler
/// answers them in a session before 2026-07-28 (no `resultType`, no `_meta`). Requests with
/// anything else in their params (`_meta`, a progress token) are left to rmcp, and so is every
/// request of a session that sees only part of the server (`group`, `[server] expose`): the
/// handler filters.
pub fn hook(shared: Arc<Shared>, group: Option<Arc<str>>) -> Hook {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Read {
        uri: String,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    struct List {
        #[serde(default)]
        cursor: Option<String>,
    }
    fn list(params: Option<&RawValue>) -> Option<List> {
        match params {
            Some(p) => serde_json::from_str(p.get()).ok(),
            None => Some(List::default()),
        }
    }
    Box::new(move |method, params| {
        if shared.snapshot().seen(group.as_deref()).is_some() {
            return None;
        }
        let shared = shared.clone();
        match method {
            "resources/read" => {
                let p: Read = serde_json::from_str(params?.get()).ok()?;
                Some(Job {
                    reserve: READ_RESERVE,
                    admits: true,
                    subject: p.uri.clone(),
                    answer: Box::pin(async move {
                        let snap = shared.snapshot();
                        let found = snap.registry.read(&p.uri).await.map_err(error)?;
                        let mut result =
                            ReadResourceResult::new(found.into_iter().map(contents).collect());
                        result.result_type = None;
                        Ok(Reply::Result(Box::new(ServerResult::ReadResourceResult(
                            result,
                        ))))
                    }),
                })
            }
            "resources/list" => {
                let p = list(params)?;
                let snap = shared.snapshot();
                // Read before the sources are listed: a change meanwhile gives another stamp.
                let stamp = snap.registry.listing_stamp();
                let kept = stamp.and_then(|stamp| snap.resource_page(p.cursor.as_deref(), stamp));
                let answer: Answer = match kept {
                    Some(page) => Box::pin(std::future::ready(Ok(Reply::Json(page)))),
                    None => Box::pin(async move {
                        let (items, next) = snap
                            .registry
                            .list_resources_page(p.cursor.as_deref())
                            .await
                            .map_err(error)?;
                        let mut result = ListResourcesResult::with_all_items(
                            items.into_iter().map(resource).collect(),
                        );
                        result.next_cursor = next;
                        result.result_type = None;
                        let result = ServerResult::ListResourcesResult(result);
                        // Kept as written when the listings can say they still stand.
                        if let Some(stamp) = stamp
                            && let Ok(json) = serde_json::to_string(&result)
                        {
                            let json: Arc<str> = Arc::from(json);
                            snap.keep_resource_page(p.cursor, stamp, json.clone());
                            return Ok(Reply::Json(json));
                        }
                        Ok(Reply::Result(Box::new(result)))
                    }),
                };
                Some(Job {
                    reserve: LIST_RESERVE,
                    admits: false,
                    subject: String::new(),
                    answer,
                })
            }
            "tools/list" => {
                let p = list(params)?;
                let snap = shared.snapshot();
                // No tools: rmcp answers "method not found"; a bad cursor: rmcp's error.
                snap.info.capabilities.tools.as_ref()?;
                let page = snap.tool_page(p.cursor.as_deref())?;
                Some(Job {
                    reserve: LIST_RESERVE,
                    admits: false,
                    subject: String::new(),
                    answer: Box::pin(std::future::ready(Ok(Reply::Json(page)))),
                })
            }
            _ => None,
        }
    })
}
