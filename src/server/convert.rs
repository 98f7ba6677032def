//! Conversions between our plain types and rmcp's MCP types, and the JSON-RPC error mapping.

use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine as _;
use rmcp::model::{
    Annotations, CallToolResult, CompleteResult, CompletionInfo, ContentBlock, ErrorData,
    MetaObject, ProgressNotificationParam, Prompt, PromptArgument, Resource, ResourceContents,
    Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};

use crate::manifest::Role;
use crate::prompts::PromptInfo;
use crate::providers::{Body, Completion, Contents, RequestError, ResourceInfo};
use crate::quote::{Quote, quote};
use crate::tools::{Progress, ToolContent, ToolInfo, ToolResult};

pub(super) fn error(e: RequestError) -> ErrorData {
    match e {
        // The message quotes the URI cut, as `RequestError`'s `Display` does; `data` holds it
        // whole, as the spec's example does: at most `MAX_URI_BYTES`, since a longer one is
        // refused before any source looks for it.
        RequestError::NotFound(uri) => ErrorData::resource_not_found(
            format!("resource not found: {}", quote(&uri, Quote::Plain)),
            Some(serde_json::json!({ "uri": uri })),
        ),
        RequestError::InvalidParams(m) | RequestError::Refused(m) => {
            ErrorData::invalid_params(m, None)
        }
        RequestError::Internal(m) => ErrorData::internal_error(m, None),
    }
}

/// `t` in RFC 3339, UTC, whole seconds (`2026-12-01T10:09:25Z`): what chrono's
/// `to_rfc3339_opts(Secs, true)` writes, without its formatting machinery for the years 0–9999
/// after 1970 (every listed file's time, a thousand a page).
pub(super) fn rfc3339(t: std::time::SystemTime) -> String {
    let Some(secs) = t
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
        .filter(|s| *s < 253_402_300_800)
    else {
        return chrono::DateTime::<chrono::Utc>::from(t)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    };
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    let mut out = String::with_capacity(20);
    for (n, width, after) in [
        (year, 4, '-'),
        (month, 2, '-'),
        (day, 2, 'T'),
        (rest / 3600, 2, ':'),
        (rest / 60 % 60, 2, ':'),
        (rest % 60, 2, 'Z'),
    ] {
        let mut digits = [b'0'; 4];
        let mut n = n;
        for d in digits[..width].iter_mut().rev() {
            *d = b'0' + (n % 10) as u8;
            n /= 10;
        }
        out.extend(digits[..width].iter().map(|&b| char::from(b)));
        out.push(after);
    }
    out
}

/// The proleptic Gregorian (year, month, day) of a count of days since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, for days ≥ 0).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// One listed resource, its strings moved (a page holds a thousand).
pub(super) fn resource(r: ResourceInfo) -> Resource {
    let mut raw = Resource::new(r.uri, r.name);
    raw.title = r.title;
    raw.description = r.description;
    raw.mime_type = r.mime_type;
    raw.size = r.size;
    if let Some(t) = r.last_modified {
        let mut a = Annotations::default();
        a.last_modified = Some(rfc3339(t));
        raw = raw.with_annotations(a);
    }
    raw
}

pub(super) fn contents(c: Contents) -> ResourceContents {
    // An MCP Apps view carries its security settings (`_meta.ui`) with its contents.
    let meta = crate::views::contents_meta(&c.uri, c.mime_type.as_deref()).map(MetaObject);
    let rc = match c.body {
        Body::Text(t) => ResourceContents::text(t, c.uri),
        Body::Bytes(b) => {
            ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(b), c.uri)
        }
    };
    let rc = match c.mime_type {
        Some(m) => rc.with_mime_type(m),
        None => rc,
    };
    match meta {
        Some(m) => rc.with_meta(m),
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
    if let Some(uri) = &t.view {
        tool.meta = Some(rmcp::model::MetaObject(crate::views::tool_meta(uri)));
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use proptest::prelude::*;

    use super::rfc3339;

    fn chrono_rfc3339(t: SystemTime) -> String {
        chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }

    #[test]
    fn rfc3339_is_what_chrono_writes_at_the_edges() {
        for secs in [
            0,
            59,
            86_399,
            86_400,
            951_782_400,   // 2000-02-29
            951_868_800,   // 2000-03-01
            4_107_542_400, // 2100-03-01 (2100 is no leap year)
            1_798_761_599,
            253_402_300_799, // 9999-12-31T23:59:59
            253_402_300_800, // year 10000: chrono's own form
        ] {
            let t = UNIX_EPOCH + Duration::new(secs, 999_999_999);
            assert_eq!(rfc3339(t), chrono_rfc3339(t), "{secs}");
        }
        let before = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(rfc3339(before), "1969-12-31T23:59:59Z");
    }

    proptest! {
        #[test]
        fn rfc3339_is_what_chrono_writes(secs in 0u64..253_402_300_800, nanos in 0u32..1_000_000_000) {
            let t = UNIX_EPOCH + Duration::new(secs, nanos);
            prop_assert_eq!(rfc3339(t), chrono_rfc3339(t));
        }
    }
}
