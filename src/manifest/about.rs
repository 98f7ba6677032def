//! What a manifest says about its server beyond serving (`[server]` `title`, `description`,
//! `website`, `repository`, `icons`; `[server.http]` `public_url`, `catalog`) and its
//! `[skills.NAME]` sections, checked: the server card (`card.rs`) and the skills source
//! (`providers/skills.rs`) are built from these.

use std::path::PathBuf;

use super::diag::Loc;
use super::raw::{RawIcon, Sp};

/// Card fields of `[server]`.
#[derive(Debug, Clone, Default)]
pub struct About {
    pub title: Option<String>,
    pub description: Option<String>,
    pub website: Option<String>,
    pub repository: Option<String>,
    pub icons: Vec<Icon>,
    /// `[server.http] public_url`: the MCP endpoint as clients reach it.
    pub public_url: Option<String>,
    /// `[server.http] catalog`: serve `/.well-known/ai-catalog.json`.
    pub catalog: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icon {
    pub src: String,
    pub mime_type: Option<String>,
    pub sizes: Vec<String>,
    pub theme: Option<String>,
}

/// The server card's `description` is at most this many characters (SEP-2127 schema).
pub const MAX_DESCRIPTION: usize = 100;

/// An http(s) URL, or the reason it is not one.
pub fn http_url(s: &str) -> Result<String, String> {
    match url::Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(s.to_owned()),
        Ok(u) => Err(format!(
            "`{s}` must be an http:// or https:// URL, not {}:",
            u.scheme()
        )),
        Err(e) => Err(format!("`{s}` is not a URL: {e}")),
    }
}

/// Checks the card fields; `err` reports a problem at a value.
pub fn about(
    title: &Option<Sp<String>>,
    description: &Option<Sp<String>>,
    website: &Option<Sp<String>>,
    repository: &Option<Sp<String>>,
    icons: &Option<Vec<RawIcon>>,
    err: &mut dyn FnMut(&Sp<String>, String),
) -> About {
    let text = |v: &Option<Sp<String>>| v.as_ref().map(|s| s.get().clone());
    let mut url = |v: &Option<Sp<String>>, key: &str| {
        let v = v.as_ref()?;
        match http_url(v.get()) {
            Ok(u) => Some(u),
            Err(e) => {
                err(v, format!("[server] `{key}`: {e}"));
                None
            }
        }
    };
    let website = url(website, "website");
    let repository = url(repository, "repository");
    if let Some(t) = title
        && (t.get().trim().is_empty() || t.get().chars().count() > MAX_DESCRIPTION)
    {
        err(
            t,
            format!("[server] `title` must be 1 to {MAX_DESCRIPTION} characters"),
        );
    }
    if let Some(d) = description
        && (d.get().trim().is_empty() || d.get().chars().count() > MAX_DESCRIPTION)
    {
        err(
            d,
            format!(
                "[server] `description` must be 1 to {MAX_DESCRIPTION} characters (the server card's limit; longer guidance goes in `instructions`), found {}",
                d.get().chars().count()
            ),
        );
    }
    let mut out = Vec::new();
    for icon in icons.iter().flatten() {
        let src = icon.src.get();
        let ok = src.starts_with("data:image/") || http_url(src).is_ok();
        if !ok {
            err(
                &icon.src,
                format!(
                    "[server] icon `src` must be an https:// URL or a data:image/ URI, found `{src}`"
                ),
            );
            continue;
        }
        if let Some(theme) = &icon.theme
            && !matches!(theme.get().as_str(), "light" | "dark")
        {
            err(theme, "icon `theme` is \"light\" or \"dark\"".into());
        }
        out.push(Icon {
            src: src.clone(),
            mime_type: icon.mime_type.as_ref().map(|m| m.get().clone()),
            sizes: icon
                .sizes
                .iter()
                .flatten()
                .map(|s| s.get().clone())
                .collect(),
            theme: icon.theme.as_ref().map(|t| t.get().clone()),
        });
    }
    About {
        title: text(title).filter(|t| !t.trim().is_empty()),
        description: text(description).filter(|d| !d.trim().is_empty()),
        website,
        repository,
        icons: out,
        public_url: None,
        catalog: false,
    }
}

/// `[skills.NAME]`, checked.
#[derive(Debug, Clone)]
pub struct Skills {
    pub name: String,
    pub loc: Loc,
    /// Absolute, not yet canonical (the registry checks it exists).
    pub root: PathBuf,
    pub root_loc: Loc,
    pub gitignore: bool,
    pub watch: bool,
    /// Segments put before every skill's path in its `skill://` URI.
    pub prefix: Option<String>,
}

/// Whether `prefix` can begin a `skill://` URI: `/`-separated segments of letters, digits,
/// `.`, `-`, `_`, `~`, the first one a host name (RFC 3986 `reg-name`).
pub fn valid_prefix(prefix: &str) -> bool {
    !prefix.is_empty()
        && prefix.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_urls() {
        assert!(valid_prefix("acme"));
        assert!(valid_prefix("acme/billing"));
        assert!(!valid_prefix("acme//billing"));
        assert!(!valid_prefix("../x"));
        assert!(!valid_prefix("a b"));
        assert!(http_url("https://example.com/x").is_ok());
        assert!(http_url("ftp://example.com").is_err());
        assert!(http_url("example.com").is_err());
    }

    /// International host names are URLs (the `idna` back end pinned in Cargo.toml, unicode-rs,
    /// maps them by UTS 46; its no-Unicode stub would refuse them).
    #[test]
    fn international_host_names_are_urls() {
        assert!(http_url("https://Bücher.example/x").is_ok());
        let u = url::Url::parse("https://ＤＢ.例え.jp/").expect("a URL");
        assert_eq!(u.host_str(), Some("db.xn--r8jz45g.jp"));
        assert!(http_url("https://a\u{200b}\u{fffd}b.example/").is_err());
    }
}
