//! `[server.http]` checked: the listen address, the origin and host allow-lists, and how
//! requests are authenticated (none, bearer tokens, OAuth JWTs). Pure checks; the JWKS file is
//! read and the URL fetched when the server starts (`server::auth`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use super::Checker;
use super::raw::{AuthKind, RawHttp, RawOAuth, Sp};

/// `[server.http] max_sessions` when not written. A session costs its task and a few KiB, plus
/// what its streams hold for resumption (`server::http::sessions`, within the answers budget).
pub const DEFAULT_MAX_SESSIONS: usize = 256;
/// The largest `max_sessions` accepted.
pub const MAX_MAX_SESSIONS: usize = 1_000_000;
/// `[server.http] max_connections` when not written.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// The largest `max_connections` accepted.
pub const MAX_MAX_CONNECTIONS: usize = 1_000_000;
/// `[server.http] idle_timeout` when not written: longer than nginx's upstream keepalive
/// (60 s), so a proxy never sends a request on a connection the server is closing.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(75);
/// The range `idle_timeout` must be in.
const IDLE_TIMEOUT_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(3600);
/// `[server.http] resume_window` when not written.
pub const DEFAULT_RESUME_WINDOW: Duration = Duration::from_secs(60);
/// The range `resume_window` must be in.
const RESUME_WINDOW_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(3600);

/// `[server.http]`, checked.
#[derive(Debug, Clone)]
pub struct Http {
    /// Where `serve` listens when the manifest says so (`serve --http ADDR` overrides it).
    pub listen: Option<SocketAddr>,
    /// Allowed browser origins, each with an explicit port (`https://a.example:443`) or `null`.
    pub allowed_origins: Vec<String>,
    /// Host names (or `host:port`) accepted in `Host` besides the listen address; `*` is any.
    pub allowed_hosts: Vec<String>,
    pub auth: HttpAuth,
    /// Handshake-era sessions kept at once; beyond, the one idle longest ends.
    pub max_sessions: usize,
    /// Connections served at once; beyond, new ones wait.
    pub max_connections: usize,
    /// How long a connection may stay idle (no request, a head or body not arriving, an
    /// answer not taken).
    pub idle_timeout: Duration,
    /// Connections one client address may have open at once.
    pub max_connections_per_client: usize,
    /// How long sent messages of handshake-era streams are kept for `Last-Event-ID`.
    pub resume_window: Duration,
}

impl Default for Http {
    fn default() -> Http {
        Http {
            listen: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            auth: HttpAuth::None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections_per_client: per_client_default(DEFAULT_MAX_CONNECTIONS),
            resume_window: DEFAULT_RESUME_WINDOW,
        }
    }
}

/// `max_connections_per_client` when not written: a quarter of `max_connections`, or 64 when
/// that is fewer (all of them when `max_connections` is below 64).
fn per_client_default(max_connections: usize) -> usize {
    (max_connections / 4).max(max_connections.min(64))
}

/// How HTTP requests are authenticated.
#[derive(Debug, Clone, Default)]
pub enum HttpAuth {
    /// Nobody is asked: only for loopback addresses.
    #[default]
    None,
    /// `Authorization: Bearer` with one of these tokens.
    Token(Vec<Secret>),
    /// `Authorization: Bearer` with a JWT these rules accept.
    OAuth(OAuth),
}

/// `[server.http.oauth]`, checked.
#[derive(Debug, Clone)]
pub struct OAuth {
    pub issuer: String,
    pub audience: String,
    pub jwks: Jwks,
    pub scopes: Vec<String>,
}

/// Where the signing keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Jwks {
    /// A JWKS file (absolute).
    File(PathBuf),
    /// An https URL (or http on a loopback host), fetched and cached.
    Url(String),
}

/// A secret from the manifest: never printed (`Debug` shows its length only).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// Parses a listen address: `IP:PORT`, `[IPv6]:PORT` or `localhost:PORT`.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let t = text.trim();
    if let Ok(addr) = t.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = t.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    Err(format!(
        "`{text}` is not a listen address: write IP:PORT, such as 127.0.0.1:8080 (this machine only) or 0.0.0.0:8080 (every interface)"
    ))
}

/// The refusal for a non-loopback address without authentication.
pub fn open_listen_refusal(addr: &SocketAddr) -> String {
    format!(
        "listening on {addr} (not a loopback address) with `server.http.auth = \"none\"` would let anyone on the network call the tools: set `auth = \"token\"` (with `tokens`) or `auth = \"oauth\"` in [server.http], or listen on 127.0.0.1"
    )
}

impl Checker<'_> {
    pub(super) fn http(&mut self, h: Option<RawHttp>) -> Http {
        let Some(h) = h else {
            return Http::default();
        };
        let auth = self.auth(&h);
        let listen = match &h.listen {
            None => None,
            Some(sp) => match parse_listen(sp.get()) {
                Ok(addr) => {
                    if !addr.ip().is_loopback() && matches!(auth, HttpAuth::None) {
                        self.err(sp, open_listen_refusal(&addr));
                    }
                    Some(addr)
                }
                Err(e) => {
                    self.err(sp, e);
                    None
                }
            },
        };
        let allowed_origins = h
            .allowed_origins
            .iter()
            .flatten()
            .filter_map(|o| match normalize_origin(o.get()) {
                Ok(o) => Some(o),
                Err(e) => {
                    self.err(o, e);
                    None
                }
            })
            .collect();
        let mut allowed_hosts = Vec::new();
        for host in h.allowed_hosts.iter().flatten() {
            match check_host(host.get()) {
                Ok(()) => allowed_hosts.push(host.get().trim().to_ascii_lowercase()),
                Err(e) => self.err(host, e),
            }
        }
        let max_sessions = self.count_in(
            &h.max_sessions,
            "max_sessions",
            MAX_MAX_SESSIONS,
            DEFAULT_MAX_SESSIONS,
        );
        let max_connections = self.count_in(
            &h.max_connections,
            "max_connections",
            MAX_MAX_CONNECTIONS,
            DEFAULT_MAX_CONNECTIONS,
        );
        let idle_timeout = self.duration_in(
            &h.idle_timeout,
            DEFAULT_IDLE_TIMEOUT,
            IDLE_TIMEOUT_RANGE,
            "idle_timeout",
            "100ms to 1h",
        );
        let resume_window = self.duration_in(
            &h.resume_window,
            DEFAULT_RESUME_WINDOW,
            RESUME_WINDOW_RANGE,
            "resume_window",
            "1s to 1h",
        );
        let max_connections_per_client = self.count_in(
            &h.max_connections_per_client,
            "max_connections_per_client",
            max_connections,
            per_client_default(max_connections),
        );
        Http {
            listen,
            allowed_origins,
            allowed_hosts,
            auth,
            max_sessions,
            max_connections,
            idle_timeout,
            max_connections_per_client,
            resume_window,
        }
    }

    /// A duration of `[server.http]` within `range` (`said` in words), `default` when not
    /// written.
    fn duration_in(
        &mut self,
        v: &Option<Sp<super::raw::DurationStr>>,
        default: Duration,
        range: std::ops::RangeInclusive<Duration>,
        key: &str,
        said: &str,
    ) -> Duration {
        let d = self.duration(v, default);
        match v {
            Some(sp) if !range.contains(&d) => {
                self.err(
                    sp,
                    format!("`{key}` must be from {said}, found \"{}\"", sp.get().0),
                );
                default
            }
            _ => d,
        }
    }

    /// A count of `[server.http]` from 1 to `max`, `default` when not written.
    fn count_in(&mut self, v: &Option<Sp<u64>>, key: &str, max: usize, default: usize) -> usize {
        match v {
            Some(n) if *n.get() == 0 || *n.get() > max as u64 => {
                self.err(
                    n,
                    format!("`{key}` must be from 1 to {max}, found {}", n.get()),
                );
                default
            }
            Some(n) => usize::try_from(*n.get()).unwrap_or(default),
            None => default,
        }
    }

    fn auth(&mut self, h: &RawHttp) -> HttpAuth {
        let kind = h.auth.as_ref().map_or(AuthKind::None, |k| *k.get());
        if let Some(tokens) = &h.tokens
            && kind != AuthKind::Token
            && let Some(first) = tokens.first()
        {
            self.err(
                first,
                "`tokens` is only used with `auth = \"token\"` in [server.http]",
            );
        }
        if kind != AuthKind::Oauth
            && let Some(o) = &h.oauth
        {
            self.err(
                &o.issuer,
                "[server.http.oauth] is only used with `auth = \"oauth\"` in [server.http]",
            );
        }
        match kind {
            AuthKind::None => HttpAuth::None,
            AuthKind::Token => HttpAuth::Token(self.tokens(h)),
            AuthKind::Oauth => match &h.oauth {
                Some(o) => HttpAuth::OAuth(self.oauth(o)),
                None => {
                    if let Some(at) = &h.auth {
                        self.err(
                            at,
                            "`auth = \"oauth\"` needs a [server.http.oauth] table with `issuer`, `audience` and `jwks`",
                        );
                    }
                    HttpAuth::None
                }
            },
        }
    }

    fn tokens(&mut self, h: &RawHttp) -> Vec<Secret> {
        let list = h.tokens.as_deref().unwrap_or_default();
        if list.is_empty()
            && let Some(at) = &h.auth
        {
            self.err(
                at,
                "`auth = \"token\"` needs `tokens = [\"${VAR}\", …]` in [server.http]: the bearer tokens accepted",
            );
        }
        let mut out = Vec::new();
        for (i, t) in list.iter().enumerate() {
            // The message never shows the token: it is a secret.
            let text = t.get();
            if text.is_empty() {
                self.err(
                    t,
                    format!(
                        "token {} of `tokens` is empty (is its environment variable set?)",
                        i + 1
                    ),
                );
            } else if !text.bytes().all(|b| b.is_ascii_graphic()) {
                self.err(
                    t,
                    format!(
                        "token {} of `tokens` holds a space or a character that cannot travel in an HTTP header",
                        i + 1
                    ),
                );
            } else {
                out.push(Secret::new(text.clone()));
            }
        }
        out
    }

    fn oauth(&mut self, o: &RawOAuth) -> OAuth {
        for (sp, key) in [(&o.issuer, "issuer"), (&o.audience, "audience")] {
            if sp.get().trim().is_empty() {
                self.err(sp, format!("`{key}` of [server.http.oauth] is empty"));
            }
        }
        let jwks = self.jwks(&o.jwks);
        let mut scopes = Vec::new();
        for s in o.scopes.iter().flatten() {
            let text = s.get();
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_graphic() && b != b'"') {
                self.err(
                    s,
                    format!("`{text}` is not a scope: scopes are words without spaces or quotes"),
                );
            } else {
                scopes.push(text.clone());
            }
        }
        OAuth {
            issuer: o.issuer.get().clone(),
            audience: o.audience.get().clone(),
            jwks,
            scopes,
        }
    }

    fn jwks(&mut self, sp: &Sp<String>) -> Jwks {
        let text = sp.get();
        if let Some(rest) = text.strip_prefix("https://") {
            if rest.is_empty() {
                self.err(sp, "`jwks` names no host");
            }
            return Jwks::Url(text.clone());
        }
        if let Some(rest) = text.strip_prefix("http://") {
            let host = rest.split(['/', '?']).next().unwrap_or_default();
            let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
            if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
                self.err(
                    sp,
                    "`jwks` must be an https URL (plain http only for a loopback host) or a file",
                );
            }
            return Jwks::Url(text.clone());
        }
        if text.contains("://") {
            self.err(sp, "`jwks` must be an https URL or a file");
        }
        Jwks::File(self.path(text))
    }
}

/// `scheme://host[:port]` → the same with an explicit port (a browser omits the default one), or
/// `null`.
fn normalize_origin(text: &str) -> Result<String, String> {
    let bad = || {
        format!(
            "`{text}` is not an origin: write scheme://host[:port], such as https://app.example.com"
        )
    };
    let t = text.trim();
    if t.eq_ignore_ascii_case("null") {
        return Ok("null".into());
    }
    let (scheme, rest) = t.split_once("://").ok_or_else(bad)?;
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains(['/', '?', '#', '@', ' ']) {
        return Err(bad());
    }
    let default_port = match scheme.as_str() {
        "http" => "80",
        "https" => "443",
        _ => return Err(bad()),
    };
    // `host:port`, `[v6]:port`, `host:*`, or a host alone.
    let port = match authority.strip_prefix('[') {
        Some(v6) => {
            let (_, after) = v6.split_once(']').ok_or_else(bad)?;
            match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(bad)?),
            }
        }
        None => authority.split_once(':').map(|(_, p)| p),
    };
    if let Some(p) = port
        && p != "*"
        && p.parse::<u16>().is_err()
    {
        return Err(bad());
    }
    let has_port = port.is_some();
    let authority = authority.to_ascii_lowercase();
    Ok(if has_port {
        format!("{scheme}://{authority}")
    } else {
        format!("{scheme}://{authority}:{default_port}")
    })
}

fn check_host(text: &str) -> Result<(), String> {
    let t = text.trim();
    if t == "*" {
        return Ok(());
    }
    if t.is_empty() || t.contains("://") || t.contains(['/', ' ', '@', '*']) {
        return Err(format!(
            "`{text}` is not a host: write a name or address as clients put it in `Host` (such as mcp.example.com or mcp.example.com:443), or \"*\" for any"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_get_explicit_ports() {
        assert_eq!(
            normalize_origin("https://App.example.com").unwrap(),
            "https://app.example.com:443"
        );
        assert_eq!(
            normalize_origin("http://localhost:6274/").unwrap(),
            "http://localhost:6274"
        );
        assert_eq!(normalize_origin("http://[::1]").unwrap(), "http://[::1]:80");
        assert_eq!(normalize_origin("http://x:*").unwrap(), "http://x:*");
        assert_eq!(normalize_origin("null").unwrap(), "null");
        for bad in [
            "app.example.com",
            "ftp://x",
            "https://",
            "https://a/b",
            "https://a:99999",
            "https://u@a",
        ] {
            assert!(normalize_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(
            parse_listen("127.0.0.1:8080").unwrap().to_string(),
            "127.0.0.1:8080"
        );
        assert_eq!(
            parse_listen("localhost:9").unwrap().to_string(),
            "127.0.0.1:9"
        );
        assert_eq!(parse_listen("[::1]:80").unwrap().to_string(), "[::1]:80");
        assert!(parse_listen("8080").is_err());
        assert!(parse_listen("example.com:80").is_err());
        assert!(parse_listen("127.0.0.1").is_err());
    }

    #[test]
    fn secrets_are_not_printed() {
        let s = Secret::new("hunter2-hunter2");
        assert!(!format!("{s:?}").contains("hunter2"));
    }
}
