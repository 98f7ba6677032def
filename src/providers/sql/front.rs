//! `SqlSource`: one `[sqlite]`, `[postgres]` or `[mysql]` entry as a source, whatever its engine.
//! The URI grammar (`SECTION://NAME/schema`, `…/tables/{table}`, `…/queries/QUERY{?p,…}`),
//! listing, templates, completion, `serves`, named queries and their values, the template tools,
//! the SQL tool, the `sql` templates' statements, polling subscribed URIs by stamps, and
//! `check`'s warnings are all here, once; the `Engine` reads.
//!
//! Table and query reads answer `{"columns": [...], "rows": [{column: value}], "truncated": bool}`
//! with at most `row_limit` rows and at most `max_size` bytes (`rows.rs`).

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::Built;
use super::engine::{Engine, Target};
use super::query::{NamedQuery, Statement};
use super::text::Names;
use super::tool::SqlTool;
use crate::manifest::sql::DatabaseDef;
use crate::manifest::{Diagnostics, Loc, ParamType};
use crate::params::Typed;
use crate::providers::spec::TemplateSpec;
use crate::providers::tool::{ToolInfo, ToolResult};
use crate::providers::{
    Body, BoxFut, ChangeEffect, Completion, CompletionRequest, Contents, Database, RequestError,
    ResourceInfo, Source, SqlCheck, TemplateInfo, encode_component, ready,
};
use crate::quote::{Quote, quote};
use crate::watch::Change;

const JSON: &str = "application/json";

/// How long the stamp of a URI nobody subscribes to is kept: a baseline taken while its
/// subscription is being answered must outlive a poll that does not list it yet.
const KEEP_UNSUBSCRIBED: Duration = Duration::from_secs(60);

/// One database source.
#[derive(Debug)]
pub(crate) struct SqlSource<E: Engine> {
    /// `sqlite`, `postgres` or `mysql`.
    section: &'static str,
    pub name: String,
    /// `SECTION://NAME/`
    prefix: String,
    row_limit: u64,
    tables: bool,
    watch: bool,
    description: Option<String>,
    queries: Vec<NamedQuery>,
    /// The table template's tool (`template_tools`), if any.
    table_tool: Option<String>,
    /// `sql_tool = true`.
    sql_tool: Option<SqlTool>,
    /// The `sql` templates that read this source, for `check` (registered as they are built).
    templates: std::sync::Mutex<Vec<Statement>>,
    /// The last stamp of each subscribed URI and when it was taken (polled engines).
    stamps: std::sync::Mutex<HashMap<String, (String, Instant)>>,
    /// Whether the tables could not be listed last time (said once on stderr, not on every
    /// list).
    down: AtomicBool,
    engine: E,
}

impl<E: Engine> SqlSource<E> {
    /// Builds the source over `engine`: every named query must be one reading statement whose
    /// `:name` parameters are exactly the declared ones (and compile, for an engine that compiles
    /// while the manifest loads). A query with a problem is reported and left out.
    pub(crate) async fn build(
        def: &DatabaseDef,
        engine: E,
        diags: &mut Diagnostics,
    ) -> Option<Built> {
        let mut queries = Vec::new();
        for q in &def.queries {
            let Some(named) = NamedQuery::check(E::DIALECT, def.section, &def.name, q, diags)
            else {
                continue;
            };
            if let Some(Err(why)) = engine.compile(&named.statement).await {
                diags.push(q.sql_loc, format!("{} {why}", named.statement.context));
                continue;
            }
            queries.push(named);
        }
        let sql_tool = def
            .sql_tool
            .as_ref()
            .map(|tool| SqlTool::new(tool, E::DIALECT, E::NAME, def));
        let source = Arc::new(SqlSource {
            section: def.section,
            name: def.name.clone(),
            prefix: def.prefix(),
            row_limit: def.row_limit.max(1),
            tables: def.tables,
            watch: def.watch,
            description: def.description.clone(),
            queries,
            table_tool: def.table_tool.clone(),
            sql_tool,
            templates: std::sync::Mutex::new(Vec::new()),
            stamps: std::sync::Mutex::new(HashMap::new()),
            down: AtomicBool::new(false),
            engine,
        });
        Some(Built {
            source: source.clone(),
            database: source,
        })
    }

    /// `[SECTION.NAME]`
    fn entry(&self) -> String {
        format!("[{}.{}]", self.section, self.name)
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

    fn describe(&self, q: &NamedQuery) -> String {
        q.description
            .clone()
            .unwrap_or_else(|| format!("Named query `{}` of {}", q.name, self.entry()))
    }

    /// The schema, each table and view (when `tables`), and each query whose parameters all
    /// have defaults. Tables that cannot be listed (a database that cannot be reached) are left
    /// out, and said once on stderr: the rest of the server's list still answers.
    async fn list_resources(&self) -> Result<Vec<ResourceInfo>, RequestError> {
        let mut out = Vec::new();
        let mut schema = ResourceInfo::new(
            format!("{}schema", self.prefix),
            format!("{}/schema", self.name),
        );
        schema.description = Some(
            self.description
                .clone()
                .unwrap_or_else(|| self.engine.schema_about()),
        );
        schema.mime_type = Some("text/plain".into());
        out.push(schema);
        if self.tables {
            match self.engine.tables().await {
                Ok(tables) => {
                    if self.down.swap(false, Ordering::Relaxed) {
                        tracing::warn!("{} lists its tables again", self.entry());
                    }
                    for (table, kind) in tables {
                        let mut r = ResourceInfo::new(
                            format!("{}tables/{}", self.prefix, encode_component(&table)),
                            format!("{}/tables/{table}", self.name),
                        );
                        r.description = Some(format!(
                            "{kind} `{table}` of {}: up to {} rows as JSON",
                            self.entry(),
                            self.row_limit
                        ));
                        r.mime_type = Some(JSON.into());
                        out.push(r);
                    }
                }
                Err(e) => {
                    if !self.down.swap(true, Ordering::Relaxed) && !self.engine.reported_down() {
                        tracing::warn!("tables not listed (until the database answers): {e}");
                    }
                }
            }
        }
        for q in &self.queries {
            if !q.params.all_optional() {
                continue;
            }
            let mut r = ResourceInfo::new(
                format!("{}queries/{}", self.prefix, q.name),
                format!("{}/queries/{}", self.name, q.name),
            );
            r.description = Some(self.describe(q));
            r.mime_type = Some(JSON.into());
            out.push(r);
        }
        Ok(out)
    }

    /// The table template.
    fn table_info(&self) -> TemplateInfo {
        TemplateInfo {
            uri_template: self.table_template(),
            name: format!("{}/tables", self.name),
            description: Some(format!(
                "A table or view of {} by name{}: up to {} rows as JSON",
                self.entry(),
                self.engine.table_about(),
                self.row_limit
            )),
            mime_type: Some(JSON.into()),
        }
    }

    fn template_infos(&self) -> Vec<TemplateInfo> {
        let table = self.tables.then(|| self.table_info());
        let queries = self
            .queries
            .iter()
            .filter(|q| !q.params.is_empty())
            .map(|q| TemplateInfo {
                uri_template: self.query_template(q),
                name: format!("{}/queries/{}", self.name, q.name),
                description: Some(format!(
                    "{}. Parameters: {}",
                    self.describe(q).trim_end_matches('.'),
                    q.params.summary().join(", ")
                )),
                mime_type: Some(JSON.into()),
            });
        table.into_iter().chain(queries).collect()
    }

    /// The table template and every named query (also those without parameters), as
    /// `template_tools` serves them.
    fn specs(&self) -> Vec<TemplateSpec> {
        let table = self.tables.then(|| {
            let info = self.table_info();
            let description = info.description.unwrap_or_default();
            (info.uri_template, description, self.table_tool.clone())
        });
        crate::providers::spec::database_specs(
            self.section,
            &self.name,
            table,
            self.queries
                .iter()
                .map(|q| (q, self.query_template(q), self.describe(q))),
        )
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
            let names = self.engine.tables().await?;
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

    /// Reads `SECTION://NAME/schema`, `…/tables/T` or `…/queries/Q?…`.
    async fn read_uri(&self, uri: &str) -> Result<Contents, RequestError> {
        let not_found = || RequestError::NotFound(uri.to_owned());
        let rest = uri.strip_prefix(&self.prefix).ok_or_else(not_found)?;
        if rest == "schema" {
            let text = self.engine.schema().await?;
            return Ok(Contents {
                uri: uri.to_owned(),
                mime_type: Some("text/plain".into()),
                body: Body::Text(text),
            });
        }
        let json = if let Some(encoded) = rest.strip_prefix("tables/") {
            if !self.tables {
                return Err(not_found());
            }
            let table = crate::uri::percent_decode(encoded).ok_or_else(not_found)?;
            if table.is_empty() || table.contains('\0') {
                return Err(not_found());
            }
            self.engine
                .read_table(&table)
                .await?
                .ok_or_else(not_found)?
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
            self.engine.run(uri, &q.statement, &args).await?
        } else {
            return Err(not_found());
        };
        Ok(Contents {
            uri: uri.to_owned(),
            mime_type: Some(JSON.into()),
            body: Body::Text(json),
        })
    }

    /// What a subscribed URI watches.
    fn target(&self, uri: &str) -> Target {
        let rest = uri.strip_prefix(&self.prefix).unwrap_or_default();
        if rest == "schema" {
            return Target::Schema;
        }
        match rest
            .strip_prefix("tables/")
            .and_then(crate::uri::percent_decode)
        {
            Some(name) => Target::Table(name),
            None => Target::Query,
        }
    }

    /// The current stamp of each URI; `None` when the database cannot tell now.
    async fn stamps_of(&self, uris: &[String]) -> Option<Vec<(String, String)>> {
        let targets: Vec<Target> = uris.iter().map(|u| self.target(u)).collect();
        let stamps = self.engine.stamps(&targets).await?;
        Some(uris.iter().cloned().zip(stamps).collect())
    }

    /// Takes the stamp a newly subscribed URI's changes are measured from (once per URI).
    async fn baseline(&self, uri: &str) {
        let known = self
            .stamps
            .lock()
            .is_ok_and(|stamps| stamps.contains_key(uri));
        if !self.watch || known || self.engine.poll_interval().is_none() {
            return;
        }
        if let Some(stamps) = self.stamps_of(&[uri.to_owned()]).await
            && let Ok(mut known) = self.stamps.lock()
        {
            let now = Instant::now();
            known.extend(stamps.into_iter().map(|(u, s)| (u, (s, now))));
        }
    }

    /// Which of `uris` changed since the last poll. Stamps of URIs no longer subscribed are
    /// forgotten; while the database cannot be reached nothing is announced (and changes made
    /// meanwhile are, once it can).
    async fn changed(&self, uris: Vec<String>) -> Vec<String> {
        if !self.watch {
            return Vec::new();
        }
        let Some(now) = self.stamps_of(&uris).await else {
            return Vec::new();
        };
        let Ok(mut known) = self.stamps.lock() else {
            return Vec::new();
        };
        known.retain(|uri, (_, seen)| uris.contains(uri) || seen.elapsed() < KEEP_UNSUBSCRIBED);
        let mut out = Vec::new();
        let at = Instant::now();
        for (uri, stamp) in now {
            match known.insert(uri.clone(), (stamp.clone(), at)) {
                Some((before, _)) if before != stamp => out.push(uri),
                _ => {}
            }
        }
        out
    }

    /// The statements `check` has the database prepare: the named queries' and the templates'.
    fn statements(&self) -> Vec<Statement> {
        let mut out: Vec<Statement> = self.queries.iter().map(|q| q.statement.clone()).collect();
        if let Ok(t) = self.templates.lock() {
            out.extend(t.iter().cloned());
        }
        out
    }

    /// Runs the SQL tool.
    async fn call_sql_tool(&self, args: &Map<String, Value>) -> ToolResult {
        let Some(tool) = &self.sql_tool else {
            return ToolResult::error("this source has no SQL tool");
        };
        let sql = match tool.statement(args) {
            Ok(sql) => sql,
            Err(why) => return ToolResult::error(why),
        };
        if let Some(why) = self.engine.adhoc_refusal().await {
            return ToolResult::error(why);
        }
        match self.engine.run_adhoc(&sql).await {
            Ok(json) => SqlTool::result(json),
            Err(e) => ToolResult::error(e.to_string()),
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

impl<E: Engine> Source for SqlSource<E> {
    fn owns(&self, uri: &str) -> bool {
        uri.starts_with(&self.prefix)
    }

    /// Its URIs are split and decoded, never matched against a pattern: long query values pass.
    fn max_uri_bytes(&self) -> usize {
        crate::providers::MAX_QUERY_URI_BYTES
    }

    fn list(self: Arc<Self>) -> BoxFut<Result<Vec<ResourceInfo>, RequestError>> {
        Box::pin(async move { self.list_resources().await })
    }

    fn templates(&self) -> Vec<TemplateInfo> {
        self.template_infos()
    }

    fn template_specs(&self) -> Vec<TemplateSpec> {
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
            let served = if rest == "schema" {
                true
            } else if let Some(encoded) = rest.strip_prefix("tables/") {
                match crate::uri::percent_decode(encoded) {
                    Some(table) => {
                        self.tables && !table.is_empty() && self.engine.is_listed(&table).await
                    }
                    None => false,
                }
            } else {
                rest.strip_prefix("queries/").is_some_and(|q| {
                    let name = q.split_once('?').map_or(q, |(n, _)| n);
                    self.queries.iter().any(|x| x.name == name)
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

    fn watch_dirs(self: Arc<Self>) -> BoxFut<Vec<PathBuf>> {
        ready(if self.watch {
            self.engine.watch_dirs()
        } else {
            Vec::new()
        })
    }

    /// A database's tables can change too, but telling needs a query: the list is re-read on
    /// the next `resources/list` either way.
    fn apply_changes(self: Arc<Self>, _changes: Arc<[Change]>) -> BoxFut<ChangeEffect> {
        ready(ChangeEffect::default())
    }

    fn affected(&self, uri: &str, changes: &[Change]) -> bool {
        self.watch && uri.starts_with(&self.prefix) && self.engine.changed_by(changes)
    }

    fn poll_interval(&self) -> Option<Duration> {
        self.engine.poll_interval().filter(|_| self.watch)
    }

    fn poll(self: Arc<Self>, uris: Vec<String>) -> BoxFut<Vec<String>> {
        Box::pin(async move { self.changed(uris).await })
    }

    fn warnings(self: Arc<Self>) -> BoxFut<Vec<(Loc, String)>> {
        Box::pin(async move {
            let statements = self.statements();
            self.engine.warnings(&statements).await
        })
    }

    fn tools(&self) -> Vec<ToolInfo> {
        self.sql_tool.iter().map(|t| t.info().clone()).collect()
    }

    fn call_tool(self: Arc<Self>, _name: String, args: Map<String, Value>) -> BoxFut<ToolResult> {
        Box::pin(async move { self.call_sql_tool(&args).await })
    }

    fn close(self: Arc<Self>) -> BoxFut<()> {
        Box::pin(async move { self.engine.close().await })
    }
}

impl<E: Engine> Database for SqlSource<E> {
    fn name(&self) -> &str {
        &self.name
    }

    fn section(&self) -> &'static str {
        self.section
    }

    /// The text checks (and the engine's compile, for one that compiles while the manifest
    /// loads); the statement is kept for `check`.
    fn check_template_sql<'a>(
        &'a self,
        check: SqlCheck<'a>,
        diags: &'a mut Diagnostics,
    ) -> Pin<Box<dyn Future<Output = Option<Statement>> + Send + 'a>> {
        Box::pin(async move {
            let declared: Vec<(&str, ParamType)> =
                check.vars.iter().map(|v| (*v, ParamType::String)).collect();
            let statement = Statement::check(
                E::DIALECT,
                check.context,
                check.sql,
                check.loc,
                &declared,
                Names::TemplateVars(check.uri),
                diags,
            )?;
            if let Some(Err(why)) = self.engine.compile(&statement).await {
                diags.push(check.loc, format!("{} {why}", check.context));
                return None;
            }
            if let Ok(mut t) = self.templates.lock() {
                t.push(statement.clone());
            }
            Some(statement)
        })
    }

    fn read_sql(
        self: Arc<Self>,
        uri: String,
        statement: Statement,
        args: Vec<Typed>,
        mime_type: Option<String>,
    ) -> BoxFut<Result<Contents, RequestError>> {
        Box::pin(async move {
            let json = self.engine.run(&uri, &statement, &args).await?;
            Ok(Contents {
                uri,
                mime_type: Some(mime_type.unwrap_or_else(|| JSON.to_owned())),
                body: Body::Text(json),
            })
        })
    }
}
