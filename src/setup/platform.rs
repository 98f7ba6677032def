//! The one place in setup/ that knows which operating system it runs on: the folders clients
//! keep their files in (per OS, from the environment), the program's file name, where backups
//! and setup's own state go, and what an edit of a configuration file does with the file system
//! (the lock it holds, file modes, read-only files, telling files apart). Callers pass an [`Os`]
//! and an [`Env`]; none of them tests `cfg(...)`, so every OS's table is tested on Linux
//! (`clients::tests::config_paths_per_os_and_scope`).
//!
//! Files: Unix keeps a file's mode (an edit keeps it; a new file gets `0666 & !umask`, its
//! temporary copy 0600 until complete) and its link count; Windows has no modes (its ACLs are
//! inherited from the folder) and refuses a file with the read-only attribute.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use super::{Env, home_dir};

/// The operating system whose paths apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Os {
    Mac,
    Windows,
    Linux,
}

impl Os {
    pub(crate) fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::Mac
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }

    /// The program's file name on this OS.
    pub(crate) fn exe_name(self) -> &'static str {
        match self {
            Os::Windows => "mcp-manifest.exe",
            _ => "mcp-manifest",
        }
    }
}

/// The folders of one user on one OS, read from `env`.
#[derive(Clone, Copy)]
pub(crate) struct Dirs<'a> {
    pub os: Os,
    pub env: Env<'a>,
}

impl Dirs<'_> {
    /// The home folder: `HOME`, else `USERPROFILE`; must be absolute.
    pub(crate) fn home(&self) -> Result<PathBuf, String> {
        let h = home_dir(self.env).ok_or_else(|| {
            "cannot find your home folder: HOME (or USERPROFILE) is not set".to_owned()
        })?;
        absolute_var("HOME", h)
    }

    /// A folder named by the variable `var` when set (it must be absolute), else `default`.
    pub(crate) fn var_or(
        &self,
        var: &str,
        default: impl FnOnce() -> Result<PathBuf, String>,
    ) -> Result<PathBuf, String> {
        match (self.env)(var).map(PathBuf::from) {
            Some(p) => absolute_var(var, p),
            None => default(),
        }
    }

    /// The user's configuration folder in the XDG sense: XDG_CONFIG_HOME when absolute (a
    /// relative one is ignored, as the XDG spec says), else ~/.config. Also what tools built on
    /// xdg-basedir (opencode) use on macOS and Windows.
    pub(crate) fn xdg_config(&self) -> Result<PathBuf, String> {
        // `has_root`: absolute for the OS whose table this is, judged on any host (`/x` is
        // not absolute to Windows, which still computes the Linux paths in tests).
        match (self.env)("XDG_CONFIG_HOME").map(PathBuf::from) {
            Some(p) if p.has_root() => Ok(p),
            _ => Ok(self.home()?.join(".config")),
        }
    }

    /// Where desktop applications keep per-user settings: ~/Library/Application Support
    /// (macOS), %APPDATA% (Windows, roaming), XDG_CONFIG_HOME or ~/.config (Linux).
    pub(crate) fn app_config(&self) -> Result<PathBuf, String> {
        match self.os {
            Os::Mac => Ok(self.home()?.join("Library").join("Application Support")),
            Os::Windows => self.var_or("APPDATA", || {
                Ok(self.home()?.join("AppData").join("Roaming"))
            }),
            Os::Linux => self.xdg_config(),
        }
    }

    /// Where setup keeps its own state (backups of project files, the files it created):
    /// XDG_STATE_HOME or ~/.local/state (Linux), ~/Library/Application Support (macOS),
    /// %LOCALAPPDATA% (Windows); then `mcp-manifest`. Never inside a project.
    pub(crate) fn state(&self) -> Result<PathBuf, String> {
        let base = match self.os {
            Os::Mac => self.home()?.join("Library").join("Application Support"),
            Os::Windows => self.var_or("LOCALAPPDATA", || {
                Ok(self.home()?.join("AppData").join("Local"))
            })?,
            Os::Linux => match (self.env)("XDG_STATE_HOME").map(PathBuf::from) {
                Some(p) if p.has_root() => p,
                _ => self.home()?.join(".local").join("state"),
            },
        };
        Ok(base.join("mcp-manifest"))
    }
}

/// `path` from the variable `var` when it is absolute: a relative one would put the file
/// wherever the command happens to run.
pub(crate) fn absolute_var(var: &str, path: PathBuf) -> Result<PathBuf, String> {
    // A Windows path (C:\..., \\server\...) is absolute on Windows only; accept its shape.
    let text = path.to_string_lossy();
    let windows_abs = text.as_bytes().get(1) == Some(&b':') || text.starts_with("\\\\");
    if path.is_absolute() || path.has_root() || windows_abs {
        Ok(path)
    } else {
        Err(format!(
            "{var} is `{}`, a relative path: it must be absolute (a `~` is not expanded in an environment variable); nothing written",
            path.display()
        ))
    }
}

/// Holds the lock of an edit until dropped.
pub(crate) struct EditLock {
    _file: Option<File>,
}

/// Whether the file being edited stays open until its replacement is in place (Unix: the lock
/// lives on it). Windows closes it once read: a file open elsewhere cannot be replaced by a
/// rename there (unless both sides opt in to POSIX semantics; never under Wine).
pub(crate) const KEEP_OPEN_WHILE_EDITING: bool = cfg!(unix);

/// The exclusive lock for an edit of the configuration file `target`, taken before the file is
/// opened, waiting for it: Windows' (`LockFileEx` through std's `File::lock`) on a lock file of
/// its own in the temp folder, named by a hash of the target's path, so that no run holds the
/// target open while another replaces it. Unix: `None` (the lock is `flock` on the file
/// itself, `lock_open_for_edit`). Advisory on both: it orders concurrent `register`s
/// (tests/it/setup.rs `concurrent_registers_keep_every_entry`), it does not stop an editor.
pub(crate) fn lock_path_for_edit(target: &Path) -> io::Result<EditLock> {
    if KEEP_OPEN_WHILE_EDITING {
        return Ok(EditLock { _file: None });
    }
    use sha2::{Digest, Sha256};
    // Windows paths compare without case.
    let key = Sha256::digest(target.to_string_lossy().to_lowercase().as_bytes());
    let name: String = key[..12].iter().map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join("mcp-manifest-locks");
    std::fs::create_dir_all(&dir)?;
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(format!("{name}.lock")))?;
    lock.lock()?;
    Ok(EditLock { _file: Some(lock) })
}

/// Locks the open configuration file for the edit, waiting for it: `flock` (std's
/// `File::lock`), released when the file is closed (Unix); nothing where
/// `lock_path_for_edit` holds the lock (Windows).
pub(crate) fn lock_open_for_edit(file: &File) -> io::Result<()> {
    if KEEP_OPEN_WHILE_EDITING {
        file.lock()?;
    }
    Ok(())
}

/// Whether two metadata describe the same file: device and inode on Unix; elsewhere the size,
/// creation and modification times (a file replaced by a rename differs in one of them).
pub(crate) fn same_entry(a: &Metadata, b: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        a.len() == b.len()
            && a.created().ok() == b.created().ok()
            && a.modified().ok() == b.modified().ok()
    }
}

/// What a file that is neither a regular file nor a folder is, for messages (`is a FIFO (named
/// pipe)`, `is a device`, `is a socket`); `None` when the platform has no word for it.
pub(crate) fn special_kind(t: &FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("is a FIFO (named pipe)");
        }
        if t.is_char_device() || t.is_block_device() {
            return Some("is a device");
        }
        if t.is_socket() {
            return Some("is a socket");
        }
    }
    #[cfg(not(unix))]
    let _ = t;
    None
}

/// A file created by `o` is readable and writable by its owner only (Unix: mode 0600; Windows:
/// the folder's ACL, as every file).
pub(crate) fn owner_only(o: &mut OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(o, 0o600);
    #[cfg(not(unix))]
    let _ = o;
}

/// `o` opens without waiting on a FIFO (Unix: `O_NONBLOCK`; Windows has no FIFO in its file
/// system).
pub(crate) fn non_blocking(o: &mut OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(o, libc::O_NONBLOCK);
    #[cfg(not(unix))]
    let _ = o;
}

/// The refusal to edit a file its owner cannot write (Unix: no owner write bit; Windows: the
/// read-only attribute), saying how to allow it; `None` when it may be edited.
pub(crate) fn read_only(meta: &Metadata, path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.mode() & 0o200 == 0).then(|| {
            format!(
                "the file is read-only (mode {:04o}); left as it is. To let mcp-manifest edit it: chmod u+w {}",
                meta.mode() & 0o7777,
                path.display()
            )
        })
    }
    #[cfg(not(unix))]
    {
        meta.permissions().readonly().then(|| {
            format!(
                "the file is read-only (its read-only attribute); left as it is. To let mcp-manifest edit it: attrib -r \"{}\"",
                path.display()
            )
        })
    }
}

/// The permission bits an edit keeps (Unix); 0o644 where there are none (Windows).
pub(crate) fn mode_of(meta: &Metadata) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.mode() & 0o7777
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0o644
    }
}

/// How many names the file has (an edit of a file with several tells the user: the others keep
/// the old content). Windows: 1 (hard links there are rare, and std does not say).
pub(crate) fn links(meta: &Metadata) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.nlink()
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        1
    }
}

/// Gives the open file `mode` (Unix); nothing on Windows.
pub(crate) fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (file, mode);
        Ok(())
    }
}

/// Whether process `pid` still runs (its temporary files are left alone while it does).
pub(crate) fn alive(pid: i32) -> bool {
    #[cfg(unix)]
    {
        match rustix::process::Pid::from_raw(pid) {
            Some(p) => !matches!(
                rustix::process::test_kill_process(p),
                Err(rustix::io::Errno::SRCH)
            ),
            None => true,
        }
    }
    #[cfg(windows)]
    {
        use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
        use windows_sys::Win32::System::Threading::{
            GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
        };
        let Ok(pid) = u32::try_from(pid) else {
            return true;
        };
        // SAFETY: the handle is checked, queried once and closed here.
        unsafe {
            let handle = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
            if handle.is_null() {
                // No such process (or one we may not look at: assume it runs).
                return std::io::Error::last_os_error().raw_os_error() != Some(87);
            }
            let mut code = 0u32;
            let ok = GetExitCodeProcess(handle, &mut code);
            CloseHandle(handle);
            ok == 0 || code == STILL_ACTIVE as u32
        }
    }
}
