//! `[sqlite.NAME]`: a SQLite database served read-only — its schema, one resource per
//! table and view, and named queries whose parameters come from the URI's query string.
//!
//! URIs: `sqlite://NAME/schema`, `sqlite://NAME/tables/{table}`, `sqlite://NAME/queries/QUERY{?p,…}`.
//! Table and query reads answer `{"columns": [...], "rows": [{column: value}], "truncated": bool}`
//! with at most `row_limit` rows; each value is written by its own storage class (SQLite is
//! dynamically typed), a BLOB as a base64 string.
//!
//! Invariants: the database is opened with `SQLITE_OPEN_READONLY` (never created) and
//! `PRAGMA query_only = 1`; parameters are always bound, never spliced (a table name is quoted as
//! one identifier, and only names the database lists are read); nothing is opened until a request
//! needs it. Reads run in one job each on a blocking thread (rusqlite on the connection the job
//! takes from the pool), never on the async runtime, and each is interrupted after the source's
//! `timeout` or when its request goes away. The build-time checks (does the file open, does
//! each named query compile with the declared parameters) go through sqlx.

mod pool;
pub(crate) mod rows;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlx::{
    AssertSqlSafe, ConnectOptions as _, Connection as _, Executor as _, SqlSafeStr as _,
    SqliteConnection, Statement as _,
};

use pool::{Pool, options, sqlite_message};
use rows::{Rows, collect};

use super::sql::{self, Dialect, NamedSql, Names, quote_ident};
use super::{
    BoxFut, ChangeEffect, Completion, CompletionRequest, Contents, Database, RequestError,
    ResourceInfo, Source, SqlCheck, TemplateInfo, encode_component, ready,
};
use crate::manifest::expand::format_duration;
use crate::manifest::{self, Diagnostics, Loc, ParamType};
use crate::params::{Noun, Params, Typed};
use crate::quote::{Quote, quote};
use crate::watch::Change;

const JSON: &str = "application/json";
/// Rows of `pragma_table_list` for what `table_names` lists, by the name bound as `?2`.
const LISTED_TABLE: &str = "SELECT 1 FROM pragma_table_list(?2) WHERE schema = 'main' \
     AND type IN ('table', 'view', 'virtual') AND lower(substr(name, 1, 7)) <> 'sqlite_'";
/// Whether the name bound as `?1` is listed.
const LISTED_TABLE_COUNT: &str = "SELECT count(*) FROM pragma_table_list(?1) WHERE schema = 'main' \
     AND type IN ('table', 'view', 'virtual') AND lower(substr(name, 1, 7)) <> 'sqlite_'";

/// The live sqlite source.
#[derive(Debug)]
pub(crate) struct SqliteSource {
    pub name: String,
    /// Canonical path of the database file.
    path: PathBuf,
    /// `sqlite://NAME/`
    prefix: String,
    row_limit: u64,
    /// The largest answer, in bytes of JSON (`max_size`).
    max_size: usize,
    tables: bool,
    pub watch: bool,
    description: Option<String>,
    queries: Vec<NamedQuery>,
    /// The table template's tool (`template_tools`), if any.
    table_tool: Option<String>,
    pool: Pool,
}

/// A checked named query: SQL rewritten for positional binding, parameters in binding order.
/// (The postgres source's queries are the same.)
#[derive(Debug)]
pub(crate) struct NamedQuery {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) sql: Arc<str>,
    pub(crate) params: Params,
    /// Its tool (`template_tools`), if any.
    pub(crate) tool: Option<String>,
}

impl NamedQuery {
    /// Its description, or one naming it and its source (`section` is `sqlite` or `postgres`).
    pub(crate) fn describe(&self, section: &str, source: &str) -> String {
        self.description
            .clone()
            .unwrap_or_else(|| format!("Named query `{}` of [{section}.{source}]", self.name))
    }

    /// Its fixed resource `{prefix}queries/NAME`, listed when every parameter can be left out.
    pub(crate) fn fixed_resource(
        &self,
        prefix: &str,
        section: &str,
        source: &str,
    ) -> Option<ResourceInfo> {
        if !self.params.all_optional() {
            return None;
        }
        let mut r = ResourceInfo::new(
            format!("{prefix}queries/{}", self.name),
            format!("{source}/queries/{}", self.name),
        );
        r.description = Some(self.describe(section, source));
        r.mime_type = Some(JSON.into());
        Some(r)
    }

    /// Its template (`uri_template`, built by the source), when it has parameters.
    pub(crate) fn template_info(
        &self,
        uri_template: String,
        section: &str,
        source: &str,
    ) -> Option<TemplateInfo> {
        if self.params.is_empty() {
            return None;
        }
        Some(TemplateInfo {
            uri_template,
            name: format!("{source}/queries/{}", self.name),
            description: Some(format!(
                "{}. Parameters: {}",
                self.describe(section, source).trim_end_matches('.'),
                self.params.summary().join(", ")
            )),
            mime_type: Some(JSON.into()),
        })
    }
}

impl SqliteSource {
    /// Builds the source: the file must exist and be a database, and every named query must
    /// compile as one reading statement whose `:name` parameters are exactly the declared ones.
    /// Opens one connection for these checks and closes it; serving opens its own on first use.
    pub(crate) async fn build(
        def: &manifest::Sqlite,
        diags: &mut Diagnostics,
    ) -> Option<SqliteSource> {
        let path = match tokio::fs::canonicalize(&def.path).await {
            Ok(p) => p,
            Err(e) => {
                let why = match e.kind() {
                    std::io::ErrorKind::NotFound => "no such file".to_owned(),
                    _ => e.to_string(),
                };
                diags.push(
                    def.path_loc,
                    format!(
                        "[sqlite.{}] database `{}` cannot be opened: {why} (it is opened read-only and never created)",
                        def.name,
                        def.path.display()
                    ),
                );
                return None;
            }
        };
        if !tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_file()) {
            diags.push(
                def.path_loc,
                format!(
                    "[sqlite.{}] `{}` is not a file: `path` names a SQLite database file",
                    def.name,
                    def.path.display()
                ),
            );
            return None;
        }
        let mut check = match open_checked(&path, def.timeout).await {
            Ok(c) => c,
            Err(e) => {
                diags.push(
                    def.path_loc,
                    format!(
                        "[sqlite.{}] `{}` cannot be opened as a SQLite database: {}",
                        def.name,
                        def.path.display(),
                        db_message(&e)
                    ),
                );
                return None;
            }
        };
        let mut queries = Vec::new();
        for q in &def.queries {
            let context = format!("[sqlite.{}.queries.{}]", def.name, q.name);
            let params = query_params(&context, &q.params, diags);
            let names: Vec<&str> = q.params.iter().map(|p| p.name.as_str()).collect();
            let Some(named) = check_sql(
                &mut check,
                &context,
                &q.sql,
                q.sql_loc,
                &names,
                Names::QueryParams,
                diags,
            )
            .await
            else {
                continue;
            };
            if let Some(params) = params {
                queries.push(NamedQuery {
                    name: q.name.clone(),
                    description: q.description.clone(),
                    sql: named.sql.into(),
                    params,
                    tool: q.tool.clone(),
                });
            }
        }
        let _ = check.close().await;
        Some(SqliteSource {
            name: def.name.clone(),
            prefix: format!("sqlite://{}/", def.name),
            row_limit: def.row_limit.max(1),
            max_size: usize::try_from(def.max_size).unwrap_or(usize::MAX),
            tables: def.tables,
            watch: def.watch,
            description: def.description.clone(),
            queries,
            table_tool: def.table_tool.clone(),
            pool: Pool::new(&path, def.timeout, def.max_size),
            path,
        })
    }

    /// Whether one of `changes` is the database file or its WAL (`<path>-wal`).
    fn changed_by(&self, changes: &[Change]) -> bool {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        changes
            .iter()
            .any(|c| c.is_rescan() || c.path == self.path || c.path.as_os_str() == wal.as_os_str())
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
    /// have defaults.
    async fn list_resources(&self) -> Result<Vec<ResourceInfo>, RequestError> {
        let mut out = Vec::new();
        let mut schema = ResourceInfo::new(
            format!("{}schema", self.prefix),
            format!("{}/schema", self.name),
        );
        schema.description = Some(self.description.clone().unwrap_or_else(|| {
            format!(
                "The CREATE statements of the tables, views, indexes and triggers of [sqlite.{}]",
                self.name
            )
        }));
        schema.mime_type = Some("text/plain".into());
        out.push(schema);
        if self.tables {
            for (table, kind) in self.table_names().await? {
                let mut r = ResourceInfo::new(
                    format!("{}tables/{}", self.prefix, encode_component(&table)),
                    format!("{}/tables/{table}", self.name),
                );
                r.description = Some(format!(
                    "{} `{table}` of [sqlite.{}]: up to {} rows as JSON",
                    if kind == "view" { "View" } else { "Table" },
                    self.name,
                    self.row_limit
                ));
                r.mime_type = Some(JSON.into());
                out.push(r);
            }
        }
        out.extend(
            self.queries
                .iter()
                .filter_map(|q| q.fixed_resource(&self.prefix, "sqlite", &self.name)),
        );
        Ok(out)
    }

    fn query_description(&self, q: &NamedQuery) -> String {
        q.describe("sqlite", &self.name)
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
            "sqlite",
            &self.name,
            table,
            self.queries
                .iter()
                .map(|q| (q, self.query_template(q), self.query_description(q))),
        )
    }

    /// The table template.
    fn table_info(&self) -> TemplateInfo {
        TemplateInfo {
            uri_template: self.table_template(),
            name: format!("{}/tables", self.name),
            description: Some(format!(
                "A table or view of [sqlite.{}] by name: up to {} rows as JSON",
                self.name, self.row_limit
            )),
            mime_type: Some(JSON.into()),
        }
    }

    fn template_infos(&self) -> Vec<TemplateInfo> {
        let table = self.tables.then(|| self.table_info());
        let queries = self
            .queries
            .iter()
            .filter_map(|q| q.template_info(self.query_template(q), "sqlite", &self.name));
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

    /// Reads `sqlite://NAME/schema`, `…/tables/T` or `…/queries/Q?…`.
    async fn read_uri(&self, uri: &str) -> Result<Contents, RequestError> {
        let not_found = || RequestError::NotFound(uri.to_owned());
        let rest = uri.strip_prefix(&self.prefix).ok_or_else(not_found)?;
        if rest == "schema" {
            let text = self.schema().await?;
            return Ok(Contents {
                uri: uri.to_owned(),
                mime_type: Some("text/plain".into()),
                body: super::Body::Text(text),
            });
        }
        let rows = if let Some(encoded) = rest.strip_prefix("tables/") {
            if !self.tables {
                return Err(not_found());
            }
            let table = crate::uri::percent_decode(encoded).ok_or_else(not_found)?;
            if table.is_empty() {
                return Err(not_found());
            }
            self.fetch_table(&table).await?.ok_or_else(not_found)?
        } else if let Some(rest) = rest.strip_prefix("queries/") {
            let (name, query) = match rest.split_once('?') {
                Some((n, q)) => (n, Some(q)),
                None => (rest, None),
            };
            let q = self
                .queries
                .iter()
                .find(|q| q.name == name)
                .ok_or_else(not_found)?;
            let args = q.arguments(query.unwrap_or(""))?;
            self.fetch(&q.sql, &args).await?
        } else {
            return Err(not_found());
        };
        Ok(Contents {
            uri: uri.to_owned(),
            mime_type: Some(JSON.into()),
            body: super::Body::Text(rows.to_json()),
        })
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

    /// Tables (also virtual ones) and views, by name, without SQLite's own and shadow tables.
    async fn table_names(&self) -> Result<Vec<(String, String)>, RequestError> {
        let ran = self
            .pool
            .run(|conn| {
                let mut statement = conn.prepare_cached(
                    "SELECT name, type FROM pragma_table_list WHERE schema = 'main' \
                     AND type IN ('table', 'view', 'virtual') \
                     AND lower(substr(name, 1, 7)) <> 'sqlite_' ORDER BY name",
                )?;
                let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
                rows.collect::<rusqlite::Result<Vec<(String, String)>>>()
            })
            .await?;
        ran.result.map_err(|e| self.failed(&e))
    }

    /// The first rows of a table or view that `table_names` lists (`None` for any other name).
    ///
    /// One statement both checks and reads: the quoted name's `LIMIT` is 0 unless the listing
    /// has it, so a name the database does not list (a table-valued function such as
    /// `pragma_database_list`, SQLite's own tables) yields no row. The check sits in `LIMIT`,
    /// evaluated once, not in `WHERE`, where SQLite would run it again for every row. Only an
    /// empty result or an error needs the separate check (in the same job).
    async fn fetch_table(&self, name: &str) -> Result<Option<Rows>, RequestError> {
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
                    return Ok((result, true));
                }
                let listed: i64 = conn
                    .prepare_cached(LISTED_TABLE_COUNT)?
                    .query_row([&name], |row| row.get(0))?;
                Ok((result, listed > 0))
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

    /// Runs one statement with bound values and keeps at most `row_limit` rows (reading one more
    /// to know whether there were more). Rows are stepped one by one, so a huge result is never
    /// loaded.
    async fn fetch(&self, sql: &str, args: &[Typed]) -> Result<Rows, RequestError> {
        let (sql, args, limit, max_size) =
            (sql.to_owned(), args.to_vec(), self.limit(), self.max_size);
        let ran = self
            .pool
            .run(move |conn| collect(conn, &sql, &args, limit, max_size))
            .await?;
        ran.result.map_err(|e| self.query_failed(&e, ran.timed_out))
    }

    fn limit(&self) -> usize {
        usize::try_from(self.row_limit).unwrap_or(usize::MAX)
    }

    fn query_failed(&self, e: &rusqlite::Error, timed_out: bool) -> RequestError {
        if timed_out {
            RequestError::Refused(format!(
                "[sqlite.{}] the query ran longer than {} (`timeout`) and was stopped",
                self.name,
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
                    "[sqlite.{}] a value or a row larger than {} (`max_size` of the source) was to be read or made, which SQLite is not let do (not even for `length()`): leave such values out, or raise `max_size` (at most 256 MiB)",
                    self.name,
                    crate::manifest::expand::format_size(self.max_size as u64)
                ))
            }
            rusqlite::Error::SqliteFailure(..) => {
                RequestError::Refused(format!("[sqlite.{}] {}", self.name, sqlite_message(e)))
            }
            other => RequestError::Internal(format!("[sqlite.{}]: {other}", self.name)),
        }
    }
}

fn unknown_variable(template: &str, var: &str, vars: &[&str]) -> RequestError {
    RequestError::InvalidParams(format!(
        "`{template}` has no variable {}; its variables are: {}",
        quote(var, Quote::Code),
        vars.join(", ")
    ))
}

impl NamedQuery {
    /// The bound values for a query string: every declared parameter converted to its type and
    /// checked, defaults for the missing ones; unknown, repeated or missing required ones are
    /// errors.
    pub(crate) fn arguments(&self, query: &str) -> Result<Vec<Typed>, RequestError> {
        let mut given: Vec<(String, String)> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decoded = crate::uri::percent_decode(k).zip(crate::uri::percent_decode(v));
            let Some((key, value)) = decoded else {
                return Err(RequestError::InvalidParams(format!(
                    "query `{}`: {} is not a valid percent-encoded parameter",
                    self.name,
                    quote(pair, Quote::Code)
                )));
            };
            given.push((key, value));
        }
        self.params.bind_text(&given).map_err(|problems| {
            RequestError::InvalidParams(format!("query `{}`: {}", self.name, problems.join("; ")))
        })
    }
}

/// Checks the declared parameters of a query: SQL can bind strings, integers, numbers and
/// booleans, not arrays. `None` after reporting problems.
pub(crate) fn query_params(
    context: &str,
    params: &[manifest::Param],
    diags: &mut Diagnostics,
) -> Option<Params> {
    let mut ok = true;
    for p in params {
        if p.ty == ParamType::Array {
            diags.push(
                p.loc,
                format!(
                    "{context} parameter `{}` is an array; SQL parameters are string, integer, number or boolean",
                    p.name
                ),
            );
            ok = false;
            continue;
        }
    }
    if !ok {
        return None;
    }
    match Params::new(params, Noun::Parameter) {
        Ok(p) => Some(p),
        Err(errors) => {
            for (loc, m) in errors {
                diags.push(loc, format!("{context} {m}"));
            }
            None
        }
    }
}

/// Text checks (one reading statement, parameters are the declared names), then SQLite compiles
/// the rewritten statement and must count exactly the declared parameters.
async fn check_sql(
    conn: &mut SqliteConnection,
    context: &str,
    sql: &str,
    loc: Loc,
    declared: &[&str],
    names: Names<'_>,
    diags: &mut Diagnostics,
) -> Option<NamedSql> {
    let named = match sql::bind_by_name(sql, declared) {
        Ok(n) => n,
        Err(problems) => {
            for p in problems {
                diags.push(
                    loc,
                    format!(
                        "{context} {}",
                        sql::problem_message(Dialect::Sqlite, &p, declared, names)
                    ),
                );
            }
            return None;
        }
    };
    match conn
        .prepare(AssertSqlSafe(named.sql.clone()).into_sql_str())
        .await
    {
        Err(e) => {
            diags.push(
                loc,
                format!("{context} the SQL does not compile: {}", db_message(&e)),
            );
            None
        }
        Ok(statement) => {
            let counted = match statement.parameters() {
                Some(sqlx::Either::Right(n)) => n,
                Some(sqlx::Either::Left(types)) => types.len(),
                None => declared.len(),
            };
            if counted != declared.len() {
                diags.push(
                    loc,
                    format!(
                        "{context} SQLite counts {counted} parameters where {} were found; write each parameter as `:name` outside quotes and comments",
                        declared.len()
                    ),
                );
                return None;
            }
            Some(named)
        }
    }
}

/// What SQLite said, without sqlx's wrapping.
fn db_message(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(d) => d.message().to_owned(),
        other => other.to_string(),
    }
}

/// Opens a connection for build-time checks and makes sure the file is a database: a regular
/// file (checked on a descriptor opened non-blocking), opened within `timeout`.
async fn open_checked(
    path: &Path,
    timeout: std::time::Duration,
) -> Result<SqliteConnection, sqlx::Error> {
    let found = pool::check_regular(path, None).map_err(sqlx::Error::Io)?;
    let open = async {
        let mut conn = found.options(options(path)).connect().await?;
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM sqlite_schema")
            .fetch_one(&mut conn)
            .await?;
        Ok(conn)
    };
    match tokio::time::timeout(timeout, open).await {
        Ok(result) => result,
        Err(_) => {
            pool::wake_fifo_reader(path);
            Err(sqlx::Error::Io(std::io::Error::other(format!(
                "it did not open within {} (`timeout`)",
                format_duration(timeout)
            ))))
        }
    }
}

impl Source for SqliteSource {
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

    /// The schema, a listed table, or a named query (its parameters are checked when read).
    fn serves(self: Arc<Self>, uri: String) -> BoxFut<bool> {
        Box::pin(async move {
            let Some(rest) = uri.strip_prefix(&self.prefix) else {
                return false;
            };
            if rest == "schema" {
                return true;
            }
            if let Some(encoded) = rest.strip_prefix("tables/") {
                let Some(table) = crate::uri::percent_decode(encoded) else {
                    return false;
                };
                return self.tables
                    && self
                        .table_names()
                        .await
                        .is_ok_and(|names| names.iter().any(|(n, _)| *n == table));
            }
            rest.strip_prefix("queries/").is_some_and(|q| {
                let name = q.split_once('?').map_or(q, |(n, _)| n);
                self.queries.iter().any(|x| x.name == name)
            })
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

    /// The database's folder: the file and its WAL change there.
    fn watch_dirs(self: Arc<Self>) -> BoxFut<Vec<PathBuf>> {
        let dirs = match self.path.parent() {
            Some(dir) if self.watch => vec![dir.to_path_buf()],
            _ => Vec::new(),
        };
        ready(dirs)
    }

    /// A database's tables can change too, but telling needs a query: the list is re-read on
    /// the next `resources/list` either way.
    fn apply_changes(self: Arc<Self>, _changes: Arc<[Change]>) -> BoxFut<ChangeEffect> {
        ready(ChangeEffect::default())
    }

    fn affected(&self, uri: &str, changes: &[Change]) -> bool {
        self.watch && uri.starts_with(&self.prefix) && self.changed_by(changes)
    }
}

impl Database for SqliteSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn engine(&self) -> manifest::SqlEngine {
        manifest::SqlEngine::Sqlite
    }

    fn check_template_sql<'a>(
        &'a self,
        check: SqlCheck<'a>,
        diags: &'a mut Diagnostics,
    ) -> std::pin::Pin<Box<dyn Future<Output = Option<NamedSql>> + Send + 'a>> {
        Box::pin(async move {
            let mut conn = match open_checked(&self.path, self.pool.timeout).await {
                Ok(c) => c,
                Err(e) => {
                    diags.push(
                        check.loc,
                        format!(
                            "{} the database cannot be opened: {}",
                            check.context,
                            db_message(&e)
                        ),
                    );
                    return None;
                }
            };
            let named = check_sql(
                &mut conn,
                check.context,
                check.sql,
                check.loc,
                check.vars,
                Names::TemplateVars(check.uri),
                diags,
            )
            .await;
            let _ = conn.close().await;
            named
        })
    }

    fn read_sql(
        self: Arc<Self>,
        uri: String,
        sql: Arc<str>,
        args: Vec<Typed>,
        mime_type: Option<String>,
    ) -> BoxFut<Result<Contents, RequestError>> {
        Box::pin(async move {
            let rows = self.fetch(&sql, &args).await?;
            Ok(Contents {
                uri,
                mime_type: Some(mime_type.unwrap_or_else(|| JSON.to_owned())),
                body: super::Body::Text(rows.to_json()),
            })
        })
    }
}
