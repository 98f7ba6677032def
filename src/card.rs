//! The server card (SEP-2127, `experimental-ext-server-card`): static metadata a client reads
//! before it connects, built from `[server]` and `[server.http]`. `mcp-manifest card` prints
//! it, `serve --http` answers it at `<path>/server-card` (and each group's at
//! `<path>/GROUP/server-card`) and lists them in `/.well-known/ai-catalog.json` when
//! `[server.http] catalog = true`. Pure: no IO.
//!
//! Choices where the card's schema asks for what a manifest does not say:
//! - `name` must be reverse-DNS `namespace/name`: `[server] name` when it already is one; else
//!   the namespace is taken from `repository` (`https://github.com/OWNER/…` →
//!   `io.github.OWNER`), else from `website`'s host reversed (`docs.acme.com` →
//!   `com.acme.docs`), else `local`; the name part is `[server] name` with characters the
//!   schema refuses replaced by `-`. A group's card adds `-GROUP`.
//! - `description` (required, 1–100 characters): `[server] description`, else the first line of
//!   `instructions`, else a sentence naming the server; cut to 100 characters.
//! - `remotes`: the endpoint from `[server.http] public_url`, else `http://LISTEN/mcp`; none
//!   when neither is known (`card` on a manifest that does not serve HTTP). With `auth =
//!   "token"` or `"oauth"` the remote names the `Authorization` header (secret, required).

use serde_json::{Value, json};

use crate::manifest::{Group, HttpAuth, Manifest};

/// The `$schema` every card carries.
pub const SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";

/// The card's media type.
pub const MEDIA_TYPE: &str = "application/mcp-server-card+json";

/// The AI Catalog's media type.
pub const CATALOG_MEDIA_TYPE: &str = "application/ai-catalog+json";

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";

/// The protocol versions this server speaks (handshake era, then stateless); a test in
/// `server/` keeps it equal to what the server negotiates.
pub const PROTOCOL_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The MCP endpoint URL clients reach (`public_url`, else `http://LISTEN/mcp`), if known.
pub fn endpoint(m: &Manifest, listen: Option<std::net::SocketAddr>) -> Option<String> {
    if let Some(u) = &m.server.about.public_url {
        return Some(u.trim_end_matches('/').to_owned());
    }
    let addr = listen.or(m.server.http.listen)?;
    Some(format!("http://{addr}{MCP_PATH}"))
}

/// The card of the default endpoint (`group` none) or of one group's endpoint.
pub fn card(m: &Manifest, group: Option<&Group>, endpoint: Option<&str>) -> Value {
    let about = &m.server.about;
    let base = name_part(&m.server.name);
    let name = match group {
        None => format!("{}/{base}", namespace(m)),
        Some(g) => format!("{}/{base}-{}", namespace(m), g.name),
    };
    let name = if m.server.name.contains('/') && valid_name(&m.server.name) && group.is_none() {
        m.server.name.clone()
    } else {
        name
    };
    let description = group
        .and_then(|g| g.description.clone())
        .or_else(|| about.description.clone())
        .or_else(|| {
            m.server
                .instructions
                .as_deref()
                .and_then(|i| i.lines().map(str::trim).find(|l| !l.is_empty()))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| format!("{} served over MCP by mcp-manifest", m.server.name));
    let mut card = json!({
        "$schema": SCHEMA,
        "name": name,
        "version": m.server.version,
        "description": cut(&description, crate::manifest::about::MAX_DESCRIPTION),
    });
    let title = about.title.clone().map(|t| match group {
        Some(g) => format!("{t} ({})", g.name),
        None => t,
    });
    if let Some(t) = title {
        card["title"] = json!(cut(&t, crate::manifest::about::MAX_DESCRIPTION));
    }
    if let Some(w) = &about.website {
        card["websiteUrl"] = json!(w);
    }
    if let Some(r) = &about.repository {
        card["repository"] = json!({ "url": r, "source": source_of(r) });
    }
    if !about.icons.is_empty() {
        card["icons"] = about
            .icons
            .iter()
            .map(|i| {
                let mut icon = json!({ "src": i.src });
                if let Some(m) = &i.mime_type {
                    icon["mimeType"] = json!(m);
                }
                if !i.sizes.is_empty() {
                    icon["sizes"] = json!(i.sizes);
                }
                if let Some(t) = &i.theme {
                    icon["theme"] = json!(t);
                }
                icon
            })
            .collect();
    }
    if let Some(url) = endpoint {
        let url = match group {
            Some(g) => format!("{url}/{}", g.name),
            None => url.to_owned(),
        };
        let mut remote = json!({
            "type": "streamable-http",
            "url": url,
            "supportedProtocolVersions": PROTOCOL_VERSIONS,
        });
        if !matches!(m.server.http.auth, HttpAuth::None) {
            remote["headers"] = json!([{
                "name": "Authorization",
                "description": match m.server.http.auth {
                    HttpAuth::OAuth(_) => "An OAuth 2.1 access token (see /.well-known/oauth-protected-resource).",
                    _ => "A bearer token this server accepts.",
                },
                "isRequired": true,
                "isSecret": true,
                "value": "Bearer {token}",
                "variables": { "token": { "isRequired": true, "isSecret": true } },
            }]);
        }
        card["remotes"] = json!([remote]);
    }
    card
}

/// `/.well-known/ai-catalog.json`: an entry per card (the default endpoint's, then each group's).
pub fn catalog(m: &Manifest, endpoint: &str) -> Value {
    let host = url::Url::parse(endpoint)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| "localhost".into());
    let base = name_part(&m.server.name);
    let mut entries = vec![json!({
        "identifier": format!("urn:air:{host}:mcp:{base}"),
        "type": MEDIA_TYPE,
        "url": format!("{endpoint}/server-card"),
    })];
    for g in &m.groups {
        entries.push(json!({
            "identifier": format!("urn:air:{host}:mcp:{base}-{}", g.name),
            "type": MEDIA_TYPE,
            "url": format!("{endpoint}/{}/server-card", g.name),
        }));
    }
    json!({ "specVersion": "1.0", "entries": entries })
}

/// A strong entity tag of `body` (a SHA-256 prefix, quoted).
pub fn etag(body: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(body);
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

fn valid_name(s: &str) -> bool {
    let Some((ns, name)) = s.split_once('/') else {
        return false;
    };
    (3..=200).contains(&s.len())
        && !ns.is_empty()
        && !name.is_empty()
        && ns
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// `[server] name` as the part after the `/`.
fn name_part(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    let cleaned: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if cleaned.trim_matches('-').is_empty() {
        "server".into()
    } else {
        cleaned
    }
}

fn namespace(m: &Manifest) -> String {
    let about = &m.server.about;
    if let Some(ns) = about.repository.as_deref().and_then(github_owner) {
        return format!("io.github.{ns}");
    }
    let host = about
        .website
        .as_deref()
        .and_then(|w| url::Url::parse(w).ok())
        .and_then(|u| u.domain().map(str::to_owned));
    match host {
        Some(h) => h.split('.').rev().collect::<Vec<_>>().join("."),
        None => "local".into(),
    }
}

fn github_owner(repo: &str) -> Option<String> {
    let u = url::Url::parse(repo).ok()?;
    if u.host_str()? != "github.com" {
        return None;
    }
    let owner = u.path_segments()?.next()?.to_owned();
    let ok = !owner.is_empty()
        && owner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    ok.then_some(owner)
}

fn source_of(repo: &str) -> &'static str {
    let host = url::Url::parse(repo)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    match host.as_str() {
        "github.com" => "github",
        "gitlab.com" => "gitlab",
        "bitbucket.org" => "bitbucket",
        "codeberg.org" => "codeberg",
        _ => "git",
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(text: &str) -> Manifest {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("mcp-server.toml");
        crate::manifest::load_str(text, "mcp-server.toml", &path, dir.path(), &|_| None)
            .expect("a valid manifest")
    }

    #[test]
    fn names_from_repository_website_or_local() {
        let m =
            manifest("[server]\nname = \"shop\"\nrepository = \"https://github.com/acme/shop\"\n");
        assert_eq!(card(&m, None, None)["name"], "io.github.acme/shop");
        assert_eq!(card(&m, None, None)["repository"]["source"], "github");
        let m = manifest("[server]\nname = \"shop\"\nwebsite = \"https://docs.acme.com/x\"\n");
        assert_eq!(card(&m, None, None)["name"], "com.acme.docs/shop");
        let m = manifest("[server]\nname = \"my shop!\"\n");
        assert_eq!(card(&m, None, None)["name"], "local/my-shop-");
        let m = manifest("[server]\nname = \"com.acme/shop\"\n");
        assert_eq!(card(&m, None, None)["name"], "com.acme/shop");
    }

    #[test]
    fn description_falls_back_and_is_cut() {
        let long = "x".repeat(300);
        let m = manifest(&format!(
            "[server]\nname = \"s\"\ninstructions = \"{long}\"\n"
        ));
        let c = card(&m, None, None);
        assert_eq!(
            c["description"].as_str().map(|d| d.chars().count()),
            Some(100)
        );
        let m = manifest("[server]\nname = \"s\"\n");
        assert_eq!(
            card(&m, None, None)["description"],
            "s served over MCP by mcp-manifest"
        );
    }

    #[test]
    fn remotes_name_the_endpoint_versions_and_auth() {
        let m = manifest(
            "[server]\nname = \"s\"\n[server.http]\nlisten = \"127.0.0.1:8080\"\nauth = \"token\"\ntokens = [\"t\"]\n",
        );
        let url = endpoint(&m, None);
        assert_eq!(url.as_deref(), Some("http://127.0.0.1:8080/mcp"));
        let c = card(&m, None, url.as_deref());
        assert_eq!(c["remotes"][0]["url"], "http://127.0.0.1:8080/mcp");
        assert_eq!(c["remotes"][0]["headers"][0]["name"], "Authorization");
        assert_eq!(
            c["remotes"][0]["supportedProtocolVersions"][4],
            "2026-07-28"
        );
        assert!(card(&m, None, None).get("remotes").is_none());
    }

    #[test]
    fn etags_are_quoted_and_follow_the_body() {
        assert_eq!(etag(b"a"), etag(b"a"));
        assert_ne!(etag(b"a"), etag(b"b"));
        assert!(etag(b"a").starts_with('"') && etag(b"a").ends_with('"'));
    }
}
