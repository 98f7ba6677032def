//! Tool parameters: the `inputSchema` they become, and the arguments of a call checked against
//! them and turned into text values. Pure.

use std::collections::HashMap;

use serde_json::{Map, Value as Json, json};

use crate::manifest::{Param, ParamType, type_phrase};
use crate::tools::argv::{Kind, Value};

/// A tool's parameters, with their patterns compiled.
#[derive(Debug, Clone)]
pub struct Params {
    list: Vec<(Param, Option<regex::Regex>)>,
}

impl Params {
    /// Compiles the patterns (the manifest already checked them; a failure here is reported as
    /// the error message of the pattern).
    pub fn new(params: &[Param]) -> Result<Params, Vec<(crate::manifest::Loc, String)>> {
        let mut list = Vec::new();
        let mut errors = Vec::new();
        for p in params {
            let re = match &p.pattern {
                Some(pat) => match regex::Regex::new(pat) {
                    Ok(re) => Some(re),
                    Err(e) => {
                        errors.push((p.loc, format!("invalid `pattern` for `{}`: {e}", p.name)));
                        None
                    }
                },
                None => None,
            };
            list.push((p.clone(), re));
        }
        if errors.is_empty() {
            Ok(Params { list })
        } else {
            Err(errors)
        }
    }

    /// Names and kinds, for placeholder checks.
    pub fn declared(&self) -> Vec<(String, Kind)> {
        self.list
            .iter()
            .map(|(p, _)| {
                let kind = match p.ty {
                    ParamType::Array => Kind::Many,
                    _ => Kind::One,
                };
                (p.name.clone(), kind)
            })
            .collect()
    }

    /// The JSON Schema of the arguments (`type: object` at the root).
    pub fn input_schema(&self) -> Map<String, Json> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for (p, _) in &self.list {
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

    /// Checks `args` against the parameters and converts them (defaults filled in) to text.
    /// A parameter without a value is absent from the map. The error names every parameter
    /// that failed and the rule it broke, one a line.
    pub fn bind(&self, args: &Map<String, Json>) -> Result<HashMap<String, Value>, String> {
        let mut problems = Vec::new();
        for name in args.keys() {
            if !self.list.iter().any(|(p, _)| &p.name == name) {
                let known: Vec<String> = self
                    .list
                    .iter()
                    .map(|(p, _)| format!("`{}`", p.name))
                    .collect();
                problems.push(if known.is_empty() {
                    format!("unknown argument `{name}`: this tool takes no arguments")
                } else {
                    format!(
                        "unknown argument `{name}`; the parameters are: {}",
                        known.join(", ")
                    )
                });
            }
        }
        let mut values = HashMap::new();
        for (p, re) in &self.list {
            let given = args.get(&p.name).filter(|v| !v.is_null());
            let Some(v) = given.or(p.default.as_ref()) else {
                if p.required {
                    problems.push(format!(
                        "missing required argument `{}` ({})",
                        p.name,
                        type_phrase(p.ty)
                    ));
                }
                continue;
            };
            match check(p, re.as_ref(), v) {
                Ok(value) => {
                    values.insert(p.name.clone(), value);
                }
                Err(rule) => problems.push(format!("argument `{}` {rule}", p.name)),
            }
        }
        if problems.is_empty() {
            Ok(values)
        } else {
            Err(format!("invalid arguments:\n{}", problems.join("\n")))
        }
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

/// `1.0` as `1` so integer bounds read as integers in the schema.
fn number(x: f64) -> Json {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn show(v: &Json) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}

fn found(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(n) if n.is_f64() => "a number",
        Json::Number(_) => "an integer",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// One argument against its parameter: the value as text, or the rule it breaks.
fn check(p: &Param, re: Option<&regex::Regex>, v: &Json) -> Result<Value, String> {
    let wrong_type = || {
        format!(
            "must be {}, got {} ({})",
            type_phrase(p.ty),
            found(v),
            show(v)
        )
    };
    let value = match p.ty {
        ParamType::String => Value::One(v.as_str().ok_or_else(wrong_type)?.to_owned()),
        ParamType::Integer => {
            let text = match v {
                Json::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
                // 5.0 is an integer in JSON Schema.
                Json::Number(n) => match n.as_f64() {
                    Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => (x as i64).to_string(),
                    _ => return Err(wrong_type()),
                },
                _ => return Err(wrong_type()),
            };
            Value::One(text)
        }
        ParamType::Number => match v {
            Json::Number(n) => Value::One(n.to_string()),
            _ => return Err(wrong_type()),
        },
        ParamType::Boolean => Value::One(v.as_bool().ok_or_else(wrong_type)?.to_string()),
        ParamType::Array => {
            let items = v.as_array().ok_or_else(wrong_type)?;
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(s) => out.push(s.to_owned()),
                    None => {
                        return Err(format!(
                            "must be an array of strings, but item {i} is {} ({})",
                            found(item),
                            show(item)
                        ));
                    }
                }
            }
            Value::Many(out)
        }
    };
    let texts: Vec<&Json> = match (p.ty, v) {
        (ParamType::Array, Json::Array(items)) => items.iter().collect(),
        _ => vec![v],
    };
    for t in &texts {
        if let Some(allowed) = &p.enum_values {
            let fits = allowed.iter().any(|a| a == *t || same_number(a, t));
            if !fits {
                let list: Vec<String> = allowed.iter().map(show).collect();
                return Err(format!(
                    "must be one of {}, got {}",
                    list.join(", "),
                    show(t)
                ));
            }
        }
        if let (Some(re), Some(s)) = (re, t.as_str())
            && !re.is_match(s)
        {
            return Err(format!(
                "must match the pattern `{}`, got {}",
                re.as_str(),
                show(t)
            ));
        }
        if let Some(s) = t.as_str()
            && s.contains('\0')
        {
            return Err("holds a NUL character, which cannot be passed to a program".into());
        }
    }
    if let Some(x) = v.as_f64() {
        if let Some(min) = p.minimum
            && x < min
        {
            return Err(format!("must be at least {}, got {}", number(min), show(v)));
        }
        if let Some(max) = p.maximum
            && x > max
        {
            return Err(format!("must be at most {}, got {}", number(max), show(v)));
        }
    }
    Ok(value)
}

fn same_number(a: &Json, b: &Json) -> bool {
    matches!((a.as_f64(), b.as_f64()), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Loc;

    fn param(name: &str, ty: ParamType) -> Param {
        Param {
            name: name.into(),
            loc: Loc::default(),
            ty,
            description: None,
            default: None,
            required: true,
            enum_values: None,
            minimum: None,
            maximum: None,
            pattern: None,
        }
    }

    fn params() -> Params {
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
        let ratio = {
            let mut r = param("ratio", ParamType::Number);
            r.required = false;
            r
        };
        let flag = {
            let mut f = param("flag", ParamType::Boolean);
            f.required = false;
            f
        };
        Params::new(&[count, mode, name, tags, ratio, flag]).unwrap()
    }

    #[test]
    fn schema_has_types_defaults_bounds_and_required() {
        let schema = Json::Object(params().input_schema());
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

    fn bind(args: Json) -> Result<HashMap<String, Value>, String> {
        params().bind(args.as_object().unwrap())
    }

    #[test]
    fn binds_defaults_and_converts_to_text() {
        let v =
            bind(json!({"name": "abc", "tags": ["#a", "#b"], "ratio": 1.5, "flag": true})).unwrap();
        assert_eq!(v["count"], Value::One("10".into()));
        assert_eq!(v["name"], Value::One("abc".into()));
        assert_eq!(v["tags"], Value::Many(vec!["#a".into(), "#b".into()]));
        assert_eq!(v["ratio"], Value::One("1.5".into()));
        assert_eq!(v["flag"], Value::One("true".into()));
        assert!(!v.contains_key("mode"));
        let v = bind(json!({"name": "abc", "count": 5.0, "mode": null})).unwrap();
        assert_eq!(v["count"], Value::One("5".into()));
        assert!(!v.contains_key("mode"));
    }

    #[test]
    fn failures_name_the_parameter_and_the_rule() {
        let cases = [
            (json!({}), "missing required argument `name` (a string)"),
            (
                json!({"name": "x", "count": 0}),
                "argument `count` must be at least 1, got 0",
            ),
            (
                json!({"name": "x", "count": 201}),
                "argument `count` must be at most 200, got 201",
            ),
            (
                json!({"name": "x", "count": "ten"}),
                "argument `count` must be an integer, got a string (\"ten\")",
            ),
            (
                json!({"name": "x", "count": 1.5}),
                "argument `count` must be an integer, got a number (1.5)",
            ),
            (
                json!({"name": "x", "mode": "medium"}),
                "argument `mode` must be one of \"fast\", \"slow\", got \"medium\"",
            ),
            (
                json!({"name": "ABC"}),
                "argument `name` must match the pattern `^[a-z]+$`, got \"ABC\"",
            ),
            (
                json!({"name": "x", "tags": ["#a", 3]}),
                "argument `tags` must be an array of strings, but item 1 is an integer (3)",
            ),
            (
                json!({"name": "x", "tags": ["b"]}),
                "argument `tags` must match the pattern `^#`, got \"b\"",
            ),
            (
                json!({"name": "x", "flag": "yes"}),
                "argument `flag` must be a boolean, got a string (\"yes\")",
            ),
            (
                json!({"name": "x", "colour": 1}),
                "unknown argument `colour`; the parameters are: `count`, `mode`, `name`, `tags`, `ratio`, `flag`",
            ),
        ];
        for (args, expected) in cases {
            let err = bind(args.clone()).unwrap_err();
            assert_eq!(err, format!("invalid arguments:\n{expected}"), "{args}");
        }
        let nul = Params::new(&[param("s", ParamType::String)])
            .unwrap()
            .bind(json!({"s": "a\u{0}b"}).as_object().unwrap())
            .unwrap_err();
        assert!(nul.contains("argument `s` holds a NUL character"), "{nul}");
    }
}
