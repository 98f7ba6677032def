//! The connections of one sqlite source: read-only, opened on first use, a few reused, each
//! query bounded by a deadline that SQLite's progress handler enforces.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions as _, SqliteConnection};

use super::db_message;
use crate::providers::RequestError;

/// Connections one source keeps open at most (reads beyond that wait their turn).
const MAX_CONNECTIONS: usize = 4;
/// Bounds of the rows a connection's thread may hand over ahead of the task reading them.
const MIN_ROW_BUFFER: usize = 50;
const MAX_ROW_BUFFER: usize = 10_000;
/// SQLite virtual-machine steps between two checks of a query's deadline.
const PROGRESS_STEPS: i32 = 1000;

/// Read-only, never created, `query_only` on.
pub(super) fn options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .create_if_missing(false)
        .pragma("query_only", "1")
}

/// A few read-only connections, opened on first use and reused. Each connection has a progress
/// handler that interrupts its query once the deadline its lease set has passed.
///
/// Not sqlx's `Pool`: a lease must be able to set its connection's deadline, and a connection
/// whose request went away mid-query must be interrupted and dropped, not handed to the next.
pub(super) struct Pool {
    options: SqliteConnectOptions,
    path: PathBuf,
    /// Idle connections; a `std` mutex, held only to push or pop (never across an await).
    idle: std::sync::Mutex<Vec<Conn>>,
    permits: tokio::sync::Semaphore,
    epoch: Instant,
    /// How long one lease's query may run.
    pub(super) timeout: Duration,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("path", &self.path).finish()
    }
}

struct Conn {
    conn: SqliteConnection,
    /// Milliseconds since the pool's epoch after which the running query is interrupted.
    deadline: Arc<AtomicU64>,
    /// The database file this connection opened: when the file is replaced, it is reopened.
    file: FileId,
}

/// Device and inode of the database file (a file replaced by a rename gets a new one).
type FileId = (u64, u64);

impl Pool {
    pub(super) fn new(path: &Path, timeout: Duration, row_limit: u64) -> Pool {
        // Room for a whole answer (`row_limit` rows and the one that says there are more), so
        // the connection's thread never waits for this task while it hands rows over.
        let rows = usize::try_from(row_limit.saturating_add(2))
            .unwrap_or(MAX_ROW_BUFFER)
            .clamp(MIN_ROW_BUFFER, MAX_ROW_BUFFER);
        Pool {
            timeout,
            options: options(path).row_buffer_size(rows),
            path: path.to_path_buf(),
            idle: std::sync::Mutex::new(Vec::new()),
            permits: tokio::sync::Semaphore::new(MAX_CONNECTIONS),
            epoch: Instant::now(),
        }
    }

    fn now_ms(epoch: Instant) -> u64 {
        u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A connection for one request, with its deadline set to `timeout` from now.
    pub(super) async fn lease(&self) -> Result<Lease<'_>, RequestError> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| RequestError::Internal("the connection pool is closed".into()))?;
        let file = file_id(&self.path).map_err(|e| {
            RequestError::Refused(format!(
                "the database `{}` cannot be read: {e}",
                self.path.display()
            ))
        })?;
        let reused = match self.idle.lock() {
            Ok(mut idle) => {
                idle.retain(|c| c.file == file);
                idle.pop()
            }
            Err(_) => None,
        };
        let conn = match reused {
            Some(c) => c,
            None => self.open(file).await.map_err(|e| {
                RequestError::Refused(format!(
                    "the database `{}` cannot be opened: {}",
                    self.path.display(),
                    db_message(&e)
                ))
            })?,
        };
        let deadline = Self::now_ms(self.epoch)
            .saturating_add(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX));
        conn.deadline.store(deadline, Ordering::Relaxed);
        Ok(Lease {
            pool: self,
            conn: Some(conn),
            released: false,
            _permit: permit,
        })
    }

    async fn open(&self, file: FileId) -> Result<Conn, sqlx::Error> {
        let mut conn = self.options.connect().await?;
        let deadline = Arc::new(AtomicU64::new(u64::MAX));
        let (cell, epoch) = (deadline.clone(), self.epoch);
        conn.lock_handle()
            .await?
            .set_progress_handler(PROGRESS_STEPS, move || {
                Self::now_ms(epoch) < cell.load(Ordering::Relaxed)
            });
        Ok(Conn {
            conn,
            deadline,
            file,
        })
    }
}

/// One `stat(2)` of the database file, done in place: it costs about a microsecond, far less than
/// the two thread hand-offs of `spawn_blocking` (and a file system where it would hang would hang
/// SQLite's own reads the same way).
#[cfg(unix)]
fn file_id(path: &Path) -> std::io::Result<FileId> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(path)?;
    Ok((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(path: &Path) -> std::io::Result<FileId> {
    std::fs::metadata(path).map(|_| (0, 0))
}

/// One request's use of a connection. `release` gives it back; dropped without `release` (the
/// request was cancelled mid-query), the query is interrupted and the connection closed.
pub(super) struct Lease<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
    released: bool,
    _permit: tokio::sync::SemaphorePermit<'a>,
}

impl Lease<'_> {
    pub(super) fn conn(&mut self) -> &mut SqliteConnection {
        &mut self
            .conn
            .as_mut()
            .expect("a lease holds its connection until it is dropped")
            .conn
    }

    pub(super) fn timed_out(&self) -> bool {
        self.conn
            .as_ref()
            .is_some_and(|c| Pool::now_ms(self.pool.epoch) >= c.deadline.load(Ordering::Relaxed))
    }

    pub(super) fn release(mut self) {
        self.released = true;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if self.released {
            conn.deadline.store(u64::MAX, Ordering::Relaxed);
            if let Ok(mut idle) = self.pool.idle.lock() {
                idle.push(conn);
            }
        } else {
            conn.deadline.store(0, Ordering::Relaxed);
        }
    }
}
