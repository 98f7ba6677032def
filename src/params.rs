//! Typed parameters: one set of rules and one wording for tool `params`, named-query `params` and
//! template `vars`. Pure.
//!
//! The rules (`type`, `enum`, `pattern`, `minimum`, `maximum`, `default`, `required`) are checked
//! the same way whatever a value arrives as; two front-ends turn what arrives into a `Typed`
//! value: JSON (tool arguments) and text (values from a URI: query strings, template variables).
//! Every problem names the parameter and the rule it breaks: "`limit` must be at most 200, got
//! 500". The noun (argument, parameter) is the one the user writes.

use std::collections::HashMap;

use serde_json::{Map, Value as Json, json};

use crate::argv::{Kind, Value};
use crate::manifest::{Loc, Param, ParamType, type_phrase};
use crate::pattern::Pattern;
use crate::quote::{Quote, at_most_reported, quote};

/// A value that passed its parameter's rules.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Typed {
    /// No value (an optional template variable absent from the URI).
    Null,
    Text(String),
    Integer(i64),
    Number(f64),
    Boolean(bool),
    List(Vec<String>),
}

impl Typed {
    /// As a program receives it: one argv element, or one per item.
    pub fn to_argv(&self) -> Value {
        match self {
            Typed::List(items) => Value::Many(items.clone()),
            other => Value::One(other.to_text()),
        }
    }

    /// As text (how it reads in a URI, a message or an environment variable; a list is one item
    /// a line).
    pub fn to_text(&self) -> String {
        match self {
            Typed::Null => String::new(),
            Typed::Text(s) => s.clone(),
            Typed::Integer(i) => i.to_string(),
            Typed::Number(x) => x.to_string(),
            Typed::Boolean(b) => b.to_string(),
            Typed::List(items) => items.join("\n"),
        }
    }
}

/// What the user calls the values, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Noun {
    Argument,
    Parameter,
    /// A `[templates]` URI variable (`vars.NAME`).
    Variable,
}

impl Noun {
    fn word(self) -> &'static str {
        match self {
            Noun::Argument => "argument",
            Noun::Parameter => "parameter",
            Noun::Variable => "variable",
        }
    }
}

/// One declared parameter with its pattern compiled.
#[derive(Debug, Clone)]
struct Rules {
    def: Param,
    pattern: Option<Pattern>,
}

/// The declared parameters of one tool, query or template, in declaration order.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    list: Vec<Rules>,
    noun: Noun,
}

impl Params {
    /// Compiles the patterns (the manifest already checked them; a failure here is reported as
    /// the error message of the pattern).
    pub fn new(params: &[Param], noun: Noun) -> Result<Params, Vec<(Loc, String)>> {
        let mut list = Vec::new();
        let mut errors = Vec::new();
        for p in params {
            let pattern = match &p.pattern {
                Some(pat) => match Pattern::new(pat) {
                    Ok(re) => Some(re),
                    Err(e) => {
                        errors.push((p.loc, format!("invalid `pattern` for `{}`: {e}", p.name)));
                        None
                    }
                },
                None => None,
            };
            list.push(Rules {
                def: p.clone(),
                pattern,
            });
        }
        if errors.is_empty() {
            Ok(Params { list, noun })
        } else {
            Err(errors)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The same rules, named with another noun in messages (a query's parameters are its
    /// tool's arguments).
    pub fn with_noun(&self, noun: Noun) -> Params {
        Params {
            list: self.list.clone(),
            noun,
        }
    }

    /// A parameter's default as its type, if it has one that fits.
    pub fn default_value(&self, name: &str) -> Option<Typed> {
        let r = self.get(name)?;
        r.typed_json(r.def.default.as_ref()?).ok()
    }

    /// A parameter's description, if it has one.
    pub fn description(&self, name: &str) -> Option<&str> {
        self.get(name)?.def.description.as_deref()
    }

    /// Names in declaration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|r| r.def.name.as_str())
    }

    /// Names and kinds, for placeholder checks.
    pub fn declared(&self) -> Vec<(String, Kind)> {
        self.list
            .iter()
            .map(|r| {
                let kind = match r.def.ty {
                    ParamType::Array => Kind::Many,
                    _ => Kind::One,
                };
                (r.def.name.clone(), kind)
            })
            .collect()
    }

    fn get(&self, name: &str) -> Option<&Rules> {
        self.list.iter().find(|r| r.def.name == name)
    }

    /// Whether `name`'s value may begin a command-line argument with `-` (`allow_dash = true`).
    pub fn allows_dash(&self, name: &str) -> bool {
        self.get(name).is_some_and(|r| r.def.allow_dash)
    }

    /// Whether every parameter can be left out.
    pub fn all_optional(&self) -> bool {
        self.list.iter().all(|r| r.def.default.is_some())
    }

    /// One parameter's type and whether it has a default, for descriptions.
    pub fn summary(&self) -> Vec<String> {
        self.list
            .iter()
            .map(|r| match &r.def.default {
                Some(_) => format!("{} ({}, optional)", r.def.name, type_phrase(r.def.ty)),
                None => format!("{} ({})", r.def.name, type_phrase(r.def.ty)),
            })
            .collect()
    }

    /// The values a parameter may take, when they are few (its `enum`, or true/false), as text.
    pub fn choices(&self, name: &str) -> Vec<String> {
        let Some(r) = self.get(name) else {
            return Vec::new();
        };
        match (&r.def.enum_values, r.def.ty) {
            (Some(values), _) => values
                .iter()
                .map(|v| match v {
                    Json::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            (None, ParamType::Boolean) => vec!["false".into(), "true".into()],
            _ => Vec::new(),
        }
    }

    /// The JSON Schema of the arguments (`type: object` at the root).
    pub fn input_schema(&self) -> Map<String, Json> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for Rules { def: p, .. } in &self.list {
            let mut s = Map::new();
            s.insert("type".into(), json!(type_name(p.ty)));
            if let Some(d) = &p.description {
                s.insert("description".into(), json!(d));
            }
            if let Some(d) = &p.default {
                s.insert("default".into(), d.clone());
            }
            let mut items = Map::new();
            let target = if p.ty == ParamType::Array {
                items.insert("type".into(), json!("string"));
                &mut items
            } else {
                &mut s
            };
            if let Some(values) = &p.enum_values {
                target.insert("enum".into(), json!(values));
            }
            if let Some(pattern) = &p.pattern {
                target.insert("pattern".into(), json!(pattern));
            }
            if p.ty == ParamType::Array {
                s.insert("items".into(), Json::Object(items));
            }
            if let Some(min) = p.minimum {
                s.insert("minimum".into(), number(min));
            }
            if let Some(max) = p.maximum {
                s.insert("maximum".into(), number(max));
            }
            if p.required {
                required.push(json!(p.name));
            }
            properties.insert(p.name.clone(), Json::Object(s));
        }
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Json::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), Json::Array(required));
        }
        schema.insert("additionalProperties".into(), json!(false));
        schema
    }

    /// The JSON front-end: checks `args` (defaults filled in). A parameter without a value is
    /// absent from the map. Every problem is one line.
    pub fn bind_json(
        &self,
        args: &Map<String, Json>,
    ) -> Result<HashMap<String, Typed>, Vec<String>> {
        let mut problems: Vec<String> = args
            .keys()
            .filter(|name| self.get(name).is_none())
            .map(|name| self.unknown(name))
            .collect();
        let mut values = HashMap::new();
        for r in &self.list {
            let given = args.get(&r.def.name).filter(|v| !v.is_null());
            let Some(v) = given.or(r.def.default.as_ref()) else {
                if r.def.required {
                    problems.push(self.missing(r));
                }
                continue;
            };
            match r.typed_json(v).and_then(|t| r.check(&t).map(|()| t)) {
                Ok(t) => {
                    values.insert(r.def.name.clone(), t);
                }
                Err(rule) => problems.push(format!("{} `{}` {rule}", self.noun.word(), r.def.name)),
            }
        }
        if problems.is_empty() {
            Ok(values)
        } else {
            Err(at_most_reported(problems))
        }
    }

    /// The text front-end for one value: converts `raw` to `name`'s type and checks its rules.
    pub fn text_value(&self, name: &str, raw: &str) -> Result<Typed, String> {
        let Some(r) = self.get(name) else {
            return Err(self.unknown(name));
        };
        r.typed_text(raw)
            .and_then(|t| r.check(&t).map(|()| t))
            .map_err(|rule| format!("{} `{name}` {rule}", self.noun.word()))
    }

    /// The text front-end for a set of values (a query string's pairs, a URI's variables):
    /// each converted and checked, defaults filled in, values in declaration order (`Null` for
    /// an optional one without a value). Unknown and repeated names are problems.
    pub fn bind_text(&self, given: &[(String, String)]) -> Result<Vec<Typed>, Vec<String>> {
        let mut problems = Vec::new();
        for (i, (name, _)) in given.iter().enumerate() {
            if self.get(name).is_none() {
                problems.push(self.unknown(name));
            } else if given[..i].iter().any(|(n, _)| n == name) {
                problems.push(format!(
                    "{} `{name}` is given more than once",
                    self.noun.word()
                ));
            }
        }
        let mut out = Vec::with_capacity(self.list.len());
        for r in &self.list {
            let value = match given.iter().find(|(n, _)| *n == r.def.name) {
                Some((_, raw)) => self.text_value(&r.def.name, raw),
                None => match &r.def.default {
                    Some(d) => r.typed_json(d).map_err(|rule| {
                        format!("{} `{}` default {rule}", self.noun.word(), r.def.name)
                    }),
                    None if r.def.required => Err(self.missing(r)),
                    None => Ok(Typed::Null),
                },
            };
            match value {
                Ok(v) => out.push(v),
                Err(p) => problems.push(p),
            }
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(at_most_reported(problems))
        }
    }

    /// `name` is the client's: quoted cut, like its values.
    fn unknown(&self, name: &str) -> String {
        let word = self.noun.word();
        let name = quote(name, Quote::Code);
        if self.list.is_empty() {
            return format!("unknown {word} {name}: there are none");
        }
        let known: Vec<String> = self.names().map(|n| format!("`{n}`")).collect();
        format!(
            "unknown {word} {name}; the {word}s are: {}",
            known.join(", ")
        )
    }

    fn missing(&self, r: &Rules) -> String {
        format!(
            "missing required {} `{}` ({})",
            self.noun.word(),
            r.def.name,
            type_phrase(r.def.ty)
        )
    }
}

impl Rules {
    /// A JSON value as this parameter's type, or the rule it breaks.
    fn typed_json(&self, v: &Json) -> Result<Typed, String> {
        let p = &self.def;
        let wrong = || format!("must be {}, got {}", type_phrase(p.ty), show(v));
        Ok(match p.ty {
            ParamType::String => Typed::Text(v.as_str().ok_or_else(wrong)?.to_owned()),
            ParamType::Integer => match v {
                Json::Number(n) => match n.as_i64() {
                    Some(i) => Typed::Integer(i),
                    // 5.0 is an integer in JSON Schema.
                    None => match n.as_f64() {
                        Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Typed::Integer(x as i64),
                        _ => return Err(wrong()),
                    },
                },
                _ => return Err(wrong()),
            },
            ParamType::Number => Typed::Number(v.as_f64().ok_or_else(wrong)?),
            ParamType::Boolean => Typed::Boolean(v.as_bool().ok_or_else(wrong)?),
            ParamType::Array => {
                let items = v.as_array().ok_or_else(wrong)?;
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(s) => out.push(s.to_owned()),
                        None => {
                            return Err(format!(
                                "must be an array of strings, but item {i} is {}",
                                show(item)
                            ));
                        }
                    }
                }
                Typed::List(out)
            }
        })
    }

    /// Text from a URI as this parameter's type: integers and numbers in Rust's syntax (finite
    /// only), booleans as `true`/`false`/`1`/`0`; an array takes the text as its one item.
    fn typed_text(&self, raw: &str) -> Result<Typed, String> {
        let p = &self.def;
        let wrong = |extra: &str| {
            format!(
                "must be {}, got {}{extra}",
                type_phrase(p.ty),
                quote(raw, Quote::Json)
            )
        };
        Ok(match p.ty {
            ParamType::String => Typed::Text(raw.to_owned()),
            ParamType::Array => Typed::List(vec![raw.to_owned()]),
            ParamType::Integer => Typed::Integer(raw.parse().map_err(|_| wrong(""))?),
            ParamType::Number => Typed::Number(
                raw.parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite() && !raw.trim().is_empty())
                    .ok_or_else(|| wrong(""))?,
            ),
            ParamType::Boolean => match raw.to_ascii_lowercase().as_str() {
                "true" | "1" => Typed::Boolean(true),
                "false" | "0" => Typed::Boolean(false),
                _ => return Err(wrong(" (write true, false, 1 or 0)")),
            },
        })
    }

    /// The rules a typed value must follow besides its type: `enum`, `pattern`, bounds.
    fn check(&self, value: &Typed) -> Result<(), String> {
        let p = &self.def;
        let items: Vec<Json> = match value {
            Typed::Null => return Ok(()),
            Typed::Text(s) => vec![json!(s)],
            Typed::Integer(i) => vec![json!(i)],
            Typed::Number(x) => vec![json!(x)],
            Typed::Boolean(b) => vec![json!(b)],
            Typed::List(items) => items.iter().map(|s| json!(s)).collect(),
        };
        for item in &items {
            if let Some(allowed) = &p.enum_values
                && !allowed.iter().any(|a| a == item || same_number(a, item))
            {
                let list: Vec<String> = allowed.iter().map(show).collect();
                return Err(format!(
                    "must be one of {}, got {}",
                    list.join(", "),
                    show(item)
                ));
            }
            if let (Some(re), Some(s)) = (&self.pattern, item.as_str())
                && !re.is_match(s)
            {
                return Err(format!(
                    "must match the pattern `{}`, got {}",
                    re.as_str(),
                    show(item)
                ));
            }
        }
        let x = match value {
            Typed::Integer(i) => Some(*i as f64),
            Typed::Number(x) => Some(*x),
            _ => None,
        };
        if let Some(x) = x {
            if let Some(min) = p.minimum
                && x < min
            {
                return Err(format!(
                    "must be at least {}, got {}",
                    number(min),
                    show(&items[0])
                ));
            }
            if let Some(max) = p.maximum
                && x > max
            {
                return Err(format!(
                    "must be at most {}, got {}",
                    number(max),
                    show(&items[0])
                ));
            }
        }
        Ok(())
    }
}

fn type_name(ty: ParamType) -> &'static str {
    match ty {
        ParamType::String => "string",
        ParamType::Integer => "integer",
        ParamType::Number => "number",
        ParamType::Boolean => "boolean",
        ParamType::Array => "array",
    }
}

/// `1.0` as `1` so integer bounds read as integers in the schema and in messages.
fn number(x: f64) -> Json {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// A value as messages quote it: a string as a JSON string, anything else as its JSON text;
/// long ones cut (`crate::quote`), so a 17 MiB argument gets a message of a few hundred bytes.
fn show(v: &Json) -> String {
    match v {
        Json::String(s) => quote(s, Quote::Json),
        other => quote(&other.to_string(), Quote::Plain),
    }
}

fn same_number(a: &Json, b: &Json) -> bool {
    matches!((a.as_f64(), b.as_f64()), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str, ty: ParamType) -> Param {
        Param {
            ty,
            ..Param::string(name, Loc::default())
        }
    }

    fn params(noun: Noun) -> Params {
        let mut count = param("count", ParamType::Integer);
        count.default = Some(json!(10));
        count.required = false;
        count.minimum = Some(1.0);
        count.maximum = Some(200.0);
        count.description = Some("How many".into());
        let mut mode = param("mode", ParamType::String);
        mode.enum_values = Some(vec![json!("fast"), json!("slow")]);
        mode.required = false;
        let mut name = param("name", ParamType::String);
        name.pattern = Some("^[a-z]+$".into());
        let mut tags = param("tags", ParamType::Array);
        tags.required = false;
        tags.pattern = Some("^#".into());
        let mut ratio = param("ratio", ParamType::Number);
        ratio.required = false;
        let mut flag = param("flag", ParamType::Boolean);
        flag.required = false;
        Params::new(&[count, mode, name, tags, ratio, flag], noun).unwrap()
    }

    #[test]
    fn schema_has_types_defaults_bounds_and_required() {
        let schema = Json::Object(params(Noun::Argument).input_schema());
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "count": {"type": "integer", "description": "How many", "default": 10, "minimum": 1, "maximum": 200},
                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                    "name": {"type": "string", "pattern": "^[a-z]+$"},
                    "tags": {"type": "array", "items": {"type": "string", "pattern": "^#"}},
                    "ratio": {"type": "number"},
                    "flag": {"type": "boolean"}
                },
                "required": ["name"],
                "additionalProperties": false
            })
        );
    }

    fn bind(args: Json) -> Result<HashMap<String, Typed>, Vec<String>> {
        params(Noun::Argument).bind_json(args.as_object().unwrap())
    }

    #[test]
    fn binds_json_with_defaults() {
        let v =
            bind(json!({"name": "abc", "tags": ["#a", "#b"], "ratio": 1.5, "flag": true})).unwrap();
        assert_eq!(v["count"], Typed::Integer(10));
        assert_eq!(v["name"], Typed::Text("abc".into()));
        assert_eq!(
            v["tags"].to_argv(),
            Value::Many(vec!["#a".into(), "#b".into()])
        );
        assert_eq!(v["ratio"].to_text(), "1.5");
        assert_eq!(v["flag"].to_text(), "true");
        assert!(!v.contains_key("mode"));
        let v = bind(json!({"name": "abc", "count": 5.0, "mode": null})).unwrap();
        assert_eq!(v["count"], Typed::Integer(5));
    }

    /// The same rule broken through either front-end reads the same.
    #[test]
    fn one_wording_for_both_front_ends() {
        let cases = [
            (
                json!({"name": "x", "count": 0}),
                ("count", "0"),
                "`count` must be at least 1, got 0",
            ),
            (
                json!({"name": "x", "count": 201}),
                ("count", "201"),
                "`count` must be at most 200, got 201",
            ),
            (
                json!({"name": "x", "count": "ten"}),
                ("count", "ten"),
                "`count` must be an integer, got \"ten\"",
            ),
            (
                json!({"name": "x", "mode": "medium"}),
                ("mode", "medium"),
                "`mode` must be one of \"fast\", \"slow\", got \"medium\"",
            ),
            (
                json!({"name": "ABC"}),
                ("name", "ABC"),
                "`name` must match the pattern `^[a-z]+$`, got \"ABC\"",
            ),
            (
                json!({"name": "x", "flag": "yes"}),
                ("flag", "yes"),
                "`flag` must be a boolean, got \"yes\"",
            ),
        ];
        for (args, (name, raw), expected) in cases {
            let json_err = bind(args.clone()).unwrap_err().join("\n");
            assert!(
                json_err.starts_with(&format!("argument {expected}")),
                "{json_err}"
            );
            let text_err = params(Noun::Parameter).text_value(name, raw).unwrap_err();
            let rule = expected.split_once(' ').unwrap().1;
            if name != "flag" {
                assert!(
                    text_err.starts_with(&format!("parameter `{name}` {rule}")),
                    "{text_err}"
                );
            } else {
                assert!(
                    text_err.contains("must be a boolean, got \"yes\" (write true"),
                    "{text_err}"
                );
            }
        }
    }

    /// A value, a name or a list of 17 MiB: every message that quotes it quotes a short prefix
    /// and its length, through either front-end.
    #[test]
    fn huge_values_and_names_get_short_messages() {
        let huge = "é".repeat(17 << 19); // 17 MiB
        let cut = format!("{}…\" ({} characters)", "é".repeat(100), 17 << 19);
        let bounded = |m: &str| assert!(m.len() < 1024, "{} bytes: {m:.300}", m.len());
        let pattern = bind(json!({ "name": huge })).unwrap_err();
        assert_eq!(pattern.len(), 1);
        bounded(&pattern[0]);
        assert!(
            pattern[0].starts_with("argument `name` must match the pattern `^[a-z]+$`, got \"éé")
                && pattern[0].ends_with(&cut),
            "{:.300}",
            pattern[0]
        );
        for (name, raw) in [("name", &huge), ("count", &huge), ("flag", &huge)] {
            let m = params(Noun::Variable).text_value(name, raw).unwrap_err();
            bounded(&m);
            assert!(m.contains(&cut), "{m:.300}");
        }
        let not_integer = bind(json!({ "name": "x", "count": huge })).unwrap_err();
        bounded(&not_integer[0]);
        let list = bind(json!({ "name": [huge.clone(), huge.clone()] })).unwrap_err();
        bounded(&list[0]);
        assert!(list[0].contains("characters)"), "{:.300}", list[0]);
        let unknown = bind(json!({ huge.clone(): 1, "name": "x" })).unwrap_err();
        bounded(&unknown[0]);
        assert!(
            unknown[0].starts_with("unknown argument `éé"),
            "{:.300}",
            unknown[0]
        );
        // Many names: a bounded list of problems.
        let mut many = Map::new();
        for i in 0..100_000 {
            many.insert(format!("k{i}"), json!(1));
        }
        many.insert("name".into(), json!("x"));
        let problems = params(Noun::Argument).bind_json(&many).unwrap_err();
        assert_eq!(problems.len(), crate::quote::MAX_PROBLEMS + 1);
        assert_eq!(problems.last().unwrap(), "and 99980 more problems");
    }

    #[test]
    fn missing_unknown_and_repeated() {
        assert_eq!(
            bind(json!({"colour": 1})).unwrap_err(),
            [
                "unknown argument `colour`; the arguments are: `count`, `mode`, `name`, `tags`, `ratio`, `flag`",
                "missing required argument `name` (a string)",
            ]
        );
        let p = params(Noun::Parameter);
        let given = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            p.bind_text(&given(&[("name", "a"), ("name", "b")]))
                .unwrap_err(),
            ["parameter `name` is given more than once"]
        );
        let v = p
            .bind_text(&given(&[("name", "abc"), ("flag", "1")]))
            .unwrap();
        assert_eq!(
            v,
            [
                Typed::Integer(10),
                Typed::Null,
                Typed::Text("abc".into()),
                Typed::Null,
                Typed::Null,
                Typed::Boolean(true)
            ]
        );
    }
}
