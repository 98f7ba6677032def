//! `[files.NAME]`: the section's checks.

use std::time::Duration;

use super::raw::{self, Key, Sp};
use super::{Checker, DEFAULT_FILES_POLL, Files, Loc};

impl Checker<'_> {
    pub(crate) fn files(&mut self, key: &Key, f: &raw::RawFiles) -> Files {
        let globs = |this: &mut Self, list: &Option<Vec<Sp<String>>>| -> Vec<(String, Loc)> {
            let mut out = Vec::new();
            for g in list.iter().flatten() {
                if let Err(e) = globset::Glob::new(g.get()) {
                    this.err(g, format!("invalid glob `{}`: {}", g.get(), e.kind()));
                }
                out.push((g.get().clone(), this.loc(g)));
            }
            out
        };
        let include = match &f.include {
            None => vec![("**/*".to_owned(), self.loc(key))],
            Some(_) => globs(self, &f.include),
        };
        let exclude = globs(self, &f.exclude);
        let poll_interval = self.duration(&f.poll_interval, DEFAULT_FILES_POLL);
        if let Some(t) = &f.poll_interval
            && poll_interval < Duration::from_millis(100)
        {
            self.err(
                t,
                format!(
                    "[files.{}] `poll_interval` must be at least 100ms",
                    key.get()
                ),
            );
        }
        let (watch, poll) = match f.watch {
            None | Some(raw::RawWatch::On(true)) => (true, None),
            Some(raw::RawWatch::On(false)) => (false, None),
            Some(raw::RawWatch::Poll) => (true, Some(poll_interval)),
        };
        Files {
            name: key.get().clone(),
            loc: self.loc(key),
            root: self.path(f.root.get()),
            root_loc: self.loc(&f.root),
            include,
            exclude,
            gitignore: f.gitignore.unwrap_or(true),
            hidden: f.hidden.unwrap_or(false),
            max_size: self.max_size(&f.max_size),
            watch,
            poll,
            description: Self::text(&f.description),
            search: f.search.unwrap_or(true),
        }
    }
}
