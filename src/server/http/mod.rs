//! MCP over Streamable HTTP (`serve --http`): one `/mcp` endpoint for both eras, on rmcp's
//! `StreamableHttpService` in an axum `Router`, many sessions over one `Shared` (one manifest,
//! one watcher, one set of caches).
//!
//! - The connections (`conns.rs`): at most `max_connections` at once, closed after
//!   `idle_timeout` doing nothing (no request, a head not arriving, an answer not taken), heads
//!   of at most 64 KiB.
//! - The answers held at once, all clients together, bounded by one budget (`answers.rs`): a
//!   request reserves before it makes a large answer, and the room comes back once it is sent.
//! - Handshake-era clients get a session (`Mcp-Session-Id`; ours: `sessions.rs`) whose
//!   server notifications travel on its GET stream; 2026-07-28 requests need no session (rmcp
//!   serves them statelessly, one handler per request) and subscribe with
//!   `subscriptions/listen`. rmcp answers the transport rules: unknown session 404, `Origin`
//!   checks (403), `Mcp-Method` / version header mismatches (400, -32020).
//! - In front of rmcp, `front_layer` (`front.rs`, one middleware for every route): refuses while
//!   draining (503), checks `Host` exactly, authenticates `/mcp` (`auth.rs`) and hides other
//!   principals' sessions (404), reads bodies within their budget (`bodies.rs`, 413, 408),
//!   answers what is not JSON-RPC with JSON-RPC errors and batches itself (`batch.rs`), bounds
//!   each session's requests in flight (429), answers CORS preflights for allowed origins, and
//!   writes one access line per request when its response ends.
//! - A session that ends (DELETE, expiry, server stop) cancels its `SessionScope`: the calls it
//!   still runs are dropped, which kills the process groups they started (`process.rs`).
//! - SIGTERM / SIGINT: answer new and waiting connections 503, end listen streams (with their result), let requests in
//!   flight and those results finish (up to `DRAIN`), kill every tool process, end the
//!   sessions, return.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use axum::middleware;
use axum::routing::{any, get};
use rmcp::model::ErrorData;
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod answers;
mod batch;
mod bodies;
mod conns;
mod endpoints;
mod front;
mod sessions;
mod sys;

use super::auth::Auth;
use super::shared::{Shared, Throttled, lock};
use super::{Handler, scopeguard};
use crate::manifest::open_listen_refusal;
use crate::registry::Registry;
use front::{Authority, front_layer, json_response, text_response};
pub(crate) use sessions::Principal;
use sessions::{Sessions, short};

/// The largest request body (larger is 413).
pub(crate) const MAX_BODY: usize = 4 * 1024 * 1024;
/// Requests one session may have in flight (as on stdio); more are 429.
const SESSION_IN_FLIGHT: usize = 256;
/// How long requests in flight may take to finish once SIGTERM arrived.
const DRAIN: Duration = Duration::from_secs(10);
/// The name of the session header.
const SESSION_HEADER: &str = "mcp-session-id";

/// Serves `registry` over HTTP on `listen` until SIGTERM or SIGINT; `ready` hears the bound
/// address (port 0 picks a free one).
pub(crate) async fn serve_http(
    registry: Registry,
    listen: SocketAddr,
    ready: impl FnOnce(SocketAddr, &str),
) -> anyhow::Result<()> {
    serve(registry, listen, ready, sys::stop_asked()).await
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
    let hosts = front::allowed_hosts(bound, &http.allowed_hosts);
    // No priming event from rmcp (its id would be "0" on every stream): the session layer sends
    // its own, with ids it can resume from.
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(origins.clone())
        .enforce_origin_validation()
        .with_cancellation_token(sessions_end.clone())
        .with_json_response(true)
        .with_sse_retry(None)
        .with_max_request_body_bytes(MAX_BODY);
    // `Host` is checked by the front, exactly (rmcp's check lets any port through).
    config = config.disable_allowed_hosts();
    let answers = answers::Budget::new(answers::ANSWER_BUDGET);
    let sessions = Sessions::new(http.resume_window, answers.clone());
    let keeping = tokio::spawn(sessions.clone().keep(sessions_end.clone()));
    let _stop_keeping = scopeguard(move || keeping.abort());
    let factory_shared = shared.clone();
    let groups = endpoints::Groups::new(shared.clone(), sessions.clone(), config.clone());
    let service = StreamableHttpService::new(
        move || {
            Ok(Handler {
                session: factory_shared.open_session(CancellationToken::new(), None),
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
        service: service.clone(),
        groups: groups.clone(),
        hosts,
        resume_window: http.resume_window,
        max_sessions: http.max_sessions,
        room: Mutex::new(Throttled::default()),
        bodies: bodies::Bodies::new(),
        body_timeout: http.idle_timeout,
        answers,
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
    let limits = conns::Limits {
        cap,
        per_client: http.max_connections_per_client.min(cap),
        idle: http.idle_timeout,
    };
    let server = tokio::spawn(conns::serve(
        listener,
        app,
        limits,
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
    // Queries still running on database servers are stopped, connections closed.
    let _ = tokio::time::timeout(Duration::from_secs(2), shared.registry().close()).await;
    sessions_end.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(2), &mut server).await;
    Ok(())
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
    /// rmcp's service (the parts of a batch go to it one by one).
    service: StreamableHttpService<Handler, Sessions>,
    /// The services of `/mcp/NAME` (a batch there goes to its group's).
    groups: endpoints::Groups,
    /// The `Host` values accepted (`None`: any).
    hosts: Option<Vec<Authority>>,
    /// `[server.http] resume_window`.
    resume_window: Duration,
    /// `[server.http] max_sessions`.
    max_sessions: usize,
    /// Sessions ended to make room.
    room: Mutex<Throttled>,
    /// The request bodies held (`bodies.rs`).
    bodies: bodies::Bodies,
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
            if self.sessions.count() < self.max_sessions {
                return true;
            }
            let victim = {
                let busy = lock(&self.per_session);
                self.sessions.idle_longest(|id| busy.contains_key(id))
            };
            let Some(victim) = victim else {
                return false;
            };
            tracing::debug!("session {} ended to make room", short(&victim));
            if let Some(n) = lock(&self.room).count() {
                tracing::warn!(
                    "{n} idle sessions ended to make room for new ones: {} are kept at most (`max_sessions` in [server.http]); their clients start new sessions when they come back",
                    self.max_sessions
                );
            }
            let _ = self.sessions.close_session(&victim).await;
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
    fn hosts_are_checked_exactly() {
        let h = |v: &[&str]| {
            let mut m = HeaderMap::new();
            for v in v {
                m.append(header::HOST, HeaderValue::from_str(v).unwrap());
            }
            m
        };
        let lo: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let allowed = front::allowed_hosts(lo, &["mcp.example.com".into(), "b.example:9".into()]);
        let ok = |v: &[&str]| {
            front::check_host(&h(v), allowed.as_deref())
                .map(|_| ())
                .map_err(|r| r.status().as_u16())
        };
        assert_eq!(ok(&["127.0.0.1:8080"]), Ok(()));
        assert_eq!(ok(&["LOCALHOST:8080"]), Ok(()));
        assert_eq!(ok(&["[::1]:8080"]), Ok(()));
        assert_eq!(ok(&["127.0.0.1:8081"]), Err(403), "another port");
        assert_eq!(ok(&["127.0.0.1"]), Err(403), "no port is port 80");
        assert_eq!(ok(&["mcp.example.com"]), Ok(()));
        assert_eq!(ok(&["mcp.example.com:443"]), Ok(()));
        assert_eq!(ok(&["mcp.example.com:8443"]), Err(403));
        assert_eq!(ok(&["b.example:9"]), Ok(()));
        assert_eq!(ok(&["b.example"]), Err(403));
        assert_eq!(ok(&["evil.example:8080"]), Err(403));
        assert_eq!(ok(&[""]), Err(400), "empty");
        assert_eq!(ok(&[]), Err(400), "none");
        assert_eq!(ok(&["127.0.0.1:8080", "127.0.0.1:8080"]), Err(400), "two");
        assert_eq!(ok(&["u@127.0.0.1:8080"]), Err(400));
        // `*`: any host, but still one that is not empty.
        assert_eq!(front::allowed_hosts(lo, &["*".into()]), None);
        assert_eq!(
            front::check_host(&h(&["x:1"]), None)
                .map(|_| ())
                .map_err(|r| r.status().as_u16()),
            Ok(())
        );
        assert_eq!(
            front::check_host(&h(&[""]), None)
                .map(|_| ())
                .map_err(|r| r.status().as_u16()),
            Err(400)
        );
    }

    #[test]
    fn bodies_are_shaped() {
        use front::{Shape, shape};
        let code = |b: &[u8]| match shape(b) {
            Ok(Shape::Batch) => "batch".to_owned(),
            Ok(Shape::Call(m)) => m,
            Ok(Shape::Answer(id)) => format!("answer {id}"),
            Err(r) => r.status().as_u16().to_string(),
        };
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#),
            "tools/call"
        );
        assert_eq!(code(b" [{}]"), "batch");
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#), "answer 7");
        assert_eq!(code(b"not json"), "400");
        assert_eq!(code(b"{\"method\": "), "400");
        assert_eq!(code(b"42"), "400");
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1}"#), "400");
    }
}
