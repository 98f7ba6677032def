//! MCP over Streamable HTTP (`serve --http`): one `/mcp` endpoint for both eras, on rmcp's
//! `StreamableHttpService` in an axum `Router`, many sessions over one `Shared` (one manifest,
//! one watcher, one set of caches).
//!
//! - The connections (`conns.rs`): at most `max_connections` at once, closed after
//!   `idle_timeout` doing nothing (no request, a head not arriving, an answer not taken), heads
//!   of at most 64 KiB.
//! - The answers held at once, all clients together, bounded by one budget (`answers.rs`): a
//!   request reserves before it makes a large answer, and the room comes back once it is sent.
//! - Handshake-era clients get a session (`Mcp-Session-Id`; rmcp's `LocalSessionManager`) whose
//!   server notifications travel on its GET stream; 2026-07-28 requests need no session (rmcp
//!   serves them statelessly, one handler per request) and subscribe with
//!   `subscriptions/listen`. rmcp answers the transport rules: unknown session 404, `Host` and
//!   `Origin` checks (403), `Mcp-Method` / version header mismatches (400, -32020).
//! - In front of rmcp, `front_layer` (one middleware for every route): refuses while draining (503),
//!   authenticates `/mcp` (`auth.rs`), caps bodies (413), bounds each session's requests in
//!   flight (429), answers CORS preflights for allowed origins, and writes one access line per
//!   request when its response ends (method, session or none, status, duration).
//! - A session that ends (DELETE, expiry, server stop) cancels its `SessionScope`: the calls it
//!   still runs are dropped, which kills the process groups they started (`process.rs`).
//! - SIGTERM / SIGINT: stop accepting, end listen streams (with their result), let requests in
//!   flight and those results finish (up to `DRAIN`), kill every tool process, end the
//!   sessions, return.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Path;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use axum::middleware::{self, Next};
use axum::routing::{any, get};
use futures_util::Stream;
use http_body_util::BodyExt;
use rmcp::model::{ClientJsonRpcMessage, ErrorData, ServerJsonRpcMessage};
use rmcp::service::{RequestContext, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionManager};
use rmcp::transport::streamable_http_server::{
    SessionId, StreamableHttpServerConfig, StreamableHttpService,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod answers;
mod conns;
mod endpoints;

use super::auth::Auth;
use super::shared::{Shared, Throttled, lock};
use super::{Handler, scopeguard};
use crate::manifest::open_listen_refusal;
use crate::registry::Registry;

/// The largest request body (larger is 413).
pub(crate) const MAX_BODY: usize = 4 * 1024 * 1024;
/// Request bodies held at once, all connections together (bytes): a body is read only while
/// the bytes it holds fit, so many clients sending large bodies wait (their connections are not
/// read: TCP backpressure) instead of growing the server by 4 MiB each.
const BODY_BUDGET: usize = 32 * 1024 * 1024;
/// Requests one session may have in flight (as on stdio); more are 429.
const SESSION_IN_FLIGHT: usize = 256;
/// How long requests in flight may take to finish once SIGTERM arrived.
const DRAIN: Duration = Duration::from_secs(10);
/// How long an idle handshake-era session lives.
const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// The name of the session header.
const SESSION_HEADER: &str = "mcp-session-id";

/// Serves `registry` over HTTP on `listen` until SIGTERM or SIGINT; `ready` hears the bound
/// address (port 0 picks a free one).
pub(crate) async fn serve_http(
    registry: Registry,
    listen: SocketAddr,
    ready: impl FnOnce(SocketAddr, &str),
) -> anyhow::Result<()> {
    serve(registry, listen, ready, super::terminate_or_interrupt()).await
}

/// `serve_http` with the stop signal passed in.
pub(crate) async fn serve(
    registry: Registry,
    listen: SocketAddr,
    ready: impl FnOnce(SocketAddr, &str),
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let http = registry.manifest.server.http.clone();
    if !listen.ip().is_loopback() && matches!(http.auth, crate::manifest::HttpAuth::None) {
        anyhow::bail!("{}", open_listen_refusal(&listen));
    }
    let auth = Auth::start(&http.auth).await?;
    let children = registry.children.clone();
    let _children = scopeguard(move || children.kill_all());
    let name = registry.manifest.server.name.clone();
    let shared = Shared::new(registry);
    let watching = tokio::spawn(shared.clone().watch_loop());
    let _stop_watching = scopeguard(move || watching.abort());

    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let bound = listener.local_addr()?;
    // The server's own origins (a page it would serve itself) and the configured ones.
    let mut origins = own_origins(bound);
    origins.extend(http.allowed_origins.iter().cloned());

    // rmcp's token: cancelling it ends every session and stream (the last step of a drain).
    let sessions_end = CancellationToken::new();
    let hosts = allowed_hosts(listen, &http.allowed_hosts);
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(origins.clone())
        .enforce_origin_validation()
        .with_cancellation_token(sessions_end.clone())
        .with_json_response(true)
        .with_max_request_body_bytes(MAX_BODY);
    config = match hosts {
        Some(h) => config.with_allowed_hosts(h),
        None => config.disable_allowed_hosts(),
    };
    let mut local = LocalSessionManager::default();
    local.session_config.keep_alive = Some(SESSION_IDLE);
    let factory_shared = shared.clone();
    let sessions = Arc::new(Sessions {
        inner: local,
        live: Arc::new(Mutex::new(HashMap::new())),
    });
    let groups = endpoints::Groups::new(shared.clone(), sessions.clone(), config.clone());
    let service = StreamableHttpService::new(
        move || {
            Ok(Handler {
                session: factory_shared.open_session(CancellationToken::new()),
                shared: factory_shared.clone(),
                group: None,
            })
        },
        sessions.clone(),
        config,
    );

    let front = Arc::new(Front {
        shared: shared.clone(),
        auth,
        name,
        origins,
        draining: CancellationToken::new(),
        in_flight: AtomicUsize::new(0),
        idle: tokio::sync::Notify::new(),
        per_session: Mutex::new(HashMap::new()),
        sessions,
        max_sessions: http.max_sessions,
        room: Mutex::new(Throttled::default()),
        bodies: Arc::new(tokio::sync::Semaphore::new(BODY_BUDGET)),
        body_timeout: http.idle_timeout,
        answers: answers::Budget::new(answers::ANSWER_BUDGET),
    });
    let (card_shared, catalog_shared) = (shared.clone(), shared.clone());
    let app = Router::new()
        .route_service("/mcp", service)
        .route_service("/mcp/{group}", groups)
        .route(
            "/mcp/server-card",
            any(move |method: Method, headers: HeaderMap| {
                let shared = card_shared.clone();
                async move { endpoints::card_response(&shared, bound, None, &method, &headers) }
            }),
        )
        .route(
            "/mcp/{group}/server-card",
            any({
                let shared = shared.clone();
                move |Path(group): Path<String>, method: Method, headers: HeaderMap| {
                    let shared = shared.clone();
                    async move {
                        endpoints::card_response(&shared, bound, Some(&group), &method, &headers)
                    }
                }
            }),
        )
        .route(
            "/.well-known/ai-catalog.json",
            any(move |method: Method, headers: HeaderMap| {
                let shared = catalog_shared.clone();
                async move {
                    match endpoints::catalog_response(&shared, bound, &method, &headers) {
                        Some(r) => r,
                        None => not_found().await,
                    }
                }
            }),
        )
        .route("/healthz", get(healthz))
        .route("/.well-known/oauth-protected-resource", get(metadata))
        .route(
            "/.well-known/oauth-protected-resource/{*rest}",
            get(metadata),
        )
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(front.clone(), front_layer))
        .with_state(front.clone());

    ready(bound, front.auth.name());
    let cap = conns::connection_cap(http.max_connections);
    let server = tokio::spawn(conns::serve(
        listener,
        app,
        cap,
        http.idle_timeout,
        front.answers.clone(),
        front.draining.clone(),
    ));
    let mut server = std::pin::pin!(server);
    tokio::select! {
        r = &mut server => {
            return r.map_err(|e| anyhow::anyhow!("the HTTP server failed: {e}"));
        }
        _ = shutdown => {}
    }

    // Drain: no new connections or requests; listen streams end with their result; requests in
    // flight get `DRAIN` to finish; then every tool process goes and every session ends.
    tracing::info!("stopping: finishing the requests in flight");
    front.draining.cancel();
    shared.stopping.cancel();
    let finished = tokio::time::timeout(DRAIN, front.all_done()).await.is_ok();
    if !finished {
        tracing::warn!(
            "{} requests still running after {DRAIN:?}; stopping them",
            front.in_flight.load(Ordering::SeqCst)
        );
    }
    shared.registry().children.kill_all();
    sessions_end.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(2), &mut server).await;
    Ok(())
}

/// The `Host` values accepted (DNS-rebinding protection): the listen address (and the loopback
/// names for a loopback or any-interface address) plus `allowed_hosts`; `None` is any host.
fn allowed_hosts(listen: SocketAddr, configured: &[String]) -> Option<Vec<String>> {
    if configured.iter().any(|h| h == "*") {
        return None;
    }
    let ip = listen.ip();
    let mut hosts: Vec<String> = Vec::new();
    if ip.is_loopback() || ip.is_unspecified() {
        hosts.extend(["localhost", "127.0.0.1", "::1"].map(String::from));
    }
    if !ip.is_unspecified() && !hosts.contains(&ip.to_string()) {
        hosts.push(ip.to_string());
    } else if ip.is_unspecified() && configured.is_empty() {
        tracing::warn!(
            "listening on {listen} (every interface) accepts only loopback names in `Host`: list the names clients use in `server.http.allowed_hosts`"
        );
    }
    for h in configured {
        if !hosts.contains(h) {
            hosts.push(h.clone());
        }
    }
    Some(hosts)
}

/// `http://HOST:PORT` for the names this address is reached by directly: requests from a page
/// of the same origin are not cross-origin.
fn own_origins(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    let ip = bound.ip();
    let mut hosts = Vec::new();
    if ip.is_loopback() || ip.is_unspecified() {
        hosts.extend([
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "[::1]".to_owned(),
        ]);
    }
    if !ip.is_unspecified() {
        hosts.push(match ip {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        });
    }
    let mut out: Vec<String> = Vec::new();
    for h in hosts {
        let o = format!("http://{h}:{port}");
        if !out.contains(&o) {
            out.push(o);
        }
    }
    out
}

/// What the middleware shares: authentication, the drain state, requests in flight.
struct Front {
    shared: Arc<Shared>,
    auth: Auth,
    /// The server's name (for the metadata document).
    name: String,
    /// Allowed origins, normalized (`scheme://host:port`, `:*`, `null`), for CORS.
    origins: Vec<String>,
    /// Cancelled on SIGTERM: no new requests.
    draining: CancellationToken,
    /// Requests whose answer is not complete yet, `subscriptions/listen` streams included (a
    /// session's GET stream is not counted: it ends only when the session does).
    in_flight: AtomicUsize,
    idle: tokio::sync::Notify,
    /// Requests in flight (and open GET streams) per `Mcp-Session-Id`.
    per_session: Mutex<HashMap<String, usize>>,
    sessions: Arc<Sessions>,
    /// `[server.http] max_sessions`.
    max_sessions: usize,
    /// Sessions ended to make room.
    room: Mutex<Throttled>,
    /// `BODY_BUDGET`, one permit a byte of the bodies held.
    bodies: Arc<tokio::sync::Semaphore>,
    /// How long a request body may take to arrive (waiting for `BODY_BUDGET` included): a
    /// client that stalls in the middle of one gives back what it held (408).
    /// `[server.http] idle_timeout`.
    body_timeout: Duration,
    /// The room answers take, all requests together.
    answers: Arc<answers::Budget>,
}

impl Front {
    /// Waits until no request is in flight.
    async fn all_done(&self) {
        loop {
            let notified = self.idle.notified();
            if self.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    fn take_slot(&self, session: &str) -> bool {
        let mut all = lock(&self.per_session);
        let n = all.entry(session.to_owned()).or_insert(0);
        if *n >= SESSION_IN_FLIGHT {
            return false;
        }
        *n += 1;
        true
    }

    fn give_slot(&self, session: &str) {
        let mut all = lock(&self.per_session);
        if let Some(n) = all.get_mut(session) {
            *n -= 1;
            if *n == 0 {
                all.remove(session);
            }
        }
    }

    /// Makes room for one more handshake-era session: while `max_sessions` are kept, the one
    /// used longest ago that has no request in flight and no open stream ends (its client gets
    /// 404 and starts a new session). False when every session is busy.
    async fn make_room(&self) -> bool {
        loop {
            let victim = {
                let mut live = lock(&self.sessions.live);
                if live.len() < self.max_sessions {
                    return true;
                }
                let busy = lock(&self.per_session);
                let victim = live
                    .iter()
                    .filter(|(id, _)| !busy.contains_key(id.as_ref()))
                    .min_by_key(|(_, used)| **used)
                    .map(|(id, _)| id.clone());
                match victim {
                    Some(id) => {
                        live.remove(&id);
                        id
                    }
                    None => return false,
                }
            };
            tracing::debug!("session {} ended to make room", short(&victim));
            if let Some(n) = lock(&self.room).count() {
                tracing::warn!(
                    "{n} idle sessions ended to make room for new ones: {} are kept at most (`max_sessions` in [server.http]); their clients start new sessions when they come back",
                    self.max_sessions
                );
            }
            if let Err(e) = self.sessions.inner.close_session(&victim).await {
                tracing::warn!("session {}: {e}", short(&victim));
            }
        }
    }

    fn allowed_origin<'h>(&self, headers: &'h HeaderMap) -> Option<&'h HeaderValue> {
        let value = headers.get(header::ORIGIN)?;
        let origin = value.to_str().ok()?;
        origin_allowed(origin, &self.origins).then_some(value)
    }
}

/// Whether a browser's `Origin` is on the allow-list (entries as `manifest::http` normalized them).
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    let o = origin.trim().to_ascii_lowercase();
    if o == "null" {
        return allowed.iter().any(|a| a == "null");
    }
    let Some((scheme, authority)) = o.split_once("://") else {
        return false;
    };
    let with_port = match authority.rsplit_once(':') {
        Some((_, port)) if !authority.ends_with(']') && port.parse::<u16>().is_ok() => o.clone(),
        _ => match scheme {
            "http" => format!("{o}:80"),
            "https" => format!("{o}:443"),
            _ => return false,
        },
    };
    allowed.iter().any(|a| match a.strip_suffix(":*") {
        Some(base) => with_port
            .rsplit_once(':')
            .is_some_and(|(host, _)| host == base),
        None => *a == with_port,
    })
}

/// One request's entry in the access log and in the counts; it is written and released when
/// the response body ends (or is dropped, when the client goes away).
struct Entry {
    front: Arc<Front>,
    start: Instant,
    method: Method,
    path: String,
    rpc: Option<String>,
    session: Option<String>,
    status: u16,
    /// Counted in `in_flight`.
    counted: bool,
    /// Holds one of its session's slots.
    slot: Option<String>,
    /// Its answer's share of the budget of answers.
    answer: Option<answers::Answer>,
    /// Its response's body began and did not reach its end (the connection went away).
    cut: bool,
}

impl Entry {
    /// Wraps `response` so this entry ends with its body.
    fn finish(mut self, mut response: Response<Body>) -> Response<Body> {
        self.status = response.status().as_u16();
        if self.session.is_none() {
            self.session = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
        }
        let body = std::mem::take(response.body_mut());
        *response.body_mut() = Body::new(Watched {
            inner: body,
            rest: Bytes::new(),
            ended: false,
            entry: self,
        });
        response
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if self.counted && self.front.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.front.idle.notify_waiters();
        }
        if let Some(s) = &self.slot {
            self.front.give_slot(s);
        }
        if let Some(a) = &self.answer {
            a.done();
        }
        // A session id gives access to the session: only its start is logged.
        let session = match &self.session {
            Some(s) => s.chars().take(8).collect::<String>(),
            None => "none".to_owned(),
        };
        tracing::info!(
            target: "mcp_manifest::access",
            "{} {} {} session={} status={} {:.1}ms{}",
            self.method,
            self.path,
            self.rpc.as_deref().unwrap_or("-"),
            session,
            self.status,
            self.start.elapsed().as_secs_f64() * 1000.0,
            if self.cut { " (not all sent)" } else { "" }
        );
    }
}

/// A response body that drops its `Entry` when it ends. It hands hyper its data
/// [`conns::READ_AHEAD`] bytes at a time, so hyper takes the next piece only once the client
/// took the last: the `Entry` (and the answer's share of the budget) lives until nearly all of
/// the answer has been sent, not just until hyper queued it.
struct Watched {
    inner: Body,
    /// What hyper has not taken yet of the last data frame.
    rest: Bytes,
    /// The body said it ended.
    ended: bool,
    entry: Entry,
}

impl Drop for Watched {
    fn drop(&mut self) {
        let finished = self.ended || (self.rest.is_empty() && self.inner.is_end_stream());
        self.entry.cut = !finished;
    }
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        if self.rest.is_empty() {
            match std::task::ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => self.rest = data,
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                None => {
                    self.ended = true;
                    return Poll::Ready(None);
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
            }
        }
        let n = self.rest.len().min(conns::READ_AHEAD);
        Poll::Ready(Some(Ok(http_body::Frame::data(self.rest.split_to(n)))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let inner = self.inner.size_hint();
        let rest = self.rest.len() as u64;
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

fn text_response(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Body::from(text.to_owned()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// The JSON-RPC method of a body (`batch` for an array), for the log; cut like a message quotes
/// it (a client may send a method name of megabytes).
fn rpc_method(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Peek {
        method: Option<String>,
    }
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => Some("batch".into()),
        _ => serde_json::from_slice::<Peek>(body)
            .ok()?
            .method
            .map(|m| crate::quote::quote(&m, crate::quote::Quote::Plain)),
    }
}

/// The middleware in front of every route (see the module doc).
async fn front_layer(State(front): State<Arc<Front>>, req: Request, next: Next) -> Response<Body> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut entry = Entry {
        front: front.clone(),
        start: Instant::now(),
        method: method.clone(),
        path: path.clone(),
        rpc: None,
        session: session.clone(),
        status: 0,
        counted: false,
        slot: None,
        answer: None,
        cut: false,
    };
    let cors = front.allowed_origin(req.headers()).cloned();
    let group = match endpoints::path(&path) {
        endpoints::Path::Mcp => None,
        endpoints::Path::Group(g) => Some(g.to_owned()),
        // Cards, health, metadata: public, answered without authentication.
        _ => {
            let response = next.run(req).await;
            return entry.finish(response);
        }
    };
    if method == Method::OPTIONS {
        return entry.finish(preflight(cors));
    }
    if front.draining.is_cancelled() {
        let mut r = text_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: the server is stopping",
        );
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return entry.finish(with_cors(r, cors));
    }
    if let Err(denied) = front.auth.check(req.headers()).await {
        let r = front.auth.refusal(&denied, req.headers());
        return entry.finish(with_cors(r, cors));
    }
    let (parts, body) = req.into_parts();
    // The body's share of `BODY_BUDGET`, given back once rmcp has answered (or started the
    // stream): the message it parsed lives as long.
    let mut body_held = None;
    let body = if method == Method::POST {
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_BODY as u64) {
            return entry.finish(with_cors(too_large(), cors));
        }
        let read =
            tokio::time::timeout(front.body_timeout, read_body(&front.bodies, body, declared));
        let bytes = match read.await {
            Ok(Ok((bytes, held))) => {
                body_held = Some(held);
                bytes
            }
            Ok(Err(BodyError::TooLarge)) => {
                return entry.finish(with_cors(too_large(), cors));
            }
            Ok(Err(BodyError::Unreadable)) => {
                return entry.finish(text_response(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: the body could not be read",
                ));
            }
            Err(_) => {
                let mut r = text_response(
                    StatusCode::REQUEST_TIMEOUT,
                    &format!(
                        "Request Timeout: the body did not arrive within {}s",
                        front.body_timeout.as_secs_f64()
                    ),
                );
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return entry.finish(with_cors(r, cors));
            }
        };
        entry.rpc = rpc_method(&bytes);
        if entry.rpc.as_deref() == Some("subscriptions/listen")
            && let Err(refusal) = admit_listen(&front.shared, group.as_deref(), &bytes).await
        {
            return entry.finish(with_cors(refusal, cors));
        }
        Body::from(bytes)
    } else {
        body
    };
    let streams_only =
        method == Method::GET || entry.rpc.as_deref() == Some("subscriptions/listen");
    if method == Method::POST
        && session.is_none()
        && entry.rpc.as_deref() == Some("initialize")
        && !front.make_room().await
    {
        let mut r = text_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "Service Unavailable: all {} sessions (max_sessions) have requests in flight or open streams",
                front.max_sessions
            ),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return entry.finish(with_cors(r, cors));
    }
    // A session's requests and its GET stream mark it busy (never ended to make room).
    if (method == Method::POST || method == Method::GET)
        && let Some(s) = &session
    {
        if !front.take_slot(s) {
            let mut r = text_response(
                StatusCode::TOO_MANY_REQUESTS,
                &format!(
                    "Too Many Requests: this session already has {SESSION_IN_FLIGHT} requests in flight"
                ),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return entry.finish(with_cors(r, cors));
        }
        entry.slot = Some(s.clone());
    }
    // A listen stream counts too: at a stop it ends with its result, which the drain waits for
    // (or the process would end before the result is written).
    if method != Method::GET {
        front.in_flight.fetch_add(1, Ordering::SeqCst);
        entry.counted = true;
    }
    let mut parts = parts;
    if !streams_only {
        let answer = answers::Answer::new(&front.answers);
        parts.extensions.insert(answer.clone());
        entry.answer = Some(answer);
    }
    let mut response = next.run(Request::from_parts(parts, body)).await;
    drop(body_held);
    // The answer is made: it holds what it weighs until it has been sent.
    if let Some(a) = &entry.answer {
        match response.body().size_hint().exact() {
            Some(n) => a.settle(usize::try_from(n).unwrap_or(usize::MAX)),
            None => a.done(),
        }
    }
    if method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
        // rmcp says 202; a finished DELETE is 204 (what the official SDKs expect).
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    entry.finish(with_cors(response, cors))
}

/// rmcp acknowledges a `subscriptions/listen` before the handler sees it: what it needs first
/// (`super::admit_listen`) is checked here. A refusal is the request's JSON-RPC error.
async fn admit_listen(
    shared: &Shared,
    group: Option<&str>,
    body: &[u8],
) -> Result<(), Response<Body>> {
    let Ok(request) = serde_json::from_slice::<serde_json::Value>(body) else {
        // rmcp answers what does not parse.
        return Ok(());
    };
    let uris: Vec<String> = request["params"]["notifications"]["resourceSubscriptions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    match super::admit_listen(shared, group, &uris).await {
        Ok(()) => Ok(()),
        Err(e) => Err(json_response(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": request["id"], "error": e}),
        )),
    }
}

enum BodyError {
    TooLarge,
    Unreadable,
}

/// Reads a request body of at most `MAX_BODY` bytes once `budget` has room for all of it (its
/// declared length, or `MAX_BODY` when it has none; what a shorter body leaves is given back):
/// all or nothing, so bodies half read never wait for each other. The permits come back when
/// the returned one is dropped.
async fn read_body(
    budget: &Arc<tokio::sync::Semaphore>,
    body: Body,
    declared: Option<u64>,
) -> Result<(Bytes, tokio::sync::OwnedSemaphorePermit), BodyError> {
    // The caller refused declared lengths over MAX_BODY (which fits a u32).
    let want = declared.map_or(MAX_BODY, |n| n.min(MAX_BODY as u64) as usize);
    let mut held = budget
        .clone()
        .acquire_many_owned(want as u32)
        .await
        .map_err(|_| BodyError::Unreadable)?;
    let bytes = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(BodyError::TooLarge),
        Err(_) => return Err(BodyError::Unreadable),
    };
    if bytes.len() < want {
        drop(held.split(want - bytes.len()));
    }
    Ok((bytes, held))
}

fn too_large() -> Response<Body> {
    text_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("Payload Too Large: a request body may hold at most {MAX_BODY} bytes"),
    )
}

/// Headers a browser may send and read (CORS), for an allowed origin.
const CORS_REQUEST_HEADERS: &str = "authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name";
const CORS_EXPOSED_HEADERS: &str = "mcp-session-id, www-authenticate";

fn preflight(origin: Option<HeaderValue>) -> Response<Body> {
    let Some(origin) = origin else {
        return text_response(
            StatusCode::FORBIDDEN,
            "Forbidden: Origin header is not allowed",
        );
    };
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    let h = r.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(CORS_REQUEST_HEADERS),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    h.insert(header::VARY, HeaderValue::from_static("origin"));
    r
}

fn with_cors(mut r: Response<Body>, origin: Option<HeaderValue>) -> Response<Body> {
    if let Some(origin) = origin {
        let h = r.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(CORS_EXPOSED_HEADERS),
        );
        h.append(header::VARY, HeaderValue::from_static("origin"));
    }
    r
}

/// `/healthz`: 200 with the version while serving, 503 while stopping.
async fn healthz(State(front): State<Arc<Front>>) -> Response<Body> {
    let (status, state) = if front.draining.is_cancelled() {
        (StatusCode::SERVICE_UNAVAILABLE, "stopping")
    } else {
        (StatusCode::OK, "ok")
    };
    json_response(
        status,
        &json!({"status": state, "name": "mcp-manifest", "version": env!("CARGO_PKG_VERSION")}),
    )
}

/// `/.well-known/oauth-protected-resource[/…]`: the RFC 9728 metadata (with `auth = "oauth"`).
async fn metadata(State(front): State<Arc<Front>>, headers: HeaderMap) -> Response<Body> {
    match front.auth.metadata(&headers, &front.name) {
        Some(doc) => {
            let mut r = json_response(StatusCode::OK, &doc);
            // Public information that browser-based clients fetch cross-origin.
            r.headers_mut().insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
            r
        }
        None => not_found().await,
    }
}

async fn not_found() -> Response<Body> {
    text_response(
        StatusCode::NOT_FOUND,
        "Not Found: MCP is served at /mcp (and /healthz)",
    )
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    let mut r = Response::new(Body::from(value.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// Marks the messages of one handshake-era session (an rmcp request extension): cancelled when
/// the session ends.
#[derive(Debug, Clone)]
pub(super) struct SessionScope {
    ended: CancellationToken,
}

/// Runs `work` for a request, unless the HTTP session it belongs to ends first: then `work` is
/// dropped, which kills the process groups it started. Requests without a session (stdio,
/// 2026-07-28) just run.
pub(super) async fn unless_session_ends<T>(
    cx: &RequestContext<RoleServer>,
    work: impl Future<Output = T>,
) -> Result<T, ErrorData> {
    let Some(scope) = cx.extensions.get::<SessionScope>() else {
        return Ok(work.await);
    };
    let ended = scope.ended.clone();
    tokio::select! {
        biased;
        _ = ended.cancelled() => Err(ErrorData::internal_error("the session ended", None)),
        r = work => Ok(r),
    }
}

/// Reserves `bytes` of the budget of HTTP answers for the request of `cx` (see `answers`);
/// returns at once for a request that did not come over HTTP.
pub(super) async fn reserve(cx: &RequestContext<RoleServer>, bytes: usize) {
    let answer = cx
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<answers::Answer>());
    if let Some(a) = answer {
        a.reserve(bytes).await;
    }
}

/// rmcp's in-memory sessions, with each session's transport wrapped so its end is seen at once,
/// and when each was last used (for `Front::make_room`).
struct Sessions {
    inner: LocalSessionManager,
    /// The sessions alive, with when each was last used.
    live: Arc<Mutex<HashMap<SessionId, Instant>>>,
}

impl Sessions {
    fn touch(&self, id: &SessionId) {
        if let Some(used) = lock(&self.live).get_mut(id) {
            *used = Instant::now();
        }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = Scoped<<LocalSessionManager as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        tracing::debug!("session {} started", short(&id));
        lock(&self.live).insert(id.clone(), Instant::now());
        let scoped = Scoped {
            inner: transport,
            scope: SessionScope {
                ended: CancellationToken::new(),
            },
            id: id.clone(),
            live: self.live.clone(),
        };
        Ok((id, scoped))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.live).remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }
}

fn short(id: &str) -> String {
    id.chars().take(8).collect()
}

/// A session's transport that tags every message with the session's scope and ends the scope
/// when the session's worker stops (DELETE, idle expiry, server stop) or the transport goes.
struct Scoped<T> {
    inner: T,
    scope: SessionScope,
    id: SessionId,
    /// `Sessions::live`, which this session leaves when it ends.
    live: Arc<Mutex<HashMap<SessionId, Instant>>>,
}

impl<T> Scoped<T> {
    fn end(&self) {
        if !self.scope.ended.is_cancelled() {
            tracing::debug!("session {} ended", short(&self.id));
            self.scope.ended.cancel();
            lock(&self.live).remove(&self.id);
        }
    }
}

impl<T> Drop for Scoped<T> {
    fn drop(&mut self) {
        self.end();
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Scoped<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        match self.inner.receive().await {
            Some(mut message) => {
                message.insert_extension(self.scope.clone());
                Some(message)
            }
            None => {
                self.end();
                None
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.end();
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_with_default_ports() {
        let allowed = vec![
            "https://app.example.com:443".to_owned(),
            "http://localhost:*".to_owned(),
            "null".to_owned(),
        ];
        assert!(origin_allowed("https://app.example.com", &allowed));
        assert!(origin_allowed("https://APP.example.com:443", &allowed));
        assert!(!origin_allowed("https://app.example.com:8443", &allowed));
        assert!(!origin_allowed("http://app.example.com", &allowed));
        assert!(origin_allowed("http://localhost:6274", &allowed));
        assert!(origin_allowed("null", &allowed));
        assert!(!origin_allowed("https://evil.example", &allowed));
        assert!(!origin_allowed("null", &[]));
    }

    #[test]
    fn hosts_follow_the_listen_address() {
        let lo: SocketAddr = "127.0.0.1:80".parse().unwrap();
        assert_eq!(
            allowed_hosts(lo, &[]).unwrap(),
            vec!["localhost", "127.0.0.1", "::1"]
        );
        let ip: SocketAddr = "10.1.2.3:80".parse().unwrap();
        assert_eq!(
            allowed_hosts(ip, &["mcp.example.com".into()]).unwrap(),
            vec!["10.1.2.3", "mcp.example.com"]
        );
        assert_eq!(allowed_hosts(ip, &["*".into()]), None);
    }

    #[test]
    fn rpc_methods_are_peeked() {
        assert_eq!(
            rpc_method(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#).as_deref(),
            Some("tools/call")
        );
        assert_eq!(rpc_method(b" [{}]").as_deref(), Some("batch"));
        assert_eq!(rpc_method(b"not json"), None);
    }
}
