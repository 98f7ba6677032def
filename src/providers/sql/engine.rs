//! The `Engine` trait: what one database engine (SQLite, PostgreSQL, MySQL) does for the SQL
//! front (`front.rs`), which does everything else. An engine connects (or opens), lists its tables
//! and views, writes its schema, and runs one statement with bound values inside its read-only
//! guard, turning the rows into the JSON answer within the source's `row_limit`, `max_size` and
//! `timeout`; its errors name the source (`[mysql.shop] …`) and never a password.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use super::query::Statement;
use super::text::Dialect;
use crate::manifest::Loc;
use crate::params::Typed;
use crate::providers::RequestError;
use crate::watch::Change;

/// A table or view as its URI names it, with a word for its kind (`Table`, `View`, …).
pub(crate) type Listed = (String, &'static str);

/// What a subscribed URI of a polled source watches (`Engine::stamps`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Schema,
    /// A table or view by its URI name.
    Table(String),
    /// A named query: what it reads is not known.
    Query,
}

/// One database engine behind the SQL front. The futures are `Send`: the front runs them on the
/// runtime (an engine does its blocking work on blocking threads itself).
pub(crate) trait Engine: Send + Sync + std::fmt::Debug + 'static {
    /// The tokenizer's rules for this engine's SQL.
    const DIALECT: Dialect;
    /// The engine's name as the SQL tool's description gives it (`MySQL/MariaDB`).
    const NAME: &'static str;

    /// Tables and views in listing order. An error is the request's (the front lists the rest of
    /// the source without them).
    fn tables(&self) -> impl Future<Output = Result<Vec<Listed>, RequestError>> + Send;

    /// Whether `name` is a table or view `tables` lists (subscriptions). While nothing can tell
    /// (a server that cannot be reached) the name is taken.
    fn is_listed(&self, name: &str) -> impl Future<Output = bool> + Send;

    /// The text of `NAME/schema`: the DDL of what `tables` lists.
    fn schema(&self) -> impl Future<Output = Result<String, RequestError>> + Send;

    /// The first `row_limit` rows of the listed table or view `name`, as the JSON answer; `None`
    /// when it is not listed.
    fn read_table(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<String>, RequestError>> + Send;

    /// Runs a checked statement (a named query's or a template's) with its values bound, in
    /// `statement.names` order, as the JSON answer. `uri` is what was read, for messages.
    fn run(
        &self,
        uri: &str,
        statement: &Statement,
        args: &[Typed],
    ) -> impl Future<Output = Result<String, RequestError>> + Send;

    /// Runs the SQL tool's statement (one statement that reads, without parameters, checked by
    /// `text::check_adhoc`) as the JSON answer. The engine's guard is what keeps it from
    /// writing: whatever the statement is, the database is not changed.
    fn run_adhoc(&self, sql: &str) -> impl Future<Output = Result<String, RequestError>> + Send;

    /// Why the SQL tool cannot be offered over this connection (the account can write outside
    /// the read-only transaction and the manifest does not accept it), asked before each call;
    /// `None`: it can.
    fn adhoc_refusal(&self) -> impl Future<Output = Option<String>> + Send {
        std::future::ready(None)
    }

    /// Compiles a statement while the manifest loads: `Some(Err(why))` when the database refuses
    /// it, `None` for an engine that checks statements only in `check` (it would have to
    /// connect).
    fn compile(
        &self,
        _statement: &Statement,
    ) -> impl Future<Output = Option<Result<(), String>>> + Send {
        std::future::ready(None)
    }

    /// `check`'s warnings (it may connect, with a short timeout): a database that cannot be
    /// reached, an account that can write outside the transaction, a statement of `statements`
    /// the database rejects (at its `loc`).
    fn warnings(
        &self,
        _statements: &[Statement],
    ) -> impl Future<Output = Vec<(Loc, String)>> + Send {
        std::future::ready(Vec::new())
    }

    /// Folders a watcher watches for this source's changes (a SQLite file's).
    fn watch_dirs(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    /// Whether one of `changes` changes what this source reads (a SQLite file's).
    fn changed_by(&self, _changes: &[Change]) -> bool {
        false
    }

    /// How often subscribed URIs are polled (`stamps`); `None`: never (a file is watched).
    fn poll_interval(&self) -> Option<Duration> {
        None
    }

    /// A stamp per target that moves when what it reads changes, read in one go; `None` when the
    /// database cannot be asked now.
    fn stamps(&self, _targets: &[Target]) -> impl Future<Output = Option<Vec<String>>> + Send {
        std::future::ready(None)
    }

    /// Whether the database being out of reach was said already (by `check`'s warnings): the
    /// listing then leaves the tables out without saying it again.
    fn reported_down(&self) -> bool {
        false
    }

    /// The schema resource's description and the table template's words after "A table or view
    /// of [SECTION.NAME] by name".
    fn schema_about(&self) -> String;
    fn table_about(&self) -> String {
        String::new()
    }

    /// Closes every connection (the server is stopping): nothing is left running on the
    /// database server.
    fn close(&self) -> impl Future<Output = ()> + Send {
        std::future::ready(())
    }
}
