//! Sorted folder listings kept between the walks of a files source, so that paging through a
//! folder larger than a page costs each page its own files, not a read and a sort of the
//! whole folder.
//!
//! A walk that resumes after a cursor must still read every name of the cursor's folder and
//! sort them to know what comes next (`getdents` has no order and no seek by name): in a folder
//! of 100 000 files, 100 pages of 1 000 read and sorted 10 million names. A folder's names,
//! sorted, are kept under its *version* (device, inode, size, modification and change time):
//! adding, removing or renaming an entry changes the folder's modification time, so a walk that
//! finds the same version finds the same names. Only versions that have stood for
//! [`SETTLED`](super::files) are kept (a change within one tick of the clock could otherwise
//! keep the version), only folders larger than a page, and at most [`KEPT_BYTES`] per source
//! and [`ALL_KEPT_BYTES`] in the process, the least recently used dropped first. Which entries are files or folders is kept too; nothing
//! else is (each file is still `stat`ed by the walk, each folder opened again below its parent).

use std::cmp::Ordering as Order;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::paths::Version;

/// The most bytes of names (and their index) kept for all folders of one source.
pub(crate) const KEPT_BYTES: usize = 8 * 1024 * 1024;

/// The most bytes kept for all sources together (a manifest may declare many).
pub(crate) const ALL_KEPT_BYTES: usize = 16 * 1024 * 1024;

/// The bytes kept now by all sources.
static ALL_KEPT: AtomicUsize = AtomicUsize::new(0);

/// The most folders kept for one source.
const KEPT_FOLDERS: usize = 8;

/// A folder's names a walk looks at, sorted as the walk orders them: bytewise by the name, a
/// folder's followed by `/`.
#[derive(Debug, Default)]
pub(crate) struct Names {
    text: String,
    items: Vec<Item>,
    dirs: usize,
}

#[derive(Debug, Clone, Copy)]
struct Item {
    at: usize,
    len: u32,
    is_dir: bool,
}

impl Names {
    /// Adds a name (in any order; `finish` sorts them).
    pub(crate) fn push(&mut self, name: &str, is_dir: bool) {
        // A name is at most a few hundred bytes (`NAME_MAX`).
        let Ok(len) = u32::try_from(name.len()) else {
            return;
        };
        let at = self.text.len();
        self.text.push_str(name);
        self.items.push(Item { at, len, is_dir });
        self.dirs += usize::from(is_dir);
    }

    /// Sorts the names pushed, and gives back the room they do not use.
    pub(crate) fn finish(&mut self) {
        self.text.shrink_to_fit();
        self.items.shrink_to_fit();
        let text = &self.text;
        self.items.sort_unstable_by(|a, b| {
            cmp_keys(bytes(text, *a), a.is_dir, bytes(text, *b), b.is_dir)
        });
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// How many are folders.
    pub(crate) fn dirs(&self) -> usize {
        self.dirs
    }

    /// The `i`th name and whether it is a folder.
    pub(crate) fn get(&self, i: usize) -> (&str, bool) {
        let it = self.items[i];
        (self.name(it), it.is_dir)
    }

    fn name(&self, it: Item) -> &str {
        &self.text[it.at..it.at + it.len as usize]
    }

    /// Where a walk resuming after `after` (a path relative to this folder) starts: the first
    /// name that sorts after it, or the folder `after` lies in.
    pub(crate) fn resume_at(&self, after: Option<&str>) -> usize {
        let Some(a) = after else { return 0 };
        let text = &self.text;
        let i = self.items.partition_point(|it| {
            cmp_keys(bytes(text, *it), it.is_dir, a.as_bytes(), false).is_le()
        });
        // No name sorts between a folder's `name/` and a path inside it (names hold no `/`).
        if let Some(prev) = i.checked_sub(1).map(|p| self.items[p])
            && prev.is_dir
            && a.strip_prefix(self.name(prev))
                .is_some_and(|r| r.starts_with('/'))
        {
            return i - 1;
        }
        i
    }

    /// What keeping these names costs.
    fn bytes(&self) -> usize {
        self.text.capacity() + self.items.capacity() * std::mem::size_of::<Item>()
    }
}

fn bytes(text: &str, it: Item) -> &[u8] {
    &text.as_bytes()[it.at..it.at + it.len as usize]
}

/// `a` followed by `/` if `a_dir` against `b` followed by `/` if `b_dir`, bytewise (the common
/// part compared at once).
fn cmp_keys(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> Order {
    let n = a.len().min(b.len());
    a[..n].cmp(&b[..n]).then_with(|| {
        // The byte after the common part, if any: the rest of the longer, or a `/`.
        let next = |x: &[u8], dir: bool| x.get(n).copied().or(dir.then_some(b'/'));
        match (next(a, a_dir), next(b, b_dir)) {
            (Some(x), Some(y)) if x != y => x.cmp(&y),
            // Equal bytes here: one is a name's last byte and the other a `/`, which no
            // name holds; or both are the `/` of equal names.
            (Some(_), Some(_)) => {
                (a.len() + usize::from(a_dir)).cmp(&(b.len() + usize::from(b_dir)))
            }
            (x, y) => x.is_some().cmp(&y.is_some()),
        }
    })
}

/// The sorted listings kept for one source, most recently used last.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    folders: VecDeque<(Version, Arc<Names>)>,
    bytes: usize,
}

impl Kept {
    /// The names kept for the folder at `version`, if any.
    pub(crate) fn get(&mut self, version: &Version) -> Option<Arc<Names>> {
        let i = self.folders.iter().position(|(v, _)| v == version)?;
        let found = self.folders.remove(i)?;
        let names = found.1.clone();
        self.folders.push_back(found);
        Some(names)
    }

    /// Keeps `names` for the folder at `version` (a settled version), dropping the least
    /// recently used to stay within bounds; names that do not fit are not kept.
    pub(crate) fn put(&mut self, version: Version, names: Arc<Names>) {
        let cost = names.bytes();
        if cost > KEPT_BYTES {
            return;
        }
        // The same folder at an older version goes: it cannot be found again. (Versions
        // differ in times; a folder is one device and inode.)
        if let Some(i) = self.folders.iter().position(|(v, _)| v.same_file(&version)) {
            self.drop_at(i);
        }
        while self.folders.len() >= KEPT_FOLDERS || self.bytes + cost > KEPT_BYTES {
            self.drop_at(0);
        }
        // Within the process's bound too, dropping this source's own if others hold the rest.
        while ALL_KEPT
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |all| {
                (all + cost <= ALL_KEPT_BYTES).then_some(all + cost)
            })
            .is_err()
        {
            if self.folders.is_empty() {
                return;
            }
            self.drop_at(0);
        }
        self.bytes += cost;
        self.folders.push_back((version, names));
    }

    fn drop_at(&mut self, i: usize) {
        if let Some((_, old)) = self.folders.remove(i) {
            let cost = old.bytes();
            self.bytes -= cost;
            ALL_KEPT.fetch_sub(cost, Ordering::AcqRel);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.folders.len()
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        ALL_KEPT.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(of: &[(&str, bool)]) -> Names {
        let mut n = Names::default();
        for (name, is_dir) in of {
            n.push(name, *is_dir);
        }
        n.finish();
        n
    }

    /// The tests that keep megabytes, one at a time (the process's bound is shared).
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn sized(bytes: usize) -> Arc<Names> {
        let mut n = Names::default();
        let long = "n".repeat(1024);
        for _ in 0..=bytes / (long.len() + std::mem::size_of::<Item>()) {
            n.push(&long, false);
        }
        n.finish();
        assert!(n.bytes() >= bytes);
        Arc::new(n)
    }

    fn all(n: &Names) -> Vec<(&str, bool)> {
        (0..n.len()).map(|i| n.get(i)).collect()
    }

    /// Folders sort as their name followed by `/`: `a/` after `a.txt` and `a-b`, before `a0`.
    #[test]
    fn sorted_as_the_walk_orders_paths() {
        let n = names(&[
            ("a0", false),
            ("a", true),
            ("a.txt", false),
            ("b", false),
            ("a-b", true),
        ]);
        assert_eq!(
            all(&n),
            [
                ("a-b", true),
                ("a.txt", false),
                ("a", true),
                ("a0", false),
                ("b", false)
            ]
        );
        assert_eq!(n.dirs(), 2);
    }

    /// The comparison of keys agrees with comparing the keys written out, on names that share
    /// prefixes and bytes around `/`.
    #[test]
    fn keys_compare_as_written_out() {
        let names = [
            "", "a", "a-", "a.", "a0", "a/b", "ab", "b", "a\u{7f}", "é", "a.txt", "a-b",
        ];
        for a in names {
            for b in names {
                for (ad, bd) in [(false, false), (false, true), (true, false), (true, true)] {
                    let written = |n: &str, d: bool| format!("{n}{}", if d { "/" } else { "" });
                    assert_eq!(
                        cmp_keys(a.as_bytes(), ad, b.as_bytes(), bd),
                        written(a, ad).cmp(&written(b, bd)),
                        "{a:?} {ad} / {b:?} {bd}"
                    );
                }
            }
        }
    }

    /// Resuming after a path starts at the first name after it, or at the folder it is in.
    #[test]
    fn resumes_after_a_path_or_in_its_folder() {
        let n = names(&[("a", true), ("a.txt", false), ("b", false), ("c", true)]);
        // a.txt, a/, b, c/
        for (after, at) in [
            (None, 0),
            (Some(""), 0),
            (Some("a.txt"), 1),
            (Some("a-"), 0),
            (Some("a/"), 1),
            (Some("a/x/y"), 1),
            (Some("a0"), 2),
            (Some("b"), 3),
            (Some("c/"), 3),
            (Some("c/z"), 3),
            (Some("d"), 4),
        ] {
            assert_eq!(n.resume_at(after), at, "after {after:?}");
        }
        // A file named like the folder a path is in does not hold it.
        let n = names(&[("a", false), ("b", false)]);
        assert_eq!(n.resume_at(Some("a/x")), 1);
    }

    /// Kept by version, the least recently used dropped first, within the byte bound; a folder
    /// kept again at a new version replaces the old.
    #[test]
    fn kept_by_version_within_bounds() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let root = crate::providers::platform::test_version(1);
        let tmp = crate::providers::platform::test_version(2);
        let mut kept = Kept::default();
        kept.put(root, Arc::new(names(&[("x", false)])));
        kept.put(tmp, Arc::new(names(&[("y", false)])));
        assert_eq!(kept.get(&root).map(|n| n.len()), Some(1));
        // Same folder, another version: the old one goes.
        let newer = root.touched();
        kept.put(newer, Arc::new(names(&[("x", false), ("z", false)])));
        assert_eq!(kept.len(), 2);
        assert!(kept.get(&root).is_none());
        assert_eq!(kept.get(&newer).map(|n| n.len()), Some(2));
        // Too large for the bound: not kept.
        let mut big = Names::default();
        let long = "n".repeat(1024);
        while big.bytes() <= KEPT_BYTES {
            big.push(&long, false);
        }
        kept.put(tmp.touched(), Arc::new(big));
        assert!(kept.get(&tmp.touched()).is_none());
        assert!(kept.bytes <= KEPT_BYTES);
        // Two that fit only one at a time: the least recently used goes.
        let mut half = Names::default();
        while half.bytes() <= KEPT_BYTES / 2 + 1 {
            half.push(&long, false);
        }
        let half = Arc::new(half);
        kept.put(tmp, half.clone());
        kept.put(newer, half);
        assert!(kept.bytes <= KEPT_BYTES);
        assert!(kept.get(&tmp).is_none() && kept.get(&newer).is_some());
    }

    /// All sources together keep at most `ALL_KEPT_BYTES`: a source whose own folders do not
    /// make room keeps nothing more; what a dropped source kept is counted out.
    #[test]
    fn the_process_keeps_a_bounded_total() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let root = crate::providers::platform::test_version(1);
        let big = ALL_KEPT_BYTES * 7 / 16;
        let (mut a, mut b, mut c) = (Kept::default(), Kept::default(), Kept::default());
        a.put(root, sized(big));
        b.put(root, sized(big));
        c.put(root, sized(big));
        assert_eq!((a.len(), b.len(), c.len()), (1, 1, 0));
        // Its own older folder makes room for a newer one.
        b.put(root.touched(), sized(big));
        assert!(b.get(&root.touched()).is_some() && b.get(&root).is_none());
        drop(a);
        c.put(root, sized(big));
        assert_eq!(c.len(), 1);
        assert!(ALL_KEPT.load(Ordering::Acquire) <= ALL_KEPT_BYTES);
    }
}
