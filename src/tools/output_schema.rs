//! A tool's `output_schema`: compiled once when the registry is built, then checked against each
//! structured result. JSON Schema drafts 4 to 2020-12 (2020-12 when `$schema` is absent), by boon;
//! `format` is an annotation (as the 2020-12 default says); nothing is fetched: a `$ref` reaches
//! only the schema itself and the drafts' own metaschemas.

use std::error::Error;
use std::fmt;

use serde_json::Value as Json;

/// The address the schema is compiled under (its `$ref`s resolve against it).
const ROOT: &str = "urn:mcp-manifest:output-schema";

/// A compiled output schema.
pub(crate) struct OutputSchema {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSchema").finish_non_exhaustive()
    }
}

/// Refuses every address that is not the schema itself or a metaschema (those boon carries).
struct NoFetch;

impl boon::UrlLoader for NoFetch {
    fn load(&self, url: &str) -> Result<Json, Box<dyn Error>> {
        Err(
            format!("`{url}` is not loaded: an output schema's `$ref` can only point inside it")
                .into(),
        )
    }
}

impl OutputSchema {
    /// Compiles `schema`; the error says why it is not a valid JSON Schema.
    pub fn compile(schema: &Json) -> Result<OutputSchema, String> {
        let mut compiler = boon::Compiler::new();
        compiler.use_loader(Box::new(NoFetch));
        let mut schemas = boon::Schemas::new();
        compiler
            .add_resource(ROOT, schema.clone())
            .and_then(|()| compiler.compile(ROOT, &mut schemas))
            .map(|index| OutputSchema { schemas, index })
            .map_err(|e| compile_error(&e))
    }

    /// Up to `max` problems of `value`, each `at `/pointer`: what is wrong`; none when it matches.
    pub fn problems(&self, value: &Json, max: usize) -> Vec<String> {
        let Err(e) = self.schemas.validate(value, self.index) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        leaves(&e, max, &mut out);
        out
    }
}

/// The innermost errors of boon's tree (each names one keyword that failed at one place).
fn leaves(e: &boon::ValidationError<'_, '_>, max: usize, out: &mut Vec<String>) {
    if out.len() >= max {
        return;
    }
    if e.causes.is_empty() {
        let at = e.instance_location.to_string();
        out.push(format!(
            "at `{}`: {}",
            if at.is_empty() { "/" } else { &at },
            e.kind
        ));
        return;
    }
    for c in &e.causes {
        leaves(c, max, out);
    }
}

/// A compile error in the manifest's words: the metaschema's complaints, without boon's URLs.
fn compile_error(e: &boon::CompileError) -> String {
    match e {
        boon::CompileError::ValidationError { src, .. } => {
            let mut out = Vec::new();
            leaves(src, 5, &mut out);
            out.join("; ")
        }
        boon::CompileError::LoadUrlError { src, .. } => src.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn problems_name_the_place_and_the_rule() {
        let s = OutputSchema::compile(&json!({
            "type": "object",
            "properties": { "count": { "type": "integer" }, "name": { "$ref": "#/$defs/name" } },
            "required": ["count"],
            "$defs": { "name": { "type": "string", "maxLength": 3 } }
        }))
        .expect("valid");
        assert!(
            s.problems(&json!({"count": 3, "name": "abc"}), 10)
                .is_empty()
        );
        let p = s.problems(&json!({"count": "3", "name": "abcd"}), 10);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p.iter()
                .any(|m| m.starts_with("at `/count`:") && m.contains("integer")),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|m| m.starts_with("at `/name`:") && m.contains('3')),
            "{p:?}"
        );
        let p = s.problems(&json!({}), 10);
        assert!(
            p[0].starts_with("at `/`:") && p[0].contains("count"),
            "{p:?}"
        );
        assert_eq!(s.problems(&json!({"count": "a", "name": 5}), 1).len(), 1);
    }

    #[test]
    fn invalid_schemas_and_outside_references_are_refused() {
        let e = OutputSchema::compile(&json!({"type": "object", "properties": 5})).unwrap_err();
        assert!(e.contains("/properties"), "{e}");
        let e = OutputSchema::compile(&json!({"$ref": "https://example.com/s.json"})).unwrap_err();
        assert!(e.contains("is not loaded"), "{e}");
        let e = OutputSchema::compile(&json!({"$ref": "file:///etc/passwd"})).unwrap_err();
        assert!(e.contains("is not loaded"), "{e}");
        // An older draft named by `$schema` is followed (draft-07's `dependencies`).
        let s = OutputSchema::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "dependencies": { "a": ["b"] }
        }))
        .expect("valid");
        assert_eq!(s.problems(&json!({"a": 1}), 10).len(), 1);
    }
}
