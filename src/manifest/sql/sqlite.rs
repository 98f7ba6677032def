//! `[sqlite.NAME]`'s own key (`path`) and its checks: the file must
//! exist, be a regular file and open as a SQLite database (read-only, never created).

use std::path::PathBuf;
use std::sync::Arc;

use schemars::{JsonSchema, SchemaGenerator};
use serde::Deserialize;
use toml::Spanned;
use toml::de::DeValue;

use super::{EngineKeys, Section, keys};
use crate::manifest::raw::Sp;
use crate::manifest::{Checker, Loc};

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
pub struct SqliteKeys {
    /// Absolute, not yet canonical.
    pub(crate) path: PathBuf,
    pub(crate) path_loc: Loc,
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
    ) -> Option<EngineKeys> {
        let raw: RawSqlite = keys(cx, "sqlite", name, value)?;
        Some(EngineKeys::Sqlite(Arc::new(SqliteKeys {
            path: cx.path(raw.path.get()),
            path_loc: cx.loc(&raw.path),
        })))
    }
}
