//! The PostgreSQL engine (`[postgres.NAME]`), through sqlx: the DDL of the listed schemas
//! (`ddl.rs`), the tables and views of those schemas, and statements run read-only. `pool.rs`
//! holds the connections and transactions, `plan.rs` how a statement binds and reads, `rows.rs`
//! the values → JSON, `changes.rs` the stamps subscribed URIs are polled by, `risky.rs` what the
//! role can do outside the transaction; the rest of a server source is `sql::server::Server`.
//!
//! URIs: tables of the first listed schema by name, the others as `schema.table`.
//!
//! Invariants: read-only by the engine — every statement runs in a `READ ONLY` transaction with
//! `statement_timeout`, and that transaction is rolled back, never committed (functions such as
//! `lo_from_bytea` write even in a read-only transaction; the rollback undoes them). What it does
//! not cover (functions that open their own connections or write files) `check` warns about and
//! the SQL tool refuses (`risky.rs`). Values are always bound, never spliced; the only names
//! spliced into SQL are a table and schema the catalog listed (quoted) and type names
//! `format_type` wrote. Nothing connects at start: the first request that needs the database does,
//! and a database that is down is each request's clear error (naming the source and the host,
//! never the password) while every other source keeps serving.

mod build;
pub(crate) use build::build;
mod changes;
mod ddl;
mod plan;
mod pool;
mod risky;
mod rows;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, Connection as _, Executor as _, Row as _};

use plan::{BindAs, Kind, Plan};
use pool::Pg;
use rows::{cells, decoders};

use super::engine::{Engine, Listed, Target};
use super::pool::Driver as _;
use super::query::Statement;
use super::rows::{Cell, Rows, TooBig, Within};
use super::server::{self, Server};
use super::text::{Dialect, quote_ident};
use crate::manifest::{Loc, ParamType};
use crate::params::Typed;
use crate::providers::RequestError;

/// Plans kept per source (named queries, templates, tables); more and the cache starts over.
const MAX_PLANS: usize = 1024;
/// The longest identifier of a default PostgreSQL build (`NAMEDATALEN - 1` bytes).
const MAX_IDENTIFIER: usize = 63;
/// Tables and views of the listed schemas (`$1`, in order), each named as its URI names it (bare
/// in the first schema `$2`, `schema.table` in the others). Partitions are left out (their parent
/// reads them all), and so is what this role may not read.
const LISTED: &str = "\
    SELECT CASE WHEN n.nspname = $2 THEN c.relname ELSE n.nspname || '.' || c.relname END AS uri_name, \
           c.relkind::text AS kind, n.nspname AS schema, c.relname AS name \
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
    WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition \
      AND has_schema_privilege(n.oid, 'USAGE') \
      AND (has_table_privilege(c.oid, 'SELECT') OR has_any_column_privilege(c.oid, 'SELECT'))";

/// One PostgreSQL database.
#[derive(Debug)]
pub(crate) struct Postgres {
    server: Server<Pg>,
    schemas: Vec<String>,
    plans: std::sync::Mutex<HashMap<String, Arc<Plan>>>,
}

/// What a request runs.
enum Read<'a> {
    /// A table or view by its URI name.
    Table(&'a str),
    /// A named query's or template's statement and its values.
    Sql {
        sql: &'a str,
        kinds: &'a [Kind],
        args: &'a [Typed],
    },
}

/// Why a statement failed.
enum Failure {
    Db(sqlx::Error),
    Decode(String),
    /// The first row alone is larger than `max_size`.
    TooBig,
    NotFound,
    TimedOut,
}

impl From<sqlx::Error> for Failure {
    fn from(e: sqlx::Error) -> Self {
        Failure::Db(e)
    }
}

impl Postgres {
    /// Runs one statement in its own transaction and keeps at most `row_limit` rows. A plan that
    /// no longer fits the database (a table changed) is made again once.
    async fn fetch(&self, uri: &str, statement: Read<'_>) -> Result<Rows<Cell>, RequestError> {
        if let Read::Sql { sql, .. } = &statement {
            self.server.reads_only(sql, Self::DIALECT)?;
        }
        let mut retried = false;
        // A table of the first schema by its bare name is read at once (`run_listed`). A name
        // longer than PostgreSQL's identifiers (`MAX_IDENTIFIER`) names no table: it goes the
        // usual way, where it is only ever a bound value, never the text of a statement that
        // PostgreSQL would cut to an existing name and both caches would keep (a URI may hold
        // 4 MiB).
        let mut first_schema = match statement {
            Read::Table(name) if !name.contains('.') && name.len() <= MAX_IDENTIFIER => Some(name),
            _ => None,
        };
        loop {
            let mut lease = self.server.begin().await?;
            if let Some(name) = first_schema.take() {
                let run = self.run_listed(lease.conn(), name);
                match tokio::time::timeout(self.server.deadline(), run).await {
                    Ok(Ok(rows)) if !rows.rows.is_empty() => {
                        lease.finish();
                        return Ok(rows);
                    }
                    // Not listed, or empty: the usual way tells, in the same transaction.
                    Ok(Ok(_)) => {}
                    Ok(Err(Failure::Db(e))) if Pg::is_connection_error(&e) => {
                        lease.discard();
                        return Err(RequestError::Refused(self.server.connect_failed(&e)));
                    }
                    // No such relation, no right to read it, a plan gone stale…: the
                    // transaction is aborted; the usual way, in a new one, tells which.
                    Ok(Err(failure)) => {
                        if let Failure::Db(e) = &failure
                            && stale_plan(e)
                        {
                            self.forget_plans(lease.conn()).await;
                        }
                        lease.finish();
                        continue;
                    }
                    Err(_) => {
                        lease.abandon();
                        return Err(self.server.timed_out());
                    }
                }
            }
            let run = self.run_read(lease.conn(), &statement);
            let result = match tokio::time::timeout(self.server.deadline(), run).await {
                Ok(r) => r,
                Err(_) => Err((Failure::TimedOut, false)),
            };
            match result {
                Ok(rows) => {
                    lease.finish();
                    return Ok(rows);
                }
                Err((Failure::Db(e), cached)) if !Pg::is_connection_error(&e) => {
                    let stale = stale_plan(&e);
                    if stale {
                        self.forget_plans(lease.conn()).await;
                    }
                    lease.finish();
                    if stale && cached && !retried {
                        retried = true;
                        continue;
                    }
                    let has_args = matches!(statement, Read::Sql { args, .. } if !args.is_empty());
                    return Err(self.server.statement_failed(uri, has_args, &e));
                }
                Err((Failure::Db(e), _)) => {
                    lease.discard();
                    return Err(RequestError::Refused(self.server.connect_failed(&e)));
                }
                Err((Failure::NotFound, _)) => {
                    lease.finish();
                    return Err(RequestError::NotFound(uri.to_owned()));
                }
                Err((Failure::Decode(why), _)) => {
                    lease.finish();
                    return Err(self.server.unreadable(&why));
                }
                Err((Failure::TimedOut, _)) => {
                    lease.abandon();
                    return Err(self.server.timed_out());
                }
                Err((Failure::TooBig, _)) => {
                    lease.finish();
                    return Err(self.server.too_big("`left`, `length`"));
                }
            }
        }
    }

    /// The statement's rows. The error says whether the plan came from the cache.
    async fn run_read(
        &self,
        conn: &mut PgConnection,
        statement: &Read<'_>,
    ) -> Result<Rows<Cell>, (Failure, bool)> {
        let (sql, kinds, args) = match statement {
            Read::Table(name) => {
                let Some((schema, table)) = self
                    .find_table(conn, name)
                    .await
                    .map_err(|e| (e.into(), false))?
                else {
                    return Err((Failure::NotFound, false));
                };
                let sql = format!(
                    "SELECT * FROM {}.{}",
                    quote_ident(&schema),
                    quote_ident(&table)
                );
                (std::borrow::Cow::Owned(sql), &[][..], &[][..])
            }
            Read::Sql { sql, kinds, args } => (std::borrow::Cow::Borrowed(*sql), *kinds, *args),
        };
        let (plan, cached) = self
            .plan(conn, &sql, kinds)
            .await
            .map_err(|e| (e.into(), false))?;
        collect(conn, &plan, args, self.server.limit(), self.server.max_size)
            .await
            .map_err(|e| (e, cached))
    }

    /// The rows of the table or view `name` of the first schema, if the listing has it, in one
    /// round trip: the quoted name is read with a `LIMIT` that is 0 unless the relation is one
    /// the listing shows (`LISTED`'s kinds, not a partition; a relation the role may not read
    /// fails to read), the check evaluated once. An empty answer does not tell whether the
    /// name is listed; an error does not tell why (and aborts the transaction): both are left
    /// to `find_table`.
    async fn run_listed(&self, conn: &mut PgConnection, name: &str) -> Result<Rows<Cell>, Failure> {
        let schema = &self.schemas[0];
        let sql = format!(
            "SELECT * FROM {}.{} LIMIT (CASE WHEN EXISTS (\
             SELECT 1 FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = $2 AND octet_length(c.relname) = $3 \
             AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition) \
             THEN NULL ELSE 0 END)",
            quote_ident(schema),
            quote_ident(name)
        );
        // PostgreSQL cuts an identifier longer than its limit (63 bytes in a default build) to
        // that limit, in `FROM` as in `$2`; the length keeps a longer name from reading the table
        // it is cut to, whatever the server's limit.
        let kinds = [Kind::Text, Kind::Text, Kind::Integer];
        let args = [
            Typed::Text(schema.clone()),
            Typed::Text(name.to_owned()),
            Typed::Integer(i64::try_from(name.len()).unwrap_or(i64::MAX)),
        ];
        let (plan, _) = self.plan(conn, &sql, &kinds).await?;
        collect(
            conn,
            &plan,
            &args,
            self.server.limit(),
            self.server.max_size,
        )
        .await
    }

    /// The plan of a statement: from the cache, or worked out now (and cached).
    async fn plan(
        &self,
        conn: &mut PgConnection,
        sql: &str,
        kinds: &[Kind],
    ) -> Result<(Arc<Plan>, bool), sqlx::Error> {
        let key = format!("{kinds:?}\n{sql}");
        if let Some(p) = self.plans.lock().ok().and_then(|p| p.get(&key).cloned()) {
            return Ok((p, true));
        }
        let plan = Arc::new(
            plan::make(
                conn,
                sql,
                kinds,
                self.server.row_limit,
                self.server.max_size,
            )
            .await?,
        );
        if let Ok(mut plans) = self.plans.lock() {
            if plans.len() >= MAX_PLANS {
                plans.clear();
            }
            plans.insert(key, plan.clone());
        }
        Ok((plan, false))
    }

    /// A plan no longer fits the database (a table changed under it): every plan is worked out
    /// again, and the connection's prepared statements are dropped with them.
    async fn forget_plans(&self, conn: &mut PgConnection) {
        if let Ok(mut plans) = self.plans.lock() {
            plans.clear();
        }
        let _ = conn.clear_cached_statements().await;
    }

    /// The listed table or view a URI name means: a table of the first schema by its name, else
    /// `schema.table` of a listed schema.
    async fn find_table(
        &self,
        conn: &mut PgConnection,
        name: &str,
    ) -> Result<Option<(String, String)>, sqlx::Error> {
        let sql = format!(
            "SELECT l.schema, l.name FROM ({LISTED}) AS l \
             WHERE l.uri_name = $3 OR l.schema || '.' || l.name = $3 \
             ORDER BY (l.uri_name = $3) DESC LIMIT 1"
        );
        sqlx::query_as::<_, (String, String)>(AssertSqlSafe(sql))
            .bind(&self.schemas)
            .bind(&self.schemas[0])
            .bind(name)
            .fetch_optional(&mut *conn)
            .await
    }

    /// Whether a URI name means a listed table. While the database cannot be reached nothing
    /// tells, so the name is taken (a subscription then waits for the database, reads fail with
    /// the connection's error).
    async fn listed(&self, name: &str) -> bool {
        let Ok(mut lease) = self.server.begin().await else {
            return true;
        };
        let found = self.find_table(lease.conn(), name);
        let result = tokio::time::timeout(self.server.deadline(), found).await;
        self.server.settle(lease, result).is_ok_and(|t| t.is_some())
    }

    /// Tables and views by URI name, with their kind (`r`, `v`, …), in schema order then name.
    async fn table_names(&self) -> Result<Vec<(String, String)>, RequestError> {
        let sql = format!(
            "SELECT l.uri_name, l.kind FROM ({LISTED}) AS l \
             ORDER BY array_position($1, l.schema), l.name"
        );
        let query = sqlx::query_as::<_, (String, String)>(AssertSqlSafe(sql))
            .bind(&self.schemas)
            .bind(&self.schemas[0]);
        self.server
            .read(async |conn| query.fetch_all(conn).await)
            .await
    }

    /// The DDL of the listed schemas, rebuilt from the catalogs: enum and domain types, then
    /// each table (columns, defaults, identity, constraints, partition key), view and
    /// materialized view, its indexes and its comments.
    async fn schema_text(&self) -> Result<String, RequestError> {
        let work = async |conn: &mut PgConnection| {
            let types = sqlx::query_as::<_, (String,)>(ddl::TYPES_DDL)
                .bind(&self.schemas)
                .fetch_all(&mut *conn)
                .await?;
            let sql = format!("WITH l AS ({LISTED}) {}", ddl::RELATIONS_DDL);
            let relations: Vec<ddl::RelationRow> =
                sqlx::query_as::<_, ddl::RelationTuple>(AssertSqlSafe(sql))
                    .bind(&self.schemas)
                    .bind(&self.schemas[0])
                    .fetch_all(&mut *conn)
                    .await?
                    .into_iter()
                    .map(ddl::RelationRow::from)
                    .collect();
            Ok::<_, sqlx::Error>((types, relations))
        };
        let (types, relations) = self.server.read(work).await?;
        let mut out = String::new();
        for (ddl,) in types {
            out.push_str(&ddl);
            out.push_str("\n\n");
        }
        for r in relations {
            out.push_str(&ddl::relation_ddl(&r));
            out.push('\n');
        }
        Ok(out)
    }
}

/// Whether an error means the plan (or sqlx's prepared statement) no longer fits the database:
/// "cached plan must not change result type", or a type or column problem of a cached statement.
fn stale_plan(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|c| c == "0A000" || c.starts_with("42")),
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::ColumnIndexOutOfBounds { .. } => true,
        _ => false,
    }
}

/// Runs a plan with its values bound and keeps at most `limit` rows (reading one more to know
/// whether there were more).
async fn collect(
    conn: &mut PgConnection,
    plan: &Plan,
    args: &[Typed],
    limit: usize,
    max_size: usize,
) -> Result<Rows<Cell>, Failure> {
    use futures_util::TryStreamExt as _;
    let mut query = sqlx::query(AssertSqlSafe(plan.sql.clone()));
    for (i, a) in args.iter().enumerate() {
        let bind = plan.binds.get(i).copied().unwrap_or(BindAs::Text);
        let kind = plan.kinds.get(i).copied().unwrap_or(Kind::Text);
        query = match (bind, kind, a) {
            (BindAs::Text, _, Typed::Null) | (BindAs::Declared, Kind::Text, Typed::Null) => {
                query.bind(None::<String>)
            }
            (BindAs::Text, _, v) => query.bind(v.to_text()),
            (BindAs::Declared, Kind::Integer, Typed::Integer(n)) => query.bind(*n),
            (BindAs::Declared, Kind::Integer, Typed::Null) => query.bind(None::<i64>),
            (BindAs::Declared, Kind::Number, Typed::Number(f)) => query.bind(*f),
            (BindAs::Declared, Kind::Number, Typed::Integer(n)) => query.bind(*n as f64),
            (BindAs::Declared, Kind::Number, Typed::Null) => query.bind(None::<f64>),
            (BindAs::Declared, Kind::Boolean, Typed::Boolean(b)) => query.bind(*b),
            (BindAs::Declared, Kind::Boolean, Typed::Null) => query.bind(None::<bool>),
            (BindAs::Declared, _, v) => query.bind(v.to_text()),
        };
    }
    let mut out = Within::<Cell>::new(plan.names.clone(), limit, max_size);
    let mut stream = query.fetch(&mut *conn);
    let mut column_decoders = None;
    let width = plan.names.len();
    while let Some(row) = stream.try_next().await? {
        if out.full() {
            break;
        }
        // A row measured larger than `max_size` came without its large values.
        if plan.sized {
            let size: i64 = row.try_get(width).map_err(Failure::Db)?;
            if !out.admits(size).map_err(|TooBig| Failure::TooBig)? {
                break;
            }
        }
        let d = column_decoders.get_or_insert_with(|| {
            let mut d = decoders(&row);
            d.truncate(width);
            d
        });
        let row = cells(&row, d).map_err(Failure::Decode)?;
        if !out.push(row).map_err(|TooBig| Failure::TooBig)? {
            break;
        }
    }
    Ok(out.into_rows())
}

/// How a declared parameter type binds.
fn kind_of(ty: ParamType) -> Kind {
    match ty {
        ParamType::Integer => Kind::Integer,
        ParamType::Number => Kind::Number,
        ParamType::Boolean => Kind::Boolean,
        ParamType::String | ParamType::Array => Kind::Text,
    }
}

fn kind_word(relkind: &str) -> &'static str {
    match relkind {
        "v" => "View",
        "m" => "Materialized view",
        "f" => "Foreign table",
        _ => "Table",
    }
}

/// "database `crm` on db.example.com:5432 as `app`" (or the socket folder).
fn describe_target(o: &PgConnectOptions) -> String {
    let socket = o
        .get_socket()
        .map(|d| format!("the socket in {}", d.display()));
    let host = (o.get_host(), o.get_port());
    server::target(socket, host, o.get_database(), o.get_username())
}

/// How each value of a statement binds: its declared type (a template's variables are text).
fn kinds_of(statement: &Statement) -> Vec<Kind> {
    statement.types.iter().map(|t| kind_of(*t)).collect()
}

impl Engine for Postgres {
    const DIALECT: Dialect = Dialect::Postgres;
    const NAME: &'static str = "PostgreSQL";

    async fn tables(&self) -> Result<Vec<Listed>, RequestError> {
        let names = self.table_names().await?;
        Ok(names
            .into_iter()
            .map(|(name, kind)| (name, kind_word(&kind)))
            .collect())
    }

    async fn is_listed(&self, name: &str) -> bool {
        self.listed(name).await
    }

    async fn schema(&self) -> Result<String, RequestError> {
        self.schema_text().await
    }

    async fn read_table(&self, name: &str) -> Result<Option<String>, RequestError> {
        let uri = format!("{} table {name}", self.server.entry);
        match self.fetch(&uri, Read::Table(name)).await {
            Ok(rows) => Ok(Some(rows.to_json())),
            Err(RequestError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn run(
        &self,
        uri: &str,
        statement: &Statement,
        args: &[Typed],
    ) -> Result<String, RequestError> {
        let kinds = kinds_of(statement);
        let rows = self
            .fetch(
                uri,
                Read::Sql {
                    sql: &statement.sql,
                    kinds: &kinds,
                    args,
                },
            )
            .await?;
        Ok(rows.to_json())
    }

    async fn run_adhoc(&self, sql: &str) -> Result<String, RequestError> {
        let rows = self
            .fetch(
                "the SQL tool's statement",
                Read::Sql {
                    sql,
                    kinds: &[],
                    args: &[],
                },
            )
            .await?;
        Ok(rows.to_json())
    }

    async fn adhoc_refusal(&self) -> Option<String> {
        self.risks_refusal().await
    }

    /// `check`: what the role can call that writes outside the transaction, and every statement
    /// prepared (in a savepoint rolled back).
    async fn warnings(&self, statements: &[Statement]) -> Vec<(Loc, String)> {
        let server = &self.server;
        let risks = async |conn: &mut PgConnection| {
            let found = risky::describe(&risky::risk_rows(conn).await.ok()?)?;
            Some(format!(
                "{} connects to {} where {found}: a read-only transaction does not stop what these do; connect as a role without them (the SQL tool refuses to run until then, unless `accept_writes_outside_transaction = true`)",
                server.entry, server.target
            ))
        };
        // Copied: the future of a closure that borrows is not proven `Send` for every call.
        let (row_limit, max_size) = (server.row_limit, server.max_size);
        let prepare = async move |conn: &mut PgConnection, s: &Statement| {
            let kinds = kinds_of(s);
            conn.execute("SAVEPOINT mcp_check").await?;
            let result = plan::make(conn, &s.sql, &kinds, row_limit, max_size).await;
            conn.execute("ROLLBACK TO SAVEPOINT mcp_check").await?;
            result.map(|_| ())
        };
        let name = <Self as Engine>::NAME;
        server.check(name, statements, risks, prepare).await
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(self.server.poll_interval)
    }

    fn reported_down(&self) -> bool {
        self.server.reported_down()
    }

    async fn stamps(&self, targets: &[Target]) -> Option<Vec<String>> {
        self.stamps_of(targets).await
    }

    fn schema_about(&self) -> String {
        format!(
            "The DDL of the tables and views of {} (schemas: {})",
            self.server.entry,
            self.schemas.join(", ")
        )
    }

    fn table_about(&self) -> String {
        format!(" (schema `{}`; others as schema.table)", self.schemas[0])
    }

    async fn close(&self) {
        self.server.close().await;
    }
}
