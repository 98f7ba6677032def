//! `{name}` placeholders: the brace rules, and a `command` array turned into argv for given
//! values. Pure. Tools, `command` templates and prompt messages share these rules.
//!
//! # Brace rules
//!
//! `{name}` (a letter or `_`, then letters, digits and `_`) is a placeholder; `{{` and `}}` are a
//! literal `{` and `}`; any other brace (JSON text, `{}`, `{a,b}`, `{ x }`) is literal.
//!
//! # argv
//!
//! Each placeholder becomes part of exactly one argv element, whatever the value holds: values
//! never pass through a shell or a splitter. An element (or a group of elements, written as a
//! nested array) that names a parameter without a value is dropped as a whole. An array value
//! repeats the element (or group) once per item, and drops it when the array is empty.
//!
//! # A value cannot become an option
//!
//! A value whose text would be the first character of an argv element and begins with `-` (on
//! Windows also `/`, `process::OPTION_PREFIXES`) is refused (`--output=FILE` given as a branch name would be read by `git` as an option), unless a
//! literal `--` element (one with no placeholder) comes earlier in the argv actually built, or
//! the name is allowed to (`allow_dash = true`). A `-` later in an element (`{base}...{head}`
//! with `head = "-x"`, `--name={x}`) is only data and is always fine.

use std::collections::HashMap;

use crate::manifest::{ArgvItem, Loc, diag::did_you_mean};

/// A piece of text: literal, or a placeholder naming a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Lit(String),
    Var(String),
}

/// Splits `text` into literal text and placeholders by the brace rules; a placeholder names a
/// parameter (`[A-Za-z_][A-Za-z0-9_]*`).
pub fn parse(text: &str) -> Vec<Piece> {
    parse_with(text, is_param_name)
}

/// The brace rules with another notion of a name (URI template variables allow digits first
/// and dots): `{name}` is a placeholder, `{{` / `}}` literal braces, any other brace literal.
pub fn parse_with(text: &str, is_name: fn(&str) -> bool) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("{{") {
            lit.push('{');
            rest = after;
        } else if let Some(after) = rest.strip_prefix("}}") {
            lit.push('}');
            rest = after;
        } else if let Some((name, after)) = placeholder(rest, is_name) {
            if !lit.is_empty() {
                pieces.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            pieces.push(Piece::Var(name.to_owned()));
            rest = after;
        } else {
            lit.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if !lit.is_empty() {
        pieces.push(Piece::Lit(lit));
    }
    pieces
}

/// `{name}` at the start of `s`: the name and what follows the closing brace.
fn placeholder(s: &str, is_name: fn(&str) -> bool) -> Option<(&str, &str)> {
    let body = s.strip_prefix('{')?;
    let end = body.find('}')?;
    let name = &body[..end];
    is_name(name).then(|| (name, &body[end + 1..]))
}

fn is_param_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The placeholders of `pieces`, in order.
pub fn vars(pieces: &[Piece]) -> impl Iterator<Item = &str> {
    pieces.iter().filter_map(|p| match p {
        Piece::Var(v) => Some(v.as_str()),
        Piece::Lit(_) => None,
    })
}

/// Whether a declared name takes one value or a list (an array parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    One,
    Many,
}

/// The value of a parameter, already converted to text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    One(String),
    Many(Vec<String>),
}

impl Value {
    /// As one string: a list is one item a line (how `run` scripts receive arrays).
    pub fn joined(&self) -> String {
        match self {
            Value::One(s) => s.clone(),
            Value::Many(items) => items.join("\n"),
        }
    }
}

/// The first value holding a NUL character, which no program can receive (argv elements and
/// environment variables are C strings): its name.
pub fn with_nul(values: &HashMap<String, Value>) -> Option<&str> {
    let mut names: Vec<&String> = values.keys().collect();
    names.sort();
    names
        .into_iter()
        .map(String::as_str)
        .find(|n| match &values[*n] {
            Value::One(s) => s.contains('\0'),
            Value::Many(items) => items.iter().any(|s| s.contains('\0')),
        })
}

/// Whether the system would refuse to start `program` with `args` and the inherited environment
/// plus `env` because they are too large (`E2BIG`): a message saying which limit, else `None`.
/// Checked before spawning, so a value that cannot be passed is the caller's invalid input, not a
/// failure to start.
pub fn too_large(program: &str, args: &[String], env: &[(String, String)]) -> Option<String> {
    if let Some(max) = crate::process::MAX_ARG_LEN {
        if let Some((i, a)) = args.iter().enumerate().find(|(_, a)| a.len() >= max) {
            return Some(format!(
                "argument {} would be {} bytes, more than the {} bytes the system passes in one argument",
                i + 1,
                a.len(),
                max - 1
            ));
        }
        if let Some((k, v)) = env.iter().find(|(k, v)| k.len() + 1 + v.len() >= max) {
            return Some(format!(
                "the environment variable `{k}` would be {} bytes, more than the {} bytes the system passes in one variable",
                k.len() + 1 + v.len(),
                max - 1
            ));
        }
    }
    let strings = crate::process::arg_size;
    let argv: usize = std::iter::once(program.len())
        .chain(args.iter().map(String::len))
        .map(strings)
        .sum();
    let total = if crate::process::ENV_IN_ARG_MAX {
        let inherited = crate::process::inherited()
            .size_without(env.iter().map(|(n, _)| std::ffi::OsStr::new(n.as_str())));
        let added: usize = env
            .iter()
            .map(|(k, v)| strings(k.len() + 1 + v.len()))
            .sum();
        argv + inherited + added
    } else {
        argv
    };
    let limit = crate::process::arg_max();
    (total > limit).then(|| {
        format!(
            "the command line would be {total} bytes{}, more than the {limit} bytes the system allows",
            if crate::process::ENV_IN_ARG_MAX { " with the environment" } else { "" }
        )
    })
}

/// Checks each placeholder of `pieces` against `declared`; returns an error message per problem.
pub fn check_names(pieces: &[Piece], declared: &[(String, Kind)], what: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for var in vars(pieces) {
        if !declared.iter().any(|(n, _)| n == var) {
            let names = declared.iter().map(|(n, _)| n.as_str());
            let hint = match did_you_mean(var, names) {
                Some(m) => format!(", did you mean `{{{m}}}`?"),
                None if declared.is_empty() => format!("; there are no {what}s"),
                None => format!(
                    "; the {what}s are: {}",
                    declared
                        .iter()
                        .map(|(n, _)| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            errors.push(format!(
                "`{{{var}}}` names no declared {what}{hint} (write `{{{{` and `}}}}` for literal braces)"
            ));
        }
    }
    errors
}

/// A `command` array compiled against the names it may use.
#[derive(Debug, Clone, PartialEq)]
pub struct Argv {
    program: String,
    items: Vec<Vec<Vec<Piece>>>,
}

impl Argv {
    /// Compiles `argv` (program first) against `declared`. Errors carry the place of the element.
    /// `what` names the declared things in messages ("parameter", "variable").
    pub fn compile(
        argv: &[ArgvItem],
        declared: &[(String, Kind)],
        what: &str,
    ) -> Result<Argv, Vec<(Loc, String)>> {
        let mut errors = Vec::new();
        let mut program = String::new();
        let mut items = Vec::new();
        for (i, item) in argv.iter().enumerate() {
            let (members, loc): (Vec<(&str, Loc)>, Loc) = match item {
                ArgvItem::Arg(s, loc) => (vec![(s.as_str(), *loc)], *loc),
                ArgvItem::Group(list, loc) => {
                    (list.iter().map(|(s, l)| (s.as_str(), *l)).collect(), *loc)
                }
            };
            let mut parsed = Vec::new();
            for (text, at) in members {
                let pieces = parse(text);
                errors.extend(
                    check_names(&pieces, declared, what)
                        .into_iter()
                        .map(|m| (at, m)),
                );
                parsed.push(pieces);
            }
            if i == 0 {
                let pieces = parsed.pop().unwrap_or_default();
                if vars(&pieces).next().is_some() {
                    errors.push((
                        loc,
                        format!(
                            "the program (the first element of `command`) cannot hold a `{{{what}}}`; name the program and pass values as arguments"
                        ),
                    ));
                }
                program = pieces
                    .into_iter()
                    .map(|p| match p {
                        Piece::Lit(s) | Piece::Var(s) => s,
                    })
                    .collect();
                continue;
            }
            let many: Vec<&str> = {
                let mut names: Vec<&str> = parsed
                    .iter()
                    .flat_map(|p| vars(p))
                    .filter(|v| declared.iter().any(|(n, k)| n == v && *k == Kind::Many))
                    .collect();
                names.sort_unstable();
                names.dedup();
                names
            };
            if many.len() > 1 {
                errors.push((
                    loc,
                    format!(
                        "one element (or group) of `command` can repeat over one array parameter, not {}: {}",
                        many.len(),
                        many.iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            items.push(parsed);
        }
        if errors.is_empty() {
            Ok(Argv { program, items })
        } else {
            Err(errors)
        }
    }

    pub fn program(&self) -> &str {
        &self.program
    }

    /// The arguments (after the program) for `values`; a name missing from `values` has no value.
    /// A value that would begin an element with `-` (see the module doc) is refused with its
    /// name, unless `allow_dash(name)` or a literal `--` element came earlier.
    pub fn args(
        &self,
        values: &HashMap<String, Value>,
        allow_dash: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<String>, DashValue> {
        let mut out = Vec::new();
        let mut after_dashdash = false;
        for members in &self.items {
            let names: Vec<&str> = members.iter().flat_map(|p| vars(p)).collect();
            if names.iter().any(|n| !values.contains_key(*n)) {
                continue;
            }
            // A list repeats the element (or group) once per item; with no list, once.
            let repeat = names
                .iter()
                .filter_map(|n| match values.get(*n) {
                    Some(Value::Many(items)) => Some(items.len()),
                    _ => None,
                })
                .min();
            for index in 0..repeat.unwrap_or(1) {
                for pieces in members {
                    if !after_dashdash
                        && let Some((name, value)) = leading_value(pieces, values, index)
                        && value.starts_with(crate::process::OPTION_PREFIXES)
                        && !allow_dash(name)
                    {
                        return Err(DashValue {
                            name: name.to_owned(),
                            value: value.to_owned(),
                        });
                    }
                    let arg = render(pieces, values, index);
                    after_dashdash |= arg == "--" && vars(pieces).next().is_none();
                    out.push(arg);
                }
            }
        }
        Ok(out)
    }
}

/// A value refused because it would begin an argv element with `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashValue {
    pub name: String,
    pub value: String,
}

impl DashValue {
    /// The rule it breaks, in the wording of `params` ("`x` must …"); `noun` is what the user
    /// calls it ("argument", "variable").
    pub fn message(&self, noun: &str) -> String {
        let prefixes: Vec<String> = crate::process::OPTION_PREFIXES
            .iter()
            .map(|c| format!("`{c}`"))
            .collect();
        format!(
            "{noun} `{}` must not begin with {} where it starts a command-line argument (it would be read as an option), got {}; put a literal \"--\" before it in `command` or set `allow_dash = true`",
            self.name,
            prefixes.join(" or "),
            crate::quote::quote(&self.value, crate::quote::Quote::Json)
        )
    }
}

/// The placeholder whose value supplies the first character of the element `pieces` renders to,
/// with that value; `None` when the element starts with literal text or is empty.
fn leading_value<'a>(
    pieces: &'a [Piece],
    values: &'a HashMap<String, Value>,
    index: usize,
) -> Option<(&'a str, &'a str)> {
    for p in pieces {
        match p {
            Piece::Lit(l) if l.is_empty() => {}
            Piece::Lit(_) => return None,
            Piece::Var(v) => {
                let text = match values.get(v) {
                    Some(Value::One(x)) => x.as_str(),
                    Some(Value::Many(items)) => items.get(index).map_or("", String::as_str),
                    None => "",
                };
                if !text.is_empty() {
                    return Some((v.as_str(), text));
                }
            }
        }
    }
    None
}

/// Renders `pieces`; a list value contributes its item `index`. Every name must have a value.
fn render(pieces: &[Piece], values: &HashMap<String, Value>, index: usize) -> String {
    let mut s = String::new();
    for p in pieces {
        match p {
            Piece::Lit(l) => s.push_str(l),
            Piece::Var(v) => match values.get(v) {
                Some(Value::One(x)) => s.push_str(x),
                Some(Value::Many(items)) => s.push_str(items.get(index).map_or("", String::as_str)),
                None => {}
            },
        }
    }
    s
}

/// Substitutes every placeholder of `pieces` with `lookup(name)` (pieces already checked).
pub fn substitute(pieces: &[Piece], lookup: impl Fn(&str) -> String) -> String {
    let mut s = String::new();
    for p in pieces {
        match p {
            Piece::Lit(l) => s.push_str(l),
            Piece::Var(v) => s.push_str(&lookup(v)),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Piece {
        Piece::Lit(s.into())
    }
    fn var(s: &str) -> Piece {
        Piece::Var(s.into())
    }

    #[test]
    fn brace_rules() {
        assert_eq!(parse("a{b}c"), [lit("a"), var("b"), lit("c")]);
        assert_eq!(parse("{{b}}"), [lit("{b}")]);
        assert_eq!(parse("{{{b}}}"), [lit("{"), var("b"), lit("}")]);
        assert_eq!(parse(r#"{"a": 1}"#), [lit(r#"{"a": 1}"#)]);
        assert_eq!(parse("{}"), [lit("{}")]);
        assert_eq!(
            parse("{a,b} { x } {a-b} {9a}"),
            [lit("{a,b} { x } {a-b} {9a}")]
        );
        assert_eq!(parse("${HOME}/x"), [lit("$"), var("HOME"), lit("/x")]);
        assert_eq!(parse("{_a1}{b}"), [var("_a1"), var("b")]);
        assert_eq!(parse("é{x}ü}"), [lit("é"), var("x"), lit("ü}")]);
        assert_eq!(parse("{unclosed"), [lit("{unclosed")]);
        assert_eq!(parse(""), []);
    }

    #[test]
    fn unknown_names_get_a_suggestion() {
        let declared = vec![("pattern".to_owned(), Kind::One)];
        let errs = check_names(&parse("{patern}"), &declared, "parameter");
        assert_eq!(
            errs,
            [
                "`{patern}` names no declared parameter, did you mean `{pattern}`? (write `{{` and `}}` for literal braces)"
            ]
        );
        assert!(check_names(&parse("{{patern}}"), &declared, "parameter").is_empty());
    }

    fn item(s: &str) -> ArgvItem {
        ArgvItem::Arg(s.into(), Loc::default())
    }
    fn group(list: &[&str]) -> ArgvItem {
        ArgvItem::Group(
            list.iter()
                .map(|s| (s.to_string(), Loc::default()))
                .collect(),
            Loc::default(),
        )
    }

    #[test]
    fn optional_elements_and_groups_are_dropped_and_lists_repeat() {
        let declared = vec![
            ("pattern".to_owned(), Kind::One),
            ("max".to_owned(), Kind::One),
            ("globs".to_owned(), Kind::Many),
        ];
        let argv = Argv::compile(
            &[
                item("rg"),
                group(&["--max-count", "{max}"]),
                item("--glob={globs}"),
                group(&["-g", "{globs}"]),
                item("--"),
                item("{pattern}"),
            ],
            &declared,
            "parameter",
        )
        .unwrap();
        assert_eq!(argv.program(), "rg");
        let mut values = HashMap::new();
        values.insert("pattern".to_owned(), Value::One("a b; $(id)".into()));
        assert_eq!(
            argv.args(&values, &|_| false).unwrap(),
            ["--", "a b; $(id)"]
        );
        values.insert("max".to_owned(), Value::One("3".into()));
        values.insert(
            "globs".to_owned(),
            Value::Many(vec!["*.rs".into(), "*.md".into()]),
        );
        assert_eq!(
            argv.args(&values, &|_| false).unwrap(),
            [
                "--max-count",
                "3",
                "--glob=*.rs",
                "--glob=*.md",
                "-g",
                "*.rs",
                "-g",
                "*.md",
                "--",
                "a b; $(id)"
            ]
        );
        values.insert("globs".to_owned(), Value::Many(vec![]));
        assert_eq!(
            argv.args(&values, &|_| false).unwrap(),
            ["--max-count", "3", "--", "a b; $(id)"]
        );
    }

    fn one(pairs: &[(&str, &str)]) -> HashMap<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::One(v.to_string())))
            .collect()
    }

    #[test]
    fn a_value_cannot_begin_an_element_with_a_dash() {
        let declared = vec![
            ("base".to_owned(), Kind::One),
            ("head".to_owned(), Kind::One),
            ("x".to_owned(), Kind::One),
            ("list".to_owned(), Kind::Many),
        ];
        let compile = |items: &[ArgvItem]| Argv::compile(items, &declared, "variable").unwrap();
        let diff = compile(&[item("git"), item("diff"), item("{base}...{head}")]);
        let refused = diff
            .args(
                &one(&[("base", "--output=pwned.txt"), ("head", "HEAD")]),
                &|_| false,
            )
            .unwrap_err();
        assert_eq!(refused.name, "base");
        assert_eq!(refused.value, "--output=pwned.txt");
        assert!(
            refused
                .message("variable")
                .starts_with("variable `base` must not begin with `-`"),
            "{}",
            refused.message("variable")
        );
        // A dash later in the element is data.
        assert_eq!(
            diff.args(&one(&[("base", "main"), ("head", "--x")]), &|_| false)
                .unwrap(),
            ["diff", "main...--x"]
        );
        // An empty value before it does not hide the next one's dash.
        let glued = compile(&[item("sort"), item("{x}{head}")]);
        assert_eq!(
            glued
                .args(&one(&[("x", ""), ("head", "-o/tmp/f")]), &|_| false)
                .unwrap_err()
                .name,
            "head"
        );
        assert!(
            glued
                .args(&one(&[("x", ""), ("head", "-o/tmp/f")]), &|n| n == "head")
                .is_ok()
        );
        // `--` as a literal element before it: fine; `--` after it, or a `--` made by a value:
        // refused.
        let after = compile(&[item("git"), item("grep"), item("--"), item("{x}")]);
        assert_eq!(
            after.args(&one(&[("x", "-Oevil")]), &|_| false).unwrap(),
            ["grep", "--", "-Oevil"]
        );
        let before = compile(&[item("git"), item("grep"), item("{x}"), item("--")]);
        assert!(before.args(&one(&[("x", "-Oevil")]), &|_| false).is_err());
        let made = compile(&[item("prog"), item("{head}"), item("{x}")]);
        assert!(
            made.args(&one(&[("head", "--"), ("x", "-v")]), &|n| n == "head")
                .is_err_and(|d| d.name == "x")
        );
        // Each item of a list is checked where it begins an element; `--name={x}` is fine.
        let lists = compile(&[item("prog"), item("--glob={list}"), item("{list}")]);
        let mut values = HashMap::new();
        values.insert(
            "list".to_owned(),
            Value::Many(vec!["a".into(), "-b".into()]),
        );
        let refused = lists.args(&values, &|_| false).unwrap_err();
        assert_eq!(
            (refused.name.as_str(), refused.value.as_str()),
            ("list", "-b")
        );
        // A lone `-` (stdin for many programs) is a dash too.
        assert!(made.args(&one(&[("head", "-")]), &|_| false).is_err());
        // A switch on Windows (`dir /s`), a path elsewhere.
        let slash = made.args(&one(&[("x", "/s")]), &|_| false);
        if crate::process::OPTION_PREFIXES.contains(&'/') {
            let refused = slash.unwrap_err();
            assert!(refused.message("argument").contains("`-` or `/`"));
        } else {
            assert_eq!(slash.unwrap(), ["/s"]);
        }
    }

    #[test]
    fn sizes_the_system_cannot_pass_are_caught_before_spawning() {
        assert_eq!(too_large("echo", &["hi".into()], &[]), None);
        let big = "x".repeat(200 * 1024);
        let msg = too_large("echo", &["a".into(), big.clone()], &[]).unwrap();
        if crate::process::MAX_ARG_LEN.is_some() {
            assert!(msg.starts_with("argument 2 would be 204800 bytes"), "{msg}");
        }
        let many: Vec<String> = (0..64).map(|_| "y".repeat(100 * 1024)).collect();
        let msg = too_large("echo", &many, &[]).unwrap();
        assert!(msg.starts_with("the command line would be"), "{msg}");
        let env = vec![("BIG".to_owned(), "z".repeat(100 * 1024))];
        assert!(too_large("echo", &[], &env).is_none());
        let env = vec![("BIG".to_owned(), "z".repeat(200 * 1024))];
        if crate::process::MAX_ARG_LEN.is_some() {
            let msg = too_large("sh", &[], &env).unwrap();
            assert!(msg.starts_with("the environment variable `BIG`"), "{msg}");
        }
    }

    #[test]
    fn compile_errors() {
        let declared = vec![("a".to_owned(), Kind::Many), ("b".to_owned(), Kind::Many)];
        let errs = Argv::compile(
            &[item("{a}"), item("{a}{b}"), item("{c}")],
            &declared,
            "parameter",
        )
        .unwrap_err();
        let msgs: Vec<&str> = errs.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert!(msgs[0].starts_with("the program"), "{msgs:?}");
        assert!(msgs[1].contains("one array parameter, not 2"), "{msgs:?}");
        assert!(
            msgs[2].contains("`{c}` names no declared parameter"),
            "{msgs:?}"
        );
    }
}
