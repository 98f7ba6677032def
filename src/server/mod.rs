//! The MCP layer: the ONLY module that imports rmcp. It implements `ServerHandler` over the
//! registry, converts our plain types to MCP types, and owns the stdio transport.
//!
//! rmcp runs both protocol eras: `initialize` (2024-11-05 … 2025-11-25) and the stateless
//! 2026-07-28 (`server/discover`, per-request `_meta`, `resultType`, cache hints, not-found as
//! -32602). Every request runs in its own task, so a slow read never delays a `ping`.

// Handshake-era logging (`logging/setLevel`, `notifications/message`) and `resources/subscribe`
// are deprecated by the 2026-07-28 revision but are what handshake-era clients speak.
#![allow(deprecated)]

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use base64::Engine as _;
use rmcp::model::{
    Annotations, CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams,
    CompleteResult, CompletionInfo, ContentBlock, ErrorData, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, MetaObject, PaginatedRequestParams, ProgressNotificationParam,
    Prompt, PromptArgument, PromptMessage, PromptsCapability, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference, Resource,
    ResourceContents, ResourceTemplate, ResourceUpdatedNotificationParam, ResourcesCapability,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, Tool, ToolAnnotations, ToolsCapability, UnsubscribeRequestParams,
};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext, SubscriptionSink,
};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::Value;
use std::io::{Read, Write};
use tokio_util::sync::CancellationToken;

use crate::manifest::Role;
use crate::prompts::PromptInfo;
use crate::providers::{Body, Completion, Contents, RequestError, ResourceInfo};
use crate::registry::{PromptContent, Registry, blocking, paginate};
use crate::tools::{CallContext, Progress, ToolContent, ToolInfo, ToolResult};
use crate::watch::{DEBOUNCE, Watcher};

mod transport;
use transport::{LineTransport, Output};

/// The `ServerHandler`: a registry (swapped when the manifest is edited), the info derived from
/// it, and who wants to hear about changes.
#[derive(Clone)]
pub struct Handler {
    shared: Arc<Shared>,
}

struct Shared {
    snapshot: RwLock<Arc<Snapshot>>,
    /// Handshake-era subscriptions (`resources/subscribe`), per process = per session.
    subscriptions: Mutex<HashSet<String>>,
    /// The handshake-era client, once initialized: where unsolicited notifications go.
    legacy_peer: Mutex<Option<Peer<RoleServer>>>,
    /// Stateless-era notification streams (`subscriptions/listen`), by request id.
    listens: Mutex<Vec<SubscriptionSink>>,
    /// `logging/setLevel` (handshake era): messages below it are not sent.
    log_level: Mutex<LoggingLevel>,
    /// Cancelled when stdin closes: rmcp sends no notification after that.
    closing: CancellationToken,
}

/// One registry and the server info computed from it once (rmcp calls `get_info` often).
struct Snapshot {
    registry: Arc<Registry>,
    info: ServerConfig,
    /// `_meta` with `io.modelcontextprotocol/serverInfo`, which stateless-era results carry.
    server_meta: MetaObject,
}

impl Snapshot {
    fn new(registry: Arc<Registry>) -> Snapshot {
        let m = &registry.manifest;
        let mut caps = ServerCapabilities::default();
        let mut resources = ResourcesCapability::default();
        resources.subscribe = Some(true);
        resources.list_changed = Some(true);
        caps.resources = Some(resources);
        if registry.has_tools() {
            let mut tools = ToolsCapability::default();
            tools.list_changed = Some(true);
            caps.tools = Some(tools);
        }
        if !registry.prompts.is_empty() {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            caps.prompts = Some(prompts);
        }
        if registry.has_completions() {
            caps.completions = Some(serde_json::Map::new());
        }
        // The manifest is watched: an invalid edit is reported as `notifications/message`.
        caps.logging = Some(serde_json::Map::new());
        let mut info = ServerConfig::new(caps)
            .with_server_info(Implementation::new(&m.server.name, &m.server.version))
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
        if let Some(text) = &m.server.instructions {
            info = info.with_instructions(text);
        }
        let mut server_meta = MetaObject::new();
        if let Ok(value) = serde_json::to_value(&info.server_info) {
            server_meta
                .0
                .insert("io.modelcontextprotocol/serverInfo".to_owned(), value);
        }
        Snapshot {
            registry,
            info,
            server_meta,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Handler {
    pub fn new(registry: Registry, closing: CancellationToken) -> Handler {
        Handler {
            shared: Arc::new(Shared {
                snapshot: RwLock::new(Arc::new(Snapshot::new(Arc::new(registry)))),
                subscriptions: Mutex::new(HashSet::new()),
                legacy_peer: Mutex::new(None),
                listens: Mutex::new(Vec::new()),
                log_level: Mutex::new(LoggingLevel::Info),
                closing,
            }),
        }
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        match self.shared.snapshot.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn registry(&self) -> Arc<Registry> {
        self.snapshot().registry.clone()
    }

    fn replace(&self, registry: Arc<Registry>) {
        let snap = Arc::new(Snapshot::new(registry));
        match self.shared.snapshot.write() {
            Ok(mut s) => *s = snap,
            Err(poisoned) => *poisoned.into_inner() = snap,
        }
    }

    fn legacy_peer(&self) -> Option<Peer<RoleServer>> {
        lock(&self.shared.legacy_peer).clone()
    }

    fn sinks(&self) -> Vec<SubscriptionSink> {
        lock(&self.shared.listens).clone()
    }

    /// Every URI someone subscribed to, in either era.
    fn subscribed(&self) -> HashSet<String> {
        let mut all = lock(&self.shared.subscriptions).clone();
        for sink in self.sinks() {
            if let Some(uris) = &sink.accepted().resource_subscriptions {
                all.extend(uris.iter().cloned());
            }
        }
        all
    }

    async fn resource_updated(&self, uri: &str) {
        if lock(&self.shared.subscriptions).contains(uri)
            && let Some(peer) = self.legacy_peer()
        {
            let _ = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await;
        }
        for sink in self.sinks() {
            // The sink drops what its accepted filter does not name.
            let _ = sink.notify_resource_updated(uri).await;
        }
    }

    async fn list_changed(&self, which: ListChanged) {
        let peer = self.legacy_peer();
        let sinks = self.sinks();
        if which.resources {
            if let Some(p) = &peer {
                let _ = p.notify_resource_list_changed().await;
            }
            for s in &sinks {
                let _ = s.notify_resource_list_changed().await;
            }
        }
        if which.tools {
            if let Some(p) = &peer {
                let _ = p.notify_tool_list_changed().await;
            }
            for s in &sinks {
                let _ = s.notify_tool_list_changed().await;
            }
        }
        if which.prompts {
            if let Some(p) = &peer {
                let _ = p.notify_prompt_list_changed().await;
            }
            for s in &sinks {
                let _ = s.notify_prompt_list_changed().await;
            }
        }
    }

    /// Logs to stderr and, in the handshake era, to the client as `notifications/message`.
    async fn log_error(&self, text: &str) {
        tracing::error!("{text}");
        let quiet = matches!(
            *lock(&self.shared.log_level),
            LoggingLevel::Critical | LoggingLevel::Alert | LoggingLevel::Emergency
        );
        if quiet {
            return;
        }
        if let Some(peer) = self.legacy_peer() {
            let _ = peer
                .notify_logging_message(
                    LoggingMessageNotificationParam::new(
                        LoggingLevel::Error,
                        Value::String(text.into()),
                    )
                    .with_logger("mcp-manifest"),
                )
                .await;
        }
    }
}

/// The serverInfo `_meta` for a stateless-era request (those carry their version in `_meta`).
fn server_meta(snapshot: &Snapshot, cx: &RequestContext<RoleServer>) -> Option<MetaObject> {
    cx.meta
        .protocol_version()
        .map(|_| snapshot.server_meta.clone())
}

/// One page of a `*/list` answer.
struct Page<U> {
    items: Vec<U>,
    next: Option<String>,
    meta: Option<MetaObject>,
}

/// One page of `all` (after the request's cursor), mapped to MCP items, with the next cursor and
/// the result `_meta`.
fn one_page<T, U>(
    snapshot: &Snapshot,
    cx: &RequestContext<RoleServer>,
    params: &Option<PaginatedRequestParams>,
    all: &[T],
    map: impl Fn(&T) -> U,
) -> Result<Page<U>, ErrorData> {
    let cursor = params.as_ref().and_then(|p| p.cursor.as_deref());
    let (items, next) = paginate(all, cursor, snapshot.registry.page_size()).map_err(error)?;
    Ok(Page {
        items: items.iter().map(map).collect(),
        next,
        meta: server_meta(snapshot, cx),
    })
}

/// Which `*/list_changed` notifications to send.
#[derive(Debug, Clone, Copy, Default)]
struct ListChanged {
    resources: bool,
    tools: bool,
    prompts: bool,
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

    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        *lock(&self.shared.legacy_peer) = Some(cx.peer);
    }

    async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        lock(&self.shared.subscriptions).insert(params.uri);
        let mut peer = lock(&self.shared.legacy_peer);
        if peer.is_none() {
            *peer = Some(cx.peer);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        lock(&self.shared.subscriptions).remove(&params.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Every resource URI can be subscribed to; rmcp narrows the list-changed kinds to
        // what the capabilities advertise.
        Some(requested.clone())
    }

    async fn listen(&self, cx: SubscriptionContext) -> Result<(), ErrorData> {
        let sink = cx.sink().clone();
        let id = sink.id().clone();
        lock(&self.shared.listens).push(sink);
        cx.cancelled().await;
        lock(&self.shared.listens).retain(|s| s.id() != &id);
        Ok(())
    }

    async fn set_level(
        &self,
        params: SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *lock(&self.shared.log_level) = params.level;
        Ok(())
    }

    async fn list_resources(
        &self,
        params: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let snap = self.snapshot();
        let all = snap.registry.list_resources().await.map_err(error)?;
        let page = one_page(&snap, &cx, &params, &all, resource)?;
        let mut result = ListResourcesResult::with_all_items(page.items);
        result.next_cursor = page.next;
        result.meta = page.meta;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        params: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let snap = self.snapshot();
        let all = snap.registry.templates();
        let page = one_page(&snap, &cx, &params, &all, |t| {
            let mut rt = ResourceTemplate::new(&t.uri_template, &t.name);
            rt.description = t.description.clone();
            rt.mime_type = t.mime_type.clone();
            rt
        })?;
        let mut result = ListResourceTemplatesResult::with_all_items(page.items);
        result.next_cursor = page.next;
        result.meta = page.meta;
        Ok(result)
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        transport::reserve(&cx, transport::READ_RESERVE).await;
        let snap = self.snapshot();
        let registry = &snap.registry;
        // A cancelled read stops here: dropping it kills a command template's process group
        // (rmcp sends no answer for a cancelled request).
        let found = tokio::select! {
            found = registry.read(&params.uri) => found.map_err(error)?,
            _ = cx.ct.cancelled() => {
                return Err(ErrorData::internal_error("the request was cancelled", None));
            }
        };
        let mut result = ReadResourceResult::new(found.into_iter().map(contents).collect());
        result.meta = server_meta(&snap, &cx);
        Ok(result.into())
    }

    async fn complete(
        &self,
        params: CompleteRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let snap = self.snapshot();
        if snap.info.capabilities.completions.is_none() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::CompleteRequestMethod,
            >());
        }
        let registry = &snap.registry;
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
        let mut result = answer.map(completion).map_err(error)?;
        result.meta = server_meta(&snap, &cx);
        Ok(result)
    }

    async fn list_tools(
        &self,
        params: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let snap = self.snapshot();
        if snap.info.capabilities.tools.is_none() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::ListToolsRequestMethod,
            >());
        }
        let page = one_page(&snap, &cx, &params, &snap.registry.tools(), tool)?;
        let mut result = ListToolsResult::with_all_items(page.items);
        result.next_cursor = page.next;
        result.meta = page.meta;
        Ok(result)
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let snap = self.snapshot();
        if snap.info.capabilities.tools.is_none() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::CallToolRequestMethod,
            >());
        }
        transport::reserve(&cx, transport::TOOL_RESERVE).await;
        let registry = &snap.registry;
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
                _ = self.shared.closing.cancelled() => task.abort(),
            }
        }
        let mut result = tool_result(result.map_err(error)?);
        result.meta = server_meta(&snap, &cx);
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        params: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let snap = self.snapshot();
        if snap.info.capabilities.prompts.is_none() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::ListPromptsRequestMethod,
            >());
        }
        let page = one_page(&snap, &cx, &params, &snap.registry.prompt_infos(), prompt)?;
        let mut result = ListPromptsResult::with_all_items(page.items);
        result.next_cursor = page.next;
        result.meta = page.meta;
        Ok(result)
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let snap = self.snapshot();
        if snap.info.capabilities.prompts.is_none() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::GetPromptRequestMethod,
            >());
        }
        // A prompt may embed resources.
        transport::reserve(&cx, transport::READ_RESERVE).await;
        let registry = &snap.registry;
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
        result.meta = server_meta(&snap, &cx);
        Ok(result.into())
    }
}

/// How long answers still being computed may take after stdin closes.
const EOF_GRACE: Duration = Duration::from_millis(650);

/// Serves `registry` on stdin/stdout until stdin closes (or SIGTERM), then returns within ~1 s.
pub async fn serve_stdio(registry: Registry) -> anyhow::Result<()> {
    serve(registry, std::io::stdin(), std::io::stdout()).await
}

/// Serves on any byte streams. Returns when the input ends.
pub async fn serve<R, W>(registry: Registry, input: R, output: W) -> anyhow::Result<()>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    // However serving ends, no child outlives it: every process group a tool started is killed.
    let _children = KillChildrenOnExit;
    let eof = CancellationToken::new();
    let output = Output::start(output);
    let transport = LineTransport::new(input, &output, eof.clone());
    let handler = Handler::new(registry, eof.clone());
    let running = match handler.serve(transport).await {
        Ok(r) => r,
        // The client went away before it started a session: a clean exit.
        Err(_) if eof.is_cancelled() => {
            output.finish(Duration::from_millis(200)).await;
            return Ok(());
        }
        Err(e) => return Err(anyhow::anyhow!("the MCP session did not start: {e}")),
    };
    let service_ct = running.cancellation_token();
    let watching = tokio::spawn(watch_loop(running.service().clone()));
    let mut waiting = std::pin::pin!(running.waiting());
    tokio::select! {
        _ = &mut waiting => {}
        _ = eof.cancelled() => {
            // Closing stdin may be a half-close (`echo ... | mcp-manifest` still reads the
            // answers): what is running gets a moment to finish. Then every tool's process
            // group goes, and we stop, within the 1 s a client allows.
            if tokio::time::timeout(EOF_GRACE, &mut waiting).await.is_err() {
                crate::tools::kill_all();
                if tokio::time::timeout(Duration::from_millis(100), &mut waiting).await.is_err() {
                    service_ct.cancel();
                }
            }
        }
        _ = terminate_signal() => service_ct.cancel(),
    }
    watching.abort();
    // Everything answered is written before we return (the process exits right after).
    output.finish(Duration::from_millis(200)).await;
    Ok(())
}

/// Watches the manifest and the sources' folders, and turns debounced changes into
/// `notifications/resources/updated` (for subscribed URIs) and `*/list_changed`.
async fn watch_loop(handler: Handler) {
    let (mut watcher, mut rx) = match Watcher::new(DEBOUNCE) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("file watching is off: {e}");
            return;
        }
    };
    let registry = handler.registry();
    if let Ok(dirs) = blocking(move || registry.watch_dirs_blocking()).await {
        watcher.set_dirs(dirs);
    }
    tracing::debug!("watching {} folders", watcher.watched());
    while let Some(mut batch) = rx.recv().await {
        while let Ok(more) = rx.try_recv() {
            batch.extend(more);
        }
        let before = handler.registry();
        let manifest = before.manifest_path();
        let reloaded = batch.iter().any(|c| c.path == manifest) && handler.reload(&before).await;
        let registry = handler.registry();
        let changes = Arc::new(batch);
        let (r, c) = (registry.clone(), changes.clone());
        let effect = blocking(move || r.apply_changes_blocking(&c))
            .await
            .unwrap_or_default();
        if effect.list_changed && !reloaded {
            handler
                .list_changed(ListChanged {
                    resources: true,
                    ..ListChanged::default()
                })
                .await;
        }
        let paths: Vec<&Path> = changes.iter().map(|c| c.path.as_path()).collect();
        for uri in handler.subscribed() {
            if registry.affected(&uri, &paths) {
                handler.resource_updated(&uri).await;
            }
        }
        if effect.rewatch || reloaded {
            let r = registry.clone();
            if let Ok(dirs) = blocking(move || r.watch_dirs_blocking()).await {
                watcher.set_dirs(dirs);
            }
        }
    }
}

/// What `resources/list` and `resources/templates/list` would answer, to compare two registries.
async fn listing(r: &Registry) -> (Vec<String>, Vec<crate::providers::TemplateInfo>) {
    let list = r
        .list_resources()
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|x| x.uri)
        .collect();
    (list, r.templates())
}

impl Handler {
    /// Re-reads the manifest after an edit. A valid one replaces the registry and the matching
    /// `list_changed` notifications go out; an invalid one is logged and the old one stays.
    async fn reload(&self, old: &Arc<Registry>) -> bool {
        let m = &old.manifest;
        let built = match crate::manifest::load(&m.path, &m.file) {
            Ok(checked) => Registry::build(checked).await,
            Err(d) => Err(d),
        };
        let new = match built {
            Ok(r) => Arc::new(r),
            Err(d) => {
                self.log_error(&format!(
                    "the edited manifest is invalid; still serving the previous one:\n{d}"
                ))
                .await;
                return false;
            }
        };
        let which = ListChanged {
            resources: listing(old).await != listing(&new).await,
            tools: old.tools() != new.tools(),
            prompts: format!("{:?}", old.manifest.prompts) != format!("{:?}", new.manifest.prompts),
        };
        tracing::info!("manifest reloaded: {}", m.file);
        self.replace(new);
        self.list_changed(which).await;
        true
    }
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
