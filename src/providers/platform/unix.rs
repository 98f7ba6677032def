//! The Unix side of the file seam (Linux, macOS, the BSDs): descriptors, `openat` / `fstatat` /
//! `readlinkat` with `O_NOFOLLOW`, kinds from `d_type`. The same calls on every Unix: no
//! `openat2` (Linux only), so the walk tested on Linux is the walk that runs on macOS.

use std::borrow::Cow;
use std::fs::{File, Metadata};
use std::io::{Error, ErrorKind};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::{Kind, OpenError, Stat, Version};

/// How folders are opened: never through a symlink.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOFOLLOW);

/// How files are opened: never through a symlink, never blocking (a FIFO swapped in never hangs
/// a thread), never as a controlling terminal.
const FILE_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY);

/// An open folder.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
}

impl Dir {
    /// Opens the folder at `path` (canonical: its last component is not followed).
    pub(crate) fn open(path: &Path) -> Result<Dir, OpenError> {
        let fd = rustix::fs::open(path, DIR_FLAGS, Mode::empty()).map_err(not_found_or)?;
        Ok(Dir { fd })
    }

    /// Opens the child folder `name`, not through a symlink.
    pub(crate) fn open_dir(&self, name: &str) -> Result<Dir, OpenError> {
        let fd =
            rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty()).map_err(not_found_or)?;
        Ok(Dir { fd })
    }

    /// The child `name`, not followed.
    pub(crate) fn stat(&self, name: &str) -> Result<Stat, OpenError> {
        let st =
            rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(not_found_or)?;
        Ok(stat_of(&st))
    }

    /// The path `rel` below this folder (`/`-separated; symlinks on the way followed, not the
    /// last), for a check of a version already known (the kept reads).
    pub(crate) fn stat_path(&self, rel: &str) -> Option<Stat> {
        let st = rustix::fs::statat(&self.fd, rel, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some(stat_of(&st))
    }

    /// The target of the symlink `name`, as written.
    pub(crate) fn read_link(&self, name: &str) -> Result<String, OpenError> {
        let target = rustix::fs::readlinkat(&self.fd, name, Vec::new()).map_err(not_found_or)?;
        target.into_string().map_err(|_| OpenError::NotFound)
    }

    /// Opens the regular file `name`, not through a symlink, and checks on the descriptor that
    /// it is one.
    pub(crate) fn open_file(&self, name: &str) -> Result<(File, Stat), OpenError> {
        let fd =
            rustix::fs::openat(&self.fd, name, FILE_FLAGS, Mode::empty()).map_err(not_found_or)?;
        let st = rustix::fs::fstat(&fd).map_err(not_found_or)?;
        let stat = stat_of(&st);
        if stat.kind != Kind::File {
            return Err(OpenError::NotFound);
        }
        Ok((File::from(fd), stat))
    }

    /// This folder's version (`fstat`).
    pub(crate) fn version(&self) -> Option<Version> {
        rustix::fs::fstat(&self.fd).ok().map(|st| version_of(&st))
    }

    /// Each name of the folder (not `.` or `..`; UTF-8 only: other names cannot be written in a
    /// URI we could read back) with its kind where the folder says (`d_type`; `None`: ask
    /// `stat`) and whether the platform marks it hidden (never, on Unix), until `each` says
    /// stop (false). False if the folder cannot be read.
    pub(crate) fn for_each(&self, mut each: impl FnMut(&str, Option<Kind>, bool) -> bool) -> bool {
        let Ok(mut read) = rustix::fs::Dir::read_from(self.fd.as_fd()) else {
            return false;
        };
        while let Some(Ok(item)) = read.read() {
            let raw = item.file_name().to_bytes();
            if raw == b"." || raw == b".." {
                continue;
            }
            let Ok(name) = std::str::from_utf8(raw) else {
                continue;
            };
            let kind = match item.file_type() {
                FileType::Unknown => None,
                t => Some(kind_of(t)),
            };
            if !each(name, kind, false) {
                break;
            }
        }
        true
    }
}

fn kind_of(t: FileType) -> Kind {
    match t {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Link,
        _ => Kind::Other,
    }
}

fn stat_of(st: &rustix::fs::Stat) -> Stat {
    Stat {
        kind: kind_of(FileType::from_raw_mode(st.st_mode)),
        size: u64::try_from(st.st_size).unwrap_or(0),
        modified: modified(st),
        version: Some(version_of(st)),
    }
}

// The fields' integer types differ between platforms.
#[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
fn version_of(st: &rustix::fs::Stat) -> Version {
    Version {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        size: st.st_size as i64,
        mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
        ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
    }
}

/// A `stat`'s modification time, as `std::fs::Metadata::modified` gives it.
// The fields' integer types differ between platforms.
#[allow(clippy::useless_conversion)]
fn modified(st: &rustix::fs::Stat) -> Option<SystemTime> {
    let secs = i64::try_from(st.st_mtime).ok()?;
    let nanos = u32::try_from(st.st_mtime_nsec)
        .ok()
        .filter(|n| *n < 1_000_000_000)?;
    if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::new(secs.unsigned_abs(), nanos))
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(Duration::from_nanos(u64::from(nanos)))
    }
}

/// Missing things, loops and type mismatches are "not found"; the rest is an IO error.
fn not_found_or(e: Errno) -> OpenError {
    match e {
        Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::NAMETOOLONG | Errno::XDEV => {
            OpenError::NotFound
        }
        e => OpenError::Io(Error::from(e)),
    }
}

#[cfg(test)]
pub(super) fn version_at(path: &Path) -> Option<Version> {
    rustix::fs::stat(path).ok().map(|st| version_of(&st))
}

pub(super) fn name_allowed(name: &str) -> bool {
    !name.contains('\0')
}

pub(super) fn real_rel_of(_file: &File, _root: &Path) -> Option<Option<String>> {
    Some(None)
}

pub(super) fn below_root(target: &str, root: &Path) -> Option<String> {
    let root = root.to_str()?;
    let below = Path::new(target).strip_prefix(root).ok()?;
    below.to_str().map(str::to_owned)
}

pub(super) fn plain_path(path: &Path) -> PathBuf {
    path.to_path_buf()
}

pub(super) fn file_uri(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    Some(format!(
        "file://{}",
        crate::providers::encode_path(text.trim_end_matches('/'))
    ))
}

pub(super) fn normalize_uri(uri: &str) -> Cow<'_, str> {
    Cow::Borrowed(uri)
}

pub(super) fn open_regular(path: &Path) -> std::io::Result<(File, u64)> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(not_regular());
    }
    Ok((File::from(fd), u64::try_from(st.st_size).unwrap_or(0)))
}

pub(super) fn marked_hidden(_meta: &Metadata) -> bool {
    false
}

pub(super) fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

pub(super) fn same_path(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

pub(super) fn regular_file_id(path: &Path) -> std::io::Result<super::FileId> {
    let st = rustix::fs::stat(path)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(not_regular());
    }
    Ok(id_of(&st))
}

pub(super) fn file_id(file: &File) -> std::io::Result<super::FileId> {
    Ok(id_of(&rustix::fs::fstat(file)?))
}

#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn id_of(st: &rustix::fs::Stat) -> super::FileId {
    (st.st_dev as u64, st.st_ino as u64)
}

fn not_regular() -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        "it is not a regular file (a FIFO, a device or a folder)",
    )
}

pub(super) fn wake_fifo_reader(path: &Path) {
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

pub(super) fn uri_path_bytes(path: &Path) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt as _;
    Cow::Borrowed(path.as_os_str().as_bytes())
}
