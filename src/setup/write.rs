//! Writing a file so that a reader never sees half of it: a temporary file beside it, then a
//! rename (or a hard link, when an existing file must not be replaced); backups before an edit.
//!
//! A client's configuration file is edited under a lock ([`lock`]): `flock` on the file itself
//! (no lock file is left behind), re-checked against the path after the lock is taken, so
//! concurrent `register`s never lose each other's entries. Only a regular file is ever read or
//! replaced (a FIFO, a device, a socket or a folder is refused, never opened blocking);
//! temporary files and backups are created 0600 and given their final mode before the rename.
//! Backups are made by temp + rename too; the newest [`KEEP_BACKUPS`] of a file are kept, and
//! temporary files left by a killed run (its PID gone) are removed on the next edit.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::platform;

/// Backups of one configuration file kept (`FILE.bak-YYYYMMDD-HHMMSS[-N]`, the newest).
pub(crate) const KEEP_BACKUPS: usize = 3;

/// The file a write to `path` lands in: the target of a symlink (a config file linked from a
/// dotfiles repository stays a link), else `path` itself. A dangling symlink's target is
/// returned when its folder exists (the edit creates it).
pub(crate) fn write_target(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return crate::providers::platform::canonical(&current).or(Ok(current)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if current == path {
                    return Ok(current);
                }
                return match current.parent() {
                    Some(dir) if dir.as_os_str().is_empty() || dir.is_dir() => Ok(current),
                    _ => Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!(
                            "it is a symlink to {}, whose folder does not exist",
                            current.display()
                        ),
                    )),
                };
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(
        "too many levels of symbolic links (a symlink loop?)",
    ))
}

/// What an entry that is not a regular file is (`is a folder`, `is a FIFO (named pipe)`, …),
/// for messages; `None` for a regular file.
pub(crate) fn entry_kind(meta: &fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("is a folder");
    }
    Some(platform::special_kind(&t).unwrap_or("is not a regular file"))
}

/// The refusal to edit `meta` (of a path that exists) as a file, if it is not one.
fn not_regular(meta: &fs::Metadata) -> Option<io::Error> {
    let kind = entry_kind(meta)?;
    let not = match kind {
        "is a folder" => ", not a file",
        "is not a regular file" => "",
        _ => ", not a regular file",
    };
    Some(io::Error::other(format!("{kind}{not}; left as it is")))
}

/// A configuration file, locked for a read-modify-write.
pub(crate) struct Locked {
    /// The file written (a symlink's target).
    pub target: PathBuf,
    /// The file's content when locked (empty for a file this run created).
    pub bytes: Vec<u8>,
    /// The mode and link count of the file as it was; `None` when this run created it.
    existed: Option<(u32, u64)>,
    /// Folders this run made for the file, outermost first.
    pub created_dirs: Vec<PathBuf>,
    /// The file, where it holds the lock (`platform::KEEP_OPEN_WHILE_EDITING`).
    _file: Option<File>,
    /// Held for the lock; dropped (unlocked) after the rename.
    _lock: platform::EditLock,
}

impl Locked {
    /// Whether this run created the file.
    pub(crate) fn created(&self) -> bool {
        self.existed.is_none()
    }
}

/// What [`Locked::commit`] did.
pub(crate) struct Saved {
    pub backup: Option<PathBuf>,
    /// Notes for the user (a hard link split, …).
    pub notes: Vec<String>,
}

/// Files larger than this are not configuration files.
pub(crate) const MAX_CONFIG: u64 = 64 << 20;

/// Locks the configuration file `path` (through a symlink) for an edit and reads it. A missing
/// file is created empty (mode 0600, folders made) when `create`, else `Ok(None)`.
pub(crate) fn lock(path: &Path, create: bool) -> io::Result<Option<Locked>> {
    let target = write_target(path)?;
    // Windows: taken before the file is opened (see `platform::lock_path_for_edit`).
    let edit_lock = platform::lock_path_for_edit(&target)?;
    let mut created_dirs = Vec::new();
    for _ in 0..100 {
        let mut created = false;
        match fs::metadata(&target) {
            Ok(m) => {
                if let Some(refused) = not_regular(&m) {
                    return Err(refused);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if !create {
                    return Ok(None);
                }
                if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
                    let missing: Vec<PathBuf> = dir
                        .ancestors()
                        .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
                        .map(Path::to_path_buf)
                        .collect();
                    fs::create_dir_all(dir)?;
                    created_dirs.extend(missing.into_iter().rev());
                }
                let mut o = OpenOptions::new();
                o.write(true).create_new(true);
                platform::owner_only(&mut o);
                match o.open(&target) {
                    Ok(_) => created = true,
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
        let mut o = OpenOptions::new();
        o.read(true);
        platform::non_blocking(&mut o);
        let mut file = match o.open(&target) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        if let Some(refused) = not_regular(&meta) {
            return Err(refused);
        }
        platform::lock_open_for_edit(&file)?;
        // Another run may have replaced the file while this one waited: lock the new one.
        match fs::metadata(&target) {
            Ok(now) if platform::same_entry(&now, &meta) => {}
            _ => continue,
        }
        let meta = file.metadata()?;
        if meta.len() > MAX_CONFIG {
            return Err(io::Error::other(format!(
                "{} bytes is too large for a configuration file; left as it is",
                meta.len()
            )));
        }
        if !created && let Some(refusal) = platform::read_only(&meta, &target) {
            return Err(io::Error::other(refusal));
        }
        let existed = (!created).then(|| (platform::mode_of(&meta), platform::links(&meta)));
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        return Ok(Some(Locked {
            target,
            bytes,
            existed,
            created_dirs,
            _file: platform::KEEP_OPEN_WHILE_EDITING.then_some(file),
            _lock: edit_lock,
        }));
    }
    Err(io::Error::other(
        "the file kept changing while waiting for its lock",
    ))
}

impl Locked {
    /// Backs the file up (when it existed), then replaces it with `bytes` by temp + rename.
    /// The new file keeps the old one's mode; a file this run created gets 0600 when
    /// `private`, else the umask's default.
    /// Backups go to `backups` when given (a project file's, kept outside the project), else
    /// beside the file.
    pub(crate) fn commit(
        &self,
        bytes: &[u8],
        private: bool,
        backups: Option<&Path>,
    ) -> Result<Saved, String> {
        let shown = self.target.display();
        clean_leftovers(&self.target);
        let mut notes = Vec::new();
        let backup = match self.existed {
            Some(_) if self.bytes.is_empty() => None,
            Some((mode, _)) => Some(
                backup_bytes(
                    backups.unwrap_or_else(|| folder_of(&self.target)),
                    &file_name(&self.target),
                    &self.bytes,
                    mode,
                )
                .map_err(|e| format!("{shown}: cannot make a backup, nothing written: {e}"))?,
            ),
            None => None,
        };
        let mode = match self.existed {
            Some((mode, _)) => Some(mode),
            None if private => Some(0o600),
            None => None,
        };
        let tmp = temp_beside(&self.target, "tmp", bytes, mode)
            .map_err(|e| format!("{shown}: cannot write: {e}"))?;
        fs::rename(&tmp, &self.target).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            format!("{shown}: cannot write: {e}")
        })?;
        if let Some((_, links)) = self.existed.filter(|(_, n)| *n > 1) {
            notes.push(format!(
                "{shown} had {links} hard links: the new file replaced this one only, the other links keep the old content"
            ));
        }
        if let Some(b) = &backup {
            prune_backups(folder_of(b), &file_name(&self.target));
        }
        Ok(Saved { backup, notes })
    }

    /// Removes the file (which this program created and which now holds nothing), then those
    /// of `folders` that are empty, innermost first. What cannot be removed stays.
    pub(crate) fn remove_file(self, folders: &[PathBuf]) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        if fs::remove_file(&self.target).is_ok() {
            removed.push(self.target.clone());
        }
        drop(self);
        for dir in folders.iter().rev() {
            // Fails, leaving it, unless it is an empty folder.
            if fs::remove_dir(dir).is_ok() {
                removed.push(dir.clone());
            }
        }
        removed
    }
}

/// Replaces (or creates) `path` with `bytes` atomically, keeping the old file's permissions; a
/// symlink's target is written. Refuses what is not a regular file. Makes the parent folders.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    // The target is no symlink: what `replace_entry` replaces is the file itself.
    replace_entry(&write_target(path)?, bytes)
}

/// Replaces the directory entry `path` itself with a file holding `bytes` (temp + rename in
/// its folder): a symlink there is replaced by the file, its target is never written. Refuses a
/// folder, FIFO, device or socket.
pub(crate) fn replace_entry(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mode = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => None,
        Ok(m) => {
            if let Some(refused) = not_regular(&m) {
                return Err(refused);
            }
            Some(platform::mode_of(&m))
        }
        Err(_) => None,
    };
    let tmp = temp_beside(path, "tmp", bytes, mode)?;
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// Creates `path` with `bytes`; fails with `AlreadyExists` (and writes nothing) when it exists
/// (also as a dangling symlink). Makes the parent folders.
pub(crate) fn create_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_beside(path, "tmp", bytes, None)?;
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

/// Writes a backup of `bytes` in `dir`, named `NAME.bak-YYYYMMDD-HHMMSS` (UTC; `-N` added when
/// taken), through a temporary file: a killed run never leaves a truncated backup.
fn backup_bytes(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> io::Result<PathBuf> {
    let stamp =
        chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now()).format("%Y%m%d-%H%M%S");
    let target = dir.join(name);
    let target = target.as_path();
    let tmp = temp_beside(target, "baktmp", bytes, Some(mode))?;
    for n in 0..1000 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let candidate = target.with_file_name(format!("{name}.bak-{stamp}{suffix}"));
        // A hard link never replaces an existing entry (nor follows a symlink there).
        match fs::hard_link(&tmp, &candidate) {
            Ok(()) => {
                let _ = fs::remove_file(&tmp);
                return Ok(candidate);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(_) if fs::symlink_metadata(&candidate).is_err() => {
                // No hard links here: a rename to a free name.
                return fs::rename(&tmp, &candidate)
                    .map(|()| candidate)
                    .inspect_err(|_| {
                        let _ = fs::remove_file(&tmp);
                    });
            }
            Err(_) => continue,
        }
    }
    let _ = fs::remove_file(&tmp);
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free backup name beside {}", target.display()),
    ))
}

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into())
}

/// The backups of the file `name` in `dir` this program made, oldest first.
fn backups_of(dir: &Path, name: &str) -> Vec<PathBuf> {
    let prefix = format!("{name}.bak-");
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<((String, u32), PathBuf)> = Vec::new();
    for e in read.flatten() {
        let Some(n) = e.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let Some(rest) = n.strip_prefix(&prefix) else {
            continue;
        };
        // YYYYMMDD-HHMMSS, then nothing or -N.
        let (stamp, count) = rest.split_at(rest.len().min(15));
        let stamp_ok = stamp.len() == 15
            && stamp.bytes().enumerate().all(|(i, b)| {
                if i == 8 {
                    b == b'-'
                } else {
                    b.is_ascii_digit()
                }
            });
        let count = match count.strip_prefix('-') {
            None if count.is_empty() => Some(0),
            Some(c) if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) => c.parse().ok(),
            _ => None,
        };
        let is_file = e.file_type().is_ok_and(|t| t.is_file());
        if let (true, Some(count), true) = (stamp_ok, count, is_file) {
            found.push(((stamp.to_owned(), count), e.path()));
        }
    }
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// Removes all but the newest [`KEEP_BACKUPS`] backups of the file `name` in `dir`.
fn prune_backups(dir: &Path, name: &str) {
    let all = backups_of(dir, name);
    let extra = all.len().saturating_sub(KEEP_BACKUPS);
    for old in &all[..extra] {
        let _ = fs::remove_file(old);
    }
}

/// Removes temporary files of ours beside `target` whose process is gone (a killed run).
fn clean_leftovers(target: &Path) {
    let name = file_name(target);
    let Ok(read) = fs::read_dir(folder_of(target)) else {
        return;
    };
    for e in read.flatten() {
        let Some(n) = e.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let Some(rest) = n
            .strip_prefix(&format!(".{name}."))
            .and_then(|r| r.strip_prefix("tmp-").or_else(|| r.strip_prefix("baktmp-")))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if !platform::alive(pid) && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Writes `bytes` to a new hidden temporary file `.NAME.KIND-PID-N` in `path`'s folder (made if
/// missing): written, given `mode` (created 0600 until then) or a new file's mode, synced.
fn temp_beside(path: &Path, kind: &str, bytes: &[u8], mode: Option<u32>) -> io::Result<PathBuf> {
    let dir = folder_of(path);
    fs::create_dir_all(dir)?;
    let name = file_name(path);
    for n in 0..1000u32 {
        let tmp = dir.join(format!(".{name}.{kind}-{}-{n}", std::process::id()));
        let mut o = OpenOptions::new();
        o.write(true).create_new(true);
        // A given mode is set once the bytes are written (only the owner may read them
        // meanwhile); without one the file gets a new file's mode (the kernel applies the umask).
        if mode.is_some() {
            platform::owner_only(&mut o);
        }
        match o.open(&tmp) {
            Ok(mut f) => {
                let written = f.write_all(bytes).and_then(|()| {
                    if let Some(mode) = mode {
                        platform::set_mode(&f, mode)?;
                    }
                    f.sync_all()
                });
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
        let a = backup_bytes(dir.path(), "c.json", b"v1", 0o600).unwrap();
        let b = backup_bytes(dir.path(), "c.json", b"v2", 0o600).unwrap();
        assert_eq!(a.parent(), p.parent());
        assert_ne!(a, b);
        assert_eq!(fs::read(&a).unwrap(), b"v1");
        assert_eq!(fs::read(&b).unwrap(), b"v2");
    }
}
