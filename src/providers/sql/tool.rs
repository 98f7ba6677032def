//! The SQL tool (`sql_tool = true`): `NAME_sql`, one argument `sql` holding one statement that
//! reads, run by the engine read-only (`Engine::run_adhoc`) with the source's `row_limit`,
//! `max_size` and `timeout`; the rows as for a table, as text and as `structuredContent`.
//!
//! The text checks here (one statement, a reading first keyword, no parameters, no MySQL `INTO`)
//! only word the common refusals early: what keeps the database unchanged is the engine (a
//! read-only connection, a read-only transaction that is rolled back).

use serde_json::{Map, Value, json};

use super::text::{self, Dialect};
use crate::manifest::expand::{format_duration, format_size};
use crate::manifest::sql::DatabaseDef;
use crate::providers::tool::{Hints, ToolContent, ToolInfo, ToolResult};

/// The tool of one source.
#[derive(Debug)]
pub(crate) struct SqlTool {
    info: ToolInfo,
    dialect: Dialect,
}

impl SqlTool {
    /// The tool `name` of the source `def`, whose engine is `engine` (`MySQL/MariaDB`) and
    /// reads SQL by `dialect`'s rules.
    pub(crate) fn new(name: &str, dialect: Dialect, engine: &str, def: &DatabaseDef) -> SqlTool {
        let description = format!(
            "Runs one SQL statement that reads ({}) on {} ({engine}) and answers its rows as JSON: at most {} rows and {}, `truncated` when more were left out; stopped after {}. The statement runs read-only: writes, DDL and anything else that would change the database are refused. Its schema is the resource {}schema.{}",
            dialect.read_keywords().join(", "),
            def.entry(),
            def.row_limit.max(1),
            format_size(def.max_size),
            format_duration(def.timeout),
            def.prefix(),
            def.description
                .as_ref()
                .map(|d| format!("\n\n{d}"))
                .unwrap_or_default(),
        );
        let input = json!({
            "type": "object",
            "properties": {
                "sql": {
                    "type": "string",
                    "description": format!("One {engine} statement that reads; values are written in it (no parameters)")
                }
            },
            "required": ["sql"],
            "additionalProperties": false
        });
        let input_schema = match input {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        SqlTool {
            info: ToolInfo {
                name: name.to_owned(),
                title: None,
                description: Some(description),
                input_schema,
                output_schema: Some(super::rows::schema()),
                hints: Hints::READ_ONLY,
                view: None,
            },
            dialect,
        }
    }

    pub(crate) fn info(&self) -> &ToolInfo {
        &self.info
    }

    /// The statement to run, or why the arguments are refused.
    pub(crate) fn statement(&self, args: &Map<String, Value>) -> Result<String, String> {
        if let Some(other) = args.keys().find(|k| *k != "sql") {
            return Err(format!(
                "unknown argument {}: `{}` takes only `sql`",
                crate::quote::quote(other, crate::quote::Quote::Code),
                self.info.name
            ));
        }
        let sql = match args.get("sql") {
            Some(Value::String(s)) => s,
            Some(_) => return Err("`sql` must be a string".into()),
            None => return Err("`sql` is required: one statement that reads".into()),
        };
        text::check_adhoc(self.dialect, sql).map_err(|problems| {
            let mut lines: Vec<String> = problems
                .iter()
                .map(|p| text::adhoc_message(self.dialect, p))
                .collect();
            lines.dedup();
            format!("refused: {}", lines.join("; "))
        })
    }

    /// A run's rows as the tool's result: the JSON text, and the same as `structuredContent`.
    pub(crate) fn result(json: String) -> ToolResult {
        let structured = serde_json::from_str::<Value>(&json).ok();
        ToolResult {
            content: vec![ToolContent::Text(json)],
            structured,
            is_error: false,
        }
    }
}
