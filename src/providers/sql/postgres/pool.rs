//! The connections of one postgres source: opened on first use (never at start), at most
//! `max_connections`, reused, closed after a minute idle. Each request gets one connection inside
//! `BEGIN READ ONLY` with `SET LOCAL statement_timeout`, and that transaction is rolled back —
//! never committed — when the request is done.
//!
//! Not sqlx's `PgPool`: its `acquire` retries a refused connection until its timeout and then
//! reports only "pool timed out", and a request cancelled mid-query would hand its connection
//! back to wait for the query to end. Here a failed connect is reported at once with its reason
//! (so each request while the database is down gets a clear answer), a connection whose request
//! went away is closed (the server then aborts its transaction), and a reused connection that
//! turns out dead (the server restarted) is replaced by a fresh one within the same request.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, ConnectOptions as _, Connection as _, Executor as _};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a connection may sit unused before it is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the rollback at the end of a request may take before the connection is dropped.
const ROLLBACK_TIMEOUT: Duration = Duration::from_secs(5);

/// A few connections, opened on first use and reused.
pub(super) struct Pool {
    inner: Arc<Inner>,
}

struct Inner {
    options: PgConnectOptions,
    /// Idle connections, most recently used last; a `std` mutex held only to push or pop.
    idle: std::sync::Mutex<Vec<Idle>>,
    permits: Arc<Semaphore>,
    /// `BEGIN READ ONLY; SET LOCAL statement_timeout = …`: one round trip.
    begin: String,
    connect_timeout: Duration,
    reaper: AtomicBool,
    /// Connections being rolled back after their request (`Lease::finish`), and the signal that
    /// one is back.
    finishing: AtomicUsize,
    returned: tokio::sync::Notify,
}

struct Idle {
    conn: PgConnection,
    since: Instant,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("max", &self.inner.permits.available_permits())
            .finish()
    }
}

/// Why a request got no transaction.
#[derive(Debug)]
pub(super) enum BeginError {
    /// Opening a connection failed (or did not finish in time).
    Connect(sqlx::Error),
    /// The connection is open but `BEGIN` failed.
    Begin(sqlx::Error),
}

impl Pool {
    pub(super) fn new(
        options: PgConnectOptions,
        max_connections: u32,
        statement_timeout: Duration,
        connect_timeout: Duration,
    ) -> Pool {
        let millis = statement_timeout.as_millis().clamp(1, i32::MAX as u128);
        Pool {
            inner: Arc::new(Inner {
                options,
                idle: std::sync::Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(max_connections.max(1) as usize)),
                begin: format!("BEGIN READ ONLY; SET LOCAL statement_timeout = {millis}"),
                connect_timeout,
                reaper: AtomicBool::new(false),
                finishing: AtomicUsize::new(0),
                returned: tokio::sync::Notify::new(),
            }),
        }
    }

    /// A connection for one request, inside a read-only transaction with the statement timeout.
    /// Waits while `max_connections` requests hold one.
    pub(super) async fn begin(&self) -> Result<Lease, BeginError> {
        let permit = self
            .inner
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| BeginError::Connect(sqlx::Error::PoolClosed))?;
        loop {
            // Registered before looking, so a connection coming back meanwhile is not missed.
            let returned = self.inner.returned.notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            let (mut conn, reused) = match self.inner.pop_idle() {
                Some(c) => (c, true),
                // A connection is being rolled back (the previous request's, answered already):
                // it is back within a round trip; opening another would double the connections
                // a client that reads one thing after another holds.
                None if self.inner.finishing.load(Ordering::Relaxed) > 0 => {
                    let _ = tokio::time::timeout(ROLLBACK_TIMEOUT, returned).await;
                    continue;
                }
                None => {
                    let c = self.inner.connect().await.map_err(BeginError::Connect)?;
                    self.start_reaper();
                    (c, false)
                }
            };
            match conn
                .execute(sqlx::raw_sql(AssertSqlSafe(self.inner.begin.clone())))
                .await
            {
                Ok(_) => {
                    return Ok(Lease {
                        conn: Some(conn),
                        permit: Some(permit),
                        inner: self.inner.clone(),
                    });
                }
                // An idle connection the server closed (a restart, a terminated backend): every
                // other idle one is likely gone too; open a fresh one.
                Err(e) if reused && is_connection_error(&e) => self.inner.clear_idle(),
                Err(e) => return Err(BeginError::Begin(e)),
            }
        }
    }

    /// Closes every idle connection (the server is stopping).
    pub(super) async fn close(&self) {
        let idle = self.inner.take_idle_older_than(Duration::ZERO);
        for conn in idle {
            let _ = tokio::time::timeout(ROLLBACK_TIMEOUT, conn.close()).await;
        }
    }

    /// Closes idle connections older than `IDLE_TIMEOUT`, every few seconds, for as long as the
    /// pool lives.
    fn start_reaper(&self) {
        if self.inner.reaper.swap(true, Ordering::Relaxed) {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(IDLE_TIMEOUT / 4).await;
                let Some(inner) = weak.upgrade() else { break };
                let old = inner.take_idle_older_than(IDLE_TIMEOUT);
                drop(inner);
                for conn in old {
                    let _ = tokio::time::timeout(ROLLBACK_TIMEOUT, conn.close()).await;
                }
            }
        });
    }
}

impl Inner {
    async fn connect(&self) -> Result<PgConnection, sqlx::Error> {
        match tokio::time::timeout(self.connect_timeout, self.options.connect()).await {
            Ok(result) => result,
            Err(_) => Err(sqlx::Error::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "no answer within {}",
                    crate::manifest::expand::format_duration(self.connect_timeout)
                ),
            ))),
        }
    }

    fn pop_idle(&self) -> Option<PgConnection> {
        self.idle.lock().ok()?.pop().map(|i| i.conn)
    }

    fn push_idle(&self, conn: PgConnection) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(Idle {
                conn,
                since: Instant::now(),
            });
        }
    }

    fn clear_idle(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
    }

    fn take_idle_older_than(&self, age: Duration) -> Vec<PgConnection> {
        let Ok(mut idle) = self.idle.lock() else {
            return Vec::new();
        };
        let (old, young): (Vec<Idle>, Vec<Idle>) =
            idle.drain(..).partition(|i| i.since.elapsed() >= age);
        *idle = young;
        old.into_iter().map(|i| i.conn).collect()
    }
}

/// One request's connection, inside its read-only transaction. `finish` rolls the transaction
/// back and gives the connection back; dropped without `finish` (the request was cancelled or
/// timed out mid-statement), the connection is closed, which aborts the transaction on the
/// server.
pub(super) struct Lease {
    conn: Option<PgConnection>,
    permit: Option<OwnedSemaphorePermit>,
    inner: Arc<Inner>,
}

impl Lease {
    pub(super) fn conn(&mut self) -> &mut PgConnection {
        self.conn
            .as_mut()
            .expect("a lease holds its connection until finish or drop")
    }

    /// Rolls back (never commits) and returns the connection to the pool, after the answer: the
    /// rollback runs in its own task, holding the connection's permit until it is done.
    pub(super) fn finish(mut self) {
        let (Some(mut conn), Some(permit)) = (self.conn.take(), self.permit.take()) else {
            return;
        };
        let inner = self.inner.clone();
        inner.finishing.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            // Session-level advisory locks are the one effect a read-only statement can leave
            // that a rollback does not undo: released in the same round trip.
            let end = conn.execute("ROLLBACK; SELECT pg_catalog.pg_advisory_unlock_all()");
            let rolled_back = tokio::time::timeout(ROLLBACK_TIMEOUT, end)
                .await
                .is_ok_and(|r| r.is_ok());
            if rolled_back {
                inner.push_idle(conn);
            }
            inner.finishing.fetch_sub(1, Ordering::Relaxed);
            inner.returned.notify_waiters();
            drop(permit);
        });
    }

    /// Drops the connection (closing it) instead of returning it: after an error that leaves it
    /// in doubt.
    pub(super) fn discard(mut self) {
        self.conn.take();
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // A connection still here was not finished: closing it (by dropping) makes the server
        // abort its transaction.
        self.conn.take();
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
