//! The SQL sources: one front over engines. `front.rs` (`SqlSource`) is everything a database
//! source does whatever its engine — the URI grammar, listing, templates, completion, named
//! queries, the template tools and the SQL tool; each engine folder (`sqlite/`, `postgres/`,
//! `mysql/`) implements `engine::Engine` (connect or open, list, describe, run one statement
//! read-only) and `build.rs` (`build`: its source built from its checked keys). Shared below
//! them: `text.rs` (the SQL tokenizer and text checks), `query.rs` (statements, named queries and
//! their values), `rows.rs` (rows → JSON within `row_limit` and `max_size`), `tool.rs` (the SQL
//! tool); for server engines `pool.rs` (connections, a `Driver` per engine) and `server.rs`
//! (`Server`: transactions, catalog reads, `check`, errors), so that one holds only its SQL,
//! its error codes and its types. An engine's manifest section (its
//! keys and their checks) is `manifest/sql/ENGINE.rs`, below this module.
//!
//! Adding an engine: a folder here with its `Engine` and `build.rs`, its `mod` line below and its
//! arm in [`build`]; its section file in `manifest/sql/` with its `EngineKeys` variant and its
//! line in `ENGINES` there. Nothing else in the crate names an engine;
//! only an engine whose SQL is quoted unlike SQLite's, PostgreSQL's and MySQL's also adds its
//! `text::Dialect` (the tokenizer's rules), and `schema --write` lists its section.

mod engine;
mod front;
pub(crate) mod pool;
pub(crate) mod query;
pub(crate) mod rows;
mod server;
pub(crate) mod text;
mod tool;

pub(crate) mod mysql;
pub(crate) mod postgres;
pub(crate) mod sqlite;

pub(crate) use engine::Target;
pub(crate) use front::SqlSource;
pub(crate) use query::{NamedQuery, Statement};

use std::sync::Arc;

use super::Source;
use crate::manifest::Diagnostics;
use crate::manifest::sql::{DatabaseDef, EngineKeys};

/// A built database source: what the registry lists and reads, and what `sql` templates query.
pub(crate) struct Built {
    pub source: Arc<dyn Source>,
    pub database: Arc<dyn super::Database>,
}

/// Builds the source of a checked entry (a SQLite file is opened and checked here; a server is
/// not connected to): the one place that maps an engine's manifest keys to the engine (one line
/// per engine). `None` after reporting why it cannot be built.
pub(crate) async fn build(def: &DatabaseDef, diags: &mut Diagnostics) -> Option<Built> {
    match &def.engine {
        EngineKeys::Sqlite(k) => sqlite::build(k, def, diags).await,
        EngineKeys::Postgres(k) => postgres::build(k, def, diags).await,
        EngineKeys::Mysql(k) => mysql::build(k, def, diags).await,
    }
}
