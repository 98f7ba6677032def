//! `[postgres.NAME]`'s own keys (`url`, `schemas`, `max_connections`, `poll_interval`,
//! `accept_writes_outside_transaction`) and their checks, and how the source is built (without
//! connecting).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use schemars::{JsonSchema, SchemaGenerator};
use serde::Deserialize;
use sqlx::ConnectOptions as _;
use sqlx::postgres::PgConnectOptions;
use toml::Spanned;
use toml::de::DeValue;

use super::pool::Pool;
use super::{CONNECT_TIMEOUT, PgUrl, Postgres, describe_target};
use crate::manifest::raw::{DurationStr, Sp};
use crate::manifest::{Checker, Diagnostics, Loc};
use crate::providers::sql::SqlSource;
use crate::providers::sql::section::{Built, DatabaseDef, EngineDef, Section, value_de};

/// Default `max_connections` of a postgres source.
pub const DEFAULT_CONNECTIONS: u32 = 4;
/// Default `poll_interval` of a watched postgres source.
pub const DEFAULT_POLL: Duration = Duration::from_secs(2);

/// The section.
pub(crate) static SECTION: PostgresSection = PostgresSection;

pub(crate) struct PostgresSection;

/// `[postgres.NAME]`: a PostgreSQL database, read-only.
#[derive(Debug, Deserialize, JsonSchema)]
struct RawPostgres {
    /// Connection URL, e.g. "${DATABASE_URL}" or
    /// "postgres://user:password@host:5432/db?sslmode=require"; TLS through `sslmode`.
    url: Sp<String>,
    /// Schemas whose tables and views are listed (default ["public"]). Tables of the first are
    /// named by their name, the others as `schema.table`.
    #[schemars(length(min = 1))]
    schemas: Option<Sp<Vec<Sp<String>>>>,
    /// Connections opened at most; more reads wait their turn (default 4).
    #[schemars(range(min = 1, max = 100))]
    max_connections: Option<Sp<u64>>,
    /// How often subscribed resources are polled for changes (default 2s).
    poll_interval: Option<Sp<DurationStr>>,
    /// Let the SQL tool run even when the role can write outside its read-only transaction
    /// (`dblink`, `lo_export`, untrusted languages, foreign servers, superuser; default false:
    /// the tool refuses, and `check` warns either way).
    accept_writes_outside_transaction: Option<bool>,
}

/// The checked keys.
#[derive(Debug)]
struct PostgresDef {
    url: PgUrl,
    url_loc: Loc,
    /// At least one; the first one's tables are named without their schema.
    schemas: Vec<String>,
    max_connections: u32,
    poll_interval: Duration,
    accept_risks: bool,
}

impl Section for PostgresSection {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn about(&self) -> &'static str {
        "PostgreSQL databases, read by the engine only (every statement in a rolled-back `READ ONLY` transaction)."
    }

    fn keys_schema(&self, generator: &mut SchemaGenerator) -> schemars::Schema {
        RawPostgres::json_schema(generator)
    }

    fn check(
        &self,
        cx: &mut Checker<'_>,
        name: &str,
        value: &Spanned<DeValue<'_>>,
    ) -> Option<Arc<dyn EngineDef>> {
        let p = match RawPostgres::deserialize(value_de(value)) {
            Ok(r) => r,
            Err(e) => {
                let at = e.span().map_or(value.span().start, |s| s.start);
                cx.err_at(at, format!("[postgres.{name}] {}", e.message().trim()));
                return None;
            }
        };
        let before = cx.problems();
        let mut schemas: Vec<String> = Vec::new();
        match &p.schemas {
            None => schemas.push("public".into()),
            Some(list) => {
                if list.get().is_empty() {
                    cx.err(list, format!("[postgres.{name}] `schemas` is empty; name at least one schema (default [\"public\"])"),
                    );
                }
                for s in list.get() {
                    if s.get().is_empty() || s.get().contains('\0') {
                        cx.err(
                            s,
                            format!(
                                "[postgres.{name}] `{}` is not a schema name",
                                s.get().escape_debug()
                            ),
                        );
                    } else if schemas.contains(s.get()) {
                        cx.err(
                            s,
                            format!("[postgres.{name}] schema `{}` is listed twice", s.get()),
                        );
                    } else {
                        schemas.push(s.get().clone());
                    }
                }
            }
        }
        let max_connections = match &p.max_connections {
            None => DEFAULT_CONNECTIONS,
            Some(n) if (1..=100).contains(n.get()) => {
                u32::try_from(*n.get()).unwrap_or(DEFAULT_CONNECTIONS)
            }
            Some(n) => {
                cx.err(
                    n,
                    format!("[postgres.{name}] `max_connections` must be between 1 and 100"),
                );
                DEFAULT_CONNECTIONS
            }
        };
        let url = match PgUrl::parse(p.url.get()) {
            Ok(u) => Some(u),
            Err(why) => {
                cx.err(&p.url, format!("[postgres.{name}] `url`: {why}"));
                None
            }
        };
        let poll_interval = cx.duration(&p.poll_interval, DEFAULT_POLL);
        if let Some(t) = &p.poll_interval
            && poll_interval < Duration::from_millis(100)
        {
            cx.err(
                t,
                format!("[postgres.{name}] `poll_interval` must be at least 100ms"),
            );
        }
        // An entry with a problem has no meaning (a source without a URL): set aside.
        if cx.problems() != before {
            return None;
        }
        Some(Arc::new(PostgresDef {
            url: url?,
            url_loc: cx.loc(&p.url),
            schemas,
            max_connections,
            poll_interval,
            accept_risks: p.accept_writes_outside_transaction.unwrap_or(false),
        }))
    }
}

impl EngineDef for PostgresDef {
    /// Without connecting: the URL must parse into sqlx's options.
    fn build<'a>(
        &'a self,
        def: &'a DatabaseDef,
        diags: &'a mut Diagnostics,
    ) -> Pin<Box<dyn Future<Output = Option<Built>> + Send + 'a>> {
        Box::pin(async move {
            let entry = def.entry();
            let options = match PgConnectOptions::from_url(self.url.url()) {
                Ok(o) => o,
                Err(e) => {
                    let why = self.url.scrub(&e.to_string());
                    diags.push(self.url_loc, format!("{entry} `url`: {why}"));
                    return None;
                }
            };
            let target = describe_target(&options);
            let pool = Pool::new(
                options,
                self.max_connections,
                def.timeout,
                self.url.connect_timeout.unwrap_or(CONNECT_TIMEOUT),
            );
            let engine = Postgres {
                entry,
                schemas: self.schemas.clone(),
                row_limit: def.row_limit.max(1),
                max_size: usize::try_from(def.max_size).unwrap_or(usize::MAX),
                poll_interval: self.poll_interval,
                url_loc: self.url_loc,
                target,
                url: self.url.clone(),
                timeout: def.timeout,
                pool,
                plans: std::sync::Mutex::new(HashMap::new()),
                accept_risks: self.accept_risks,
                risks_seen: std::sync::Mutex::new(None),
                down_reported: AtomicBool::new(false),
            };
            SqlSource::build(def, engine, diags).await
        })
    }
}
