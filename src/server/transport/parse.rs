//! Lines → messages: what the reader thread makes of one line (or one batch), before any state.
//!
//! Every request id is checked here (a string or an integer, anything else is `-32600` with
//! `id: null`) and replaced by an internal number before rmcp parses the message, so rmcp never
//! sees a client id: the exact text the client wrote is kept and put back on the answer.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{ClientRequest, JsonRpcMessage, JsonRpcRequest, ProtocolVersion};
use rmcp::service::{RoleServer, RxJsonRpcMessage};
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::quote::{Quote, quote};

/// A request id as the client wrote it.
#[derive(Clone, Debug)]
pub struct ClientId {
    /// The exact JSON text (`"a"`, `123456789012345678901234567890`), echoed on the answer.
    pub raw: Arc<str>,
    /// What `notifications/cancelled` names it by.
    pub key: IdKey,
}

/// An id compared by value: a string's characters (`"a"` is `"\u0061"`), an integer's digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IdKey {
    Number(Arc<str>),
    String(Arc<str>),
}

impl ClientId {
    /// A string or an integer (no fraction, no exponent, any size); anything else is not an id.
    pub fn new(raw: &RawValue) -> Option<ClientId> {
        let text = raw.get();
        let key = match text.as_bytes().first()? {
            b'"' => IdKey::String(serde_json::from_str::<String>(text).ok()?.into()),
            b'-' | b'0'..=b'9' if !text.contains(['.', 'e', 'E']) => IdKey::Number(text.into()),
            _ => return None,
        };
        Some(ClientId {
            raw: text.into(),
            key,
        })
    }

    /// `null`, for answers to what has no readable id.
    pub fn null() -> ClientId {
        ClientId {
            raw: "null".into(),
            key: IdKey::Number("null".into()),
        }
    }
}

/// How a request is scheduled (see the module docs of `transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Cheap and answered at once: never waits for a work slot.
    Control,
    /// A `subscriptions/listen` stream: open until cancelled, holds no work slot.
    Listen,
    /// Everything else: holds a work slot until its answer is written.
    Work,
}

/// What one line (or one element of a batch) is.
pub enum Parsed {
    /// A request for rmcp, its id already replaced by `internal`.
    Request {
        msg: Box<RxJsonRpcMessage<RoleServer>>,
        internal: u64,
        id: ClientId,
        class: Class,
    },
    /// A notification for rmcp (never answered).
    Notification(Box<RxJsonRpcMessage<RoleServer>>),
    /// `notifications/cancelled`, by the client's id of the request.
    Cancel { key: IdKey, reason: Option<String> },
    /// A response or error from the client, to a request of ours.
    Response(Box<RxJsonRpcMessage<RoleServer>>),
    /// An answer we write ourselves (the JSON text of one error response).
    Reply(String),
    /// Nothing to do (a blank line, a notification we cannot read).
    Nothing,
}

/// The fields every message is sorted by; `id`, `result` and `error` are kept as written.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// `Some` even for `null`: `"id": null` is an id that is not valid, not a missing one.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct CancelParams<'a> {
    #[serde(rename = "requestId", borrow)]
    request_id: &'a RawValue,
    #[serde(default)]
    reason: Option<String>,
}

/// Requests the protocol defines (either era): one whose params do not fit is -32602, not a
/// custom request.
const STANDARD_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

/// Requests the stateless era (2026-07-28) removed: asked for on such a request, -32601.
const NOT_IN_2026: &[&str] = &[
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// A request the transport may answer itself (see `Session::take_line`): its id, method and
/// params as written.
pub struct Direct<'a> {
    pub id: ClientId,
    pub method: Cow<'a, str>,
    pub params: Option<&'a RawValue>,
}

/// Lines longer than this are never answered directly: the requests answered so are small.
const DIRECT_MAX: usize = 64 * 1024;

/// The value of the first `"method"` key in `text` when it is a plain string (no escapes): a
/// cheap test before parsing. A line where it is not one of the direct methods (another key
/// named so earlier in `params`, an escaped name) is parsed by rmcp as any other.
fn first_method(text: &[u8]) -> Option<&[u8]> {
    static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"method\""));
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let at = KEY.find(text)? + KEY.needle().len();
    let rest = &text[at..];
    let start = rest.iter().position(|b| !blank(b))?;
    let rest = rest[start..].strip_prefix(b":")?;
    let start = rest.iter().position(|b| !blank(b))?;
    let rest = rest[start..].strip_prefix(b"\"")?;
    let end = rest.iter().position(|b| matches!(b, b'"' | b'\\'))?;
    (rest[end] == b'"').then_some(&rest[..end])
}

/// `text` as a request for one of `methods` (its first `"method"` key a plain string), or `None`
/// for anything else, which rmcp gets as usual. Cheap tests first: most lines are not one.
pub fn direct<'a>(text: &'a [u8], methods: &[&str]) -> Option<Direct<'a>> {
    if text.len() > DIRECT_MAX
        || !first_method(text).is_some_and(|m| methods.iter().any(|d| d.as_bytes() == m))
    {
        return None;
    }
    let env = serde_json::from_slice::<Envelope>(text).ok()?;
    let method = env.method?;
    if !methods.contains(&method.as_ref())
        || env.jsonrpc.as_deref() != Some("2.0")
        || env.result.is_some()
        || env.error.is_some()
    {
        return None;
    }
    Some(Direct {
        id: ClientId::new(env.id?)?,
        method,
        params: env.params,
    })
}

/// The answer to a bare `ping` (no params, or `{}`): the empty result, with the id as written.
/// `None` for a ping with params, which rmcp gets as usual.
pub fn ping_answer(req: &Direct) -> Option<String> {
    if req.method != "ping" || req.params.is_some_and(|p| p.get() != "{}") {
        return None;
    }
    Some(result_line(&req.id, "{}"))
}

/// A result line (without its newline): `result` is JSON.
pub fn result_line(id: &ClientId, result: &str) -> String {
    let mut line = result_head(id).concat();
    line.push_str(result);
    line.push('}');
    line
}

/// [`result_head`] added to `bytes`.
pub fn push_result_head(bytes: &mut Vec<u8>, id: &ClientId) {
    for part in result_head(id) {
        bytes.extend_from_slice(part.as_bytes());
    }
}

/// A result line up to its result (which then goes after it, and a `}`), in parts.
fn result_head(id: &ClientId) -> [&str; 3] {
    [r#"{"jsonrpc":"2.0","id":"#, &id.raw, r#","result":"#]
}

/// The text of one line without its line ending, surrounding blanks and byte-order mark.
pub fn trim(raw: &[u8]) -> &[u8] {
    let mut text = raw;
    while let Some((last, rest)) = text.split_last() {
        if matches!(last, b'\n' | b'\r' | b' ' | b'\t') {
            text = rest;
        } else {
            break;
        }
    }
    let text = text
        .strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(text);
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(text.len());
    &text[start..]
}

/// Whether a (trimmed) line is a batch.
pub fn is_batch(text: &[u8]) -> bool {
    text.first() == Some(&b'[')
}

/// The elements of a batch, as written; `Err` is the answer to a batch that is not one.
pub fn batch_items(text: &[u8]) -> Result<Vec<&RawValue>, String> {
    match serde_json::from_slice::<Vec<&RawValue>>(text) {
        Ok(items) if items.is_empty() => Err(error_line(
            &ClientId::null(),
            -32600,
            "Invalid Request: an empty batch",
        )),
        Ok(items) => Ok(items),
        Err(e) => Err(error_line(
            &ClientId::null(),
            -32700,
            &format!("Parse error: {e}"),
        )),
    }
}

/// One message (a whole line, or one element of a batch). `next_id` hands out internal ids.
pub fn message(text: &[u8], in_batch: bool, next_id: &mut dyn FnMut() -> u64) -> Parsed {
    if text.is_empty() {
        return Parsed::Nothing;
    }
    if in_batch && is_batch(text) {
        return Parsed::Reply(error_line(
            &ClientId::null(),
            -32600,
            "Invalid Request: a batch inside a batch",
        ));
    }
    let env = match serde_json::from_slice::<Envelope>(text) {
        Ok(env) => env,
        Err(e) if e.is_syntax() || e.is_eof() => {
            return Parsed::Reply(error_line(
                &ClientId::null(),
                -32700,
                &format!("Parse error: {e}"),
            ));
        }
        // Valid JSON that is not an object (`[1,2,3]` is three of these): no id to echo.
        Err(_) if text.first() != Some(&b'{') => {
            let what = match text.first() {
                Some(b'"') => "a string",
                Some(b't' | b'f') => "a boolean",
                Some(b'n') => "null",
                _ => "a number",
            };
            let message = format!("Invalid Request: a message is a JSON object, not {what}");
            return Parsed::Reply(error_line(&ClientId::null(), -32600, &message));
        }
        Err(e) => {
            let id = id_from_prefix(text).unwrap_or_else(ClientId::null);
            return Parsed::Reply(error_line(&id, -32600, &format!("Invalid Request: {e}")));
        }
    };
    match (&env.method, env.id) {
        (Some(method), Some(raw)) => request(text, &env, method, raw, in_batch, next_id),
        (Some(method), None) => notification(text, &env, method),
        (None, Some(raw)) if env.result.is_some() || env.error.is_some() => {
            // An answer to a request of ours: its id is ours, rmcp reads it as it is.
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                Ok(msg) => Parsed::Response(Box::new(msg)),
                Err(e) => {
                    let id = quote(raw.get(), Quote::Plain);
                    tracing::debug!("ignored a malformed response {id}: {e}");
                    Parsed::Nothing
                }
            }
        }
        (None, id) => {
            let id = id.and_then(ClientId::new).unwrap_or_else(ClientId::null);
            Parsed::Reply(error_line(
                &id,
                -32600,
                "Invalid Request: no `method`, and not a response",
            ))
        }
    }
}

fn request(
    text: &[u8],
    env: &Envelope,
    method: &str,
    raw: &RawValue,
    in_batch: bool,
    next_id: &mut dyn FnMut() -> u64,
) -> Parsed {
    let Some(id) = ClientId::new(raw) else {
        return Parsed::Reply(error_line(
            &ClientId::null(),
            -32600,
            &format!(
                "Invalid Request: an id is a string or an integer, not {}",
                quote(raw.get(), Quote::Plain)
            ),
        ));
    };
    if env.jsonrpc.as_deref() != Some("2.0") {
        return Parsed::Reply(error_line(
            &id,
            -32600,
            "Invalid Request: `jsonrpc` must be \"2.0\"",
        ));
    }
    if in_batch && matches!(method, "initialize" | "subscriptions/listen") {
        return Parsed::Reply(error_line(
            &id,
            -32600,
            &format!("Invalid Request: `{method}` cannot be part of a batch"),
        ));
    }
    let internal = next_id();
    let msg =
        match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&with_id(text, raw, internal))
        {
            Ok(msg) => msg,
            Err(e) => {
                return Parsed::Reply(error_line(&id, -32602, &format!("Invalid params: {e}")));
            }
        };
    let JsonRpcMessage::Request(JsonRpcRequest { request, .. }) = &msg else {
        return Parsed::Reply(error_line(&id, -32600, "Invalid Request"));
    };
    // rmcp reads a standard method whose params do not fit as a custom request (and would
    // answer -32601): that is -32602 Invalid params.
    if let ClientRequest::CustomRequest(custom) = request
        && STANDARD_METHODS.contains(&custom.method.as_str())
    {
        let message = format!("Invalid params for `{}`", custom.method);
        return Parsed::Reply(error_line(&id, -32602, &message));
    }
    use rmcp::model::GetMeta as _;
    let modern = request
        .get_meta()
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    if modern && NOT_IN_2026.contains(&method) {
        return Parsed::Reply(error_line(
            &id,
            -32601,
            &format!("Method not found: `{method}` is not part of protocol 2026-07-28"),
        ));
    }
    let class = match request {
        ClientRequest::SubscriptionsListenRequest(_) => Class::Listen,
        ClientRequest::PingRequest(_)
        | ClientRequest::InitializeRequest(_)
        | ClientRequest::DiscoverRequest(_)
        | ClientRequest::SetLevelRequest(_)
        | ClientRequest::SubscribeRequest(_)
        | ClientRequest::UnsubscribeRequest(_) => Class::Control,
        _ => Class::Work,
    };
    // Inside a batch everything is work: the batch is answered as one line when all is done.
    let class = if in_batch { Class::Work } else { class };
    Parsed::Request {
        msg: Box::new(msg),
        internal,
        id,
        class,
    }
}

fn notification(text: &[u8], env: &Envelope, method: &str) -> Parsed {
    if method == "notifications/cancelled" {
        let params = env
            .params
            .and_then(|p| serde_json::from_str::<CancelParams>(p.get()).ok());
        return match params.and_then(|p| Some((ClientId::new(p.request_id)?, p.reason))) {
            Some((id, reason)) => Parsed::Cancel {
                key: id.key,
                reason,
            },
            None => {
                tracing::debug!("ignored a `notifications/cancelled` without a request id");
                Parsed::Nothing
            }
        };
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(msg) => Parsed::Notification(Box::new(msg)),
        // A notification we cannot read: notifications never get an answer.
        Err(e) => {
            tracing::debug!("ignored a malformed notification `{method}`: {e}");
            Parsed::Nothing
        }
    }
}

/// The message text with its id (a slice of `text`) replaced by `internal`.
fn with_id(text: &[u8], id: &RawValue, internal: u64) -> Vec<u8> {
    let start = (id.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    let end = start + id.get().len();
    let mut out = Vec::with_capacity(text.len() + 20);
    out.extend_from_slice(&text[..start]);
    out.extend_from_slice(internal.to_string().as_bytes());
    out.extend_from_slice(&text[end..]);
    out
}

/// How far into a message we look for its id when the whole cannot be read.
const ID_SCAN: usize = 64 * 1024;

/// The id of a message that cannot be read whole (too long, or not a valid request), if it
/// comes early: the object's members are read in order up to `id`, within the first 64 KiB.
pub fn id_from_prefix(text: &[u8]) -> Option<ClientId> {
    /// Stops at `id`; serde_json then fails on the unread rest, so the id is kept aside.
    struct FindId<'f>(&'f mut Option<ClientId>);
    impl<'de> Visitor<'de> for FindId<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                if key == "id" {
                    *self.0 = ClientId::new(map.next_value::<&'de RawValue>()?);
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let head = &text[..text.len().min(ID_SCAN)];
    let mut de = serde_json::Deserializer::from_slice(head);
    let mut found = None;
    let _ = serde::Deserializer::deserialize_map(&mut de, FindId(&mut found));
    found
}

/// The JSON text of an error response.
pub fn error_line(id: &ClientId, code: i64, message: &str) -> String {
    let message = serde_json::to_string(message).unwrap_or_else(|_| "\"error\"".into());
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{code},"message":{message}}}}}"#,
        id.raw
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn only_a_bare_ping_is_answered_in_place() {
        let ping = |line: &str| {
            direct(trim(line.as_bytes()), &["ping", "resources/read"])
                .and_then(|req| ping_answer(&req))
        };
        assert_eq!(
            ping(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).as_deref(),
            Some(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#)
        );
        assert_eq!(
            ping(r#"{"method":"ping","params":{},"id":"a\u0062","jsonrpc":"2.0"}"#).as_deref(),
            Some(r#"{"jsonrpc":"2.0","id":"a\u0062","result":{}}"#)
        );
        for other in [
            r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"protocolVersion":"2026-07-28"}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":null}"#,
            r#"{"jsonrpc":"2.0","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"x":"ping"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"ping""#,
        ] {
            assert_eq!(ping(other), None, "{other}");
        }
    }

    #[test]
    fn the_first_method_key_is_read_without_parsing() {
        let m = |line: &str| {
            first_method(line.as_bytes()).map(|m| String::from_utf8_lossy(m).into_owned())
        };
        assert_eq!(m(r#"{"id":1,"method":"ping"}"#).as_deref(), Some("ping"));
        assert_eq!(
            m("{\"method\" :\t\"resources/read\" }").as_deref(),
            Some("resources/read")
        );
        assert_eq!(m(r#"{"method":"a\/b"}"#), None, "escaped: left to rmcp");
        assert_eq!(m(r#"{"id":"method","params":{}}"#), None);
        assert_eq!(m(r#"{"method":1}"#), None);
        assert_eq!(m(r#"{"method":"unterminated"#), None);
        // A key named so in `params` first: that one is read (and the line goes to rmcp).
        assert_eq!(
            m(r#"{"params":{"method":"x"},"method":"ping"}"#).as_deref(),
            Some("x")
        );
    }

    #[test]
    fn direct_requests_are_requests_for_the_named_methods() {
        let methods = ["ping", "resources/read"];
        let read =
            r#"{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"file:///a"}}"#;
        let req = direct(read.as_bytes(), &methods).expect("a direct request");
        assert_eq!(&*req.id.raw, r#""r""#);
        assert_eq!(req.method, "resources/read");
        assert_eq!(req.params.map(|p| p.get()), Some(r#"{"uri":"file:///a"}"#));
        assert_eq!(
            result_line(&req.id, r#"{"contents":[]}"#),
            r#"{"jsonrpc":"2.0","id":"r","result":{"contents":[]}}"#
        );
        for other in [
            format!("[{read}]"),
            r#"{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"file:///a"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"result":{"method":"resources/read"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"resources/read"}}"#
                .into(),
            r#"{"jsonrpc":"2.0","id":{},"method":"resources/read","params":{}}"#.into(),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{{"uri":"{}"}}}}"#,
                "a".repeat(DIRECT_MAX)
            ),
        ] {
            assert!(direct(other.as_bytes(), &methods).is_none(), "{other}");
        }
    }

    fn parse(line: &str) -> Parsed {
        let mut n = 100;
        message(trim(line.as_bytes()), false, &mut || {
            n += 1;
            n
        })
    }

    fn reply(line: &str) -> Value {
        match parse(line) {
            Parsed::Reply(s) => serde_json::from_str(&s).expect("a JSON reply"),
            _ => panic!("expected a reply to {line}"),
        }
    }

    #[test]
    fn ids_are_strings_or_integers_of_any_size_kept_as_written() {
        for (raw, ok) in [
            ("1", true),
            ("-7", true),
            ("123456789012345678901234567890", true),
            (r#""a""#, true),
            (r#""\u0061""#, true),
            ("1.5", false),
            ("1e3", false),
            ("{}", false),
            ("[]", false),
            ("true", false),
            ("null", false),
        ] {
            let v: &RawValue = serde_json::from_str(raw).expect("raw");
            let id = ClientId::new(v);
            assert_eq!(id.is_some(), ok, "{raw}");
            if let Some(id) = id {
                assert_eq!(&*id.raw, raw);
            }
        }
        let a: &RawValue = serde_json::from_str(r#""a""#).expect("raw");
        let b: &RawValue = serde_json::from_str(r#""\u0061""#).expect("raw");
        assert_eq!(
            ClientId::new(a).map(|i| i.key),
            ClientId::new(b).map(|i| i.key)
        );
    }

    #[test]
    fn a_request_gets_an_internal_id_and_keeps_its_own() {
        match parse(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#) {
            Parsed::Request {
                msg,
                internal,
                id,
                class,
            } => {
                assert_eq!(&*id.raw, "123456789012345678901234567890");
                assert_eq!(class, Class::Control);
                let JsonRpcMessage::Request(r) = *msg else {
                    panic!("a request")
                };
                assert_eq!(r.id, rmcp::model::NumberOrString::Number(internal as i64));
            }
            _ => panic!("a request"),
        }
    }

    #[test]
    fn bad_lines_get_the_right_error() {
        let r = reply("{not json");
        assert_eq!(
            (r["error"]["code"].as_i64(), r["id"].is_null()),
            (Some(-32700), true)
        );
        let r = reply(r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{}}"#);
        assert_eq!(
            (r["id"].as_i64(), r["error"]["code"].as_i64()),
            (Some(7), Some(-32602))
        );
        assert_eq!(reply(r#"{"hello":1}"#)["error"]["code"], -32600);
        for id in ["1.5", "{}", "[]", "true", "null"] {
            let r = reply(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
            assert_eq!(
                (r["error"]["code"].as_i64(), r["id"].is_null()),
                (Some(-32600), true),
                "{id}"
            );
        }
        let r = reply(r#"{"jsonrpc":"2.0","id":"x","method":7}"#);
        assert_eq!(
            (r["error"]["code"].as_i64(), r["id"].as_str()),
            (Some(-32600), Some("x"))
        );
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/x","params":5}"#),
            Parsed::Nothing | Parsed::Notification(_)
        ));
        assert!(matches!(parse("   "), Parsed::Nothing));
    }

    #[test]
    fn removed_methods_on_a_2026_request_are_not_found() {
        let meta = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#;
        for m in ["ping", "logging/setLevel"] {
            let params = if m == "ping" {
                meta.to_owned()
            } else {
                meta.replacen('{', r#"{"level":"info","#, 1)
            };
            let r = reply(&format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"{m}","params":{params}}}"#
            ));
            assert_eq!(r["error"]["code"], -32601, "{m}");
        }
    }

    #[test]
    fn cancellations_name_the_clients_id() {
        match parse(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99999999999999999999}}"#,
        ) {
            Parsed::Cancel { key, .. } => {
                assert_eq!(key, IdKey::Number("99999999999999999999".into()))
            }
            _ => panic!("a cancel"),
        }
    }

    #[test]
    fn the_id_of_an_unreadable_message_is_found_early_or_not_at_all() {
        let id = |s: &str| id_from_prefix(s.as_bytes()).map(|i| i.raw.to_string());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":42,"method":"x","params":{"a":"#),
            Some("42".into())
        );
        assert_eq!(
            id(r#"{"params":{"a":[1,2]},"id":"q","#),
            Some(r#""q""#.into())
        );
        assert_eq!(id(r#"{"params":{"a":"long"#), None);
        assert_eq!(id(r#"{"id":1.5,"#), None);
        assert_eq!(id("[1,2"), None);
    }

    #[test]
    fn batches_refuse_nesting_and_initialize() {
        let mut n = 0;
        let mut next = || {
            n += 1;
            n
        };
        let nested = message(b"[1]", true, &mut next);
        assert!(matches!(nested, Parsed::Reply(s) if s.contains("-32600")));
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
        assert!(matches!(message(init, true, &mut next), Parsed::Reply(s) if s.contains("-32600")));
        assert!(batch_items(b"[]").is_err());
        assert_eq!(batch_items(b"[1, {\"a\":2}]").map(|v| v.len()), Ok(2));
    }
}
