//! Who may call the HTTP endpoint: nobody is asked (`auth = "none"`, loopback only), a bearer
//! token from the manifest (compared in constant time), or an OAuth 2.1 access token — a JWT whose
//! signature is checked against the issuer's JWKS (a file or an https URL, cached, fetched again
//! when a token names an unknown `kid`), with `iss`, `aud`, `exp`/`nbf` and the required scopes.
//! Each accepted request names its principal (which token; the issuer and subject of a JWT).
//!
//! The keys are fetched off the request path: a request uses the keys cached, and a fetch (every
//! [`KEYS_TTL`], or for an unknown `kid` at most every [`UNKNOWN_KID_REFETCH`]) runs in the
//! background, so cached keys keep working while a JWKS endpoint hangs; only a token whose key
//! is not cached waits for a fetch under way (at most [`FETCH_TIMEOUT`]). Signatures are checked
//! on the blocking pool (a token without `kid` is tried against each key of its algorithm).
//!
//! Refusals follow RFC 6750 and the MCP authorization spec: 401 with `WWW-Authenticate: Bearer
//! resource_metadata="…"` (RFC 9728) when the token is missing or invalid, 403 with
//! `error="insufficient_scope"` when a valid token lacks a scope. The metadata document itself is
//! `protected_resource_metadata`. Tokens are parsed and validated by `jsonwebtoken`, their
//! signatures checked by `ring` (auth/ring_jwt.rs); all comparisons of secrets are `subtle`'s.

mod ring_jwt;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde::Deserialize;
use serde_json::{Value, json};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use super::http::Principal;
use crate::manifest::{HttpAuth, Jwks, OAuth};
use crate::providers::blocking;

/// The signature algorithms accepted: asymmetric only (an HMAC "key" in a JWKS would be a shared
/// secret, and `none` is never an algorithm).
const ACCEPTED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Cached keys are fetched again after this long.
const KEYS_TTL: Duration = Duration::from_secs(600);
/// A token naming an unknown `kid` makes the keys be fetched again at most this often, so
/// made-up `kid`s cannot turn the server into a fetch loop.
const UNKNOWN_KID_REFETCH: Duration = Duration::from_secs(10);
/// Clock skew allowed on `exp` and `nbf`.
const LEEWAY_SECS: u64 = 30;
/// The largest JWKS document read.
const MAX_JWKS: u64 = 1024 * 1024;
/// How long fetching the JWKS may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The authentication of one server.
pub(super) enum Auth {
    None,
    Token(Vec<Vec<u8>>),
    Jwt(Box<Verifier>),
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Denied {
    /// No bearer token at all.
    Missing,
    /// A token that is not accepted, and why (sent as `error_description`).
    Invalid(String),
    /// A valid token without every required scope.
    Scope,
}

impl Auth {
    /// Prepares the manifest's authentication: an OAuth JWKS file is read now (a problem with
    /// it stops the server from starting); a JWKS URL is fetched now if it can be, and later
    /// otherwise.
    pub(super) async fn start(config: &HttpAuth) -> anyhow::Result<Auth> {
        Ok(match config {
            HttpAuth::None => Auth::None,
            HttpAuth::Token(tokens) => Auth::Token(
                tokens
                    .iter()
                    .map(|t| t.expose().as_bytes().to_vec())
                    .collect(),
            ),
            HttpAuth::OAuth(o) => {
                let verifier = Verifier::new(o.clone());
                match verifier.keys.fetch().await {
                    Ok(n) => tracing::debug!("{n} signing keys from {}", verifier.keys.origin()),
                    Err(e) => match &o.jwks {
                        Jwks::File(_) => anyhow::bail!("{e}"),
                        Jwks::Url(_) => tracing::warn!("{e}; trying again on the first request"),
                    },
                }
                Auth::Jwt(Box::new(verifier))
            }
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Auth::None => "none",
            Auth::Token(_) => "token",
            Auth::Jwt(_) => "oauth",
        }
    }

    /// Checks a request's `Authorization` header: who sent it (the principal its sessions
    /// belong to).
    pub async fn check(&self, headers: &HeaderMap) -> Result<Principal, Denied> {
        if matches!(self, Auth::None) {
            return Ok(Principal::default());
        }
        let token = bearer(headers)?;
        match self {
            Auth::None => Ok(Principal::default()),
            Auth::Token(tokens) => {
                // Every token is compared, in constant time, whatever matched before; which one
                // matched is chosen in constant time too.
                let mut ok = subtle::Choice::from(0);
                let mut which = 0u32;
                for (i, t) in tokens.iter().enumerate() {
                    let same = t.as_slice().ct_eq(token.as_bytes());
                    which = u32::conditional_select(&which, &(i as u32), same);
                    ok |= same;
                }
                if bool::from(ok) {
                    Ok(Principal(Some(format!("token {}", which + 1))))
                } else {
                    Err(Denied::Invalid("the token is not accepted".into()))
                }
            }
            Auth::Jwt(v) => v.verify(token).await,
        }
    }

    /// The refusal, as RFC 6750 and the MCP spec describe it.
    pub fn refusal(&self, denied: &Denied, headers: &HeaderMap) -> Response<Body> {
        let mut params = Vec::new();
        if let Auth::Jwt(v) = self {
            params.push(format!("resource_metadata=\"{}\"", v.metadata_url(headers)));
            if !v.config.scopes.is_empty() {
                params.push(format!("scope=\"{}\"", v.config.scopes.join(" ")));
            }
        } else {
            params.push("realm=\"mcp\"".to_owned());
        }
        let (status, text) = match denied {
            Denied::Missing => (
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send `Authorization: Bearer <token>`".to_owned(),
            ),
            Denied::Invalid(why) => {
                params.push("error=\"invalid_token\"".to_owned());
                params.push(format!("error_description=\"{}\"", quoted(why)));
                (StatusCode::UNAUTHORIZED, format!("Unauthorized: {why}"))
            }
            Denied::Scope => {
                params.push("error=\"insufficient_scope\"".to_owned());
                (
                    StatusCode::FORBIDDEN,
                    "Forbidden: the token lacks a required scope".to_owned(),
                )
            }
        };
        let challenge = format!("Bearer {}", params.join(", "));
        let mut r = Response::new(Body::from(text));
        *r.status_mut() = status;
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        r
    }

    /// The RFC 9728 protected-resource metadata (only with `auth = "oauth"`).
    pub fn metadata(&self, headers: &HeaderMap, name: &str) -> Option<Value> {
        let Auth::Jwt(v) = self else {
            return None;
        };
        Some(json!({
            "resource": v.resource(headers),
            "authorization_servers": [v.config.issuer],
            "scopes_supported": v.config.scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": name,
        }))
    }
}

/// The token of `Authorization: Bearer <token>` (one header, scheme case-insensitive).
fn bearer(headers: &HeaderMap) -> Result<&str, Denied> {
    let mut all = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = all.next() else {
        return Err(Denied::Missing);
    };
    if all.next().is_some() {
        return Err(Denied::Invalid("more than one Authorization header".into()));
    }
    let text = value
        .to_str()
        .map_err(|_| Denied::Invalid("the Authorization header is not text".into()))?;
    let (scheme, token) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Denied::Invalid(
            "the Authorization scheme is not Bearer".into(),
        ));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(Denied::Missing);
    }
    Ok(token)
}

/// A text safe inside a quoted-string of a header.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii() && !c.is_ascii_control() && *c != '"' && *c != '\\')
        .collect()
}

/// Checks OAuth access tokens.
pub(super) struct Verifier {
    config: OAuth,
    keys: Arc<KeyCache>,
}

/// The claims read from an access token besides those `jsonwebtoken` checks.
#[derive(Deserialize)]
struct Claims {
    /// Space-separated scopes (RFC 8693, RFC 9068).
    #[serde(default)]
    scope: Option<Value>,
    /// Scopes as some issuers write them (Azure AD, Okta).
    #[serde(default)]
    scp: Option<Value>,
    /// Whom the token is about (RFC 9068: the user, or the client for its own access).
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
}

impl Claims {
    fn scopes(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for v in [&self.scope, &self.scp].into_iter().flatten() {
            match v {
                Value::String(s) => out.extend(s.split_whitespace()),
                Value::Array(items) => out.extend(items.iter().filter_map(Value::as_str)),
                _ => {}
            }
        }
        out
    }
}

impl Verifier {
    fn new(config: OAuth) -> Verifier {
        ring_jwt::install();
        Verifier {
            keys: Arc::new(KeyCache::new(config.jwks.clone())),
            config,
        }
    }

    async fn verify(&self, token: &str) -> Result<Principal, Denied> {
        let head =
            decode_header(token).map_err(|_| Denied::Invalid("the token is not a JWT".into()))?;
        if !ACCEPTED.contains(&head.alg) {
            return Err(Denied::Invalid(format!(
                "the token's algorithm {:?} is not accepted",
                head.alg
            )));
        }
        let mut candidates = self.keys.matching(head.kid.as_deref(), head.alg);
        if candidates.is_empty() && self.keys.fetch_for_unknown_kid().await {
            // A key the cache does not know yet (keys rotate): fetched meanwhile.
            candidates = self.keys.matching(head.kid.as_deref(), head.alg);
        }
        if candidates.is_empty() {
            return Err(Denied::Invalid(match &head.kid {
                Some(kid) => format!("no signing key `{}` for {:?}", quoted(kid), head.alg),
                None => format!("no signing key for {:?}", head.alg),
            }));
        }
        let mut validation = Validation::new(head.alg);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECS;
        // Signatures cost CPU (a token without `kid` tries every key of its algorithm): on the
        // blocking pool, not a runtime thread.
        let token = token.to_owned();
        let checked = blocking(move || {
            let mut last = None;
            for key in &candidates {
                match decode::<Claims>(&token, key, &validation) {
                    Ok(data) => return Ok(data.claims),
                    Err(e) => last = Some(e),
                }
            }
            Err(last)
        })
        .await
        .map_err(|_| Denied::Invalid("the token could not be checked".into()))?;
        let last = match checked {
            Ok(claims) => {
                let have = claims.scopes();
                let missing = self
                    .config
                    .scopes
                    .iter()
                    .any(|need| !have.contains(&need.as_str()));
                if missing {
                    return Err(Denied::Scope);
                }
                // The issuer was checked; the subject (or the client) within it.
                let who = claims.sub.or(claims.client_id).unwrap_or_default();
                return Ok(Principal(Some(format!(
                    "oauth {} {}",
                    self.config.issuer, who
                ))));
            }
            Err(last) => last,
        };
        use jsonwebtoken::errors::ErrorKind as K;
        let why = match last.as_ref().map(|e| e.kind()) {
            Some(K::ExpiredSignature) => "the token has expired".to_owned(),
            Some(K::ImmatureSignature) => "the token is not valid yet (nbf)".to_owned(),
            Some(K::InvalidAudience) => "the token is for another audience".to_owned(),
            Some(K::InvalidIssuer) => "the token is from another issuer".to_owned(),
            Some(K::InvalidSignature) => "the token's signature does not verify".to_owned(),
            Some(K::MissingRequiredClaim(c)) => format!("the token has no `{}` claim", quoted(c)),
            _ => "the token is not valid".to_owned(),
        };
        Err(Denied::Invalid(why))
    }

    /// This server's resource identifier: the audience when it is a URL, else the `/mcp` URL the
    /// request came to.
    fn resource(&self, headers: &HeaderMap) -> String {
        let aud = &self.config.audience;
        if aud.starts_with("https://") || aud.starts_with("http://") {
            aud.clone()
        } else {
            format!("{}/mcp", request_origin(headers))
        }
    }

    /// Where the metadata document is (RFC 9728 §3.1: the well-known path inserted between the
    /// resource's host and path).
    fn metadata_url(&self, headers: &HeaderMap) -> String {
        let resource = self.resource(headers);
        let (scheme, rest) = resource.split_once("://").unwrap_or(("https", &resource));
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let path = path.trim_end_matches('/');
        format!("{scheme}://{authority}/.well-known/oauth-protected-resource{path}")
    }
}

/// `scheme://host` of the request as the client sent it (through a proxy: its forwarded
/// headers).
fn request_origin(headers: &HeaderMap) -> String {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').next().unwrap_or_default().trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let scheme = get("x-forwarded-proto")
        .filter(|s| s == "https" || s == "http")
        .unwrap_or_else(|| "http".into());
    let host = get("x-forwarded-host")
        .or_else(|| get("host"))
        .unwrap_or_else(|| "localhost".into());
    let host: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(*c))
        .collect();
    format!("{scheme}://{host}")
}

/// One signing key of the JWKS.
struct Key {
    kid: Option<String>,
    /// The algorithms this key may verify (the JWK's `alg`, else what its type allows).
    algs: Vec<Algorithm>,
    key: DecodingKey,
}

/// The issuer's signing keys, cached; fetched again in the background (see the module doc).
struct KeyCache {
    source: Jwks,
    keys: std::sync::RwLock<Arc<Vec<Key>>>,
    times: std::sync::Mutex<Times>,
    /// Counts the fetches that ended (a token waiting for its key watches it).
    fetched: tokio::sync::watch::Sender<u64>,
}

#[derive(Default)]
struct Times {
    /// When the keys were last fetched (successfully or not).
    fetched: Option<Instant>,
    /// When an unknown `kid` last made them be fetched.
    unknown_kid: Option<Instant>,
    /// A fetch is under way.
    fetching: bool,
}

impl KeyCache {
    fn new(source: Jwks) -> KeyCache {
        KeyCache {
            source,
            keys: std::sync::RwLock::new(Arc::new(Vec::new())),
            times: std::sync::Mutex::new(Times::default()),
            fetched: tokio::sync::watch::channel(0).0,
        }
    }

    fn origin(&self) -> String {
        match &self.source {
            Jwks::File(p) => p.display().to_string(),
            Jwks::Url(u) => u.clone(),
        }
    }

    fn times(&self) -> std::sync::MutexGuard<'_, Times> {
        self.times
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cached keys that may verify a token with this `kid` and `alg` (every key of the
    /// algorithm when the token names no `kid`). Old keys start a fetch in the background and
    /// are used meanwhile.
    fn matching(self: &Arc<Self>, kid: Option<&str>, alg: Algorithm) -> Vec<DecodingKey> {
        let stale = self
            .times()
            .fetched
            .is_none_or(|at| at.elapsed() > KEYS_TTL);
        if stale {
            self.fetch_in_background();
        }
        let keys = self
            .keys
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        keys.iter()
            .filter(|k| k.algs.contains(&alg))
            .filter(|k| match kid {
                Some(kid) => k.kid.as_deref() == Some(kid),
                None => true,
            })
            .map(|k| k.key.clone())
            .collect()
    }

    /// Starts a fetch unless one is under way; whether one is under way now.
    fn fetch_in_background(self: &Arc<Self>) -> bool {
        {
            let mut t = self.times();
            if t.fetching {
                return true;
            }
            t.fetching = true;
        }
        let cache = self.clone();
        tokio::spawn(async move {
            if let Err(e) = cache.fetch_now().await {
                tracing::warn!("{e}; still using the keys fetched before");
            }
        });
        true
    }

    /// For a token whose key is not cached: a fetch (at most every `UNKNOWN_KID_REFETCH`, or
    /// the one under way), waited for at most `FETCH_TIMEOUT`. Whether one ended meanwhile.
    async fn fetch_for_unknown_kid(self: &Arc<Self>) -> bool {
        let mut ended = self.fetched.subscribe();
        let under_way = {
            let mut t = self.times();
            let allowed = t
                .unknown_kid
                .is_none_or(|at| at.elapsed() >= UNKNOWN_KID_REFETCH);
            if allowed {
                t.unknown_kid = Some(Instant::now());
            }
            allowed || t.fetching
        };
        if !under_way || !self.fetch_in_background() {
            return false;
        }
        tokio::time::timeout(FETCH_TIMEOUT, ended.changed())
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Fetches the keys now (at start, or the background fetch).
    async fn fetch(&self) -> anyhow::Result<usize> {
        self.times().fetching = true;
        self.fetch_now().await
    }

    /// Reads or fetches the JWKS and replaces the cached keys; returns how many there are.
    async fn fetch_now(&self) -> anyhow::Result<usize> {
        let source = self.source.clone();
        let read = blocking(move || read_jwks(&source))
            .await
            .map_err(|e| anyhow::anyhow!("reading the JWKS failed: {e}"))
            .and_then(|r| r)
            .and_then(|text| {
                parse_jwks(&text)
                    .map_err(|e| anyhow::anyhow!("the JWKS at {} is not valid: {e}", self.origin()))
            })
            .and_then(|keys| {
                if keys.is_empty() {
                    anyhow::bail!(
                        "the JWKS at {} holds no signing key this server can use",
                        self.origin()
                    );
                }
                Ok(keys)
            });
        let n = read
            .as_ref()
            .map(Vec::len)
            .map_err(|e| anyhow::anyhow!("{e}"));
        if let Ok(keys) = read {
            *self
                .keys
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(keys);
        }
        {
            let mut t = self.times();
            t.fetched = Some(Instant::now());
            t.fetching = false;
        }
        self.fetched.send_modify(|n| *n += 1);
        n
    }
}

/// The JWKS text, from its file or URL.
fn read_jwks(source: &Jwks) -> anyhow::Result<String> {
    use std::io::Read;
    match source {
        Jwks::File(path) => {
            let file = std::fs::File::open(path).map_err(|e| {
                anyhow::anyhow!("cannot read the JWKS file {}: {e}", path.display())
            })?;
            let mut text = String::new();
            file.take(MAX_JWKS + 1)
                .read_to_string(&mut text)
                .map_err(|e| {
                    anyhow::anyhow!("cannot read the JWKS file {}: {e}", path.display())
                })?;
            if text.len() as u64 > MAX_JWKS {
                anyhow::bail!("the JWKS file {} is larger than 1 MiB", path.display());
            }
            Ok(text)
        }
        Jwks::Url(url) => {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .timeout_global(Some(FETCH_TIMEOUT))
                .https_only(url.starts_with("https://"))
                .max_redirects(3)
                .build()
                .into();
            let mut response = agent
                .get(url)
                .header("accept", "application/json")
                .call()
                .map_err(|e| anyhow::anyhow!("cannot fetch the JWKS from {url}: {e}"))?;
            response
                .body_mut()
                .with_config()
                .limit(MAX_JWKS)
                .read_to_string()
                .map_err(|e| anyhow::anyhow!("cannot fetch the JWKS from {url}: {e}"))
        }
    }
}

/// The signing keys of a JWKS document. Keys this server cannot use (encryption keys, symmetric
/// keys, unknown types or curves) are skipped.
fn parse_jwks(text: &str) -> Result<Vec<Key>, String> {
    #[derive(Deserialize)]
    struct Set {
        keys: Vec<Value>,
    }
    let set: Set = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for raw in set.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw) else {
            continue;
        };
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        let by_type: Vec<Algorithm> = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
            ],
            AlgorithmParameters::EllipticCurve(p) => match p.curve {
                EllipticCurve::P256 => vec![Algorithm::ES256],
                EllipticCurve::P384 => vec![Algorithm::ES384],
                _ => continue,
            },
            AlgorithmParameters::OctetKeyPair(p) => match p.curve {
                EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
                _ => continue,
            },
            // A symmetric key is a shared secret, not something a JWKS should publish.
            _ => continue,
        };
        let algs = match jwk.common.key_algorithm.map(Algorithm::try_from) {
            None => by_type,
            Some(Ok(a)) if by_type.contains(&a) => vec![a],
            Some(_) => continue,
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        out.push(Key {
            kid: jwk.common.key_id.clone(),
            algs,
            key,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn bearer_tokens_are_read_strictly() {
        assert_eq!(bearer(&headers(&[])), Err(Denied::Missing));
        assert_eq!(
            bearer(&headers(&[("authorization", "bearer abc")])),
            Ok("abc")
        );
        assert!(matches!(
            bearer(&headers(&[("authorization", "Basic abc")])),
            Err(Denied::Invalid(_))
        ));
        assert!(matches!(
            bearer(&headers(&[
                ("authorization", "Bearer a"),
                ("authorization", "Bearer b")
            ])),
            Err(Denied::Invalid(_))
        ));
        assert_eq!(
            bearer(&headers(&[("authorization", "Bearer ")])),
            Err(Denied::Missing)
        );
    }

    #[test]
    fn metadata_url_inserts_the_well_known_path() {
        let v = |aud: &str| {
            Verifier::new(OAuth {
                issuer: "https://auth.example".into(),
                audience: aud.into(),
                jwks: Jwks::Url("https://auth.example/jwks".into()),
                scopes: vec![],
            })
        };
        let h = headers(&[("host", "127.0.0.1:9")]);
        assert_eq!(
            v("https://mcp.example.com").metadata_url(&h),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            v("https://mcp.example.com/mcp/").metadata_url(&h),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            v("api://mcp").metadata_url(&h),
            "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"
        );
    }

    #[test]
    fn symmetric_and_encryption_keys_are_skipped() {
        let text = r#"{"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "h"},
            {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "use": "enc", "kid": "e"},
            {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "s"},
            {"kty": "weird"}
        ]}"#;
        let keys = parse_jwks(text).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("s"));
        assert_eq!(keys[0].algs, vec![Algorithm::EdDSA]);
    }

    /// A token without `kid` is tried against the keys of its algorithm only (issue 35: against
    /// every key of a 2 399-key JWKS, 0.6 s per token); with a `kid`, against that key only.
    #[test]
    fn a_token_without_kid_is_tried_only_against_keys_of_its_algorithm() {
        let text = r#"{"keys": [
            {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "a"},
            {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "b"},
            {"kty": "RSA", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB", "kid": "r"}
        ]}"#;
        let cache = Arc::new(KeyCache::new(Jwks::Url("https://auth.example/jwks".into())));
        *cache.keys.write().unwrap() = Arc::new(parse_jwks(text).unwrap());
        // Fresh: nothing is fetched.
        cache.times().fetched = Some(Instant::now());
        assert_eq!(cache.matching(None, Algorithm::EdDSA).len(), 2);
        assert_eq!(cache.matching(None, Algorithm::RS256).len(), 1);
        assert_eq!(cache.matching(None, Algorithm::ES256).len(), 0);
        assert_eq!(cache.matching(Some("b"), Algorithm::EdDSA).len(), 1);
        assert_eq!(cache.matching(Some("r"), Algorithm::EdDSA).len(), 0);
    }
}
