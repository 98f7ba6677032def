//! `[sqlite.NAME]`'s own key (`path`) and its checks: the file must
//! exist, be a regular file and open as a SQLite database (read-only, never created).

use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{EngineKeys, Section, keys};
use crate::manifest::Loc;
use crate::manifest::raw::Sp;

/// The section.
pub(crate) static SECTION: Section = Section {
    name: "sqlite",
    about: "SQLite databases, opened read-only.",
    keys_schema: |generator| RawSqlite::json_schema(generator),
    check: |cx, name, value| {
        let raw: RawSqlite = keys(cx, "sqlite", name, value)?;
        Some(EngineKeys::Sqlite(Arc::new(SqliteKeys {
            path: cx.path(raw.path.get()),
            path_loc: cx.loc(&raw.path),
        })))
    },
};

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
