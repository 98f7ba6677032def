//! `[files.NAME]`: a folder (or one file) served as `file://` resources, with include/exclude
//! globs, `.gitignore` / `.ignore` rules and the one visibility check every read goes through.
//!
//! Invariant: a path is served only if `visible` accepts both the path asked for and the real
//! path the file was opened by, and it was opened below the root by `paths::open_beneath` (no
//! symlink leaving the root is followed, only regular files, checked on the descriptor that is
//! read). Listing and reading use the same `visible`, so what a client cannot list it cannot
//! read, and every way out (`..`, encoded separators, symlinks, races) answers "not found".

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use globset::{GlobSet, GlobSetBuilder};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::ahead::{self, Ahead};
use super::folders::{self, Names};
use super::paths::{self, OpenError, ReadError, io_reason, mime_for, sniff_is_text};
use super::{
    Body, BoxFut, ChangeEffect, Completion, CompletionRequest, Contents, PageOf, RequestError,
    ResourceInfo, Source, TemplateInfo, blocking, encode_path, encode_path_into, on_blocking,
    on_blocking_or, ready,
};
use crate::manifest::{self, Diagnostics, expand::format_size};
use crate::quote::{Quote, quote};
use crate::scopeguard;
use crate::watch::{Change, ChangeKind};

/// Files at most this large are read on the runtime thread (see `Source::read` below).
const INLINE_READ: u64 = 16 * 1024;

/// The live files source.
#[derive(Debug)]
pub(crate) struct FilesSource {
    pub name: String,
    /// Canonical root.
    root: PathBuf,
    root_is_file: bool,
    /// `file://` + the encoded root, without a trailing slash.
    root_uri: String,
    include: GlobSet,
    exclude: GlobSet,
    gitignore: bool,
    hidden: bool,
    max_size: u64,
    pub watch: bool,
    /// `watch = "poll"`: the folders are read this often instead of watched.
    poll: Option<std::time::Duration>,
    description: Option<String>,
    search: bool,
    /// Ignore rules per directory (`.ignore`, `.gitignore`). While the source is watched they
    /// live until a change to an ignore file drops them; otherwise they last one listing or read.
    ignores: Mutex<HashMap<PathBuf, Arc<DirRules>>>,
    /// The last listing; only kept while the source is watched (see `invalidate`).
    listing: Mutex<Option<Arc<Vec<Entry>>>>,
    /// The root folder, opened once while the source is watched (every read starts from it);
    /// dropped when the watcher sees the root come or go.
    root_dir: Mutex<Option<Arc<OwnedFd>>>,
    /// Folders above the root whose ignore files apply (up to the enclosing git work tree).
    parents: Vec<PathBuf>,
    /// The pages after the last one served, walked ahead on a thread of their own (unwatched
    /// sources; see `page_blocking`).
    ahead: Ahead<Walked>,
    /// Sorted listings of folders larger than a page, kept between walks (`folders.rs`).
    folders: Mutex<folders::Kept>,
    /// Small files read in place lately (watched sources; see `read_cached`).
    read_cache: Mutex<ReadCache>,
    /// How long a file must have stood unchanged to be kept in `read_cache`.
    settled: Duration,
    /// Counts the batches of changes the watcher applied: a kept read whose path passed the
    /// rules since the last one needs no new check (only a change can change what they say).
    changes_seen: AtomicU64,
}

/// Small files read in place lately, by path below the root, each with the version it was
/// read at (`paths::Version`): at most [`READ_CACHE_FILES`] files and [`READ_CACHE_BYTES`]
/// (contents, MIME types and paths), the oldest dropped first.
#[derive(Debug, Default)]
struct ReadCache {
    files: HashMap<String, CachedRead>,
    order: VecDeque<String>,
    bytes: usize,
}

#[derive(Debug)]
struct CachedRead {
    version: paths::Version,
    /// `FilesSource::changes_seen` when the path last passed the rules.
    checked: u64,
    mime_type: Option<String>,
    body: Body,
}

const READ_CACHE_FILES: usize = 1024;
const READ_CACHE_BYTES: usize = 1024 * 1024;
/// How long a file must have stood unchanged before its contents are kept (`Version::settled`).
const SETTLED: Duration = Duration::from_secs(1);

impl ReadCache {
    /// What a kept read holds: its bytes, its MIME type and its path (twice: in the map and
    /// in `order`).
    fn cost(rel: &str, read: &CachedRead) -> usize {
        read.body.len() + read.mime_type.as_ref().map_or(0, String::len) + 2 * rel.len()
    }

    fn put(&mut self, rel: String, read: CachedRead) {
        let cost = ReadCache::cost(&rel, &read);
        match self.files.insert(rel.clone(), read) {
            Some(old) => self.bytes = self.bytes.saturating_sub(ReadCache::cost(&rel, &old)),
            None => self.order.push_back(rel),
        }
        self.bytes += cost;
        while self.bytes > READ_CACHE_BYTES || self.files.len() > READ_CACHE_FILES {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(gone) = self.files.remove(&oldest) {
                self.bytes = self.bytes.saturating_sub(ReadCache::cost(&oldest, &gone));
            }
        }
    }
}

#[derive(Debug, Default)]
struct DirRules {
    dot_ignore: Option<Gitignore>,
    git_ignore: Option<Gitignore>,
}

impl DirRules {
    /// Whether this folder's rules ignore `path` (`.ignore` before `.gitignore`); `None` when
    /// they say nothing about it and the folders above decide.
    fn decide(&self, path: &Path, is_dir: bool) -> Option<bool> {
        for m in [&self.dot_ignore, &self.git_ignore].into_iter().flatten() {
            match m.matched(path, is_dir) {
                ignore::Match::Ignore(_) => return Some(true),
                ignore::Match::Whitelist(_) => return Some(false),
                ignore::Match::None => {}
            }
        }
        None
    }
}

/// A page of a sorted walk, and the key to resume after when more follow.
#[derive(Debug)]
struct Walked {
    found: Vec<Entry>,
    next: Option<String>,
}

/// The largest pages walked ahead: two are kept, and a page is about 100 bytes a file.
const AHEAD_MAX_PAGE: usize = 10_000;

impl ahead::Page for Walked {
    fn after(&self, limit: usize) -> Option<&str> {
        // Pages of one item are the registry's "anything after?" probes: not paged on.
        if !(2..=AHEAD_MAX_PAGE).contains(&limit) || self.found.len() < limit {
            return None;
        }
        self.next.as_deref()
    }
}

/// Paths below a root in one buffer, in the order pushed: a search's list of the files to
/// search (100 000 paths take about 2 MB here, against 14 MB as `String`s in `Entry`s).
#[derive(Debug, Default)]
pub(crate) struct PathList {
    text: String,
    /// Where each path ends in `text`.
    ends: Vec<usize>,
}

impl PathList {
    pub(crate) fn push(&mut self, rel: &str) {
        self.text.push_str(rel);
        self.ends.push(self.text.len());
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`th path (`i < len()`).
    pub(crate) fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Moves `other`'s paths after these.
    fn append(&mut self, other: &mut PathList) {
        let base = self.text.len();
        self.text.push_str(&other.text);
        self.ends.extend(other.ends.iter().map(|e| e + base));
        *other = PathList::default();
    }

    /// Gives back the room the paths do not use.
    fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

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
        let root = match fs::canonicalize(&def.root) {
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
        let Some(root_str) = root.to_str() else {
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
        let root_uri = format!("file://{}", encode_path(root_str.trim_end_matches('/')));
        let globs = |list: &[(String, manifest::Loc)]| {
            let mut b = GlobSetBuilder::new();
            for (g, _) in list {
                // Globs were validated when the manifest was checked.
                if let Ok(glob) = globset::GlobBuilder::new(g).literal_separator(true).build() {
                    b.add(glob);
                }
            }
            b.build().unwrap_or_else(|_| GlobSet::empty())
        };
        let parents = if def.gitignore && !root_is_file {
            ignore_parents(&root)
        } else {
            Vec::new()
        };
        Some(FilesSource {
            name: def.name.clone(),
            root_is_file,
            root_uri,
            include: globs(&def.include),
            exclude: globs(&def.exclude),
            gitignore: def.gitignore,
            hidden: def.hidden,
            max_size: def.max_size,
            watch: def.watch,
            poll: def.poll,
            description: def.description.clone(),
            search: def.search,
            ignores: Mutex::new(HashMap::new()),
            listing: Mutex::new(None),
            root_dir: Mutex::new(None),
            ahead: Ahead::default(),
            folders: Mutex::default(),
            read_cache: Mutex::new(ReadCache::default()),
            settled: SETTLED,
            changes_seen: AtomicU64::new(0),
            parents,
            root,
        })
    }

    /// Only the hiding rules of a files source (dot names unless `hidden`, `.git` always, ignore
    /// files unless `gitignore` is off), for a folder something else serves: a `file` template.
    /// Every name matches `include`, nothing is watched (ignore files are read afresh per check).
    /// `root` is canonical.
    pub(crate) fn hiding_rules(root: &Path, hidden: bool, gitignore: bool) -> FilesSource {
        // Built once: each build compiles a regex (with a full DFA), and a manifest may have a
        // `file` template per note.
        static ALL: OnceLock<GlobSet> = OnceLock::new();
        let all = ALL.get_or_init(|| {
            let mut all = GlobSetBuilder::new();
            if let Ok(glob) = globset::GlobBuilder::new("**/*")
                .literal_separator(true)
                .build()
            {
                all.add(glob);
            }
            all.build().unwrap_or_else(|_| GlobSet::empty())
        });
        FilesSource {
            name: String::new(),
            root: root.to_path_buf(),
            root_is_file: false,
            root_uri: String::new(),
            include: all.clone(),
            exclude: GlobSet::empty(),
            gitignore,
            hidden,
            max_size: manifest::DEFAULT_MAX_SIZE,
            watch: false,
            poll: None,
            description: None,
            search: false,
            ignores: Mutex::new(HashMap::new()),
            listing: Mutex::new(None),
            root_dir: Mutex::new(None),
            ahead: Ahead::default(),
            folders: Mutex::default(),
            read_cache: Mutex::new(ReadCache::default()),
            settled: SETTLED,
            changes_seen: AtomicU64::new(0),
            parents: if gitignore {
                ignore_parents(root)
            } else {
                Vec::new()
            },
        }
    }

    /// Whether a file opened below the root (by `paths::open_beneath`) as the plain relative path
    /// `rel`, whose real path below the root is `real_rel`, is one this source shows: both paths
    /// pass every rule. Call `fresh` first (once for a batch of checks). Blocking.
    pub(crate) fn shows(&self, rel: &str, real_rel: &str) -> bool {
        self.visible(rel) && (real_rel == rel || self.visible(real_rel))
    }

    /// Without a watcher, ignore files are read again by the next check.
    pub(crate) fn fresh(&self) {
        self.forget_rules_unless_watched();
    }

    /// Every visible file, sorted by name. Walks the tree (blocking: call from a blocking thread).
    fn list_blocking(&self) -> Vec<ResourceInfo> {
        match Arc::try_unwrap(self.entries()) {
            Ok(own) => own.into_iter().map(|e| self.info_of(e)).collect(),
            // Shared with the cache of a watched source.
            Err(shared) => shared.iter().map(|e| self.info(e)).collect(),
        }
    }

    /// At most `limit` visible files after the relative path `after`, and the path to resume
    /// after when more follow (blocking). A watched source pages its cached listing; otherwise a
    /// sorted walk reads only the folders on the way to `after` and what the page holds
    /// (`walk_page`), so a page costs O(page) and no listing is kept between requests.
    ///
    /// A client that pages on asks for the next page right away, so once a page is served the
    /// ones after it are walked on a thread of their own while this one is sent (`read_ahead`),
    /// and served if asked for within [`ahead::FRESH`] of the start of their walk: a page is at
    /// most that much older than the request, as if the request had come that much earlier.
    fn page_blocking(self: &Arc<Self>, after: Option<&str>, limit: usize) -> PageOf<ResourceInfo> {
        let limit = limit.max(1);
        if self.watch || self.root_is_file {
            return self.page_of(&self.entries(), after, limit);
        }
        let asked = Instant::now();
        let walked = match after.and_then(|a| self.ahead.take(a, limit, asked, true)) {
            Some(page) => page,
            None => self.walk_page(after, limit),
        };
        self.read_ahead(&walked, limit);
        self.page_from(walked)
    }

    /// A page that needs no walk: from a watched source's cached listing (once listed, until a
    /// change drops it), or walked ahead and ready. Never waits.
    fn page_at_hand(
        self: &Arc<Self>,
        after: Option<&str>,
        limit: usize,
    ) -> Option<PageOf<ResourceInfo>> {
        match self.cached() {
            Some(all) => Some(self.page_of(&all, after, limit)),
            None => self.page_ahead_now(after?, limit),
        }
    }

    /// `page_blocking` when the page was walked ahead and is ready (never waits).
    fn page_ahead_now(self: &Arc<Self>, after: &str, limit: usize) -> Option<PageOf<ResourceInfo>> {
        if self.watch || self.root_is_file {
            return None;
        }
        let walked = self
            .ahead
            .take(after, limit.max(1), Instant::now(), false)?;
        self.read_ahead(&walked, limit.max(1));
        Some(self.page_from(walked))
    }

    fn page_from(&self, walked: Walked) -> PageOf<ResourceInfo> {
        PageOf {
            items: walked.found.into_iter().map(|e| self.info_of(e)).collect(),
            next: walked.next,
        }
    }

    /// Keeps walking the pages after `page` ahead ([`Ahead`]: up to two, on one thread of
    /// their own, whatever a client pipelines), unless no page follows or pages hold one item
    /// or more than [`AHEAD_MAX_PAGE`].
    fn read_ahead(self: &Arc<Self>, page: &Walked, limit: usize) {
        if !self.ahead.follow(page, limit) {
            return;
        }
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("list-ahead".into())
            .spawn(move || {
                me.ahead
                    .run(|after, limit| Some(me.walk_page(Some(after), limit)))
            });
        if spawned.is_err() {
            self.ahead.not_started();
        }
    }

    /// At most `limit` visible files after `after` by a sorted walk, and the key to resume
    /// after when more follow (blocking).
    ///
    /// Whether more follow is known from one file more, or from a folder after the page found
    /// to hold one (without sorting it). When the next file lies in another folder than the
    /// page's last, the next page resumes after that folder's path followed by `/` (which sorts
    /// after the page and before anything in the folder), so it does not read again the folder
    /// the page ended in.
    fn walk_page(&self, after: Option<&str>, limit: usize) -> Walked {
        self.forget_rules_unless_watched();
        let mut walk = self.walker(limit.saturating_add(1), true);
        walk.run(after);
        let Walk {
            out: mut found,
            probed,
            ..
        } = walk;
        // The folder of the next file, if there is one.
        let next_dir = match found.get(limit) {
            Some(x) => Some(x.rel.rsplit_once('/').map_or("", |(d, _)| d).to_owned()),
            None => probed,
        };
        found.truncate(limit);
        let next = next_dir.and_then(|dir| {
            let last = &found.last()?.rel;
            Some(
                match last.strip_prefix(dir.as_str()).map(|r| r.starts_with('/')) {
                    Some(true) => last.clone(),
                    _ if dir.is_empty() => last.clone(),
                    _ => format!("{dir}/"),
                },
            )
        });
        Walked { found, next }
    }

    /// The page of `all` (a sorted listing) after `after`.
    fn page_of(&self, all: &[Entry], after: Option<&str>, limit: usize) -> PageOf<ResourceInfo> {
        let start = after.map_or(0, |a| all.partition_point(|e| e.rel.as_str() <= a));
        let end = start.saturating_add(limit.max(1)).min(all.len());
        let page = &all[start.min(end)..end];
        PageOf {
            items: page.iter().map(|e| self.info(e)).collect(),
            next: (end < all.len())
                .then(|| page.last().map(|e| e.rel.clone()))
                .flatten(),
        }
    }

    /// The cached listing, if the source is watched and has one.
    fn cached(&self) -> Option<Arc<Vec<Entry>>> {
        if !self.watch {
            return None;
        }
        self.listing.lock().ok()?.clone()
    }

    fn info(&self, e: &Entry) -> ResourceInfo {
        self.info_of(e.clone())
    }

    /// `info`, the entry's path moved into the resource's name.
    fn info_of(&self, e: Entry) -> ResourceInfo {
        ResourceInfo {
            uri: self.uri_of(&e.rel),
            name: e.rel,
            title: None,
            description: self.description.clone(),
            mime_type: Some(e.mime.to_owned()),
            size: Some(e.size),
            last_modified: e.modified,
        }
    }

    fn uri_of(&self, rel: &str) -> String {
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

    fn entries(&self) -> Arc<Vec<Entry>> {
        if let Some(cached) = self.cached() {
            return cached;
        }
        self.forget_rules_unless_watched();
        let mut out = Vec::new();
        if self.root_is_file {
            if let Ok(meta) = fs::metadata(&self.root) {
                let name = self
                    .root
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push(self.entry(name, &self.root, &meta));
            }
        } else {
            out = self.walk_sorted(None, usize::MAX);
        }
        let out = Arc::new(out);
        if self.watch
            && let Ok(mut l) = self.listing.lock()
        {
            *l = Some(out.clone());
        }
        out
    }

    fn entry(&self, rel: String, path: &Path, meta: &fs::Metadata) -> Entry {
        let ext = path.extension().and_then(|e| e.to_str());
        let mime = paths::mime_static(ext, || sniff_is_text(path));
        Entry {
            rel,
            size: meta.len(),
            modified: meta.modified().ok(),
            mime,
        }
    }

    /// The visible files in order of their relative paths, after `after` (exclusive), at most
    /// `limit` of them. Folders are read one at a time, each sorted, with the ignore rules of
    /// the folders above carried down as a stack (`Walk`).
    fn walk_sorted(&self, after: Option<&str>, limit: usize) -> Vec<Entry> {
        let mut walk = self.walker(limit, false);
        walk.run(after);
        walk.out
    }

    /// The names of the folder `fd` a walk looks at (`walked`), sorted. A walk of a page
    /// (`keep_over`: its size) takes those kept for the folder's version if there are (see
    /// `folders.rs`), else reads them, and keeps them if the folder holds more than a page and
    /// its version has settled. A walk of everything (`None`) reads each folder once anyway:
    /// it neither looks up nor keeps (no `fstat` per folder). `None` if it cannot be read.
    fn sorted_names(&self, fd: BorrowedFd<'_>, keep_over: Option<usize>) -> Option<Arc<Names>> {
        let version = keep_over
            .and_then(|_| rustix::fs::fstat(fd).ok())
            .map(|st| paths::Version::of(&st));
        let kept = || self.folders.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = &version
            && let Some(names) = kept().get(v)
        {
            return Some(names);
        }
        let mut names = Names::default();
        let mut read = rustix::fs::Dir::read_from(fd).ok()?;
        while let Some(Ok(item)) = read.read() {
            if let Some((name, is_dir)) = walked(self, fd, &item) {
                names.push(name, is_dir);
            }
        }
        names.finish();
        let names = Arc::new(names);
        if let Some(v) = version
            && keep_over.is_some_and(|page| names.len() > page)
            && v.settled(SystemTime::now(), self.settled)
        {
            kept().put(v, names.clone());
        }
        Some(names)
    }

    fn walker(&self, limit: usize, probe: bool) -> Walk<'_> {
        Walk {
            src: self,
            limit,
            rules: self.parents.iter().rev().map(|p| self.rules(p)).collect(),
            out: Vec::new(),
            names: PathList::default(),
            probe,
            probed: None,
            split: !probe && limit == usize::MAX && two_cores(),
            names_only: false,
        }
    }

    /// Whether a folder under the root may hold served files (hidden names, ignore rules).
    fn dir_visible(&self, rel: &str, path: &Path) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if name == ".git" || (!self.hidden && name.starts_with('.')) {
            return false;
        }
        !self.ignored(path, true)
    }

    /// Whether a file (its parents already found visible) is served.
    fn file_visible(&self, rel: &str, path: &Path) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if !self.hidden && name.starts_with('.') {
            return false;
        }
        self.include.is_match(rel) && !self.exclude.is_match(rel) && !self.ignored(path, false)
    }

    /// The full check for one path relative to the root: every parent folder and the file.
    fn visible(&self, rel: &str) -> bool {
        let mut path = self.root.clone();
        let parts: Vec<&str> = rel.split('/').collect();
        let (file, dirs) = match parts.split_last() {
            Some(x) => x,
            None => return false,
        };
        let mut rel_dir = String::new();
        for d in dirs {
            path.push(d);
            if !rel_dir.is_empty() {
                rel_dir.push('/');
            }
            rel_dir.push_str(d);
            if !self.dir_visible(&rel_dir, &path) {
                return false;
            }
        }
        path.push(file);
        self.file_visible(rel, &path)
    }

    /// Gitignore semantics: the deepest folder's rules decide, `.ignore` before `.gitignore`.
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        if !self.gitignore {
            return false;
        }
        let mut dirs: Vec<&Path> = path
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(&self.root))
            .collect();
        dirs.extend(self.parents.iter().map(PathBuf::as_path));
        for dir in dirs {
            if let Some(ignored) = self.rules(dir).decide(path, is_dir) {
                return ignored;
            }
        }
        false
    }

    /// Without a watcher nothing tells us an ignore file changed: start from a clean slate.
    fn forget_rules_unless_watched(&self) {
        if !self.watch
            && let Ok(mut map) = self.ignores.lock()
        {
            map.clear();
        }
    }

    fn rules(&self, dir: &Path) -> Arc<DirRules> {
        if let Ok(map) = self.ignores.lock()
            && let Some(r) = map.get(dir)
        {
            return r.clone();
        }
        // Read like any served file: only a regular file, never blocking, at most 1 MiB.
        let load = |file: &str| {
            let p = dir.join(file);
            let bytes = paths::read_regular(&p, 1024 * 1024).ok()?;
            let mut b = GitignoreBuilder::new(dir);
            for line in String::from_utf8_lossy(&bytes).lines() {
                let _ = b.add_line(Some(p.clone()), line);
            }
            b.build().ok().filter(|g| !g.is_empty())
        };
        let rules = Arc::new(DirRules {
            dot_ignore: load(".ignore"),
            git_ignore: load(".gitignore"),
        });
        if let Ok(mut map) = self.ignores.lock() {
            map.insert(dir.to_path_buf(), rules.clone());
        }
        rules
    }

    /// Opens the served file a URI names, or `None` ("not found") for anything else: malformed
    /// escapes, encoded separators, `.`/`..` segments, paths leaving the root through a symlink
    /// (also when swapped in while we look), hidden or ignored files, folders, FIFOs and devices.
    /// Blocking.
    fn open(&self, uri: &str) -> Option<paths::Opened> {
        let rest = uri.strip_prefix(&self.root_uri)?;
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
    fn open_rel(&self, rel: &str) -> Option<paths::Opened> {
        if !self.visible(rel) {
            return None;
        }
        self.open_visible(rel)
    }

    /// `open_rel` for a path whose visibility was just checked (by the walk that listed it):
    /// the race-free open, and the visibility of the real path when a symlink was followed.
    fn open_visible(&self, rel: &str) -> Option<paths::Opened> {
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
    fn open_from_root(&self, rel: &str) -> Result<paths::Opened, OpenError> {
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
        paths::open_beneath_in(dir.as_fd(), &self.root, rel)
    }

    /// The relative paths of every served file, sorted, as listed (blocking). The listing's
    /// walk and rules, without reading the files for their MIME types.
    pub(crate) fn served_paths(&self) -> PathList {
        let mut list = PathList::default();
        if self.watch
            && let Ok(l) = self.listing.lock()
            && let Some(cached) = l.as_ref()
        {
            for e in cached.iter() {
                list.push(&e.rel);
            }
            return list;
        }
        self.forget_rules_unless_watched();
        if self.root_is_file {
            if let Some(n) = self.root.file_name().and_then(|n| n.to_str()) {
                list.push(n);
            }
            return list;
        }
        // Names only: the search opens each file with every check a read makes, and a `stat`
        // per file was the most of a walk's time.
        let mut walk = self.walker(usize::MAX, false);
        walk.names_only = true;
        walk.run(None);
        walk.names.shrink_to_fit();
        walk.names
    }

    /// Opens a served file by its relative path, as `served_paths` just gave it, for reading
    /// (blocking). `None`: not served (any more).
    pub(crate) fn open_served(&self, rel: &str) -> Option<paths::Opened> {
        if self.root_is_file {
            let uri = self.root_uri.clone();
            return self.open(&uri);
        }
        if !paths::is_plain_relative(rel) {
            return None;
        }
        // `served_paths` walked with `visible`'s rules a moment ago: checking every folder
        // again would double the cost of a search. `open_visible` still refuses anything that
        // is not a regular file below the root and checks the real path if it moved.
        self.open_visible(rel)
    }

    /// `open_served` for one file after another of a search: `dir` keeps the last folder opened
    /// (its path below the root and its descriptor, reached without following any symlink), so
    /// the files of one folder are opened relative to it. A symlink on the way, or anything
    /// `open_in` refuses, falls back to `open_served`.
    pub(crate) fn open_served_in(
        &self,
        rel: &str,
        dir: &mut Option<(String, std::os::fd::OwnedFd)>,
    ) -> Option<paths::Opened> {
        if self.root_is_file || !paths::is_plain_relative(rel) {
            return self.open_served(rel);
        }
        let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        if dir.as_ref().is_none_or(|(p, _)| p != parent) {
            *dir = paths::open_dir_beneath(&self.root, parent)
                .ok()
                .map(|fd| (parent.to_owned(), fd));
        }
        let Some((_, fd)) = dir.as_ref() else {
            return self.open_served(rel);
        };
        match paths::open_in(fd, name) {
            Ok((file, size)) => Some(paths::Opened {
                file,
                real_rel: rel.to_owned(),
                size,
                version: None,
            }),
            Err(_) => self.open_served(rel),
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

    /// Opens the file of one resource (blocking, but only a few system calls on a local file
    /// system: see `read`).
    /// A small file of a watched source read in place lately, if a `stat` of its path finds
    /// the version it was read at: one system call instead of the five of a read (`fstatat`,
    /// `openat`, `fstat`, `read`, `close`). The path must still pass every rule; a symlink at
    /// its end is not followed (such a file is never kept), and one on the way leads to these
    /// bytes only if it leads to this very file (same device and inode) unchanged.
    fn read_cached(&self, uri: &str, rel: &str) -> Option<Contents> {
        let (want, checked) = {
            let cache = self.read_cache.lock().ok()?;
            let kept = cache.files.get(rel)?;
            (kept.version, kept.checked)
        };
        // Read before the rules are checked: a change applied meanwhile makes the next read
        // check them again.
        let changes = self.changes_seen.load(Ordering::Acquire);
        if checked != changes && !self.visible(rel) {
            return None;
        }
        let root = self.root_dir.lock().ok()?.clone()?;
        let st = rustix::fs::statat(root.as_fd(), rel, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
            || paths::Version::of(&st) != want
        {
            return None;
        }
        let mut cache = self.read_cache.lock().ok()?;
        let hit = cache.files.get_mut(rel).filter(|c| c.version == want)?;
        hit.checked = changes;
        Some(Contents {
            uri: uri.to_owned(),
            mime_type: hit.mime_type.clone(),
            body: hit.body.clone(),
        })
    }

    /// Keeps what `read_in_place` read of the file at `rel` at `version`, if it has stood unchanged
    /// for `settled`.
    fn keep_read(&self, rel: String, version: paths::Version, checked: u64, read: &Contents) {
        if !version.settled(SystemTime::now(), self.settled) {
            return;
        }
        if let Ok(mut cache) = self.read_cache.lock() {
            cache.put(
                rel,
                CachedRead {
                    version,
                    checked,
                    mime_type: read.mime_type.clone(),
                    body: read.body.clone(),
                },
            );
        }
    }

    /// The read of a file of at most [`INLINE_READ`] bytes, done on the calling thread:
    /// `open_beneath`, `fstat` and one `read` of a local file cost a few microseconds, less than
    /// the blocking pool's two thread hand-offs (and wake-ups); a watched source's file read
    /// lately costs one `fstatat` (`read_cached`). Buys `read/100B-text` pipelined ~3× and its
    /// sequential p50 ~20 µs (BENCHMARKS.md, issue 14's second and fifth passes), no figure a
    /// person feels. A larger file comes back opened, for the blocking pool to read. (A file
    /// system that hangs would hang the calling thread; so would SQLite's `stat` of its
    /// database, done in place for the same reason.)
    fn read_in_place(&self, uri: &str) -> Result<Result<Contents, paths::Opened>, RequestError> {
        // The path below the root of a watched folder's file: what its reads are kept by.
        let kept_by = (self.watch && !self.root_is_file)
            .then(|| paths::plain_relative(uri.strip_prefix(&self.root_uri)?.strip_prefix('/')?))
            .flatten();
        if let Some(rel) = &kept_by
            && let Some(hit) = self.read_cached(uri, rel)
        {
            return Ok(Ok(hit));
        }
        // Read before the rules are checked (see `read_cached`).
        let changes = self.changes_seen.load(Ordering::Acquire);
        let opened = match &kept_by {
            // What `open_for_read` does, without finding the path again.
            Some(rel) => self
                .open_rel(rel)
                .ok_or_else(|| RequestError::NotFound(uri.to_owned()))?,
            None => self.open_for_read(uri)?,
        };
        if opened.size > INLINE_READ {
            return Ok(Err(opened));
        }
        // Kept only if opened by its own path (no symlink followed).
        let keep = kept_by
            .filter(|rel| *rel == opened.real_rel)
            .zip(opened.version);
        let read = self.read_opened(uri, opened)?;
        if let Some((rel, version)) = keep {
            self.keep_read(rel, version, changes, &read);
        }
        Ok(Ok(read))
    }

    fn open_for_read(&self, uri: &str) -> Result<paths::Opened, RequestError> {
        self.forget_rules_unless_watched();
        self.open(uri)
            .ok_or_else(|| RequestError::NotFound(uri.to_owned()))
    }

    /// Reads an opened resource (blocking: a large one is read on a blocking thread).
    fn read_opened(&self, uri: &str, mut opened: paths::Opened) -> Result<Contents, RequestError> {
        let too_large = |size: u64| {
            RequestError::Refused(format!(
                "{} is {}, larger than max_size {} of [files.{}]",
                quote(uri, Quote::Plain),
                format_size(size),
                format_size(self.max_size),
                self.name
            ))
        };
        let bytes = match paths::read_capped(&mut opened.file, self.max_size, opened.size) {
            Ok(b) => b,
            Err(ReadError::TooLarge(n)) => return Err(too_large(n.max(opened.size))),
            Err(ReadError::Io(e)) => {
                return Err(RequestError::Refused(format!(
                    "{} cannot be read: {}",
                    quote(uri, Quote::Plain),
                    io_reason(&e)
                )));
            }
        };
        let body = Body::from_bytes(bytes);
        let is_text = matches!(body, Body::Text(_));
        Ok(Contents {
            uri: uri.to_owned(),
            mime_type: Some(mime_for(Path::new(&opened.real_rel), || is_text)),
            body,
        })
    }

    /// Completes the `path` variable of this source's template (blocking).
    fn complete_blocking(&self, var: &str, prefix: &str) -> Completion {
        if var != "path" || self.root_is_file {
            return Completion::default();
        }
        let entries = self.entries();
        Completion::from_candidates(entries.iter().map(|e| e.rel.as_str()), prefix)
    }

    /// Whether a listed file lives at `path` (used to decide between updated and list_changed).
    fn is_listed(&self, path: &Path) -> bool {
        match path.strip_prefix(&self.root).ok().and_then(Path::to_str) {
            Some("") => self.root_is_file,
            Some(rel) => {
                !self.root_is_file
                    && self.visible(rel)
                    && fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
            }
            None => false,
        }
    }
}

impl FilesSource {
    /// The folders to watch for this source (blocking: walks the visible folders): the root's
    /// parent too, so the root itself going away or coming back is seen.
    fn watch_dirs_blocking(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if !self.watch {
            return out;
        }
        if let Some(parent) = self.root.parent() {
            out.push(parent.to_path_buf());
        }
        if !self.root_is_file {
            out.push(self.root.clone());
            self.walk_dirs(&self.root, "", &mut out);
        }
        out
    }

    fn walk_dirs(&self, dir: &Path, rel_dir: &str, out: &mut Vec<PathBuf>) {
        let Ok(read) = fs::read_dir(dir) else { return };
        for item in read.flatten() {
            let Ok(ft) = item.file_type() else { continue };
            if !ft.is_dir() {
                continue;
            }
            let Ok(name) = item.file_name().into_string() else {
                continue;
            };
            let rel = if rel_dir.is_empty() {
                name
            } else {
                format!("{rel_dir}/{name}")
            };
            let path = item.path();
            if self.dir_visible(&rel, &path) {
                out.push(path.clone());
                self.walk_dirs(&path, &rel, out);
            }
        }
    }

    /// Applies a batch of changes (blocking): drops stale caches and says whether the list of
    /// resources changed and whether the set of watched folders must be recomputed.
    fn apply_changes_blocking(&self, changes: &[Change]) -> ChangeEffect {
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
                if let Ok(mut map) = self.ignores.lock() {
                    map.clear();
                }
                effect.merge(ChangeEffect {
                    list_changed: true,
                    rewatch: true,
                });
                continue;
            }
            let Ok(rel) = c.path.strip_prefix(&self.root) else {
                continue;
            };
            if self.root_is_file && !rel.as_os_str().is_empty() {
                continue;
            }
            touched = true;
            let Some(rel) = rel.to_str() else { continue };
            let name = c.path.file_name().and_then(|n| n.to_str());
            if matches!(name, Some(".gitignore" | ".ignore")) {
                if let (Some(dir), Ok(mut map)) = (c.path.parent(), self.ignores.lock()) {
                    map.remove(dir);
                }
                effect.list_changed = true;
                effect.rewatch = true;
                continue;
            }
            let is_dir = fs::symlink_metadata(&c.path).is_ok_and(|m| m.is_dir());
            if is_dir
                || (c.kind == ChangeKind::Removed
                    && old.as_ref().is_none_or(|o| {
                        let prefix = format!("{rel}/");
                        o.iter().any(|e| e.rel.starts_with(&prefix))
                    }))
            {
                // A folder came or went: its files did too.
                effect.rewatch = true;
                effect.list_changed |= c.kind != ChangeKind::Modified;
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
                None => c.kind != ChangeKind::Created && now,
            };
            if before != now {
                effect.list_changed = true;
            }
        }
        if touched && let Ok(mut l) = self.listing.lock() {
            *l = None;
        }
        effect
    }

    /// The file a URI of this source names, if it can name one (no IO).
    fn target(&self, uri: &str) -> Option<PathBuf> {
        let rest = uri.strip_prefix(&self.root_uri)?;
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
        uri.strip_prefix(&self.root_uri)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }

    fn list(self: Arc<Self>) -> BoxFut<Result<Vec<ResourceInfo>, RequestError>> {
        on_blocking(move || Ok(self.list_blocking()))
    }

    /// A page at hand is served in place, without the blocking pool's two thread hand-offs;
    /// any other is made there. Buys `list/1` pipelined ~25 000 → ~800 000/s and `list/10k`
    /// ~25 % (BENCHMARKS.md, issue 14's fifth pass), no figure a person feels.
    fn list_page(
        self: Arc<Self>,
        after: Option<String>,
        limit: usize,
    ) -> BoxFut<Result<PageOf<ResourceInfo>, RequestError>> {
        match self.page_at_hand(after.as_deref(), limit) {
            Some(page) => ready(Ok(page)),
            None => on_blocking(move || Ok(self.page_blocking(after.as_deref(), limit))),
        }
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

    /// A small file is read in place (`read_in_place`); a larger one on the blocking pool.
    fn read(self: Arc<Self>, uri: String) -> BoxFut<Result<Contents, RequestError>> {
        Box::pin(async move {
            match self.read_in_place(&uri)? {
                Ok(read) => Ok(read),
                Err(opened) => blocking(move || self.read_opened(&uri, opened)).await?,
            }
        })
    }

    fn serves(self: Arc<Self>, uri: String) -> BoxFut<bool> {
        on_blocking_or(false, move || {
            self.forget_rules_unless_watched();
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
                || c.path
                    .file_name()
                    .is_some_and(|n| n == ".gitignore" || n == ".ignore")
        })
    }
}

/// Folders above `root` whose ignore files apply: up to and including the git work tree that
/// holds it. Outside a repository, only the root and below count.
fn ignore_parents(root: &Path) -> Vec<PathBuf> {
    if root.join(".git").exists() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for dir in root.ancestors().skip(1) {
        out.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            return out;
        }
    }
    Vec::new()
}

/// A sorted walk of the visible files. Each folder's names are sorted as if a folder's name
/// ended in `/`, which makes the walk's output sorted by relative path (`a-b`, `a.txt`, `a/x`),
/// so a walk can resume after a path: folders that sort wholly before it are not read.
///
/// Every folder is opened relative to its parent's descriptor without following a symlink (one
/// swapped in for a folder while we walk is not entered), and read once: the kind of each name
/// comes from the folder itself (`d_type`; a `stat` only where the file system does not say),
/// so only files that pass every rule are statted, by their bare name in their folder's
/// descriptor. (Statting a long run of files on two threads bought nothing measurable on two
/// shared cores: waking the second one costs what it saves.)
struct Walk<'a> {
    src: &'a FilesSource,
    limit: usize,
    /// Ignore rules of the folders above the one being read (and of `parents`), outermost first.
    rules: Vec<Arc<DirRules>>,
    out: Vec<Entry>,
    /// What a walk of names only found, in place of `out`.
    names: PathList,
    /// One file short of `limit`, a folder only needs to hold a visible file: it is scanned
    /// unsorted, its path kept in `probed`.
    probe: bool,
    probed: Option<String>,
    /// A walk of everything not yet split over two threads: the first folder holding two
    /// folders or more gives its second half of folders (and what follows) to a second thread.
    split: bool,
    /// Paths only (`served_paths`: a walk of everything, no `limit`), into `names`: files are
    /// not `stat`ed. Whoever opens one checks it then (`open_served_in`).
    names_only: bool,
}

/// Whether this process may run on two cores or more (asked once).
fn two_cores() -> bool {
    static TWO: OnceLock<bool> = OnceLock::new();
    *TWO.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2))
}

/// How folders are opened by the walk: never through a symlink.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOFOLLOW);

/// The name of a folder's entry and whether it is a folder, if a walk looks at it at all: not
/// `.`/`..`, UTF-8 (other names cannot be written in a URI we could read back), not hidden
/// (unless `hidden`), not `.git`, and a folder or a regular file by the entry's type (a `stat`
/// only where the file system does not say). Symlinks are never listed: one inside the root is
/// listed at its target, one leading outside is not served at all. Nor are FIFOs, sockets and
/// devices.
fn walked<'e>(
    src: &FilesSource,
    dir: BorrowedFd<'_>,
    item: &'e rustix::fs::DirEntry,
) -> Option<(&'e str, bool)> {
    let raw = item.file_name().to_bytes();
    if raw == b"." || raw == b".." {
        return None;
    }
    let name = std::str::from_utf8(raw).ok()?;
    let is_dir = match item.file_type() {
        FileType::Directory => true,
        FileType::RegularFile => false,
        FileType::Unknown => {
            match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| FileType::from_raw_mode(st.st_mode))
            {
                Ok(FileType::Directory) => true,
                Ok(FileType::RegularFile) => false,
                _ => return None,
            }
        }
        _ => return None,
    };
    if (name == ".git" && is_dir) || (!src.hidden && name.starts_with('.')) {
        return None;
    }
    Some((name, is_dir))
}

/// `rel_dir/name` (`name` in the root), with room for `spare` more bytes.
fn join(rel_dir: &str, name: &str, spare: usize) -> String {
    let mut out = String::with_capacity(rel_dir.len() + 1 + name.len() + spare);
    if !rel_dir.is_empty() {
        out.push_str(rel_dir);
        out.push('/');
    }
    out.push_str(name);
    out
}

/// The items `range` of a folder's sorted `names`, as a walk takes them: each its path below
/// the root (the folder is `rel_dir`), a folder's followed by `/`, and whether it is a folder.
fn keys<'n>(
    names: &'n Names,
    range: std::ops::Range<usize>,
    rel_dir: &'n str,
) -> impl Iterator<Item = (String, bool)> + 'n {
    range.map(move |i| {
        let (name, is_dir) = names.get(i);
        let mut key = join(rel_dir, name, 1);
        if is_dir {
            key.push('/');
        }
        (key, is_dir)
    })
}

/// What a listed file's `stat` gave.
struct FileMeta {
    size: u64,
    modified: Option<SystemTime>,
    mime: &'static str,
}

impl Walk<'_> {
    fn run(&mut self, after: Option<&str>) {
        // The root is canonical: no symlink to follow.
        if let Ok(fd) = rustix::fs::open(&self.src.root, DIR_FLAGS, Mode::empty()) {
            self.dir(fd, "", after);
        }
    }

    /// Walks the folder `fd` (`rel_dir` below the root), skipping what sorts at or before
    /// `after` (a path relative to it). False once `limit` files are found.
    fn dir(&mut self, fd: OwnedFd, rel_dir: &str, after: Option<&str>) -> bool {
        let src = self.src;
        // Where a name starts in a path below the root.
        let name_at = if rel_dir.is_empty() {
            0
        } else {
            rel_dir.len() + 1
        };
        // A walk of everything has no limit.
        let page = (self.limit < usize::MAX).then_some(self.limit);
        let Some(names) = src.sorted_names(fd.as_fd(), page) else {
            return true;
        };
        let pushed = self.push_rules(rel_dir);
        let any_rules = pushed && self.any_rules();
        let going_on = if self.split && after.is_none() && names.dirs() >= 2 {
            self.split = false;
            self.items_on_two(fd.as_fd(), &names, rel_dir, name_at, any_rules)
        } else {
            let items = keys(&names, names.resume_at(after)..names.len(), rel_dir);
            self.items(fd.as_fd(), items, name_at, after, any_rules)
        };
        if pushed {
            self.rules.pop();
        }
        going_on
    }

    /// `items` of a walk of everything (no `after`, no `limit`), the items from the middle
    /// folder on walked by a second thread, its files appended after this one's: the same
    /// order, folders read and files statted on two cores. On this thread if no thread can
    /// be started.
    fn items_on_two(
        &mut self,
        dir: BorrowedFd<'_>,
        names: &Names,
        rel_dir: &str,
        name_at: usize,
        any_rules: bool,
    ) -> bool {
        let dirs = names.dirs();
        let mut seen = 0;
        let middle = (0..names.len())
            .position(|i| {
                seen += usize::from(names.get(i).1);
                seen > dirs / 2
            })
            .unwrap_or(names.len());
        let mut second = Some(middle..names.len());
        let mut other = Walk {
            src: self.src,
            limit: self.limit,
            rules: self.rules.clone(),
            out: Vec::new(),
            names: PathList::default(),
            probe: false,
            probed: None,
            split: false,
            names_only: self.names_only,
        };
        let going_on = std::thread::scope(|s| {
            let helper = std::thread::Builder::new().spawn_scoped(s, || {
                if let Some(range) = second.take() {
                    other.items(dir, keys(names, range, rel_dir), name_at, None, any_rules);
                }
            });
            let going_on = self.items(
                dir,
                keys(names, 0..middle, rel_dir),
                name_at,
                None,
                any_rules,
            );
            if let Ok(h) = helper
                && let Err(panic) = h.join()
            {
                std::panic::resume_unwind(panic);
            }
            going_on
        });
        if let Some(range) = second.take() {
            other.items(dir, keys(names, range, rel_dir), name_at, None, any_rules);
        }
        self.out.append(&mut other.out);
        self.names.append(&mut other.names);
        going_on
    }

    /// Pushes the ignore rules of the folder `rel_dir` (if ignore files count).
    fn push_rules(&mut self, rel_dir: &str) -> bool {
        let src = self.src;
        if !src.gitignore {
            return false;
        }
        let path = if rel_dir.is_empty() {
            src.root.clone()
        } else {
            src.root.join(rel_dir)
        };
        self.rules.push(src.rules(&path));
        true
    }

    fn any_rules(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.dot_ignore.is_some() || r.git_ignore.is_some())
    }

    /// Whether the folder `fd` (`rel_dir` below the root, after everything listed so far)
    /// holds a visible file, in any order: names are checked as they are read, the first
    /// visible regular file ends the scan.
    fn holds_visible(&mut self, fd: OwnedFd, rel_dir: &str) -> bool {
        let pushed = self.push_rules(rel_dir);
        let any_rules = pushed && self.any_rules();
        let found = self.scan(fd, rel_dir, any_rules);
        if pushed {
            self.rules.pop();
        }
        found
    }

    fn scan(&mut self, fd: OwnedFd, rel_dir: &str, any_rules: bool) -> bool {
        let src = self.src;
        let mut dirs = Vec::new();
        {
            let Ok(mut read) = rustix::fs::Dir::read_from(&fd) else {
                return false;
            };
            while let Some(Ok(item)) = read.read() {
                let Some((name, is_dir)) = walked(src, fd.as_fd(), &item) else {
                    continue;
                };
                let rel = join(rel_dir, name, 0);
                if any_rules && self.ignored(&src.root.join(&rel), is_dir) {
                    continue;
                }
                if is_dir {
                    dirs.push(rel);
                } else if src.include.is_match(&rel)
                    && !src.exclude.is_match(&rel)
                    && rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
                        FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
                    })
                {
                    return true;
                }
            }
        }
        let name_at = rel_dir.len() + usize::from(!rel_dir.is_empty());
        for rel in dirs {
            let Ok(sub) = rustix::fs::openat(&fd, &rel[name_at..], DIR_FLAGS, Mode::empty()) else {
                continue;
            };
            if self.holds_visible(sub, &rel) {
                return true;
            }
        }
        false
    }

    /// The sorted items of the folder `dir`: folders walked, files checked against the rules,
    /// each run of files between two folders statted at once (a run as long as the files the
    /// page still needs is statted then, so that a page in a large folder goes no further).
    fn items(
        &mut self,
        dir: BorrowedFd<'_>,
        items: impl Iterator<Item = (String, bool)>,
        name_at: usize,
        after: Option<&str>,
        any_rules: bool,
    ) -> bool {
        let src = self.src;
        let mut run: Vec<String> = Vec::new();
        for (mut rel, is_dir) in items {
            if is_dir {
                if !self.flush(dir, &mut run, name_at) {
                    return false;
                }
                rel.pop();
                if any_rules && self.ignored(&src.root.join(&rel), true) {
                    continue;
                }
                let name = &rel[name_at..];
                // `after`, if it points inside this folder, relative to it.
                let inner = after.and_then(|a| a.strip_prefix(name)?.strip_prefix('/'));
                let Ok(fd) = rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty()) else {
                    continue;
                };
                if self.probe && inner.is_none() && self.found().saturating_add(1) == self.limit {
                    // Only whether more follow is asked: no need to sort this folder.
                    if self.holds_visible(fd, &rel) {
                        self.probed = Some(rel);
                        return false;
                    }
                    continue;
                }
                if !self.dir(fd, &rel, inner) {
                    return false;
                }
            } else {
                if !src.include.is_match(&rel) || src.exclude.is_match(&rel) {
                    continue;
                }
                if any_rules && self.ignored(&src.root.join(&rel), false) {
                    continue;
                }
                if self.names_only {
                    // Nothing to `stat`: no run to batch (a flat folder of 100 000 files
                    // would hold them all as `String`s).
                    self.names.push(&rel);
                    continue;
                }
                run.push(rel);
                // Enough to end the page if all are still there: no need to look further.
                if run.len() >= self.limit.saturating_sub(self.found())
                    && !self.flush(dir, &mut run, name_at)
                {
                    return false;
                }
            }
        }
        self.flush(dir, &mut run, name_at)
    }

    /// Stats the files of `run` (paths below the root of files in `dir`) and adds those still
    /// regular files, in order, until `limit` files are found. False once they are.
    fn flush(&mut self, dir: BorrowedFd<'_>, run: &mut Vec<String>, name_at: usize) -> bool {
        let mut rest = std::mem::take(run);
        while !rest.is_empty() {
            let need = self.limit.saturating_sub(self.found());
            if need == 0 {
                return false;
            }
            let tail = if rest.len() > need {
                rest.split_off(need)
            } else {
                Vec::new()
            };
            let batch = std::mem::replace(&mut rest, tail);
            let metas = stat_each(dir, &batch, name_at);
            for (rel, meta) in batch.into_iter().zip(metas) {
                if let Some(m) = meta {
                    self.out.push(Entry {
                        rel,
                        size: m.size,
                        modified: m.modified,
                        mime: m.mime,
                    });
                }
            }
        }
        self.found() < self.limit
    }

    /// Files found so far.
    fn found(&self) -> usize {
        self.out.len() + self.names.len()
    }

    /// Gitignore semantics: the deepest folder's rules decide, `.ignore` before `.gitignore`.
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for rules in self.rules.iter().rev() {
            if let Some(ignored) = rules.decide(path, is_dir) {
                return ignored;
            }
        }
        false
    }
}

/// The size, modification time and MIME type of each file of `dir` (by its name: `rel` from
/// byte `name_at` on), or `None` if it is gone or no longer a regular file. Not followed
/// through a symlink. The MIME type is looked up once per extension; only files whose
/// extension names none are read (sniffed).
fn stat_each(dir: BorrowedFd<'_>, rels: &[String], name_at: usize) -> Vec<Option<FileMeta>> {
    // (extension, its MIME type if it names one): folders hold few kinds of files.
    let mut mimes: Vec<(&str, Option<&'static str>)> = Vec::new();
    rels.iter()
        .map(|rel| {
            let name = rel.get(name_at..)?;
            let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                return None;
            }
            let ext = Path::new(name).extension().and_then(|e| e.to_str());
            let known = match ext {
                None => None,
                Some(ext) => match mimes.iter().find(|(e, _)| *e == ext) {
                    Some((_, m)) => *m,
                    None => {
                        let m = paths::mime_of_ext(Some(ext));
                        if mimes.len() < 16 {
                            mimes.push((ext, m));
                        }
                        m
                    }
                },
            };
            let mime = known
                .unwrap_or_else(|| paths::mime_static(None, || paths::sniff_is_text_at(dir, name)));
            Some(FileMeta {
                size: u64::try_from(st.st_size).unwrap_or(0),
                modified: modified(&st),
                mime,
            })
        })
        .collect()
}

/// A `stat`'s modification time, as `std::fs::Metadata::modified` gives it.
// The fields' integer types differ between platforms.
#[allow(clippy::useless_conversion)]
fn modified(st: &rustix::fs::Stat) -> Option<SystemTime> {
    let secs = i64::try_from(st.st_mtime).ok()?;
    let nanos = u32::try_from(st.st_mtime_nsec)
        .ok()
        .filter(|n| *n < 1_000_000_000)?;
    if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::new(secs.unsigned_abs(), nanos))
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(Duration::from_nanos(u64::from(nanos)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{FilesSource, INLINE_READ};
    use crate::providers::{Body, PageOf, ResourceInfo, Source};

    fn names(page: &PageOf<ResourceInfo>) -> Vec<&str> {
        page.items.iter().map(|r| r.name.as_str()).collect()
    }

    /// A watched source answers a small file read in place lately from what it read, while a
    /// `stat` finds the same version; any change of size or time reads it again, and a file
    /// that has not stood unchanged for `settled` is not kept at all.
    #[test]
    fn small_reads_are_kept_while_their_version_holds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let file = root.join("a.txt");
        std::fs::write(&file, "one").unwrap();
        let mut src = FilesSource::hiding_rules(&root, false, false);
        src.watch = true;
        // Just written: not kept.
        assert_eq!(text(read_now(&src, "/a.txt")), "one");
        assert!(src.read_cache.lock().unwrap().files.is_empty());
        src.settled = std::time::Duration::ZERO;
        assert_eq!(text(read_now(&src, "/a.txt")), "one");
        // Kept: what is kept is what a read answers (seen by changing it behind the source's back).
        let keep_as = |src: &FilesSource, s: &str| {
            let mut cache = src.read_cache.lock().unwrap();
            cache.files.get_mut("a.txt").unwrap().body = super::Body::Text(s.to_owned());
        };
        keep_as(&src, "own");
        assert_eq!(text(read_now(&src, "/a.txt")), "own");
        // Another size: read again.
        std::fs::write(&file, "two!").unwrap();
        assert_eq!(text(read_now(&src, "/a.txt")), "two!");
        // The same size, another time: read again.
        keep_as(&src, "kep!");
        std::fs::write(&file, "2wo!").unwrap();
        let f = std::fs::File::options().write(true).open(&file).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
            .unwrap();
        assert_eq!(text(read_now(&src, "/a.txt")), "2wo!");
        // Gone: not found, whatever was kept.
        std::fs::remove_file(&file).unwrap();
        assert!(matches!(read_now(&src, "/a.txt"), Some(Err(_))));
        // A file reached through a symlink is never kept.
        std::fs::write(root.join("b.txt"), "bee").unwrap();
        std::os::unix::fs::symlink("b.txt", root.join("l.txt")).unwrap();
        assert_eq!(text(read_now(&src, "/l.txt")), "bee");
        assert!(!src.read_cache.lock().unwrap().files.contains_key("l.txt"));
        // A kept file's folder swapped for a symlink that leaves the root: not found (its
        // `stat` finds another file; the read that follows refuses the way out).
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.txt"), "secret").unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        std::fs::write(root.join("d/x.txt"), "inside").unwrap();
        assert_eq!(text(read_now(&src, "/d/x.txt")), "inside");
        assert!(src.read_cache.lock().unwrap().files.contains_key("d/x.txt"));
        std::fs::rename(root.join("d"), root.join("d.old")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("d")).unwrap();
        assert!(matches!(read_now(&src, "/d/x.txt"), Some(Err(_))));
    }

    /// A kept file replaced by a symlink (to another file inside the root) is read through the
    /// symlink, not answered from what was kept: the `stat` does not follow the last name.
    #[test]
    fn a_kept_file_swapped_for_a_symlink_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "one").unwrap();
        std::fs::write(root.join("b.txt"), "bee").unwrap();
        let mut src = FilesSource::hiding_rules(&root, false, false);
        src.watch = true;
        src.settled = std::time::Duration::ZERO;
        assert_eq!(text(read_now(&src, "/a.txt")), "one");
        assert!(src.read_cache.lock().unwrap().files.contains_key("a.txt"));
        std::fs::remove_file(root.join("a.txt")).unwrap();
        std::os::unix::fs::symlink("b.txt", root.join("a.txt")).unwrap();
        assert_eq!(text(read_now(&src, "/a.txt")), "bee");
    }

    /// A client paging to the end gets every file once, in order, whatever the page size
    /// (pages ending inside a folder or at its end) and however pages were walked ahead.
    #[test]
    fn paging_to_the_end_lists_everything_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut all = Vec::new();
        for d in 0..7 {
            std::fs::create_dir(root.join(format!("d{d}"))).unwrap();
            for f in 0..3 {
                std::fs::write(root.join(format!("d{d}/f{f}")), "x").unwrap();
                all.push(format!("d{d}/f{f}"));
            }
        }
        let src = Arc::new(FilesSource::hiding_rules(&root, false, false));
        for limit in [1, 2, 3, 4, 5, 100] {
            let mut got: Vec<String> = Vec::new();
            let mut after: Option<String> = None;
            loop {
                // Every other page by the reader's path when it is ready, as a client gets it.
                let page = match after.as_deref().filter(|_| got.len() % 2 == 1) {
                    Some(a) => src.page_at_hand(Some(a), limit),
                    None => None,
                }
                .unwrap_or_else(|| src.page_blocking(after.as_deref(), limit));
                got.extend(names(&page).into_iter().map(str::to_owned));
                match page.next {
                    Some(n) => after = Some(n),
                    None => break,
                }
            }
            assert_eq!(got, all, "pages of {limit}");
        }
    }

    /// A folder larger than a page is read and sorted once while its version holds: the pages
    /// after the first are walked from the kept names. Adding or removing a file changes the
    /// version, and the names are read again. A folder changed within `settled` is not kept.
    #[test]
    fn a_folder_larger_than_a_page_is_read_once_while_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a"), "x").unwrap();
        for f in 0..10 {
            std::fs::write(root.join(format!("f{f:02}")), "x").unwrap();
        }
        let listing = |src: &Arc<FilesSource>| {
            let mut got: Vec<String> = Vec::new();
            let mut after: Option<String> = None;
            loop {
                let page = src.page_blocking(after.as_deref(), 4);
                got.extend(names(&page).into_iter().map(str::to_owned));
                match page.next {
                    Some(n) => after = Some(n),
                    None => return got,
                }
            }
        };
        let version = || super::paths::Version::of(&rustix::fs::stat(&root).unwrap());
        let kept = |src: &Arc<FilesSource>| src.folders.lock().unwrap().get(&version());
        // Just changed: not kept.
        let src = Arc::new(FilesSource::hiding_rules(&root, false, false));
        assert_eq!(listing(&src).len(), 11);
        src.ahead.wait_idle();
        assert!(kept(&src).is_none());
        // Settled (its modification time in the past, so that any change moves it whatever
        // the clock's granularity): kept, and the same names serve every page.
        let past = rustix::fs::Timespec {
            tv_sec: 1_000_000_000,
            tv_nsec: 0,
        };
        rustix::fs::utimensat(
            rustix::fs::CWD,
            &root,
            &rustix::fs::Timestamps {
                last_access: past,
                last_modification: past,
            },
            rustix::fs::AtFlags::empty(),
        )
        .unwrap();
        let mut fresh = FilesSource::hiding_rules(&root, false, false);
        fresh.settled = std::time::Duration::ZERO;
        let src = Arc::new(fresh);
        let first = src.page_blocking(None, 4);
        assert_eq!(names(&first), ["f00", "f01", "f02", "f03"]);
        let names_kept = kept(&src).expect("kept");
        assert_eq!(names_kept.len(), 11);
        let mut want: Vec<String> = (0..10).map(|f| format!("f{f:02}")).collect();
        want.push("sub/a".into());
        assert_eq!(listing(&src), want);
        src.ahead.wait_idle();
        assert!(Arc::ptr_eq(&names_kept, &kept(&src).expect("still kept")));
        assert_eq!(
            src.folders.lock().unwrap().len(),
            1,
            "`sub` is smaller than a page"
        );
        // A file removed and one added: read again.
        std::fs::remove_file(root.join("f05")).unwrap();
        std::fs::write(root.join("f10"), "x").unwrap();
        want.retain(|n| n != "f05");
        want.insert(9, "f10".into());
        assert_eq!(listing(&src), want);
    }

    /// A kept folder swapped for another between two pages (renamed away, another moved in,
    /// its modification time set back to the first's): the other is another inode, and its
    /// own files are listed, never the kept names.
    #[test]
    fn a_kept_folder_swapped_for_another_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let past = rustix::fs::Timespec {
            tv_sec: 1_000_000_000,
            tv_nsec: 0,
        };
        let age = |path: &std::path::Path| {
            rustix::fs::utimensat(
                rustix::fs::CWD,
                path,
                &rustix::fs::Timestamps {
                    last_access: past,
                    last_modification: past,
                },
                rustix::fs::AtFlags::empty(),
            )
            .unwrap()
        };
        for (d, prefix) in [("big", "a"), ("other", "b")] {
            std::fs::create_dir(root.join(d)).unwrap();
            for f in 0..6 {
                std::fs::write(root.join(format!("{d}/{prefix}{f}")), "x").unwrap();
            }
            age(&root.join(d));
        }
        let mut src = FilesSource::hiding_rules(&root, false, false);
        src.settled = std::time::Duration::ZERO;
        let src = Arc::new(src);
        let first = src.page_blocking(Some("big/"), 2);
        assert_eq!(names(&first), ["big/a0", "big/a1"]);
        src.ahead.wait_idle();
        assert!(src.folders.lock().unwrap().len() >= 1);
        std::fs::rename(root.join("big"), root.join("gone")).unwrap();
        std::fs::rename(root.join("other"), root.join("big")).unwrap();
        age(&root.join("big"));
        // After `big/a2`: not a page walked ahead (those, after `big/a1` and `big/a3`, may be
        // served as walked for 250 ms), so the folder is walked now.
        let page = src.page_blocking(Some("big/a2"), 2);
        assert_eq!(names(&page), ["big/b0", "big/b1"]);
    }

    /// A kept read's path passes the rules again after the watcher applied a change: a
    /// `.gitignore` that now hides the file makes it "not found", kept or not.
    #[test]
    fn kept_reads_are_hidden_by_a_new_ignore_rule() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "one").unwrap();
        let mut src = FilesSource::hiding_rules(&root, false, true);
        src.watch = true;
        src.settled = std::time::Duration::ZERO;
        assert_eq!(text(read_now(&src, "/a.txt")), "one");
        assert_eq!(text(read_now(&src, "/a.txt")), "one");
        assert!(src.read_cache.lock().unwrap().files.contains_key("a.txt"));
        std::fs::write(root.join(".gitignore"), "a.txt\n").unwrap();
        src.apply_changes_blocking(&[crate::watch::Change {
            path: root.join(".gitignore"),
            kind: crate::watch::ChangeKind::Created,
        }]);
        assert!(matches!(read_now(&src, "/a.txt"), Some(Err(_))));
        // Shown again: read (and kept) again.
        std::fs::write(root.join(".gitignore"), "b.txt\n").unwrap();
        src.apply_changes_blocking(&[crate::watch::Change {
            path: root.join(".gitignore"),
            kind: crate::watch::ChangeKind::Modified,
        }]);
        assert_eq!(text(read_now(&src, "/a.txt")), "one");
    }

    /// The kept reads are bounded in bytes and files, the oldest dropped first.
    #[test]
    fn kept_reads_are_bounded() {
        let mut cache = super::ReadCache::default();
        let st = rustix::fs::stat("/").unwrap();
        let version = crate::providers::paths::Version::of(&st);
        // Four fit exactly: each path ("fN") counts twice.
        let chunk = super::READ_CACHE_BYTES / 4 - 4;
        for i in 0..6 {
            cache.put(
                format!("f{i}"),
                super::CachedRead {
                    version,
                    checked: 0,
                    mime_type: None,
                    body: super::Body::Bytes(vec![0; chunk]),
                },
            );
        }
        assert!(cache.bytes <= super::READ_CACHE_BYTES);
        assert_eq!(cache.files.len(), 4);
        assert!(!cache.files.contains_key("f1") && cache.files.contains_key("f5"));
        for i in 0..=super::READ_CACHE_FILES {
            cache.put(
                format!("g{i}"),
                super::CachedRead {
                    version,
                    checked: 0,
                    mime_type: None,
                    body: super::Body::Bytes(Vec::new()),
                },
            );
        }
        assert_eq!(cache.files.len(), super::READ_CACHE_FILES);
        assert_eq!(cache.order.len(), super::READ_CACHE_FILES);
        // Long paths count too.
        let long = "p".repeat(super::READ_CACHE_BYTES / 4);
        for i in 0..3 {
            cache.put(
                format!("{long}{i}"),
                super::CachedRead {
                    version,
                    checked: 0,
                    mime_type: None,
                    body: super::Body::Bytes(Vec::new()),
                },
            );
        }
        assert!(cache.bytes <= super::READ_CACHE_BYTES);
        assert_eq!(cache.files.len(), 1);
    }

    /// A full page is followed by a walk ahead, unless pages hold one item (probes) or more
    /// than `AHEAD_MAX_PAGE` (two such pages would be kept).
    #[test]
    fn only_full_pages_of_a_bounded_size_are_walked_ahead() {
        use super::ahead::Page as _;
        let page = |n: usize| super::Walked {
            found: (0..n)
                .map(|i| super::Entry {
                    rel: format!("f{i}"),
                    size: 0,
                    modified: None,
                    mime: "text/plain",
                })
                .collect(),
            next: Some("next".into()),
        };
        let max = super::AHEAD_MAX_PAGE;
        assert_eq!(page(3).after(3), Some("next"));
        assert_eq!(page(2).after(3), None, "not full: the last page");
        assert_eq!(page(1).after(1), None, "a probe");
        assert_eq!(page(max).after(max), Some("next"));
        assert_eq!(page(max + 1).after(max + 1), None);
    }

    /// Once a page of an unwatched source is served, the next two are walked ahead and served
    /// when asked for within `FRESH` of their walk's start (by the reader too, which never
    /// waits); asked for later, a page is walked again. No walk follows the last page.
    #[test]
    fn the_next_pages_are_walked_ahead_and_served_only_while_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["a", "b", "c", "d"] {
            std::fs::create_dir(root.join(d)).unwrap();
            for f in 0..3 {
                std::fs::write(root.join(format!("{d}/f{f}")), "x").unwrap();
            }
        }
        let src = Arc::new(FilesSource::hiding_rules(&root, false, false));
        let first = src.page_blocking(None, 3);
        assert_eq!(names(&first), ["a/f0", "a/f1", "a/f2"]);
        let next = first.next.clone().expect("more");
        src.ahead.wait_idle();
        assert_eq!(src.ahead.ready(), ["b/", "c/"], "two pages ahead");
        // Walked before `b/f0` went: served as walked, by the reader's path.
        std::fs::remove_file(root.join("b/f0")).unwrap();
        let second = src.page_at_hand(Some(&next), 3).expect("ready");
        assert_eq!(names(&second), ["b/f0", "b/f1", "b/f2"]);
        // The fourth page is walked ahead at once; the third, asked for too late, is walked
        // again (without the file removed since).
        let next = second.next.clone().expect("more");
        src.ahead.wait_idle();
        assert_eq!(src.ahead.ready(), ["c/", "d/"]);
        src.ahead.age(super::ahead::FRESH * 2);
        std::fs::remove_file(root.join("c/f0")).unwrap();
        assert!(src.page_at_hand(Some(&next), 3).is_none());
        let third = src.page_blocking(Some(&next), 3);
        assert_eq!(names(&third), ["c/f1", "c/f2", "d/f0"]);
        // The page walked ahead after `d/` does not follow this one: walked again after
        // `d/f0`, and it is the last.
        src.ahead.wait_idle();
        assert_eq!(src.ahead.ready(), ["d/f0"]);
        let fourth = src.page_at_hand(third.next.as_deref(), 3).expect("ready");
        assert_eq!(names(&fourth), ["d/f1", "d/f2"]);
        assert!(fourth.next.is_none());
        src.ahead.wait_idle();
        assert!(src.ahead.ready().is_empty());
    }

    /// What `read` answers in place (`None`: the file is left to the blocking pool).
    fn read_now(
        src: &FilesSource,
        uri: &str,
    ) -> Option<Result<crate::providers::Contents, crate::providers::RequestError>> {
        match src.read_in_place(uri) {
            Ok(Ok(read)) => Some(Ok(read)),
            Ok(Err(_)) => None,
            Err(e) => Some(Err(e)),
        }
    }

    fn text(
        found: Option<Result<crate::providers::Contents, crate::providers::RequestError>>,
    ) -> String {
        match found.expect("answered in place").expect("read").body {
            Body::Text(t) => t,
            Body::Bytes(b) => panic!("bytes: {}", b.len()),
        }
    }

    /// A file larger than [`INLINE_READ`] is left to the blocking pool, which reads it whole;
    /// one at the limit is read in place.
    #[tokio::test]
    async fn large_files_are_read_on_the_pool_and_small_ones_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let size = usize::try_from(INLINE_READ).unwrap();
        std::fs::write(root.join("big.txt"), "x".repeat(size + 1)).unwrap();
        std::fs::write(root.join("edge.txt"), "y".repeat(size)).unwrap();
        let src = Arc::new(FilesSource::hiding_rules(&root, false, false));
        assert!(read_now(&src, "/big.txt").is_none(), "left to the pool");
        assert_eq!(text(read_now(&src, "/edge.txt")).len(), size);
        let read = src.clone().read("/big.txt".into()).await.unwrap();
        assert!(matches!(read.body, Body::Text(ref t) if t.len() == size + 1));
    }
}
