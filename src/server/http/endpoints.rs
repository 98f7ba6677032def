//! The paths under `/mcp` besides the endpoint itself: each `[groups.NAME]` served at
//! `/mcp/NAME` (its own `StreamableHttpService`, made on its first request, whose handlers see
//! only the group), the server cards (`/mcp/server-card`, `/mcp/NAME/server-card`) and the AI
//! catalog (`/.well-known/ai-catalog.json` with `[server.http] catalog = true`).
//!
//! Cards and the catalog are public metadata (no secret: names, versions, URLs, whether a token
//! is needed), so they are answered before authentication, with the CORS, cache and ETag headers
//! the server-card discovery document names (`Access-Control-Allow-Origin: *`,
//! `Cache-Control: public, max-age=3600`, `If-None-Match` → 304). They are built from the
//! manifest being served, so a reload changes them (and their ETag).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::super::Handler;
use super::super::shared::{Shared, lock};
use super::Sessions;
use crate::card;

/// Where a request goes by its path.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Path<'a> {
    /// `/mcp`
    Mcp,
    /// `/mcp/NAME`
    Group(&'a str),
    /// `/mcp/server-card` (`None`) or `/mcp/NAME/server-card`
    Card(Option<&'a str>),
    /// Anything else.
    Other,
}

pub(super) fn path(p: &str) -> Path<'_> {
    let Some(rest) = p.strip_prefix(card::MCP_PATH) else {
        return Path::Other;
    };
    if rest.is_empty() {
        return Path::Mcp;
    }
    let Some(rest) = rest.strip_prefix('/') else {
        return Path::Other;
    };
    match rest.split_once('/') {
        None if rest == "server-card" => Path::Card(None),
        None if !rest.is_empty() => Path::Group(rest),
        Some((g, "server-card")) if !g.is_empty() => Path::Card(Some(g)),
        _ => Path::Other,
    }
}

type Service = StreamableHttpService<Handler, Sessions>;

/// The group endpoints: one service per group, made on the group's first request.
#[derive(Clone)]
pub(super) struct Groups {
    shared: Arc<Shared>,
    sessions: Arc<Sessions>,
    config: StreamableHttpServerConfig,
    services: Arc<Mutex<HashMap<String, Service>>>,
}

impl Groups {
    pub fn new(
        shared: Arc<Shared>,
        sessions: Arc<Sessions>,
        config: StreamableHttpServerConfig,
    ) -> Groups {
        Groups {
            shared,
            sessions,
            config,
            services: Arc::default(),
        }
    }

    /// The service of `group`, if the manifest being served has that group.
    pub fn service(&self, group: &str) -> Option<Service> {
        self.shared.snapshot().registry.manifest.group(group)?;
        let mut services = lock(&self.services);
        let service = services.entry(group.to_owned()).or_insert_with(|| {
            let shared = self.shared.clone();
            let group: Arc<str> = Arc::from(group);
            StreamableHttpService::new(
                move || {
                    Ok(Handler {
                        session: shared.open_session(CancellationToken::new(), Some(group.clone())),
                        shared: shared.clone(),
                        group: Some(group.clone()),
                    })
                },
                self.sessions.clone(),
                self.config.clone(),
            )
        });
        Some(service.clone())
    }
}

impl tower_service::Service<Request> for Groups {
    type Response = Response<Body>;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<Body>, Self::Error>> + Send>,
    >;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let found = match path(req.uri().path()) {
            Path::Group(g) => self.service(g),
            _ => None,
        };
        Box::pin(async move {
            let Some(mut service) = found else {
                return Ok(not_a_group());
            };
            let response = tower_service::Service::call(&mut service, req).await;
            Ok(match response {
                Ok(r) => r.map(Body::new),
                Err(never) => match never {},
            })
        })
    }
}

fn not_a_group() -> Response<Body> {
    let mut r = Response::new(Body::from(
        "Not Found: no such group; MCP is served at /mcp and /mcp/NAME for each [groups.NAME]",
    ));
    *r.status_mut() = StatusCode::NOT_FOUND;
    r
}

/// `GET /mcp/server-card`, `/mcp/NAME/server-card` (and their preflight): the card of that
/// endpoint, as `mcp-manifest card` prints it.
pub(super) fn card_response(
    shared: &Shared,
    bound: SocketAddr,
    group: Option<&str>,
    method: &Method,
    headers: &HeaderMap,
) -> Response<Body> {
    let snap = shared.snapshot();
    let m = &snap.registry.manifest;
    let group = match group {
        None => None,
        Some(g) => match m.group(g) {
            Some(g) => Some(g),
            None => return not_a_group(),
        },
    };
    let endpoint = card::endpoint(m, Some(bound));
    let value = card::card(m, group, endpoint.as_deref());
    public_json(&value, card::MEDIA_TYPE, method, headers)
}

/// `GET /.well-known/ai-catalog.json` with `[server.http] catalog = true`.
pub(super) fn catalog_response(
    shared: &Shared,
    bound: SocketAddr,
    method: &Method,
    headers: &HeaderMap,
) -> Option<Response<Body>> {
    let snap = shared.snapshot();
    let m = &snap.registry.manifest;
    if !m.server.about.catalog {
        return None;
    }
    let endpoint = card::endpoint(m, Some(bound))?;
    let value = card::catalog(m, &endpoint);
    Some(public_json(
        &value,
        card::CATALOG_MEDIA_TYPE,
        method,
        headers,
    ))
}

/// A public JSON document: CORS for any origin, cached for an hour, revalidated by ETag.
fn public_json(
    value: &serde_json::Value,
    media_type: &'static str,
    method: &Method,
    headers: &HeaderMap,
) -> Response<Body> {
    let body = serde_json::to_vec_pretty(value).unwrap_or_default();
    let etag = card::etag(&body);
    let mut r = if method == Method::OPTIONS {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        r
    } else if headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim() == etag || t.trim() == "*")
    {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else if method != Method::GET && method != Method::HEAD {
        let mut r = Response::new(Body::from("Method Not Allowed: GET only"));
        *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        r.headers_mut().insert(
            header::ALLOW,
            HeaderValue::from_static("GET, HEAD, OPTIONS"),
        );
        r
    } else {
        let mut r = Response::new(Body::from(body));
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
        r
    };
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type, If-None-Match"),
    );
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("ETag"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(path("/mcp"), Path::Mcp);
        assert_eq!(path("/mcp/server-card"), Path::Card(None));
        assert_eq!(path("/mcp/review"), Path::Group("review"));
        assert_eq!(path("/mcp/review/server-card"), Path::Card(Some("review")));
        assert_eq!(path("/mcp/review/x"), Path::Other);
        assert_eq!(path("/mcp/"), Path::Other);
        assert_eq!(path("/mcpx"), Path::Other);
        assert_eq!(path("/healthz"), Path::Other);
    }
}
