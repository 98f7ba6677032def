//! `[git.NAME]`: the section's checks.

use super::raw::{self, Key};
use super::{Checker, Git};

impl Checker<'_> {
    pub(crate) fn git(&mut self, key: &Key, g: &raw::RawGit) -> Git {
        Git {
            name: key.get().clone(),
            loc: self.loc(key),
            path: self.path(g.path.get()),
            path_loc: self.loc(&g.path),
            log_limit: g.log_limit.as_ref().map_or(50, |r| *r.get()),
            watch: g.watch.unwrap_or(true),
            description: Self::text(&g.description),
            commit_tool: None,
            file_tool: None,
        }
    }
}
