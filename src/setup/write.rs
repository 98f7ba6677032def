//! Writing a file so that a reader never sees half of it: a temporary file beside it, then a
//! rename (or a hard link, when an existing file must not be replaced); backups before an edit.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The file a write to `path` lands in: the target of a symlink (a config file linked from a
/// dotfiles repository stays a link), else `path` itself.
pub(crate) fn write_target(path: &Path) -> io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path),
        _ => Ok(path.to_path_buf()),
    }
}

/// Replaces (or creates) `path` with `bytes` atomically, keeping the old file's permissions.
/// Makes the parent folders.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = write_target(path)?;
    let tmp = temp_beside(&target, bytes)?;
    if let Ok(meta) = fs::metadata(&target) {
        let _ = fs::set_permissions(&tmp, meta.permissions());
    }
    fs::rename(&tmp, &target).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// Creates `path` with `bytes`; fails with `AlreadyExists` (and writes nothing) when it exists.
/// Makes the parent folders.
pub(crate) fn create_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_beside(path, bytes)?;
    // A hard link is an atomic "create if absent" of a complete file.
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        // Filesystems without hard links: exclusive create, then write.
        Err(_) => {
            let mut f = OpenOptions::new().write(true).create_new(true).open(path)?;
            f.write_all(bytes)?;
            f.sync_all()
        }
    }
}

/// A copy of `path` beside it, named `FILE.bak-YYYYMMDD-HHMMSS` (UTC; `-N` added when taken), made
/// before an edit. `None` when there is no file to back up.
pub(crate) fn backup(path: &Path) -> io::Result<Option<PathBuf>> {
    let target = write_target(path)?;
    let bytes = match fs::read(&target) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let stamp =
        chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now()).format("%Y%m%d-%H%M%S");
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into());
    for n in 0..1000 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let candidate = target.with_file_name(format!("{name}.bak-{stamp}{suffix}"));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(mut f) => {
                f.write_all(&bytes)?;
                f.sync_all()?;
                if let Ok(meta) = fs::metadata(&target) {
                    let _ = fs::set_permissions(&candidate, meta.permissions());
                }
                return Ok(Some(candidate));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free backup name beside {}", target.display()),
    ))
}

/// Writes `bytes` to a new hidden temporary file in `path`'s folder (made if missing).
fn temp_beside(path: &Path, bytes: &[u8]) -> io::Result<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for n in 0..1000u32 {
        let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(mut f) => {
                let written = f.write_all(bytes).and_then(|()| f.sync_all());
                if let Err(e) = written {
                    let _ = fs::remove_file(&tmp);
                    return Err(e);
                }
                return Ok(tmp);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free temporary name in {}", dir.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn create_new_refuses_an_existing_file_and_replace_keeps_links() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/a.txt");
        create_new(&p, b"one").unwrap();
        let err = create_new(&p, b"two").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&p).unwrap(), b"one");

        let real = dir.path().join("real.json");
        fs::write(&real, b"{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        replace(&link, b"{\"a\": 1}").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&real).unwrap(), b"{\"a\": 1}");
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn backups_never_overwrite_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.json");
        assert_eq!(backup(&p).unwrap(), None);
        fs::write(&p, b"v1").unwrap();
        let a = backup(&p).unwrap().unwrap();
        fs::write(&p, b"v2").unwrap();
        let b = backup(&p).unwrap().unwrap();
        assert_ne!(a, b);
        assert_eq!(fs::read(&a).unwrap(), b"v1");
        assert_eq!(fs::read(&b).unwrap(), b"v2");
    }
}
