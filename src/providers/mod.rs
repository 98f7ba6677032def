//! Resource providers (files, sqlite, postgres, git, user templates) and the plain types they
//! answer with.
//! Nothing here knows MCP: `server.rs` converts these types to the wire.

pub mod files;
pub mod git;
pub mod postgres;
pub mod sql;
pub mod sqlite;
pub mod template;

use std::time::SystemTime;

/// One listed resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub size: Option<u64>,
    pub last_modified: Option<SystemTime>,
}

impl ResourceInfo {
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceInfo {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            last_modified: None,
        }
    }
}

/// One listed URI template.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateInfo {
    pub uri_template: String,
    pub name: String,
    pub description: Option<String>,
    pub mime_type: Option<String>,
}

/// What a read returns: text (valid UTF-8) or bytes (sent base64).
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Text(String),
    Bytes(Vec<u8>),
}

impl Body {
    /// Text when the bytes are UTF-8 without NUL bytes (as git and ripgrep judge text),
    /// bytes otherwise.
    pub fn from_bytes(bytes: Vec<u8>) -> Body {
        if bytes.contains(&0) {
            return Body::Bytes(bytes);
        }
        match String::from_utf8(bytes) {
            Ok(s) => Body::Text(s),
            Err(e) => Body::Bytes(e.into_bytes()),
        }
    }
}

/// The contents of one read resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Contents {
    pub uri: String,
    pub mime_type: Option<String>,
    pub body: Body,
}

/// Why a read (or completion) failed. `server.rs` maps these to JSON-RPC errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// The same answer for missing, hidden and outside: nothing about the outside is revealed.
    #[error("resource not found: {0}")]
    NotFound(String),
    /// The URI fits but a value in it is wrong (a bad parameter, an unknown rev).
    #[error("{0}")]
    InvalidParams(String),
    /// The resource exists but cannot be served (too large, unreadable).
    #[error("{0}")]
    Refused(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// A completion answer: at most 100 values, with the total when known.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    pub values: Vec<String>,
    pub total: Option<usize>,
    pub has_more: bool,
}

/// The most values one completion answer carries (the MCP limit).
pub const MAX_COMPLETIONS: usize = 100;

impl Completion {
    /// Sorted, de-duplicated candidates that start with `prefix`, capped at `MAX_COMPLETIONS`.
    pub fn from_candidates<I, S>(candidates: I, prefix: &str) -> Completion
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut all: Vec<String> = candidates
            .into_iter()
            .filter(|c| c.as_ref().starts_with(prefix))
            .map(|c| c.as_ref().to_owned())
            .collect();
        all.sort();
        all.dedup();
        let total = all.len();
        all.truncate(MAX_COMPLETIONS);
        Completion {
            has_more: total > all.len(),
            values: all,
            total: Some(total),
        }
    }
}

/// Percent-encodes what may not stand raw in a URI path: space, `%`, `#`, `?`, quotes, brackets,
/// control characters and non-ASCII. `/` and the other path characters stay as they are.
pub fn encode_path(path: &str) -> String {
    encode(path, |b| {
        b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b)
    })
}

/// Percent-encodes everything but RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`), as
/// RFC 6570 expands a simple `{var}`: one URI segment whatever the text holds.
pub fn encode_component(text: &str) -> String {
    encode(text, |b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

fn encode(text: &str, keep: fn(u8) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if keep(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_only_what_a_uri_path_cannot_hold() {
        use crate::uri::percent_decode as decode_percent;
        assert_eq!(encode_path("/a/b-c_d.md"), "/a/b-c_d.md");
        assert_eq!(encode_path("/a b/#1?.md"), "/a%20b/%231%3F.md");
        assert_eq!(encode_path("/é%"), "/%C3%A9%25");
        assert_eq!(
            decode_percent("/a%20b/%231%3F.md").as_deref(),
            Some("/a b/#1?.md")
        );
        assert_eq!(decode_percent("/%C3%A9%25").as_deref(), Some("/é%"));
        assert_eq!(decode_percent("/bad%zz"), None);
        assert_eq!(decode_percent("/cut%2"), None);
        assert_eq!(decode_percent("/%FF"), None);
    }

    #[test]
    fn components_encode_all_but_unreserved() {
        assert_eq!(encode_component("a-b_c.d~e"), "a-b_c.d~e");
        assert_eq!(encode_component("a b/\"c'é"), "a%20b%2F%22c%27%C3%A9");
    }

    #[test]
    fn completion_caps_at_one_hundred() {
        let c = Completion::from_candidates((0..250).map(|i| format!("f{i:03}")), "f");
        assert_eq!(c.values.len(), 100);
        assert_eq!(c.total, Some(250));
        assert!(c.has_more);
        let c = Completion::from_candidates(["b", "a", "ab"], "a");
        assert_eq!(c.values, ["a", "ab"]);
        assert!(!c.has_more);
    }
}
