//! How the pool (`sql::pool`) talks to MySQL and MariaDB: each connection gets the statement time
//! limit from `timeout` when it opens (`max_statement_time` on MariaDB, `max_execution_time` on
//! MySQL, which also reads `information_schema` statistics fresh), each request runs inside `START
//! TRANSACTION READ ONLY`, rolled back at its end together with every named lock (`GET_LOCK`, the
//! one effect of a reading statement a rollback does not undo); a statement still running when
//! its request went away is stopped with `KILL QUERY` from a connection of its own (an account
//! may kill its own statements). `database_fault` says what its error numbers mean.
//!
//! `LOCAL INFILE` is never enabled: sqlx never offers the client capability, and the URL's
//! parameters do not pass `local_infile` on.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sqlx::mysql::{MySqlConnectOptions, MySqlConnection};
use sqlx::{AssertSqlSafe, ConnectOptions as _, Connection as _, Executor as _};

use crate::providers::sql::pool::{Driver, Fault, connect_within};

/// One source's server.
pub(super) struct My {
    options: MySqlConnectOptions,
    statement_timeout: Duration,
    connect_timeout: Duration,
    /// Which server answered, set by the first connection.
    flavor: Arc<OnceLock<Flavor>>,
}

/// Which server a connection reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavor {
    Mysql,
    Mariadb,
}

impl My {
    pub(super) fn new(
        options: MySqlConnectOptions,
        statement_timeout: Duration,
        connect_timeout: Duration,
        flavor: Arc<OnceLock<Flavor>>,
    ) -> My {
        My {
            // The server's own SQL mode (sqlx would add PIPES_AS_CONCAT, which changes what `||`
            // means against what the `mysql` client runs).
            // sqlx's own statement log (slow statements at WARN) is ours to give, not its.
            options: options
                .pipes_as_concat(false)
                .no_engine_substitution(false)
                .disable_statement_logging(),
            statement_timeout,
            connect_timeout,
            flavor,
        }
    }

    async fn open(&self) -> Result<MySqlConnection, sqlx::Error> {
        connect_within(self.connect_timeout, self.options.connect()).await
    }
}

/// The flavor a `VERSION()` names.
pub(super) fn flavor(version: &str) -> Flavor {
    if version.to_ascii_lowercase().contains("mariadb") {
        Flavor::Mariadb
    } else {
        Flavor::Mysql
    }
}

impl Driver for My {
    type Conn = MySqlConnection;

    async fn connect(&self) -> Result<(MySqlConnection, i64), sqlx::Error> {
        let mut conn = self.open().await?;
        let (id, version): (i64, String) =
            sqlx::query_as("SELECT CAST(CONNECTION_ID() AS SIGNED), VERSION()")
                .fetch_one(&mut conn)
                .await?;
        let flavor = flavor(&version);
        let _ = self.flavor.set(flavor);
        let limit = match flavor {
            Flavor::Mariadb => format!(
                "SET SESSION max_statement_time = {:.3}",
                self.statement_timeout.as_secs_f64().max(0.001)
            ),
            Flavor::Mysql => format!(
                "SET SESSION max_execution_time = {}, SESSION information_schema_stats_expiry = 0",
                self.statement_timeout
                    .as_millis()
                    .clamp(1, u128::from(u32::MAX))
            ),
        };
        conn.execute(sqlx::raw_sql(AssertSqlSafe(limit))).await?;
        Ok((conn, id))
    }

    async fn begin(&self, conn: &mut MySqlConnection) -> Result<(), sqlx::Error> {
        conn.execute("START TRANSACTION READ ONLY")
            .await
            .map(|_| ())
    }

    async fn end(&self, conn: &mut MySqlConnection) -> Result<(), sqlx::Error> {
        conn.execute("ROLLBACK; DO RELEASE_ALL_LOCKS()")
            .await
            .map(|_| ())
    }

    async fn cancel(&self, id: i64) {
        let Ok(mut conn) = self.open().await else {
            return;
        };
        // `KILL QUERY` takes no placeholder; the id is a number the server gave.
        let _ = conn
            .execute(sqlx::raw_sql(AssertSqlSafe(format!("KILL QUERY {id}"))))
            .await;
        let _ = conn.close().await;
    }

    fn database_fault(d: &dyn sqlx::error::DatabaseError) -> Fault {
        let number = d
            .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
            .map(|m| m.number());
        match number {
            // ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED, ER_NEW_ABORTING_CONNECTION
            Some(1053 | 1927 | 1184) => Fault::Connection,
            // ER_STATEMENT_TIMEOUT (MariaDB), ER_QUERY_TIMEOUT (MySQL), ER_QUERY_INTERRUPTED
            Some(1969 | 3024 | 1317) => Fault::TimedOut,
            // Incorrect value / truncated wrong value for a parameter
            Some(1292 | 1366 | 1411 | 1367) => Fault::BadValue,
            // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
            Some(1792) => Fault::ReadOnly,
            _ => Fault::Other,
        }
    }
}
