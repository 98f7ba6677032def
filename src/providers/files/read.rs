//! Reading a files source's resources: the race-free open (`open_beneath` from the root's
//! descriptor, kept open while watched), the visibility of the path asked for and of the real
//! path opened, the capped read, and the small reads a watched source keeps (`ReadCache`).

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use super::FilesSource;
use crate::manifest::expand::format_size;
use crate::providers::paths::{self, ReadError, io_reason, mime_for};
use crate::providers::{Body, Contents, RequestError, admit, arrival, blocking};
use crate::quote::{Quote, quote};

/// Files at most this large are read on the runtime thread (see `read_resource`).
pub(super) const INLINE_READ: u64 = 16 * 1024;

/// Small files read in place lately, by path below the root, each with the version it was
/// read at (`paths::Version`): at most [`READ_CACHE_FILES`] files and [`READ_CACHE_BYTES`]
/// (contents, MIME types and paths), the oldest dropped first.
#[derive(Debug, Default)]
pub(super) struct ReadCache {
    pub(super) files: HashMap<String, CachedRead>,
    pub(super) order: VecDeque<String>,
    pub(super) bytes: usize,
}

#[derive(Debug)]
pub(super) struct CachedRead {
    pub(super) version: paths::Version,
    /// `FilesSource::changes_seen` when the path last passed the rules.
    pub(super) checked: u64,
    /// The input read (`arrival::current`) after which its path was last found unchanged, on
    /// the thread reading it; 0: none.
    pub(super) stat_after: u64,
    pub(super) mime_type: Option<String>,
    pub(super) body: Body,
}

pub(super) const READ_CACHE_FILES: usize = 1024;

pub(super) const READ_CACHE_BYTES: usize = 1024 * 1024;

impl ReadCache {
    /// What a kept read holds: its bytes, its MIME type and its path (twice: in the map and
    /// in `order`).
    fn cost(rel: &str, read: &CachedRead) -> usize {
        read.body.len() + read.mime_type.as_ref().map_or(0, String::len) + 2 * rel.len()
    }

    pub(super) fn put(&mut self, rel: String, read: CachedRead) {
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

impl FilesSource {
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
        dir: &mut Option<(String, paths::Dir)>,
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
        match paths::open_in(fd, &self.root, rel, name) {
            Ok((file, size)) => Some(paths::Opened {
                file,
                real_rel: rel.to_owned(),
                size,
                version: None,
            }),
            Err(_) => self.open_served(rel),
        }
    }

    /// A small file of a watched source read in place lately, if a `stat` of its path finds
    /// the version it was read at: one system call instead of the five of a read (`fstatat`,
    /// `openat`, `fstat`, `read`, `close`). The path must still pass every rule; a symlink at
    /// its end is not followed (such a file is never kept), and one on the way leads to these
    /// bytes only if it leads to this very file (same device and inode) unchanged. Not even
    /// the `stat` when one was made on this thread since its input's last read
    /// (`providers::arrival`): every request of that read was sent before it.
    pub(super) fn read_cached(&self, uri: &str, rel: &str) -> Option<Contents> {
        let arrival = arrival::current();
        let (want, checked, stat_after) = {
            let cache = self.read_cache.lock().ok()?;
            let kept = cache.files.get(rel)?;
            (kept.version, kept.checked, kept.stat_after)
        };
        // Read before the rules are checked: a change applied meanwhile makes the next read
        // check them again.
        let changes = self.changes_seen.load(Ordering::Acquire);
        if checked != changes && !self.visible(rel) {
            return None;
        }
        if arrival == 0 || stat_after != arrival {
            let root = self.root_dir.lock().ok()?.clone()?;
            let st = root.stat_path(rel)?;
            if st.kind != paths::Kind::File || st.version != Some(want) {
                return None;
            }
        }
        let mut cache = self.read_cache.lock().ok()?;
        let hit = cache.files.get_mut(rel).filter(|c| c.version == want)?;
        hit.checked = changes;
        hit.stat_after = arrival;
        Some(Contents {
            uri: uri.to_owned(),
            mime_type: hit.mime_type.clone(),
            body: hit.body.clone(),
        })
    }

    /// Keeps what `read_in_place` read of the file at `rel` at `version`, if it has stood unchanged
    /// for `settled`.
    pub(super) fn keep_read(
        &self,
        rel: String,
        version: paths::Version,
        checked: u64,
        read: &Contents,
    ) {
        // Only while the watcher will say that the rules changed.
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        if !version.settled(SystemTime::now(), self.settled) {
            return;
        }
        if let Ok(mut cache) = self.read_cache.lock() {
            cache.put(
                rel,
                CachedRead {
                    version,
                    checked,
                    stat_after: 0,
                    mime_type: read.mime_type.clone(),
                    body: read.body.clone(),
                },
            );
        }
    }

    pub(super) fn open_for_read(&self, uri: &str) -> Result<paths::Opened, RequestError> {
        self.vis.fresh();
        self.open(uri)
            .ok_or_else(|| RequestError::NotFound(uri.to_owned()))
    }

    /// Reads an opened resource (blocking: a large one is read on a blocking thread).
    pub(super) fn read_opened(
        &self,
        uri: &str,
        mut opened: paths::Opened,
    ) -> Result<Contents, RequestError> {
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

    /// `Source::read`: what `read_in_place` does not finish is read on a blocking thread.
    pub(super) async fn read_resource(
        self: Arc<Self>,
        uri: String,
    ) -> Result<Contents, RequestError> {
        match self.read_in_place(&uri) {
            InPlace::Done(read) => read,
            InPlace::Large(opened) => {
                // Admitted before its bytes are read: large reads wait for room in the answer
                // budget rather than all being held at once.
                if opened.size <= self.max_size {
                    admit::expect(admit::read_cost(opened.size)).await;
                }
                blocking(move || self.read_opened(&uri, opened)).await?
            }
        }
    }

    /// A small file is opened and read in place: `open_beneath`, `fstat` and one `read` of a
    /// local file cost a few microseconds, less than the two thread hand-offs (and the
    /// wake-ups) of the blocking pool; a small file of a watched folder read lately costs one
    /// `fstatat` (`read_cached`). A file larger than [`INLINE_READ`] is opened and left to
    /// the caller. (A file system that hangs would hang the runtime thread; so would SQLite's
    /// `stat` of its database, done in place for the same reason.)
    pub(super) fn read_in_place(&self, uri: &str) -> InPlace {
        // The path below the root of a watched folder's file: what its reads are kept by.
        let kept_by = (self.watch && !self.root_is_file)
            .then(|| paths::plain_relative(self.after_root(uri)?.strip_prefix('/')?))
            .flatten();
        if let Some(rel) = &kept_by
            && let Some(hit) = self.read_cached(uri, rel)
        {
            return InPlace::Done(Ok(hit));
        }
        // Read before the rules are checked (see `read_cached`).
        let changes = self.changes_seen.load(Ordering::Acquire);
        let opened = match &kept_by {
            // What `open_for_read` does, without finding the path again.
            Some(rel) => self
                .open_rel(rel)
                .ok_or_else(|| RequestError::NotFound(uri.to_owned())),
            None => self.open_for_read(uri),
        };
        let opened = match opened {
            Ok(o) if o.size > INLINE_READ => return InPlace::Large(o),
            Ok(o) => o,
            Err(e) => return InPlace::Done(Err(e)),
        };
        // Kept only if opened by its own path (no symlink followed).
        let keep = kept_by
            .filter(|rel| *rel == opened.real_rel)
            .zip(opened.version);
        let read = self.read_opened(uri, opened);
        if let (Ok(contents), Some((rel, version))) = (&read, keep) {
            self.keep_read(rel, version, changes, contents);
        }
        InPlace::Done(read)
    }
}

/// What `read_in_place` did.
pub(super) enum InPlace {
    /// Read (or refused) in place.
    Done(Result<Contents, RequestError>),
    /// Opened, and too large to read in place.
    Large(paths::Opened),
}
