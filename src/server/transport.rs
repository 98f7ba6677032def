//! Newline-delimited JSON-RPC over byte streams (stdin/stdout), under rmcp's `Transport`.
//!
//! Written here rather than taken from rmcp because rmcp drops unparsable lines silently;
//! JSON-RPC wants `-32700` with `id: null` for those, and a request whose params do not fit its
//! method should get `-32602` with its id.
//!
//! Reading and writing each run on a dedicated thread, which also parses (reader) and
//! serializes (writer), so the async runtime only routes messages: tokio's stdin/stdout would
//! hop through the blocking pool on every call. The reader hands parsed messages over a bounded
//! channel, so `receive` is cancellation-safe; the writer drains its queue into one buffered
//! write and flushes only when the queue is empty, so pipelined answers share system calls.
//!
//! At most `MAX_IN_FLIGHT` requests are handed to rmcp before their answers go out: a client
//! that pipelines thousands of requests waits on the pipe instead of growing our memory.

use std::collections::HashSet;
use std::io::{BufRead, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientNotification, ClientRequest, JsonRpcMessage, JsonRpcRequest, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The largest incoming line (one JSON-RPC message) we buffer; longer lines are dropped.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Requests handed to rmcp whose answers have not gone out yet, at most.
const MAX_IN_FLIGHT: usize = 256;

/// What the writer thread writes.
enum Outgoing {
    Message(Box<TxJsonRpcMessage<RoleServer>>),
    /// A line we wrote ourselves (errors for input rmcp never sees).
    Raw(String),
}

/// The output side: a queue to the writer thread, and a way to wait until all is written.
pub struct Output {
    tx: std::sync::mpsc::Sender<Outgoing>,
    done: tokio::sync::oneshot::Receiver<()>,
}

impl Output {
    /// Starts the writer thread on `write`.
    pub fn start<W: Write + Send + 'static>(write: W) -> Output {
        let (tx, rx) = std::sync::mpsc::channel::<Outgoing>();
        let (done_tx, done) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("stdout".into())
            .spawn(move || {
                write_messages(write, rx);
                let _ = done_tx.send(());
            })
            .expect("spawning the stdout thread");
        Output { tx, done }
    }

    /// Waits (at most `limit`) until everything queued is written: the writer ends once every
    /// sender (the transport, in-flight sends) is gone.
    pub async fn finish(self, limit: Duration) {
        let Output { tx, done } = self;
        drop(tx);
        let _ = tokio::time::timeout(limit, done).await;
    }
}

/// The transport rmcp drives.
pub struct LineTransport {
    incoming: tokio::sync::mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    /// A message taken from `incoming` that waits for room among the in-flight requests.
    next: Option<RxJsonRpcMessage<RoleServer>>,
    out: std::sync::mpsc::Sender<Outgoing>,
    eof: CancellationToken,
    in_flight: Arc<InFlight>,
}

/// Requests handed to rmcp and not answered yet (answered, cancelled, or dropped by rmcp).
#[derive(Default)]
struct InFlight {
    ids: Mutex<HashSet<RequestId>>,
    freed: tokio::sync::Notify,
}

impl InFlight {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn done(&self, id: &RequestId) {
        if self.ids().remove(id) {
            self.freed.notify_one();
        }
    }
}

impl LineTransport {
    /// Starts the reader thread on `read`; answers go to `output`. `eof` is cancelled when the
    /// input ends.
    pub fn new<R: Read + Send + 'static>(
        read: R,
        output: &Output,
        eof: CancellationToken,
    ) -> LineTransport {
        let (tx, incoming) = tokio::sync::mpsc::channel(256);
        let replies = output.tx.clone();
        std::thread::Builder::new()
            .name("stdin".into())
            .spawn(move || read_messages(read, &tx, &replies))
            .expect("spawning the stdin thread");
        LineTransport {
            incoming,
            next: None,
            out: output.tx.clone(),
            eof,
            in_flight: Arc::default(),
        }
    }
}

impl rmcp::transport::Transport<RoleServer> for LineTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        if let Some(id) = answered {
            self.in_flight.done(&id);
        }
        let sent = self
            .out
            .send(Outgoing::Message(Box::new(item)))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout closed"));
        std::future::ready(sent)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // A cancelled `receive` keeps its message in `self.next`: nothing is lost.
        if self.next.is_none() {
            match self.incoming.recv().await {
                Some(msg) => self.next = Some(msg),
                None => {
                    self.eof.cancel();
                    return None;
                }
            }
        }
        match self.next.as_ref() {
            Some(JsonRpcMessage::Request(r)) => {
                let id = r.id.clone();
                loop {
                    let freed = self.in_flight.freed.notified();
                    {
                        let mut ids = self.in_flight.ids();
                        if ids.len() < MAX_IN_FLIGHT {
                            ids.insert(id);
                            break;
                        }
                    }
                    freed.await;
                }
            }
            Some(JsonRpcMessage::Notification(n)) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    // rmcp drops the answer of a cancelled request.
                    self.in_flight.done(id);
                }
            }
            _ => {}
        }
        self.next.take()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The reader thread: splits input into lines (at most `MAX_LINE` bytes each), parses them, and
/// hands messages to the transport; what cannot be a message is answered here.
fn read_messages<R: Read>(
    read: R,
    tx: &tokio::sync::mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    replies: &std::sync::mpsc::Sender<Outgoing>,
) {
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, read);
    let mut line = Vec::new();
    let mut discarding = false;
    let mut parsed = Vec::new();
    loop {
        let (used, done) = {
            let buf = match reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::error!("reading stdin failed: {e}");
                    return;
                }
            };
            if buf.is_empty() {
                return;
            }
            let nl = buf.iter().position(|b| *b == b'\n');
            let take = nl.map_or(buf.len(), |i| i + 1);
            if discarding {
                discarding = nl.is_none();
            } else if line.len() + take > MAX_LINE {
                tracing::error!("dropped an incoming message longer than {MAX_LINE} bytes");
                line.clear();
                discarding = nl.is_none();
            } else {
                line.extend_from_slice(&buf[..take]);
            }
            (take, nl.is_some() && !line.is_empty())
        };
        reader.consume(used);
        if !done {
            continue;
        }
        let mut reply = |s: String| {
            let _ = replies.send(Outgoing::Raw(s));
        };
        parse_line(&line, &mut parsed, &mut reply);
        line.clear();
        for msg in parsed.drain(..) {
            if tx.blocking_send(msg).is_err() {
                return;
            }
        }
    }
}

/// Parses one line into messages (a batch gives several) or error answers.
fn parse_line(
    raw: &[u8],
    out: &mut Vec<RxJsonRpcMessage<RoleServer>>,
    reply: &mut dyn FnMut(String),
) {
    let mut text: &[u8] = raw;
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
    if text.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(msg) => accept(msg, out, reply),
        Err(e) if e.is_syntax() || e.is_eof() => reply(error_line(
            &Value::Null,
            -32700,
            &format!("Parse error: {e}"),
        )),
        Err(e) => invalid(text, &e, out, reply),
    }
}

/// Keeps a parsed message. rmcp reads a standard method whose params do not fit as a custom
/// request (and would answer -32601); those get -32602 Invalid params here.
fn accept(
    msg: RxJsonRpcMessage<RoleServer>,
    out: &mut Vec<RxJsonRpcMessage<RoleServer>>,
    reply: &mut dyn FnMut(String),
) {
    if let JsonRpcMessage::Request(JsonRpcRequest {
        id,
        request: ClientRequest::CustomRequest(custom),
        ..
    }) = &msg
        && STANDARD_METHODS.contains(&custom.method.as_str())
    {
        let id = serde_json::to_value(id).unwrap_or(Value::Null);
        let message = format!("Invalid params for `{}`", custom.method);
        return reply(error_line(&id, -32602, &message));
    }
    out.push(msg);
}

/// Valid JSON that is not a message we accept: a batch (2025-03-26), a request whose params do
/// not fit (-32602 with its id), or something else (-32600).
fn invalid(
    text: &[u8],
    e: &serde_json::Error,
    out: &mut Vec<RxJsonRpcMessage<RoleServer>>,
    reply: &mut dyn FnMut(String),
) {
    let Ok(value) = serde_json::from_slice::<Value>(text) else {
        return reply(error_line(&Value::Null, -32700, "Parse error"));
    };
    if let Value::Array(items) = value {
        if items.is_empty() {
            return reply(error_line(
                &Value::Null,
                -32600,
                "Invalid Request: empty batch",
            ));
        }
        for item in items {
            match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(item.clone()) {
                Ok(msg) => accept(msg, out, reply),
                Err(e) => invalid(item.to_string().as_bytes(), &e, out, reply),
            }
        }
        return;
    }
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let has_method = value.get("method").and_then(Value::as_str).is_some();
    let is_request = has_method && matches!(id, Value::String(_) | Value::Number(_));
    if is_request && value.get("jsonrpc").and_then(Value::as_str) == Some("2.0") {
        reply(error_line(&id, -32602, &format!("Invalid params: {e}")));
    } else if has_method && value.get("id").is_none() {
        // A notification we cannot read: notifications never get an answer.
        tracing::debug!("ignored a malformed notification: {e}");
    } else {
        let id = if matches!(id, Value::String(_) | Value::Number(_)) {
            id
        } else {
            Value::Null
        };
        reply(error_line(&id, -32600, &format!("Invalid Request: {e}")));
    }
}

/// Requests the protocol defines (either era).
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

fn error_line(id: &Value, code: i64, message: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message }
    })
    .to_string()
}

/// The writer thread: serializes and writes whole messages, batching what is queued, flushing
/// when idle.
fn write_messages<W: Write>(write: W, rx: std::sync::mpsc::Receiver<Outgoing>) {
    let mut w = std::io::BufWriter::with_capacity(64 * 1024, write);
    let put = |w: &mut std::io::BufWriter<W>, item: Outgoing| -> std::io::Result<()> {
        match item {
            Outgoing::Message(m) => {
                serde_json::to_writer(&mut *w, &m).map_err(std::io::Error::other)?
            }
            Outgoing::Raw(s) => w.write_all(s.as_bytes())?,
        }
        w.write_all(b"\n")
    };
    while let Ok(first) = rx.recv() {
        if put(&mut w, first).is_err() {
            return;
        }
        while let Ok(more) = rx.try_recv() {
            if put(&mut w, more).is_err() {
                return;
            }
        }
        if w.flush().is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> (usize, Vec<Value>) {
        let mut out = Vec::new();
        let mut replies = Vec::new();
        parse_line(line.as_bytes(), &mut out, &mut |s| {
            replies.push(serde_json::from_str(&s).expect("a JSON reply"))
        });
        (out.len(), replies)
    }

    #[test]
    fn sorts_lines_into_messages_and_error_answers() {
        assert_eq!(parse(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).0, 1);
        assert_eq!(parse("   \r\n"), (0, vec![]));
        let (n, r) = parse("{not json");
        assert_eq!((n, r[0]["error"]["code"].as_i64()), (0, Some(-32700)));
        assert!(r[0]["id"].is_null());
        let (_, r) = parse(r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{}}"#);
        assert_eq!(
            (r[0]["id"].as_i64(), r[0]["error"]["code"].as_i64()),
            (Some(7), Some(-32602))
        );
        let (_, r) = parse(r#"{"hello":1}"#);
        assert_eq!(r[0]["error"]["code"].as_i64(), Some(-32600));
        let (n, r) = parse(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#,
        );
        assert_eq!((n, r.len()), (2, 0));
        let (_, r) = parse("[]");
        assert_eq!(r[0]["error"]["code"].as_i64(), Some(-32600));
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/x","params":5}"#)
                .1
                .len(),
            0
        );
    }
}
