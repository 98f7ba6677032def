//! Hints for mistakes whose generic message would suggest the wrong fix: checks of the parsed
//! document made before `${VAR}` expansion and the schema walk, each naming the place and the
//! fix that works.
//!
//! - `${NAME}` in a tool's `run` script or `command`: `${…}` is the manifest's own expansion,
//!   filled from the server's environment when the manifest loads. Naming a parameter there is
//!   an error that says how the parameter does reach the tool (`"$count"` in an `sh` script,
//!   `$env:count` in PowerShell, `!count!` in cmd, `{count}` in `command`); a shell variable of
//!   the script (`${f}` in a loop) that is not in the environment is told to write `$${f}`. Such
//!   a reference is then escaped in the document so the generic expansion error does not repeat
//!   it.
//! - `[[tools]]` (an array of tables) where a section holds named entries: each entry is a
//!   table named by its key, `[tools.NAME]` (`named_section_shape`).

use toml::de::{DeTable, DeValue};

use super::diag::{Diagnostics, SourceMap};

/// A `${…}` reference in a string: where it starts in the value, its variable, and whether it
/// gives a default (`${NAME:-default}`).
struct Reference<'a> {
    at: usize,
    name: &'a str,
    default: bool,
}

/// Every `${NAME}` / `${NAME:-…}` of `s` that expansion would replace (not `$${`).
fn references(s: &str) -> Vec<Reference<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = s[i..].find('$') {
        let at = i + off;
        let after = &s[at + 1..];
        if after.starts_with("${") {
            i = at + 3;
            continue;
        }
        if let Some(body) = after.strip_prefix('{')
            && let Some(end) = body.find('}')
        {
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, _)) => (n, true),
                None => (inner, false),
            };
            out.push(Reference { at, name, default });
            i = at + 2 + end;
            continue;
        }
        i = at + 1;
    }
    out
}

/// How a parameter is written where it does reach the tool.
fn param_form(shell: Option<&str>, name: &str, in_command: bool) -> String {
    if in_command {
        return format!(
            "write `{{{name}}}`: in `command` each `{{param}}` becomes part of one argument"
        );
    }
    match shell {
        Some("powershell" | "pwsh") => {
            format!("parameters reach the script as environment variables: write `$env:{name}`")
        }
        Some("cmd") => {
            format!("parameters reach the script as environment variables: write `!{name}!`")
        }
        _ => format!(
            "parameters reach the script as environment variables: write `\"${name}\"` (or `$${{{name}}}`, which the shell reads as `${{{name}}}`)"
        ),
    }
}

/// The `${…}` mistakes in the `run` scripts and `command` items of `[tools]` (see the module
/// comment). Each is an error at the reference itself; the entry is marked `bad` (set aside
/// for the later checks) and the reference escaped, so expansion reports nothing more for it.
pub(super) fn tool_references(
    doc: &mut DeTable<'_>,
    text: &str,
    map: &SourceMap,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics,
    bad: &mut Vec<usize>,
) {
    let Some((_, tools)) = doc.iter_mut().find(|(k, _)| k.get_ref() == "tools") else {
        return;
    };
    let DeValue::Table(tools) = tools.get_mut() else {
        return;
    };
    for (key, tool) in tools.iter_mut() {
        let tool_name = key.get_ref().to_string();
        let DeValue::Table(t) = tool.get_mut() else {
            continue;
        };
        let params: Vec<String> = t
            .iter()
            .find(|(k, _)| k.get_ref() == "params")
            .and_then(|(_, v)| match v.get_ref() {
                DeValue::Table(p) => Some(p.iter().map(|(k, _)| k.get_ref().to_string()).collect()),
                _ => None,
            })
            .unwrap_or_default();
        let shell = t
            .iter()
            .find(|(k, _)| k.get_ref() == "shell")
            .and_then(|(_, v)| v.get_ref().as_str().map(str::to_owned));
        for (k, value) in t.iter_mut() {
            let field = k.get_ref().to_string();
            let in_command = match field.as_str() {
                "run" => false,
                "command" => true,
                _ => continue,
            };
            let strings: Vec<&mut toml::Spanned<DeValue<'_>>> =
                if matches!(value.get_ref(), DeValue::Array(_)) {
                    match value.get_mut() {
                        DeValue::Array(items) => items.iter_mut().collect(),
                        _ => Vec::new(),
                    }
                } else {
                    vec![value]
                };
            for item in strings {
                let span = item.span();
                let DeValue::String(s) = item.get_mut() else {
                    continue;
                };
                let mut escape = Vec::new();
                for r in references(s) {
                    let declared = params.iter().any(|p| p == r.name);
                    let unset = !r.default && env(r.name).is_none();
                    let message = if declared {
                        format!(
                            "tool `{tool_name}`: `${{{}}}` in `{field}` is the manifest's `${{VAR}}`, filled from the server's environment when the manifest loads, not parameter `{}`; {}",
                            r.name,
                            r.name,
                            param_form(shell.as_deref(), r.name, in_command)
                        )
                    } else if unset && !in_command && super::expand::is_var_name(r.name) {
                        format!(
                            "tool `{tool_name}`: `${{{0}}}` in `run` is the manifest's `${{VAR}}`, filled when the manifest loads, and environment variable `{0}` is not set; for the script's own variable write `$${{{0}}}` (or `${0}`), for the environment give a default: `${{{0}:-value}}`",
                            r.name
                        )
                    } else {
                        continue;
                    };
                    let offset = source_offset(text, span.clone(), r.name).unwrap_or(span.start);
                    diags.push(map.loc(offset), message);
                    bad.push(span.start);
                    escape.push(r.at);
                }
                if !escape.is_empty() {
                    let mut out = s.to_string();
                    for at in escape.into_iter().rev() {
                        out.insert(at, '$');
                    }
                    *s = out.into();
                }
            }
        }
    }
}

/// An entry name as sections take them: `[a-z][a-z0-9_-]*`.
fn is_entry_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// Where the reference to `name` is written in the value at `span` of the source text: the
/// first `${NAME` not escaped as `$${NAME`.
fn source_offset(text: &str, span: std::ops::Range<usize>, name: &str) -> Option<usize> {
    let written = text.get(span.clone())?;
    let needle = format!("${{{name}");
    written
        .match_indices(&needle)
        .find(|(i, _)| !written[..*i].ends_with('$'))
        .map(|(i, _)| span.start + i)
}

/// The hint for a section of named entries written as an array of tables (`[[tools]]`, or
/// `tools = [{ … }]`), to follow "`tools` must be a table, found an array". `section` is the
/// top-level key, `items` the array's values; an entry's `name = "…"` becomes the example's
/// name.
pub(crate) fn named_section_shape(section: &str, items: &[toml::Spanned<DeValue<'_>>]) -> String {
    let named = items.iter().find_map(|item| match item.get_ref() {
        DeValue::Table(t) => t
            .iter()
            .find(|(k, _)| k.get_ref() == "name")
            .and_then(|(_, v)| v.get_ref().as_str().map(str::to_owned))
            .filter(|n| is_entry_name(n)),
        _ => None,
    });
    let (example, name_key) = match named {
        Some(n) => (n, " (the name goes in the header, not in a `name` key)"),
        None => ("NAME".to_owned(), ""),
    };
    format!(
        "; each entry of `[{section}]` is a table named by its key, not an item of an array (`[[{section}]]`): write `[{section}.{example}]`{name_key}"
    )
}

/// The hint for `[[server]]`: one table.
pub(crate) fn single_table_shape(section: &str) -> String {
    format!("; write `[{section}]` (one table), not `[[{section}]]`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_references_expansion_would_replace() {
        let found: Vec<(usize, &str, bool)> = references("a ${x} $${y} ${z:-1} $w ${")
            .into_iter()
            .map(|r| (r.at, r.name, r.default))
            .collect();
        assert_eq!(found, [(2, "x", false), (13, "z", true)]);
    }
}
