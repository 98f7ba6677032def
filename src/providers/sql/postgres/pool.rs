//! How the pool (`sql::pool`) talks to PostgreSQL: each request inside `BEGIN READ ONLY` with
//! `SET LOCAL statement_timeout`, rolled back at its end together with every session-level
//! advisory lock (the one effect of a reading statement a rollback does not undo); a statement
//! still running when its request went away is stopped with `pg_cancel_backend` from a
//! connection of its own (any role may cancel its own backends). `database_fault` says what its
//! error codes mean.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, ConnectOptions as _, Connection as _, Executor as _};

use crate::providers::sql::pool::{Driver, Fault, connect_within};

/// One source's server.
pub(super) struct Pg {
    options: PgConnectOptions,
    /// `BEGIN READ ONLY; SET LOCAL statement_timeout = …`: one round trip.
    begin: String,
    connect_timeout: Duration,
}

impl Pg {
    pub(super) fn new(
        options: PgConnectOptions,
        statement_timeout: Duration,
        connect_timeout: Duration,
    ) -> Pg {
        let millis = statement_timeout.as_millis().clamp(1, i32::MAX as u128);
        Pg {
            // sqlx's own statement log (slow statements at WARN) is ours to give, not its.
            options: options.disable_statement_logging(),
            begin: format!("BEGIN READ ONLY; SET LOCAL statement_timeout = {millis}"),
            connect_timeout,
        }
    }

    async fn open(&self) -> Result<PgConnection, sqlx::Error> {
        connect_within(self.connect_timeout, self.options.connect()).await
    }
}

impl Driver for Pg {
    type Conn = PgConnection;

    async fn connect(&self) -> Result<(PgConnection, i64), sqlx::Error> {
        let mut conn = self.open().await?;
        let pid: i32 = sqlx::query_scalar("SELECT pg_catalog.pg_backend_pid()")
            .fetch_one(&mut conn)
            .await?;
        Ok((conn, i64::from(pid)))
    }

    async fn begin(&self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        conn.execute(sqlx::raw_sql(AssertSqlSafe(self.begin.clone())))
            .await
            .map(|_| ())
    }

    async fn end(&self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        conn.execute("ROLLBACK; SELECT pg_catalog.pg_advisory_unlock_all()")
            .await
            .map(|_| ())
    }

    async fn cancel(&self, id: i64) {
        let Ok(mut conn) = self.open().await else {
            return;
        };
        let _ = sqlx::query("SELECT pg_catalog.pg_cancel_backend($1)")
            .bind(i32::try_from(id).unwrap_or(0))
            .execute(&mut conn)
            .await;
        let _ = conn.close().await;
    }

    /// Connection errors (`08…`, shutdowns), `statement_timeout`, values of the wrong type
    /// (`22…`), writes in the read-only transaction (`25006`).
    fn database_fault(d: &dyn sqlx::error::DatabaseError) -> Fault {
        let code = d.code().unwrap_or_default();
        match &*code {
            // connection_exception, admin_shutdown, crash_shutdown, cannot_connect_now
            c if c.starts_with("08") => Fault::Connection,
            "57P01" | "57P02" | "57P03" => Fault::Connection,
            "57014" if d.message().contains("statement timeout") => Fault::TimedOut,
            "22P02" | "22003" | "22007" | "22008" | "22021" | "22P05" | "22001" => Fault::BadValue,
            "25006" => Fault::ReadOnly,
            _ => Fault::Other,
        }
    }

    /// The message, with its detail and hint.
    fn database_message(d: &dyn sqlx::error::DatabaseError) -> String {
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
}
