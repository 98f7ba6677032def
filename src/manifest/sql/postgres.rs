//! `[postgres.NAME]`'s own keys (`schemas`, and the server keys: `url`, `max_connections`,
//! `poll_interval`, `accept_writes_outside_transaction`) and their checks, and how the source is
//! built (without connecting).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;
use toml::de::DeValue;

use super::server::ServerKeys;
use super::{EngineKeys, Section, keys};
use crate::manifest::Checker;
use crate::manifest::raw::Sp;
use crate::manifest::sql::url::UrlRules;

/// `postgres://user:password@host:5432/db?sslmode=require`: the parameters sqlx understands are
/// passed on; anything else (libpq's `channel_binding`, `target_session_attrs`, …) is left out.
pub(crate) const URL_RULES: UrlRules = UrlRules {
    schemes: &["postgres", "postgresql"],
    example: "postgres://user:password@host:5432/database?sslmode=require",
    known: &[
        "sslmode",
        "ssl-mode",
        "sslrootcert",
        "ssl-root-cert",
        "ssl-ca",
        "sslcert",
        "ssl-cert",
        "sslkey",
        "ssl-key",
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "application_name",
        "options",
    ],
    known_prefixes: &["options["],
    defaults: &[("application_name", "mcp-manifest")],
    about: "Connection URL, e.g. \"${DATABASE_URL}\" or \"postgres://user:password@host:5432/db?sslmode=require\"; TLS through `sslmode`. The password is never printed.",
};

/// The section.
pub(crate) static SECTION: Section = Section {
    name: "postgres",
    about: "PostgreSQL databases, read by the engine only (every statement in a rolled-back `READ ONLY` transaction).",
    keys_schema: |generator| ServerKeys::schema::<RawPostgres>(generator, &URL_RULES),
    check,
};

/// `[postgres.NAME]`'s own keys (the server keys are `ServerKeys`).
#[derive(Debug, Deserialize, JsonSchema)]
struct RawPostgres {
    /// Schemas whose tables and views are listed (default ["public"]). Tables of the first are
    /// named by their name, the others as `schema.table`.
    #[schemars(length(min = 1))]
    schemas: Option<Sp<Vec<Sp<String>>>>,
}

/// The checked keys.
#[derive(Debug)]
pub struct PostgresKeys {
    pub(crate) server: ServerKeys,
    /// At least one; the first one's tables are named without their schema.
    pub(crate) schemas: Vec<String>,
}

/// Checks `schemas` and the server keys.
fn check(cx: &mut Checker<'_>, name: &str, value: &Spanned<DeValue<'_>>) -> Option<EngineKeys> {
    let p: RawPostgres = keys(cx, "postgres", name, value)?;
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
    let server = ServerKeys::check(cx, "postgres", name, value, &URL_RULES);
    // An entry with a problem has no meaning (a source without a URL): set aside.
    if cx.problems() != before {
        return None;
    }
    Some(EngineKeys::Postgres(Arc::new(PostgresKeys {
        server: server?,
        schemas,
    })))
}
