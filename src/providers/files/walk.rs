//! The sorted walk of a files source's visible files (`Walk`): folders opened from their
//! parent's descriptor without following symlinks, kinds from the folder itself, ignore rules
//! carried down as `visible::Frames`, a walk of everything split over two threads.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::folders::Names;
use super::list::PathList;
use super::{Entry, FilesSource};
use crate::providers::paths;
use crate::providers::visible::Frames;

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
pub(super) struct Walk<'a> {
    pub(super) src: &'a FilesSource,
    pub(super) limit: usize,
    /// Ignore rules in force in the folder being read.
    pub(super) frames: Frames,
    pub(super) out: Vec<Entry>,
    /// What a walk of names only found, in place of `out`.
    pub(super) names: PathList,
    /// One file short of `limit`, a folder only needs to hold a visible file: it is scanned
    /// unsorted, its path kept in `probed`.
    pub(super) probe: bool,
    pub(super) probed: Option<String>,
    /// A walk of everything not yet split over two threads: the first folder holding two
    /// folders or more gives its second half of folders (and what follows) to a second thread.
    pub(super) split: bool,
    /// Paths only (`served_paths`: a walk of everything, no `limit`), into `names`: files are
    /// not `stat`ed. Whoever opens one checks it then (`open_served_in`).
    pub(super) names_only: bool,
}

/// Whether this process may run on two cores or more (asked once).
fn two_cores() -> bool {
    static TWO: OnceLock<bool> = OnceLock::new();
    *TWO.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2))
}

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
    if !src.vis.name_shown(name) {
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
    pub(super) fn run(&mut self, after: Option<&str>) {
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
        let any_rules = self.frames.any();
        let going_on = if self.split && after.is_none() && names.dirs() >= 2 {
            self.split = false;
            self.items_on_two(fd.as_fd(), &names, rel_dir, name_at, any_rules)
        } else {
            let items = keys(&names, names.resume_at(after)..names.len(), rel_dir);
            self.items(fd.as_fd(), items, name_at, after, any_rules)
        };
        if pushed {
            self.frames.pop();
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
            frames: self.frames.clone(),
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
        if !src.vis.uses_ignore_files() {
            return false;
        }
        let path = if rel_dir.is_empty() {
            src.root.clone()
        } else {
            src.root.join(rel_dir)
        };
        src.vis.enter(&mut self.frames, &path)
    }

    /// Whether the folder `fd` (`rel_dir` below the root, after everything listed so far)
    /// holds a visible file, in any order: names are checked as they are read, the first
    /// visible regular file ends the scan.
    fn holds_visible(&mut self, fd: OwnedFd, rel_dir: &str) -> bool {
        let pushed = self.push_rules(rel_dir);
        let any_rules = self.frames.any();
        let found = self.scan(fd, rel_dir, any_rules);
        if pushed {
            self.frames.pop();
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
                } else if src.vis.selects(&rel)
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
                if !src.vis.selects(&rel) {
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

    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        self.frames.ignores(path, is_dir)
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

/// How folders are opened by the walk: never through a symlink.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOFOLLOW);

impl FilesSource {
    /// The names of the folder `fd` a walk looks at (`walked`), sorted. A walk of a page
    /// (`keep_over`: its size) takes those kept for the folder's version if there are (see
    /// `folders.rs`), else reads them, and keeps them if the folder holds more than a page and
    /// its version has settled. A walk of everything (`None`) reads each folder once anyway:
    /// it neither looks up nor keeps (no `fstat` per folder). `None` if it cannot be read.
    pub(super) fn sorted_names(
        &self,
        fd: BorrowedFd<'_>,
        keep_over: Option<usize>,
    ) -> Option<Arc<Names>> {
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

    pub(super) fn walker(&self, limit: usize, probe: bool) -> Walk<'_> {
        Walk {
            src: self,
            limit,
            frames: self.vis.frames(),
            out: Vec::new(),
            names: PathList::default(),
            probe,
            probed: None,
            split: !probe && limit == usize::MAX && two_cores(),
            names_only: false,
        }
    }
}
