//! The one place in setup/ that knows which operating system it runs on: the folders clients
//! keep their files in (per OS, from the environment), the program's file name, where backups
//! and setup's own state go, and the file lock an edit holds. Callers pass an [`Os`] and an
//! [`Env`]; none of them tests `cfg(...)`, so every OS's table is tested on Linux
//! (`clients::tests::config_paths_per_os_and_scope`).

use std::fs::{File, Metadata};
use std::io;
use std::path::PathBuf;

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
        match (self.env)("XDG_CONFIG_HOME").map(PathBuf::from) {
            Some(p) if p.is_absolute() => Ok(p),
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
                Some(p) if p.is_absolute() => p,
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

/// Takes the exclusive lock of an open file, waiting for it: `flock` on Unix, `LockFileEx` on
/// Windows (both through std's `File::lock`). Released when the file is closed. Advisory on
/// Unix: it orders concurrent `register`s (tests/it/setup.rs
/// `concurrent_registers_keep_every_entry`), it does not stop an editor.
pub(crate) fn lock_exclusive(file: &File) -> io::Result<()> {
    file.lock()
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
