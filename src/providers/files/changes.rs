//! What a files source asks of the watcher (the folders to watch) and what a batch of changes
//! means for it: caches dropped, `list_changed` only when a visible file came or went,
//! `updated` for the subscribed files a change touches.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::FilesSource;
use crate::providers::ChangeEffect;
use crate::providers::visible::Frames;
use crate::scopeguard;
use crate::watch::{Change, ChangeKind};

/// Files of a folder that came named one by one at most (beyond, a change there is said to
/// every session: naming them would cost a walk as long as the folder).
const NAMED_AT_MOST: usize = 1000;

impl FilesSource {
    /// Whether a listed file lives at `path` (used to decide between updated and list_changed).
    pub(super) fn is_listed(&self, path: &Path) -> bool {
        match self.rel_of(path).as_deref() {
            Some("") => self.root_is_file,
            Some(rel) => {
                !self.root_is_file
                    && self.visible(rel)
                    && fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
            }
            None => false,
        }
    }

    /// `path` below the root as the source names it: `/`-separated on every platform (Windows
    /// gives `\`), as listed, matched by the rules and turned into URIs. `None` outside the
    /// root or not UTF-8.
    fn rel_of(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.root).ok()?.to_str()?;
        Some(rel.replace(std::path::MAIN_SEPARATOR, "/"))
    }

    /// The folders to watch for this source (blocking: walks the visible folders): the root's
    /// parent too, so the root itself going away or coming back is seen.
    pub(super) fn watch_dirs_blocking(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if !self.watch {
            return out;
        }
        if let Some(parent) = self.root.parent() {
            out.push(parent.to_path_buf());
        }
        // Until the watches asked for are in place, nothing kept can count on them.
        self.arm(false);
        if !self.root_is_file {
            out.extend(self.vis.rules_dirs());
            out.push(self.root.clone());
            let mut frames = self.vis.frames();
            let from = out.len();
            self.walk_dirs(&self.root, &mut frames, &mut out);
            if let Ok(mut seen) = self.folders_seen.lock() {
                *seen = out[from..].iter().cloned().collect();
            }
        }
        out
    }

    /// The watches are in place (`ready`) or being set up: either way, what was kept before
    /// (the listing, the ignore rules, kept reads' checks) is dropped, and kept again only once
    /// they are in place.
    pub(super) fn arm(&self, ready: bool) {
        self.armed.store(ready, Ordering::Release);
        self.vis.forget_all();
        self.drop_listing();
        self.changes_seen.fetch_add(1, Ordering::Release);
    }

    /// Drops the kept listing; a walk under way keeps nothing either (`listing_epoch`).
    pub(super) fn drop_listing(&self) {
        let mut l = self.listing.lock().unwrap_or_else(|e| e.into_inner());
        *l = None;
        self.listing_stamp.store(0, Ordering::Release);
        self.listing_epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// The visible folders below `dir` (whose rules are not yet in `frames`), depth first.
    pub(super) fn walk_dirs(&self, dir: &Path, frames: &mut Frames, out: &mut Vec<PathBuf>) {
        let Ok(read) = fs::read_dir(dir) else { return };
        let entered = self.vis.enter(frames, dir);
        for item in read.flatten() {
            let Ok(ft) = item.file_type() else { continue };
            if !ft.is_dir() {
                continue;
            }
            let Ok(name) = item.file_name().into_string() else {
                continue;
            };
            let path = item.path();
            if self.vis.entry_shown(&name, item.metadata().ok().as_ref())
                && !(frames.any() && frames.ignores(&path, true))
            {
                out.push(path.clone());
                self.walk_dirs(&path, frames, out);
            }
        }
        if entered {
            frames.pop();
        }
    }

    /// Applies a batch of changes (blocking): drops stale caches and says whether the list of
    /// resources changed and whether the set of watched folders must be recomputed.
    pub(super) fn apply_changes_blocking(&self, changes: &[Change]) -> ChangeEffect {
        // Kept reads check their rules again (after what follows drops the rules it must).
        let _bump = scopeguard(|| {
            self.changes_seen.fetch_add(1, Ordering::Release);
        });
        let mut effect = ChangeEffect::default();
        let old = self.listing.lock().ok().and_then(|l| l.clone());
        let mut touched = false;
        for c in changes {
            if c.is_rescan() || (self.root.starts_with(&c.path) && c.kind != ChangeKind::Modified) {
                // Events were lost, or the root itself (or a folder above it) came or went.
                touched = true;
                if let Ok(mut d) = self.root_dir.lock() {
                    *d = None;
                }
                self.vis.forget_all();
                effect.merge(ChangeEffect {
                    rewatch: true,
                    ..ChangeEffect::listed(None)
                });
                continue;
            }
            if let Some(dir) = self.vis.rules_changed_by(&c.path) {
                // An ignore file (or a repository's `info/exclude`) of this tree changed.
                touched = true;
                self.vis.forget(dir);
                effect.merge(ChangeEffect {
                    rewatch: true,
                    ..ChangeEffect::listed(None)
                });
                continue;
            }
            let Some(rel) = self.rel_of(&c.path) else {
                continue;
            };
            if self.root_is_file && !rel.is_empty() {
                continue;
            }
            let rel = rel.as_str();
            if !self.root_is_file && !self.vis.visible(rel) && !self.vis.dir_visible(rel) {
                // Hidden (a dot name, ignored, not included): nothing served came or went.
                continue;
            }
            touched = true;
            let is_dir = fs::symlink_metadata(&c.path).is_ok_and(|m| m.is_dir());
            let was_dir = c.kind == ChangeKind::Removed
                && self
                    .folders_seen
                    .lock()
                    .is_ok_and(|seen| seen.contains(&c.path));
            if is_dir || was_dir {
                // A folder came or went: its files did too.
                effect.rewatch = true;
                if c.kind == ChangeKind::Modified {
                    continue;
                }
                let prefix = format!("{rel}/");
                // Gone: listed files went with it (an empty one changes nothing); come: its
                // files did, if it holds few enough to name them.
                let gone = match &old {
                    Some(o) => Some(
                        o.iter()
                            .filter(|e| e.rel.starts_with(&prefix))
                            .map(|e| self.uri_of(&e.rel))
                            .collect::<Vec<_>>(),
                    ),
                    None if c.kind == ChangeKind::Created => Some(Vec::new()),
                    None => None,
                };
                let come = match is_dir {
                    true => self.files_below(&c.path, rel, NAMED_AT_MOST),
                    false => Some(Vec::new()),
                };
                let uris = gone.zip(come).map(|(mut gone, come)| {
                    gone.extend(come);
                    gone
                });
                // A folder that came is said even empty (as before groups): a file made in it
                // before its watch is in place is seen by a client listing after
                // `list_changed`, which comes once it is.
                if is_dir || uris.as_ref().is_none_or(|u| !u.is_empty()) {
                    effect.merge(ChangeEffect::listed(uris));
                }
                continue;
            }
            let now = self.is_listed(&c.path);
            let before = match &old {
                Some(o) => o
                    .binary_search_by(|e| {
                        e.rel
                            .as_str()
                            .cmp(if self.root_is_file { &e.rel } else { rel })
                    })
                    .is_ok(),
                // A removed file was there: listed if its path is served.
                None if c.kind == ChangeKind::Removed => self.vis.visible(rel),
                None => c.kind != ChangeKind::Created && now,
            };
            if before != now {
                effect.merge(ChangeEffect::listed(Some(vec![self.uri_of(rel)])));
            }
        }
        if touched {
            self.drop_listing();
        }
        effect
    }

    /// The URIs of the listed files below `dir` (`rel` below the root), or `None` when more
    /// than `limit` entries were looked at (or `dir` cannot be read).
    fn files_below(&self, dir: &Path, rel: &str, limit: usize) -> Option<Vec<String>> {
        let mut uris = Vec::new();
        let mut looked = 0;
        let mut todo = vec![(dir.to_path_buf(), rel.to_owned())];
        while let Some((dir, rel)) = todo.pop() {
            for item in fs::read_dir(&dir).ok()? {
                looked += 1;
                if looked > limit {
                    return None;
                }
                let item = item.ok()?;
                let Ok(name) = item.file_name().into_string() else {
                    continue;
                };
                let rel = format!("{rel}/{name}");
                // The entry's own type (a link is neither): what `is_listed` would stat again.
                let kind = item.file_type().ok()?;
                if kind.is_dir() {
                    if self.vis.dir_visible(&rel) {
                        todo.push((item.path(), rel));
                    }
                } else if kind.is_file() && self.visible(&rel) {
                    uris.push(self.uri_of(&rel));
                }
            }
        }
        Some(uris)
    }
}
