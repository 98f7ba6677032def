//! Unit tests of the files source: kept reads, paging and walks ahead, kept folders.

use std::sync::Arc;

use super::FilesSource;
#[cfg(unix)] // (the kept reads' tests)
use super::read::InPlace;
use crate::providers::{Body, ChangeEffect, PageOf, ResourceInfo};

/// A files source over `root` (`gitignore`: honouring `.gitignore`), watched and with its
/// watches in place: it keeps listings and small reads.
fn armed(root: &std::path::Path, gitignore: bool) -> FilesSource {
    let mut src = FilesSource::of_folder(root, false, gitignore);
    src.watch = true;
    *src.armed.get_mut() = true;
    src
}

fn names(page: &PageOf<ResourceInfo>) -> Vec<&str> {
    page.items.iter().map(|r| r.name.as_str()).collect()
}

/// A watched source answers a small file read in place lately from what it read, while a
/// `stat` finds the same version; any change of size or time reads it again, and a file
/// that has not stood unchanged for `settled` is not kept at all.
// Unix only: kept reads and kept folder listings are keyed by file versions (device, inode,
// times), which Windows does not give (`platform::Version`: the caches stay empty there).
#[cfg(unix)]
#[test]
fn small_reads_are_kept_while_their_version_holds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let file = root.join("a.txt");
    std::fs::write(&file, "one").unwrap();
    let mut src = armed(&root, false);
    // Just written: not kept.
    assert_eq!(text(src.read_in_place("/a.txt")), "one");
    assert!(src.read_cache.lock().unwrap().files.is_empty());
    src.settled = std::time::Duration::ZERO;
    assert_eq!(text(src.read_in_place("/a.txt")), "one");
    // Kept: what is kept is what a read answers (seen by changing it behind the source's back).
    let keep_as = |src: &FilesSource, s: &str| {
        let mut cache = src.read_cache.lock().unwrap();
        cache.files.get_mut("a.txt").unwrap().body = crate::providers::Body::Text(s.to_owned());
    };
    keep_as(&src, "own");
    assert_eq!(text(src.read_in_place("/a.txt")), "own");
    // Another size: read again.
    std::fs::write(&file, "two!").unwrap();
    assert_eq!(text(src.read_in_place("/a.txt")), "two!");
    // The same size, another time: read again.
    keep_as(&src, "kep!");
    std::fs::write(&file, "2wo!").unwrap();
    let f = std::fs::File::options().write(true).open(&file).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
        .unwrap();
    assert_eq!(text(src.read_in_place("/a.txt")), "2wo!");
    // Gone: not found, whatever was kept.
    std::fs::remove_file(&file).unwrap();
    assert!(matches!(src.read_in_place("/a.txt"), InPlace::Done(Err(_))));
    // A file reached through a symlink is never kept.
    std::fs::write(root.join("b.txt"), "bee").unwrap();
    std::os::unix::fs::symlink("b.txt", root.join("l.txt")).unwrap();
    assert_eq!(text(src.read_in_place("/l.txt")), "bee");
    assert!(!src.read_cache.lock().unwrap().files.contains_key("l.txt"));
    // A kept file's folder swapped for a symlink that leaves the root: not found (its
    // `stat` finds another file; the read that follows refuses the way out).
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.txt"), "secret").unwrap();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/x.txt"), "inside").unwrap();
    assert_eq!(text(src.read_in_place("/d/x.txt")), "inside");
    assert!(src.read_cache.lock().unwrap().files.contains_key("d/x.txt"));
    std::fs::rename(root.join("d"), root.join("d.old")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("d")).unwrap();
    assert!(matches!(
        src.read_in_place("/d/x.txt"),
        InPlace::Done(Err(_))
    ));
}

/// On the thread that reads requests, a kept read is checked once per read of its input
/// (`providers::arrival`): a change made after that read is seen from the next one on (the
/// requests answered meanwhile were sent before it). A thread that reads no input checks at
/// every read.
// Unix only: as `small_reads_are_kept_while_their_version_holds` (no kept reads on Windows).
#[cfg(unix)]
#[test]
fn a_kept_read_is_checked_once_per_read_of_the_input() {
    use crate::providers::arrival;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let file = root.join("a.txt");
    std::fs::write(&file, "one").unwrap();
    let mut src = armed(&root, false);
    src.settled = std::time::Duration::ZERO;
    assert_eq!(text(src.read_in_place("/a.txt")), "one");
    assert!(src.read_cache.lock().unwrap().files.contains_key("a.txt"));
    arrival::input_arrived();
    assert_eq!(text(src.read_in_place("/a.txt")), "one");
    std::fs::write(&file, "two!").unwrap();
    // The same input: what its requests were sent before.
    assert_eq!(text(src.read_in_place("/a.txt")), "one");
    arrival::input_arrived();
    assert_eq!(text(src.read_in_place("/a.txt")), "two!");
    // No input on this thread: every read checks.
    std::thread::scope(|t| {
        t.spawn(|| {
            assert_eq!(text(src.read_in_place("/a.txt")), "two!");
            std::fs::write(&file, "three").unwrap();
            assert_eq!(text(src.read_in_place("/a.txt")), "three");
        });
    });
}

/// A kept file replaced by a symlink (to another file inside the root) is read through the
/// symlink, not answered from what was kept: the `stat` does not follow the last name.
// Unix only: kept reads and kept folder listings are keyed by file versions (device, inode,
// times), which Windows does not give (`platform::Version`: the caches stay empty there).
#[cfg(unix)]
#[test]
fn a_kept_file_swapped_for_a_symlink_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "one").unwrap();
    std::fs::write(root.join("b.txt"), "bee").unwrap();
    let mut src = armed(&root, false);
    src.settled = std::time::Duration::ZERO;
    assert_eq!(text(src.read_in_place("/a.txt")), "one");
    assert!(src.read_cache.lock().unwrap().files.contains_key("a.txt"));
    std::fs::remove_file(root.join("a.txt")).unwrap();
    std::os::unix::fs::symlink("b.txt", root.join("a.txt")).unwrap();
    assert_eq!(text(src.read_in_place("/a.txt")), "bee");
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
    let src = Arc::new(FilesSource::of_folder(&root, false, false));
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
// Unix only: kept reads and kept folder listings are keyed by file versions (device, inode,
// times), which Windows does not give (`platform::Version`: the caches stay empty there).
#[cfg(unix)]
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
    let version = || crate::providers::platform::version_at(&root).expect("a version");
    let kept = |src: &Arc<FilesSource>| src.folders.lock().unwrap().get(&version());
    // Just changed: not kept.
    let src = Arc::new(FilesSource::of_folder(&root, false, false));
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
    let mut fresh = FilesSource::of_folder(&root, false, false);
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
// Unix only: kept reads and kept folder listings are keyed by file versions (device, inode,
// times), which Windows does not give (`platform::Version`: the caches stay empty there).
#[cfg(unix)]
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
    let mut src = FilesSource::of_folder(&root, false, false);
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
// Unix only: kept reads and kept folder listings are keyed by file versions (device, inode,
// times), which Windows does not give (`platform::Version`: the caches stay empty there).
#[cfg(unix)]
#[test]
fn kept_reads_are_hidden_by_a_new_ignore_rule() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "one").unwrap();
    let mut src = armed(&root, true);
    src.settled = std::time::Duration::ZERO;
    assert_eq!(text(src.read_in_place("/a.txt")), "one");
    assert_eq!(text(src.read_in_place("/a.txt")), "one");
    assert!(src.read_cache.lock().unwrap().files.contains_key("a.txt"));
    std::fs::write(root.join(".gitignore"), "a.txt\n").unwrap();
    src.apply_changes_blocking(&[crate::watch::Change {
        path: root.join(".gitignore"),
        kind: crate::watch::ChangeKind::Created,
    }]);
    assert!(matches!(src.read_in_place("/a.txt"), InPlace::Done(Err(_))));
    // Shown again: read (and kept) again.
    std::fs::write(root.join(".gitignore"), "b.txt\n").unwrap();
    src.apply_changes_blocking(&[crate::watch::Change {
        path: root.join(".gitignore"),
        kind: crate::watch::ChangeKind::Modified,
    }]);
    assert_eq!(text(src.read_in_place("/a.txt")), "one");
}

/// The kept reads are bounded in bytes and files, the oldest dropped first.
#[test]
fn kept_reads_are_bounded() {
    let mut cache = super::read::ReadCache::default();
    let version = crate::providers::platform::test_version(1);
    // Four fit exactly: each path ("fN") counts twice.
    let chunk = super::read::READ_CACHE_BYTES / 4 - 4;
    for i in 0..6 {
        cache.put(
            format!("f{i}"),
            super::read::CachedRead {
                version,
                checked: 0,
                stat_after: 0,
                mime_type: None,
                body: crate::providers::Body::Bytes(vec![0; chunk]),
            },
        );
    }
    assert!(cache.bytes <= super::read::READ_CACHE_BYTES);
    assert_eq!(cache.files.len(), 4);
    assert!(!cache.files.contains_key("f1") && cache.files.contains_key("f5"));
    for i in 0..=super::read::READ_CACHE_FILES {
        cache.put(
            format!("g{i}"),
            super::read::CachedRead {
                version,
                checked: 0,
                stat_after: 0,
                mime_type: None,
                body: crate::providers::Body::Bytes(Vec::new()),
            },
        );
    }
    assert_eq!(cache.files.len(), super::read::READ_CACHE_FILES);
    assert_eq!(cache.order.len(), super::read::READ_CACHE_FILES);
    // Long paths count too.
    let long = "p".repeat(super::read::READ_CACHE_BYTES / 4);
    for i in 0..3 {
        cache.put(
            format!("{long}{i}"),
            super::read::CachedRead {
                version,
                checked: 0,
                stat_after: 0,
                mime_type: None,
                body: crate::providers::Body::Bytes(Vec::new()),
            },
        );
    }
    assert!(cache.bytes <= super::read::READ_CACHE_BYTES);
    assert_eq!(cache.files.len(), 1);
}

/// A full page is followed by a walk ahead, unless pages hold one item (probes) or more
/// than `AHEAD_MAX_PAGE` (two such pages would be kept).
#[test]
fn only_full_pages_of_a_bounded_size_are_walked_ahead() {
    use super::ahead::Page as _;
    let page = |n: usize| super::list::Walked {
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
    let max = super::list::AHEAD_MAX_PAGE;
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
    let src = Arc::new(FilesSource::of_folder(&root, false, false));
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

// (For the kept reads' tests: Unix only.)
#[cfg(unix)]
fn text(found: InPlace) -> String {
    let InPlace::Done(read) = found else {
        panic!("not answered in place");
    };
    match read.expect("read").body {
        Body::Text(t) => t,
        Body::Bytes(b) => panic!("bytes: {}", b.len()),
    }
}

/// A watched source keeps its listing only once the watches it asked for are in place
/// (`watch_ready`): a file created while they are set up is listed by the next listing, and
/// the listing kept afterwards is dropped by the change that follows.
#[test]
fn the_listing_is_kept_only_once_the_watches_are_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "a").unwrap();
    let src = armed(&root, false);
    let src = Arc::new(src);
    let dirs = src.watch_dirs_blocking();
    assert!(dirs.contains(&root));
    assert_eq!(src.entries().len(), 1);
    // Made before the watch on the root is in place: no event will come.
    std::fs::write(root.join("b.txt"), "b").unwrap();
    assert_eq!(src.entries().len(), 2, "nothing was kept");
    assert!(src.cached().is_none());
    crate::providers::Source::watch_ready(&*src);
    let kept = src.entries();
    assert!(Arc::ptr_eq(
        &kept,
        &src.cached().expect("kept once watched")
    ));
    // A walk begun before a change that drops the listing keeps nothing.
    let epoch = src.listing_epoch.load(std::sync::atomic::Ordering::Acquire);
    src.drop_listing();
    assert_ne!(
        epoch,
        src.listing_epoch.load(std::sync::atomic::Ordering::Acquire)
    );
    // Setting the watches up again (a rewatch) drops it until they are in place.
    src.entries();
    assert!(src.cached().is_some());
    src.watch_dirs_blocking();
    assert!(src.cached().is_none());
}

/// A watched source of `root` (gitignore on) whose watches are in place, its listing kept.
fn watched(root: &std::path::Path) -> Arc<FilesSource> {
    let mut src = FilesSource::of_folder(root, false, true);
    src.watch = true;
    let src = Arc::new(src);
    src.watch_dirs_blocking();
    crate::providers::Source::watch_ready(&*src);
    src.entries();
    src
}

/// Changes to hidden paths change nothing served: no `list_changed`, no rewatch, the listing
/// kept. A removed folder the watcher knew is a folder; a removed file is a file.
#[test]
fn changes_to_hidden_paths_change_nothing() {
    use crate::watch::{Change, ChangeKind};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/a.md"), "a").unwrap();
    let src = watched(&root);
    let change = |rel: &str, kind| Change {
        path: root.join(rel),
        kind,
    };
    for c in [
        change(".a.md.swp", ChangeKind::Removed),
        change(".a.md.swp", ChangeKind::Created),
        change("x.log", ChangeKind::Removed),
        change(".cache", ChangeKind::Removed),
        change("sub/.x.swp", ChangeKind::Modified),
    ] {
        let effect = src.apply_changes_blocking(std::slice::from_ref(&c));
        assert_eq!(effect, Default::default(), "{c:?}");
        assert!(src.cached().is_some(), "{c:?}: the listing is kept");
    }
    std::fs::remove_dir_all(root.join("sub")).unwrap();
    let effect = src.apply_changes_blocking(&[change("sub", ChangeKind::Removed)]);
    assert!(effect.list_changed && effect.rewatch);
    std::fs::write(root.join("b.md"), "b").unwrap();
    src.entries();
    std::fs::remove_file(root.join("b.md")).unwrap();
    let effect = src.apply_changes_blocking(&[change("b.md", ChangeKind::Removed)]);
    assert!(effect.list_changed && !effect.rewatch);
}

/// A change names the URIs that came or went (what a group's session is tested against): a
/// file, the listed files of a removed folder, the visible files of a new one; events lost
/// name none (every session hears of them).
#[test]
fn changes_name_the_uris_that_came_or_went() {
    use crate::watch::{Change, ChangeKind};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/a.md"), "a").unwrap();
    std::fs::write(root.join("sub/b.md"), "b").unwrap();
    let src = watched(&root);
    let change = |rel: &str, kind| Change {
        path: root.join(rel),
        kind,
    };
    let sorted = |e: ChangeEffect| {
        assert!(e.list_changed);
        let mut uris = e.came_or_went.expect("named");
        uris.sort();
        uris
    };

    std::fs::write(root.join("c.md"), "c").unwrap();
    let effect = src.apply_changes_blocking(&[change("c.md", ChangeKind::Created)]);
    assert_eq!(sorted(effect), [src.uri_of("c.md")]);

    src.entries();
    std::fs::remove_dir_all(root.join("sub")).unwrap();
    let effect = src.apply_changes_blocking(&[change("sub", ChangeKind::Removed)]);
    assert_eq!(
        sorted(effect),
        [src.uri_of("sub/a.md"), src.uri_of("sub/b.md")]
    );

    std::fs::create_dir_all(root.join("new/deeper")).unwrap();
    std::fs::write(root.join("new/deeper/x.md"), "x").unwrap();
    std::fs::write(root.join("new/.hidden"), "h").unwrap();
    let effect = src.apply_changes_blocking(&[change("new", ChangeKind::Created)]);
    assert_eq!(sorted(effect), [src.uri_of("new/deeper/x.md")]);

    let effect = src.apply_changes_blocking(&[change("", ChangeKind::Rescan)]);
    assert!(effect.list_changed && effect.came_or_went.is_none());
}

/// A read larger than `INLINE_READ` asks the request's admitter for room (`admit::expect`,
/// about three times its size) before it reads a byte: a read held back by the admitter reads
/// what the file holds when it is let through. A small file is read at once.
#[tokio::test]
async fn a_large_read_is_admitted_before_its_bytes_are_read() {
    use crate::providers::{Source, admit};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let size = usize::try_from(super::read::INLINE_READ).unwrap() * 4;
    std::fs::write(root.join("big.txt"), "a".repeat(size)).unwrap();
    std::fs::write(root.join("small.txt"), "small").unwrap();
    let src = Arc::new(FilesSource::of_folder(&root, false, false));
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let admitter: admit::Admitter = {
        let (asked, gate) = (asked.clone(), gate.clone());
        Arc::new(move |bytes| {
            asked.lock().unwrap().push(bytes);
            let gate = gate.clone();
            Box::pin(async move {
                let _ = gate.acquire().await.unwrap();
            })
        })
    };
    let small = admit::with(admitter.clone(), src.clone().read("/small.txt".into()))
        .await
        .unwrap();
    assert!(matches!(small.body, Body::Text(ref t) if t == "small"));
    assert!(
        asked.lock().unwrap().is_empty(),
        "a small file waits for nothing"
    );
    let read = tokio::spawn(admit::with(admitter, src.clone().read("/big.txt".into())));
    while asked.lock().unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    assert_eq!(*asked.lock().unwrap(), [3 * size]);
    std::fs::write(root.join("big.txt"), "b".repeat(size)).unwrap();
    gate.add_permits(1);
    let big = read.await.unwrap().unwrap();
    assert!(matches!(big.body, Body::Text(ref t) if t.starts_with('b') && t.len() == size));
}
