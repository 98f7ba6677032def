//! Template tools (`[server] template_tools`): every resource template a source declares
//! (`Source::template_specs`, `providers::spec`) as a typed tool of its own, for clients that only call tools.
//!
//! A tool never reads anything itself: its arguments are checked against the template's
//! declared rules (`crate::params`, the same ones a read applies), expanded into the URI with
//! the template (`crate::uri`), and the registry reads that URI exactly as `resources/read`
//! would. So access checks, caps, timeouts and cancellation are the read's own.

use serde_json::{Map, Value};

use crate::providers::spec::TemplateSpec;
use crate::providers::{Body, Contents, RequestError};
use crate::quote::{Quote, quote};
use crate::tools::{Hints, ToolContent, ToolInfo, ToolResult};
use crate::uri::{VarValue, Vars};

/// A resource template served as a tool.
#[derive(Debug, Clone)]
pub(crate) struct TemplateTool {
    spec: TemplateSpec,
    info: ToolInfo,
}

impl TemplateTool {
    /// The tool of `spec`, if it has one.
    pub fn new(spec: TemplateSpec) -> Option<TemplateTool> {
        let name = spec.tool.clone()?;
        let reads = format!("Reads `{}`.", spec.uri.as_str());
        let description = match &spec.description {
            Some(d) if !d.trim().is_empty() => format!("{}\n\n{reads}", d.trim_end()),
            _ => reads,
        };
        let info = ToolInfo {
            name,
            title: None,
            description: Some(description),
            input_schema: spec.args.input_schema(),
            output_schema: spec.rows.then(crate::providers::sql::rows::schema),
            hints: Hints {
                open_world: spec.open_world,
                ..Hints::READ_ONLY
            },
            view: None,
        };
        Some(TemplateTool { spec, info })
    }

    pub fn name(&self) -> &str {
        &self.info.name
    }

    pub fn info(&self) -> &ToolInfo {
        &self.info
    }

    pub fn spec(&self) -> &TemplateSpec {
        &self.spec
    }

    /// The URI the arguments expand to, or why they do not fit (one line each).
    pub fn uri(&self, args: &Map<String, Value>) -> Result<String, Vec<String>> {
        let values = self.spec.args.bind_json(args)?;
        let mut vars = Vars::new();
        // In the template's order, so the URI reads as the template does.
        for name in self.spec.uri.variables() {
            if let Some(v) = values.get(name) {
                let value = match v {
                    crate::params::Typed::Null => continue,
                    crate::params::Typed::List(items) => VarValue::List(items.clone()),
                    other => VarValue::String(other.to_text()),
                };
                vars.insert(name.to_owned(), value);
            }
        }
        Ok(self.spec.uri.expand_exact(&vars))
    }

    /// The result of a read of the expanded URI: text as text, JSON also as
    /// `structuredContent` (when it is an object), bytes as an embedded resource; a read that
    /// failed is an `isError` result saying why.
    pub fn result(&self, uri: &str, read: Result<Vec<Contents>, RequestError>) -> ToolResult {
        let contents = match read {
            Ok(c) => c,
            Err(e) => {
                return ToolResult::error(format!(
                    "reading {} failed: {e}",
                    quote(uri, Quote::Code)
                ));
            }
        };
        let mut structured = None;
        let mut content = Vec::with_capacity(contents.len());
        for c in contents {
            match c.body {
                Body::Text(t) => {
                    let json = c
                        .mime_type
                        .as_deref()
                        .is_some_and(|m| m == "application/json" || m.ends_with("+json"));
                    if json
                        && structured.is_none()
                        && let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(&t)
                    {
                        structured = Some(v);
                    }
                    content.push(ToolContent::Text(t));
                }
                Body::Bytes(_) => content.push(ToolContent::Resource(c)),
            }
        }
        if self.info.output_schema.is_some() && structured.is_none() {
            // A declared output schema promises structured content.
            return ToolResult::error(format!(
                "{} did not read as the JSON rows {} answers",
                quote(uri, Quote::Code),
                self.spec.entry
            ));
        }
        ToolResult {
            content,
            structured,
            is_error: false,
        }
    }
}
