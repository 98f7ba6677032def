//! Handshake-era sessions and their streams: our `SessionManager` for rmcp's
//! `StreamableHttpService`, in place of rmcp's `LocalSessionManager`, so that a dropped
//! connection loses nothing (the transport spec's resumability and redelivery).
//!
//! - A session is its id (128 random bits), its owner (the principal that opened it; anyone
//!   else is told it does not exist: `Front`), the messages its client sent waiting for the
//!   handler (`SessionTransport`), and its *streams*: stream 0 is the GET stream, stream `s ≥ 1`
//!   carries the answer to one POSTed request (with the progress and requests that belong to
//!   it).
//! - Every message the server sends is an *event* put in one stream's buffer with an id
//!   `s.n` (`n` counts events of the session: ids are never reused); a client connection
//!   reads a stream through a [`Cursor`], which only takes from the buffer. So a connection
//!   that goes away leaves the events where they were (the request is not cancelled), and a
//!   `GET` with `Last-Event-ID: s.n` gets exactly the events of stream `s` after `n`, then the
//!   live ones. The handler never waits for a client.
//! - What is held: an event is kept [`resume_window`](Limits) after it was made (60 s by
//!   default; undelivered ones while a reader is attached), at most [`STREAM_EVENTS`] per
//!   stream and [`SESSION_BYTES`] per session (beyond, the oldest that are not being sent go
//!   first), and all sessions together within the budget of answers (`answers.rs`): while
//!   requests wait for room there, the oldest events no reader is waiting for go first.
//! - A `Last-Event-ID` whose events after it are no longer all held is told so: the request's
//!   JSON-RPC error when its answer is gone, a `notifications/message` warning when other
//!   events are; one this session never sent (or forgot: [`STREAM_RECORDS`]) is refused by the
//!   front with 400 before it gets here (`Sessions::resumable`).
//! - A fresh `GET` starts from now: its first event is an empty one whose id marks where it
//!   began, so a client that loses it resumes from there too.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures_util::Stream;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorCode, ErrorData, GetMeta,
    JsonRpcError, ProgressToken, ProtocolVersion, RequestId, ServerJsonRpcMessage,
    ServerNotification, ServerResult,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionManager};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::SessionScope;
use super::answers::{Answer, Budget};
use crate::server::shared::lock;

const MIB: usize = 1024 * 1024;
/// Events one stream keeps for resumption, at most (a tool reporting progress twice a second
/// fills it in about two minutes; the oldest go first).
pub(crate) const STREAM_EVENTS: usize = 256;
/// Bytes of events one session keeps, at most, beyond those a reader is being sent (the oldest
/// of the others go first). All sessions together stay within the budget of answers.
pub(crate) const SESSION_BYTES: usize = 8 * MIB;
/// Streams a session remembers (to answer a late `Last-Event-ID` of one whose events are
/// gone), at most.
const STREAM_RECORDS: usize = 256;
/// How long clients are told to wait before they reconnect (the SSE `retry` field).
pub(super) const RETRY: Duration = Duration::from_secs(1);
/// A session nobody used for this long ends.
const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// Messages from a client waiting for the handler, per session.
const INBOX: usize = 64;
/// The logger name of the warnings this layer sends.
const LOGGER: &str = "mcp-manifest";

/// Who opened a session (`auth.rs`): the token's place in `tokens`, an OAuth issuer and
/// subject, or nobody in particular (`auth = "none"`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Principal(pub Option<String>);

/// Marks a request whose stream is not kept once read (the parts of a batch, answered as one).
#[derive(Debug, Clone, Copy)]
pub(super) struct Unresumable;

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    #[error("no such session")]
    NotFound,
    #[error("the session ended")]
    Ended,
    #[error("Last-Event-ID `{0}` names no event of this session that is still held")]
    UnknownEvent(String),
}

/// The session manager (see the module doc).
pub(super) struct Sessions {
    all: Mutex<HashMap<SessionId, Arc<Session>>>,
    window: Duration,
    budget: Arc<Budget>,
}

impl Sessions {
    pub(super) fn new(window: Duration, budget: Arc<Budget>) -> Arc<Sessions> {
        Arc::new(Sessions {
            all: Mutex::new(HashMap::new()),
            window,
            budget,
        })
    }

    fn get(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.all).get(id).cloned()
    }

    /// Sessions alive now.
    pub(super) fn count(&self) -> usize {
        lock(&self.all).len()
    }

    /// Whether session `id` exists and belongs to `who` (else it is as if it did not exist).
    pub(super) fn owned_by(&self, id: &str, who: &Principal) -> bool {
        self.get(id).is_some_and(|s| lock(&s.st).owner == *who)
    }

    /// The protocol version session `id` negotiated.
    pub(super) fn version(&self, id: &str) -> Option<ProtocolVersion> {
        self.get(id).and_then(|s| lock(&s.st).version.clone())
    }

    /// Marks session `id` used now.
    pub(super) fn touch(&self, id: &str) {
        if let Some(s) = self.get(id) {
            lock(&s.st).used = Instant::now();
        }
    }

    /// Whether the server asked session `id`'s client something with this id and waits for
    /// the answer (a JSON-RPC response a client POSTs is accepted only then).
    pub(super) fn asked(&self, id: &str, request: &RequestId) -> bool {
        self.get(id)
            .is_some_and(|s| lock(&s.st).asked.contains(request))
    }

    /// Why `GET` with this `Last-Event-ID` cannot resume a stream of session `id` (`None`: it
    /// can).
    pub(super) fn resumable(&self, id: &str, last_event_id: &str) -> Option<String> {
        let s = self.get(id)?;
        let st = lock(&s.st);
        match st.locate(last_event_id) {
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        }
    }

    /// The session used longest ago for which `busy` is false, to end to make room.
    pub(super) fn idle_longest(&self, busy: impl Fn(&str) -> bool) -> Option<SessionId> {
        let all = lock(&self.all);
        all.iter()
            .filter(|(id, _)| !busy(id))
            .map(|(id, s)| (id, lock(&s.st).used))
            .min_by_key(|(_, used)| *used)
            .map(|(id, _)| id.clone())
    }

    fn remove(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.all).remove(id)
    }

    /// Drops what is held past the resume window, ends sessions idle for [`SESSION_IDLE`], and,
    /// while requests wait for room in the budget of answers, gives back the oldest events no
    /// reader waits for. Runs until `stop`.
    pub(super) async fn keep(self: Arc<Sessions>, stop: CancellationToken) {
        loop {
            // Every 250 ms; every 20 ms while requests wait for room (and at once when they
            // begin to), so that held events give way quickly.
            let squeezed = self.budget.squeezed();
            let wait = if self.budget.pressed() {
                Duration::from_millis(20)
            } else {
                Duration::from_millis(250)
            };
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
                _ = squeezed => {}
            }
            let now = Instant::now();
            let sessions: Vec<Arc<Session>> = lock(&self.all).values().cloned().collect();
            let mut idle = Vec::new();
            for s in &sessions {
                let mut st = lock(&s.st);
                st.expire(now, self.window, &self.budget);
                if st.has_reader() {
                    st.used = now;
                } else if now.duration_since(st.used) > SESSION_IDLE {
                    idle.push(s.id.clone());
                }
            }
            if self.budget.pressed() {
                self.reclaim(&sessions);
            }
            for id in idle {
                tracing::debug!("session {} ended: idle for {SESSION_IDLE:?}", short(&id));
                let _ = self.close_session(&id).await;
            }
        }
    }

    /// Gives back events (oldest first, finished streams first) until the budget is not
    /// pressed any more or nothing is left that no reader waits for.
    fn reclaim(&self, sessions: &[Arc<Session>]) {
        let mut candidates: Vec<(Class, Instant, usize, u64)> = Vec::new();
        for (i, s) in sessions.iter().enumerate() {
            let st = lock(&s.st);
            for (&no, stream) in &st.streams {
                if let Some((class, at)) = stream.oldest_evictable() {
                    candidates.push((class, at, i, no));
                }
            }
        }
        candidates.sort();
        // One event at a time per candidate stream, then look again: streams age unevenly.
        while self.budget.pressed() && !candidates.is_empty() {
            let mut next = Vec::new();
            for (_, _, i, no) in candidates.drain(..) {
                let s = &sessions[i];
                let mut st = lock(&s.st);
                st.evict_front(no, &self.budget);
                if let Some((class, at)) = st.streams.get(&no).and_then(Stream_::oldest_evictable) {
                    next.push((class, at, i, no));
                }
                if !self.budget.pressed() {
                    return;
                }
            }
            next.sort();
            candidates = next;
        }
    }
}

impl SessionManager for Sessions {
    type Error = SessionError;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(SessionId, SessionTransport), SessionError> {
        let id: SessionId = new_id().into();
        let (tx, rx) = mpsc::channel(INBOX);
        let session = Arc::new(Session {
            id: id.clone(),
            st: Mutex::new(State::new()),
            inbox: Mutex::new(Some(tx)),
            scope: SessionScope {
                ended: CancellationToken::new(),
            },
            budget: self.budget.clone(),
        });
        lock(&self.all).insert(id.clone(), session.clone());
        tracing::debug!("session {} started", short(&id));
        Ok((id, SessionTransport { session, inbox: rx }))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionError> {
        let s = self.get(id).ok_or(SessionError::NotFound)?;
        let (tx, rx) = oneshot::channel();
        {
            let mut st = lock(&s.st);
            if let ClientJsonRpcMessage::Request(r) = &message {
                st.owner = principal_of(&r.request).unwrap_or_default();
                st.init = Some((r.id.clone(), tx));
            }
            st.used = Instant::now();
        }
        s.deliver(message).await?;
        rx.await.map_err(|_| SessionError::Ended)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        Ok(self.get(id).is_some())
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), SessionError> {
        if let Some(s) = self.remove(id) {
            tracing::debug!("session {} ended", short(id));
            s.end();
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        let s = self.get(id).ok_or(SessionError::NotFound)?;
        let cursor = {
            let mut st = lock(&s.st);
            st.used = Instant::now();
            let ClientJsonRpcMessage::Request(r) = &message else {
                return Err(SessionError::NotFound);
            };
            let parts = r.request.extensions().get::<axum::http::request::Parts>();
            let answer = parts.and_then(|p| p.extensions.get::<Answer>()).cloned();
            let unresumable = parts.is_some_and(|p| p.extensions.get::<Unresumable>().is_some());
            let no = st.next_stream;
            st.next_stream += 1;
            let mut stream = Stream_::new(Kind::Request(r.id.clone()));
            stream.answer = answer;
            stream.unresumable = unresumable;
            st.streams.insert(no, stream);
            st.forget_old_streams(&self.budget);
            if let Some(old) = st.routes.insert(Route::Request(r.id.clone()), no) {
                tracing::debug!("request id {} reused while stream {old} is open", r.id);
            }
            if let Some(token) = r.request.get_meta().get_progress_token() {
                st.routes.insert(Route::Progress(token), no);
            }
            // The priming event: an id to resume from, and how long to wait before.
            let n = st.push(no, ServerSseMessage::retry(RETRY), &self.budget);
            st.attach(&s, no, n, VecDeque::new())
        };
        s.deliver(message).await?;
        Ok(cursor)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionError> {
        let s = self.get(id).ok_or(SessionError::NotFound)?;
        {
            let mut st = lock(&s.st);
            st.used = Instant::now();
            match &message {
                ClientJsonRpcMessage::Notification(n) => {
                    if let ClientNotification::CancelledNotification(c) = &n.notification
                        && let Some(request) = &c.params.request_id
                    {
                        // The client gave up on it: its stream ends (nothing more is sent).
                        st.cancelled(request);
                    }
                }
                ClientJsonRpcMessage::Response(r) => {
                    st.asked.remove(&r.id);
                }
                ClientJsonRpcMessage::Error(e) => {
                    if let Some(id) = &e.id {
                        st.asked.remove(id);
                    }
                }
                ClientJsonRpcMessage::Request(_) => {}
            }
        }
        s.deliver(message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        let s = self.get(id).ok_or(SessionError::NotFound)?;
        let mut st = lock(&s.st);
        st.used = Instant::now();
        // From now: a marker event (not kept) whose id says where this stream began.
        let n = st.next_event;
        st.next_event += 1;
        let mut marker = ServerSseMessage::retry(RETRY);
        marker.event_id = Some(event_id(COMMON, n));
        Ok(st.attach(&s, COMMON, n + 1, VecDeque::from([marker])))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        let s = self.get(id).ok_or(SessionError::NotFound)?;
        let mut st = lock(&s.st);
        st.used = Instant::now();
        let (no, n) = st.locate(&last_event_id)?;
        let stream = st.streams.get(&no).ok_or(SessionError::NotFound)?;
        let lost_answer = match &stream.kind {
            Kind::Request(request) if stream.answer_lost() => Some(request.clone()),
            _ => None,
        };
        let lost = stream.lost_after(n);
        // The first event names where the stream resumed from: a client that loses this
        // connection before another event comes resumes from there again (the official
        // TypeScript SDK forgets the id otherwise).
        let mut first = VecDeque::from([ServerSseMessage::priming(event_id(no, n), RETRY)]);
        if let Some(request) = lost_answer {
            // The answer itself is gone: say so as the request's error, and end.
            first.push_back(ServerSseMessage::from_message(ServerJsonRpcMessage::Error(
                JsonRpcError::new(
                    Some(request.clone()),
                    ErrorData::new(
                        ErrorCode(-32000),
                        format!(
                            "the answer to request {request} is no longer held: answers wait {}s after they are made (`resume_window` in [server.http]), less when the server is short of room; send the request again",
                            self.window.as_secs()
                        ),
                        None,
                    ),
                ),
            )));
            let end = st.next_event;
            let mut c = st.attach(&s, no, end, first);
            c.done = true;
            return Ok(c);
        }
        if lost {
            first.push_back(ServerSseMessage::from_message(warning(format!(
                "messages of this stream were dropped while it was disconnected (they are kept {}s, fewer when the server is short of room): list or read again what you need",
                self.window.as_secs()
            ))));
        }
        Ok(st.attach(&s, no, n + 1, first))
    }
}

/// A `notifications/message` warning from this layer.
fn warning(text: String) -> ServerJsonRpcMessage {
    serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "warning", "logger": LOGGER, "data": text},
    }))
    .expect("a valid logging notification")
}

/// Who sent a request (the front put it in the HTTP request's extensions).
fn principal_of(request: &ClientRequest) -> Option<Principal> {
    request
        .extensions()
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<Principal>())
        .cloned()
}

use rmcp::model::GetExtensions;

/// 128 random bits, as 32 hex digits.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn short(id: &str) -> String {
    id.chars().take(8).collect()
}

/// The GET stream's number.
const COMMON: u64 = 0;

fn event_id(stream: u64, n: u64) -> String {
    format!("{stream}.{n}")
}

/// One session.
pub(super) struct Session {
    id: SessionId,
    st: Mutex<State>,
    /// The client's messages to the handler; `None` once the session ended.
    inbox: Mutex<Option<mpsc::Sender<ClientJsonRpcMessage>>>,
    scope: SessionScope,
    budget: Arc<Budget>,
}

impl Session {
    async fn deliver(&self, message: ClientJsonRpcMessage) -> Result<(), SessionError> {
        let tx = lock(&self.inbox).clone().ok_or(SessionError::Ended)?;
        tx.send(message).await.map_err(|_| SessionError::Ended)
    }

    /// Ends the session: the handler stops receiving, its calls are dropped, readers end, and
    /// what it held is given back.
    fn end(&self) {
        lock(&self.inbox).take();
        self.scope.ended.cancel();
        let mut st = lock(&self.st);
        st.ended = true;
        for stream in st.streams.values_mut() {
            if let Some(w) = stream.waker.take() {
                w.wake();
            }
            if let Some(a) = stream.answer.take() {
                a.done();
            }
        }
        st.streams.clear();
        self.budget.give(std::mem::take(&mut st.bytes));
    }

    /// A message from the handler, put in the stream it belongs to.
    fn outgoing(&self, message: ServerJsonRpcMessage) {
        let mut st = lock(&self.st);
        if st.ended {
            return;
        }
        st.route(message, &self.budget);
    }
}

/// What a message from the handler is routed by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Route {
    Request(RequestId),
    Progress(ProgressToken),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Common,
    Request(RequestId),
}

/// What may be given back first (the order of `Ord`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// An event of a stream whose answer was made.
    Finished,
    /// An event its reader already took.
    Delivered,
    /// An event no reader is attached to take.
    Unread,
}

struct Event {
    n: u64,
    at: Instant,
    bytes: usize,
    message: ServerSseMessage,
}

/// One stream's buffer.
struct Stream_ {
    kind: Kind,
    events: VecDeque<Event>,
    /// The highest event number dropped from this stream (0: none).
    dropped_to: u64,
    /// The number of the answer's event, once it was made.
    answer_n: Option<u64>,
    /// When the answer was made (or the request cancelled): nothing more comes.
    finished: Option<Instant>,
    /// The attached reader (`Cursor::token`); a newer one replaces it.
    reader: Option<u64>,
    waker: Option<Waker>,
    /// The highest event number the attached reader took.
    taken: u64,
    /// The request's share of the budget of answers, given back once its answer is made.
    answer: Option<Answer>,
    unresumable: bool,
}

impl Stream_ {
    fn new(kind: Kind) -> Stream_ {
        Stream_ {
            kind,
            events: VecDeque::new(),
            dropped_to: 0,
            answer_n: None,
            finished: None,
            reader: None,
            waker: None,
            taken: 0,
            answer: None,
            unresumable: false,
        }
    }

    /// Whether events of this stream after number `n` were dropped (dropped ones are always
    /// the oldest).
    fn lost_after(&self, n: u64) -> bool {
        self.dropped_to > n
    }

    /// Whether the answer was made and is no longer held.
    fn answer_lost(&self) -> bool {
        self.answer_n
            .is_some_and(|a| self.events.front().is_none_or(|e| e.n > a))
    }

    fn oldest_evictable(&self) -> Option<(Class, Instant)> {
        let e = self.events.front()?;
        let class = if self.finished.is_some() {
            Class::Finished
        } else if e.n <= self.taken {
            Class::Delivered
        } else if self.reader.is_none() {
            Class::Unread
        } else {
            return None;
        };
        Some((class, e.at))
    }

    fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

struct State {
    owner: Principal,
    version: Option<ProtocolVersion>,
    used: Instant,
    /// The next event number (session-wide; starts at 1).
    next_event: u64,
    next_stream: u64,
    next_reader: u64,
    streams: BTreeMap<u64, Stream_>,
    routes: HashMap<Route, u64>,
    /// The `initialize` waiting for its answer.
    init: Option<(RequestId, oneshot::Sender<ServerJsonRpcMessage>)>,
    /// Requests the server sent the client that wait for an answer.
    asked: HashSet<RequestId>,
    /// Bytes of the events held.
    bytes: usize,
    ended: bool,
}

impl State {
    fn new() -> State {
        let mut streams = BTreeMap::new();
        streams.insert(COMMON, Stream_::new(Kind::Common));
        State {
            owner: Principal::default(),
            version: None,
            used: Instant::now(),
            next_event: 1,
            next_stream: 1,
            next_reader: 0,
            streams,
            routes: HashMap::new(),
            init: None,
            asked: HashSet::new(),
            bytes: 0,
            ended: false,
        }
    }

    fn has_reader(&self) -> bool {
        self.streams.values().any(|s| s.reader.is_some())
    }

    /// The stream and event a `Last-Event-ID` names, if this session sent it and still holds
    /// what a resume needs.
    fn locate(&self, id: &str) -> Result<(u64, u64), SessionError> {
        let unknown =
            || SessionError::UnknownEvent(crate::quote::quote(id, crate::quote::Quote::Plain));
        let (s, n) = id.split_once('.').ok_or_else(unknown)?;
        let (s, n) = (
            s.parse::<u64>().map_err(|_| unknown())?,
            n.parse::<u64>().map_err(|_| unknown())?,
        );
        if n >= self.next_event || !self.streams.contains_key(&s) {
            return Err(unknown());
        }
        Ok((s, n))
    }

    /// Attaches a new reader to stream `no` that takes events from number `next` on, after
    /// `first`; the reader it replaces ends.
    fn attach(
        &mut self,
        session: &Arc<Session>,
        no: u64,
        next: u64,
        first: VecDeque<ServerSseMessage>,
    ) -> Cursor {
        let token = self.next_reader;
        self.next_reader += 1;
        if let Some(stream) = self.streams.get_mut(&no) {
            stream.reader = Some(token);
            stream.taken = next.saturating_sub(1).max(stream.taken);
            stream.wake();
        }
        Cursor {
            session: session.clone(),
            stream: no,
            token,
            next,
            first,
            done: false,
        }
    }

    /// Puts `message` in stream `no` with a new event id; returns its number.
    fn push(&mut self, no: u64, mut message: ServerSseMessage, budget: &Budget) -> u64 {
        let n = self.next_event;
        self.next_event += 1;
        message.event_id = Some(event_id(no, n));
        let bytes = weigh(&message);
        let Some(stream) = self.streams.get_mut(&no) else {
            return n;
        };
        stream.events.push_back(Event {
            n,
            at: Instant::now(),
            bytes,
            message,
        });
        self.bytes += bytes;
        budget.add(bytes);
        if stream.events.len() > STREAM_EVENTS {
            self.evict_front(no, budget);
        }
        self.keep_within(SESSION_BYTES, no, budget);
        if let Some(stream) = self.streams.get_mut(&no) {
            stream.wake();
        }
        n
    }

    /// Drops the oldest event of stream `no`.
    fn evict_front(&mut self, no: u64, budget: &Budget) {
        let Some(stream) = self.streams.get_mut(&no) else {
            return;
        };
        if let Some(e) = stream.events.pop_front() {
            stream.dropped_to = stream.dropped_to.max(e.n);
            self.bytes -= e.bytes;
            budget.give(e.bytes);
        }
    }

    /// While the session holds more than `cap`, drops the oldest events that are not being
    /// sent (never the newest of stream `newest`).
    fn keep_within(&mut self, cap: usize, newest: u64, budget: &Budget) {
        while self.bytes > cap {
            let victim = self
                .streams
                .iter()
                .filter(|(no, s)| **no != newest || s.events.len() > 1)
                .filter_map(|(no, s)| s.oldest_evictable().map(|(c, at)| (c, at, *no)))
                .min();
            match victim {
                Some((_, _, no)) => self.evict_front(no, budget),
                None => return,
            }
        }
    }

    /// Drops events older than the resume window (not those an attached reader has yet to
    /// take), and streams read to their end that are not to be kept.
    fn expire(&mut self, now: Instant, window: Duration, budget: &Budget) {
        let mut gone = Vec::new();
        for (&no, stream) in self.streams.iter_mut() {
            while let Some(e) = stream.events.front() {
                let old = now.duration_since(e.at) > window;
                let waited_for = stream.reader.is_some() && e.n > stream.taken;
                if !old || waited_for {
                    break;
                }
                let e = stream.events.pop_front().expect("a front");
                stream.dropped_to = stream.dropped_to.max(e.n);
                self.bytes -= e.bytes;
                budget.give(e.bytes);
            }
            if stream.unresumable && stream.finished.is_some() && stream.reader.is_none() {
                gone.push(no);
            }
        }
        for no in gone {
            self.drop_stream(no, budget);
        }
    }

    fn drop_stream(&mut self, no: u64, budget: &Budget) {
        if let Some(mut s) = self.streams.remove(&no) {
            let bytes: usize = s.events.iter().map(|e| e.bytes).sum();
            self.bytes -= bytes;
            budget.give(bytes);
            if let Some(a) = s.answer.take() {
                a.done();
            }
            s.wake();
        }
    }

    /// Keeps at most [`STREAM_RECORDS`] finished streams (the oldest go).
    fn forget_old_streams(&mut self, budget: &Budget) {
        let finished = self
            .streams
            .values()
            .filter(|s| s.finished.is_some())
            .count();
        if finished <= STREAM_RECORDS {
            return;
        }
        let victims: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, s)| s.finished.is_some() && s.reader.is_none())
            .map(|(no, _)| *no)
            .take(finished - STREAM_RECORDS)
            .collect();
        for no in victims {
            self.drop_stream(no, budget);
        }
    }

    /// The stream a message from the handler belongs to, and what it does to it.
    fn route(&mut self, message: ServerJsonRpcMessage, budget: &Budget) {
        use rmcp::model::JsonRpcMessage as M;
        match &message {
            M::Response(r) => {
                if self.init.as_ref().is_some_and(|(id, _)| *id == r.id) {
                    if let ServerResult::InitializeResult(init) = &r.result {
                        self.version = Some(init.protocol_version.clone());
                    }
                    let (_, tx) = self.init.take().expect("checked");
                    let _ = tx.send(message);
                    return;
                }
                let id = r.id.clone();
                self.answer(&id, message, budget);
            }
            M::Error(e) => {
                let Some(id) = e.id.clone() else {
                    tracing::debug!("an error without id from the handler: {:?}", e.error);
                    return;
                };
                if self.init.as_ref().is_some_and(|(i, _)| *i == id) {
                    let (_, tx) = self.init.take().expect("checked");
                    let _ = tx.send(message);
                    return;
                }
                self.answer(&id, message, budget);
            }
            M::Notification(n) => {
                let no = match &n.notification {
                    ServerNotification::ProgressNotification(p) => self
                        .routes
                        .get(&Route::Progress(p.params.progress_token.clone()))
                        .copied(),
                    _ => None,
                }
                .unwrap_or(COMMON);
                self.push(no, ServerSseMessage::from_message(message), budget);
            }
            M::Request(r) => {
                self.asked.insert(r.id.clone());
                let no = r
                    .request
                    .extensions()
                    .get::<rmcp::service::OriginatingRequestId>()
                    .and_then(|o| self.routes.get(&Route::Request(o.0.clone())).copied())
                    .unwrap_or(COMMON);
                self.push(no, ServerSseMessage::from_message(message), budget);
            }
        }
    }

    /// The answer to request `id`: the last event of its stream.
    fn answer(&mut self, id: &RequestId, message: ServerJsonRpcMessage, budget: &Budget) {
        let Some(no) = self.routes.remove(&Route::Request(id.clone())) else {
            // Cancelled by its client, or its session's stream is gone: nobody waits for it.
            tracing::debug!("an answer to request {id} nobody waits for");
            return;
        };
        self.routes.retain(|_, s| *s != no);
        let n = self.push(no, ServerSseMessage::from_message(message), budget);
        if let Some(stream) = self.streams.get_mut(&no) {
            stream.answer_n = Some(n);
            stream.finished = Some(Instant::now());
            if let Some(a) = stream.answer.take() {
                a.done();
            }
            stream.wake();
        }
        self.forget_old_streams(budget);
    }

    fn cancelled(&mut self, request: &RequestId) {
        if let Some(no) = self.routes.remove(&Route::Request(request.clone())) {
            self.routes.retain(|_, s| *s != no);
            if let Some(stream) = self.streams.get_mut(&no) {
                stream.finished = Some(Instant::now());
                stream.wake();
            }
        }
    }
}

/// The bytes an SSE event of `message` takes (its JSON), counted without keeping it.
fn weigh(message: &ServerSseMessage) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(64);
    if let Some(m) = &message.message {
        let _ = serde_json::to_writer(&mut c, m.as_ref());
    }
    c.0
}

/// A client connection's reader of one stream: it takes events from the stream's buffer (see
/// the module doc); dropped, it leaves them there.
pub(super) struct Cursor {
    session: Arc<Session>,
    stream: u64,
    token: u64,
    /// The number of the next event to take.
    next: u64,
    /// Events to send before the stream's own.
    first: VecDeque<ServerSseMessage>,
    /// Nothing more after `first`.
    done: bool,
}

impl Stream for Cursor {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(m) = this.first.pop_front() {
            return Poll::Ready(Some(m));
        }
        if this.done {
            return Poll::Ready(None);
        }
        let session = this.session.clone();
        let mut st = lock(&session.st);
        if st.ended {
            return Poll::Ready(None);
        }
        let Some(stream) = st.streams.get_mut(&this.stream) else {
            return Poll::Ready(None);
        };
        if stream.reader != Some(this.token) {
            // A newer reader took the stream over.
            return Poll::Ready(None);
        }
        let at = stream.events.partition_point(|e| e.n < this.next);
        if let Some(e) = stream.events.get(at) {
            let message = e.message.clone();
            let n = e.n;
            this.next = n + 1;
            stream.taken = stream.taken.max(n);
            if stream.answer_n == Some(n) {
                this.done = true;
            }
            return Poll::Ready(Some(message));
        }
        if stream.finished.is_some() {
            return Poll::Ready(None);
        }
        stream.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        let mut st = lock(&self.session.st);
        let budget = self.session.budget.clone();
        let Some(stream) = st.streams.get_mut(&self.stream) else {
            return;
        };
        if stream.reader != Some(self.token) {
            return;
        }
        stream.reader = None;
        stream.waker = None;
        if stream.unresumable && stream.finished.is_some() {
            let no = self.stream;
            st.drop_stream(no, &budget);
        }
    }
}

/// The session's side of rmcp's service: the client's messages in (tagged with the session's
/// scope), the handler's messages out into the streams.
pub(super) struct SessionTransport {
    session: Arc<Session>,
    inbox: mpsc::Receiver<ClientJsonRpcMessage>,
}

impl Drop for SessionTransport {
    fn drop(&mut self) {
        // The handler stopped: the session is over.
        self.session.end();
    }
}

impl Transport<RoleServer> for SessionTransport {
    type Error = SessionError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), SessionError>> + Send + 'static {
        self.session.outgoing(item);
        std::future::ready(Ok(()))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let ended = self.session.scope.ended.clone();
        tokio::select! {
            biased;
            _ = ended.cancelled() => None,
            m = self.inbox.recv() => m.map(|mut m| {
                m.insert_extension(self.session.scope.clone());
                m
            }),
        }
    }

    async fn close(&mut self) -> Result<(), SessionError> {
        self.session.end();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(bytes: usize) -> ServerSseMessage {
        ServerSseMessage::from_message(warning("x".repeat(bytes)))
    }

    /// What a session holds for resumption is bounded as documented: at most `STREAM_EVENTS`
    /// events a stream (the oldest go), at most `SESSION_BYTES` a session, and every byte held
    /// counted in the budget of answers until it goes.
    #[test]
    fn a_session_keeps_at_most_256_events_a_stream_and_8_mib() {
        let budget = Budget::new(usize::MAX / 4);
        let mut st = State::new();
        let ids: Vec<u64> = (0..300)
            .map(|_| st.push(COMMON, note(100), &budget))
            .collect();
        let kept = &st.streams[&COMMON].events;
        assert_eq!(kept.len(), STREAM_EVENTS);
        assert_eq!(kept.front().map(|e| e.n), Some(ids[300 - STREAM_EVENTS]));
        assert_eq!(st.streams[&COMMON].dropped_to, ids[300 - STREAM_EVENTS - 1]);
        // Ids grow and are never reused, whatever was dropped.
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(budget.used(), st.bytes);
        // 40 events of 512 KiB (20 MiB): the session keeps at most 8 MiB.
        for _ in 0..40 {
            st.push(COMMON, note(512 * 1024), &budget);
            assert!(st.bytes <= SESSION_BYTES, "{} bytes held", st.bytes);
        }
        assert!(st.bytes > SESSION_BYTES - MIB, "{} bytes held", st.bytes);
        assert_eq!(budget.used(), st.bytes);
        // Expired: nothing is left, and the budget has it all back.
        st.expire(
            Instant::now() + Duration::from_secs(120),
            Duration::from_secs(60),
            &budget,
        );
        assert_eq!(st.bytes, 0);
        assert_eq!(budget.used(), 0);
    }
}
