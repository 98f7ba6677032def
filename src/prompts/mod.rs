//! Prompts (`[prompts.NAME]`): arguments, and messages with `{arg}` substitution by the brace
//! rules of `tools::argv`. Pure: reading the resources a message embeds is the registry's job.

use std::collections::HashMap;

use crate::argv::{self, Kind, Piece};
use crate::manifest::{self, Diagnostics, MessageContent, Role};
use crate::providers::{Completion, RequestError, encode_path};
use crate::quote::{Quote, at_most_reported, quote};

/// A prompt as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptInfo {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub arguments: Vec<ArgInfo>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ArgInfo {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
}

/// One rendered message: text, the URI of a resource to embed, or a file of a `[files]` source
/// by its relative path.
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    Text {
        role: Role,
        text: String,
    },
    Resource {
        role: Role,
        uri: String,
    },
    File {
        role: Role,
        source: String,
        path: String,
    },
}

/// A checked prompt, ready to render.
#[derive(Debug, Clone)]
pub struct PromptDef {
    info: PromptInfo,
    completions: HashMap<String, Vec<String>>,
    /// Arguments completed from a `[files]` source's paths: argument → source name.
    complete_from: HashMap<String, String>,
    defaults: HashMap<String, String>,
    messages: Vec<(Role, Body)>,
}

#[derive(Debug, Clone)]
enum Body {
    Text(Vec<Piece>),
    Resource(Vec<Piece>),
    File { source: String, path: Vec<Piece> },
}

impl PromptDef {
    /// Checks every `{name}` against the declared arguments; problems go to `diags`.
    pub fn build(def: &manifest::Prompt, diags: &mut Diagnostics) -> Option<PromptDef> {
        let declared: Vec<(String, Kind)> = def
            .args
            .iter()
            .map(|a| (a.name.clone(), Kind::One))
            .collect();
        let mut ok = true;
        let mut messages = Vec::new();
        for m in &def.messages {
            let text = match &m.content {
                MessageContent::Text(t) | MessageContent::Resource(t) => t,
                MessageContent::File { path, .. } => path,
            };
            let pieces = argv::parse(text);
            for e in argv::check_names(&pieces, &declared, "argument") {
                diags.push(m.content_loc, format!("prompt `{}`: {e}", def.name));
                ok = false;
            }
            let body = match &m.content {
                MessageContent::Text(_) => Body::Text(pieces),
                MessageContent::Resource(_) => Body::Resource(pieces),
                MessageContent::File { source, .. } => Body::File {
                    source: source.clone(),
                    path: pieces,
                },
            };
            messages.push((m.role, body));
        }
        ok.then(|| PromptDef {
            info: PromptInfo {
                name: def.name.clone(),
                title: def.title.clone(),
                description: def.description.clone(),
                arguments: def
                    .args
                    .iter()
                    .map(|a| ArgInfo {
                        name: a.name.clone(),
                        // Clients show no defaults: say it where people read.
                        description: match (&a.description, &a.default) {
                            (d, None) => d.clone(),
                            (None, Some(v)) => Some(format!("Default: {v}")),
                            (Some(d), Some(v)) => Some(format!("{d} (default: {v})")),
                        },
                        // A default fills a missing argument, so clients need not ask for it.
                        required: a.required && a.default.is_none(),
                    })
                    .collect(),
            },
            completions: def
                .args
                .iter()
                .filter(|a| !a.completions.is_empty())
                .map(|a| (a.name.clone(), a.completions.clone()))
                .collect(),
            complete_from: def
                .args
                .iter()
                .filter_map(|a| Some((a.name.clone(), a.complete_from.clone()?)))
                .collect(),
            defaults: def
                .args
                .iter()
                .filter_map(|a| Some((a.name.clone(), a.default.clone()?)))
                .collect(),
            messages,
        })
    }

    pub fn info(&self) -> &PromptInfo {
        &self.info
    }

    pub fn name(&self) -> &str {
        &self.info.name
    }

    pub fn has_completions(&self) -> bool {
        !self.completions.is_empty() || !self.complete_from.is_empty()
    }

    /// The `[files]` source whose paths complete `arg`, if it has `complete_from`.
    pub fn complete_from(&self, arg: &str) -> Option<&str> {
        self.complete_from.get(arg).map(String::as_str)
    }

    /// The messages for `args`. An empty value counts as not given (client forms send `""` for
    /// fields left blank); an argument not given takes its `default`. A missing required
    /// argument or an unknown one is invalid params. An optional argument with neither value
    /// nor default leaves no hole in text (see `fill_text`) and is empty elsewhere. In a
    /// resource URI the value is percent-encoded (keeping `/`, so `file://{path}` takes an
    /// absolute path); in a `file` path it is taken as it is.
    pub fn render(&self, args: &HashMap<String, String>) -> Result<Vec<Rendered>, RequestError> {
        let name = &self.info.name;
        let given = |n: &str| {
            args.get(n)
                .filter(|v| !v.is_empty())
                .or_else(|| self.defaults.get(n))
                .cloned()
        };
        let mut problems = Vec::new();
        for a in &self.info.arguments {
            if a.required && given(&a.name).is_none() {
                problems.push(format!("missing required argument `{}`", a.name));
            }
        }
        for given in args.keys() {
            if !self.info.arguments.iter().any(|a| &a.name == given) {
                let known: Vec<String> = self
                    .info
                    .arguments
                    .iter()
                    .map(|a| format!("`{}`", a.name))
                    .collect();
                let given = quote(given, Quote::Code);
                problems.push(if known.is_empty() {
                    format!("unknown argument {given}: this prompt takes no arguments")
                } else {
                    format!(
                        "unknown argument {given}; the arguments are: {}",
                        known.join(", ")
                    )
                });
            }
        }
        if !problems.is_empty() {
            problems.sort();
            return Err(RequestError::InvalidParams(format!(
                "prompt `{name}`: {}",
                at_most_reported(problems).join("; ")
            )));
        }
        let value = |n: &str| given(n).unwrap_or_default();
        Ok(self
            .messages
            .iter()
            .map(|(role, body)| match body {
                Body::Text(pieces) => Rendered::Text {
                    role: *role,
                    text: fill_text(pieces, given),
                },
                Body::Resource(pieces) => Rendered::Resource {
                    role: *role,
                    uri: argv::substitute(pieces, |n| encode_path(&value(n))),
                },
                Body::File { source, path } => Rendered::File {
                    role: *role,
                    source: source.clone(),
                    path: argv::substitute(path, value),
                },
            })
            .collect())
    }

    /// Completes argument `arg` from its declared `completions`, by prefix.
    pub fn complete(&self, arg: &str, prefix: &str) -> Result<Completion, RequestError> {
        if !self.info.arguments.iter().any(|a| a.name == arg) {
            return Err(RequestError::InvalidParams(format!(
                "prompt `{}` has no argument {}",
                self.info.name,
                quote(arg, Quote::Code)
            )));
        }
        let values = self.completions.get(arg).map(Vec::as_slice).unwrap_or(&[]);
        Ok(Completion::from_candidates(values, prefix))
    }
}

/// Text with every placeholder replaced. A placeholder without a value leaves no hole: the
/// quotes or brackets right around it go with it, and so does the space that would double
/// (`a {x} b` → `a b`) or stand before punctuation or the end of a line (`for {x}.` → `for.`).
fn fill_text(pieces: &[Piece], value: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut hole = false;
    for p in pieces {
        match p {
            Piece::Var(v) => match value(v) {
                Some(x) => {
                    out.push_str(&x);
                    hole = false;
                }
                None => hole = true,
            },
            Piece::Lit(l) => {
                let rest = if hole { close_hole(&mut out, l) } else { l };
                out.push_str(rest);
                hole = false;
            }
        }
    }
    if hole {
        close_hole(&mut out, "");
    }
    out
}

/// Joins the text before an empty placeholder (`out`) with the text after it (`next`), and
/// returns what of `next` remains.
fn close_hole<'a>(out: &mut String, mut next: &'a str) -> &'a str {
    const PAIRS: [(char, char); 7] = [
        ('"', '"'),
        ('\'', '\''),
        ('`', '`'),
        ('(', ')'),
        ('[', ']'),
        ('\u{201c}', '\u{201d}'),
        ('\u{2018}', '\u{2019}'),
    ];
    for (open, close) in PAIRS {
        if out.ends_with(open) && next.starts_with(close) {
            out.pop();
            next = &next[close.len_utf8()..];
            break;
        }
    }
    let blank = [' ', '\t'];
    let spaced = out.ends_with(blank) || next.starts_with(blank);
    let keep = out.trim_end_matches(blank).len();
    out.truncate(keep);
    next = next.trim_start_matches(blank);
    let line_start = out.is_empty() || out.ends_with('\n');
    let tight =
        next.is_empty() || next.starts_with(['\n', '\r', '.', ',', ';', ':', '!', '?', ')', ']']);
    if spaced && !line_start && !tight {
        out.push(' ');
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn build(text: &str) -> Result<PromptDef, String> {
        let m = manifest::load_str(
            text,
            "p.toml",
            Path::new("/m/p.toml"),
            Path::new("/m"),
            &|_| None,
        )
        .map_err(|d| d.to_string())?;
        let mut diags = Diagnostics::new("p.toml");
        let def = PromptDef::build(&m.prompts[0], &mut diags);
        def.ok_or_else(|| diags.to_string())
    }

    const REVIEW: &str = r#"
[prompts.review]
description = "Review one file"
args.path = { description = "File to review", required = true, completions = ["src/a.rs", "src/b.rs", "README.md"] }
args.focus = { description = "What to look at" }
messages = [
  { role = "user", text = "Review {path} for {focus}. Keep {{braces}} and {\"json\": 1}." },
  { role = "user", resource = "file://{path}" },
]
"#;

    #[test]
    fn renders_text_and_resource_uris() {
        let p = build(REVIEW).unwrap();
        assert_eq!(p.info().arguments.len(), 2);
        assert!(p.info().arguments[0].required);
        let mut args = HashMap::new();
        args.insert("path".to_owned(), "/tmp/a b#1.rs".to_owned());
        let out = p.render(&args).unwrap();
        assert_eq!(
            out,
            [
                Rendered::Text {
                    role: Role::User,
                    text: "Review /tmp/a b#1.rs for. Keep {braces} and {\"json\": 1}.".into()
                },
                Rendered::Resource {
                    role: Role::User,
                    uri: "file:///tmp/a%20b%231.rs".into()
                },
            ]
        );
    }

    #[test]
    fn an_argument_without_value_leaves_no_hole() {
        let fill = |text: &str| fill_text(&argv::parse(text), |n| (n == "x").then(|| "X".into()));
        for (text, want) in [
            ("a {y} b", "a b"),
            ("{y} starts", "starts"),
            ("ends {y}", "ends"),
            ("for {y}.", "for."),
            ("say \"{y}\" now", "say now"),
            ("say '{y}', then", "say, then"),
            ("x ({y}) y", "x y"),
            ("[{y}]", ""),
            ("line {y}\nnext {y} one", "line\nnext one"),
            ("{x} and {y}", "X and"),
            ("{y}{x}", "X"),
            ("a  {y}  b", "a b"),
            ("keep {x}.", "keep X."),
        ] {
            assert_eq!(fill(text), want, "{text:?}");
        }
    }

    #[test]
    fn missing_and_unknown_arguments_are_invalid_params() {
        let p = build(REVIEW).unwrap();
        let e = p.render(&HashMap::new()).unwrap_err();
        assert_eq!(
            e,
            RequestError::InvalidParams("prompt `review`: missing required argument `path`".into())
        );
        let mut args = HashMap::new();
        args.insert("path".to_owned(), "x".to_owned());
        args.insert("pth".to_owned(), "x".to_owned());
        assert!(
            matches!(p.render(&args), Err(RequestError::InvalidParams(m)) if m.contains("unknown argument `pth`"))
        );
    }

    #[test]
    fn completes_by_prefix() {
        let p = build(REVIEW).unwrap();
        assert_eq!(
            p.complete("path", "src/").unwrap().values,
            ["src/a.rs", "src/b.rs"]
        );
        assert!(p.complete("focus", "").unwrap().values.is_empty());
        assert!(p.complete("nope", "").is_err());
    }

    #[test]
    fn unknown_placeholders_are_manifest_errors() {
        let e = build(
            "[prompts.p]\nargs.path = {}\nmessages = [{ role = \"user\", text = \"see {pth}\" }]\n",
        )
        .unwrap_err();
        assert_eq!(
            e.trim(),
            "p.toml:3:37: prompt `p`: `{pth}` names no declared argument, did you mean `{path}`? (write `{{` and `}}` for literal braces)"
        );
    }
}
