//! What the server engines (`postgres/`, `mysql/`) share at run time: the connection limits and
//! how their errors are told (`Voice`).

use std::time::Duration;

use super::pool::{BeginError, Driver, Lease};
use crate::manifest::expand::format_duration;
use crate::manifest::sql::url::DbUrl;
use crate::providers::RequestError;

/// How long opening a connection may take (also `check`'s probe), unless the URL's
/// `connect_timeout` says otherwise.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Beyond the statement time limit, how long a request may wait for the server before its
/// statement is stopped and its connection closed (a server that stopped answering).
pub const GRACE: Duration = Duration::from_secs(2);

/// How a server source words what goes wrong: its entry and target (never the password, which
/// is scrubbed from whatever the server or the driver said), and how long a statement may run.
pub(crate) struct Voice<'a> {
    /// `[postgres.crm]`
    pub entry: &'a str,
    /// "database `crm` on db.example.com:5432 as `app`"
    pub target: &'a str,
    pub url: &'a DbUrl,
    pub timeout: Duration,
    /// What the server (or the connection) said, without sqlx's wrapping.
    pub message: fn(&sqlx::Error) -> String,
}

impl Voice<'_> {
    /// `text` with the URL's password replaced by `***`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.url.scrub(text)
    }

    pub(crate) fn connect_failed(&self, e: &sqlx::Error) -> String {
        self.scrub(&format!(
            "{} cannot connect to {}: {}",
            self.entry,
            self.target,
            (self.message)(e)
        ))
    }

    pub(crate) fn begin_failed<D: Driver>(&self, e: &BeginError) -> String {
        match e {
            BeginError::Connect(e) => self.connect_failed(e),
            BeginError::Begin(e) if D::is_connection_error(e) => self.connect_failed(e),
            BeginError::Begin(e) => self.scrub(&format!(
                "{} cannot start a read-only transaction on {}: {}",
                self.entry,
                self.target,
                (self.message)(e)
            )),
        }
    }

    /// `check`'s warning for a database that cannot be reached.
    pub(crate) fn unreachable<D: Driver>(&self, e: &BeginError) -> String {
        format!(
            "{}; `serve` starts anyway and answers each request with this error until the database can be reached",
            self.begin_failed::<D>(e)
        )
    }

    pub(crate) fn timed_out(&self) -> RequestError {
        RequestError::Refused(format!(
            "{} the query ran longer than {} (`timeout`) and was stopped",
            self.entry,
            format_duration(self.timeout)
        ))
    }

    /// Ends a request's transaction after a catalog query, mapping its errors (`db_failed` for
    /// the statement's own).
    pub(crate) fn settle<D: Driver, T>(
        &self,
        lease: Lease<D>,
        result: Result<Result<T, sqlx::Error>, tokio::time::error::Elapsed>,
        db_failed: impl FnOnce(&sqlx::Error) -> RequestError,
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
                Err(db_failed(&e))
            }
            Err(_) => {
                lease.abandon();
                Err(self.timed_out())
            }
        }
    }
}
