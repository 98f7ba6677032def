//! Checks the parsed TOML tree against the manifest's own JSON Schema, reporting every unknown key
//! (with a did-you-mean), wrong type, bad enum value and missing required key at once.
//!
//! serde stops at the first error of a struct; this walk does not, so a user sees all problems in
//! one run. The schema comes from the same types serde deserializes into (`raw.rs`), so the two
//! cannot disagree about which keys exist.

use serde_json::Value;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::diag::{Diagnostics, SourceMap, did_you_mean};

pub struct Walker<'a> {
    root: &'a Value,
    map: &'a SourceMap,
    pub diags: &'a mut Diagnostics,
    /// Byte offsets of the problems found, so the entries holding them can be set aside.
    pub bad: Vec<usize>,
    /// The schema's `propertyNames` patterns, compiled once per check (not once per name: a
    /// manifest may declare hundreds of templates).
    name_patterns: std::collections::HashMap<String, Option<crate::pattern::Pattern>>,
}

impl<'a> Walker<'a> {
    pub fn new(root: &'a Value, map: &'a SourceMap, diags: &'a mut Diagnostics) -> Self {
        Walker {
            root,
            map,
            diags,
            bad: Vec::new(),
            name_patterns: std::collections::HashMap::new(),
        }
    }

    /// Checks a table (the document itself or a section entry) against `schema`.
    pub fn table(&mut self, table: &Spanned<DeTable<'_>>, schema: &Value, path: &str) {
        let schema = self.resolve(schema);
        self.object(table.get_ref(), table.span(), schema, path);
    }

    pub fn value(&mut self, value: &Spanned<DeValue<'_>>, schema: &Value, path: &str) {
        let schema = self.resolve(schema);
        if schema == &Value::Bool(true) {
            return;
        }
        if let Some(branches) = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array)
        {
            let fits: Vec<&Value> = branches
                .iter()
                .map(|b| self.resolve(b))
                .filter(|b| type_fits(b, value.get_ref()))
                .collect();
            match fits.first() {
                Some(branch) if fits.len() == 1 || !is_null_schema(branch) => {
                    self.value(value, branch, path)
                }
                Some(_) => {}
                None if branches.iter().any(|b| self.is_duration(self.resolve(b))) => {
                    self.err(value.span(), bare_duration(path, value.get_ref()));
                }
                None => {
                    let expected: Vec<String> = branches
                        .iter()
                        .map(|b| describe(self.resolve(b)))
                        .filter(|d| d != "null")
                        .collect();
                    self.err(
                        value.span(),
                        format!(
                            "`{path}` must be {}, found {}{}",
                            expected.join(" or "),
                            found(value.get_ref()),
                            shape_hint(path, value.get_ref())
                        ),
                    );
                }
            }
            return;
        }
        if !type_fits(schema, value.get_ref()) && self.is_duration(schema) {
            self.err(value.span(), bare_duration(path, value.get_ref()));
            return;
        }
        if !type_fits(schema, value.get_ref()) {
            self.err(
                value.span(),
                format!(
                    "`{path}` must be {}, found {}{}",
                    describe(schema),
                    found(value.get_ref()),
                    shape_hint(path, value.get_ref())
                ),
            );
            return;
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array)
            && let Some(s) = value.get_ref().as_str()
            && !options.iter().any(|o| o.as_str() == Some(s))
        {
            let names: Vec<&str> = options.iter().filter_map(Value::as_str).collect();
            let hint = match did_you_mean(s, names.iter().copied()) {
                Some(m) => format!(", did you mean `{m}`?"),
                None => format!("; expected one of: {}", quoted(&names)),
            };
            self.err(value.span(), format!("`{path}` cannot be `{s}`{hint}"));
            return;
        }
        if let (Some(min), Some(i)) = (
            schema.get("minimum").and_then(Value::as_f64),
            int_value(value.get_ref()),
        ) && (i as f64) < min
        {
            self.err(
                value.span(),
                format!("`{path}` must be at least {min}, found {i}"),
            );
            return;
        }
        match value.get_ref() {
            DeValue::Table(t) => self.object(t, value.span(), schema, path),
            DeValue::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        self.value(item, item_schema, &format!("{path}[{i}]"));
                    }
                }
            }
            _ => {}
        }
    }

    fn object(
        &mut self,
        table: &DeTable<'_>,
        span: std::ops::Range<usize>,
        schema: &Value,
        path: &str,
    ) {
        let props = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        for (key, value) in table.iter() {
            let name = key.get_ref().as_ref();
            let child = if path.is_empty() {
                name.to_owned()
            } else {
                format!("{path}.{name}")
            };
            if let Some(prop) = props.and_then(|p| p.get(name)) {
                self.value(value, prop, &child);
                continue;
            }
            match additional {
                Some(Value::Bool(false)) => {
                    let known: Vec<&str> = props
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    let kind = if path.is_empty() { "section" } else { "key" };
                    let msg = match did_you_mean(name, known.iter().copied()) {
                        Some(m) => format!("unknown {kind} `{name}`, did you mean `{m}`?"),
                        None if path.is_empty() => format!(
                            "unknown section `{name}`; the sections are: {}",
                            quoted(&known)
                        ),
                        None => format!(
                            "unknown key `{name}` in `{path}`; expected one of: {}",
                            quoted(&known)
                        ),
                    };
                    self.err(key.span(), msg);
                }
                Some(sub) => {
                    if let Some(pattern) = schema
                        .get("propertyNames")
                        .and_then(|p| p.get("pattern"))
                        .and_then(Value::as_str)
                        && let Some(re) = self
                            .name_patterns
                            .entry(pattern.to_owned())
                            .or_insert_with(|| crate::pattern::Pattern::new(pattern).ok())
                        && !re.is_match(name)
                    {
                        self.err(
                            key.span(),
                            format!(
                                "invalid name `{name}` in `{path}`: names match {}",
                                pattern.trim_start_matches('^').trim_end_matches('$')
                            ),
                        );
                    }
                    self.value(value, sub, &child)
                }
                None => {}
            }
        }
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for r in required.iter().filter_map(Value::as_str) {
                if table.get(r).is_none() {
                    let msg = if path.is_empty() {
                        format!("missing required key `{r}`")
                    } else {
                        format!("missing required key `{r}` in `{path}`")
                    };
                    self.err(span.clone(), msg);
                }
            }
        }
    }

    fn resolve<'s>(&self, schema: &'s Value) -> &'s Value
    where
        'a: 's,
    {
        let mut s = schema;
        // `$ref` chains are short (one hop in practice); the bound only guards against cycles.
        for _ in 0..8 {
            match s.get("$ref").and_then(Value::as_str) {
                Some(r) => match r
                    .strip_prefix("#/$defs/")
                    .and_then(|name| self.root.get("$defs")?.get(name))
                {
                    Some(target) => s = target,
                    None => return s,
                },
                None => return s,
            }
        }
        s
    }

    /// Whether `schema` (resolved) is the manifest's duration string.
    fn is_duration(&self, schema: &Value) -> bool {
        self.root
            .get("$defs")
            .and_then(|d| d.get("Duration"))
            .is_some_and(|d| d == schema)
    }

    fn err(&mut self, span: std::ops::Range<usize>, message: String) {
        self.bad.push(span.start);
        self.diags.push(self.map.loc(span.start), message);
    }
}

/// A duration written as something else than a string: `timeout = 30` → write `"30s"`.
fn bare_duration(path: &str, value: &DeValue<'_>) -> String {
    let number = match value {
        DeValue::Integer(i) => Some(i.as_str().replace('_', "")),
        DeValue::Float(f) => Some(f.as_str().replace('_', "")),
        _ => None,
    };
    match number {
        Some(n) => format!(
            "`{path}` is a duration string with its unit: write `{path_key} = \"{n}s\"` (or \"{n}ms\", \"{n}m\")",
            path_key = path.rsplit('.').next().unwrap_or(path)
        ),
        None => format!(
            "`{path}` must be a duration string, found {}; a duration is {}",
            found(value),
            super::expand::DURATION_FORMS
        ),
    }
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn is_null_schema(schema: &Value) -> bool {
    types_of(schema) == ["null"]
}

fn type_fits(schema: &Value, value: &DeValue<'_>) -> bool {
    let types = types_of(schema);
    if types.is_empty() {
        // No `type` (e.g. a nested anyOf or `true`): accept and let the deeper walk decide.
        return true;
    }
    types.iter().any(|t| match *t {
        "string" => value.is_str(),
        "integer" => value.is_integer(),
        "number" => value.is_integer() || value.is_float(),
        "boolean" => value.is_bool(),
        "array" => value.is_array(),
        "object" => value.is_table(),
        _ => false,
    })
}

fn int_value(value: &DeValue<'_>) -> Option<i64> {
    let i = value.as_integer()?;
    i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()).ok()
}

fn describe(schema: &Value) -> String {
    let types: Vec<&str> = types_of(schema)
        .into_iter()
        .filter(|t| *t != "null")
        .collect();
    if types.is_empty() {
        return "a value".into();
    }
    types
        .iter()
        .map(|t| match *t {
            "string" => "a string",
            "integer" => "an integer",
            "number" => "a number",
            "boolean" => "true or false",
            "array" => "an array",
            "object" => "a table",
            "null" => "null",
            _ => "a value",
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

/// What follows "`tools` must be a table, found an array" when a section of named entries is
/// written as an array of tables (`[[tools]]`): how to write it (`hints::named_section_shape`).
fn shape_hint(path: &str, value: &DeValue<'_>) -> String {
    let named = super::read::named_sections().any(|s| s == path);
    match value {
        DeValue::Array(items) if named => super::hints::named_section_shape(path, items),
        DeValue::Array(_) if path == "server" => super::hints::single_table_shape(path),
        _ => String::new(),
    }
}

fn found(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
