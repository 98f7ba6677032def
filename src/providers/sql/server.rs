//! What the server engines (`postgres/`, `mysql/`) share at run time: `Server`, a source's
//! connections, limits and voice (its entry and target, never the password, which is scrubbed
//! from whatever the server or the driver said): beginning a request's transaction, running
//! catalog queries in it, `check`'s warnings, the risks the SQL tool asks about, and the wording
//! of every error, which each engine's `Driver` classifies (`Driver::fault`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::pool::{BeginError, Driver, Fault, Lease, Pool};
use super::query::Statement;
use super::text::{self, Dialect};
use crate::manifest::expand::{format_duration, format_size};
use crate::manifest::sql::DatabaseDef;
use crate::manifest::sql::server::ServerKeys;
use crate::manifest::sql::url::DbUrl;
use crate::manifest::{Diagnostics, Loc};
use crate::providers::RequestError;
use crate::quote::{Quote, quote};

/// How long opening a connection may take (also `check`'s probe), unless the URL's
/// `connect_timeout` says otherwise.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Beyond the statement time limit, how long a request may wait for the server before its
/// statement is stopped and its connection closed (a server that stopped answering).
pub const GRACE: Duration = Duration::from_secs(2);
/// How long the risks found (`Server::risks`) are trusted before the SQL tool asks again
/// (grants change rarely; a finding costs a catalog query).
const RISKS_FRESH: Duration = Duration::from_secs(10);

/// The connection options of a server source's URL (without connecting), or `None` after
/// reporting why the URL does not parse into them.
pub(crate) fn options<O: sqlx::ConnectOptions>(
    def: &DatabaseDef,
    keys: &ServerKeys,
    diags: &mut Diagnostics,
) -> Option<O> {
    match O::from_url(keys.url.url()) {
        Ok(o) => Some(o),
        Err(e) => {
            let why = keys.url.scrub(&e.to_string());
            diags.push(keys.url_loc, format!("{} `url`: {why}", def.entry()));
            None
        }
    }
}

/// How long opening a connection may take: the URL's `connect_timeout`, or `CONNECT_TIMEOUT`.
pub(crate) fn connect_timeout(keys: &ServerKeys) -> Duration {
    keys.url.connect_timeout.unwrap_or(CONNECT_TIMEOUT)
}

/// "database `crm` on db.example.com:5432 as `app`": what messages name; `socket`, as the engine
/// words it, instead of the host when the URL names one.
pub(crate) fn target(
    socket: Option<String>,
    (host, port): (&str, u16),
    database: Option<&str>,
    user: &str,
) -> String {
    let place = socket.unwrap_or_else(|| format!("{host}:{port}"));
    match database {
        Some(db) => format!("database `{db}` on {place} as `{user}`"),
        None => format!("{place} as `{user}`"),
    }
}

/// What the server (or the connection) said, without sqlx's wrapping.
pub(crate) fn said<D: Driver>(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(d) => D::database_message(&**d),
        sqlx::Error::Io(io) => io.to_string(),
        sqlx::Error::Tls(t) => format!("TLS: {t}"),
        other => other.to_string(),
    }
}

/// One database-server source whatever its engine: its connections and limits, and how it words
/// what goes wrong.
pub(crate) struct Server<D: Driver> {
    /// `[postgres.crm]`, for messages.
    pub entry: String,
    pub row_limit: u64,
    /// The largest answer, in bytes of JSON (`max_size`).
    pub max_size: usize,
    pub poll_interval: Duration,
    url_loc: Loc,
    /// "database `crm` on db.example.com:5432 as `app`": what messages name (no password).
    pub target: String,
    /// The URL; its password is scrubbed from every message that could carry it.
    url: DbUrl,
    /// How long a statement may run.
    pub timeout: Duration,
    pool: Pool<D>,
    /// `accept_writes_outside_transaction`: the SQL tool runs even when the account can write
    /// outside the transaction.
    accept_risks: bool,
    /// The last risks found, and when.
    risks_seen: Mutex<Option<(Instant, Option<String>)>>,
    /// Whether the current outage was already said (by `check`): said once, not on every
    /// request.
    down_reported: AtomicBool,
}

impl<D: Driver> std::fmt::Debug for Server<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("entry", &self.entry)
            .field("target", &self.target)
            .field("pool", &self.pool)
            .finish()
    }
}

impl<D: Driver> Server<D> {
    /// The source of a checked entry, `driver` reaching `target` (nothing connects yet).
    pub(crate) fn new(def: &DatabaseDef, keys: &ServerKeys, target: String, driver: D) -> Self {
        Server {
            entry: def.entry(),
            row_limit: def.row_limit.max(1),
            max_size: usize::try_from(def.max_size).unwrap_or(usize::MAX),
            poll_interval: keys.poll_interval,
            url_loc: keys.url_loc,
            target,
            url: keys.url.clone(),
            timeout: def.timeout,
            pool: Pool::new(driver, keys.max_connections),
            accept_risks: keys.accept_risks,
            risks_seen: Mutex::new(None),
            down_reported: AtomicBool::new(false),
        }
    }

    /// `row_limit` as a count.
    pub(crate) fn limit(&self) -> usize {
        usize::try_from(self.row_limit).unwrap_or(usize::MAX)
    }

    /// How long a request may wait for the server: the statement time limit and `GRACE`.
    pub(crate) fn deadline(&self) -> Duration {
        self.timeout + GRACE
    }

    /// Whether the database being out of reach was said already (`Engine::reported_down`).
    pub(crate) fn reported_down(&self) -> bool {
        self.down_reported.load(Ordering::Relaxed)
    }

    /// A transaction for one request, or the request's error.
    pub(crate) async fn begin(&self) -> Result<Lease<D>, RequestError> {
        match self.pool.begin().await {
            Ok(lease) => {
                if self.down_reported.swap(false, Ordering::Relaxed) {
                    tracing::warn!("{} {} answers again", self.entry, self.target);
                }
                Ok(lease)
            }
            Err(e) => Err(RequestError::Refused(self.begin_failed(&e))),
        }
    }

    /// Runs `work` (catalog queries) in a request's transaction, within the time limit.
    pub(crate) async fn read<T>(
        &self,
        work: impl AsyncFnOnce(&mut D::Conn) -> Result<T, sqlx::Error>,
    ) -> Result<T, RequestError> {
        let mut lease = self.begin().await?;
        let result = tokio::time::timeout(self.deadline(), work(lease.conn())).await;
        self.settle(lease, result)
    }

    /// Ends a request's transaction after a catalog query, mapping its errors.
    pub(crate) fn settle<T>(
        &self,
        lease: Lease<D>,
        result: Result<Result<T, sqlx::Error>, tokio::time::error::Elapsed>,
    ) -> Result<T, RequestError> {
        match result {
            Ok(Ok(v)) => {
                lease.finish();
                Ok(v)
            }
            Ok(Err(e)) if D::is_connection_error(&e) => {
                lease.discard();
                Err(RequestError::Refused(self.connect_failed(&e)))
            }
            Ok(Err(e)) => {
                lease.finish();
                Err(self.db_failed(&e))
            }
            Err(_) => {
                lease.abandon();
                Err(self.timed_out())
            }
        }
    }

    /// `check` (it connects, with the connect timeout): `risks` words what the account can do
    /// outside the transaction, if anything; `prepare` has the server prepare one statement.
    /// Warnings: the database cannot be reached (once, at `url`), the risks (at `url`), `engine`
    /// rejects a statement (at its `sql`).
    pub(crate) async fn check(
        &self,
        engine: &str,
        statements: &[Statement],
        risks: impl AsyncFnOnce(&mut D::Conn) -> Option<String>,
        mut prepare: impl AsyncFnMut(&mut D::Conn, &Statement) -> Result<(), sqlx::Error>,
    ) -> Vec<(Loc, String)> {
        let mut lease = match self.pool.begin().await {
            Ok(l) => l,
            Err(e) => {
                self.down_reported.store(true, Ordering::Relaxed);
                let warning = format!(
                    "{}; `serve` starts anyway and answers each request with this error until the database can be reached",
                    self.begin_failed(&e)
                );
                return vec![(self.url_loc, warning)];
            }
        };
        let mut out = Vec::new();
        if let Some(warning) = risks(lease.conn()).await {
            out.push((self.url_loc, warning));
        }
        for s in statements {
            match tokio::time::timeout(self.deadline(), prepare(lease.conn(), s)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) if D::is_connection_error(&e) => {
                    out.push((self.url_loc, self.connect_failed(&e)));
                    lease.discard();
                    return out;
                }
                Ok(Err(e)) => out.push((
                    s.loc,
                    format!(
                        "{} {engine} rejects the SQL: {}",
                        s.context,
                        self.scrub(&said::<D>(&e))
                    ),
                )),
                Err(_) => {
                    out.push((
                        s.loc,
                        format!(
                            "{} {engine} did not prepare the SQL within {}",
                            s.context,
                            format_duration(self.timeout)
                        ),
                    ));
                    lease.abandon();
                    return out;
                }
            }
        }
        lease.finish();
        out
    }

    /// What the account can do outside the transaction, for the SQL tool (`ask`, trusted
    /// `RISKS_FRESH`); `None` when nothing, when the manifest accepts it
    /// (`accept_writes_outside_transaction`), or when it cannot be asked (the statement then
    /// fails the same way).
    pub(crate) async fn risks(
        &self,
        ask: impl AsyncFnOnce(&mut D::Conn) -> Result<Option<String>, sqlx::Error>,
    ) -> Option<String> {
        if self.accept_risks {
            return None;
        }
        if let Ok(cached) = self.risks_seen.lock()
            && let Some((at, found)) = cached.as_ref()
            && at.elapsed() < RISKS_FRESH
        {
            return found.clone();
        }
        let found = self.read(ask).await.ok()?;
        if let Ok(mut cached) = self.risks_seen.lock() {
            *cached = Some((Instant::now(), found.clone()));
        }
        found
    }

    /// Refuses what does not start as a statement that reads does in `dialect` (the manifest's
    /// SQL was checked when it loaded; this guards every other caller).
    pub(crate) fn reads_only(&self, sql: &str, dialect: Dialect) -> Result<(), RequestError> {
        let first = text::first_keyword(sql, dialect).unwrap_or_default();
        if dialect.read_keywords().contains(&first.as_str()) {
            return Ok(());
        }
        Err(RequestError::Refused(format!(
            "{} only statements that read run here (found `{first}`)",
            self.entry
        )))
    }

    /// `text` with the URL's password replaced by `***`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.url.scrub(text)
    }

    pub(crate) fn connect_failed(&self, e: &sqlx::Error) -> String {
        self.scrub(&format!(
            "{} cannot connect to {}: {}",
            self.entry,
            self.target,
            said::<D>(e)
        ))
    }

    fn begin_failed(&self, e: &BeginError) -> String {
        match e {
            BeginError::Connect(e) => self.connect_failed(e),
            BeginError::Begin(e) if D::is_connection_error(e) => self.connect_failed(e),
            BeginError::Begin(e) => self.scrub(&format!(
                "{} cannot start a read-only transaction on {}: {}",
                self.entry,
                self.target,
                said::<D>(e)
            )),
        }
    }

    pub(crate) fn timed_out(&self) -> RequestError {
        RequestError::Refused(format!(
            "{} the query ran longer than {} (`timeout`) and was stopped",
            self.entry,
            format_duration(self.timeout)
        ))
    }

    /// A value of a row that cannot be read.
    pub(crate) fn unreadable(&self, why: &str) -> RequestError {
        RequestError::Internal(format!("{} a value cannot be read: {why}", self.entry))
    }

    /// A row larger than `max_size`; `cut` names the engine's functions that make a value
    /// smaller (`` `left`, `length` ``).
    pub(crate) fn too_big(&self, cut: &str) -> RequestError {
        RequestError::Refused(format!(
            "{} the answer would hold a row larger than {} (`max_size` of the source); select fewer or smaller columns (e.g. {cut})",
            self.entry,
            format_size(self.max_size as u64)
        ))
    }

    /// A statement's error: its time limit says so; a value the server cannot take as its
    /// parameter's type is invalid params (`has_args`); anything else is the server's message.
    pub(crate) fn statement_failed(
        &self,
        uri: &str,
        has_args: bool,
        e: &sqlx::Error,
    ) -> RequestError {
        match D::fault(e) {
            Fault::TimedOut => self.timed_out(),
            // The server's message repeats the value it could not take: cut like it.
            Fault::BadValue if has_args => RequestError::InvalidParams(format!(
                "{}: {}",
                quote(uri, Quote::Code),
                quote(&self.scrub(&said::<D>(e)), Quote::Plain)
            )),
            _ => self.db_failed(e),
        }
    }

    pub(crate) fn db_failed(&self, e: &sqlx::Error) -> RequestError {
        let mut message = format!("{} {}", self.entry, said::<D>(e));
        if D::fault(e) == Fault::ReadOnly {
            message.push_str(" (every statement runs in a read-only transaction)");
        }
        match e {
            sqlx::Error::Database(_) => RequestError::Refused(self.scrub(&message)),
            _ => RequestError::Internal(self.scrub(&message)),
        }
    }

    /// Closes every connection (`Engine::close`).
    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }
}
