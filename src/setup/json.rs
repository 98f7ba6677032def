//! Editing a client's JSON (or JSONC) file in place: the file is parsed into a concrete syntax
//! tree (jsonc-parser's CST), our entry is added, updated key by key, or removed there, and the
//! tree is printed back. Everything else — other entries, key order, comments, trailing commas,
//! indentation, line ends, a UTF-8 BOM — comes out as it went in. A client that reads strict
//! JSON gets its file refused, never rewritten, when it holds a comment or a trailing comma.

use std::path::Path;

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::{Map, Value};

use super::clients::Shape;
use super::register::{Entry, Opts, Outcome, not_ours, repoint, runs_us, served_manifest};

/// Where servers live in one client's file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub key: &'static str,
    pub shape: Shape,
    pub jsonc: bool,
}

/// The entry as `shape` writes it.
pub(crate) fn entry_value(shape: Shape, entry: &Entry) -> Value {
    let mut obj = Map::new();
    let env = || -> Value {
        Value::Object(
            entry
                .env
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                .collect(),
        )
    };
    let args = || Value::Array(entry.args.iter().cloned().map(Value::from).collect());
    match shape {
        Shape::Plain | Shape::Stdio | Shape::CopilotLocal => {
            match shape {
                Shape::Stdio => {
                    obj.insert("type".into(), "stdio".into());
                }
                Shape::CopilotLocal => {
                    obj.insert("type".into(), "local".into());
                }
                _ => {}
            }
            obj.insert("command".into(), entry.command.clone().into());
            obj.insert("args".into(), args());
            if !entry.env.is_empty() {
                obj.insert("env".into(), env());
            }
            if shape == Shape::CopilotLocal {
                obj.insert("tools".into(), Value::Array(vec!["*".into()]));
            }
        }
        Shape::Opencode => {
            obj.insert("type".into(), "local".into());
            let mut command = vec![Value::from(entry.command.clone())];
            command.extend(entry.args.iter().cloned().map(Value::from));
            obj.insert("command".into(), Value::Array(command));
            if !entry.env.is_empty() {
                obj.insert("environment".into(), env());
            }
            obj.insert("enabled".into(), true.into());
        }
    }
    Value::Object(obj)
}

/// The program and arguments an existing entry of `shape` runs.
fn command_of(shape: Shape, entry: &Map<String, Value>) -> (Option<&str>, Vec<Option<&str>>) {
    match shape {
        Shape::Opencode => {
            let list = entry.get("command").and_then(Value::as_array);
            let mut items = list.into_iter().flatten().map(Value::as_str);
            let first = items.next().flatten();
            (first, items.collect())
        }
        _ => (
            entry.get("command").and_then(Value::as_str),
            entry
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(Value::as_str)
                .collect(),
        ),
    }
}

/// The key holding environment variables in `shape`.
fn env_key(shape: Shape) -> &'static str {
    match shape {
        Shape::Opencode => "environment",
        _ => "env",
    }
}

/// Keys we write only when the entry lacks them: the user's own choice (`"tools": ["read"]`,
/// `"enabled": false`) is kept.
fn is_default_only(key: &str) -> bool {
    matches!(key, "tools" | "enabled")
}

/// `old` with our keys set: keys the user added to our entry stay, environment variables are
/// merged (ours set, the user's kept).
fn merged(shape: Shape, old: &Map<String, Value>, ours: &Map<String, Value>) -> Map<String, Value> {
    let mut new = old.clone();
    let env = env_key(shape);
    for (k, v) in ours {
        if is_default_only(k) && new.contains_key(k) {
            continue;
        }
        if k == env {
            let slot = new.entry(env).or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            if let (Some(slot), Some(add)) = (slot.as_object_mut(), v.as_object()) {
                for (name, value) in add {
                    slot.insert(name.clone(), value.clone());
                }
            }
            continue;
        }
        new.insert(k.clone(), v.clone());
    }
    new
}

/// A serde value as the CST's input.
fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

fn options(jsonc: bool) -> ParseOptions {
    ParseOptions {
        allow_comments: jsonc,
        allow_loose_object_property_names: false,
        allow_trailing_commas: jsonc,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// The parsed file and its root object; `None` for an empty file (or only a BOM).
struct Parsed {
    bom: bool,
    root: CstRootNode,
    object: CstObject,
}

fn parse(text: &str, path: &Path, jsonc: bool) -> Result<Option<Parsed>, String> {
    let bom = text.starts_with('\u{feff}');
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    if body.trim().is_empty() {
        return Ok(None);
    }
    if !jsonc {
        // The syntax tree keeps comments whatever the options say: strict JSON is checked here.
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(body) {
            let what = e.to_string();
            let what = what
                .rfind(" at line ")
                .map_or(what.as_str(), |i| &what[..i]);
            return Err(format!(
                "{}:{}:{}: not valid JSON ({what}); this client reads strict JSON (no comments, no trailing commas), so mcp-manifest left the file as it is: fix it, or add the entry by hand (`--print` shows it)",
                path.display(),
                e.line(),
                e.column()
            ));
        }
    }
    let root = CstRootNode::parse(body, &options(jsonc)).map_err(|e| {
        let strict = if jsonc {
            String::new()
        } else {
            " (this client reads strict JSON: no comments, no trailing commas)".to_owned()
        };
        format!(
            "{}:{}:{}: not valid JSON{strict}: {}; left as it is: fix it, or add the entry by hand (`--print` shows it)",
            path.display(),
            e.line_display(),
            e.column_display(),
            e.kind()
        )
    })?;
    let Some(object) = root.object_value() else {
        return Err(format!(
            "{}:1:1: the file is JSON but not an object; left as it is",
            path.display()
        ));
    };
    Ok(Some(Parsed { bom, root, object }))
}

fn print(p: &Parsed) -> String {
    let text = p.root.to_string();
    if p.bom {
        format!("\u{feff}{text}")
    } else {
        text
    }
}

fn not_an_object(path: &Path, key: &str) -> String {
    format!(
        "{}: `{key}` is not a JSON object; left as it is",
        path.display()
    )
}

/// A new file holding only our entry, two-space indented.
fn fresh(layout: Layout, name: &str, entry: &Entry, bom: bool) -> String {
    let mut servers = Map::new();
    servers.insert(name.to_owned(), entry_value(layout.shape, entry));
    let mut root = Map::new();
    root.insert(layout.key.to_owned(), Value::Object(servers));
    let text = pretty(&Value::Object(root));
    if bom { format!("\u{feff}{text}") } else { text }
}

/// `v` pretty-printed with two spaces and a final newline.
pub(crate) fn pretty(v: &Value) -> String {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    text.push('\n');
    text
}

/// The entry as the client's file would hold it, for `--print`.
pub(crate) fn snippet(layout: Layout, name: &str, entry: &Entry) -> String {
    fresh(layout, name, entry, false)
}

/// Whether the file already has the servers key (an unparsable file: yes, nothing is done).
pub(crate) fn has_key(text: &str, path: &Path, layout: Layout) -> bool {
    match parse(text, path, layout.jsonc) {
        Ok(Some(p)) => p.object.get(layout.key).is_some(),
        Ok(None) => false,
        Err(_) => true,
    }
}

/// Adds or updates `name`; the new text (the same text when nothing changes).
pub(crate) fn set(
    text: &str,
    path: &Path,
    layout: Layout,
    name: &str,
    entry: &Entry,
    opts: Opts,
) -> Result<(Outcome, String, Option<String>), String> {
    let Some(parsed) = parse(text, path, layout.jsonc)? else {
        let bom = text.starts_with('\u{feff}');
        return Ok((Outcome::Added, fresh(layout, name, entry, bom), None));
    };
    let servers = match parsed.object.get(layout.key) {
        Some(prop) => prop
            .object_value()
            .ok_or_else(|| not_an_object(path, layout.key))?,
        None => parsed
            .object
            .append(layout.key, CstInputValue::Object(Vec::new()))
            .object_value()
            .ok_or_else(|| not_an_object(path, layout.key))?,
    };
    let ours = entry_value(layout.shape, entry);
    let Some(ours) = ours.as_object() else {
        return Err("internal: an entry is an object".into());
    };
    let Some(existing) = servers.get(name) else {
        servers.append(name, input(&Value::Object(ours.clone())));
        return Ok((Outcome::Added, print(&parsed), None));
    };
    let old = existing
        .value()
        .and_then(|v| v.to_serde_value())
        .unwrap_or(Value::Null);
    let (Some(old), Some(node)) = (old.as_object(), existing.object_value()) else {
        return Err(not_ours(path, name, None));
    };
    let (command, old_args) = command_of(layout.shape, old);
    if !command.is_some_and(|c| runs_us(c, opts.own)) {
        return Err(not_ours(path, name, command));
    }
    let note = repoint(path, name, served_manifest(old_args), &entry.args, opts)?;
    let new = merged(layout.shape, old, ours);
    if &new == old {
        return Ok((Outcome::Unchanged, text.to_owned(), note));
    }
    // Only the keys whose value changes are written: the rest of the entry keeps its layout.
    for (k, v) in &new {
        match node.get(k) {
            Some(prop) => {
                let same = prop.value().and_then(|x| x.to_serde_value()).as_ref() == Some(v);
                if !same {
                    prop.set_value(input(v));
                }
            }
            None => {
                node.append(k, input(v));
            }
        }
    }
    Ok((Outcome::Updated, print(&parsed), note))
}

/// What [`remove`] leaves.
pub(crate) struct Removed {
    pub text: String,
    /// The file now holds nothing but an empty servers object (or nothing at all).
    pub empty: bool,
}

/// Removes `name` if it is there and runs mcp-manifest; `None` when there was nothing to remove.
pub(crate) fn remove(
    text: &str,
    path: &Path,
    layout: Layout,
    name: &str,
    own: &Path,
    drop_empty_key: bool,
) -> Result<Option<Removed>, String> {
    let Some(parsed) = parse(text, path, layout.jsonc)? else {
        return Ok(None);
    };
    let Some(servers) = parsed.object.get(layout.key) else {
        return Ok(None);
    };
    let servers = servers
        .object_value()
        .ok_or_else(|| not_an_object(path, layout.key))?;
    let Some(existing) = servers.get(name) else {
        return Ok(None);
    };
    let old = existing.value().and_then(|v| v.to_serde_value());
    let command = old
        .as_ref()
        .and_then(Value::as_object)
        .and_then(|o| command_of(layout.shape, o).0);
    if !command.is_some_and(|c| runs_us(c, own)) {
        return Err(not_ours(path, name, command));
    }
    existing.remove();
    // The servers key goes too when register added it and it is empty now: the file reads as
    // it did before.
    if drop_empty_key
        && servers.properties().is_empty()
        && let Some(prop) = parsed.object.get(layout.key)
    {
        prop.remove();
    }
    let rest = parsed.root.to_serde_value().unwrap_or(Value::Null);
    // Clients stamp files they read with metadata (Qwen Code `"$version"`, opencode
    // `"$schema"`): such keys are no setting of the user's.
    let empty = match rest.as_object() {
        Some(o) => o.iter().all(|(k, v)| {
            k.starts_with('$') || (k == layout.key && v.as_object().is_some_and(Map::is_empty))
        }),
        None => false,
    };
    Ok(Some(Removed {
        text: print(&parsed),
        empty,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> &'static Path {
        Path::new("/bin/mcp-manifest")
    }

    fn opts() -> Opts<'static> {
        Opts {
            own: own(),
            replace: false,
            project: Path::new("/p"),
        }
    }

    fn entry() -> Entry {
        Entry {
            command: "/bin/mcp-manifest".into(),
            args: vec!["serve".into(), "/p/mcp-server.toml".into()],
            env: vec![],
        }
    }

    const PLAIN: Layout = Layout {
        key: "mcpServers",
        shape: Shape::Plain,
        jsonc: false,
    };
    const VSCODE: Layout = Layout {
        key: "servers",
        shape: Shape::Stdio,
        jsonc: true,
    };

    #[test]
    fn edits_keep_everything_else_and_refuse_what_is_not_ours() {
        let p = Path::new("/c.json");
        let text = r#"{"zeta": 1, "mcpServers": {"other": {"command": "npx", "args": ["x"]}}, "alpha": [1, 2]}"#;
        let (o, new, _) = set(text, p, PLAIN, "acme", &entry(), opts()).unwrap();
        assert_eq!(o, Outcome::Added);
        let v: Value = serde_json::from_str(&new).unwrap();
        assert_eq!(v["zeta"], 1);
        assert_eq!(v["alpha"], serde_json::json!([1, 2]));
        assert_eq!(v["mcpServers"]["other"]["command"], "npx");
        assert_eq!(v["mcpServers"]["acme"]["args"][0], "serve");
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["zeta", "mcpServers", "alpha"]);
        let (o, again, _) = set(&new, p, PLAIN, "acme", &entry(), opts()).unwrap();
        assert_eq!((o, again), (Outcome::Unchanged, new.clone()));
        assert!(set(&new, p, PLAIN, "other", &entry(), opts()).is_err());
        assert!(remove(&new, p, PLAIN, "other", own(), false).is_err());
        let removed = remove(&new, p, PLAIN, "acme", own(), false)
            .unwrap()
            .unwrap();
        assert!(!removed.empty);
        assert_eq!(
            serde_json::from_str::<Value>(&removed.text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        assert!(
            remove(&removed.text, p, PLAIN, "acme", own(), false)
                .unwrap()
                .is_none()
        );
        // Strict clients: a trailing comma or a comment is refused, naming line and column.
        let err = set("{\"a\": 1,}", p, PLAIN, "acme", &entry(), opts()).unwrap_err();
        assert!(err.starts_with("/c.json:1:"), "{err}");
        assert!(err.contains("strict JSON"), "{err}");
        assert!(set("// c\n{}", p, PLAIN, "acme", &entry(), opts()).is_err());
        assert!(set("[]", p, PLAIN, "acme", &entry(), opts()).is_err());
        assert!(set("{\"mcpServers\": 3}", p, PLAIN, "acme", &entry(), opts()).is_err());
        // An empty file (a BOM only) gets the entry; the BOM is kept.
        let (o, fresh, _) = set("\u{feff}", p, VSCODE, "acme", &entry(), opts()).unwrap();
        assert_eq!(o, Outcome::Added);
        let fresh = fresh.strip_prefix('\u{feff}').unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(fresh).unwrap()["servers"]["acme"]["type"],
            "stdio"
        );
        let removed = remove(fresh, p, VSCODE, "acme", own(), true)
            .unwrap()
            .unwrap();
        assert!(removed.empty, "{}", removed.text);
        assert_eq!(removed.text.trim(), "{}");
    }

    #[test]
    fn jsonc_comments_and_trailing_commas_are_kept_and_the_entry_edited_in_place() {
        let p = Path::new("/.vscode/mcp.json");
        let text = "// Workspace servers\n{\n  \"servers\": {\n    // the linter\n    \"lint\": {\"type\": \"stdio\", \"command\": \"npx\", \"args\": [\"lint\"],}, // trailing\n  },\n  /* inputs */ \"inputs\": [],\n}\n";
        let (o, new, _) = set(text, p, VSCODE, "acme", &entry(), opts()).unwrap();
        assert_eq!(o, Outcome::Added);
        for kept in [
            "// Workspace servers\n",
            "    // the linter\n",
            "\"args\": [\"lint\"],}, // trailing\n",
            "/* inputs */ \"inputs\": [],\n",
        ] {
            assert!(new.contains(kept), "{kept:?} in {new}");
        }
        assert!(new.contains("\"acme\""), "{new}");
        // Its own key changed in place: a comment inside our entry survives an update.
        let with_comment = new.replace(
            "\"command\": \"/bin/mcp-manifest\"",
            "\"command\": \"/bin/mcp-manifest\" /* ours */",
        );
        assert!(with_comment.contains("/* ours */"), "{with_comment}");
        let mut moved = entry();
        moved.env = vec![("K".into(), "v".into())];
        let (o, updated, _) = set(&with_comment, p, VSCODE, "acme", &moved, opts()).unwrap();
        assert_eq!(o, Outcome::Updated);
        assert!(updated.contains("/* ours */"), "{updated}");
        assert!(updated.contains("\"K\": \"v\""), "{updated}");
        let removed = remove(&updated, p, VSCODE, "acme", own(), false)
            .unwrap()
            .unwrap();
        assert_eq!(removed.text, text);
        assert!(!removed.empty);
    }

    #[test]
    fn rewrites_keep_bom_line_ends_and_indentation() {
        let p = Path::new("/c.json");
        for (text, indent) in [
            ("\u{feff}{\"mcpServers\": {}}\n", None),
            (
                "{\r\n    \"mcpServers\": {\r\n        \"x\": {\"command\": \"npx\"}\r\n    }\r\n}\r\n",
                Some("    "),
            ),
            (
                "{\n\t\"mcpServers\": {\n\t\t\"x\": {}\n\t},\n\t\"a\": 1\n}",
                Some("\t"),
            ),
            (
                "{\n  \"mcpServers\": {\n    \"x\": {}\n  }\n}\n",
                Some("  "),
            ),
        ] {
            let (_, new, _) = set(text, p, PLAIN, "acme", &entry(), opts()).unwrap();
            assert_eq!(new.starts_with('\u{feff}'), text.starts_with('\u{feff}'));
            let crlf = text.contains("\r\n");
            assert_eq!(new.contains("\r\n"), crlf, "{new:?}");
            if crlf {
                assert!(!new.replace("\r\n", "").contains('\n'), "{new:?}");
            }
            assert_eq!(new.ends_with('\n'), text.ends_with('\n'), "{new:?}");
            if let Some(indent) = indent {
                assert!(
                    new.contains(&format!("\n{indent}{indent}\"acme\"")),
                    "{new:?}"
                );
            }
            let removed = remove(&new, p, PLAIN, "acme", own(), false)
                .unwrap()
                .unwrap();
            assert_eq!(removed.text, text);
        }
    }

    #[test]
    fn opencode_and_copilot_shapes() {
        let p = Path::new("/opencode.json");
        let oc = Layout {
            key: "mcp",
            shape: Shape::Opencode,
            jsonc: true,
        };
        let mut e = entry();
        e.env = vec![("K".into(), "v".into())];
        let (_, text, _) = set("{}", p, oc, "acme", &e, opts()).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["mcp"]["acme"],
            serde_json::json!({"type": "local", "command": ["/bin/mcp-manifest", "serve", "/p/mcp-server.toml"], "environment": {"K": "v"}, "enabled": true})
        );
        // The user's `enabled: false` is kept on a later register.
        let off = text.replace("\"enabled\": true", "\"enabled\": false");
        let (o, _, _) = set(&off, p, oc, "acme", &e, opts()).unwrap();
        assert_eq!(o, Outcome::Unchanged);
        assert!(
            remove(&text, p, oc, "acme", own(), false)
                .unwrap()
                .unwrap()
                .empty
        );
        // Metadata a client stamps on the file is no setting: still empty.
        let stamped = text.replacen(
            '{',
            "{\"$schema\": \"https://opencode.ai/config.json\", \"$version\": 4,",
            1,
        );
        assert!(
            remove(&stamped, p, oc, "acme", own(), false)
                .unwrap()
                .unwrap()
                .empty
        );
        let more = text.replacen('{', "{\"theme\": \"dark\",", 1);
        assert!(
            !remove(&more, p, oc, "acme", own(), false)
                .unwrap()
                .unwrap()
                .empty
        );
        let cp = Layout {
            key: "mcpServers",
            shape: Shape::CopilotLocal,
            jsonc: false,
        };
        let (_, text, _) = set("", p, cp, "acme", &entry(), opts()).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["mcpServers"]["acme"]["type"], "local");
        assert_eq!(v["mcpServers"]["acme"]["tools"], serde_json::json!(["*"]));
    }
}
