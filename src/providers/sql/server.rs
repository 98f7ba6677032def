//! The keys every database-server section has (`[postgres]`, `[mysql]`): `url`,
//! `max_connections`, `poll_interval` and `accept_writes_outside_transaction`, their checks, and
//! their part of the section's JSON Schema.

use std::time::Duration;

use schemars::{JsonSchema, SchemaGenerator};
use serde::Deserialize;
use toml::Spanned;
use toml::de::DeValue;

use super::pool::{BeginError, Driver, Lease};
use super::section::keys;
use super::url::{DbUrl, UrlRules};
use crate::manifest::expand::format_duration;
use crate::manifest::raw::{DurationStr, Sp};
use crate::manifest::{Checker, Loc};
use crate::providers::RequestError;

/// Default `max_connections`.
pub const DEFAULT_CONNECTIONS: u32 = 4;
/// Default `poll_interval` of a watched source.
pub const DEFAULT_POLL: Duration = Duration::from_secs(2);
/// How long opening a connection may take (also `check`'s probe), unless the URL's
/// `connect_timeout` says otherwise.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Beyond the statement time limit, how long a request may wait for the server before its
/// statement is stopped and its connection closed (a server that stopped answering).
pub const GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Deserialize, JsonSchema)]
struct RawServerKeys {
    /// Connection URL (`${VAR}` is replaced from the environment); the password is never
    /// printed.
    url: Sp<String>,
    /// Connections opened at most; more reads wait their turn (default 4).
    #[schemars(range(min = 1, max = 100))]
    max_connections: Option<Sp<u64>>,
    /// How often subscribed resources are polled for changes (default 2s).
    poll_interval: Option<Sp<DurationStr>>,
    /// Let the SQL tool run even when the account can write outside its read-only transaction
    /// (default false: the tool refuses, and `check` warns either way).
    accept_writes_outside_transaction: Option<bool>,
}

/// The checked keys.
#[derive(Debug)]
pub(crate) struct ServerKeys {
    pub url: DbUrl,
    pub url_loc: Loc,
    pub max_connections: u32,
    pub poll_interval: Duration,
    /// `accept_writes_outside_transaction`.
    pub accept_risks: bool,
}

impl ServerKeys {
    /// Checks the server keys of `[SECTION.NAME]` (`value` is the whole entry); `None` after
    /// reporting a problem (an entry without a URL has no meaning).
    pub(crate) fn check(
        cx: &mut Checker<'_>,
        section: &str,
        name: &str,
        value: &Spanned<DeValue<'_>>,
        rules: &UrlRules,
    ) -> Option<ServerKeys> {
        let p: RawServerKeys = keys(cx, section, name, value)?;
        let before = cx.problems();
        let max_connections = match &p.max_connections {
            None => DEFAULT_CONNECTIONS,
            Some(n) if (1..=100).contains(n.get()) => {
                u32::try_from(*n.get()).unwrap_or(DEFAULT_CONNECTIONS)
            }
            Some(n) => {
                cx.err(
                    n,
                    format!("[{section}.{name}] `max_connections` must be between 1 and 100"),
                );
                DEFAULT_CONNECTIONS
            }
        };
        let url = match DbUrl::parse(p.url.get(), rules) {
            Ok(u) => Some(u),
            Err(why) => {
                cx.err(&p.url, format!("[{section}.{name}] `url`: {why}"));
                None
            }
        };
        let poll_interval = cx.duration(&p.poll_interval, DEFAULT_POLL);
        if let Some(t) = &p.poll_interval
            && poll_interval < Duration::from_millis(100)
        {
            cx.err(
                t,
                format!("[{section}.{name}] `poll_interval` must be at least 100ms"),
            );
        }
        if cx.problems() != before {
            return None;
        }
        Some(ServerKeys {
            url: url?,
            url_loc: cx.loc(&p.url),
            max_connections,
            poll_interval,
            accept_risks: p.accept_writes_outside_transaction.unwrap_or(false),
        })
    }

    /// `own` (an engine's other keys) with the server keys before them, `url` described as
    /// `url_about` says.
    pub(crate) fn schema(
        generator: &mut SchemaGenerator,
        own: schemars::Schema,
        url_about: &str,
    ) -> schemars::Schema {
        use serde_json::{Map, Value};
        let mut keys = RawServerKeys::json_schema(generator).to_value();
        if let Some(url) = keys.pointer_mut("/properties/url/description") {
            *url = Value::String(url_about.to_owned());
        }
        let mut own = own.to_value();
        let mut props: Map<String, Value> = keys
            .get_mut("properties")
            .and_then(Value::as_object_mut)
            .map(std::mem::take)
            .unwrap_or_default();
        if let Some(more) = own.get_mut("properties").and_then(Value::as_object_mut) {
            props.extend(std::mem::take(more));
        }
        let mut required: Vec<Value> = Vec::new();
        for s in [&keys, &own] {
            if let Some(Value::Array(r)) = s.get("required") {
                required.extend(r.iter().cloned());
            }
        }
        let mut out = Map::new();
        out.insert("type".into(), Value::String("object".into()));
        out.insert("properties".into(), Value::Object(props));
        out.insert("required".into(), Value::Array(required));
        schemars::Schema::from(out)
    }
}

/// How a server source words what goes wrong: its entry and target (never the password, which
/// is scrubbed from whatever the server or the driver said), and how long a statement may run.
pub(crate) struct Voice<'a> {
    /// `[postgres.crm]`
    pub entry: &'a str,
    /// "database `crm` on db.example.com:5432 as `app`"
    pub target: &'a str,
    pub url: &'a DbUrl,
    pub timeout: Duration,
    /// What the server (or the connection) said, without sqlx's wrapping.
    pub message: fn(&sqlx::Error) -> String,
}

impl Voice<'_> {
    /// `text` with the URL's password replaced by `***`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.url.scrub(text)
    }

    pub(crate) fn connect_failed(&self, e: &sqlx::Error) -> String {
        self.scrub(&format!(
            "{} cannot connect to {}: {}",
            self.entry,
            self.target,
            (self.message)(e)
        ))
    }

    pub(crate) fn begin_failed<D: Driver>(&self, e: &BeginError) -> String {
        match e {
            BeginError::Connect(e) => self.connect_failed(e),
            BeginError::Begin(e) if D::is_connection_error(e) => self.connect_failed(e),
            BeginError::Begin(e) => self.scrub(&format!(
                "{} cannot start a read-only transaction on {}: {}",
                self.entry,
                self.target,
                (self.message)(e)
            )),
        }
    }

    /// `check`'s warning for a database that cannot be reached.
    pub(crate) fn unreachable<D: Driver>(&self, e: &BeginError) -> String {
        format!(
            "{}; `serve` starts anyway and answers each request with this error until the database can be reached",
            self.begin_failed::<D>(e)
        )
    }

    pub(crate) fn timed_out(&self) -> RequestError {
        RequestError::Refused(format!(
            "{} the query ran longer than {} (`timeout`) and was stopped",
            self.entry,
            format_duration(self.timeout)
        ))
    }

    /// Ends a request's transaction after a catalog query, mapping its errors (`db_failed` for
    /// the statement's own).
    pub(crate) fn settle<D: Driver, T>(
        &self,
        lease: Lease<D>,
        result: Result<Result<T, sqlx::Error>, tokio::time::error::Elapsed>,
        db_failed: impl FnOnce(&sqlx::Error) -> RequestError,
    ) -> Result<T, RequestError> {
        match result {
            Ok(Ok(v)) => {
                lease.finish();
                Ok(v)
            }
            Ok(Err(e)) if D::is_connection_error(&e) => {
                lease.discard();
                Err(RequestError::Refused(self.connect_failed(&e)))
            }
            Ok(Err(e)) => {
                lease.finish();
                Err(db_failed(&e))
            }
            Err(_) => {
                lease.abandon();
                Err(self.timed_out())
            }
        }
    }
}
