//! The sorted walk of a files source's visible files (`Walk`): folders opened from their
//! parent (`platform::Dir`) without following links, kinds from the folder itself, ignore rules
//! carried down as `visible::Frames`, a walk of everything split over two threads.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use super::folders::Names;
use super::list::PathList;
use super::{Entry, FilesSource};
use crate::providers::paths::{self, Dir, Kind};
use crate::providers::visible::Frames;

/// A sorted walk of the visible files. Each folder's names are sorted as if a folder's name
/// ended in `/`, which makes the walk's output sorted by relative path (`a-b`, `a.txt`, `a/x`),
/// so a walk can resume after a path: folders that sort wholly before it are not read.
///
/// Every folder is opened relative to its parent without following a link (one swapped in for
/// a folder while we walk is not entered), and read once: the kind of each name comes from the
/// folder itself (`d_type`; a `stat` only where the file system does not say), so only files
/// that pass every rule are statted, by their bare name in their folder. (Statting a long run of files on two threads bought nothing measurable on two
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

/// Whether a walk looks at a folder's entry at all, and whether it is a folder: not hidden
/// (unless `hidden`: dot names, the platform's hidden mark), not `.git`, and a folder or a
/// regular file by the entry's kind (a `stat` only where the folder does not say). Links are
/// never listed: one inside the root is listed at its target, one leading outside is not served
/// at all. Nor are FIFOs, sockets and devices.
fn walked(
    src: &FilesSource,
    dir: &Dir,
    name: &str,
    kind: Option<Kind>,
    marked: bool,
) -> Option<bool> {
    let kind = match kind {
        Some(k) => k,
        None => dir.stat(name).ok()?.kind,
    };
    let is_dir = match kind {
        Kind::Dir => true,
        Kind::File => false,
        _ => return None,
    };
    if !src.vis.name_shown(name) || (marked && !src.vis.shows_marked()) {
        return None;
    }
    Some(is_dir)
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
        // The root is canonical: no link to follow.
        if let Ok(dir) = Dir::open(&self.src.root) {
            self.dir(dir, "", after);
        }
    }

    /// Walks the folder `fd` (`rel_dir` below the root), skipping what sorts at or before
    /// `after` (a path relative to it). False once `limit` files are found.
    fn dir(&mut self, fd: Dir, rel_dir: &str, after: Option<&str>) -> bool {
        let src = self.src;
        // Where a name starts in a path below the root.
        let name_at = if rel_dir.is_empty() {
            0
        } else {
            rel_dir.len() + 1
        };
        // A walk of everything has no limit.
        let page = (self.limit < usize::MAX).then_some(self.limit);
        let Some(names) = src.sorted_names(&fd, page) else {
            return true;
        };
        let pushed = self.push_rules(rel_dir);
        let any_rules = self.frames.any();
        let going_on = if self.split && after.is_none() && names.dirs() >= 2 {
            self.split = false;
            self.items_on_two(&fd, &names, rel_dir, name_at, any_rules)
        } else {
            let items = keys(&names, names.resume_at(after)..names.len(), rel_dir);
            self.items(&fd, items, name_at, after, any_rules)
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
        dir: &Dir,
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
    fn holds_visible(&mut self, fd: Dir, rel_dir: &str) -> bool {
        let pushed = self.push_rules(rel_dir);
        let any_rules = self.frames.any();
        let found = self.scan(fd, rel_dir, any_rules);
        if pushed {
            self.frames.pop();
        }
        found
    }

    fn scan(&mut self, fd: Dir, rel_dir: &str, any_rules: bool) -> bool {
        let src = self.src;
        let mut dirs = Vec::new();
        let mut found = false;
        fd.for_each(|name, kind, marked| {
            let Some(is_dir) = walked(src, &fd, name, kind, marked) else {
                return true;
            };
            let rel = join(rel_dir, name, 0);
            if any_rules && self.ignored(&src.root.join(&rel), is_dir) {
                return true;
            }
            if is_dir {
                dirs.push(rel);
            } else if src.vis.selects(&rel) && fd.stat(name).is_ok_and(|st| st.kind == Kind::File) {
                found = true;
                return false;
            }
            true
        });
        if found {
            return true;
        }
        let name_at = rel_dir.len() + usize::from(!rel_dir.is_empty());
        for rel in dirs {
            let Ok(sub) = fd.open_dir(&rel[name_at..]) else {
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
        dir: &Dir,
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
                let Ok(fd) = dir.open_dir(name) else {
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
    fn flush(&mut self, dir: &Dir, run: &mut Vec<String>, name_at: usize) -> bool {
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
/// through a link. The MIME type is looked up once per extension; only files whose extension
/// names none are read (sniffed).
fn stat_each(dir: &Dir, rels: &[String], name_at: usize) -> Vec<Option<FileMeta>> {
    // (extension, its MIME type if it names one): folders hold few kinds of files.
    let mut mimes: Vec<(&str, Option<&'static str>)> = Vec::new();
    rels.iter()
        .map(|rel| {
            let name = rel.get(name_at..)?;
            let st = dir.stat(name).ok()?;
            if st.kind != Kind::File {
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
                size: st.size,
                modified: st.modified,
                mime,
            })
        })
        .collect()
}

impl FilesSource {
    /// The names of the folder `fd` a walk looks at (`walked`), sorted. A walk of a page
    /// (`keep_over`: its size) takes those kept for the folder's version if there are (see
    /// `folders.rs`), else reads them, and keeps them if the folder holds more than a page and
    /// its version has settled. A walk of everything (`None`) reads each folder once anyway:
    /// it neither looks up nor keeps (no `fstat` per folder). `None` if it cannot be read.
    pub(super) fn sorted_names(&self, fd: &Dir, keep_over: Option<usize>) -> Option<Arc<Names>> {
        let version = keep_over.and_then(|_| fd.version());
        let kept = || self.folders.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = &version
            && let Some(names) = kept().get(v)
        {
            return Some(names);
        }
        let mut names = Names::default();
        let read = fd.for_each(|name, kind, marked| {
            if let Some(is_dir) = walked(self, fd, name, kind, marked) {
                names.push(name, is_dir);
            }
            true
        });
        if !read {
            return None;
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
