//! The file system's platform differences for the file providers, behind one seam: callers
//! (`paths`, the files walk, `visible`) never `cfg` on the OS.
//!
//! - `Dir`: an open folder below a root, reached without following any link, and what is done
//!   relative to it: open a child folder or a regular file (never following a link, never
//!   opening a FIFO or a device), look at a child (`stat`, not followed), read a link's target,
//!   read the folder's names with their kinds. Unix (Linux, macOS, the BSDs): descriptors and
//!   `*at` system calls with `O_NOFOLLOW` (no `openat2`, which macOS lacks and which refuses the
//!   absolute symlinks into the root that users make). Windows: handles opened with
//!   `FILE_FLAG_OPEN_REPARSE_POINT` (symlinks, junctions and mount points are never followed by
//!   the system), folders held without `FILE_SHARE_DELETE` while in use (so the path below them
//!   cannot be swapped), and every file opened checked by its handle's final path
//!   (`GetFinalPathNameByHandleW`): a file is served only if that path is below the root, and
//!   its visibility is judged on that path (long names: an 8.3 short name that aliases a hidden
//!   file is judged as that file).
//! - Names: Windows refuses what it would alias or open as something else (`name_allowed`):
//!   device names (`CON`, `NUL`, `COM1`, … with any extension), alternate data streams
//!   (`a.txt:secret`), trailing dots and spaces, the characters `<>:"|?*` and control
//!   characters. The hidden attribute counts as hidden (`marked_hidden`).
//! - URIs: `file://` + the path on Unix; `file:///C:/…` on Windows (RFC 8089), from a path
//!   without the `\\?\` verbatim prefix, the drive letter upper case; a client's `file:///c:/…`
//!   or `file:///C%3A/…` names the same file (`normalize_uri`).
//! - File versions (device, inode, size, times: what the kept reads and kept folder listings
//!   are keyed by) exist on Unix; on Windows `version` is `None` and those caches stay empty.

use std::borrow::Cow;
use std::fs::{File, Metadata};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as sys;

pub(crate) use sys::Dir;

/// Why an open gave no file.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// Missing, outside the root, not a regular file, a link where none may be, a name the
    /// platform refuses: all read as "not found".
    NotFound,
    /// Something else went wrong (permissions, IO); the message is safe to show.
    Io(std::io::Error),
}

/// What a name is, as its folder says (a link is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Link,
    /// A FIFO, a socket, a device: never served.
    Other,
}

/// A name's metadata, not followed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    pub kind: Kind,
    pub size: u64,
    pub modified: Option<SystemTime>,
    /// `None` where the platform has no inode to tell files apart (Windows).
    pub version: Option<Version>,
}

/// What tells one version of a file from another: its device and inode, size, and modification
/// and change times (a write changes the change time, which no one can set). Two `stat`s that
/// agree on all of it saw the same bytes, unless the file changed within the times' granularity
/// after the first (see `settled`). Unix only: Windows gives no `Version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(windows, allow(dead_code))]
pub(crate) struct Version {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: i64,
    pub(crate) mtime: (i64, i64),
    pub(crate) ctime: (i64, i64),
}

#[cfg_attr(windows, allow(dead_code))]
impl Version {
    /// Whether both are versions of one file (device and inode).
    pub(crate) fn same_file(&self, other: &Version) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }

    /// The same file, modified a second later.
    #[cfg(test)]
    pub(crate) fn touched(&self) -> Version {
        Version {
            mtime: (self.mtime.0 + 1, self.mtime.1),
            ..*self
        }
    }

    /// Whether both its times are at least `age` before `now`: any later change gives the file
    /// a change time after them, so a `stat` that finds this version again saw these bytes (the
    /// "racy git" rule; a file changed twice within one tick of the clock could otherwise keep
    /// its version).
    pub(crate) fn settled(&self, now: SystemTime, age: std::time::Duration) -> bool {
        let Some(limit) = now
            .checked_sub(age)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        else {
            return false;
        };
        let limit = (
            i64::try_from(limit.as_secs()).unwrap_or(i64::MAX),
            i64::from(limit.subsec_nanos()),
        );
        self.mtime <= limit && self.ctime <= limit
    }
}

/// A made-up version of file `ino` (for the caches' own tests, on every platform).
#[cfg(test)]
pub(crate) fn test_version(ino: u64) -> Version {
    Version {
        dev: 1,
        ino,
        size: 0,
        mtime: (1, 0),
        ctime: (1, 0),
    }
}

/// The version of what is at `path` (followed), for tests (Unix: Windows gives none).
#[cfg(all(test, unix))]
pub(crate) fn version_at(path: impl AsRef<Path>) -> Option<Version> {
    sys::version_at(path.as_ref())
}

/// Whether one path segment is a name the platform opens as the file it names (see the module
/// doc); a plain relative path is made only of such names.
pub(crate) fn name_allowed(name: &str) -> bool {
    sys::name_allowed(name)
}

/// The real path below `root` (canonical) of the file `file` was opened as, where the platform
/// must ask the handle (Windows: its final path, long names; `None` when it is not below the
/// root). `None` on Unix, whose walk knows the path it took.
pub(crate) fn real_rel_of(file: &File, root: &Path) -> Option<Option<String>> {
    sys::real_rel_of(file, root)
}

/// `target` (a link's, absolute) as a path below `root` (canonical), `/`-separated, or `None`
/// when it points elsewhere.
pub(crate) fn below_root(target: &str, root: &Path) -> Option<String> {
    sys::below_root(target, root)
}

/// The segments of a link's relative target.
pub(crate) fn link_segments(target: &str) -> Vec<String> {
    target
        .split(if cfg!(windows) {
            &['/', '\\'][..]
        } else {
            &['/'][..]
        })
        .map(str::to_owned)
        .collect()
}

/// Whether a link's target is absolute.
pub(crate) fn is_absolute_target(target: &str) -> bool {
    Path::new(target).is_absolute() || (cfg!(windows) && target.starts_with(['\\', '/']))
}

/// The canonical form of `path`: links resolved, and on Windows without the `\\?\` prefix and
/// with the drive letter upper case (the form URIs and messages show).
pub(crate) fn canonical(path: &Path) -> std::io::Result<PathBuf> {
    std::fs::canonicalize(path).map(|p| sys::plain_path(&p))
}

/// The `file://` URI of a canonical path (no trailing `/`), or `None` when it is not UTF-8.
pub(crate) fn file_uri(path: &Path) -> Option<String> {
    sys::file_uri(path)
}

/// A client's `file://` URI in the form `file_uri` writes (Windows: the drive letter upper case,
/// a `%3A` after it decoded); others unchanged.
pub(crate) fn normalize_uri(uri: &str) -> Cow<'_, str> {
    sys::normalize_uri(uri)
}

/// Opens a file given by its own path (a manifest, an ignore file, a single-file source) only if
/// it is a regular file, without blocking on a FIFO and without opening a device.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<(File, u64)> {
    sys::open_regular(path)
}

/// Whether the platform marks files hidden apart from their names (Windows' hidden attribute).
pub(crate) fn marks_hidden() -> bool {
    cfg!(windows)
}

/// Whether `meta` (of an entry, not followed) carries the platform's hidden mark.
pub(crate) fn marked_hidden(meta: &Metadata) -> bool {
    sys::marked_hidden(meta)
}

/// Whether the open `file` is the file at `path` (followed): the same device and inode, or
/// volume and file index.
pub(crate) fn same_file(file: &File, path: &Path) -> bool {
    sys::same_file(file, path)
}

/// Whether the paths `a` and `b` (followed) name one file.
pub(crate) fn same_path(a: &Path, b: &Path) -> bool {
    sys::same_path(a, b)
}

/// What tells one file from another while it exists: device and inode on Unix, volume serial
/// number and file index on Windows.
pub(crate) type FileId = (u64, u64);

/// The identity of the regular file at `path` (followed); an error naming what it is otherwise.
/// Unix: one `stat(2)`, no open. Windows: an open handle with no access rights asked.
pub(crate) fn regular_file_id(path: &Path) -> std::io::Result<FileId> {
    sys::regular_file_id(path)
}

/// The identity of the open `file`.
pub(crate) fn file_id(file: &File) -> std::io::Result<FileId> {
    sys::file_id(file)
}

/// When a thread is blocked opening `path` for reading because a FIFO was swapped in there, be
/// its writer for an instant (open for writing, non-blocking, close): its open returns and it
/// reads an end of file. Nothing is written; a path that is not a FIFO is left alone. Windows
/// has no FIFOs in its file system: nothing to do.
pub(crate) fn wake_fifo_reader(path: &Path) {
    sys::wake_fifo_reader(path);
}

/// The path of a `file:` URI naming `path`, not yet percent-encoded: Unix its bytes; Windows
/// `/C:/dir/file` (RFC 8089, as SQLite reads it), `/` separators, no `\\?\` prefix.
pub(crate) fn uri_path_bytes(path: &Path) -> Cow<'_, [u8]> {
    sys::uri_path_bytes(path)
}
