//! The MCP layer: the ONLY module that imports rmcp. It implements `ServerHandler` over the
//! registry, converts our plain types to MCP types, and owns the stdio transport.
//!
//! rmcp runs both protocol eras: `initialize` (2024-11-05 … 2025-11-25) and the stateless
//! 2026-07-28 (`server/discover`, per-request `_meta`, `resultType`, cache hints, not-found as
//! -32602). Every request runs in its own task, so a slow read never delays a `ping`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::Engine as _;
use rmcp::model::{
    Annotations, CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest,
    CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock, ErrorData,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, JsonRpcMessage,
    JsonRpcRequest, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, Prompt, PromptArgument,
    PromptMessage, PromptsCapability, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Reference, Resource, ResourceContents,
    ResourceTemplate, ResourcesCapability, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
    ToolsCapability,
};
use rmcp::service::{RequestContext, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::manifest::Role;
use crate::prompts::PromptInfo;
use crate::providers::{Body, Completion, Contents, RequestError, ResourceInfo};
use crate::registry::{PromptContent, Registry, paginate};
use crate::tools::{CallContext, Progress, ToolContent, ToolInfo, ToolResult};

/// The `ServerHandler`: a registry (swappable on manifest reload) and the info derived from it.
#[derive(Clone)]
pub struct Handler {
    state: Arc<RwLock<Arc<Snapshot>>>,
    /// Cancelled when stdin closes: rmcp sends no notification after that.
    closing: CancellationToken,
}

/// One registry and the server info computed from it once (rmcp calls `get_info` often).
struct Snapshot {
    registry: Arc<Registry>,
    info: ServerConfig,
}

impl Snapshot {
    fn new(registry: Arc<Registry>) -> Snapshot {
        let m = &registry.manifest;
        let mut caps = ServerCapabilities::default();
        caps.resources = Some(ResourcesCapability::default());
        if registry.has_tools() {
            caps.tools = Some(ToolsCapability::default());
        }
        if !registry.prompts.is_empty() {
            caps.prompts = Some(PromptsCapability::default());
        }
        if registry.has_completions() {
            caps.completions = Some(serde_json::Map::new());
        }
        let mut info = ServerConfig::new(caps)
            .with_server_info(Implementation::new(&m.server.name, &m.server.version))
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
        if let Some(text) = &m.server.instructions {
            info = info.with_instructions(text);
        }
        Snapshot { registry, info }
    }
}

impl Handler {
    pub fn new(registry: Registry) -> Handler {
        Handler {
            state: Arc::new(RwLock::new(Arc::new(Snapshot::new(Arc::new(registry))))),
            closing: CancellationToken::new(),
        }
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        match self.state.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn registry(&self) -> Arc<Registry> {
        self.snapshot().registry.clone()
    }
}

fn error(e: RequestError) -> ErrorData {
    match e {
        RequestError::NotFound(uri) => ErrorData::resource_not_found(
            format!("resource not found: {uri}"),
            Some(serde_json::json!({ "uri": uri })),
        ),
        RequestError::InvalidParams(m) | RequestError::Refused(m) => {
            ErrorData::invalid_params(m, None)
        }
        RequestError::Internal(m) => ErrorData::internal_error(m, None),
    }
}

fn cursor(params: &Option<PaginatedRequestParams>) -> Option<&str> {
    params.as_ref().and_then(|p| p.cursor.as_deref())
}

fn rfc3339(t: std::time::SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn resource(r: &ResourceInfo) -> Resource {
    let mut raw = Resource::new(&r.uri, &r.name);
    raw.title = r.title.clone();
    raw.description = r.description.clone();
    raw.mime_type = r.mime_type.clone();
    raw.size = r.size;
    if let Some(t) = r.last_modified {
        let mut a = Annotations::default();
        a.last_modified = Some(rfc3339(t));
        raw = raw.with_annotations(a);
    }
    raw
}

fn contents(c: Contents) -> ResourceContents {
    let rc = match c.body {
        Body::Text(t) => ResourceContents::text(t, c.uri),
        Body::Bytes(b) => {
            ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(b), c.uri)
        }
    };
    match c.mime_type {
        Some(m) => rc.with_mime_type(m),
        None => rc,
    }
}

fn tool(t: &ToolInfo) -> Tool {
    let mut tool = Tool::new_with_raw(
        t.name.clone(),
        t.description.clone().map(Cow::Owned),
        Arc::new(t.input_schema.clone()),
    )
    .with_annotations(
        ToolAnnotations::new()
            .read_only(t.hints.read_only)
            .destructive(t.hints.destructive)
            .idempotent(t.hints.idempotent)
            .open_world(t.hints.open_world),
    );
    if let Some(title) = &t.title {
        tool = tool.with_title(title);
    }
    if let Some(schema) = &t.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(schema.clone()));
    }
    tool
}

fn tool_result(r: ToolResult) -> CallToolResult {
    let content: Vec<ContentBlock> = r
        .content
        .into_iter()
        .map(|c| match c {
            ToolContent::Text(t) => ContentBlock::text(t),
            ToolContent::Resource(c) => ContentBlock::resource(contents(c)),
        })
        .collect();
    let mut out = if r.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    out.structured_content = r.structured;
    out
}

fn prompt(p: &PromptInfo) -> Prompt {
    let args: Vec<PromptArgument> = p
        .arguments
        .iter()
        .map(|a| {
            let arg = PromptArgument::new(&a.name).with_required(a.required);
            match &a.description {
                Some(d) => arg.with_description(d),
                None => arg,
            }
        })
        .collect();
    let out = Prompt::new(
        &p.name,
        p.description.clone(),
        (!args.is_empty()).then_some(args),
    );
    match &p.title {
        Some(t) => out.with_title(t),
        None => out,
    }
}

fn role(r: Role) -> rmcp::model::Role {
    match r {
        Role::User => rmcp::model::Role::User,
        Role::Assistant => rmcp::model::Role::Assistant,
    }
}

/// Forwards a call's progress to the client as `notifications/progress`. The task ends when the
/// call drops its sender, so awaiting it puts every notification before the response.
fn forward_progress(
    cx: &RequestContext<RoleServer>,
) -> Option<(
    tokio::sync::mpsc::UnboundedSender<Progress>,
    tokio::task::JoinHandle<()>,
)> {
    let token = cx.meta.get_progress_token()?;
    let peer = cx.peer.clone();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let task = tokio::spawn(async move {
        while let Some(p) = rx.recv().await {
            // Milliseconds: strictly increasing, since reports are at least that far apart.
            let seconds = p.elapsed.as_millis() as f64 / 1000.0;
            let mut param = ProgressNotificationParam::new(token.clone(), seconds);
            if let Some(m) = p.message {
                param = param.with_message(m);
            }
            if peer.notify_progress(param).await.is_err() {
                break;
            }
        }
    });
    Some((tx, task))
}

fn completion(c: Completion) -> CompleteResult {
    let total = c.total.map(|t| u32::try_from(t).unwrap_or(u32::MAX));
    let info = CompletionInfo::with_pagination(c.values, total, c.has_more).unwrap_or_default();
    CompleteResult::new(info)
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        self.snapshot().info.clone()
    }

    async fn list_resources(
        &self,
        params: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let registry = self.registry();
        let all = registry.list_resources().await.map_err(error)?;
        let (page, next) = paginate(&all, cursor(&params), registry.page_size()).map_err(error)?;
        let mut result = ListResourcesResult::with_all_items(page.iter().map(resource).collect());
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        params: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let registry = self.registry();
        let all = registry.templates();
        let (page, next) = paginate(&all, cursor(&params), registry.page_size()).map_err(error)?;
        let items = page
            .iter()
            .map(|t| {
                let mut rt = ResourceTemplate::new(&t.uri_template, &t.name);
                rt.description = t.description.clone();
                rt.mime_type = t.mime_type.clone();
                rt
            })
            .collect();
        let mut result = ListResourceTemplatesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let registry = self.registry();
        let found = registry.read(&params.uri).await.map_err(error)?;
        Ok(ReadResourceResult::new(found.into_iter().map(contents).collect()).into())
    }

    async fn complete(
        &self,
        params: CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let registry = self.registry();
        if !registry.has_completions() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::CompleteRequestMethod,
            >());
        }
        let context: HashMap<String, String> =
            params.context.and_then(|c| c.arguments).unwrap_or_default();
        let arg = &params.argument;
        let answer = match &params.r#ref {
            Reference::Resource(r) => {
                registry
                    .complete_resource(&r.uri, &arg.name, &arg.value, &context)
                    .await
            }
            Reference::Prompt(p) => {
                registry
                    .complete_prompt(&p.name, &arg.name, &arg.value)
                    .await
            }
            _ => Err(RequestError::InvalidParams(
                "unknown completion reference".into(),
            )),
        };
        answer.map(completion).map_err(error)
    }

    async fn list_tools(
        &self,
        params: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let registry = self.registry();
        let all = registry.tools();
        if all.is_empty() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::ListToolsRequestMethod,
            >());
        }
        let (page, next) = paginate(&all, cursor(&params), registry.page_size()).map_err(error)?;
        let mut result = ListToolsResult::with_all_items(page.iter().map(tool).collect());
        result.next_cursor = next;
        Ok(result)
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let registry = self.registry();
        if !registry.has_tools() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::CallToolRequestMethod,
            >());
        }
        let args = params.arguments.unwrap_or_default();
        // rmcp cancels `cx.ct` on `notifications/cancelled` for this request (and when the
        // session ends); the tool kills its process group then.
        let (progress, forward) = match forward_progress(&cx) {
            Some((tx, task)) => (Some(tx), Some(task)),
            None => (None, None),
        };
        let call = CallContext {
            cancel: cx.ct.clone(),
            progress,
        };
        let result = registry.call_tool(&params.name, args, call).await;
        if let Some(mut task) = forward {
            // Once stdin has closed, rmcp sends no more notifications and a pending one would
            // wait forever: give up on it rather than on the answer.
            tokio::select! {
                _ = &mut task => {}
                _ = self.closing.cancelled() => task.abort(),
            }
        }
        Ok(tool_result(result.map_err(error)?).into())
    }

    async fn list_prompts(
        &self,
        params: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let registry = self.registry();
        if registry.prompts.is_empty() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::ListPromptsRequestMethod,
            >());
        }
        let all = registry.prompt_infos();
        let (page, next) = paginate(&all, cursor(&params), registry.page_size()).map_err(error)?;
        let mut result = ListPromptsResult::with_all_items(page.iter().map(prompt).collect());
        result.next_cursor = next;
        Ok(result)
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let registry = self.registry();
        if registry.prompts.is_empty() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::GetPromptRequestMethod,
            >());
        }
        let args = params.arguments.unwrap_or_default();
        let rendered = registry
            .get_prompt(&params.name, &args)
            .await
            .map_err(error)?;
        let messages = rendered
            .messages
            .into_iter()
            .map(|(r, c)| match c {
                PromptContent::Text(t) => PromptMessage::new_text(role(r), t),
                PromptContent::Resource(c) => {
                    PromptMessage::new(role(r), ContentBlock::resource(contents(c)))
                }
            })
            .collect();
        let mut result = GetPromptResult::new(messages);
        if let Some(d) = rendered.description {
            result = result.with_description(d);
        }
        Ok(result.into())
    }
}

/// Serves `registry` on stdin/stdout until stdin closes (or SIGTERM), then returns within ~1 s.
pub async fn serve_stdio(registry: Registry) -> anyhow::Result<()> {
    serve(registry, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves on any byte streams (tests use pipes). Returns when the input ends.
pub async fn serve<R, W>(registry: Registry, input: R, output: W) -> anyhow::Result<()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    // However serving ends, no child outlives it: every process group a tool started is killed.
    let _children = KillChildrenOnExit;
    let eof = CancellationToken::new();
    let transport = LineTransport::new(input, output, eof.clone());
    let mut handler = Handler::new(registry);
    handler.closing = eof.clone();
    let running = match handler.serve(transport).await {
        Ok(r) => r,
        // The client went away before it started a session: a clean exit.
        Err(_) if eof.is_cancelled() => return Ok(()),
        Err(e) => return Err(anyhow::anyhow!("the MCP session did not start: {e}")),
    };
    let service_ct = running.cancellation_token();
    let mut waiting = std::pin::pin!(running.waiting());
    tokio::select! {
        _ = &mut waiting => {}
        _ = eof.cancelled() => {
            // The client is gone, so nobody waits for a running tool: its processes go now
            // (and its call ends). Other answers being computed get a moment to go out.
            crate::tools::kill_all();
            if tokio::time::timeout(Duration::from_millis(800), &mut waiting).await.is_err() {
                service_ct.cancel();
            }
        }
        _ = terminate_signal() => service_ct.cancel(),
    }
    Ok(())
}

struct KillChildrenOnExit;

impl Drop for KillChildrenOnExit {
    fn drop(&mut self) {
        crate::tools::kill_all();
    }
}

#[cfg(unix)]
async fn terminate_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}

#[cfg(not(unix))]
async fn terminate_signal() {
    std::future::pending().await
}

/// The largest incoming line (one JSON-RPC message) we buffer; longer lines are dropped.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Newline-delimited JSON-RPC over byte streams. Written here rather than taken from rmcp because
/// rmcp drops unparsable lines silently; JSON-RPC wants `-32700` with `id: null` for those, and
/// a request whose params do not fit its method should get `-32602` with its id.
struct LineTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    discarding: bool,
    queue: std::collections::VecDeque<RxJsonRpcMessage<RoleServer>>,
    write: Arc<tokio::sync::Mutex<W>>,
    eof: CancellationToken,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    fn new(read: R, write: W, eof: CancellationToken) -> Self {
        LineTransport {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            discarding: false,
            queue: Default::default(),
            write: Arc::new(tokio::sync::Mutex::new(write)),
            eof,
        }
    }

    /// Writes raw protocol lines from a task of its own, so a cancelled `receive` cannot cut one.
    fn reply_raw(&self, line: String) {
        let write = self.write.clone();
        tokio::spawn(async move {
            let mut w = write.lock().await;
            let _ = w.write_all(line.as_bytes()).await;
            let _ = w.flush().await;
        });
    }

    /// Reads one line into `self.line`. Cancellation-safe: bytes are consumed only after they
    /// were copied, so a dropped future resumes where it stopped.
    async fn next_line(&mut self) -> Option<()> {
        loop {
            let (used, done) = {
                let buf = match self.read.fill_buf().await {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::error!("reading stdin failed: {e}");
                        return None;
                    }
                };
                if buf.is_empty() {
                    return None;
                }
                let nl = buf.iter().position(|b| *b == b'\n');
                let take = nl.map_or(buf.len(), |i| i + 1);
                if self.discarding {
                    if nl.is_some() {
                        self.discarding = false;
                    }
                } else if self.line.len() + take > MAX_LINE {
                    tracing::error!("dropped an incoming message longer than {MAX_LINE} bytes");
                    self.line.clear();
                    self.discarding = nl.is_none();
                } else {
                    self.line.extend_from_slice(&buf[..take]);
                }
                (take, nl.is_some() && !self.line.is_empty())
            };
            self.read.consume(used);
            if done {
                return Some(());
            }
        }
    }

    fn handle_line(&mut self) {
        let raw = std::mem::take(&mut self.line);
        let mut text: &[u8] = &raw;
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
            Ok(msg) => self.accept(msg),
            Err(e) if e.is_syntax() || e.is_eof() => self.reply_raw(error_line(
                &Value::Null,
                -32700,
                &format!("Parse error: {e}"),
            )),
            Err(e) => self.invalid(text, &e),
        }
    }

    /// Queues a parsed message. rmcp reads a standard method whose params do not fit as a
    /// custom request (and would answer -32601); those get -32602 Invalid params here.
    fn accept(&mut self, msg: RxJsonRpcMessage<RoleServer>) {
        if let JsonRpcMessage::Request(JsonRpcRequest {
            id,
            request: ClientRequest::CustomRequest(custom),
            ..
        }) = &msg
            && STANDARD_METHODS.contains(&custom.method.as_str())
        {
            let id = serde_json::to_value(id).unwrap_or(Value::Null);
            let message = format!("Invalid params for `{}`", custom.method);
            return self.reply_raw(error_line(&id, -32602, &message));
        }
        self.queue.push_back(msg);
    }

    /// Valid JSON that is not a message we accept: a batch (2025-03-26), a request whose params
    /// do not fit (-32602 with its id), or something else (-32600).
    fn invalid(&mut self, text: &[u8], e: &serde_json::Error) {
        let Ok(value) = serde_json::from_slice::<Value>(text) else {
            return self.reply_raw(error_line(&Value::Null, -32700, "Parse error"));
        };
        if let Value::Array(items) = value {
            if items.is_empty() {
                return self.reply_raw(error_line(
                    &Value::Null,
                    -32600,
                    "Invalid Request: empty batch",
                ));
            }
            for item in items {
                match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(item.clone()) {
                    Ok(msg) => self.accept(msg),
                    Err(e) => {
                        let bytes = item.to_string();
                        self.invalid(bytes.as_bytes(), &e)
                    }
                }
            }
            return;
        }
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        let has_method = value.get("method").and_then(Value::as_str).is_some();
        let is_request = has_method && matches!(id, Value::String(_) | Value::Number(_));
        if is_request && value.get("jsonrpc").and_then(Value::as_str) == Some("2.0") {
            self.reply_raw(error_line(&id, -32602, &format!("Invalid params: {e}")));
        } else if has_method && id.is_null() && value.get("id").is_none() {
            // A notification we cannot read: notifications never get an answer.
            tracing::debug!("ignored a malformed notification: {e}");
        } else {
            let id = if matches!(id, Value::String(_) | Value::Number(_)) {
                id
            } else {
                Value::Null
            };
            self.reply_raw(error_line(&id, -32600, &format!("Invalid Request: {e}")));
        }
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
    let mut s = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message }
    })
    .to_string();
    s.push('\n');
    s
}

impl<R, W> rmcp::transport::Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let mut w = write.lock().await;
            w.write_all(&bytes).await?;
            w.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(msg) = self.queue.pop_front() {
                return Some(msg);
            }
            if self.next_line().await.is_none() {
                self.eof.cancel();
                return None;
            }
            self.handle_line();
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut w = self.write.lock().await;
        w.flush().await
    }
}
