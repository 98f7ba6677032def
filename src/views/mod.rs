//! MCP Apps views (SEP-1865, extension `io.modelcontextprotocol/ui`, spec 2026-01-26): the
//! `ui://mcp-manifest/…` resources that show a tool's rows as a table or a chart in hosts that
//! render views, and what links a tool to its view.
//!
//! One HTML document (`view.html`, built into the binary) holds the table and the charts: it
//! speaks the view side of the host ↔ view JSON-RPC over `postMessage` (`ui/initialize`,
//! `ui/notifications/initialized`, `…/tool-input`, `…/tool-result`, `…/host-context-changed`,
//! `…/size-changed`, `ui/resource-teardown`) and inserts every value as text. It is served as
//! `ui://mcp-manifest/table` as it is, and as `ui://mcp-manifest/chart/TOOL` with that tool's
//! chart settings in its `mcp-manifest-view` meta element (HTML-escaped), so a chart needs
//! nothing from the host but the tool's result. The document declares its own Content Security
//! Policy (no network at all; its one script and one style sheet allowed by hash, so a value
//! can never run), and the resource's `_meta.ui.csp` declares no outside origin.
//!
//! Invariants (kept by the tests in this file and tests/it/views.rs):
//! - the HTML loads nothing: no URL but the SVG namespace, and the CSP hashes match its script
//!   and style (`csp_hashes_match`);
//! - no `eval`, `Function`, `innerHTML` or inline event handler in it (`no_dynamic_code`);
//! - a tool's `_meta` names its view only when the view resource is served by this server.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::manifest::{Chart, ChartKind, ToolView, View};
use crate::providers::{
    BoxFut, ChangeEffect, Completion, CompletionRequest, Contents, RequestError, ResourceInfo,
    Source, TemplateInfo, ready,
};
use crate::watch::Change;

/// The extension's identifier, in `capabilities.extensions`.
pub(crate) const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an MCP Apps HTML view.
pub(crate) const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// Every view's URI starts with this.
pub(crate) const URI_PREFIX: &str = "ui://mcp-manifest/";
/// The table view, one per server.
pub(crate) const TABLE_URI: &str = "ui://mcp-manifest/table";
/// A chart view: this, then the tool's name.
const CHART_PREFIX: &str = "ui://mcp-manifest/chart/";

/// The view document (table and charts), exactly as served for `view = "table"`.
const HTML: &str = include_str!("view.html");
/// The element a chart's settings replace (present once in `HTML`).
const SETTINGS: &str = r#"<meta name="mcp-manifest-view" content="table">"#;

/// The views of one manifest: the `ui://` resources and which tool shows which.
#[derive(Debug)]
pub(crate) struct ViewsSource {
    views: Vec<ToolView>,
}

impl ViewsSource {
    /// The views of `views` (those of the tools that were built), or `None` when there are none.
    pub fn build(views: &[ToolView], has_tool: impl Fn(&str) -> bool) -> Option<ViewsSource> {
        let views: Vec<ToolView> = views
            .iter()
            .filter(|v| has_tool(&v.tool))
            .cloned()
            .collect();
        (!views.is_empty()).then_some(ViewsSource { views })
    }

    /// The view resource that shows `tool`'s results, if it has one.
    pub fn uri_for(&self, tool: &str) -> Option<String> {
        let v = self.views.iter().find(|v| v.tool == tool)?;
        Some(uri_of(v))
    }

    fn html(&self, uri: &str) -> Option<String> {
        if uri == TABLE_URI && self.views.iter().any(|v| v.view == View::Table) {
            return Some(HTML.to_owned());
        }
        let tool = uri.strip_prefix(CHART_PREFIX)?;
        let view = self.views.iter().find(|v| v.tool == tool)?;
        let View::Chart(chart) = &view.view else {
            return None;
        };
        Some(HTML.replacen(SETTINGS, &settings(chart, &view.tool), 1))
    }

    fn contents(&self, uri: &str) -> Result<Contents, RequestError> {
        match self.html(uri) {
            Some(text) => Ok(Contents {
                uri: uri.to_owned(),
                mime_type: Some(MIME_TYPE.to_owned()),
                body: crate::providers::Body::Text(text),
            }),
            None => Err(RequestError::NotFound(uri.to_owned())),
        }
    }
}

/// The element that tells the document which chart to draw: the settings as JSON, in an
/// attribute (markup in a column name stays text).
fn settings(chart: &Chart, tool: &str) -> String {
    let settings = json!({
        "chart": chart.kind.as_str(),
        "x": chart.x,
        "y": chart.y,
        "tool": tool,
    });
    format!(
        r#"<meta name="mcp-manifest-view" content="{}">"#,
        attribute(&settings.to_string())
    )
}

fn uri_of(v: &ToolView) -> String {
    match v.view {
        View::Table => TABLE_URI.to_owned(),
        View::Chart(_) => format!("{CHART_PREFIX}{}", v.tool),
    }
}

/// `s` as the value of a double-quoted HTML attribute.
fn attribute(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// A tool's `_meta` naming its view: `ui.resourceUri`, and the flat `ui/resourceUri` the spec
/// still names (deprecated) for hosts that read only that.
pub(crate) fn tool_meta(uri: &str) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("ui".into(), json!({ "resourceUri": uri }));
    meta.insert("ui/resourceUri".into(), json!(uri));
    meta
}

/// The `_meta` of a view's contents (`resources/read`), for the contents of `uri` with
/// `mime_type`; `None` for anything that is not one of these views. No outside origin of any
/// kind (the host's most restrictive policy), and a border around the view.
pub(crate) fn contents_meta(uri: &str, mime_type: Option<&str>) -> Option<Map<String, Value>> {
    if !uri.starts_with(URI_PREFIX) || mime_type != Some(MIME_TYPE) {
        return None;
    }
    let mut meta = Map::new();
    meta.insert(
        "ui".into(),
        json!({
            "csp": {
                "connectDomains": [],
                "resourceDomains": [],
                "frameDomains": [],
                "baseUriDomains": []
            },
            "prefersBorder": true
        }),
    );
    Some(meta)
}

/// The server's `capabilities.extensions` entry for this extension.
pub(crate) fn capability() -> Map<String, Value> {
    let mut settings = Map::new();
    settings.insert("mimeTypes".into(), json!([MIME_TYPE]));
    settings
}

impl Source for ViewsSource {
    fn owns(&self, uri: &str) -> bool {
        uri.starts_with(URI_PREFIX)
    }

    fn list(self: Arc<Self>) -> BoxFut<Result<Vec<ResourceInfo>, RequestError>> {
        let mut out = Vec::new();
        if self.views.iter().any(|v| v.view == View::Table) {
            let mut r = ResourceInfo::new(TABLE_URI, "table");
            r.title = Some("Table view".into());
            r.description = Some(
                "Shows a tool's rows as a table you can sort by a column and filter by text (an MCP Apps view)."
                    .into(),
            );
            r.mime_type = Some(MIME_TYPE.into());
            r.size = Some(HTML.len() as u64);
            out.push(r);
        }
        for v in &self.views {
            let View::Chart(chart) = &v.view else {
                continue;
            };
            let mut r = ResourceInfo::new(uri_of(v), format!("chart/{}", v.tool));
            let kind = match chart.kind {
                ChartKind::Line => "Line",
                ChartKind::Bar => "Bar",
            };
            r.title = Some(format!("{kind} chart of {}", v.tool));
            r.description = Some(format!(
                "Shows the rows of tool `{}` as a {} chart of {} by {} (an MCP Apps view); a table when a column is missing or not numeric.",
                v.tool,
                chart.kind.as_str(),
                chart.y.join(", "),
                chart.x
            ));
            r.mime_type = Some(MIME_TYPE.into());
            r.size = self.html(&r.uri).map(|h| h.len() as u64);
            out.push(r);
        }
        ready(Ok(out))
    }

    fn templates(&self) -> Vec<TemplateInfo> {
        Vec::new()
    }

    fn read(self: Arc<Self>, uri: String) -> BoxFut<Result<Contents, RequestError>> {
        ready(self.contents(&uri))
    }

    fn serves(self: Arc<Self>, uri: String) -> BoxFut<bool> {
        ready(self.html(&uri).is_some())
    }

    fn complete(
        self: Arc<Self>,
        _req: CompletionRequest,
    ) -> BoxFut<Result<Completion, RequestError>> {
        ready(Ok(Completion::default()))
    }

    fn watch_dirs(self: Arc<Self>) -> BoxFut<Vec<std::path::PathBuf>> {
        ready(Vec::new())
    }

    fn apply_changes(self: Arc<Self>, _changes: Arc<[Change]>) -> BoxFut<ChangeEffect> {
        ready(ChangeEffect::default())
    }

    fn affected(&self, _uri: &str, _changes: &[Change]) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
