//! `[groups.NAME]` and `[server] expose`, checked: which tools, resources and prompts a client
//! sees. A `Filter` is pure data with its globs compiled; the server asks it about every name
//! and URI it lists, reads, calls, completes or notifies (`server/`), and `check` asks it which
//! of its globs match nothing (`check.rs`).
//!
//! One rule for every list: a key left out keeps everything of its kind, `[]` keeps nothing of
//! it, and `exclude` removes names and URIs from what the lists keep. A glob's `*` matches any
//! run of characters, `/` included (a URI's path is not a file system's).

use globset::{GlobBuilder, GlobMatcher};

use super::diag::Loc;
use super::raw::{Key, RawGroup, Sp};

/// One pattern as written, where, and compiled.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub text: String,
    pub loc: Loc,
    matcher: GlobMatcher,
}

impl Pattern {
    pub fn matches(&self, s: &str) -> bool {
        self.matcher.is_match(s)
    }
}

/// Which kind of item a list of patterns is about (for messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tools,
    Resources,
    Prompts,
    Exclude,
}

impl Kind {
    pub fn key(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Resources => "resources",
            Kind::Prompts => "prompts",
            Kind::Exclude => "exclude",
        }
    }
}

/// A subset of what a manifest serves.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// `None`: every tool.
    pub tools: Option<Vec<Pattern>>,
    pub resources: Option<Vec<Pattern>>,
    pub prompts: Option<Vec<Pattern>>,
    pub exclude: Vec<Pattern>,
}

impl Filter {
    /// Everything is seen.
    pub fn everything() -> Filter {
        Filter::default()
    }

    fn keeps(list: &Option<Vec<Pattern>>, exclude: &[Pattern], s: &str) -> bool {
        let listed = match list {
            None => true,
            Some(patterns) => patterns.iter().any(|p| p.matches(s)),
        };
        listed && !exclude.iter().any(|p| p.matches(s))
    }

    pub fn tool(&self, name: &str) -> bool {
        Self::keeps(&self.tools, &self.exclude, name)
    }

    pub fn prompt(&self, name: &str) -> bool {
        Self::keeps(&self.prompts, &self.exclude, name)
    }

    /// A resource URI, or a resource template's URI template.
    pub fn resource(&self, uri: &str) -> bool {
        Self::keeps(&self.resources, &self.exclude, uri)
    }

    /// Whether this filter keeps everything (no list, nothing excluded).
    pub fn is_everything(&self) -> bool {
        self.tools.is_none()
            && self.resources.is_none()
            && self.prompts.is_none()
            && self.exclude.is_empty()
    }

    /// Every pattern with the list it belongs to.
    pub fn patterns(&self) -> Vec<(Kind, &Pattern)> {
        let mut out = Vec::new();
        for (kind, list) in [
            (Kind::Tools, &self.tools),
            (Kind::Resources, &self.resources),
            (Kind::Prompts, &self.prompts),
        ] {
            out.extend(list.iter().flatten().map(|p| (kind, p)));
        }
        out.extend(self.exclude.iter().map(|p| (Kind::Exclude, p)));
        out
    }
}

/// `[groups.NAME]`, checked.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub description: Option<String>,
    pub filter: Filter,
}

/// Compiles `raw`'s globs; a glob that does not compile is reported with `err` and left out.
pub fn filter(
    raw: &RawGroup,
    loc: &dyn Fn(&Sp<String>) -> Loc,
    err: &mut dyn FnMut(&Sp<String>, String),
) -> Filter {
    let mut list = |l: &Option<Vec<Sp<String>>>| -> Option<Vec<Pattern>> {
        l.as_ref().map(|l| {
            l.iter()
                .filter_map(|g| compile(g, loc, err))
                .collect::<Vec<_>>()
        })
    };
    Filter {
        tools: list(&raw.tools),
        resources: list(&raw.resources),
        prompts: list(&raw.prompts),
        exclude: list(&raw.exclude).unwrap_or_default(),
    }
}

/// Group names that would clash with another path under the MCP endpoint.
pub const RESERVED: [&str; 1] = ["server-card"];

/// `[groups.NAME]` from its raw entry.
pub fn group(
    key: &Key,
    raw: &RawGroup,
    loc: &dyn Fn(&Sp<String>) -> Loc,
    err: &mut dyn FnMut(&Sp<String>, String),
) -> Group {
    if RESERVED.contains(&key.get().as_str()) {
        err(
            key,
            format!(
                "`[groups.{}]`: that name is reserved (`/mcp/{}` is the server card); choose another",
                key.get(),
                key.get()
            ),
        );
    }
    Group {
        name: key.get().clone(),
        description: raw.description.as_ref().map(|d| d.get().clone()),
        filter: filter(raw, loc, err),
    }
}

fn compile(
    g: &Sp<String>,
    loc: &dyn Fn(&Sp<String>) -> Loc,
    err: &mut dyn FnMut(&Sp<String>, String),
) -> Option<Pattern> {
    let text = g.get();
    if text.is_empty() {
        err(g, "an empty pattern matches nothing; remove it".into());
        return None;
    }
    match GlobBuilder::new(text)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
    {
        Ok(glob) => Some(Pattern {
            text: text.clone(),
            loc: loc(g),
            matcher: glob.compile_matcher(),
        }),
        Err(e) => {
            err(g, format!("invalid pattern `{text}`: {}", e.kind()));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> Pattern {
        Pattern {
            text: text.into(),
            loc: Loc::default(),
            matcher: GlobBuilder::new(text)
                .literal_separator(false)
                .build()
                .expect("glob")
                .compile_matcher(),
        }
    }

    fn patterns(texts: &[&str]) -> Option<Vec<Pattern>> {
        Some(texts.iter().map(|t| pattern(t)).collect())
    }

    #[test]
    fn a_key_left_out_keeps_everything_an_empty_list_nothing() {
        let f = Filter {
            tools: patterns(&["repo_*", "search_files"]),
            resources: None,
            prompts: patterns(&[]),
            exclude: vec![pattern("repo_blob"), pattern("file:///secret/*")],
        };
        assert!(f.tool("repo_commit"));
        assert!(f.tool("search_files"));
        assert!(!f.tool("repo_blob"), "excluded");
        assert!(!f.tool("shop_table"), "not listed");
        assert!(f.resource("git://repo/log"), "resources left out: all");
        assert!(
            !f.resource("file:///secret/a/b.md"),
            "excluded, `*` crosses `/`"
        );
        assert!(!f.prompt("review"), "[] keeps no prompt");
        assert!(Filter::everything().is_everything());
        assert!(!f.is_everything());
    }

    #[test]
    fn resource_globs_match_uris_and_templates() {
        let f = Filter {
            resources: patterns(&["git://repo/*"]),
            ..Filter::default()
        };
        assert!(f.resource("git://repo/commit/{rev}"));
        assert!(f.resource("git://repo/blob/main/src/lib.rs"));
        assert!(!f.resource("git://other/log"));
        assert!(!f.resource("sqlite://shop/schema"));
    }
}
