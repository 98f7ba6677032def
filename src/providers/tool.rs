//! The plain types of a tool (no MCP types here): how it is listed and what a call answers.
//! Here, below `tools`, because sources offer tools too (a database's SQL tool).

use serde_json::Value;

use super::Contents;

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

impl Hints {
    /// What every tool that only reads what the manifest declares says: read-only, not
    /// destructive, idempotent, a closed world.
    pub const READ_ONLY: Hints = Hints {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
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
