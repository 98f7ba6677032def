//! `[postgres.NAME]`: a PostgreSQL database served read-only through sqlx — the DDL of the
//! listed schemas, one resource per table and view, and named queries whose parameters come from
//! the URI's query string. `mod.rs` has the source (URIs, listing, reads, errors); `pool.rs` the
//! connections and transactions; `plan.rs` how a statement binds and reads; `rows.rs` the values
//! → JSON.
//!
//! URIs: `postgres://NAME/schema`, `postgres://NAME/tables/{table}` (tables of the first listed
//! schema by name, the others as `schema.table`), `postgres://NAME/queries/QUERY{?p,…}`. Table
//! and query reads answer `{"columns": [...], "rows": [{column: value}], "truncated": bool}`, like
//! the sqlite source, with at most `row_limit` rows.
//!
//! Invariants: read-only by the engine — every statement runs in a `READ ONLY` transaction with
//! `statement_timeout`, and that transaction is rolled back, never committed (functions such as
//! `lo_from_bytea` write even in a read-only transaction; the rollback undoes them). Values are
//! always bound, never spliced; the only names spliced into SQL are a table and schema the catalog
//! listed (quoted) and type names `format_type` wrote. Nothing connects at start: the first request
//! that needs the database does, and a database that is down is each request's clear error (naming
//! the source and the host, never the password) while every other source keeps serving.

mod changes;
mod plan;
mod pool;
mod rows;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, ConnectOptions as _, Connection as _, Executor as _};

pub(crate) use plan::Kind;
use plan::{BindAs, Plan};
use pool::{BeginError, Pool, is_connection_error};
use rows::{Cell, cells, decoders};

use super::sql::{self, Dialect, NamedSql, Names, quote_ident};
use super::sqlite::rows::{Rows, TooBig, Within};
use super::sqlite::{NamedQuery, query_params};
use super::{
    Body, BoxFut, ChangeEffect, Completion, CompletionRequest, Contents, Database, RequestError,
    ResourceInfo, Source, SqlCheck, TemplateInfo, encode_component, ready,
};
use crate::manifest::expand::format_duration;
use crate::manifest::{self, Diagnostics, Loc, ParamType};
use crate::params::Typed;
use crate::quote::{Quote, quote};
use crate::watch::Change;

const JSON: &str = "application/json";
/// How long opening a connection may take (also `check`'s probe), unless the URL's
/// `connect_timeout` says otherwise.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Beyond the statement timeout, how long a request may wait for the server before its
/// connection is dropped (a server that stopped answering).
const GRACE: Duration = Duration::from_secs(2);
/// Plans kept per source (named queries, templates, tables); more and the cache starts over.
const MAX_PLANS: usize = 1024;
/// The longest identifier of a default PostgreSQL build (`NAMEDATALEN - 1` bytes).
const MAX_IDENTIFIER: usize = 63;
/// Whether the connected role can act on the server outside the database (write files, run
/// programs), which no read-only transaction prevents.
const POWERFUL_ROLE: &str = "SELECT current_setting('is_superuser') = 'on' \
    OR pg_has_role('pg_write_server_files', 'MEMBER') \
    OR pg_has_role('pg_execute_server_program', 'MEMBER')";

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

/// The live postgres source.
#[derive(Debug)]
pub(crate) struct PostgresSource {
    pub name: String,
    /// `postgres://NAME/`
    prefix: String,
    schemas: Vec<String>,
    row_limit: u64,
    /// The largest answer, in bytes of JSON (`max_size`).
    max_size: usize,
    tables: bool,
    watch: bool,
    poll_interval: Duration,
    /// The last stamp of each subscribed URI and when it was taken (`changes.rs`).
    stamps: std::sync::Mutex<HashMap<String, (String, std::time::Instant)>>,
    description: Option<String>,
    queries: Vec<PgQuery>,
    /// The table template's tool (`template_tools`), if any.
    table_tool: Option<String>,
    /// The `sql` templates that read this source, for `check` (registered as they are built).
    template_statements: std::sync::Mutex<Vec<CheckStatement>>,
    url_loc: Loc,
    /// "database `crm` on db.example.com:5432 as `app`": what messages name (no password).
    target: String,
    /// The URL; its password is scrubbed from every message that could carry it.
    url: manifest::PgUrl,
    timeout: Duration,
    pool: Pool,
    plans: std::sync::Mutex<HashMap<String, Arc<Plan>>>,
    /// Whether the current outage was already said on stderr (or by `check`): said once, not on
    /// every list.
    down_reported: AtomicBool,
}

/// A named query and how its parameters bind.
#[derive(Debug)]
struct PgQuery {
    q: NamedQuery,
    kinds: Vec<Kind>,
    /// Where its `sql` is written.
    loc: Loc,
}

/// A statement `check` has PostgreSQL prepare: a named query's or a `sql` template's.
#[derive(Debug, Clone)]
struct CheckStatement {
    /// `[postgres.crm.queries.q]` or `[templates.t]`.
    pub context: String,
    /// With `$N` parameters.
    pub sql: String,
    pub loc: Loc,
    pub kinds: Vec<Kind>,
}

/// What a request runs.
enum Statement<'a> {
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

impl PostgresSource {
    /// Builds the source without connecting: the URL must parse, and every named query must be
    /// one reading statement whose `:name` parameters are exactly the declared ones (PostgreSQL
    /// itself sees the SQL on first use, and in `check`).
    pub(crate) fn build(
        def: &manifest::Postgres,
        diags: &mut Diagnostics,
    ) -> Option<PostgresSource> {
        let context = format!("[postgres.{}]", def.name);
        // A URL that did not parse was reported when the manifest loaded.
        let url = def.url.clone()?;
        let options = match PgConnectOptions::from_url(url.url()) {
            Ok(o) => o,
            Err(e) => {
                let why = url.scrub(&e.to_string());
                diags.push(def.url_loc, format!("{context} `url`: {why}"));
                return None;
            }
        };
        let target = describe_target(&options);
        let mut queries = Vec::new();
        for q in &def.queries {
            let qcontext = format!("[postgres.{}.queries.{}]", def.name, q.name);
            let params = query_params(&qcontext, &q.params, diags);
            let names: Vec<&str> = q.params.iter().map(|p| p.name.as_str()).collect();
            let named = check_text(
                &qcontext,
                &q.sql,
                q.sql_loc,
                &names,
                Names::QueryParams,
                diags,
            );
            if let (Some(named), Some(params)) = (named, params) {
                queries.push(PgQuery {
                    q: NamedQuery {
                        name: q.name.clone(),
                        description: q.description.clone(),
                        sql: named.sql.into(),
                        params,
                        tool: q.tool.clone(),
                    },
                    kinds: q.params.iter().map(|p| kind_of(p.ty)).collect(),
                    loc: q.sql_loc,
                });
            }
        }
        let pool = Pool::new(
            options,
            def.max_connections,
            def.timeout,
            url.connect_timeout.unwrap_or(CONNECT_TIMEOUT),
        );
        // Queries with problems are left out; the diagnostics already fail the manifest.
        Some(PostgresSource {
            name: def.name.clone(),
            prefix: format!("postgres://{}/", def.name),
            schemas: def.schemas.clone(),
            row_limit: def.row_limit.max(1),
            max_size: usize::try_from(def.max_size).unwrap_or(usize::MAX),
            tables: def.tables,
            watch: def.watch,
            poll_interval: def.poll_interval,
            description: def.description.clone(),
            queries,
            table_tool: def.table_tool.clone(),
            template_statements: std::sync::Mutex::new(Vec::new()),
            stamps: std::sync::Mutex::new(HashMap::new()),
            url_loc: def.url_loc,
            target,
            url,
            timeout: def.timeout,
            pool,
            plans: std::sync::Mutex::new(HashMap::new()),
            down_reported: AtomicBool::new(false),
        })
    }

    /// The statements `check` has PostgreSQL prepare: the named queries' and the templates'.
    fn statements(&self) -> Vec<CheckStatement> {
        let mut out: Vec<CheckStatement> = self
            .queries
            .iter()
            .map(|pq| CheckStatement {
                context: format!("[postgres.{}.queries.{}]", self.name, pq.q.name),
                sql: pq.q.sql.to_string(),
                loc: pq.loc,
                kinds: pq.kinds.clone(),
            })
            .collect();
        if let Ok(t) = self.template_statements.lock() {
            out.extend(t.iter().cloned());
        }
        out
    }

    /// `check`: connects (with the connect timeout) and has PostgreSQL prepare every statement.
    /// Returns warnings: the database cannot be reached (once, at `url`), or it rejects a
    /// statement (at its `sql`).
    async fn check_warnings(&self) -> Vec<(Loc, String)> {
        let statements = self.statements();
        let mut lease = match self.pool.begin().await {
            Ok(l) => l,
            Err(e) => {
                self.down_reported.store(true, Ordering::Relaxed);
                return vec![(
                    self.url_loc,
                    format!(
                        "{}; `serve` starts anyway and answers each request with this error until the database can be reached",
                        self.begin_failed(&e)
                    ),
                )];
            }
        };
        let mut out = Vec::new();
        let powerful = sqlx::query_scalar::<_, bool>(POWERFUL_ROLE)
            .fetch_one(lease.conn())
            .await;
        if let Ok(true) = powerful {
            out.push((
                self.url_loc,
                format!(
                    "[postgres.{}] connects to {} with a role that is a superuser or may write server files: a read-only transaction does not stop such a role's server-side effects (lo_export, COPY … TO a file or program in a function); connect as a role that may only read",
                    self.name, self.target
                ),
            ));
        }
        for s in &statements {
            let conn = lease.conn();
            let checked = async {
                conn.execute("SAVEPOINT mcp_check").await?;
                let result = plan::make(conn, &s.sql, &s.kinds, self.row_limit).await;
                conn.execute("ROLLBACK TO SAVEPOINT mcp_check").await?;
                result
            };
            match tokio::time::timeout(self.timeout + GRACE, checked).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) if is_connection_error(&e) => {
                    out.push((self.url_loc, self.connect_failed(&e)));
                    lease.discard();
                    return out;
                }
                Ok(Err(e)) => out.push((
                    s.loc,
                    format!(
                        "{} PostgreSQL rejects the SQL: {}",
                        s.context,
                        self.scrub(&db_message(&e))
                    ),
                )),
                Err(_) => {
                    out.push((
                        s.loc,
                        format!(
                            "{} PostgreSQL did not describe the SQL within {}",
                            s.context,
                            format_duration(self.timeout)
                        ),
                    ));
                    lease.discard();
                    return out;
                }
            }
        }
        lease.finish();
        out
    }

    fn table_template(&self) -> String {
        format!("{}tables/{{table}}", self.prefix)
    }

    fn query_template(&self, q: &NamedQuery) -> String {
        let names: Vec<&str> = q.params.names().collect();
        if names.is_empty() {
            return format!("{}queries/{}", self.prefix, q.name);
        }
        format!("{}queries/{}{{?{}}}", self.prefix, q.name, names.join(","))
    }

    /// The schema, each table and view (when `tables`), and each query whose parameters all
    /// have defaults. A database that cannot be reached leaves its tables out (and says so on
    /// stderr): the rest of the server's list still answers.
    async fn list_resources(&self) -> Result<Vec<ResourceInfo>, RequestError> {
        let mut out = Vec::new();
        let mut schema = ResourceInfo::new(
            format!("{}schema", self.prefix),
            format!("{}/schema", self.name),
        );
        schema.description = Some(self.description.clone().unwrap_or_else(|| {
            format!(
                "The DDL of the tables and views of [postgres.{}] (schemas: {})",
                self.name,
                self.schemas.join(", ")
            )
        }));
        schema.mime_type = Some("text/plain".into());
        out.push(schema);
        if self.tables {
            match self.table_names().await {
                Ok(tables) => {
                    for (table, kind) in tables {
                        let mut r = ResourceInfo::new(
                            format!("{}tables/{}", self.prefix, encode_component(&table)),
                            format!("{}/tables/{table}", self.name),
                        );
                        r.description = Some(format!(
                            "{} `{table}` of [postgres.{}]: up to {} rows as JSON",
                            kind_word(&kind),
                            self.name,
                            self.row_limit
                        ));
                        r.mime_type = Some(JSON.into());
                        out.push(r);
                    }
                }
                Err(e) => {
                    if !self.down_reported.swap(true, Ordering::Relaxed) {
                        tracing::warn!("tables not listed (until the database answers): {e}");
                    }
                }
            }
        }
        out.extend(
            self.queries
                .iter()
                .filter_map(|pq| pq.q.fixed_resource(&self.prefix, "postgres", &self.name)),
        );
        Ok(out)
    }

    fn query_description(&self, q: &NamedQuery) -> String {
        q.describe("postgres", &self.name)
    }

    /// The table template and every named query (also those without parameters), as
    /// `template_tools` serves them.
    fn specs(&self) -> Vec<crate::providers::spec::TemplateSpec> {
        let table = self.tables.then(|| {
            let info = self.table_info();
            let description = info.description.unwrap_or_default();
            (info.uri_template, description, self.table_tool.clone())
        });
        crate::providers::spec::database_specs(
            "postgres",
            &self.name,
            table,
            self.queries
                .iter()
                .map(|pq| &pq.q)
                .map(|q| (q, self.query_template(q), self.query_description(q))),
        )
    }

    /// The table template.
    fn table_info(&self) -> TemplateInfo {
        TemplateInfo {
            uri_template: self.table_template(),
            name: format!("{}/tables", self.name),
            description: Some(format!(
                "A table or view of [postgres.{}] by name (schema `{}`; others as schema.table): up to {} rows as JSON",
                self.name, self.schemas[0], self.row_limit
            )),
            mime_type: Some(JSON.into()),
        }
    }

    fn template_infos(&self) -> Vec<TemplateInfo> {
        let table = self.tables.then(|| self.table_info());
        let queries = self
            .queries
            .iter()
            .map(|pq| &pq.q)
            .filter_map(|q| q.template_info(self.query_template(q), "postgres", &self.name));
        table.into_iter().chain(queries).collect()
    }

    /// Completes a variable of one of this source's templates: table names, or the values a
    /// query parameter allows (its `enum`, or true/false).
    async fn complete_var(
        &self,
        template: &str,
        var: &str,
        prefix: &str,
    ) -> Result<Completion, RequestError> {
        if self.tables && template == self.table_template() {
            if var != "table" {
                return Err(unknown_variable(template, var, &["table"]));
            }
            let names = self.table_names().await?;
            return Ok(Completion::from_candidates(
                names.into_iter().map(|(n, _)| n),
                prefix,
            ));
        }
        let Some(q) = self
            .queries
            .iter()
            .map(|pq| &pq.q)
            .find(|q| self.query_template(q) == template)
        else {
            return Err(RequestError::InvalidParams(format!(
                "no resource template {}",
                quote(template, Quote::Code)
            )));
        };
        if !q.params.names().any(|n| n == var) {
            let names: Vec<&str> = q.params.names().collect();
            return Err(unknown_variable(template, var, &names));
        }
        Ok(Completion::from_candidates(q.params.choices(var), prefix))
    }

    /// Reads `postgres://NAME/schema`, `…/tables/T` or `…/queries/Q?…`.
    async fn read_uri(&self, uri: &str) -> Result<Contents, RequestError> {
        let not_found = || RequestError::NotFound(uri.to_owned());
        let rest = uri.strip_prefix(&self.prefix).ok_or_else(not_found)?;
        if rest == "schema" {
            let text = self.schema().await?;
            return Ok(Contents {
                uri: uri.to_owned(),
                mime_type: Some("text/plain".into()),
                body: Body::Text(text),
            });
        }
        let rows = if let Some(encoded) = rest.strip_prefix("tables/") {
            if !self.tables {
                return Err(not_found());
            }
            let table = crate::uri::percent_decode(encoded).ok_or_else(not_found)?;
            if table.is_empty() || table.contains('\0') {
                return Err(not_found());
            }
            self.fetch(uri, Statement::Table(&table)).await?
        } else if let Some(rest) = rest.strip_prefix("queries/") {
            let (name, query) = match rest.split_once('?') {
                Some((n, q)) => (n, Some(q)),
                None => (rest, None),
            };
            let pq = self
                .queries
                .iter()
                .find(|pq| pq.q.name == name)
                .ok_or_else(not_found)?;
            let args = pq.q.arguments(query.unwrap_or(""))?;
            self.fetch(
                uri,
                Statement::Sql {
                    sql: &pq.q.sql,
                    kinds: &pq.kinds,
                    args: &args,
                },
            )
            .await?
        } else {
            return Err(not_found());
        };
        Ok(Contents {
            uri: uri.to_owned(),
            mime_type: Some(JSON.into()),
            body: Body::Text(rows.to_json()),
        })
    }

    /// A transaction for one request, or the request's error.
    async fn begin(&self) -> Result<pool::Lease, RequestError> {
        match self.pool.begin().await {
            Ok(lease) => {
                if self.down_reported.swap(false, Ordering::Relaxed) {
                    tracing::warn!("[postgres.{}] {} answers again", self.name, self.target);
                }
                Ok(lease)
            }
            Err(e) => Err(RequestError::Refused(self.begin_failed(&e))),
        }
    }

    /// Runs one statement in its own transaction and keeps at most `row_limit` rows. A plan that
    /// no longer fits the database (a table changed) is made again once.
    async fn fetch(&self, uri: &str, statement: Statement<'_>) -> Result<Rows<Cell>, RequestError> {
        // The manifest's SQL was checked when it loaded; this guards every other caller.
        if let Statement::Sql { sql, .. } = &statement {
            let first = sql::first_keyword(sql, Dialect::Postgres).unwrap_or_default();
            if !sql::PG_READ_KEYWORDS.contains(&first.as_str()) {
                return Err(RequestError::Refused(format!(
                    "[postgres.{}] only statements that read run here (found `{first}`)",
                    self.name
                )));
            }
        }
        let mut retried = false;
        // A table of the first schema by its bare name is read at once (`run_listed`). A name
        // longer than PostgreSQL's identifiers (`MAX_IDENTIFIER`) names no table: it goes the
        // usual way, where it is only ever a bound value, never the text of a statement that
        // PostgreSQL would cut to an existing name and both caches would keep (a URI may hold
        // 4 MiB).
        let mut first_schema = match statement {
            Statement::Table(name) if !name.contains('.') && name.len() <= MAX_IDENTIFIER => {
                Some(name)
            }
            _ => None,
        };
        loop {
            let mut lease = self.begin().await?;
            if let Some(name) = first_schema.take() {
                let run = self.run_listed(lease.conn(), name);
                match tokio::time::timeout(self.timeout + GRACE, run).await {
                    Ok(Ok(rows)) if !rows.rows.is_empty() => {
                        lease.finish();
                        return Ok(rows);
                    }
                    // Not listed, or empty: the usual way tells, in the same transaction.
                    Ok(Ok(_)) => {}
                    Ok(Err(Failure::Db(e))) if is_connection_error(&e) => {
                        lease.discard();
                        return Err(RequestError::Refused(self.connect_failed(&e)));
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
                        lease.discard();
                        return Err(self.timed_out());
                    }
                }
            }
            let run = self.run(lease.conn(), &statement);
            let result = match tokio::time::timeout(self.timeout + GRACE, run).await {
                Ok(r) => r,
                Err(_) => Err((Failure::TimedOut, false)),
            };
            match result {
                Ok(rows) => {
                    lease.finish();
                    return Ok(rows);
                }
                Err((Failure::Db(e), cached)) if !is_connection_error(&e) => {
                    let stale = stale_plan(&e);
                    if stale {
                        self.forget_plans(lease.conn()).await;
                    }
                    lease.finish();
                    if stale && cached && !retried {
                        retried = true;
                        continue;
                    }
                    return Err(self.statement_failed(uri, &statement, &e));
                }
                Err((Failure::Db(e), _)) => {
                    lease.discard();
                    return Err(RequestError::Refused(self.connect_failed(&e)));
                }
                Err((Failure::NotFound, _)) => {
                    lease.finish();
                    return Err(RequestError::NotFound(uri.to_owned()));
                }
                Err((Failure::Decode(why), _)) => {
                    lease.finish();
                    return Err(RequestError::Internal(format!(
                        "[postgres.{}] a value cannot be read: {why}",
                        self.name
                    )));
                }
                Err((Failure::TimedOut, _)) => {
                    lease.discard();
                    return Err(self.timed_out());
                }
                Err((Failure::TooBig, _)) => {
                    lease.finish();
                    return Err(RequestError::Refused(format!(
                        "[postgres.{}] the answer would hold a row larger than {} (`max_size` of the source); select fewer or smaller columns (e.g. `left`, `length`)",
                        self.name,
                        crate::manifest::expand::format_size(self.max_size as u64)
                    )));
                }
            }
        }
    }

    /// The statement's rows. The error says whether the plan came from the cache.
    async fn run(
        &self,
        conn: &mut PgConnection,
        statement: &Statement<'_>,
    ) -> Result<Rows<Cell>, (Failure, bool)> {
        let (sql, kinds, args) = match statement {
            Statement::Table(name) => {
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
            Statement::Sql { sql, kinds, args } => {
                (std::borrow::Cow::Borrowed(*sql), *kinds, *args)
            }
        };
        let (plan, cached) = self
            .plan(conn, &sql, kinds)
            .await
            .map_err(|e| (e.into(), false))?;
        collect(conn, &plan, args, self.limit(), self.max_size)
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
        collect(conn, &plan, &args, self.limit(), self.max_size).await
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
        let plan = Arc::new(plan::make(conn, sql, kinds, self.row_limit).await?);
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

    fn limit(&self) -> usize {
        usize::try_from(self.row_limit).unwrap_or(usize::MAX)
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
    async fn is_listed(&self, name: &str) -> bool {
        let Ok(mut lease) = self.begin().await else {
            return true;
        };
        let found = self.find_table(lease.conn(), name);
        let result = tokio::time::timeout(self.timeout + GRACE, found).await;
        self.settle(lease, result).is_ok_and(|t| t.is_some())
    }

    /// Tables and views by URI name, with their kind (`r`, `v`, …), in schema order then name.
    async fn table_names(&self) -> Result<Vec<(String, String)>, RequestError> {
        let mut lease = self.begin().await?;
        let sql = format!(
            "SELECT l.uri_name, l.kind FROM ({LISTED}) AS l \
             ORDER BY array_position($1, l.schema), l.name"
        );
        let query = sqlx::query_as::<_, (String, String)>(AssertSqlSafe(sql))
            .bind(&self.schemas)
            .bind(&self.schemas[0])
            .fetch_all(lease.conn());
        let result = tokio::time::timeout(self.timeout + GRACE, query).await;
        self.settle(lease, result)
    }

    /// Ends a request's transaction after a catalog query, mapping its errors.
    fn settle<T>(
        &self,
        lease: pool::Lease,
        result: Result<Result<T, sqlx::Error>, tokio::time::error::Elapsed>,
    ) -> Result<T, RequestError> {
        match result {
            Ok(Ok(v)) => {
                lease.finish();
                Ok(v)
            }
            Ok(Err(e)) if is_connection_error(&e) => {
                lease.discard();
                Err(RequestError::Refused(self.connect_failed(&e)))
            }
            Ok(Err(e)) => {
                lease.finish();
                Err(self.db_failed(&e))
            }
            Err(_) => {
                lease.discard();
                Err(self.timed_out())
            }
        }
    }

    /// The DDL of the listed schemas, rebuilt from the catalogs: enum and domain types, then
    /// each table (columns, defaults, identity, constraints, partition key), view and
    /// materialized view, its indexes and its comments.
    async fn schema(&self) -> Result<String, RequestError> {
        let mut lease = self.begin().await?;
        let work = async {
            let conn = lease.conn();
            let types = sqlx::query_as::<_, (String,)>(TYPES_DDL)
                .bind(&self.schemas)
                .fetch_all(&mut *conn)
                .await?;
            let sql = format!("WITH l AS ({LISTED}) {RELATIONS_DDL}");
            let relations: Vec<RelationRow> =
                sqlx::query_as::<_, RelationTuple>(AssertSqlSafe(sql))
                    .bind(&self.schemas)
                    .bind(&self.schemas[0])
                    .fetch_all(&mut *conn)
                    .await?
                    .into_iter()
                    .map(RelationRow::from)
                    .collect();
            Ok::<_, sqlx::Error>((types, relations))
        };
        let result = tokio::time::timeout(self.timeout + GRACE, work).await;
        let (types, relations) = self.settle(lease, result)?;
        let mut out = String::new();
        for (ddl,) in types {
            out.push_str(&ddl);
            out.push_str("\n\n");
        }
        for r in relations {
            out.push_str(&relation_ddl(&r));
            out.push('\n');
        }
        Ok(out)
    }

    fn begin_failed(&self, e: &BeginError) -> String {
        match e {
            BeginError::Connect(e) => self.connect_failed(e),
            BeginError::Begin(e) if is_connection_error(e) => self.connect_failed(e),
            BeginError::Begin(e) => format!(
                "[postgres.{}] cannot start a read-only transaction on {}: {}",
                self.name,
                self.target,
                self.scrub(&db_message(e))
            ),
        }
    }

    fn connect_failed(&self, e: &sqlx::Error) -> String {
        self.scrub(&format!(
            "[postgres.{}] cannot connect to {}: {}",
            self.name,
            self.target,
            db_message(e)
        ))
    }

    fn timed_out(&self) -> RequestError {
        RequestError::Refused(format!(
            "[postgres.{}] the query ran longer than {} (`timeout`) and was stopped",
            self.name,
            format_duration(self.timeout)
        ))
    }

    /// A statement's error: a value PostgreSQL cannot read as its parameter's type is invalid
    /// params; a timeout says so; anything else is PostgreSQL's message.
    fn statement_failed(
        &self,
        uri: &str,
        statement: &Statement<'_>,
        e: &sqlx::Error,
    ) -> RequestError {
        let has_args = matches!(statement, Statement::Sql { args, .. } if !args.is_empty());
        if let sqlx::Error::Database(d) = e {
            let code = d.code().unwrap_or_default();
            if code == "57014" && d.message().contains("statement timeout") {
                return self.timed_out();
            }
            let bad_value = matches!(
                &*code,
                "22P02" | "22003" | "22007" | "22008" | "22021" | "22P05" | "22001"
            );
            if has_args && bad_value {
                // PostgreSQL's message repeats the value it could not take: cut like it.
                return RequestError::InvalidParams(format!(
                    "{}: {}",
                    quote(uri, Quote::Code),
                    quote(&self.scrub(&db_message(e)), Quote::Plain)
                ));
            }
        }
        self.db_failed(e)
    }

    fn db_failed(&self, e: &sqlx::Error) -> RequestError {
        let mut message = format!("[postgres.{}] {}", self.name, db_message(e));
        if let sqlx::Error::Database(d) = e
            && d.code().as_deref() == Some("25006")
        {
            message.push_str(" (every statement runs in a read-only transaction)");
        }
        match e {
            sqlx::Error::Database(_) => RequestError::Refused(self.scrub(&message)),
            _ => RequestError::Internal(self.scrub(&message)),
        }
    }

    /// `text` with the URL's password replaced by `***`.
    fn scrub(&self, text: &str) -> String {
        self.url.scrub(text)
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
    while let Some(row) = stream.try_next().await? {
        if out.full() {
            break;
        }
        let d = column_decoders.get_or_insert_with(|| decoders(&row));
        let row = cells(&row, d).map_err(Failure::Decode)?;
        if !out.push(row).map_err(|TooBig| Failure::TooBig)? {
            break;
        }
    }
    Ok(out.into_rows())
}

/// Text checks of a statement (one reading statement, parameters are the declared names), then
/// the `:name` → `$N` rewrite.
fn check_text(
    context: &str,
    sql: &str,
    loc: Loc,
    declared: &[&str],
    names: Names<'_>,
    diags: &mut Diagnostics,
) -> Option<NamedSql> {
    match sql::bind_by_name_in(Dialect::Postgres, sql, declared) {
        Ok(n) => Some(n),
        Err(problems) => {
            for p in problems {
                diags.push(
                    loc,
                    format!(
                        "{context} {}",
                        sql::problem_message(Dialect::Postgres, &p, declared, names)
                    ),
                );
            }
            None
        }
    }
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

fn unknown_variable(template: &str, var: &str, vars: &[&str]) -> RequestError {
    RequestError::InvalidParams(format!(
        "`{template}` has no variable {}; its variables are: {}",
        quote(var, Quote::Code),
        vars.join(", ")
    ))
}

/// What PostgreSQL (or the connection) said, without sqlx's wrapping; a database error keeps its
/// detail and hint.
fn db_message(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(d) => {
            let mut m = d.message().to_owned();
            if let Some(pg) = d.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                if let Some(detail) = pg.detail() {
                    m.push_str(&format!(" ({detail})"));
                }
                if let Some(hint) = pg.hint() {
                    m.push_str(&format!("; hint: {hint}"));
                }
            }
            m
        }
        sqlx::Error::Io(io) => io.to_string(),
        sqlx::Error::Tls(t) => format!("TLS: {t}"),
        other => other.to_string(),
    }
}

/// "database `crm` on db.example.com:5432 as `app`" (or the socket folder).
fn describe_target(o: &PgConnectOptions) -> String {
    let place = match o.get_socket() {
        Some(dir) => format!("the socket in {}", dir.display()),
        None => format!("{}:{}", o.get_host(), o.get_port()),
    };
    match o.get_database() {
        Some(db) => format!("database `{db}` on {place} as `{}`", o.get_username()),
        None => format!("{place} as `{}`", o.get_username()),
    }
}

/// The catalog rows `relation_ddl` rebuilds a `CREATE` statement from.
struct RelationRow {
    kind: String,
    qualified: String,
    columns: Option<String>,
    constraints: Option<String>,
    definition: Option<String>,
    partition_key: Option<String>,
    indexes: Option<String>,
    comments: Option<String>,
}

type RelationTuple = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

impl From<RelationTuple> for RelationRow {
    fn from(t: RelationTuple) -> Self {
        RelationRow {
            kind: t.0,
            qualified: t.1,
            columns: t.2,
            constraints: t.3,
            definition: t.4,
            partition_key: t.5,
            indexes: t.6,
            comments: t.7,
        }
    }
}

/// Enum and domain types of the listed schemas (`$1`), as `CREATE TYPE` / `CREATE DOMAIN`.
const TYPES_DDL: &str = "\
    SELECT CASE WHEN t.typtype = 'e' THEN \
             'CREATE TYPE ' || quote_ident(n.nspname) || '.' || quote_ident(t.typname) || ' AS ENUM (' || \
             (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder) \
                FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid) || ');' \
           ELSE \
             'CREATE DOMAIN ' || quote_ident(n.nspname) || '.' || quote_ident(t.typname) || ' AS ' || \
             pg_catalog.format_type(t.typbasetype, t.typtypmod) || \
             CASE WHEN t.typdefault IS NOT NULL THEN ' DEFAULT ' || t.typdefault ELSE '' END || \
             CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END || \
             coalesce((SELECT string_agg(' CONSTRAINT ' || quote_ident(k.conname) || ' ' || \
                        pg_catalog.pg_get_constraintdef(k.oid, true), '' ORDER BY k.conname) \
                       FROM pg_catalog.pg_constraint k WHERE k.contypid = t.oid), '') || ';' \
           END \
    FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace \
    WHERE n.nspname = ANY($1) AND t.typtype IN ('e', 'd') \
    ORDER BY array_position($1, n.nspname), t.typname";

/// One row per listed relation (`l`, the `LISTED` rows) with the pieces of its DDL.
const RELATIONS_DDL: &str = "\
    SELECT r.kind, quote_ident(r.schema) || '.' || quote_ident(r.name) AS qualified, \
      (SELECT string_agg('    ' || quote_ident(a.attname) || ' ' || \
                pg_catalog.format_type(a.atttypid, a.atttypmod) || \
                CASE a.attidentity WHEN 'a' THEN ' GENERATED ALWAYS AS IDENTITY' \
                                   WHEN 'd' THEN ' GENERATED BY DEFAULT AS IDENTITY' ELSE '' END || \
                CASE WHEN a.attgenerated = 's' \
                       THEN ' GENERATED ALWAYS AS (' || pg_catalog.pg_get_expr(d.adbin, d.adrelid) || ') STORED' \
                     WHEN d.adbin IS NOT NULL THEN ' DEFAULT ' || pg_catalog.pg_get_expr(d.adbin, d.adrelid) \
                     ELSE '' END || \
                CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END, \
              E',\\n' ORDER BY a.attnum) \
         FROM pg_catalog.pg_attribute a \
         LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns, \
      (SELECT string_agg('    CONSTRAINT ' || quote_ident(k.conname) || ' ' || \
                pg_catalog.pg_get_constraintdef(k.oid, true), E',\\n' \
              ORDER BY array_position(ARRAY['p', 'u', 'f', 'c', 'x'], k.contype::text), k.conname) \
         FROM pg_catalog.pg_constraint k \
         WHERE k.conrelid = c.oid AND k.contype IN ('p', 'u', 'f', 'c', 'x')) AS constraints, \
      CASE WHEN r.kind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid, true) END AS definition, \
      CASE WHEN r.kind = 'p' THEN pg_catalog.pg_get_partkeydef(c.oid) END AS partition_key, \
      (SELECT string_agg(pg_catalog.pg_get_indexdef(i.indexrelid) || ';', E'\\n' ORDER BY i.indexrelid) \
         FROM pg_catalog.pg_index i \
         WHERE i.indrelid = c.oid AND NOT EXISTS \
           (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid = i.indexrelid AND k.conrelid = c.oid)) \
        AS indexes, \
      concat_ws(E'\\n', \
        CASE WHEN pg_catalog.obj_description(c.oid, 'pg_class') IS NOT NULL THEN \
          'COMMENT ON ' || CASE r.kind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' \
                                        WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END || ' ' || \
          quote_ident(r.schema) || '.' || quote_ident(r.name) || ' IS ' || \
          quote_literal(pg_catalog.obj_description(c.oid, 'pg_class')) || ';' END, \
        (SELECT string_agg('COMMENT ON COLUMN ' || quote_ident(r.schema) || '.' || quote_ident(r.name) || \
                  '.' || quote_ident(a.attname) || ' IS ' || \
                  quote_literal(pg_catalog.col_description(c.oid, a.attnum)) || ';', E'\\n' ORDER BY a.attnum) \
           FROM pg_catalog.pg_attribute a \
           WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
             AND pg_catalog.col_description(c.oid, a.attnum) IS NOT NULL)) AS comments \
    FROM l AS r \
    JOIN pg_catalog.pg_namespace n ON n.nspname = r.schema \
    JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = r.name \
    ORDER BY array_position($1, r.schema), r.name";

/// One relation's `CREATE` statement, its indexes and comments.
fn relation_ddl(r: &RelationRow) -> String {
    let mut out = String::new();
    match r.kind.as_str() {
        "v" | "m" => {
            let what = if r.kind == "v" {
                "VIEW"
            } else {
                "MATERIALIZED VIEW"
            };
            let body = r.definition.as_deref().unwrap_or("").trim_end();
            let body = body.trim_end_matches(';').trim_start_matches('\n');
            out.push_str(&format!("CREATE {what} {} AS\n{body};\n", r.qualified));
        }
        kind => {
            let what = if kind == "f" {
                "FOREIGN TABLE"
            } else {
                "TABLE"
            };
            let parts: Vec<&str> = [r.columns.as_deref(), r.constraints.as_deref()]
                .into_iter()
                .flatten()
                .filter(|p| !p.is_empty())
                .collect();
            out.push_str(&format!("CREATE {what} {} (\n", r.qualified));
            out.push_str(&parts.join(",\n"));
            out.push_str("\n)");
            if let Some(key) = &r.partition_key {
                out.push_str(&format!(" PARTITION BY {key}"));
            }
            out.push_str(";\n");
        }
    }
    for extra in [&r.indexes, &r.comments].into_iter().flatten() {
        if !extra.is_empty() {
            out.push_str(extra);
            out.push('\n');
        }
    }
    out
}

impl Source for PostgresSource {
    fn owns(&self, uri: &str) -> bool {
        uri.starts_with(&self.prefix)
    }

    /// Its URIs are split and decoded, never matched against a pattern: long query values pass.
    fn max_uri_bytes(&self) -> usize {
        super::MAX_QUERY_URI_BYTES
    }

    fn list(self: Arc<Self>) -> BoxFut<Result<Vec<ResourceInfo>, RequestError>> {
        Box::pin(async move { self.list_resources().await })
    }

    fn templates(&self) -> Vec<TemplateInfo> {
        self.template_infos()
    }

    fn template_specs(&self) -> Vec<crate::providers::spec::TemplateSpec> {
        self.specs()
    }

    fn read(self: Arc<Self>, uri: String) -> BoxFut<Result<Contents, RequestError>> {
        Box::pin(async move { self.read_uri(&uri).await })
    }

    /// The schema, a listed table (by either of its names), or a named query (its parameters
    /// are checked when read).
    fn serves(self: Arc<Self>, uri: String) -> BoxFut<bool> {
        Box::pin(async move {
            let Some(rest) = uri.strip_prefix(&self.prefix) else {
                return false;
            };
            let served = if rest == "schema" {
                true
            } else if let Some(encoded) = rest.strip_prefix("tables/") {
                match crate::uri::percent_decode(encoded) {
                    Some(table) => self.tables && self.is_listed(&table).await,
                    None => false,
                }
            } else {
                rest.strip_prefix("queries/").is_some_and(|q| {
                    let name = q.split_once('?').map_or(q, |(n, _)| n);
                    self.queries.iter().any(|x| x.q.name == name)
                })
            };
            // A subscription starts here: changes are measured from now.
            if served {
                self.baseline(&uri).await;
            }
            served
        })
    }

    fn complete(
        self: Arc<Self>,
        req: CompletionRequest,
    ) -> BoxFut<Result<Completion, RequestError>> {
        Box::pin(async move {
            self.complete_var(&req.template, &req.var, &req.prefix)
                .await
        })
    }

    /// Nothing on the filesystem.
    fn watch_dirs(self: Arc<Self>) -> BoxFut<Vec<PathBuf>> {
        ready(Vec::new())
    }

    fn apply_changes(self: Arc<Self>, _changes: Arc<[Change]>) -> BoxFut<ChangeEffect> {
        ready(ChangeEffect::default())
    }

    fn affected(&self, _uri: &str, _changes: &[Change]) -> bool {
        false
    }

    fn poll_interval(&self) -> Option<Duration> {
        self.watch.then_some(self.poll_interval)
    }

    fn poll(self: Arc<Self>, uris: Vec<String>) -> BoxFut<Vec<String>> {
        Box::pin(async move { self.changed(uris).await })
    }

    fn warnings(self: Arc<Self>) -> BoxFut<Vec<(Loc, String)>> {
        Box::pin(async move { self.check_warnings().await })
    }
}

impl Database for PostgresSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn engine(&self) -> manifest::SqlEngine {
        manifest::SqlEngine::Postgres
    }

    /// The text checks only (nothing connects while the manifest loads); PostgreSQL sees the
    /// statement on first use, and in `check`.
    fn check_template_sql<'a>(
        &'a self,
        check: SqlCheck<'a>,
        diags: &'a mut Diagnostics,
    ) -> Pin<Box<dyn Future<Output = Option<NamedSql>> + Send + 'a>> {
        let named = check_text(
            check.context,
            check.sql,
            check.loc,
            check.vars,
            Names::TemplateVars(check.uri),
            diags,
        );
        if let (Some(n), Ok(mut t)) = (&named, self.template_statements.lock()) {
            t.push(CheckStatement {
                context: check.context.to_owned(),
                sql: n.sql.clone(),
                loc: check.loc,
                kinds: vec![Kind::Text; n.names.len()],
            });
        }
        Box::pin(std::future::ready(named))
    }

    /// Runs a template's statement; its variables are strings, typed by PostgreSQL.
    fn read_sql(
        self: Arc<Self>,
        uri: String,
        sql: Arc<str>,
        args: Vec<Typed>,
        mime_type: Option<String>,
    ) -> BoxFut<Result<Contents, RequestError>> {
        Box::pin(async move {
            let kinds = vec![Kind::Text; args.len()];
            let rows = self
                .fetch(
                    &uri,
                    Statement::Sql {
                        sql: &sql,
                        kinds: &kinds,
                        args: &args,
                    },
                )
                .await?;
            Ok(Contents {
                uri,
                mime_type: Some(mime_type.unwrap_or_else(|| JSON.to_owned())),
                body: Body::Text(rows.to_json()),
            })
        })
    }
}
