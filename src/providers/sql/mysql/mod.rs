//! The MySQL / MariaDB engine (`[mysql.NAME]`), through sqlx's MySQL driver: the `CREATE`
//! statements of the URL's database (`SHOW CREATE TABLE` / `VIEW`), its tables and views, and
//! statements run prepared (the binary protocol: one statement per run, never several). `pool.rs`
//! holds the connections and transactions, `rows.rs` the values → JSON, `sized.rs` how a
//! statement is wrapped so a value larger than `max_size` never leaves the server, `changes.rs`
//! the stamps subscribed URIs are polled by; the rest of a server source is `sql::server::Server`.
//!
//! A table read is one statement in one transaction: the table, read only when the catalog
//! lists it under that exact name (`WHERE EXISTS` over `information_schema.TABLES`); an empty
//! answer or an error asks the listing in the same transaction whether the name was listed at
//! all (not listed: not found).
//!
//! Invariants: read-only by the engine — every statement runs in `START TRANSACTION READ ONLY`
//! with the statement time limit, and that transaction is rolled back, never committed; `LOCAL
//! INFILE` is never enabled. What it does not cover (an account with `FILE`, `SUPER` or all
//! privileges can read and write server files, `SELECT … INTO OUTFILE`) `check` warns about and the
//! SQL tool refuses. Values are always bound, never spliced; the only names spliced into SQL are
//! tables the catalog listed (backquoted). Nothing connects at start. A value that can be large
//! is measured on the server and left there when its row exceeds `max_size` (`sized.rs`;
//! `tests/it/mysql/sizes.rs` checks MariaDB sends none of a 60 MB value), unless the statement
//! cannot be wrapped or its table columns cannot add up past `max_size`. A statement whose rows
//! were not all read (more than `row_limit`, or `max_size` reached) has its connection closed
//! and its statement stopped (`KILL QUERY`) rather than read to its end; at most `DRAIN` more
//! rows are read first, so a query a little longer than `row_limit` keeps its connection.

mod build;
pub(crate) use build::build;
mod changes;
mod pool;
mod rows;
mod sized;

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use sqlx::mysql::MySqlConnection;
use sqlx::{AssertSqlSafe, Column as _, Executor as _, Row as _, SqlSafeStr as _};

use pool::{Flavor, My};
use rows::cells;

use super::engine::{Engine, Listed, Target};
use super::pool::Driver as _;
use super::query::Statement;
use super::rows::{Cell, Rows, TooBig, Within, unique_names};
use super::server::{self, Server};
use super::text::Dialect;
use crate::manifest::Loc;
use crate::params::Typed;
use crate::providers::RequestError;

/// The longest table name MySQL and MariaDB allow.
const MAX_IDENTIFIER: usize = 64;
/// Rows read past `row_limit` before a statement's connection is given up instead: reading a
/// few more is cheaper than stopping the statement and opening another connection.
const DRAIN: usize = 1000;
/// How long the set of MariaDB's JSON columns is trusted.
const JSON_COLUMNS_FRESH: Duration = Duration::from_secs(30);

/// The table types listed (MariaDB's system-versioned tables are tables).
const LISTED_TYPES: &str = "('BASE TABLE', 'VIEW', 'SYSTEM VERSIONED')";

/// One MySQL or MariaDB database.
#[derive(Debug)]
pub(crate) struct Mysql {
    server: Server<My>,
    /// MariaDB's JSON columns (`(schema.table, column)`), and when they were read.
    json_columns: std::sync::Mutex<Option<(Instant, JsonColumns)>>,
    /// Which server answered (known once a connection opened).
    flavor: Arc<OnceLock<Flavor>>,
}

/// MariaDB's JSON columns, as `(schema.table, column)`.
type JsonColumns = Arc<HashSet<(String, String)>>;

/// Why a statement failed.
enum Failure {
    Db(sqlx::Error),
    Decode(String),
    /// The first row alone is larger than `max_size`.
    TooBig,
}

impl From<sqlx::Error> for Failure {
    fn from(e: sqlx::Error) -> Self {
        Failure::Db(e)
    }
}

/// How far a statement's rows were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// To their end: the connection can serve the next request.
    Whole,
    /// Not: the statement may still be sending.
    Cut,
}

/// What a request reads.
#[derive(Clone, Copy)]
enum Shape<'a> {
    /// A table or view by name: `sql` reads all of it (`read_table`), its values bound.
    Table { name: &'a str, sql: &'a str },
    /// A named query's, a template's or the SQL tool's statement.
    Sql(&'a str),
}

impl Mysql {
    /// Runs one statement in its own transaction: at most `row_limit` rows as JSON. A table read
    /// is `None` when the table is not listed.
    async fn fetch(
        &self,
        uri: &str,
        statement: Shape<'_>,
        args: Vec<&Typed>,
    ) -> Result<Option<String>, RequestError> {
        if let Shape::Sql(sql) = statement {
            self.server.reads_only(sql, Self::DIALECT)?;
        }
        let has_args = matches!(statement, Shape::Sql(_)) && !args.is_empty();
        let mut lease = self.server.begin().await?;
        let run = async {
            let json = self.json_columns(lease.conn()).await;
            let result = collect(
                lease.conn(),
                &statement,
                &args,
                (self.server.limit(), self.server.max_size),
                &json,
            )
            .await;
            // A table read that came back empty or failed may name no listed table: the
            // listing tells, in the same transaction (a failed statement leaves it usable).
            let Shape::Table { name, .. } = statement else {
                return result.map(Some);
            };
            let unsure = match &result {
                Ok((rows, _)) => rows.rows.is_empty(),
                Err(Failure::Db(e)) => !My::is_connection_error(e),
                Err(_) => false,
            };
            if unsure && listed(lease.conn(), Some(name)).await?.is_empty() {
                return Ok(None);
            }
            result.map(Some)
        };
        match tokio::time::timeout(self.server.deadline(), run).await {
            Ok(Ok(None)) => {
                lease.finish();
                Ok(None)
            }
            Ok(Ok(Some((rows, read)))) => {
                match read {
                    Read::Whole => lease.finish(),
                    Read::Cut => lease.abandon(),
                }
                Ok(Some(rows.to_json()))
            }
            Ok(Err(Failure::Db(e))) if My::is_connection_error(&e) => {
                lease.discard();
                Err(RequestError::Refused(self.server.connect_failed(&e)))
            }
            Ok(Err(Failure::Db(e))) => {
                lease.finish();
                Err(self.server.statement_failed(uri, has_args, &e))
            }
            Ok(Err(Failure::Decode(why))) => {
                lease.abandon();
                Err(self.server.unreadable(&why))
            }
            Ok(Err(Failure::TooBig)) => {
                lease.abandon();
                Err(self.server.too_big("`LEFT`, `LENGTH`"))
            }
            Err(_) => {
                lease.abandon();
                Err(self.server.timed_out())
            }
        }
    }

    /// MariaDB's JSON columns (a `LONGTEXT` with a `json_valid` check), read at most every
    /// `JSON_COLUMNS_FRESH`; none on MySQL (its JSON type says so itself) or when they cannot be
    /// read.
    async fn json_columns(&self, conn: &mut MySqlConnection) -> JsonColumns {
        if self.flavor.get() != Some(&Flavor::Mariadb) {
            return Arc::default();
        }
        if let Ok(cached) = self.json_columns.lock()
            && let Some((at, set)) = cached.as_ref()
            && at.elapsed() < JSON_COLUMNS_FRESH
        {
            return set.clone();
        }
        let rows = sqlx::query(
            "SELECT CONCAT(CONSTRAINT_SCHEMA, '.', TABLE_NAME), CONSTRAINT_NAME, CHECK_CLAUSE \
             FROM information_schema.CHECK_CONSTRAINTS \
             WHERE LEVEL = 'Column' AND CHECK_CLAUSE LIKE 'json_valid(%'",
        )
        .fetch_all(&mut *conn)
        .await
        .unwrap_or_default();
        let set: HashSet<(String, String)> = rows
            .iter()
            .filter_map(|r| {
                let text = |i| {
                    r.try_get_unchecked::<&[u8], _>(i)
                        .ok()
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                };
                let (table, column, clause) = (text(0)?, text(1)?, text(2)?);
                (clause == format!("json_valid(`{}`)", column.replace('`', "``")))
                    .then_some((table, column))
            })
            .collect();
        let set = Arc::new(set);
        if let Ok(mut cached) = self.json_columns.lock() {
            *cached = Some((Instant::now(), set.clone()));
        }
        set
    }

    /// Tables and views of the database, by name (bytewise order).
    async fn listing(&self) -> Result<Vec<(String, String)>, RequestError> {
        let mut names = self
            .server
            .read(async |conn| listed(conn, None).await)
            .await?;
        names.sort();
        Ok(names)
    }

    /// The `CREATE` statements of the listed tables and views, in name order.
    async fn create_statements(&self) -> Result<String, RequestError> {
        let work = async |conn: &mut MySqlConnection| {
            let mut names = listed(&mut *conn, None).await?;
            names.sort();
            let mut out = String::new();
            for (name, _) in names {
                let sql = format!("SHOW CREATE TABLE {}", quote_name(&name));
                let row = sqlx::query(AssertSqlSafe(sql))
                    .fetch_one(&mut *conn)
                    .await?;
                let ddl: &[u8] = row.try_get_unchecked(1)?;
                out.push_str(&String::from_utf8_lossy(ddl));
                out.push_str(";\n\n");
            }
            Ok::<_, sqlx::Error>(out)
        };
        self.server.read(work).await
    }
}

/// The tables and views of the connection's database (`(name, TABLE_TYPE)`), all of them or the
/// one named `only`.
async fn listed(
    conn: &mut MySqlConnection,
    only: Option<&str>,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    let mut sql = format!(
        "SELECT TABLE_NAME, CAST(TABLE_TYPE AS CHAR) FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE IN {LISTED_TYPES}"
    );
    if only.is_some() {
        sql.push_str(" AND TABLE_NAME = ?");
    }
    let mut query = sqlx::query(AssertSqlSafe(sql));
    if let Some(name) = only {
        query = query.bind(name);
    }
    let rows = query.fetch_all(conn).await?;
    let text = |r: &sqlx::mysql::MySqlRow, i| -> Result<String, sqlx::Error> {
        let b: &[u8] = r.try_get_unchecked(i)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    };
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let name = text(r, 0)?;
        // The catalog compares names without regard to case; a table is named exactly.
        if only.is_none_or(|o| o == name) {
            out.push((name, text(r, 1)?));
        }
    }
    Ok(out)
}

/// What the account's grants allow beyond reading: `FILE`, `SUPER` or all privileges on `*.*`
/// ("holds FILE, SUPER"), from `SHOW GRANTS` (which also shows what roles give).
async fn risky_grants(conn: &mut MySqlConnection) -> Result<Option<String>, sqlx::Error> {
    let rows = conn.fetch_all("SHOW GRANTS").await?;
    let mut found: Vec<&str> = Vec::new();
    for r in &rows {
        let Ok(b) = r.try_get_unchecked::<&[u8], _>(0) else {
            continue;
        };
        let grant = String::from_utf8_lossy(b).to_ascii_uppercase();
        let Some((privileges, rest)) = grant
            .strip_prefix("GRANT ")
            .and_then(|g| g.split_once(" ON "))
        else {
            continue;
        };
        if !rest.trim_start().starts_with("*.*") {
            continue;
        }
        for (word, shown) in [
            ("ALL PRIVILEGES", "all privileges"),
            ("FILE", "FILE"),
            ("SUPER", "SUPER"),
        ] {
            let held = privileges
                .split(',')
                .any(|p| p.trim() == word || (word == "ALL PRIVILEGES" && p.trim() == "ALL"));
            if held && !found.contains(&shown) {
                found.push(shown);
            }
        }
    }
    Ok((!found.is_empty()).then(|| format!("holds {}", found.join(", "))))
}

/// Runs a statement with its values bound and keeps at most `limit` rows and `max_size` bytes
/// (reading one more row to know whether there were more), measuring its large values on the
/// server when it can be wrapped (`sized.rs`). A statement run as it is that has no `LIMIT` of
/// ours is read at most `DRAIN` rows further, then cut.
async fn collect(
    conn: &mut MySqlConnection,
    statement: &Shape<'_>,
    args: &[&Typed],
    (limit, max_size): (usize, usize),
    json: &HashSet<(String, String)>,
) -> Result<(Rows<Cell>, Read), Failure> {
    use futures_util::TryStreamExt as _;
    let rows = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    // The statement as it is, and the body a wrapped one reads (`sized::body`).
    let (plain, body, bounded) = match statement {
        Shape::Table { sql, .. } => (format!("{sql} LIMIT {rows}"), (*sql).to_owned(), true),
        Shape::Sql(sql) => ((*sql).to_owned(), sized::body(sql, rows), false),
    };
    // Prepared first (sqlx keeps it per connection): its columns name and type an empty answer
    // too, and say which values can be large.
    let prepared = conn
        .prepare(AssertSqlSafe(plain.clone()).into_sql_str())
        .await?;
    let columns = sqlx::Statement::columns(&prepared);
    let names = unique_names(columns.iter().map(|c| c.name()));
    let json_at: Vec<bool> = columns.iter().map(|c| rows::is_json(c, json)).collect();
    let measured: Vec<bool> = columns
        .iter()
        .zip(&json_at)
        .map(|(c, j)| sized::can_be_large(rows::Decoder::for_column(c.type_info(), *j)))
        .collect();
    // Columns read straight from tables hold at most their declared lengths: when those cannot
    // add up past `max_size`, measuring could leave nothing out, and the statement runs as it is
    // (a wrapped statement costs MariaDB's optimizer ~35 µs a read, `mysql/query-1` p50).
    let most: Option<u64> = columns
        .iter()
        .zip(&measured)
        .filter(|(_, m)| **m)
        .map(|(c, _)| rows::stored_bytes(c))
        .sum();
    let fits = most.is_some_and(|m| m <= u64::try_from(max_size).unwrap_or(u64::MAX));
    let mut run = (plain, bounded, false);
    if !fits && sized::wrappable(&body) {
        let wrapped = sized::wrap(&body, &measured, rows, max_size);
        match conn
            .prepare(AssertSqlSafe(wrapped.clone()).into_sql_str())
            .await
        {
            Ok(_) => run = (wrapped, true, true),
            Err(e) if My::is_connection_error(&e) => return Err(e.into()),
            // Not wrappable after all: read as it is.
            Err(_) => {}
        }
    }
    let (sql, bounded, sized) = run;
    let width = names.len();
    let mut query = sqlx::query(AssertSqlSafe(sql));
    for a in args {
        query = match a {
            Typed::Null => query.bind(None::<String>),
            Typed::Integer(n) => query.bind(*n),
            Typed::Number(f) => query.bind(*f),
            Typed::Boolean(b) => query.bind(*b),
            Typed::Text(s) => query.bind(s.as_str()),
            // Queries declare no array parameters (refused when the manifest is checked).
            Typed::List(items) => query.bind(items.join("\n")),
        };
    }
    let mut out = Within::<Cell>::new(names, limit, max_size);
    let mut stream = query.fetch(&mut *conn);
    let mut extra = 0;
    let mut done = false;
    // The columns the run sent are the ones to decode by: a parameter's type is known only
    // then (`SELECT ?` prepares as binary, runs as the text it was given).
    let mut run_decoders: Option<Vec<rows::Decoder>> = None;
    while let Some(row) = stream.try_next().await? {
        if done || out.full() {
            done = true;
            extra += 1;
            if !bounded && extra > DRAIN {
                return Ok((out.into_rows(), Read::Cut));
            }
            continue;
        }
        // A row measured larger than `max_size` came without its large values.
        if sized {
            let size: i64 = row.try_get(width)?;
            if !out.admits(size).map_err(|TooBig| Failure::TooBig)? {
                return Ok((out.into_rows(), Read::Cut));
            }
        }
        let decoders = run_decoders
            .get_or_insert_with(|| rows::decoders(row.columns().iter().take(width), &json_at));
        let row = cells(&row, decoders).map_err(Failure::Decode)?;
        if !out.push(row).map_err(|TooBig| Failure::TooBig)? {
            return Ok((out.into_rows(), Read::Cut));
        }
    }
    Ok((out.into_rows(), Read::Whole))
}

/// A table name as one backquoted identifier.
fn quote_name(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// "database `shop` on db.example.com:3306 as `app`" (or the socket).
fn describe_target(o: &sqlx::mysql::MySqlConnectOptions) -> String {
    let socket = o
        .get_socket()
        .map(|p| format!("the socket {}", p.display()));
    let host = (o.get_host(), o.get_port());
    server::target(socket, host, o.get_database(), o.get_username())
}

impl Engine for Mysql {
    const DIALECT: Dialect = Dialect::Mysql;
    const NAME: &'static str = "MySQL/MariaDB";

    async fn tables(&self) -> Result<Vec<Listed>, RequestError> {
        Ok(self
            .listing()
            .await?
            .into_iter()
            .map(|(name, kind)| (name, if kind == "VIEW" { "View" } else { "Table" }))
            .collect())
    }

    /// While the database cannot be reached nothing tells, so the name is taken.
    async fn is_listed(&self, name: &str) -> bool {
        if name.len() > MAX_IDENTIFIER || name.contains('\0') {
            return false;
        }
        match self
            .server
            .read(async |conn| listed(conn, Some(name)).await)
            .await
        {
            Ok(found) => !found.is_empty(),
            Err(_) => true,
        }
    }

    async fn schema(&self) -> Result<String, RequestError> {
        self.create_statements().await
    }

    /// One statement in one transaction: the table, read only if the listing has it (exact
    /// case, a listed type); an empty answer or an error is told apart from a name that is not
    /// listed in that same transaction.
    async fn read_table(&self, name: &str) -> Result<Option<String>, RequestError> {
        if name.len() > MAX_IDENTIFIER || name.contains('\0') {
            return Ok(None);
        }
        let sql = format!(
            "SELECT * FROM {} WHERE EXISTS (SELECT 1 FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE IN {LISTED_TYPES} \
             AND TABLE_NAME = ? AND CAST(TABLE_NAME AS BINARY) = CAST(? AS BINARY))",
            quote_name(name)
        );
        let uri = format!("{} table {name}", self.server.entry);
        let name_arg = Typed::Text(name.to_owned());
        let shape = Shape::Table { name, sql: &sql };
        self.fetch(&uri, shape, vec![&name_arg, &name_arg]).await
    }

    async fn run(
        &self,
        uri: &str,
        statement: &Statement,
        args: &[Typed],
    ) -> Result<String, RequestError> {
        // `?` placeholders, in the order they appear.
        let bound: Vec<&Typed> = statement.bound(args).collect();
        let rows = self.fetch(uri, Shape::Sql(&statement.sql), bound).await?;
        Ok(rows.unwrap_or_default())
    }

    async fn run_adhoc(&self, sql: &str) -> Result<String, RequestError> {
        let rows = self.fetch("the SQL tool's statement", Shape::Sql(sql), Vec::new());
        Ok(rows.await?.unwrap_or_default())
    }

    async fn adhoc_refusal(&self) -> Option<String> {
        let found = self.server.risks(async |conn| risky_grants(conn).await);
        let found = found.await?;
        Some(format!(
            "{} refused: the SQL tool runs only when the account cannot write outside its read-only transaction, and it {found}; connect as an account without them, or set `accept_writes_outside_transaction = true` in {} to run it anyway",
            self.server.entry, self.server.entry
        ))
    }

    /// `check`: what the account can do outside the transaction, and every statement prepared.
    async fn warnings(&self, statements: &[Statement]) -> Vec<(Loc, String)> {
        let server = &self.server;
        let risks = async |conn: &mut MySqlConnection| {
            let found = risky_grants(conn).await.ok()??;
            Some(format!(
                "{} connects to {} as an account that {found}: a read-only transaction does not stop it reading and writing server files (`SELECT … INTO OUTFILE`, `LOAD_FILE`); connect as an account without them (the SQL tool refuses to run until then, unless `accept_writes_outside_transaction = true`)",
                server.entry, server.target
            ))
        };
        let prepare = async |conn: &mut MySqlConnection, s: &Statement| {
            let sql = AssertSqlSafe(s.sql.to_string()).into_sql_str();
            conn.prepare(sql).await.map(|_| ())
        };
        let name = <Self as Engine>::NAME;
        server.check(name, statements, risks, prepare).await
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(self.server.poll_interval)
    }

    async fn stamps(&self, targets: &[Target]) -> Option<Vec<String>> {
        self.stamps_of(targets).await
    }

    fn reported_down(&self) -> bool {
        self.server.reported_down()
    }

    fn schema_about(&self) -> String {
        format!(
            "The CREATE statements of the tables and views of {} ({})",
            self.server.entry, self.server.target
        )
    }

    async fn close(&self) {
        self.server.close().await;
    }
}
