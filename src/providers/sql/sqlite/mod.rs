//! The SQLite engine (`[sqlite.NAME]`): a database file served read-only — its schema (the
//! `CREATE` statements), its tables and views, and statements run on rusqlite connections.
//! Each value is written by its own storage class (SQLite is dynamically typed), a BLOB as a
//! base64 string.
//!
//! Invariants: the database is opened with `SQLITE_OPEN_READONLY` (never created) and `PRAGMA
//! query_only = 1`; parameters are always bound, never spliced (a table name is quoted as one
//! identifier, and only names the database lists are read); statements run in one job each on a
//! blocking thread (`pool.rs`), never on the async runtime, and each is interrupted after the
//! source's `timeout` or when its request goes away. The named queries and `sql` templates are
//! compiled when the manifest loads (a connection opened for that and closed). The SQL tool's
//! statement runs on a connection of its own, closed after it, and only if SQLite says it does
//! not write (`sqlite3_stmt_readonly`).

mod build;
pub(crate) use build::build;
mod pool;
pub(crate) mod rows;

use std::path::PathBuf;

use pool::{Pool, sqlite_message};
use rows::collect;

use super::engine::{Engine, Listed};
use super::query::Statement;
use super::text::{self, Dialect, quote_ident};
use crate::manifest::expand::{format_duration, format_size};
use crate::params::Typed;
use crate::providers::RequestError;
use crate::watch::Change;

/// Rows of `pragma_table_list` for what `tables` lists, by the name bound as `?2`.
const LISTED_TABLE: &str = "SELECT 1 FROM pragma_table_list(?2) WHERE schema = 'main' \
     AND type IN ('table', 'view', 'virtual') AND lower(substr(name, 1, 7)) <> 'sqlite_'";
/// Whether the name bound as `?1` is listed.
const LISTED_TABLE_COUNT: &str = "SELECT count(*) FROM pragma_table_list(?1) WHERE schema = 'main' \
     AND type IN ('table', 'view', 'virtual') AND lower(substr(name, 1, 7)) <> 'sqlite_'";

/// One SQLite database.
#[derive(Debug)]
pub(crate) struct Sqlite {
    /// `[sqlite.NAME]`, for messages.
    entry: String,
    /// Canonical path of the database file.
    path: PathBuf,
    row_limit: u64,
    /// The largest answer, in bytes of JSON (`max_size`).
    max_size: usize,
    pool: Pool,
}

impl Sqlite {
    /// Whether one of `changes` is the database file or its WAL (`<path>-wal`).
    fn is_changed_by(&self, changes: &[Change]) -> bool {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        changes
            .iter()
            .any(|c| c.is_rescan() || c.path == self.path || c.path.as_os_str() == wal.as_os_str())
    }

    fn limit(&self) -> usize {
        usize::try_from(self.row_limit).unwrap_or(usize::MAX)
    }

    fn query_failed(&self, e: &rusqlite::Error, timed_out: bool) -> RequestError {
        if timed_out {
            RequestError::Refused(format!(
                "{} the query ran longer than {} (`timeout`) and was stopped",
                self.entry,
                format_duration(self.pool.timeout)
            ))
        } else {
            self.failed(e)
        }
    }

    fn failed(&self, e: &rusqlite::Error) -> RequestError {
        match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::TooBig => {
                RequestError::Refused(format!(
                    "{} a value or a row larger than {} (`max_size` of the source) was to be read or made, which SQLite is not let do (not even for `length()`): leave such values out, or raise `max_size` (at most 256 MiB)",
                    self.entry,
                    format_size(self.max_size as u64)
                ))
            }
            rusqlite::Error::SqliteFailure(..) | rusqlite::Error::SqlInputError { .. } => {
                RequestError::Refused(format!("{} {}", self.entry, sqlite_message(e)))
            }
            other => RequestError::Internal(format!("{}: {other}", self.entry)),
        }
    }

    /// Runs one statement with bound values and keeps at most `row_limit` rows (reading one more
    /// to know whether there were more). Rows are stepped one by one, so a huge result is never
    /// loaded.
    async fn fetch(&self, sql: &str, args: Vec<Typed>) -> Result<String, RequestError> {
        let (sql, limit, max_size) = (sql.to_owned(), self.limit(), self.max_size);
        let ran = self
            .pool
            .run(move |conn| collect(conn, &sql, &args, limit, max_size).map(|r| r.to_json()))
            .await?;
        ran.result.map_err(|e| self.query_failed(&e, ran.timed_out))
    }
}

/// The statement would write: what `sqlite3_stmt_readonly` says.
#[derive(Debug)]
struct Writes;

impl Engine for Sqlite {
    const DIALECT: Dialect = Dialect::Sqlite;
    const NAME: &'static str = "SQLite";

    /// Tables (also virtual ones) and views, by name, without SQLite's own and shadow tables.
    async fn tables(&self) -> Result<Vec<Listed>, RequestError> {
        let ran = self
            .pool
            .run(|conn| {
                let mut statement = conn.prepare_cached(
                    "SELECT name, type FROM pragma_table_list WHERE schema = 'main' \
                     AND type IN ('table', 'view', 'virtual') \
                     AND lower(substr(name, 1, 7)) <> 'sqlite_' ORDER BY name",
                )?;
                let rows = statement.query_map([], |row| {
                    let kind: String = row.get(1)?;
                    Ok((row.get(0)?, if kind == "view" { "View" } else { "Table" }))
                })?;
                rows.collect::<rusqlite::Result<Vec<Listed>>>()
            })
            .await?;
        ran.result.map_err(|e| self.failed(&e))
    }

    async fn is_listed(&self, name: &str) -> bool {
        self.tables()
            .await
            .is_ok_and(|names| names.iter().any(|(n, _)| n == name))
    }

    /// The CREATE statements in the order they were made, each ending with `;`.
    async fn schema(&self) -> Result<String, RequestError> {
        let ran = self
            .pool
            .run(|conn| {
                let mut statement = conn.prepare_cached(
                    "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL \
                     AND lower(substr(name, 1, 7)) <> 'sqlite_' ORDER BY rowid",
                )?;
                let mut out = String::new();
                let mut rows = statement.raw_query();
                while let Some(row) = rows.next()? {
                    out.push_str(&row.get::<_, String>(0)?);
                    out.push_str(";\n");
                }
                Ok(out)
            })
            .await?;
        ran.result.map_err(|e| self.failed(&e))
    }

    /// The first rows of a table or view that `tables` lists (`None` for any other name).
    ///
    /// One statement both checks and reads: the quoted name's `LIMIT` is 0 unless the listing
    /// has it, so a name the database does not list (a table-valued function such as
    /// `pragma_database_list`, SQLite's own tables) yields no row. The check sits in `LIMIT`,
    /// evaluated once, not in `WHERE`, where SQLite would run it again for every row. Only an
    /// empty result or an error needs the separate check (in the same job).
    async fn read_table(&self, name: &str) -> Result<Option<String>, RequestError> {
        let sql = format!(
            "SELECT * FROM {} LIMIT (CASE WHEN EXISTS ({LISTED_TABLE}) THEN ?1 ELSE 0 END)",
            quote_ident(name)
        );
        let limit = i64::try_from(self.row_limit.saturating_add(1)).unwrap_or(i64::MAX);
        let args = [Typed::Integer(limit), Typed::Text(name.to_owned())];
        let (row_limit, max_size, name) = (self.limit(), self.max_size, name.to_owned());
        let ran = self
            .pool
            .run(move |conn| {
                let result = collect(conn, &sql, &args, row_limit, max_size);
                if matches!(&result, Ok(rows) if !rows.rows.is_empty()) {
                    return Ok((result.map(|r| r.to_json()), true));
                }
                let listed: i64 = conn
                    .prepare_cached(LISTED_TABLE_COUNT)?
                    .query_row([&name], |row| row.get(0))?;
                Ok((result.map(|r| r.to_json()), listed > 0))
            })
            .await?;
        match ran.result {
            Ok((_, false)) => Ok(None),
            Ok((result, true)) => result
                .map(Some)
                .map_err(|e| self.query_failed(&e, ran.timed_out)),
            // The listing's check failed (interrupted too, if the deadline had passed).
            Err(e) => Err(self.query_failed(&e, ran.timed_out)),
        }
    }

    async fn run(
        &self,
        _uri: &str,
        statement: &Statement,
        args: &[Typed],
    ) -> Result<String, RequestError> {
        // `?N` placeholders: the values in declared order.
        self.fetch(&statement.sql, args.to_vec()).await
    }

    /// On a connection of its own (closed after, so nothing the statement set on it stays), and
    /// only if SQLite says the statement does not write.
    async fn run_adhoc(&self, sql: &str) -> Result<String, RequestError> {
        // A pragma that sets something changes the connection, or the file: settings are not
        // the SQL tool's to change (`PRAGMA table_info(t)` and the like still read).
        if text::first_keyword(sql, Dialect::Sqlite).as_deref() == Some("PRAGMA")
            && sql.contains('=')
        {
            return Err(RequestError::Refused(format!(
                "{} refused: a PRAGMA that sets a value changes the connection or the file; only PRAGMAs that read run here",
                self.entry
            )));
        }
        let (sql, limit, max_size) = (sql.to_owned(), self.limit(), self.max_size);
        let ran = self
            .pool
            .run_alone(move |conn| {
                if !conn.prepare(&sql)?.readonly() {
                    return Ok(Err(Writes));
                }
                collect(conn, &sql, &[], limit, max_size).map(|r| Ok(r.to_json()))
            })
            .await?;
        match ran.result {
            Ok(Ok(json)) => Ok(json),
            Ok(Err(Writes)) => Err(RequestError::Refused(format!(
                "{} refused: SQLite says this statement writes (the database is opened read-only)",
                self.entry
            ))),
            Err(e) => Err(self.query_failed(&e, ran.timed_out)),
        }
    }

    /// SQLite compiles the statement and must count exactly its declared parameters.
    async fn compile(&self, statement: &Statement) -> Option<Result<(), String>> {
        let sql = statement.sql.to_string();
        let declared = statement.types.len();
        let ran = self
            .pool
            .run_alone(move |conn| Ok(conn.prepare(&sql).map(|s| s.parameter_count())))
            .await;
        Some(match ran {
            Err(e) => Err(e.to_string()),
            Ok(ran) => match ran.result {
                Err(e) | Ok(Err(e)) => {
                    Err(format!("the SQL does not compile: {}", sqlite_message(&e)))
                }
                Ok(Ok(counted)) if counted != declared => Err(format!(
                    "SQLite counts {counted} parameters where {declared} were found; write each parameter as `:name` outside quotes and comments"
                )),
                Ok(Ok(_)) => Ok(()),
            },
        })
    }

    /// The database's folder: the file and its WAL change there.
    fn watch_dirs(&self) -> Vec<PathBuf> {
        self.path
            .parent()
            .map(|dir| vec![dir.to_path_buf()])
            .unwrap_or_default()
    }

    fn changed_by(&self, changes: &[Change]) -> bool {
        self.is_changed_by(changes)
    }

    fn schema_about(&self) -> String {
        format!(
            "The CREATE statements of the tables, views, indexes and triggers of {}",
            self.entry
        )
    }
}
