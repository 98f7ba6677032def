//! Prompts (`[prompts.NAME]`): arguments, and messages with `{arg}` substitution by the brace
//! rules of `tools::argv`. Pure: reading the resources a message embeds is the registry's job.

use std::collections::HashMap;

use crate::argv::{self, Kind, Piece};
use crate::manifest::{self, Diagnostics, MessageContent, Role};
use crate::providers::{Completion, RequestError, encode_path};

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

/// One rendered message: text, or the URI of a resource to embed.
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    Text { role: Role, text: String },
    Resource { role: Role, uri: String },
}

/// A checked prompt, ready to render.
#[derive(Debug, Clone)]
pub struct PromptDef {
    info: PromptInfo,
    completions: HashMap<String, Vec<String>>,
    messages: Vec<(Role, Body)>,
}

#[derive(Debug, Clone)]
enum Body {
    Text(Vec<Piece>),
    Resource(Vec<Piece>),
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
            let (text, make): (&str, fn(Vec<Piece>) -> Body) = match &m.content {
                MessageContent::Text(t) => (t, Body::Text),
                MessageContent::Resource(r) => (r, Body::Resource),
            };
            let pieces = argv::parse(text);
            for e in argv::check_names(&pieces, &declared, "argument") {
                diags.push(m.content_loc, format!("prompt `{}`: {e}", def.name));
                ok = false;
            }
            messages.push((m.role, make(pieces)));
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
                        description: a.description.clone(),
                        required: a.required,
                    })
                    .collect(),
            },
            completions: def
                .args
                .iter()
                .filter(|a| !a.completions.is_empty())
                .map(|a| (a.name.clone(), a.completions.clone()))
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
        !self.completions.is_empty()
    }

    /// The messages for `args`. A missing required argument or an unknown one is invalid params;
    /// an optional argument that is not given reads as empty text. In a resource URI the value
    /// is percent-encoded (keeping `/`, so `file://{path}` takes an absolute path).
    pub fn render(&self, args: &HashMap<String, String>) -> Result<Vec<Rendered>, RequestError> {
        let name = &self.info.name;
        let mut problems = Vec::new();
        for a in &self.info.arguments {
            if a.required && !args.contains_key(&a.name) {
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
                problems.push(if known.is_empty() {
                    format!("unknown argument `{given}`: this prompt takes no arguments")
                } else {
                    format!(
                        "unknown argument `{given}`; the arguments are: {}",
                        known.join(", ")
                    )
                });
            }
        }
        if !problems.is_empty() {
            problems.sort();
            return Err(RequestError::InvalidParams(format!(
                "prompt `{name}`: {}",
                problems.join("; ")
            )));
        }
        let value = |n: &str| args.get(n).cloned().unwrap_or_default();
        Ok(self
            .messages
            .iter()
            .map(|(role, body)| match body {
                Body::Text(pieces) => Rendered::Text {
                    role: *role,
                    text: argv::substitute(pieces, value),
                },
                Body::Resource(pieces) => Rendered::Resource {
                    role: *role,
                    uri: argv::substitute(pieces, |n| encode_path(&value(n))),
                },
            })
            .collect())
    }

    /// Completes argument `arg` from its declared `completions`, by prefix.
    pub fn complete(&self, arg: &str, prefix: &str) -> Result<Completion, RequestError> {
        if !self.info.arguments.iter().any(|a| a.name == arg) {
            return Err(RequestError::InvalidParams(format!(
                "prompt `{}` has no argument `{arg}`",
                self.info.name
            )));
        }
        let values = self.completions.get(arg).map(Vec::as_slice).unwrap_or(&[]);
        Ok(Completion::from_candidates(values, prefix))
    }
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
                    text: "Review /tmp/a b#1.rs for . Keep {braces} and {\"json\": 1}.".into()
                },
                Rendered::Resource {
                    role: Role::User,
                    uri: "file:///tmp/a%20b%231.rs".into()
                },
            ]
        );
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
