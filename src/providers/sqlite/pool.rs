//! The connections of one sqlite source: read-only, opened on first use, a few reused, each
//! query bounded by a deadline that SQLite's progress handler enforces.
//!
//! Only a regular file is ever handed to SQLite, and opening counts against the deadline: the
//! path is opened non-blocking and checked on that descriptor first (a FIFO swapped in for the
//! database would otherwise block SQLite's own `open` for good), and a connection that still does
//! not open in time (a swap between the check and SQLite's open) is given up, its thread woken if
//! the path is still a FIFO, so the source answers again once the real file is back.
//!
//! # WAL databases are left as they were found
//!
//! A read-only SQLite connection to a WAL-mode database creates `-wal` and `-shm` next to it and,
//! unable to checkpoint, leaves them there when it closes. So: a WAL database without a `-wal`
//! file holds all its content in the main file and is opened `immutable` (SQLite then creates
//! nothing); one with a `-wal` (a writer is at work, or was) is opened normally, reading the WAL
//! through its `-shm`, which the writer made. Connections to a WAL database are never kept idle:
//! each read opens its own and closes it, so the state is judged afresh (a writer may have
//! started or finished) and we are never the last connection holding a writer's files open when
//! it closes (the last one out deletes them; a read-only one cannot). What this cannot avoid: a
//! `-wal` without a `-shm` (a copied database, a writer killed mid-write) makes SQLite create the
//! `-shm` it needs to read that WAL.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions as _, Connection as _, SqliteConnection};

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
    /// Whether it may wait idle for the next read (not for a WAL database; see the module doc).
    reuse: bool,
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
        let started = Self::now_ms(self.epoch);
        let conn = match reused {
            Some(c) => c,
            None => match tokio::time::timeout(self.timeout, self.open(file)).await {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => {
                    return Err(RequestError::Refused(format!(
                        "the database `{}` cannot be opened: {}",
                        self.path.display(),
                        db_message(&e)
                    )));
                }
                Err(_) => {
                    wake_fifo_reader(&self.path);
                    return Err(RequestError::Refused(format!(
                        "the database `{}` did not open within {} (`timeout`)",
                        self.path.display(),
                        crate::manifest::expand::format_duration(self.timeout)
                    )));
                }
            },
        };
        // Opening counted against the deadline.
        let deadline =
            started.saturating_add(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX));
        conn.deadline.store(deadline, Ordering::Relaxed);
        Ok(Lease {
            pool: self,
            conn: Some(conn),
            released: false,
            _permit: permit,
        })
    }

    async fn open(&self, file: FileId) -> Result<Conn, sqlx::Error> {
        let found = check_regular(&self.path, Some(file)).map_err(sqlx::Error::Io)?;
        let mut conn = found.options(self.options.clone()).connect().await?;
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
            reuse: !found.wal,
        })
    }
}

/// One `stat(2)` of the database file, done in place: it costs about a microsecond, far less than
/// the two thread hand-offs of `spawn_blocking` (and a file system where it would hang would hang
/// SQLite's own reads the same way). Anything but a regular file is refused.
#[cfg(unix)]
fn file_id(path: &Path) -> std::io::Result<FileId> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(path)?;
    if !m.is_file() {
        return Err(not_regular());
    }
    Ok((m.dev(), m.ino()))
}

fn not_regular() -> std::io::Error {
    std::io::Error::other("it is not a regular file (a FIFO, a device or a folder)")
}

/// What `check_regular` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Found {
    /// The header says WAL mode (file format versions 2 at offsets 18 and 19).
    pub wal: bool,
    /// ... and there is no `-wal` file: the main file holds everything.
    pub no_wal_file: bool,
}

impl Found {
    /// `base` for this file: `immutable` for a WAL database without a `-wal` (see the module doc).
    pub fn options(self, base: SqliteConnectOptions) -> SqliteConnectOptions {
        base.immutable(self.wal && self.no_wal_file)
    }
}

/// Opens `path` non-blocking (a FIFO or a device never blocks this) and checks on that descriptor
/// that it is a regular file, and the file `expected` when given; reads its header for the
/// journal mode. Done in place, like `file_id`.
pub(super) fn check_regular(path: &Path, expected: Option<FileId>) -> std::io::Result<Found> {
    use rustix::fs::{FileType, Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(not_regular());
    }
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    let id: FileId = (st.st_dev as u64, st.st_ino as u64);
    if expected.is_some_and(|e| e != id) {
        return Err(std::io::Error::other("it was replaced while being opened"));
    }
    let mut header = [0u8; 20];
    let n = rustix::io::pread(&fd, &mut header, 0)?;
    let wal = n == header.len() && header[18] == 2 && header[19] == 2;
    let mut wal_file = path.as_os_str().to_owned();
    wal_file.push("-wal");
    let no_wal_file = !Path::new(&wal_file).exists();
    Ok(Found { wal, no_wal_file })
}

/// When a connection did not open in time because the path became a FIFO after it was checked,
/// SQLite's thread is blocked in `open` until a writer appears: be that writer for an instant
/// (open for writing, non-blocking, and close) so the thread gets an end of file and finishes.
/// Nothing is written; a path that is not a FIFO is left alone.
pub(super) fn wake_fifo_reader(path: &Path) {
    use rustix::fs::{FileType, Mode, OFlags};
    let is_fifo = rustix::fs::stat(path)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Fifo);
    if is_fifo {
        let _ = rustix::fs::open(
            path,
            OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        );
    }
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

    /// Gives the connection back; one that is not reused (a WAL database's) is closed before
    /// this returns, so no connection of ours outlives the read it served.
    pub(super) async fn release(mut self) {
        if let Some(c) = self.conn.take_if(|c| !c.reuse) {
            let _ = c.conn.close().await;
            return;
        }
        self.released = true;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if self.released && conn.reuse {
            conn.deadline.store(u64::MAX, Ordering::Relaxed);
            if let Ok(mut idle) = self.pool.idle.lock() {
                idle.push(conn);
            }
        } else {
            conn.deadline.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_and_a_blocked_fifo_reader_is_woken() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("db");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // The check opens it non-blocking: an answer at once, not a hang.
        let err = check_regular(&fifo, None).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(file_id(&fifo).is_err());
        // A thread blocked opening it (as SQLite's would be after a swap) is let go.
        let path = fifo.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = std::fs::File::open(&path);
            let _ = tx.send(());
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            wake_fifo_reader(&fifo);
            if rx.recv_timeout(Duration::from_millis(20)).is_ok() {
                break;
            }
            assert!(Instant::now() < deadline, "the reader was never woken");
        }
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        check_regular(&file, None).unwrap();
        let id = file_id(&file).unwrap();
        check_regular(&file, Some(id)).unwrap();
        assert!(check_regular(&file, Some((id.0, id.1 + 1))).is_err());
    }
}
