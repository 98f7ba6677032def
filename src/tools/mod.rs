//! Tools: the plain types a tool call answers with (no MCP types here) and the manifest's
//! shell-backed tools (`command.rs`: `ShellTool`, one `[tools.NAME]`: build-time checks,
//! listing, calling through `crate::process`, arguments checked by `crate::params`).

pub(crate) mod command;
pub(crate) mod output_schema;
pub(crate) mod search;
pub(crate) mod templates;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::providers::Contents;

pub(crate) use crate::process::Progress;
pub(crate) use command::ShellTool;
pub(crate) use search::SearchTool;

/// What a call may be stopped by and where its progress goes.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// Cancelled when the client cancels the request (or the server stops): the process group
    /// is killed.
    pub cancel: CancellationToken,
    /// Progress reports while a process runs; none when the client did not ask for progress.
    pub progress: Option<UnboundedSender<Progress>>,
    /// What the caller's endpoint shows (`[groups]`, `[server] expose`); none: everything. The
    /// tools that reach resources generically (`list_resources`, `read_resource`,
    /// `search_files`) keep to its resources.
    pub seen: Option<std::sync::Arc<crate::manifest::Filter>>,
}

impl CallContext {
    pub fn new(cancel: CancellationToken) -> CallContext {
        CallContext {
            cancel,
            progress: None,
            seen: None,
        }
    }

    /// Whether the caller sees the resource `uri`.
    pub fn sees_resource(&self, uri: &str) -> bool {
        self.seen.as_ref().is_none_or(|f| f.resource(uri))
    }
}

/// A tool as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// JSON Schema object for the arguments (`type: object` at the root).
    pub input_schema: serde_json::Map<String, Value>,
    pub output_schema: Option<serde_json::Map<String, Value>>,
    pub hints: Hints,
    /// The `ui://` resource of the MCP Apps view that shows this tool's results (`view = …`).
    pub view: Option<String>,
}

/// Tool annotations, always sent explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// One block of a tool result.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolContent {
    Text(String),
    /// An embedded resource (text or blob).
    Resource(Contents),
}

/// The outcome of a call: failures the model should see are `is_error` results, not errors.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    pub content: Vec<ToolContent>,
    pub structured: Option<Value>,
    pub is_error: bool,
}

impl ToolResult {
    pub fn text(text: impl Into<String>) -> ToolResult {
        ToolResult {
            content: vec![ToolContent::Text(text.into())],
            structured: None,
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> ToolResult {
        ToolResult {
            content: vec![ToolContent::Text(text.into())],
            structured: None,
            is_error: true,
        }
    }
}
