//! JSON-RPC batches over HTTP. Revision 2025-03-26 says a POST may carry an array of requests
//! and notifications (or of responses) and the server MUST accept it; later revisions removed
//! batching. So in a session that negotiated 2025-03-26, each member goes to rmcp as a POST of
//! its own (at most [`AT_ONCE`] at a time; their streams are not kept for resumption), and
//! the answers come back as one `application/json` array in the members' order (202 with no
//! body when there are only notifications and responses). Anywhere else a batch is refused:
//! 400 with a JSON-RPC error that says why.

use std::sync::Arc;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use rmcp::model::ProtocolVersion;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::front::{INVALID_REQUEST, PARSE_ERROR, json_response, rpc_refusal};
use super::sessions::Unresumable;
use super::{Front, answers, conns};

/// Members of one batch handled at once.
const AT_ONCE: usize = 16;
/// The most the answers of one batch may hold together (a member whose answer does not fit
/// gets an error instead): the array is made in memory.
const BATCH_ANSWER_CAP: usize = 16 * 1024 * 1024;
/// "Internal error": for a member whose answer could not be had.
const INTERNAL_ERROR: i64 = -32603;

/// The answer to a POST whose body is a JSON array (`body`), in `session` if any.
pub(super) async fn answer(
    front: &Arc<Front>,
    parts: &Parts,
    body: &[u8],
    session: Option<&str>,
) -> Response<Body> {
    let members: Vec<Box<RawValue>> = match serde_json::from_slice(body) {
        Ok(m) => m,
        Err(e) if e.is_syntax() || e.is_eof() => {
            return rpc_refusal(
                StatusCode::BAD_REQUEST,
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: the body is not JSON ({e})"),
            );
        }
        Err(e) => {
            return rpc_refusal(
                StatusCode::BAD_REQUEST,
                Value::Null,
                INVALID_REQUEST,
                &format!("Invalid Request: {e}"),
            );
        }
    };
    let version = session.and_then(|s| front.sessions.version(s));
    if version != Some(ProtocolVersion::V_2025_03_26) {
        let why = match (session, version) {
            (None, _) => "a batch needs a session of protocol version 2025-03-26 (`initialize` cannot be in a batch)".to_owned(),
            (Some(_), Some(v)) => format!(
                "this session uses protocol version {v}, which has no JSON-RPC batches (2025-03-26 was the last with them)"
            ),
            (Some(_), None) => "this session has not finished `initialize`".to_owned(),
        };
        return rpc_refusal(
            StatusCode::BAD_REQUEST,
            Value::Null,
            INVALID_REQUEST,
            &format!("Invalid Request: {why}; send each message in a POST of its own"),
        );
    }
    if members.is_empty() {
        return rpc_refusal(
            StatusCode::BAD_REQUEST,
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: an empty batch",
        );
    }
    let gate = Arc::new(tokio::sync::Semaphore::new(AT_ONCE));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, member) in members.into_iter().enumerate() {
        let front = front.clone();
        let gate = gate.clone();
        let request = sub_request(front.as_ref(), parts, member.get());
        tasks.spawn(async move {
            let _turn = gate.acquire_owned().await;
            (i, one(&front, request, member).await)
        });
    }
    let mut answers: Vec<(usize, Value)> = Vec::new();
    while let Some(done) = tasks.join_next().await {
        if let Ok((i, Some(v))) = done {
            answers.push((i, v));
        }
    }
    if answers.is_empty() {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::ACCEPTED;
        return r;
    }
    answers.sort_by_key(|(i, _)| *i);
    let mut size = 2;
    let mut out = Vec::with_capacity(answers.len());
    for (_, v) in answers {
        let len = v.to_string().len() + 1;
        if size + len > BATCH_ANSWER_CAP {
            out.push(error(
                v.get("id").cloned().unwrap_or(Value::Null),
                INTERNAL_ERROR,
                &format!(
                    "the answers of this batch exceed {} MiB: send this request on its own",
                    BATCH_ANSWER_CAP >> 20
                ),
            ));
        } else {
            size += len;
            out.push(v);
        }
    }
    json_response(StatusCode::OK, &Value::Array(out))
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A POST of one member, with the batch's headers (and who sent it).
fn sub_request(front: &Front, parts: &Parts, member: &str) -> Request<Body> {
    let mut r = Request::new(Body::from(member.to_owned()));
    *r.method_mut() = parts.method.clone();
    *r.uri_mut() = parts.uri.clone();
    *r.headers_mut() = parts.headers.clone();
    r.headers_mut().remove(axum::http::header::CONTENT_LENGTH);
    let ext = r.extensions_mut();
    ext.insert(Unresumable);
    if let Some(p) = parts.extensions.get::<super::Principal>() {
        ext.insert(p.clone());
    }
    ext.insert(answers::Answer::new(
        &front.answers,
        conns::peer_of(&parts.extensions),
    ));
    r
}

/// The answer to one member (`None` for a notification or a response, which get none).
async fn one(front: &Front, request: Request<Body>, member: Box<RawValue>) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Peek {
        method: Option<String>,
        id: Option<Value>,
    }
    let Ok(peek) = serde_json::from_str::<Peek>(member.get()) else {
        return Some(error(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: a batch member must be a JSON-RPC request, notification or response",
        ));
    };
    let is_request = peek.method.is_some() && peek.id.is_some();
    if peek.method.as_deref() == Some("initialize") {
        return Some(error(
            peek.id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "Invalid Request: `initialize` cannot be part of a batch",
        ));
    }
    let answer = request.extensions().get::<answers::Answer>().cloned();
    let response = match super::endpoints::path(request.uri().path()) {
        super::endpoints::Path::Group(g) => match front.groups.service(g) {
            Some(service) => service.handle(request).await,
            None => {
                return Some(error(
                    peek.id.unwrap_or(Value::Null),
                    INTERNAL_ERROR,
                    "Internal error: the group is gone",
                ));
            }
        },
        _ => front.service.handle(request).await,
    };
    let status = response.status();
    let bytes = match response.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Default::default(),
    };
    if let Some(a) = answer {
        a.done();
    }
    if !is_request {
        return None;
    }
    let id = peek.id.unwrap_or(Value::Null);
    let text = String::from_utf8_lossy(&bytes);
    // An SSE stream (its events' data), or one JSON object.
    let found = if text.trim_start().starts_with('{') {
        serde_json::from_str::<Value>(&text).ok()
    } else {
        sse_messages(&text).into_iter().find(|m| {
            m.get("id") == Some(&id) && (m.get("result").is_some() || m.get("error").is_some())
        })
    };
    Some(found.unwrap_or_else(|| {
        error(
            id,
            INTERNAL_ERROR,
            &format!(
                "no answer ({status}: {})",
                crate::quote::quote(text.trim(), crate::quote::Quote::Plain)
            ),
        )
    }))
}

/// The JSON messages of an SSE body (each event's `data` lines joined).
fn sse_messages(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let text = text.replace("\r\n", "\n");
    for event in text.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue;
        }
        if let Ok(v) = serde_json::from_str(&data.join("\n")) {
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_read() {
        let text = "id: 1.1\nretry: 1000\ndata:\n\nid: 1.2\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n: ping\n\n";
        let got = sse_messages(text);
        assert_eq!(got, vec![json!({"jsonrpc": "2.0", "id": 3, "result": {}})]);
    }
}
