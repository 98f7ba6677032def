//! Setting up a user's machine: `init` (a starter manifest from what a folder holds) and
//! `register` / `unregister` (this server in an MCP client's configuration file). Nothing here
//! serves anything; it writes files the user asked for, never one it was not asked to touch.

pub(crate) mod clients;
pub(crate) mod init;
mod json;
pub(crate) mod platform;
pub(crate) mod register;
pub(crate) mod state;
mod write;

pub use clients::Client;
pub(crate) use write::{
    create_new as create_file, entry_kind, replace as write_file, replace_entry,
};

use std::ffi::OsString;
use std::path::PathBuf;

/// Where a verb reads `HOME`, `APPDATA`, `XDG_CONFIG_HOME`, `CODEX_HOME`: the process environment
/// in the binary, a map in unit tests.
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The process environment, for [`Env`].
pub(crate) fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// The home folder: `HOME`, else (Windows) `USERPROFILE`.
pub(crate) fn home_dir(env: Env) -> Option<PathBuf> {
    env("HOME")
        .or_else(|| env("USERPROFILE"))
        .map(PathBuf::from)
}

/// `~/rest` → `HOME/rest`; anything else unchanged (also when no home folder is known).
pub(crate) fn expand_home(path: &std::path::Path, env: Env) -> PathBuf {
    let Some(text) = path.to_str() else {
        return path.to_path_buf();
    };
    if text == "~" {
        return home_dir(env).unwrap_or_else(|| path.to_path_buf());
    }
    match text.strip_prefix("~/") {
        Some(rest) => match home_dir(env) {
            Some(home) => home.join(rest),
            None => path.to_path_buf(),
        },
        None => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn expands_a_leading_tilde_only() {
        let env = |k: &str| (k == "HOME").then(|| OsString::from("/home/u"));
        assert_eq!(
            expand_home(Path::new("~/a/b.toml"), &env),
            Path::new("/home/u/a/b.toml")
        );
        assert_eq!(expand_home(Path::new("~"), &env), Path::new("/home/u"));
        assert_eq!(expand_home(Path::new("a/~/b"), &env), Path::new("a/~/b"));
        assert_eq!(
            expand_home(Path::new("~user/x"), &env),
            Path::new("~user/x")
        );
        let none = |_: &str| None;
        assert_eq!(expand_home(Path::new("~/x"), &none), Path::new("~/x"));
    }
}
