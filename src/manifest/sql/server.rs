//! The keys every database-server section has (`[postgres]`, `[mysql]`): `url`,
//! `max_connections`, `poll_interval` and `accept_writes_outside_transaction`, their checks, and
//! their part of the section's JSON Schema.

use std::time::Duration;

use schemars::{JsonSchema, SchemaGenerator};
use serde::Deserialize;
use toml::Spanned;
use toml::de::DeValue;

use super::keys;
use crate::manifest::raw::{DurationStr, Sp};
use crate::manifest::sql::url::{DbUrl, UrlRules};
use crate::manifest::{Checker, Loc};

/// Default `max_connections`.
pub const DEFAULT_CONNECTIONS: u32 = 4;
/// Default `poll_interval` of a watched source.
pub const DEFAULT_POLL: Duration = Duration::from_secs(2);
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

    /// `Own` (an engine's other keys) with the server keys before them, `url` described as
    /// `rules` say.
    pub(crate) fn schema<Own: JsonSchema>(
        generator: &mut SchemaGenerator,
        rules: &UrlRules,
    ) -> schemars::Schema {
        use serde_json::{Map, Value};
        let own = Own::json_schema(generator);
        let mut keys = RawServerKeys::json_schema(generator).to_value();
        if let Some(url) = keys.pointer_mut("/properties/url/description") {
            *url = Value::String(rules.about.to_owned());
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
