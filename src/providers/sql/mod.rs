//! The SQL sources: one front over engines. `front.rs` (`SqlSource`) is everything a database
//! source does whatever its engine — the URI grammar, listing, templates, completion, named
//! queries, the template tools and the SQL tool; each engine folder (`sqlite/`, `postgres/`,
//! `mysql/`) implements `engine::Engine` (connect or open, list, describe, run one statement
//! read-only) and its manifest section (`section.rs` there: its own keys and their checks, and how
//! its source is built). Shared below them: `text.rs` (the SQL tokenizer and text checks),
//! `query.rs` (statements, named queries and their values), `rows.rs` (rows → JSON within
//! `row_limit` and `max_size`), `section.rs` (the keys every engine's section has), `tool.rs`
//! (the SQL tool).
//!
//! Adding an engine: a folder here with its `Engine` and its `Section`, its `mod` line below and
//! its line in `ENGINES` (then `schema --write`: the JSON Schema lists the sections). Nothing else
//! in the crate names an engine; only an engine whose SQL is quoted unlike SQLite's,
//! PostgreSQL's and MySQL's also adds its `text::Dialect` (the tokenizer's rules).

mod engine;
mod front;
pub(crate) mod pool;
pub(crate) mod query;
pub(crate) mod rows;
pub(crate) mod section;
mod server;
pub(crate) mod text;
mod tool;
pub(crate) mod url;

pub(crate) mod mysql;
pub(crate) mod postgres;
pub(crate) mod sqlite;

pub(crate) use engine::Target;
pub(crate) use front::SqlSource;
pub(crate) use query::{NamedQuery, Statement};

use super::Source;

/// Every SQL engine's manifest section, in the order the schema lists them.
pub(crate) static ENGINES: [&dyn section::Section; 3] =
    [&sqlite::SECTION, &postgres::SECTION, &mysql::SECTION];
