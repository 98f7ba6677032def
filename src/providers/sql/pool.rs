//! The connections of one database-server source (PostgreSQL, MySQL): opened on first use (never
//! at start), at most `max_connections`, reused, closed after a minute idle. Each request gets one
//! connection inside the engine's read-only transaction (`Driver::begin`), and that transaction
//! is rolled back — never committed — when the request is done (`Driver::end`).
//!
//! Not sqlx's pools: their `acquire` retries a refused connection until its timeout and then
//! reports only "pool timed out", and a request cancelled mid-query hands its connection back to
//! wait for the query to end. Here a failed connect is reported at once with its reason (so each
//! request while the database is down gets a clear answer), and a reused connection that turns
//! out dead (the server restarted) is replaced by a fresh one within the same request.
//!
//! Nothing is left running on the server: a request that goes away mid-statement (cancelled, or
//! past its time) has its statement stopped from a connection of its own (`Driver::cancel`:
//! `pg_cancel_backend`, `KILL QUERY`) and its connection closed, and its slot is taken until that
//! is done, so the server never runs more than `max_connections` of our statements; `close`
//! (the server stopping) does the same for every statement still running and closes the idle
//! connections. (Closing a connection alone does not stop a statement: the server notices only
//! when it next writes to it, which a long query does at its end — 40 statements were seen still
//! running with `max_connections = 4`.)

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a connection may sit unused before it is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the rollback at the end of a request (or a cancel) may take before it is given up.
const END_TIMEOUT: Duration = Duration::from_secs(5);

/// What a pool needs of a database server.
pub(crate) trait Driver: Send + Sync + 'static {
    type Conn: sqlx::Connection + Send + 'static;

    /// Opens a connection (within the connect timeout): the connection, and the server's id for
    /// it (PostgreSQL's backend pid, MySQL's connection id).
    fn connect(&self) -> impl Future<Output = Result<(Self::Conn, i64), sqlx::Error>> + Send;

    /// Starts one request's read-only transaction with its time limit, in one round trip.
    fn begin(&self, conn: &mut Self::Conn) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// Ends it: rolls back (never commits) and drops what would outlive the transaction (locks).
    fn end(&self, conn: &mut Self::Conn) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// Stops the statement the server runs for connection `id`, from a connection of its own.
    fn cancel(&self, id: i64) -> impl Future<Output = ()> + Send;

    /// Closes a connection the polite way (the server ends its session at once).
    fn close(conn: Self::Conn) -> impl Future<Output = ()> + Send {
        async {
            let _ = sqlx::Connection::close(conn).await;
        }
    }

    /// What a database error means for the request (by the server's error codes).
    fn database_fault(d: &dyn sqlx::error::DatabaseError) -> Fault;

    /// What `e` means for the request: an I/O or protocol error is the connection's.
    fn fault(e: &sqlx::Error) -> Fault {
        match e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => Fault::Connection,
            sqlx::Error::Database(d) => Self::database_fault(&**d),
            _ => Fault::Other,
        }
    }

    /// Whether `e` says the connection itself is gone (rather than the statement failing).
    fn is_connection_error(e: &sqlx::Error) -> bool {
        Self::fault(e) == Fault::Connection
    }

    /// What the server said in a database error (its message; PostgreSQL's adds its detail and
    /// hint).
    fn database_message(d: &dyn sqlx::error::DatabaseError) -> String {
        d.message().to_owned()
    }
}

/// What a server's error means for the request (`Driver::fault`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The connection itself is gone (rather than the statement failing).
    Connection,
    /// The statement ran past its time limit.
    TimedOut,
    /// A value the server cannot take as its parameter's type.
    BadValue,
    /// The statement tried to write in the read-only transaction.
    ReadOnly,
    Other,
}

/// `connect`, given up after `timeout` with an I/O error saying so.
pub(crate) async fn connect_within<C>(
    timeout: Duration,
    connect: impl Future<Output = Result<C, sqlx::Error>>,
) -> Result<C, sqlx::Error> {
    match tokio::time::timeout(timeout, connect).await {
        Ok(result) => result,
        Err(_) => Err(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "no answer within {}",
                crate::manifest::expand::format_duration(timeout)
            ),
        ))),
    }
}

/// A few connections, opened on first use and reused.
pub(crate) struct Pool<D: Driver> {
    inner: Arc<Inner<D>>,
}

struct Inner<D: Driver> {
    driver: D,
    /// Idle connections, most recently used last; a `std` mutex held only to push or pop.
    idle: std::sync::Mutex<Vec<Idle<D::Conn>>>,
    permits: Arc<Semaphore>,
    reaper: AtomicBool,
    /// Connections being rolled back after their request (`Lease::finish`), and the signal that
    /// one is back.
    finishing: AtomicUsize,
    returned: tokio::sync::Notify,
    /// The server ids of the connections leased now, by lease: what `close` stops.
    busy: std::sync::Mutex<HashMap<u64, i64>>,
    next_lease: AtomicU64,
}

struct Idle<C> {
    conn: C,
    id: i64,
    since: Instant,
}

impl<D: Driver> std::fmt::Debug for Pool<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("available", &self.inner.permits.available_permits())
            .finish()
    }
}

/// Why a request got no transaction.
#[derive(Debug)]
pub(crate) enum BeginError {
    /// Opening a connection failed (or did not finish in time).
    Connect(sqlx::Error),
    /// The connection is open but starting the transaction failed.
    Begin(sqlx::Error),
}

impl<D: Driver> Pool<D> {
    pub(crate) fn new(driver: D, max_connections: u32) -> Pool<D> {
        Pool {
            inner: Arc::new(Inner {
                driver,
                idle: std::sync::Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(max_connections.max(1) as usize)),
                reaper: AtomicBool::new(false),
                finishing: AtomicUsize::new(0),
                returned: tokio::sync::Notify::new(),
                busy: std::sync::Mutex::new(HashMap::new()),
                next_lease: AtomicU64::new(0),
            }),
        }
    }

    /// A connection for one request, inside its read-only transaction. Waits while
    /// `max_connections` requests hold one (or their statements are being stopped).
    pub(crate) async fn begin(&self) -> Result<Lease<D>, BeginError> {
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
            let (mut conn, id, reused) = match self.inner.pop_idle() {
                Some((c, id)) => (c, id, true),
                // A connection is being rolled back (the previous request's, answered already):
                // it is back within a round trip; opening another would double the connections
                // a client that reads one thing after another holds.
                None if self.inner.finishing.load(Ordering::Relaxed) > 0 => {
                    let _ = tokio::time::timeout(END_TIMEOUT, returned).await;
                    continue;
                }
                None => {
                    let (c, id) = self
                        .inner
                        .driver
                        .connect()
                        .await
                        .map_err(BeginError::Connect)?;
                    self.start_reaper();
                    (c, id, false)
                }
            };
            match self.inner.driver.begin(&mut conn).await {
                Ok(()) => {
                    let lease = self.inner.next_lease.fetch_add(1, Ordering::Relaxed);
                    if let Ok(mut busy) = self.inner.busy.lock() {
                        busy.insert(lease, id);
                    }
                    return Ok(Lease {
                        conn: Some((conn, id)),
                        permit: Some(permit),
                        inner: self.inner.clone(),
                        lease,
                    });
                }
                // An idle connection the server closed (a restart, a terminated backend): every
                // other idle one is likely gone too; open a fresh one.
                Err(e) if reused && D::is_connection_error(&e) => self.inner.clear_idle(),
                Err(e) => return Err(BeginError::Begin(e)),
            }
        }
    }

    /// The server is stopping: every statement still running for a lease is stopped, and every
    /// idle connection closed.
    pub(crate) async fn close(&self) {
        let running: Vec<i64> = self
            .inner
            .busy
            .lock()
            .map(|b| b.values().copied().collect())
            .unwrap_or_default();
        let idle = self.inner.take_idle_older_than(Duration::ZERO);
        let all = async {
            for id in running {
                self.inner.driver.cancel(id).await;
            }
            for conn in idle {
                D::close(conn).await;
            }
        };
        let _ = tokio::time::timeout(END_TIMEOUT, all).await;
    }

    /// Closes idle connections older than `IDLE_TIMEOUT`, every few seconds, for as long as the
    /// pool lives.
    fn start_reaper(&self) {
        if self.inner.reaper.swap(true, Ordering::Relaxed) {
            return;
        }
        let weak: Weak<Inner<D>> = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(IDLE_TIMEOUT / 4).await;
                let Some(inner) = weak.upgrade() else { break };
                let old = inner.take_idle_older_than(IDLE_TIMEOUT);
                drop(inner);
                for conn in old {
                    let _ = tokio::time::timeout(END_TIMEOUT, D::close(conn)).await;
                }
            }
        });
    }
}

impl<D: Driver> Inner<D> {
    fn pop_idle(&self) -> Option<(D::Conn, i64)> {
        self.idle.lock().ok()?.pop().map(|i| (i.conn, i.id))
    }

    fn push_idle(&self, conn: D::Conn, id: i64) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(Idle {
                conn,
                id,
                since: Instant::now(),
            });
        }
    }

    fn clear_idle(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
    }

    fn take_idle_older_than(&self, age: Duration) -> Vec<D::Conn> {
        let Ok(mut idle) = self.idle.lock() else {
            return Vec::new();
        };
        let (old, young): (Vec<_>, Vec<_>) = idle.drain(..).partition(|i| i.since.elapsed() >= age);
        *idle = young;
        old.into_iter().map(|i| i.conn).collect()
    }

    fn unbusy(&self, lease: u64) {
        if let Ok(mut busy) = self.busy.lock() {
            busy.remove(&lease);
        }
    }
}

/// One request's connection, inside its read-only transaction. `finish` rolls the transaction
/// back and gives the connection back; `discard` drops a connection that is gone; dropped
/// otherwise (the request was cancelled or is past its time, its statement maybe still running),
/// the statement is stopped on the server and the connection closed (`abandon`).
pub(crate) struct Lease<D: Driver> {
    conn: Option<(D::Conn, i64)>,
    permit: Option<OwnedSemaphorePermit>,
    inner: Arc<Inner<D>>,
    lease: u64,
}

impl<D: Driver> Lease<D> {
    pub(crate) fn conn(&mut self) -> &mut D::Conn {
        &mut self
            .conn
            .as_mut()
            .expect("a lease holds its connection until finish or drop")
            .0
    }

    /// Rolls back (never commits) and returns the connection to the pool, after the answer: the
    /// rollback runs in its own task, holding the connection's permit until it is done.
    pub(crate) fn finish(mut self) {
        let (Some((mut conn, id)), Some(permit)) = (self.conn.take(), self.permit.take()) else {
            return;
        };
        let inner = self.inner.clone();
        let lease = self.lease;
        inner.finishing.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let ended = tokio::time::timeout(END_TIMEOUT, inner.driver.end(&mut conn))
                .await
                .is_ok_and(|r| r.is_ok());
            inner.unbusy(lease);
            if ended {
                inner.push_idle(conn, id);
            }
            inner.finishing.fetch_sub(1, Ordering::Relaxed);
            inner.returned.notify_waiters();
            drop(permit);
        });
    }

    /// Drops a connection that is gone (a connection error): nothing runs on it any more.
    pub(crate) fn discard(mut self) {
        self.conn.take();
        self.inner.unbusy(self.lease);
    }

    /// Gives up on a statement that may still run (past its time): it is stopped on the server
    /// and the connection closed, the slot held until then.
    pub(crate) fn abandon(self) {
        drop(self);
    }
}

impl<D: Driver> Drop for Lease<D> {
    fn drop(&mut self) {
        let Some((conn, id)) = self.conn.take() else {
            return;
        };
        // The statement may still be running: stop it from another connection, then close ours.
        // During the runtime's shutdown there is nothing to run this on: `Pool::close` stops
        // what is still listed as busy.
        let (inner, lease, permit) = (self.inner.clone(), self.lease, self.permit.take());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let _ = tokio::time::timeout(END_TIMEOUT, inner.driver.cancel(id)).await;
            drop(conn);
            inner.unbusy(lease);
            drop(permit);
        });
    }
}
