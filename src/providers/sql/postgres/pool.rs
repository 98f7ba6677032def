//! How the pool (`sql::pool`) talks to PostgreSQL: each request inside `BEGIN READ ONLY` with
//! `SET LOCAL statement_timeout`, rolled back at its end together with every session-level
//! advisory lock (the one effect of a reading statement a rollback does not undo); a statement
//! still running when its request went away is stopped with `pg_cancel_backend` from a
//! connection of its own (any role may cancel its own backends).

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, ConnectOptions as _, Connection as _, Executor as _};

use crate::providers::sql::pool::{Driver, connect_within};

pub(super) type Pool = crate::providers::sql::pool::Pool<Pg>;
pub(super) type Lease = crate::providers::sql::pool::Lease<Pg>;
pub(super) use crate::providers::sql::pool::BeginError;

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

    async fn close(conn: PgConnection) {
        let _ = conn.close().await;
    }

    fn is_connection_error(e: &sqlx::Error) -> bool {
        is_connection_error(e)
    }
}

/// Whether `e` says the connection itself is gone (rather than the statement failing).
pub(super) fn is_connection_error(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        // connection_exception, admin_shutdown, crash_shutdown, cannot_connect_now
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|c| c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03")),
        _ => false,
    }
}
