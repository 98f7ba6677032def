//! Conversions between our plain types and rmcp's MCP types, and the JSON-RPC error mapping.

use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine as _;
use rmcp::model::{
    Annotations, CallToolResult, CompleteResult, CompletionInfo, ContentBlock, ErrorData,
    ProgressNotificationParam, Prompt, PromptArgument, Resource, ResourceContents, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};

use crate::manifest::Role;
use crate::prompts::PromptInfo;
use crate::providers::{Body, Completion, Contents, RequestError, ResourceInfo};
use crate::tools::{Progress, ToolContent, ToolInfo, ToolResult};

pub(super) fn error(e: RequestError) -> ErrorData {
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

pub(super) fn rfc3339(t: std::time::SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub(super) fn resource(r: &ResourceInfo) -> Resource {
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

pub(super) fn contents(c: Contents) -> ResourceContents {
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

pub(super) fn tool(t: &ToolInfo) -> Tool {
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

pub(super) fn tool_result(r: ToolResult) -> CallToolResult {
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

pub(super) fn prompt(p: &PromptInfo) -> Prompt {
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

pub(super) fn role(r: Role) -> rmcp::model::Role {
    match r {
        Role::User => rmcp::model::Role::User,
        Role::Assistant => rmcp::model::Role::Assistant,
    }
}

/// Forwards a call's progress to the client as `notifications/progress`. The task ends when the
/// call drops its sender, so awaiting it puts every notification before the response.
pub(super) fn forward_progress(
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

pub(super) fn completion(c: Completion) -> CompleteResult {
    let total = c.total.map(|t| u32::try_from(t).unwrap_or(u32::MAX));
    let info = CompletionInfo::with_pagination(c.values, total, c.has_more).unwrap_or_default();
    CompleteResult::new(info)
}
