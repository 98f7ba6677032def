//! The server's own environment, read once: what every process it starts inherits (with its
//! tool's `env` on top), for the `PATH` programs are looked up in and for the size check of
//! `argv::too_large`. The server never changes its own environment (nothing in the crate calls
//! `set_var`).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::sync::OnceLock;

/// The inherited environment: each variable's name, value and size as passed to a program.
pub(crate) struct Inherited {
    vars: BTreeMap<OsString, (OsString, usize)>,
    /// `arg_size` summed over `vars`.
    size: usize,
}

/// The bytes a string of `len` bytes takes in the system's argument area: the string, its NUL
/// and its pointer.
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
        let vars: BTreeMap<OsString, (OsString, usize)> = vars
            .map(|(name, value)| {
                let size = arg_size(name.len() + 1 + value.len());
                (name, (value, size))
            })
            .collect();
        let size = vars.values().map(|(_, s)| s).sum();
        Inherited { vars, size }
    }

    /// The inherited `PATH`.
    pub(crate) fn path(&self) -> Option<&OsStr> {
        self.vars
            .get(OsStr::new("PATH"))
            .map(|(v, _)| v.as_os_str())
    }

    /// The bytes of the inherited variables in the argument area, less those named in
    /// `replaced` (a name given twice counts once).
    pub(crate) fn size_without<'a>(&self, replaced: impl Iterator<Item = &'a OsStr>) -> usize {
        let mut names: Vec<&OsStr> = replaced.collect();
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .filter_map(|n| self.vars.get(n))
            .fold(self.size, |total, (_, size)| total - size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_leaves_out_replaced_variables_once() {
        let base = Inherited::from_vars(
            [("A", "xy"), ("BB", "z"), ("BB", "zz")]
                .into_iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        let a = arg_size("A=xy".len());
        let b = arg_size("BB=zz".len());
        assert_eq!(
            base.size_without(std::iter::empty()),
            a + b,
            "the last of two"
        );
        let names = [OsStr::new("A"), OsStr::new("A"), OsStr::new("NEW")];
        assert_eq!(base.size_without(names.into_iter()), b);
        let real = inherited();
        assert_eq!(real.path(), std::env::var_os("PATH").as_deref());
    }
}
