//! The middleware in front of rmcp's service on every route (`front_layer`): what is checked
//! before a request reaches rmcp, and what is counted until its answer has been sent.
//!
//! On `/mcp`: refused while draining (503); the `Host` header checked exactly (one, not empty,
//! a listen name with the listen port or an `allowed_hosts` entry: 403, else 400);
//! authenticated (`auth.rs`), which names the request's principal; a session of another
//! principal is 404 as if it did not exist; a `Last-Event-ID` the session cannot resume from is
//! 400 with a JSON-RPC error; bodies are read within `idle_timeout` and the body budget
//! (413, 408), and must be JSON (`Content-Type`: 415; syntax: 400 `-32700`; not a JSON-RPC
//! message: 400 `-32600`, each with a JSON-RPC error body); a batch goes to `batch.rs`; a
//! JSON-RPC response is accepted (202) only as the answer to a request the server sent; each
//! session's requests in flight are bounded (429); CORS preflights are answered for allowed
//! origins. Every request writes one access line when its response ends.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use axum::middleware::Next;
use http_body_util::BodyExt;
use serde_json::{Value, json};

use super::bodies::BodyError;
use super::{Front, MAX_BODY, SESSION_HEADER, SESSION_IN_FLIGHT, answers, batch, conns};
use crate::server::shared::Shared;

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

pub(super) fn text_response(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Body::from(text.to_owned()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

pub(super) fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut r = Response::new(Body::from(value.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// JSON-RPC's "Parse error".
pub(super) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "Invalid Request".
pub(super) const INVALID_REQUEST: i64 = -32600;

/// An HTTP refusal whose body is a JSON-RPC error (`id` null when it is not known).
pub(super) fn rpc_refusal(
    status: StatusCode,
    id: Value,
    code: i64,
    message: &str,
) -> Response<Body> {
    json_response(
        status,
        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    )
}

/// What the front reads of a single message (the rest is rmcp's to read).
#[derive(serde::Deserialize)]
struct Peek {
    method: Option<String>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

/// The body of a POST, as far as the front needs to know.
pub(super) enum Shape {
    /// A JSON array: a batch.
    Batch,
    /// One request or notification (its method, cut like a message quotes it).
    Call(String),
    /// A JSON-RPC response or error from the client, answering `id`.
    Answer(Value),
}

/// The shape of a body, or the HTTP refusal of one that is not JSON (400 -32700) or not a
/// JSON-RPC message (400 -32600).
#[allow(
    clippy::result_large_err,
    reason = "a refusal is the whole response, made once per refused request"
)]
pub(super) fn shape(body: &[u8]) -> Result<Shape, Response<Body>> {
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Ok(Shape::Batch);
    }
    let peek = match serde_json::from_slice::<Peek>(body) {
        Ok(p) => p,
        Err(e) if e.is_syntax() || e.is_eof() => {
            return Err(rpc_refusal(
                StatusCode::BAD_REQUEST,
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: the body is not JSON ({e})"),
            ));
        }
        Err(e) => {
            return Err(rpc_refusal(
                StatusCode::BAD_REQUEST,
                Value::Null,
                INVALID_REQUEST,
                &format!("Invalid Request: the body is not a JSON-RPC message ({e})"),
            ));
        }
    };
    match (peek.method, peek.id) {
        (Some(m), _) => Ok(Shape::Call(crate::quote::quote(
            &m,
            crate::quote::Quote::Plain,
        ))),
        (None, Some(id)) if peek.result.is_some() || peek.error.is_some() => Ok(Shape::Answer(id)),
        (None, id) => Err(rpc_refusal(
            StatusCode::BAD_REQUEST,
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "Invalid Request: a JSON-RPC message needs `method` (a request or notification), or `result` or `error` with an `id` (a response)",
        )),
    }
}

/// Whether `Content-Type` says JSON (`application/json`, parameters allowed).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}

/// A `Host` value accepted: a name (lowercase, IPv6 without brackets) and the port it must
/// carry (`None`: no port, 80 or 443).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Authority {
    host: String,
    port: Option<u16>,
}

/// The `Host` values accepted (DNS-rebinding protection): the names of the listen address (the
/// loopback names for a loopback or any-interface address) with the port the server listens
/// on, plus `allowed_hosts` (with their port, or any of none, 80 and 443 when they name none);
/// `None` is any host.
pub(super) fn allowed_hosts(bound: SocketAddr, configured: &[String]) -> Option<Vec<Authority>> {
    if configured.iter().any(|h| h == "*") {
        return None;
    }
    let ip = bound.ip();
    let port = Some(bound.port());
    let mut out: Vec<Authority> = Vec::new();
    let mut add = |a: Authority| {
        if !out.contains(&a) {
            out.push(a);
        }
    };
    if ip.is_loopback() || ip.is_unspecified() {
        for host in ["localhost", "127.0.0.1", "::1"] {
            add(Authority {
                host: host.into(),
                port,
            });
        }
    }
    if !ip.is_unspecified() {
        add(Authority {
            host: ip.to_string(),
            port,
        });
    } else if configured.is_empty() {
        tracing::warn!(
            "listening on {bound} (every interface) accepts only loopback names in `Host`: list the names clients use in `server.http.allowed_hosts`"
        );
    }
    for h in configured {
        if let Some((host, port)) = split_authority(h) {
            add(Authority { host, port });
        }
    }
    Some(out)
}

/// `host[:port]` → the host (lowercase, IPv6 without brackets) and its port.
fn split_authority(text: &str) -> Option<(String, Option<u16>)> {
    let a: axum::http::uri::Authority = text.trim().parse().ok()?;
    if a.as_str().contains('@') {
        return None;
    }
    let host = a.host().trim_start_matches('[').trim_end_matches(']');
    Some((host.to_ascii_lowercase(), a.port_u16()))
}

/// Checks the `Host` header: exactly one, not empty, accepted by `allowed` (all of them when
/// `None`). The refusal otherwise.
#[allow(
    clippy::result_large_err,
    reason = "a refusal is the whole response, made once per refused request"
)]
pub(super) fn check_host(
    headers: &HeaderMap,
    allowed: Option<&[Authority]>,
) -> Result<(), Response<Body>> {
    let mut all = headers.get_all(header::HOST).iter();
    let (Some(value), None) = (all.next(), all.next()) else {
        return Err(text_response(
            StatusCode::BAD_REQUEST,
            "Bad Request: a request needs exactly one Host header",
        ));
    };
    let Some((host, port)) = value.to_str().ok().and_then(split_authority) else {
        return Err(text_response(
            StatusCode::BAD_REQUEST,
            "Bad Request: the Host header is empty or not a host",
        ));
    };
    let Some(allowed) = allowed else {
        return Ok(());
    };
    let ok = allowed.iter().any(|a| {
        a.host == host
            && match (a.port, port) {
                (Some(want), Some(got)) => want == got,
                (Some(want), None) => want == 80,
                (None, got) => matches!(got, None | Some(80) | Some(443)),
            }
    });
    if ok {
        Ok(())
    } else {
        tracing::warn!(
            "refused a request for Host `{}` (DNS rebinding?)",
            crate::quote::quote(&host, crate::quote::Quote::Plain)
        );
        Err(text_response(
            StatusCode::FORBIDDEN,
            "Forbidden: Host header is not allowed",
        ))
    }
}

/// The middleware in front of every route (see the module doc).
pub(super) async fn front_layer(
    State(front): State<Arc<Front>>,
    req: Request,
    next: Next,
) -> Response<Body> {
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
    let group = match super::endpoints::path(&path) {
        super::endpoints::Path::Mcp => None,
        super::endpoints::Path::Group(g) => Some(g.to_owned()),
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
    if let Err(r) = check_host(req.headers(), front.hosts.as_deref()) {
        return entry.finish(with_cors(r, cors));
    }
    let principal = match front.auth.check(req.headers()).await {
        Ok(p) => p,
        Err(denied) => {
            let r = front.auth.refusal(&denied, req.headers());
            return entry.finish(with_cors(r, cors));
        }
    };
    // Another principal's session does not exist for this one.
    if let Some(s) = &session
        && !front.sessions.owned_by(s, &principal)
    {
        let r = text_response(StatusCode::NOT_FOUND, "Not Found: Session not found");
        return entry.finish(with_cors(r, cors));
    }
    if method == Method::GET
        && let Some(s) = &session
        && let Some(last) = req.headers().get("last-event-id")
    {
        let why = match last.to_str() {
            Ok(last) => front.sessions.resumable(s, last),
            Err(_) => Some("Last-Event-ID is not text".to_owned()),
        };
        if let Some(why) = why {
            let r = rpc_refusal(
                StatusCode::BAD_REQUEST,
                Value::Null,
                INVALID_REQUEST,
                &format!(
                    "Bad Request: {why} (events are kept {}s after they are sent, `resume_window` in [server.http]); open a new stream with a GET without Last-Event-ID",
                    front.resume_window.as_secs()
                ),
            );
            return entry.finish(with_cors(r, cors));
        }
    }
    let (mut parts, body) = req.into_parts();
    parts.extensions.insert(principal.clone());
    // The body's share of `BODY_BUDGET`, given back once rmcp has answered (or started the
    // stream): the message it parsed lives as long.
    let mut body_held = None;
    let body = if method == Method::POST {
        if !is_json(&parts.headers) {
            let r = rpc_refusal(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Value::Null,
                INVALID_REQUEST,
                "Unsupported Media Type: the body must be JSON-RPC with `Content-Type: application/json`",
            );
            return entry.finish(with_cors(r, cors));
        }
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_BODY as u64) {
            return entry.finish(with_cors(too_large(), cors));
        }
        let read = tokio::time::timeout(
            front.body_timeout,
            front.bodies.read(
                body,
                declared,
                conns::peer_of(&parts.extensions),
                front.body_timeout,
            ),
        );
        let slow = |took: Duration| {
            let mut r = text_response(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "Request Timeout: the body did not arrive within {}s",
                    took.as_secs_f64()
                ),
            );
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            r
        };
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
            Ok(Err(BodyError::Slow(took))) => return entry.finish(with_cors(slow(took), cors)),
            Err(_) => return entry.finish(with_cors(slow(front.body_timeout), cors)),
        };
        match shape(&bytes) {
            Err(r) => return entry.finish(with_cors(r, cors)),
            Ok(Shape::Batch) => {
                entry.rpc = Some("batch".into());
                let r = batch::answer(&front, &parts, &bytes, session.as_deref()).await;
                drop(body_held);
                return entry.finish(with_cors(r, cors));
            }
            Ok(Shape::Answer(id)) => {
                entry.rpc = Some("response".into());
                // Only the answer to a request the server sent (and no answer at all in
                // 2026-07-28, which rmcp refuses).
                if let Some(s) = &session {
                    let asked = serde_json::from_value(id.clone())
                        .is_ok_and(|id| front.sessions.asked(s, &id));
                    if !asked {
                        let r = rpc_refusal(
                            StatusCode::BAD_REQUEST,
                            Value::Null,
                            INVALID_REQUEST,
                            &format!(
                                "Invalid Request: this server sent no request with id {id} that waits for an answer"
                            ),
                        );
                        return entry.finish(with_cors(r, cors));
                    }
                }
            }
            Ok(Shape::Call(m)) => entry.rpc = Some(m),
        }
        if entry.rpc.as_deref() == Some("subscriptions/listen")
            && let Err(refusal) = admit_listen(&front.shared, group.as_deref(), &bytes).await
        {
            return entry.finish(with_cors(refusal, cors));
        }
        Body::from(bytes)
    } else {
        body
    };
    if let Some(s) = &session {
        front.sessions.touch(s);
    }
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
    if !streams_only {
        let answer = answers::Answer::new(&front.answers, conns::peer_of(&parts.extensions));
        parts.extensions.insert(answer.clone());
        entry.answer = Some(answer);
    }
    let mut response = next.run(Request::from_parts(parts, body)).await;
    drop(body_held);
    if let Some(a) = &entry.answer {
        match response.body().size_hint().exact() {
            // The answer is made: it holds what it weighs until it has been sent.
            Some(n) => a.settle(usize::try_from(n).unwrap_or(usize::MAX)),
            // A session's stream: its answer is counted where it waits (`sessions.rs`), and
            // the reservation lasts until it is made or this response ends.
            None if session.is_some() => {}
            None => a.done(),
        }
    }
    if method == Method::POST && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        // The content type was checked above: rmcp could not read the message.
        let text = response_text(response).await;
        let r = rpc_refusal(
            StatusCode::BAD_REQUEST,
            Value::Null,
            INVALID_REQUEST,
            &format!("Invalid Request: {text}"),
        );
        return entry.finish(with_cors(r, cors));
    }
    if method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
        // rmcp says 202; a finished DELETE is 204 (what the official SDKs expect).
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    entry.finish(with_cors(response, cors))
}

/// The text of a short response of rmcp's (at most 4 KiB of it).
async fn response_text(response: Response<Body>) -> String {
    match http_body_util::Limited::new(response.into_body(), 4096)
        .collect()
        .await
    {
        Ok(b) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
        Err(_) => String::new(),
    }
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
    match crate::server::admit_listen(shared, group, &uris).await {
        Ok(()) => Ok(()),
        Err(e) => Err(json_response(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": request["id"], "error": e}),
        )),
    }
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
