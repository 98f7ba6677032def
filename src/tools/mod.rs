//! Tools: the plain types a tool call answers with (no MCP types here).

use serde_json::Value;

use crate::providers::Contents;

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
