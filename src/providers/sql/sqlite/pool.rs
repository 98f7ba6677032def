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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use crate::providers::RequestError;
use crate::providers::platform::{self, FileId};

/// Connections one source keeps open at most (reads beyond that wait their turn).
const MAX_CONNECTIONS: usize = 4;
/// SQLite virtual-machine steps between two checks of a query's deadline.
const PROGRESS_STEPS: std::ffi::c_int = 1000;

/// A few read-only connections, opened on first use and reused. Each connection has a progress
/// handler that interrupts its query once the deadline of the read using it has passed.
///
/// A read is one job on a blocking thread (`run`): the connection moves there, the statement
/// runs and its rows are converted there, and the result comes back in one hand-off each way.
/// (sqlx's SQLite driver, used before, hands each row from the connection's thread to the task
/// reading it: about eight thread wake-ups for a 100-row table, half the CPU time of the read.)
pub(super) struct Pool {
    path: PathBuf,
    /// Idle connections; a `std` mutex, held only to push or pop.
    idle: Arc<std::sync::Mutex<Vec<Conn>>>,
    permits: tokio::sync::Semaphore,
    epoch: Instant,
    /// How long one read's query may run.
    pub(super) timeout: Duration,
    /// The largest string, BLOB or row SQLite may make or read (`SQLITE_LIMIT_LENGTH`): the
    /// source's `max_size`, so a value no answer could hold is refused before it is made.
    max_value: i32,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("path", &self.path).finish()
    }
}

struct Conn {
    conn: Connection,
    /// Milliseconds since the pool's epoch after which the running query is interrupted.
    deadline: Arc<AtomicU64>,
    /// The database file this connection opened (device and inode; a file replaced by a rename
    /// gets a new one): when the file is replaced, it is reopened.
    file: FileId,
    /// Whether it may wait idle for the next read (not for a WAL database; see the module doc).
    reuse: bool,
}

/// Whether a job's connection comes from (and goes back to) the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Pooled,
    Alone,
}

/// What a job gave, and whether its deadline had passed when it ended (its query was then
/// interrupted, whatever error SQLite gave for it).
pub(super) struct Ran<T> {
    pub(super) result: rusqlite::Result<T>,
    pub(super) timed_out: bool,
}

/// Interrupts the query of a read whose request went away (dropped while armed).
struct Interrupt {
    deadline: Arc<AtomicU64>,
    armed: bool,
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        if self.armed {
            self.deadline.store(0, Ordering::Relaxed);
        }
    }
}

impl Pool {
    pub(super) fn new(path: &Path, timeout: Duration, max_value: u64) -> Pool {
        Pool {
            timeout,
            max_value: i32::try_from(max_value).unwrap_or(i32::MAX),
            path: path.to_path_buf(),
            idle: Arc::new(std::sync::Mutex::new(Vec::new())),
            permits: tokio::sync::Semaphore::new(MAX_CONNECTIONS),
            epoch: Instant::now(),
        }
    }

    fn now_ms(epoch: Instant) -> u64 {
        u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Runs `job` on a connection of this pool, on a blocking thread, within `timeout` (opening
    /// the connection, when none is idle, counts against it). A connection whose file was
    /// replaced is not reused; one not reused (a WAL database's) is closed before this returns,
    /// so no connection of ours outlives the read it served. If the caller goes away mid-job
    /// (the request was cancelled), the query is interrupted and the connection closed, not
    /// handed to the next read.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<Ran<T>, RequestError> {
        self.run_on(Use::Pooled, job).await
    }

    /// `run` on a connection opened for `job` alone and closed after it (the manifest's checks,
    /// the SQL tool: nothing a statement sets on its connection outlives it).
    pub(super) async fn run_alone<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<Ran<T>, RequestError> {
        self.run_on(Use::Alone, job).await
    }

    async fn run_on<T: Send + 'static>(
        &self,
        use_: Use,
        job: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<Ran<T>, RequestError> {
        let _permit = self
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
                match use_ {
                    Use::Pooled => idle.pop(),
                    Use::Alone => None,
                }
            }
            Err(_) => None,
        };
        let epoch = self.epoch;
        let deadline_ms = Self::now_ms(epoch)
            .saturating_add(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX));
        let cell = reused.as_ref().map_or_else(
            || Arc::new(AtomicU64::new(u64::MAX)),
            |c| c.deadline.clone(),
        );
        cell.store(deadline_ms, Ordering::Relaxed);
        let mut interrupt = Interrupt {
            deadline: cell.clone(),
            armed: true,
        };
        // Set once the connection is open: until then only a blocked `open` can hold the job.
        let opened = Arc::new(AtomicBool::new(reused.is_some()));
        let (path, idle, opened_in_job) = (self.path.clone(), self.idle.clone(), opened.clone());
        let max_value = self.max_value;
        let mut handle = tokio::task::spawn_blocking(move || {
            let conn = match reused {
                Some(c) => c,
                None => open(&path, file, cell, epoch, max_value)?,
            };
            opened_in_job.store(true, Ordering::Release);
            let result = job(&conn.conn);
            let timed_out = Self::now_ms(epoch) >= conn.deadline.load(Ordering::Relaxed);
            // An interrupted read (`deadline` 0), a connection used alone or a WAL database's
            // is closed here.
            if conn.reuse
                && use_ == Use::Pooled
                && conn.deadline.swap(u64::MAX, Ordering::Relaxed) != 0
                && let Ok(mut idle) = idle.lock()
            {
                idle.push(conn);
            }
            Ok::<_, String>(Ran { result, timed_out })
        });
        // The query's own deadline stops it (within `PROGRESS_STEPS` steps): a timer is needed
        // only while a connection is being opened, which SQLite's `open` may block.
        let joined = if opened.load(Ordering::Acquire) {
            handle.await
        } else {
            tokio::select! {
                joined = &mut handle => joined,
                () = tokio::time::sleep(self.timeout) => {
                    if opened.load(Ordering::Acquire) {
                        handle.await
                    } else {
                        // A FIFO was swapped in after the check.
                        wake_fifo_reader(&self.path);
                        return Err(RequestError::Refused(format!(
                            "the database `{}` did not open within {} (`timeout`)",
                            self.path.display(),
                            crate::manifest::expand::format_duration(self.timeout)
                        )));
                    }
                }
            }
        };
        interrupt.armed = false;
        match joined {
            Ok(Ok(ran)) => Ok(ran),
            Ok(Err(why)) => Err(RequestError::Refused(format!(
                "the database `{}` cannot be opened: {why}",
                self.path.display(),
            ))),
            Err(e) => Err(RequestError::Internal(format!(
                "the database `{}` could not be read: {e}",
                self.path.display()
            ))),
        }
    }
}

/// Opens the database read-only (never created), `query_only` on, no string, BLOB or row
/// larger than `max_value`, and sets the progress handler that interrupts a query once
/// `deadline` (milliseconds since `epoch`) has passed.
fn open(
    path: &Path,
    file: FileId,
    deadline: Arc<AtomicU64>,
    epoch: Instant,
    max_value: i32,
) -> Result<Conn, String> {
    let found = check_regular(path, Some(file)).map_err(|e| e.to_string())?;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_PRIVATE_CACHE;
    let db = |e: rusqlite::Error| sqlite_message(&e);
    let conn = if found.immutable() {
        Connection::open_with_flags(immutable_uri(path), flags | OpenFlags::SQLITE_OPEN_URI)
    } else {
        Connection::open_with_flags(path, flags)
    }
    .map_err(db)?;
    conn.execute_batch("PRAGMA query_only = 1").map_err(db)?;
    conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, max_value)
        .map_err(db)?;
    let cell = deadline.clone();
    conn.progress_handler(
        PROGRESS_STEPS,
        Some(move || Pool::now_ms(epoch) >= cell.load(Ordering::Relaxed)),
    )
    .map_err(db)?;
    Ok(Conn {
        conn,
        deadline,
        file,
        reuse: !found.wal,
    })
}

/// `file:PATH?immutable=1`, the path's bytes percent-encoded but for letters, digits and
/// `/._-` (SQLite decodes them back); on Windows the path is `/C:/…` (RFC 8089).
fn immutable_uri(path: &Path) -> String {
    use std::fmt::Write as _;
    let mut uri = String::from("file:");
    for &b in platform::uri_path_bytes(path).iter() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-') {
            uri.push(char::from(b));
        } else {
            let _ = write!(uri, "%{b:02X}");
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// What SQLite said (its message, else its error code's).
pub(super) fn sqlite_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    }
}

/// The identity of the database file, found in place (Unix: one `stat(2)`, about a microsecond,
/// far less than the two thread hand-offs of `spawn_blocking`; a file system where it would hang
/// would hang SQLite's own reads the same way). Anything but a regular file is refused.
fn file_id(path: &Path) -> std::io::Result<FileId> {
    platform::regular_file_id(path)
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
    /// Opened `immutable`: a WAL database without a `-wal` (see the module doc).
    pub fn immutable(self) -> bool {
        self.wal && self.no_wal_file
    }
}

/// Opens `path` non-blocking (a FIFO or a device never blocks this) and checks on that handle
/// that it is a regular file, and the file `expected` when given; reads its header for the
/// journal mode. Done in place, like `file_id`.
pub(super) fn check_regular(path: &Path, expected: Option<FileId>) -> std::io::Result<Found> {
    use std::io::Read as _;
    let (file, _) = platform::open_regular(path)?;
    if let Some(e) = expected
        && platform::file_id(&file)? != e
    {
        return Err(std::io::Error::other("it was replaced while being opened"));
    }
    let mut header = Vec::with_capacity(20);
    file.take(20).read_to_end(&mut header)?;
    let wal = header.len() == 20 && header[18] == 2 && header[19] == 2;
    let mut wal_file = path.as_os_str().to_owned();
    wal_file.push("-wal");
    let no_wal_file = !Path::new(&wal_file).exists();
    Ok(Found { wal, no_wal_file })
}

/// When a connection did not open in time because the path became a FIFO after it was checked,
/// SQLite's thread is blocked in `open` until a writer appears: let it go (see
/// `platform::wake_fifo_reader`).
pub(super) fn wake_fifo_reader(path: &Path) {
    platform::wake_fifo_reader(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file name holding what a URI treats specially: `?`, `#`, `%`, a space and non-UTF-8
    /// bytes on Unix; Windows names cannot hold `?` or bytes that are not UTF-16, so there `&`,
    /// `=`, `#`, `%`, a space and a non-ASCII letter.
    #[cfg(unix)]
    fn odd_name() -> std::ffi::OsString {
        use std::os::unix::ffi::OsStrExt as _;
        std::ffi::OsStr::from_bytes(b"a b?mode=rwc&immutable=0#x%41\xff.db").to_owned()
    }

    #[cfg(windows)]
    fn odd_name() -> std::ffi::OsString {
        "a b&mode=rwc&immutable=0#x%41\u{e9}.db".into()
    }

    /// A WAL database without its `-wal` is opened by URI (`immutable`): a path holding what a
    /// URI treats specially still names that file, and nothing is created beside it.
    #[test]
    fn an_immutable_open_names_the_file_whatever_its_path_holds() {
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join(odd_name());
        {
            let db = Connection::open(&odd).unwrap();
            db.execute_batch(
                "PRAGMA journal_mode = WAL; CREATE TABLE t (v); INSERT INTO t VALUES (42);",
            )
            .unwrap();
        }
        let wal = |suffix: &str| {
            let mut p = odd.as_os_str().to_owned();
            p.push(suffix);
            PathBuf::from(p)
        };
        assert!(!wal("-wal").exists(), "a clean close removes the WAL");
        let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        let found = check_regular(&odd, None).unwrap();
        assert!(found.immutable(), "{found:?}");
        assert_eq!(
            immutable_uri(Path::new("/d/a b?c#d%e")),
            "file:/d/a%20b%3Fc%23d%25e?immutable=1"
        );
        let id = file_id(&odd).unwrap();
        let conn = open(
            &odd,
            id,
            Arc::new(AtomicU64::new(u64::MAX)),
            Instant::now(),
            i32::MAX,
        )
        .unwrap();
        assert!(!conn.reuse);
        let v: i64 = conn
            .conn
            .query_row("SELECT v FROM t", [], |row| row.get(0))
            .unwrap();
        assert_eq!(v, 42);
        assert!(conn.conn.execute("INSERT INTO t VALUES (1)", []).is_err());
        drop(conn);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            before.len(),
            "nothing created beside the database"
        );
    }

    #[test]
    fn only_regular_files_and_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = check_regular(dir.path(), None).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(file_id(dir.path()).is_err());
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        check_regular(&file, None).unwrap();
        let id = file_id(&file).unwrap();
        check_regular(&file, Some(id)).unwrap();
        assert!(check_regular(&file, Some((id.0, id.1 + 1))).is_err());
        let other = dir.path().join("other");
        std::fs::write(&other, "x").unwrap();
        assert_ne!(file_id(&other).unwrap(), id);
    }

    // Unix only: FIFOs (Windows has none in its file system).
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_and_a_blocked_fifo_reader_is_woken() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("db");
        let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path (`mknodat` of rustix is not on macOS).
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
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
    }
}
