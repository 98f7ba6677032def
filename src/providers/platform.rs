//! The file system's platform differences for the file providers, behind one seam: callers
//! never `cfg` on the OS. Unix: descriptors and `stat` identities; Windows: file attributes and
//! handle identities.

use std::fs::{File, Metadata};
use std::path::Path;

/// Whether the platform marks files hidden apart from their names (Windows' hidden attribute).
pub(crate) fn marks_hidden() -> bool {
    cfg!(windows)
}

/// Whether `meta` (of an entry, not followed) carries the platform's hidden mark.
pub(crate) fn marked_hidden(meta: &Metadata) -> bool {
    #[cfg(windows)]
    {
        use std::os::windows::fs::MetadataExt as _;
        /// `FILE_ATTRIBUTE_HIDDEN`.
        const HIDDEN: u32 = 0x2;
        meta.file_attributes() & HIDDEN != 0
    }
    #[cfg(not(windows))]
    {
        let _ = meta;
        false
    }
}

/// Whether the open `file` is the file at `path` (followed): the same device and inode, or
/// volume and file index.
pub(crate) fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let (Ok(copy), Ok(other)) = (file.try_clone(), same_file::Handle::from_path(path)) else {
            return false;
        };
        same_file::Handle::from_file(copy).is_ok_and(|h| h == other)
    }
}

/// Whether the paths `a` and `b` (followed) name one file.
pub(crate) fn same_path(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        same_file::is_same_file(a, b).unwrap_or(false)
    }
}
