//! `[files.NAME]`: a folder (or one file) served as `file://` resources. This module holds the
//! source itself (`FilesSource`: its root, its rules, its caches) and its answers to the
//! `Source` calls, each delegated to the part that owns the job:
//! - `read`: opening and reading one file (race-free open, capped read, kept small reads);
//! - `list`: the listing, its pages, pages walked ahead (`ahead`), completion, search's paths;
//! - `walk`: the sorted walk of the visible files, with the folders kept sorted (`folders`);
//! - `changes`: the folders to watch and what a batch of changes means.
//!
//! What is hidden is `visible::Visibility`'s business (the one definition shared with `file`
//! templates, `check` and `init`); how a file is opened below a root is `paths`'.
//!
//! Invariant: a path is served only if the visibility accepts both the path asked for and the
//! real path the file was opened by, and it was opened below the root by `paths::open_beneath`
//! (no symlink leaving the root is followed, only regular files, checked on the descriptor
//! that is read). Listing and reading use the same rules, so what a client cannot list it
//! cannot read, and every way out (`..`, encoded separators, symlinks, races) answers "not
//! found" (`tests/it/files.rs`, `tests/it/safety.rs`, `tests/it/visibility.rs`).

mod ahead;
mod changes;
mod folders;
mod list;
mod read;
mod walk;

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use self::ahead::Ahead;
pub(crate) use self::list::PathList;
use self::list::Walked;
use self::read::ReadCache;
use super::paths::{self, OpenError, io_reason};
use super::platform;
use super::visible::Visibility;
use super::{
    BoxFut, ChangeEffect, Completion, CompletionRequest, Contents, PageOf, RequestError,
    ResourceInfo, Source, TemplateInfo, encode_path_into, on_blocking, on_blocking_or, ready,
};
use crate::manifest::{self, Diagnostics};
use crate::watch::{Change, ChangeKind};

/// The live files source.
#[derive(Debug)]
pub(crate) struct FilesSource {
    pub name: String,
    /// Canonical root.
    root: PathBuf,
    root_is_file: bool,
    /// `file://` + the encoded root, without a trailing slash.
    root_uri: String,
    /// What is hidden below the root (names, ignore files, `include` / `exclude`).
    vis: Visibility,
    max_size: u64,
    pub watch: bool,
    /// `watch = "poll"`: the folders are read this often instead of watched.
    poll: Option<std::time::Duration>,
    description: Option<String>,
    search: bool,
    /// The last listing; only kept while the source is watched and the watches are in place
    /// (see `changes.rs`).
    listing: Mutex<Option<Arc<Vec<Entry>>>>,
    /// Moves whenever `listing` is dropped: a walk begun before keeps nothing (it may have
    /// missed the change that dropped it).
    listing_epoch: AtomicU64,
    /// `Source::listing_stamp` of the kept `listing` (set after it, under its lock); 0 when
    /// none is kept.
    listing_stamp: AtomicU64,
    /// The watches `watch_dirs` asked for are in place (`Source::watch_ready`): only then can
    /// a kept listing or kept read count on the watcher to say when it goes stale.
    armed: AtomicBool,
    /// The folders below the root the last `watch_dirs` found (a removed path is a folder if
    /// it is one of them).
    folders_seen: Mutex<HashSet<PathBuf>>,
    /// The root folder, opened once while the source is watched (every read starts from it);
    /// dropped when the watcher sees the root come or go.
    root_dir: Mutex<Option<Arc<paths::Dir>>>,
    /// The pages after the last one served, walked ahead on a thread of their own (unwatched
    /// sources; see `list.rs`).
    ahead: Ahead<Walked>,
    /// Sorted listings of folders larger than a page, kept between walks (`folders.rs`).
    folders: Mutex<folders::Kept>,
    /// Small files read in place lately (watched sources; see `read.rs`).
    read_cache: Mutex<ReadCache>,
    /// How long a file must have stood unchanged to be kept in `read_cache`.
    settled: Duration,
    /// Counts the batches of changes the watcher applied: a kept read whose path passed the
    /// rules since the last one needs no new check (only a change can change what they say).
    changes_seen: AtomicU64,
}

/// How long a file must have stood unchanged before its contents are kept (`Version::settled`).
const SETTLED: Duration = Duration::from_secs(1);

/// One visible file, as listed.
#[derive(Debug, Clone)]
struct Entry {
    rel: String,
    size: u64,
    modified: Option<SystemTime>,
    mime: &'static str,
}

impl FilesSource {
    /// Builds the source from its checked entry; the root must exist.
    pub(crate) fn build(def: &manifest::Files, diags: &mut Diagnostics) -> Option<FilesSource> {
        let root = match platform::canonical(&def.root) {
            Ok(r) => r,
            Err(e) => {
                diags.push(
                    def.root_loc,
                    format!(
                        "[files.{}] root `{}` cannot be opened: {}",
                        def.name,
                        def.root.display(),
                        io_reason(&e)
                    ),
                );
                return None;
            }
        };
        let root_is_file = root.is_file();
        let Some(root_uri) = platform::file_uri(&root) else {
            diags.push(
                def.root_loc,
                format!(
                    "[files.{}] root `{}` is not valid UTF-8",
                    def.name,
                    root.display()
                ),
            );
            return None;
        };
        let globs = |list: &[(String, manifest::Loc)]| -> Vec<String> {
            list.iter().map(|(g, _)| g.clone()).collect()
        };
        let mut vis = Visibility::new(&root, def.hidden, def.gitignore && !root_is_file)
            .selecting(&globs(&def.include), &globs(&def.exclude));
        if def.watch {
            vis = vis.keeping_rules();
        }
        Some(FilesSource {
            name: def.name.clone(),
            root_is_file,
            root_uri,
            vis,
            max_size: def.max_size,
            watch: def.watch,
            poll: def.poll,
            description: def.description.clone(),
            search: def.search,
            listing: Mutex::new(None),
            listing_stamp: AtomicU64::new(0),
            listing_epoch: AtomicU64::new(0),
            armed: AtomicBool::new(false),
            folders_seen: Mutex::default(),
            root_dir: Mutex::new(None),
            ahead: Ahead::default(),
            folders: Mutex::default(),
            read_cache: Mutex::new(ReadCache::default()),
            settled: SETTLED,
            changes_seen: AtomicU64::new(0),
            root,
        })
    }

    /// A source of every file below `root` (canonical) not hidden by `hidden` / `gitignore`,
    /// unwatched, for tests.
    #[cfg(test)]
    pub(crate) fn of_folder(root: &Path, hidden: bool, gitignore: bool) -> FilesSource {
        FilesSource {
            name: String::new(),
            root: root.to_path_buf(),
            root_is_file: false,
            root_uri: String::new(),
            vis: Visibility::new(root, hidden, gitignore),
            max_size: manifest::DEFAULT_MAX_SIZE,
            watch: false,
            poll: None,
            description: None,
            search: false,
            listing: Mutex::new(None),
            listing_stamp: AtomicU64::new(0),
            listing_epoch: AtomicU64::new(0),
            armed: AtomicBool::new(false),
            folders_seen: Mutex::default(),
            root_dir: Mutex::new(None),
            ahead: Ahead::default(),
            folders: Mutex::default(),
            read_cache: Mutex::new(ReadCache::default()),
            settled: SETTLED,
            changes_seen: AtomicU64::new(0),
        }
    }

    /// The full check for one path relative to the root: every parent folder and the file.
    pub(super) fn visible(&self, rel: &str) -> bool {
        self.vis.visible(rel)
    }

    /// Opens the served file a URI names, or `None` ("not found") for anything else: malformed
    /// escapes, encoded separators, `.`/`..` segments, paths leaving the root through a symlink
    /// (also when swapped in while we look), hidden or ignored files, folders, FIFOs and devices.
    /// Blocking.
    pub(super) fn open(&self, uri: &str) -> Option<paths::Opened> {
        let rest = self.after_root(uri)?;
        if self.root_is_file {
            if !rest.is_empty() {
                return None;
            }
            let name = self.root.file_name()?.to_str()?;
            let opened = paths::open_beneath(self.root.parent()?, name).ok()?;
            return (opened.real_rel == name).then_some(opened);
        }
        let rel = paths::plain_relative(rest.strip_prefix('/')?)?;
        self.open_rel(&rel)
    }

    /// Opens the served file at `rel` (a plain relative path), or `None` (see `open`). Blocking.
    pub(super) fn open_rel(&self, rel: &str) -> Option<paths::Opened> {
        if !self.visible(rel) {
            return None;
        }
        self.open_visible(rel)
    }

    /// `open_rel` for a path whose visibility was just checked (by the walk that listed it):
    /// the race-free open, and the visibility of the real path when a symlink was followed.
    pub(super) fn open_visible(&self, rel: &str) -> Option<paths::Opened> {
        let opened = match self.open_from_root(rel) {
            Ok(o) => o,
            Err(OpenError::NotFound) => return None,
            Err(OpenError::Io(e)) => {
                tracing::debug!("[files.{}] {rel}: {e}", self.name);
                return None;
            }
        };
        (opened.real_rel == rel || self.visible(&opened.real_rel)).then_some(opened)
    }

    /// `paths::open_beneath` of `rel`; from the root folder kept open while watched.
    pub(super) fn open_from_root(&self, rel: &str) -> Result<paths::Opened, OpenError> {
        if !self.watch {
            return paths::open_beneath(&self.root, rel);
        }
        let kept = self.root_dir.lock().ok().and_then(|d| d.clone());
        let dir = match kept {
            Some(dir) => dir,
            None => {
                let dir = Arc::new(paths::open_root(&self.root)?);
                if let Ok(mut d) = self.root_dir.lock() {
                    *d = Some(dir.clone());
                }
                dir
            }
        };
        paths::open_beneath_in(&dir, &self.root, rel)
    }

    pub(super) fn uri_of(&self, rel: &str) -> String {
        if self.root_is_file {
            self.root_uri.clone()
        } else {
            let mut uri = String::with_capacity(self.root_uri.len() + 1 + rel.len());
            uri.push_str(&self.root_uri);
            uri.push('/');
            encode_path_into(&mut uri, rel);
            uri
        }
    }

    /// The `file://` URI of a served file by its relative path.
    pub(crate) fn uri_for(&self, rel: &str) -> String {
        self.uri_of(rel)
    }

    pub(crate) fn max_size(&self) -> u64 {
        self.max_size
    }

    /// Whether `search_files` searches this source.
    pub(crate) fn searchable(&self) -> bool {
        self.search
    }

    /// The canonical root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of a served file, by its path below the root (a one-file root: the
    /// root itself).
    pub(crate) fn path_of(&self, rel: &str) -> PathBuf {
        if self.root_is_file {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }

    /// What follows the root in `uri`, if it begins with it: a client's URI as the platform
    /// writes it (`platform::normalize_uri`: on Windows `file:///c:/…` and `file:///C%3A/…`
    /// name the root `file:///C:/…`).
    pub(super) fn after_root<'u>(&self, uri: &'u str) -> Option<Cow<'u, str>> {
        match platform::normalize_uri(uri) {
            Cow::Borrowed(u) => u.strip_prefix(self.root_uri.as_str()).map(Cow::Borrowed),
            Cow::Owned(u) => u
                .strip_prefix(self.root_uri.as_str())
                .map(|r| Cow::Owned(r.to_owned())),
        }
    }

    /// The file a URI of this source names, if it can name one (no IO).
    pub(super) fn target(&self, uri: &str) -> Option<PathBuf> {
        let rest = self.after_root(uri)?;
        if self.root_is_file {
            return rest.is_empty().then(|| self.root.clone());
        }
        rest.strip_prefix('/')
            .and_then(crate::uri::percent_decode)
            .map(|rel| self.root.join(rel))
    }
}

impl Source for FilesSource {
    fn owns(&self, uri: &str) -> bool {
        self.after_root(uri)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }

    fn list(self: Arc<Self>) -> BoxFut<Result<Vec<ResourceInfo>, RequestError>> {
        on_blocking(move || Ok(self.list_blocking()))
    }

    /// A watched source pages its cached listing at once (once listed, until a change drops
    /// it), and an unwatched one a page walked ahead if it is ready: both without a hand-off
    /// to the blocking pool. Any other page is walked there.
    fn list_page(
        self: Arc<Self>,
        after: Option<String>,
        limit: usize,
    ) -> BoxFut<Result<PageOf<ResourceInfo>, RequestError>> {
        if let Some(page) = self.page_at_hand(after.as_deref(), limit) {
            return ready(Ok(page));
        }
        on_blocking(move || Ok(self.page_blocking(after.as_deref(), limit)))
    }

    fn listing_stamp(&self) -> Option<u64> {
        let stamp = self.listing_stamp.load(Ordering::Acquire);
        (self.watch && stamp != 0).then_some(stamp)
    }

    fn templates(&self) -> Vec<TemplateInfo> {
        if self.root_is_file {
            return Vec::new();
        }
        vec![TemplateInfo {
            uri_template: format!("{}/{{+path}}", self.root_uri),
            name: self.name.clone(),
            description: Some(
                self.description
                    .clone()
                    .unwrap_or_else(|| format!("A file of [files.{}] by its path", self.name)),
            ),
            mime_type: None,
        }]
    }

    fn read(self: Arc<Self>, uri: String) -> BoxFut<Result<Contents, RequestError>> {
        Box::pin(async move { self.read_resource(uri).await })
    }

    fn serves(self: Arc<Self>, uri: String) -> BoxFut<bool> {
        on_blocking_or(false, move || {
            self.vis.fresh();
            self.open(&uri).is_some()
        })
    }

    fn complete(
        self: Arc<Self>,
        req: CompletionRequest,
    ) -> BoxFut<Result<Completion, RequestError>> {
        on_blocking(move || Ok(self.complete_blocking(&req.var, &req.prefix)))
    }

    fn watch_dirs(self: Arc<Self>) -> BoxFut<Vec<PathBuf>> {
        if !self.watch || self.poll.is_some() {
            return ready(Vec::new());
        }
        on_blocking_or(Vec::new(), move || self.watch_dirs_blocking())
    }

    fn poll_dirs(self: Arc<Self>) -> BoxFut<Vec<(PathBuf, std::time::Duration)>> {
        let Some(every) = self.poll.filter(|_| self.watch) else {
            return ready(Vec::new());
        };
        on_blocking_or(Vec::new(), move || {
            let dirs = self.watch_dirs_blocking();
            dirs.into_iter().map(|d| (d, every)).collect()
        })
    }

    fn watch_ready(&self) {
        self.arm(true);
    }

    fn apply_changes(self: Arc<Self>, changes: Arc<[Change]>) -> BoxFut<ChangeEffect> {
        on_blocking_or(ChangeEffect::default(), move || {
            self.apply_changes_blocking(&changes)
        })
    }

    fn affected(&self, uri: &str, changes: &[Change]) -> bool {
        if !self.watch {
            return false;
        }
        let Some(target) = self.target(uri) else {
            return false;
        };
        changes.iter().any(|c| {
            c.is_rescan()
                || c.path == target
                || target.starts_with(&c.path) && c.kind != ChangeKind::Modified
                || self.vis.rules_changed_by(&c.path).is_some()
        })
    }
}

#[cfg(test)]
mod tests;
