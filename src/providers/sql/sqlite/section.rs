//! `[sqlite.NAME]`'s own key (`path`) and its checks, and how the source is built: the file must
//! exist, be a regular file and open as a SQLite database (read-only, never created).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use schemars::{JsonSchema, SchemaGenerator};
use serde::Deserialize;
use toml::Spanned;
use toml::de::DeValue;

use super::Sqlite;
use super::pool::{Pool, sqlite_message};
use crate::manifest::raw::Sp;
use crate::manifest::{Checker, Diagnostics, Loc};
use crate::providers::sql::SqlSource;
use crate::providers::sql::section::{Built, DatabaseDef, EngineDef, Section, keys};

/// The section.
pub(crate) static SECTION: SqliteSection = SqliteSection;

pub(crate) struct SqliteSection;

/// `[sqlite.NAME]`: a SQLite database, opened read-only.
#[derive(Debug, Deserialize, JsonSchema)]
struct RawSqlite {
    /// Database file, relative to the manifest's folder; it must exist.
    path: Sp<String>,
}

/// The checked key.
#[derive(Debug)]
struct SqliteDef {
    /// Absolute, not yet canonical.
    path: PathBuf,
    path_loc: Loc,
}

impl Section for SqliteSection {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn about(&self) -> &'static str {
        "SQLite databases, opened read-only."
    }

    fn keys_schema(&self, generator: &mut SchemaGenerator) -> schemars::Schema {
        RawSqlite::json_schema(generator)
    }

    fn check(
        &self,
        cx: &mut Checker<'_>,
        name: &str,
        value: &Spanned<DeValue<'_>>,
    ) -> Option<Arc<dyn EngineDef>> {
        let raw: RawSqlite = keys(cx, "sqlite", name, value)?;
        Some(Arc::new(SqliteDef {
            path: cx.path(raw.path.get()),
            path_loc: cx.loc(&raw.path),
        }))
    }
}

impl EngineDef for SqliteDef {
    /// The file must exist and be a database: it is opened (read-only, within `timeout`) and
    /// closed again; serving opens its own connections on first use.
    fn build<'a>(
        &'a self,
        def: &'a DatabaseDef,
        diags: &'a mut Diagnostics,
    ) -> Pin<Box<dyn Future<Output = Option<Built>> + Send + 'a>> {
        Box::pin(async move {
            let entry = def.entry();
            let shown = self.path.display();
            let given = self.path.clone();
            let canonical =
                tokio::task::spawn_blocking(move || crate::providers::platform::canonical(&given));
            let path = match canonical
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e)))
            {
                Ok(p) => p,
                Err(e) => {
                    let why = match e.kind() {
                        std::io::ErrorKind::NotFound => "no such file".to_owned(),
                        _ => e.to_string(),
                    };
                    diags.push(
                        self.path_loc,
                        format!(
                            "{entry} database `{shown}` cannot be opened: {why} (it is opened read-only and never created)"
                        ),
                    );
                    return None;
                }
            };
            if !tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_file()) {
                diags.push(
                    self.path_loc,
                    format!("{entry} `{shown}` is not a file: `path` names a SQLite database file"),
                );
                return None;
            }
            let pool = Pool::new(&path, def.timeout, def.max_size);
            let opened = pool
                .run_alone(|conn| {
                    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
                        r.get::<_, i64>(0)
                    })
                })
                .await;
            let why = match opened {
                Ok(ran) => ran.result.err().map(|e| sqlite_message(&e)),
                Err(e) => Some(e.to_string()),
            };
            if let Some(why) = why {
                diags.push(
                    self.path_loc,
                    format!("{entry} `{shown}` cannot be opened as a SQLite database: {why}"),
                );
                return None;
            }
            let engine = Sqlite {
                entry,
                path,
                row_limit: def.row_limit.max(1),
                max_size: usize::try_from(def.max_size).unwrap_or(usize::MAX),
                pool,
            };
            SqlSource::build(def, engine, diags).await
        })
    }
}
