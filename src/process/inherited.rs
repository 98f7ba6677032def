//! The server's own environment, read once: what every process it starts inherits, with its
//! tool's `env` on top.
//!
//! Reading it at every start (`std::env::vars_os`: a lock, a copy of every variable into a map,
//! then a C string each, twice with the size check) was about a tenth of the routing thread's
//! time in a `tools/call` of `true`. The server never changes its own environment (nothing in
//! the crate calls `set_var`), so it is read at the first process start and kept as `execve`
//! takes it: `NAME=value` C strings, sorted by name, that every start points at.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::sync::OnceLock;

/// The inherited environment (see the module's comment).
pub(crate) struct Inherited {
    /// Sorted by name, one per name (the last of duplicates, as a map built from `vars_os`
    /// keeps).
    vars: Vec<Var>,
    /// `arg_size` summed over `vars`.
    size: usize,
}

/// One variable as `execve` takes it.
struct Var {
    /// `NAME=value`.
    entry: CString,
    name_len: usize,
}

impl Var {
    fn name(&self) -> &OsStr {
        OsStr::from_bytes(&self.entry.as_bytes()[..self.name_len])
    }
}

/// The bytes a string of `len` bytes takes in `execve`'s argument area: the string, its NUL and
/// its pointer.
pub(crate) fn arg_size(len: usize) -> usize {
    len + 1 + std::mem::size_of::<usize>()
}

/// The server's environment, read at the first call.
pub(crate) fn inherited() -> &'static Inherited {
    static INHERITED: OnceLock<Inherited> = OnceLock::new();
    INHERITED.get_or_init(|| Inherited::from_vars(std::env::vars_os()))
}

impl Inherited {
    fn from_vars(vars: impl Iterator<Item = (OsString, OsString)>) -> Inherited {
        let map: BTreeMap<OsString, OsString> = vars.collect();
        let vars: Vec<Var> = map
            .into_iter()
            .filter_map(|(name, value)| {
                let name_len = name.len();
                let mut entry = name;
                entry.push("=");
                entry.push(value);
                // A NUL cannot be passed (and never comes from `environ`).
                let entry = CString::new(entry.into_vec()).ok()?;
                Some(Var { entry, name_len })
            })
            .collect();
        let size = vars
            .iter()
            .map(|v| arg_size(v.entry.as_bytes().len()))
            .sum();
        Inherited { vars, size }
    }

    /// The inherited `PATH`.
    pub(crate) fn path(&self) -> Option<&OsStr> {
        let var = self.find(OsStr::new("PATH"))?;
        Some(OsStr::from_bytes(&var.entry.as_bytes()[var.name_len + 1..]))
    }

    fn find(&self, name: &OsStr) -> Option<&Var> {
        self.vars
            .binary_search_by(|v| v.name().cmp(name))
            .ok()
            .map(|i| &self.vars[i])
    }

    /// The bytes of the inherited variables in `execve`'s argument area, less those named in
    /// `replaced` (a name given twice counts once).
    pub(crate) fn size_without<'a>(&self, replaced: impl Iterator<Item = &'a OsStr>) -> usize {
        let mut names: Vec<&OsStr> = replaced.collect();
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .filter_map(|n| self.find(n))
            .fold(self.size, |total, v| {
                total - arg_size(v.entry.as_bytes().len())
            })
    }

    /// The environment a process starts with, as `execve`'s NULL-terminated `envp`: these
    /// variables with `changes` applied (a name set to a value, or removed with `None`), sorted
    /// by name. Pointers go into `self` (kept for the process's life) and into the C strings of
    /// the changed variables, which are pushed onto `owned` (their bytes do not move when
    /// `owned` grows). A name or value with a NUL is left out.
    pub(crate) fn envp(
        &'static self,
        changes: &BTreeMap<&OsStr, Option<&OsStr>>,
        owned: &mut Vec<CString>,
    ) -> Vec<*const libc::c_char> {
        let mut out = Vec::with_capacity(self.vars.len() + changes.len() + 1);
        let mut set = |name: &OsStr, value: &OsStr, out: &mut Vec<*const libc::c_char>| {
            let mut entry = name.to_owned();
            entry.push("=");
            entry.push(value);
            if let Ok(c) = CString::new(entry.into_vec()) {
                out.push(c.as_ptr());
                owned.push(c);
            }
        };
        let mut changes = changes.iter().peekable();
        for var in &self.vars {
            while let Some((name, value)) = changes.next_if(|(n, _)| **n < var.name()) {
                if let Some(value) = value {
                    set(name, value, &mut out);
                }
            }
            match changes.next_if(|(n, _)| **n == var.name()) {
                Some((name, Some(value))) => set(name, value, &mut out),
                Some((_, None)) => {}
                None => out.push(var.entry.as_ptr()),
            }
        }
        for (name, value) in changes {
            if let Some(value) = value {
                set(name, value, &mut out);
            }
        }
        out.push(std::ptr::null());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaked(vars: &[(&str, &str)]) -> &'static Inherited {
        Box::leak(Box::new(Inherited::from_vars(
            vars.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        )))
    }

    fn strings(envp: &[*const libc::c_char]) -> Vec<String> {
        assert!(envp.last().is_some_and(|p| p.is_null()));
        envp[..envp.len() - 1]
            .iter()
            // SAFETY: every pointer but the last is a live C string (see `envp`).
            .map(|p| {
                unsafe { std::ffi::CStr::from_ptr(*p) }
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    #[test]
    fn changes_are_merged_in_name_order_and_removals_drop_a_variable() {
        let base = leaked(&[("HOME", "/h"), ("PATH", "/bin"), ("B", "1"), ("B", "2")]);
        assert_eq!(base.path(), Some(OsStr::new("/bin")));
        let mut owned = Vec::new();
        let none = BTreeMap::new();
        // The last of two, sorted by name.
        assert_eq!(
            strings(&base.envp(&none, &mut owned)),
            ["B=2", "HOME=/h", "PATH=/bin"]
        );
        assert!(owned.is_empty(), "nothing copied when nothing changes");
        let changes: BTreeMap<&OsStr, Option<&OsStr>> = [
            (OsStr::new("A"), Some(OsStr::new("first"))),
            (OsStr::new("HOME"), None),
            (OsStr::new("PATH"), Some(OsStr::new("/x:/bin"))),
            (OsStr::new("Q"), Some(OsStr::new("q=r"))),
            (OsStr::new("ZZ"), None),
            (OsStr::new("NUL"), Some(OsStr::new("a\0b"))),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            strings(&base.envp(&changes, &mut owned)),
            ["A=first", "B=2", "PATH=/x:/bin", "Q=q=r"]
        );
        assert_eq!(owned.len(), 3);
    }

    #[test]
    fn the_size_leaves_out_replaced_variables_once() {
        let base = leaked(&[("A", "xy"), ("BB", "z")]);
        let a = arg_size("A=xy".len());
        let b = arg_size("BB=z".len());
        assert_eq!(base.size_without(std::iter::empty()), a + b);
        let names = [OsStr::new("A"), OsStr::new("A"), OsStr::new("NEW")];
        assert_eq!(base.size_without(names.into_iter()), b);
        // What the process really inherits, against a fresh read of it.
        let real = inherited();
        let fresh: usize = std::env::vars_os()
            .collect::<BTreeMap<_, _>>()
            .iter()
            .map(|(k, v)| arg_size(k.len() + 1 + v.len()))
            .sum();
        assert_eq!(real.size_without(std::iter::empty()), fresh);
        assert_eq!(real.path(), std::env::var_os("PATH").as_deref());
    }
}
