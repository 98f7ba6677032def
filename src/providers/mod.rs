//! Resource providers (files, SQL databases, git, user templates): the one `Source` interface every kind
//! implements, the plain types they answer with, and what they share (`blocking`, `paths`).
//! Nothing here knows MCP: `server/` converts these types to the wire.
//!
//! A new kind of source is one file here implementing `Source`, one line in `Registry::build`,
//! and its manifest section; nothing else in the crate names a kind.

pub(crate) mod admit;
pub(crate) mod arrival;
pub(crate) mod files;
pub(crate) mod git;
pub(crate) mod paths;
pub(crate) mod platform;
pub(crate) mod skills;
pub(crate) mod spec;
pub(crate) mod sql;
pub(crate) mod template;
pub(crate) mod tool;
pub(crate) mod visible;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use crate::quote::{Quote, quote};
use crate::watch::Change;

/// A new [`Source::listing_stamp`]: larger than every one given before, so the largest stamp
/// of a registry's sources changes whenever one of them does.
pub(crate) fn next_listing_stamp() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A boxed future, so `Source` can be used as a trait object.
pub(crate) type BoxFut<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// One live source of resources. The registry holds `Arc<dyn Source>` in manifest order, loops
/// and delegates. Each method does its own blocking work off the async runtime (`blocking`), so
/// callers just await.
pub(crate) trait Source: Send + Sync + std::fmt::Debug + 'static {
    /// Whether `uri` belongs to this source (no IO; it may still be "not found").
    fn owns(&self, uri: &str) -> bool;

    /// Sources whose URIs are patterns anyone may write (`[templates]`) are tried after the
    /// sources with URIs of their own when a URI is read.
    fn tried_last(&self) -> bool {
        false
    }

    /// The longest URI this source is asked to read (`Registry::read` refuses a longer one, or
    /// skips this source for it): `MAX_URI_BYTES`, or more for a source that never matches a
    /// URI against a pattern.
    fn max_uri_bytes(&self) -> usize {
        MAX_URI_BYTES
    }

    /// Every resource, in this source's order.
    fn list(self: Arc<Self>) -> BoxFut<Result<Vec<ResourceInfo>, RequestError>>;

    /// At most `limit` resources (at least one) that follow `after` in this source's order, and
    /// the key to resume from when more follow. `after` is a key this source gave out before
    /// (opaque to callers); one it cannot have given is invalid params. The default lists
    /// everything and resumes from an offset; a source with many resources resumes in O(page).
    fn list_page(
        self: Arc<Self>,
        after: Option<String>,
        limit: usize,
    ) -> BoxFut<Result<PageOf<ResourceInfo>, RequestError>> {
        Box::pin(async move {
            let all = self.list().await?;
            let start = match after.as_deref() {
                None => 0,
                Some(k) => k
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n <= all.len())
                    .ok_or_else(|| RequestError::InvalidParams("invalid cursor".into()))?,
            };
            let end = start.saturating_add(limit.max(1)).min(all.len());
            let next = (end < all.len()).then(|| end.to_string());
            let items = all.into_iter().skip(start).take(end - start).collect();
            Ok(PageOf { items, next })
        })
    }

    /// The URI templates (no IO).
    fn templates(&self) -> Vec<TemplateInfo>;

    /// Reads one URI this source owns. A read that takes a few system calls may finish when
    /// first polled (a small local file); the caller awaits it either way.
    fn read(self: Arc<Self>, uri: String) -> BoxFut<Result<Contents, RequestError>>;

    /// Whether `uri` names something this source would read (for subscriptions: a hidden file,
    /// a table that does not exist, a URI of no source are not found). Reads nothing large and
    /// runs nothing.
    fn serves(self: Arc<Self>, uri: String) -> BoxFut<bool>;

    /// Completes a variable of one of this source's templates (`templates()` lists it).
    fn complete(
        self: Arc<Self>,
        req: CompletionRequest,
    ) -> BoxFut<Result<Completion, RequestError>>;

    /// The folders a watcher must watch (each non-recursively) for this source's changes; none
    /// when the source is not watched.
    fn watch_dirs(self: Arc<Self>) -> BoxFut<Vec<PathBuf>>;

    /// The folders to poll instead (`watch = "poll"`), each with how often.
    fn poll_dirs(self: Arc<Self>) -> BoxFut<Vec<(PathBuf, std::time::Duration)>> {
        Box::pin(std::future::ready(Vec::new()))
    }

    /// The folders `watch_dirs` and `poll_dirs` gave are watched now: every change from here on
    /// is seen. What a source cached before may miss a change made while the watches were set
    /// up (a files source keeps its listing only once this is said).
    fn watch_ready(&self) {}

    /// A number that stays the same exactly while what `list_page` gives stays the same (for
    /// every `after` and `limit`), drawn from [`next_listing_stamp`] each time that changes;
    /// `None` (the default) when the source cannot say (it lists nothing kept). Lets the server
    /// keep a listing's answer as written (`server::shared::Snapshot::resource_page`).
    fn listing_stamp(&self) -> Option<u64> {
        None
    }

    /// Applies a batch of changes: drops stale caches and says what changed.
    fn apply_changes(self: Arc<Self>, changes: Arc<[Change]>) -> BoxFut<ChangeEffect>;

    /// Whether one of `changes` changes what `uri` (owned here, subscribed) reads as. No IO.
    fn affected(&self, uri: &str, changes: &[Change]) -> bool;

    /// How often this source is asked which subscribed URIs changed (`poll`), for sources whose
    /// changes no file shows (a database server). `None`: never.
    fn poll_interval(&self) -> Option<std::time::Duration> {
        None
    }

    /// Which of `uris` (owned here, subscribed) changed since the previous poll. A URI seen
    /// for the first time is a baseline, not a change (`serves` takes one when it subscribes).
    fn poll(self: Arc<Self>, _uris: Vec<String>) -> BoxFut<Vec<String>> {
        ready(Vec::new())
    }

    /// This source's resource templates with their typed variables and the tools
    /// `template_tools` makes of them (see `tools::templates`). No IO.
    fn template_specs(&self) -> Vec<crate::providers::spec::TemplateSpec> {
        Vec::new()
    }

    /// `check`'s warnings: what will fail at run time without stopping `serve` (a database that
    /// cannot be reached, SQL it rejects). May connect, with a short timeout.
    fn warnings(self: Arc<Self>) -> BoxFut<Vec<(crate::manifest::Loc, String)>> {
        ready(Vec::new())
    }

    /// Tools of this source's own, beside its templates' (a database's SQL tool). No IO.
    fn tools(&self) -> Vec<tool::ToolInfo> {
        Vec::new()
    }

    /// Calls the tool `name` of `tools()`; a failure is an `isError` result.
    fn call_tool(
        self: Arc<Self>,
        name: String,
        _args: serde_json::Map<String, serde_json::Value>,
    ) -> BoxFut<tool::ToolResult> {
        ready(tool::ToolResult::error(format!("unknown tool `{name}`")))
    }

    /// The server is stopping: stop what runs elsewhere on this source's behalf (queries on a
    /// database server) and close its connections.
    fn close(self: Arc<Self>) -> BoxFut<()> {
        ready(())
    }
}

/// A SQL database a `[templates]` entry may read through (`sqlite = "…"`, `postgres = "…"`,
/// `mysql = "…"`).
pub(crate) trait Database: Send + Sync + std::fmt::Debug {
    fn name(&self) -> &str;

    /// Which section the source comes from (`sqlite`, `postgres`, `mysql`: the template key that
    /// names it).
    fn section(&self) -> &'static str;

    /// Checks a template's `sql` against its variables (binding order) and compiles it.
    fn check_template_sql<'a>(
        &'a self,
        check: SqlCheck<'a>,
        diags: &'a mut crate::manifest::Diagnostics,
    ) -> Pin<Box<dyn Future<Output = Option<sql::Statement>> + Send + 'a>>;

    /// Runs a checked statement with its values (in the template's variable order) bound; JSON
    /// content like a named query.
    fn read_sql(
        self: Arc<Self>,
        uri: String,
        statement: sql::Statement,
        args: Vec<crate::params::Typed>,
        mime_type: Option<String>,
    ) -> BoxFut<Result<Contents, RequestError>>;
}

/// What `Database::check_template_sql` checks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SqlCheck<'a> {
    /// `[templates.NAME]`, for messages.
    pub context: &'a str,
    pub sql: &'a str,
    pub loc: crate::manifest::Loc,
    /// The URI template, for messages.
    pub uri: &'a str,
    /// The template's variables: the only `:name` parameters the SQL may use.
    pub vars: &'a [&'a str],
}

/// A `completion/complete` for a resource template.
#[derive(Debug, Clone)]
pub(crate) struct CompletionRequest {
    pub template: String,
    pub var: String,
    pub prefix: String,
    /// Values of the template's other variables already chosen.
    pub context: HashMap<String, String>,
}

/// What a batch of changes means for one source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ChangeEffect {
    /// The resource list changed (`notifications/resources/list_changed`).
    pub list_changed: bool,
    /// When `list_changed`: every URI that came or went, when the source can say (a file
    /// added or removed); `None` when it cannot (events lost, ignore rules edited, a folder
    /// came): then every session hears of it. A session of a group hears of a change only when
    /// one of these URIs is in its group (`server::shared`), so a file added outside
    /// `[groups.NAME]` costs its clients nothing, and deciding that costs one filter test per
    /// URI, never a listing.
    pub came_or_went: Option<Vec<String>>,
    /// The set of folders to watch must be recomputed.
    pub rewatch: bool,
}

impl ChangeEffect {
    /// The list changed, and these URIs (`None`: unknown ones) came or went.
    pub fn listed(uris: Option<Vec<String>>) -> ChangeEffect {
        ChangeEffect {
            list_changed: true,
            came_or_went: uris,
            rewatch: false,
        }
    }

    pub fn merge(&mut self, other: ChangeEffect) {
        if other.list_changed {
            self.came_or_went = match (self.list_changed, self.came_or_went.take()) {
                (false, _) => other.came_or_went,
                (true, Some(mut mine)) => other.came_or_went.map(|theirs| {
                    mine.extend(theirs);
                    mine
                }),
                (true, None) => None,
            };
            self.list_changed = true;
        }
        self.rewatch |= other.rewatch;
    }
}

/// Runs blocking work (a directory walk, a file read, a git2 call) on tokio's blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, RequestError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RequestError::Internal(format!("a worker failed: {e}")))
}

/// `blocking` for a fallible job, boxed for a `Source` method.
pub(crate) fn on_blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RequestError> + Send + 'static,
) -> BoxFut<Result<T, RequestError>> {
    Box::pin(async move { blocking(f).await? })
}

/// `blocking` for a job that cannot fail (a panic gives `fallback`), boxed.
pub(crate) fn on_blocking_or<T: Send + 'static>(
    fallback: T,
    f: impl FnOnce() -> T + Send + 'static,
) -> BoxFut<T> {
    Box::pin(async move { blocking(f).await.unwrap_or(fallback) })
}

/// A ready answer, boxed for a `Source` method.
pub(crate) fn ready<T: Send + 'static>(value: T) -> BoxFut<T> {
    Box::pin(std::future::ready(value))
}

/// One page of a source's listing: the items, and the key to resume after them when more follow.
#[derive(Debug)]
pub(crate) struct PageOf<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

/// One listed resource.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResourceInfo {
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
pub(crate) struct TemplateInfo {
    pub uri_template: String,
    pub name: String,
    pub description: Option<String>,
    pub mime_type: Option<String>,
}

/// What a read returns: text (valid UTF-8) or bytes (sent base64).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
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

    /// How many bytes it holds.
    pub fn len(&self) -> usize {
        match self {
            Body::Text(t) => t.len(),
            Body::Bytes(b) => b.len(),
        }
    }
}

/// The contents of one read resource.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Contents {
    pub uri: String,
    pub mime_type: Option<String>,
    pub body: Body,
}

/// Why a read (or completion) failed. `server.rs` maps these to JSON-RPC errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum RequestError {
    /// The same answer for missing, hidden and outside: nothing about the outside is revealed.
    /// The URI is the client's: its message quotes it cut (`crate::quote`).
    #[error("resource not found: {}", quote(.0, Quote::Plain))]
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
pub(crate) struct Completion {
    pub values: Vec<String>,
    pub total: Option<usize>,
    pub has_more: bool,
}

/// The most values one completion answer carries (the MCP limit).
pub(crate) const MAX_COMPLETIONS: usize = 100;

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

/// The longest URI a request may name (read, subscribe, listen, and the resource and template
/// tools, which read through the same path), in bytes. Every URI a source lists is far shorter
/// (a file's holds its path, at most `PATH_MAX`, 4 KiB, percent-encoded: 12 KiB); only values a
/// client writes into a URI (a query string, a template's variables) make one longer. And a URI
/// costs time in proportion to its length on the runtime thread: a template whose scheme it
/// fits matches it with captures, at about 250 ns a byte (a 14 MB URI took 4 s in a release
/// build, 64 KiB takes under 20 ms).
pub(crate) const MAX_URI_BYTES: usize = 64 * 1024;

/// The longest URI a SQL source (SQLite, PostgreSQL, MySQL) reads: its URIs are split and
/// percent-decoded, never matched against a pattern, so a named query's values may be long (a
/// 1 MiB text bound as one value). Bounded by the 16 MiB message anyway; reading one costs time
/// in proportion to its length (a few nanoseconds a byte), as any message does.
pub(crate) const MAX_QUERY_URI_BYTES: usize = 4 * 1024 * 1024;

/// Refuses a URI longer than `MAX_URI_BYTES`, before any source looks at it
/// (`Registry::serves` and the subscriptions call this first).
pub(crate) fn check_uri_length(uri: &str) -> Result<(), RequestError> {
    check_uri_length_at(uri, MAX_URI_BYTES)
}

/// Refuses a URI longer than `limit` bytes (`Source::max_uri_bytes`).
pub(crate) fn check_uri_length_at(uri: &str, limit: usize) -> Result<(), RequestError> {
    if uri.len() <= limit {
        return Ok(());
    }
    Err(RequestError::InvalidParams(format!(
        "the URI {} is {} bytes long; a URI may have at most {} ({limit} bytes): shorten the values in it",
        quote(uri, Quote::Code),
        uri.len(),
        crate::manifest::expand::format_size(limit as u64),
    )))
}

/// Percent-encodes what may not stand raw in a URI path: space, `%`, `#`, `?`, quotes, brackets,
/// control characters and non-ASCII. `/` and the other path characters stay as they are.
pub(crate) fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    encode_path_into(&mut out, path);
    out
}

/// `encode_path`, appended to `out`.
pub(crate) fn encode_path_into(out: &mut String, path: &str) {
    encode(out, path, |b| {
        b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b)
    });
}

/// Percent-encodes everything but RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`), as
/// RFC 6570 expands a simple `{var}`: one URI segment whatever the text holds.
pub(crate) fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    encode(&mut out, text, |b| {
        b.is_ascii_alphanumeric() || b"-._~".contains(&b)
    });
    out
}

/// Appends `text` to `out`, the bytes `keep` keeps (ASCII) as they are, every other as `%XX`.
fn encode(out: &mut String, text: &str, keep: fn(u8) -> bool) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    if text.bytes().all(keep) {
        out.push_str(text);
        return;
    }
    out.reserve(text.len());
    for b in text.bytes() {
        if keep(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
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

    /// A URI over the limit is refused by its length alone, with a message of bounded size that
    /// says the limit; one at the limit passes (to the sources, which match it).
    #[test]
    fn uris_over_64_kib_are_refused_by_length() {
        let at_limit = format!("note://{}", "x".repeat(MAX_URI_BYTES - "note://".len()));
        assert_eq!(check_uri_length(&at_limit), Ok(()));
        assert_eq!(
            check_uri_length(&format!("{at_limit}x")).map_err(|_| ()),
            Err(())
        );
        let huge = format!("note199://{}", "é".repeat(7_000_000));
        let Err(RequestError::InvalidParams(m)) = check_uri_length(&huge) else {
            panic!("a 14 MB URI passed");
        };
        assert!(m.len() < 1024, "{} bytes", m.len());
        assert!(
            m.starts_with("the URI `note199://éé") && m.ends_with(
                "…` (7000010 characters) is 14000010 bytes long; a URI may have at most 64 KiB (65536 bytes): shorten the values in it"
            ),
            "{m}"
        );
        // "Not found" quotes the URI it could not find cut too.
        let not_found = RequestError::NotFound(huge).to_string();
        assert!(
            not_found.ends_with("… (7000010 characters)"),
            "{not_found:.200}"
        );
        assert!(not_found.len() < 1024);
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
