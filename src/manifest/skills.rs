//! `[skills.NAME]`: the section's checks.

use super::raw;
use super::{Checker, Skills, about};

impl Checker<'_> {
    pub(crate) fn skills(&mut self, key: &raw::Key, s: &raw::RawSkills) -> Skills {
        if let Some(p) = &s.prefix
            && !about::valid_prefix(p.get())
        {
            self.err(
                p,
                format!(
                    "[skills.{}] `prefix` must be `/`-separated segments of letters, digits, `.`, `-`, `_`, `~`, found `{}`",
                    key.get(),
                    p.get()
                ),
            );
        }
        Skills {
            name: key.get().clone(),
            loc: self.loc(key),
            root: self.path(s.root.get()),
            root_loc: self.loc(&s.root),
            gitignore: s.gitignore.unwrap_or(true),
            watch: s.watch.unwrap_or(true),
            prefix: s
                .prefix
                .as_ref()
                .map(|p| p.get().clone())
                .filter(|p| about::valid_prefix(p)),
        }
    }
}
