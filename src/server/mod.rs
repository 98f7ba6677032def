//! The MCP layer: the ONLY module that imports rmcp. `Handler` implements rmcp's `ServerHandler`
//! for one session over the state all sessions share, converts our plain types to MCP types
//! (`convert.rs`), and `serve` runs it on byte streams (`transport.rs`).
//!
//! rmcp runs both protocol eras: `initialize` (2024-11-05 … 2025-11-25) and the stateless
//! 2026-07-28 (`server/discover`, per-request `_meta`, `resultType`, cache hints, not-found as
//! -32602). Every request runs in its own task, so a slow read never delays a `ping`.

// Handshake-era logging (`logging/setLevel`, `notifications/message`) and `resources/subscribe`
// are deprecated by the 2026-07-28 revision but are what handshake-era clients speak.
#![allow(deprecated)]

mod auth;
mod convert;
mod http;
mod reload;
mod shared;
mod transport;

pub(crate) use http::serve_http;
pub(crate) use shared::tools_per_endpoint;

use std::collections::HashMap;
use std::future::Future;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientNotification, ClientRequest,
    CompleteRequestParams, CompleteResult, ContentBlock, CustomRequest, CustomResult, ErrorData,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, MetaObject,
    PaginatedRequestParams, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Reference, ResourceTemplate, ServerConfig, ServerResult,
    SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;

use crate::providers::RequestError;
use crate::quote::{Quote, quote};
use crate::registry::{PromptContent, Registry, paginate};
use crate::scopeguard;
use crate::tools::CallContext;
use convert::{completion, contents, error, forward_progress, prompt, resource, role, tool_result};
use shared::{Session, Shared, Snapshot};
use transport::{LineTransport, Output, Watch};

/// The `ServerHandler` of one session: the state every session shares (the manifest snapshot,
/// swapped on an edit; the watcher) and this session's own.
#[derive(Clone)]
pub(crate) struct Handler {
    shared: Arc<Shared>,
    session: Arc<Session>,
    /// The `[groups.NAME]` this session was opened on (`serve --group`, `<path>/NAME`); none:
    /// the default endpoint (`[server] expose`).
    group: Option<Arc<str>>,
}

impl Handler {
    /// What this session's endpoint shows (`None`: everything), in the current snapshot.
    fn seen(&self, snap: &Snapshot) -> Option<Arc<crate::manifest::Filter>> {
        snap.seen(self.group.as_deref())
    }
}

/// How long a client may treat a skills answer as current (`ttlMs`): a minute; the server
/// announces changes with `list_changed` anyway.
const SKILLS_TTL_MS: u64 = 60_000;

/// A skill entry as rmcp's SEP-2640 types shape it.
fn skill(s: crate::providers::skills::Skill) -> rmcp::model::Skill {
    let mut extra = s.frontmatter;
    let text = |v: Option<serde_json::Value>| match v {
        Some(serde_json::Value::String(t)) => t,
        _ => String::new(),
    };
    let name = text(extra.remove("name"));
    let description = text(extra.remove("description"));
    let mut frontmatter = rmcp::model::SkillFrontmatter::new(name, description);
    frontmatter.extra = extra;
    rmcp::model::Skill::new(
        s.uri,
        frontmatter,
        rmcp::model::SkillResources::Files(
            s.files
                .into_iter()
                .map(|f| rmcp::model::SkillResource::new(f.uri, f.digest, f.size))
                .collect(),
        ),
    )
}

/// Whether `seen` (`None`: everything) shows the resource or resource template `uri`.
/// A view document (`ui://mcp-manifest/…`) goes with the tools that show it: the table view with
/// every endpoint, a chart with its tool.
fn sees_resource(seen: &Option<Arc<crate::manifest::Filter>>, uri: &str) -> bool {
    let Some(f) = seen else { return true };
    match uri.strip_prefix(crate::views::URI_PREFIX) {
        Some("table") => true,
        Some(view) => view.strip_prefix("chart/").is_some_and(|tool| f.tool(tool)),
        None => f.resource(uri),
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

/// What rmcp runs: the session's `Handler` behind a gate. rmcp acknowledges a
/// `subscriptions/listen` before the handler sees it, so the gate makes the request wait until
/// the watcher watches what the manifest needs, and refuses a URI no source serves, before that
/// acknowledgment. It also logs one line per request (method, what it named, duration, outcome;
/// never contents) at `info`.
#[derive(Clone)]
struct Gate(Handler);

/// What a `subscriptions/listen` needs before rmcp acknowledges it (on stdio in `Gate`, over
/// HTTP in front of rmcp): the watcher watches what the manifest needs, and every URI it names is
/// one a source serves.
async fn admit_listen(
    shared: &Shared,
    group: Option<&str>,
    uris: &[String],
) -> Result<(), ErrorData> {
    shared.watching().await;
    let snap = shared.snapshot();
    let seen = snap.seen(group);
    let registry = &snap.registry;
    for uri in uris {
        if !sees_resource(&seen, uri) {
            let mut e = error(crate::registry::not_found(uri));
            e.code = rmcp::model::ErrorCode::INVALID_PARAMS;
            return Err(e);
        }
        // `subscriptions/listen` exists only in 2026-07-28, where not found is -32602 (rmcp
        // turns -32002 into it only for what a `ServerHandler` answers).
        registry.check_serves(uri).await.map_err(|e| {
            let mut e = error(e);
            e.code = rmcp::model::ErrorCode::INVALID_PARAMS;
            e
        })?;
    }
    Ok(())
}

impl rmcp::Service<RoleServer> for Gate {
    async fn handle_request(
        &self,
        request: ClientRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        if let ClientRequest::SubscriptionsListenRequest(listen) = &request {
            let uris = listen
                .params
                .notifications
                .resource_subscriptions
                .as_deref();
            admit_listen(
                &self.0.shared,
                self.0.group.as_deref(),
                uris.unwrap_or_default(),
            )
            .await?;
        }
        // The method and what the client named, cut like a message quotes them: a log line is
        // not a copy of a 14 MB URI.
        let method = quote(request.method(), Quote::Plain);
        let subject = match &request {
            ClientRequest::ReadResourceRequest(r) => quote(&r.params.uri, Quote::Plain),
            ClientRequest::SubscribeRequest(r) => quote(&r.params.uri, Quote::Plain),
            ClientRequest::CallToolRequest(r) => quote(&r.params.name, Quote::Plain),
            ClientRequest::GetPromptRequest(r) => quote(&r.params.name, Quote::Plain),
            _ => String::new(),
        };
        let start = std::time::Instant::now();
        let result = self.0.handle_request(request, cx).await;
        let outcome = match &result {
            Ok(ServerResult::CallToolResult(r)) if r.is_error == Some(true) => "tool error".into(),
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("error {}", e.code.0),
        };
        tracing::info!(
            "{method} {subject} {:.1} ms {outcome}",
            start.elapsed().as_secs_f64() * 1000.0
        );
        result
    }

    fn handle_notification(
        &self,
        notification: ClientNotification,
        cx: NotificationContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        self.0.handle_notification(notification, cx)
    }

    fn get_info(&self) -> ServerConfig {
        rmcp::Service::<RoleServer>::get_info(&self.0)
    }

    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        rmcp::Service::<RoleServer>::supported_protocol_versions(&self.0)
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        self.shared.snapshot().info.clone()
    }

    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        self.session.set_peer(cx.peer);
    }

    /// An unknown method: rmcp's answer would be the method's name as the whole message, which
    /// the client chose (16 MiB of it, if it likes); quoted cut here.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // A skills method whose params rmcp could not take (no `uri`, a `cursor` that is not a
        // string) arrives here: its params are wrong, the method is not unknown.
        if self.shared.snapshot().registry.has_skills()
            && matches!(request.method.as_str(), "skills/list" | "skills/get")
        {
            return Err(ErrorData::invalid_params(
                match request.method.as_str() {
                    "skills/get" => "skills/get takes `uri`: the URI of a skill's SKILL.md",
                    _ => "skills/list takes an optional string `cursor`",
                },
                None,
            ));
        }
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {}", quote(&request.method, Quote::Code)),
            None,
        ))
    }

    async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Answered only once the watch that sees this URI's changes is in place, and only for
        // a URI the server would read.
        self.shared.watching().await;
        let snap = self.shared.snapshot();
        if !sees_resource(&self.seen(&snap), &params.uri) {
            return Err(error(crate::registry::not_found(&params.uri)));
        }
        snap.registry
            .check_serves(&params.uri)
            .await
            .map_err(error)?;
        self.session.subscribe(params.uri);
        self.session.set_peer_if_none(cx.peer);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.unsubscribe(&params.uri);
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
        // `Gate` checked the URIs and waited for the watcher before rmcp acknowledged.
        let sink = cx.sink().clone();
        let id = sink.id().clone();
        self.session.add_listen(sink);
        let ticket = self.shared.listen_started();
        // The stream ends when the client cancels it or goes away, or when the server stops or
        // a newer stream needs its room (then with its result).
        tokio::select! {
            _ = cx.cancelled() => {}
            _ = self.shared.stopping.cancelled() => {}
            _ = ticket.ended.cancelled() => {}
        }
        drop(ticket);
        self.session.remove_listen(&id);
        Ok(())
    }

    async fn set_level(
        &self,
        params: SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.set_log_level(params.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        params: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        reserve(&cx, transport::LIST_RESERVE).await;
        let snap = self.shared.snapshot();
        let cursor = params.as_ref().and_then(|p| p.cursor.as_deref());
        let (items, next) = snap
            .registry
            .list_resources_page(cursor)
            .await
            .map_err(error)?;
        let seen = self.seen(&snap);
        let mut result = ListResourcesResult::with_all_items(
            items
                .into_iter()
                .filter(|r| sees_resource(&seen, &r.uri))
                .map(resource)
                .collect(),
        );
        result.next_cursor = next;
        result.meta = server_meta(&snap, &cx);
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        params: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        reserve(&cx, transport::LIST_RESERVE).await;
        let snap = self.shared.snapshot();
        let seen = self.seen(&snap);
        let mut all = snap.registry.templates();
        all.retain(|t| sees_resource(&seen, &t.uri_template));
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
        reserve(&cx, transport::READ_RESERVE).await;
        let snap = self.shared.snapshot();
        if !sees_resource(&self.seen(&snap), &params.uri) {
            return Err(error(crate::registry::not_found(&params.uri)));
        }
        let registry = &snap.registry;
        // A cancelled read stops here: dropping it kills a command template's process group
        // (rmcp sends no answer for a cancelled request).
        let found = tokio::select! {
            found = http::unless_session_ends(&cx, admitted(&cx, transport::READ_RESERVE, registry.read(&params.uri))) => found?.map_err(error)?,
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
        let snap = self.shared.snapshot();
        if snap.info.capabilities.completions.is_none() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::CompleteRequestMethod,
            >());
        }
        let registry = &snap.registry;
        let context: HashMap<String, String> =
            params.context.and_then(|c| c.arguments).unwrap_or_default();
        let arg = &params.argument;
        let seen = self.seen(&snap);
        let answer = match &params.r#ref {
            Reference::Resource(r) if !sees_resource(&seen, &r.uri) => {
                Err(crate::registry::not_found(&r.uri))
            }
            Reference::Prompt(p) if seen.as_ref().is_some_and(|f| !f.prompt(&p.name)) => {
                Err(RequestError::InvalidParams(format!(
                    "unknown prompt {}",
                    quote(&p.name, Quote::Code)
                )))
            }
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
        reserve(&cx, transport::LIST_RESERVE).await;
        let snap = self.shared.snapshot();
        if snap.info.capabilities.tools.is_none() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::ListToolsRequestMethod,
            >());
        }
        let page = match self.seen(&snap) {
            None => one_page(&snap, &cx, &params, snap.tools(), Clone::clone)?,
            Some(seen) => {
                let shown: Vec<_> = snap
                    .tools()
                    .iter()
                    .filter(|t| seen.tool(&t.name))
                    .cloned()
                    .collect();
                one_page(&snap, &cx, &params, &shown, Clone::clone)?
            }
        };
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
        let snap = self.shared.snapshot();
        if snap.info.capabilities.tools.is_none() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::CallToolRequestMethod,
            >());
        }
        // Room in the stdio session's budget before the tool runs (a session's calls are bounded
        // by it). Over HTTP a call takes its answer's room only once the answer is made
        // (`http::answers`): a tool that runs for minutes holds nothing meanwhile, so slow calls
        // never keep other clients' reads waiting (42 sleeping calls held the whole budget).
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
            seen: self.seen(&snap),
        };
        // A call of an HTTP session that ends is dropped, which kills its processes.
        let call = admitted(
            &cx,
            transport::TOOL_RESERVE,
            registry.call_tool(&params.name, args, call),
        );
        let result = http::unless_session_ends(&cx, call).await?;
        if let Some(mut task) = forward {
            // Once stdin has closed, rmcp sends no more notifications and a pending one would
            // wait forever: give up on it rather than on the answer.
            tokio::select! {
                _ = &mut task => {}
                _ = self.session.closing.cancelled() => task.abort(),
            }
        }
        let mut result = tool_result(result.map_err(error)?);
        result.meta = server_meta(&snap, &cx);
        Ok(result.into())
    }

    async fn list_skills(
        &self,
        params: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, ErrorData> {
        reserve(&cx, transport::LIST_RESERVE).await;
        let snap = self.shared.snapshot();
        let seen = self.seen(&snap);
        let mut all = snap.registry.skills().await;
        all.retain(|s| sees_resource(&seen, &s.uri));
        let page = one_page(&snap, &cx, &params, &all, |s| skill(s.clone()))?;
        let mut result = rmcp::model::ListSkillsResult::with_all_items(page.items);
        result.next_cursor = page.next;
        result.meta = page.meta;
        result.ttl_ms = Some(SKILLS_TTL_MS);
        result.cache_scope = Some(rmcp::model::CacheScope::Public);
        Ok(result)
    }

    async fn get_skill(
        &self,
        params: rmcp::model::GetSkillRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, ErrorData> {
        let snap = self.shared.snapshot();
        let unknown = || {
            ErrorData::invalid_params(
                format!("No skill is served at {}", quote(&params.uri, Quote::Code)),
                None,
            )
        };
        if !sees_resource(&self.seen(&snap), &params.uri) {
            return Err(unknown());
        }
        let found = snap
            .registry
            .skill(&params.uri)
            .await
            .map_err(|_| unknown())?;
        let mut result = rmcp::model::GetSkillResult::new(skill(found))
            .with_ttl_ms(SKILLS_TTL_MS)
            .with_cache_scope(rmcp::model::CacheScope::Public);
        result.meta = server_meta(&snap, &cx);
        Ok(result)
    }

    async fn list_prompts(
        &self,
        params: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        reserve(&cx, transport::LIST_RESERVE).await;
        let snap = self.shared.snapshot();
        if snap.info.capabilities.prompts.is_none() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::ListPromptsRequestMethod,
            >());
        }
        let mut all = snap.registry.prompt_infos();
        if let Some(seen) = self.seen(&snap) {
            all.retain(|p| seen.prompt(&p.name));
        }
        let page = one_page(&snap, &cx, &params, &all, prompt)?;
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
        let snap = self.shared.snapshot();
        if snap.info.capabilities.prompts.is_none() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::GetPromptRequestMethod,
            >());
        }
        if self.seen(&snap).is_some_and(|f| !f.prompt(&params.name)) {
            return Err(error(RequestError::InvalidParams(format!(
                "unknown prompt {}",
                quote(&params.name, Quote::Code)
            ))));
        }
        // A prompt may embed resources.
        reserve(&cx, transport::READ_RESERVE).await;
        let registry = &snap.registry;
        let args = params.arguments.unwrap_or_default();
        let render = admitted(
            &cx,
            transport::READ_RESERVE,
            registry.get_prompt(&params.name, &args),
        );
        let rendered = http::unless_session_ends(&cx, render)
            .await?
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

/// Reserves room for the answer of `cx`'s request before making it: in its stdio session's
/// budget, or in the budget of HTTP answers (`http::answers`); waits while it is spent.
async fn reserve(cx: &RequestContext<RoleServer>, bytes: usize) {
    transport::reserve(cx, bytes).await;
    http::reserve(cx, bytes).await;
}

/// Runs `fut` (the work of the request of `cx`, which reserved `held` bytes) with `reserve`
/// asked before a source makes a large answer (`providers::admit`): a large file is read only
/// once the budget has room for it. The request asks only for what it does not hold yet, and
/// never for more than the whole stdio budget (a reservation that big waits until every other
/// answer is written, and one that waited on the request's own bytes would wait forever).
async fn admitted<F: std::future::Future>(
    cx: &RequestContext<RoleServer>,
    held: usize,
    fut: F,
) -> F::Output {
    let cx = cx.clone();
    let held = Arc::new(std::sync::atomic::AtomicUsize::new(held));
    let admitter: crate::providers::admit::Admitter = Arc::new(move |bytes| {
        let (cx, held) = (cx.clone(), held.clone());
        Box::pin(async move {
            use std::sync::atomic::Ordering;
            let had = held.load(Ordering::Acquire);
            let want = had.saturating_add(bytes).min(transport::BUDGET).max(had);
            held.store(want, Ordering::Release);
            if want > had {
                // On stdio the request gives back what it holds while it waits for the whole
                // (no request holds room while it waits for more); over HTTP, where the
                // budget lets a request that holds room take more, it adds.
                transport::reserve_total(&cx, want).await;
                http::reserve(&cx, want - had).await;
            }
        })
    });
    crate::providers::admit::with(admitter, fut).await
}

/// Serves `registry` on stdin/stdout until stdin closes (or SIGTERM), then returns within ~1 s.
pub(crate) async fn serve_stdio(registry: Registry, group: Option<&str>) -> anyhow::Result<()> {
    serve_on(
        registry,
        group,
        (std::io::stdin(), Watch::stdin()),
        std::io::stdout(),
        transport::terminated(),
    )
    .await
}

/// Serves one session on any byte streams until the input ends or `shutdown` completes; then
/// every process a tool started is killed and everything answered is written.
pub(crate) async fn serve<R, W>(
    registry: Registry,
    group: Option<&str>,
    input: R,
    output: W,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    serve_on(registry, group, (input, None), output, shutdown).await
}

/// `serve`, with a watch of the input when there is one (`transport::Watch`).
async fn serve_on<R, W>(
    registry: Registry,
    group: Option<&str>,
    (input, watch): (R, Option<Watch>),
    output: W,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let children = registry.children.clone();
    // However serving ends, no child outlives it: every process group a tool started is killed.
    let _children = scopeguard(move || children.kill_all());
    let eof = CancellationToken::new();
    let output = Output::start(output);
    if let Some(g) = group
        && let Err(why) = registry.manifest.group_or_why(g)
    {
        anyhow::bail!("{why}");
    }
    let group: Option<Arc<str>> = group.map(Arc::from);
    let shared = Shared::new(registry);
    output.direct(
        transport::hook(shared.clone(), group.clone()),
        tokio::runtime::Handle::current(),
    );
    let transport = LineTransport::new(input, watch, &output, eof.clone());
    let handler = Gate(Handler {
        session: shared.open_session(eof.clone(), group.clone()),
        shared: shared.clone(),
        group,
    });
    let watching = tokio::spawn(shared.clone().watch_loop());
    let _stop_watching = scopeguard(move || watching.abort());
    let polling = tokio::spawn(shared.clone().poll_loop());
    let _stop_polling = scopeguard(move || polling.abort());
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
    let mut waiting = std::pin::pin!(running.waiting());
    tokio::select! {
        _ = &mut waiting => {}
        _ = eof.cancelled() => {
            // Closing stdin may be a half-close (`echo ... | mcp-manifest` still reads the
            // answers): what is running gets a moment to finish. Then every tool's process
            // group goes, and we stop, within the 1 s a client allows.
            if tokio::time::timeout(EOF_GRACE, &mut waiting).await.is_err() {
                shared.registry().children.kill_all();
                if tokio::time::timeout(Duration::from_millis(100), &mut waiting).await.is_err() {
                    service_ct.cancel();
                }
            }
        }
        _ = shutdown => service_ct.cancel(),
    }
    // Queries still running on database servers are stopped, connections closed.
    let _ = tokio::time::timeout(Duration::from_secs(2), shared.registry().close()).await;
    // Everything answered is written before we return (the process exits right after).
    output.finish(Duration::from_millis(200)).await;
    Ok(())
}
