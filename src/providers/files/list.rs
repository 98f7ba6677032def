//! Listing a files source: the whole sorted listing (kept while watched), pages of it (a
//! sorted walk that resumes after a path, pages walked ahead on a thread of their own), the
//! paths `search_files` searches, and completion of `path`.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::ahead;
use super::walk::Walk;
use super::{Entry, FilesSource};
use crate::providers::paths::{self, sniff_is_text};
use crate::providers::{Completion, PageOf, ResourceInfo};

/// A page of a sorted walk, and the key to resume after when more follow.
#[derive(Debug)]
pub(super) struct Walked {
    pub(super) found: Vec<Entry>,
    pub(super) next: Option<String>,
}

/// The largest pages walked ahead: two are kept, and a page is about 100 bytes a file.
pub(super) const AHEAD_MAX_PAGE: usize = 10_000;

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
    pub(super) fn append(&mut self, other: &mut PathList) {
        let base = self.text.len();
        self.text.push_str(&other.text);
        self.ends.extend(other.ends.iter().map(|e| e + base));
        *other = PathList::default();
    }

    /// Gives back the room the paths do not use.
    pub(super) fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

impl FilesSource {
    /// Every visible file, sorted by name. Walks the tree (blocking: call from a blocking thread).
    pub(super) fn list_blocking(&self) -> Vec<ResourceInfo> {
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
    pub(super) fn page_blocking(
        self: &Arc<Self>,
        after: Option<&str>,
        limit: usize,
    ) -> PageOf<ResourceInfo> {
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

    /// The page after `after` if it is at hand (never waits): a page of a watched source's
    /// cached listing, or a page walked ahead and ready.
    pub(super) fn page_at_hand(
        self: &Arc<Self>,
        after: Option<&str>,
        limit: usize,
    ) -> Option<PageOf<ResourceInfo>> {
        if let Some(all) = self.cached() {
            return Some(self.page_of(&all, after, limit));
        }
        self.page_ahead_now(after?, limit)
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

    pub(super) fn page_from(&self, walked: Walked) -> PageOf<ResourceInfo> {
        PageOf {
            items: walked.found.into_iter().map(|e| self.info_of(e)).collect(),
            next: walked.next,
        }
    }

    /// Keeps walking the pages after `page` ahead ([`Ahead`]: up to two, on one thread of
    /// their own, whatever a client pipelines), unless no page follows or pages hold one item
    /// or more than [`AHEAD_MAX_PAGE`].
    pub(super) fn read_ahead(self: &Arc<Self>, page: &Walked, limit: usize) {
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
    pub(super) fn walk_page(&self, after: Option<&str>, limit: usize) -> Walked {
        self.vis.fresh();
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
    pub(super) fn page_of(
        &self,
        all: &[Entry],
        after: Option<&str>,
        limit: usize,
    ) -> PageOf<ResourceInfo> {
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
    pub(super) fn cached(&self) -> Option<Arc<Vec<Entry>>> {
        if !self.watch {
            return None;
        }
        self.listing.lock().ok()?.clone()
    }

    pub(super) fn info(&self, e: &Entry) -> ResourceInfo {
        self.info_of(e.clone())
    }

    /// `info`, the entry's path moved into the resource's name.
    pub(super) fn info_of(&self, e: Entry) -> ResourceInfo {
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

    pub(super) fn entries(&self) -> Arc<Vec<Entry>> {
        if let Some(cached) = self.cached() {
            return cached;
        }
        let epoch = self.listing_epoch.load(Ordering::Acquire);
        self.vis.fresh();
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
        // Kept only if nothing was dropped since the walk began, and the watcher will say when
        // it goes stale (its watches were in place before the walk).
        if self.watch
            && self.armed.load(Ordering::Acquire)
            && let Ok(mut l) = self.listing.lock()
            && self.listing_epoch.load(Ordering::Acquire) == epoch
        {
            *l = Some(out.clone());
            self.listing_stamp
                .store(crate::providers::next_listing_stamp(), Ordering::Release);
        }
        out
    }

    pub(super) fn entry(&self, rel: String, path: &Path, meta: &fs::Metadata) -> Entry {
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
    pub(super) fn walk_sorted(&self, after: Option<&str>, limit: usize) -> Vec<Entry> {
        let mut walk = self.walker(limit, false);
        walk.run(after);
        walk.out
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
        self.vis.fresh();
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

    /// Completes the `path` variable of this source's template (blocking).
    pub(super) fn complete_blocking(&self, var: &str, prefix: &str) -> Completion {
        if var != "path" || self.root_is_file {
            return Completion::default();
        }
        let entries = self.entries();
        Completion::from_candidates(entries.iter().map(|e| e.rel.as_str()), prefix)
    }
}
