//! File watching: changed paths, in batches at most one `window` apart, on a channel. Runs on
//! threads of its own (never on the async runtime) and never calls rmcp: `server/` turns batches
//! into notifications through the registry.
//!
//! Folders are watched one by one, non-recursively, as the registry asks (`Watcher::set_dirs`): a
//! recursive watch would also cover ignored trees like `target/` and run out of watches on big
//! repositories. Setting up is linear in the number of folders (one system call each).
//!
//! On Linux the watcher is inotify, used directly, for three reasons a generic watcher does not
//! give: it asks only for changes (creates, deletes, writes, renames), never for opens and reads,
//! so the server's own listing and reading cause no events; a full kernel queue is reported
//! (`ChangeKind::Rescan`: something was lost, look again); and the watcher stops cleanly when
//! dropped. Elsewhere it is `notify`'s native watcher.
//!
//! Polling (`poll.rs`-like module below): folders of a root with `watch = "poll"`, and folders
//! the system would not watch (its watch limit ran out), are read every `poll_interval` and
//! compared with what was seen before; what differs goes into the same batches.
//!
//! Batching: the first change after a quiet spell opens a window; everything that arrives until
//! it closes is one batch. So batches (and the notifications made from them) are at least one
//! window apart, and the last change of a burst is always in a batch.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// What happened to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Created,
    Removed,
    Modified,
    /// Changes were lost (the kernel's queue overflowed): anything under `path` may have changed.
    Rescan,
}

/// One changed path in a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub path: PathBuf,
    pub kind: ChangeKind,
}

impl Change {
    pub fn is_rescan(&self) -> bool {
        self.kind == ChangeKind::Rescan
    }
}

/// How often folders the system would not watch are polled instead.
const FALLBACK_POLL: Duration = Duration::from_secs(2);

/// The live watcher; dropping it stops watching and ends its threads.
pub(crate) struct Watcher {
    backend: backend::Backend,
    poller: poll::Poller,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Watcher({} folders)", self.watched())
    }
}

impl Watcher {
    /// Starts a watcher (watching nothing yet) and the channel its batches arrive on.
    pub fn start(window: Duration) -> std::io::Result<(Watcher, UnboundedReceiver<Vec<Change>>)> {
        let (raw_tx, raw_rx) = std::sync::mpsc::channel::<Change>();
        let (tx, rx) = unbounded_channel();
        std::thread::Builder::new()
            .name("watch-batch".into())
            .spawn(move || batch(raw_rx, tx, window))?;
        let poller = poll::Poller::start(raw_tx.clone())?;
        let backend = backend::Backend::start(raw_tx)?;
        Ok((Watcher { backend, poller }, rx))
    }

    /// Watches exactly `dirs` (each non-recursively) from now on, and polls `polled` (each
    /// every so often); a folder the system will not watch (its limit ran out) is polled every
    /// `FALLBACK_POLL`. Blocking: one system call per folder that was not watched yet or is not
    /// any more, and one read of each folder newly polled (what later polls compare with).
    pub fn set_dirs(&self, dirs: Vec<PathBuf>, mut polled: Vec<(PathBuf, Duration)>) {
        let refused = self.backend.set_dirs(dirs);
        polled.extend(refused.into_iter().map(|d| (d, FALLBACK_POLL)));
        self.poller.set(polled);
    }

    pub fn watched(&self) -> usize {
        self.backend.watched() + self.poller.polled()
    }
}

/// Groups raw changes into batches: one opens a window of `window`; all that arrives until it
/// closes goes out together (duplicates dropped, order kept).
fn batch(raw: Receiver<Change>, out: UnboundedSender<Vec<Change>>, window: Duration) {
    while let Ok(first) = raw.recv() {
        let deadline = Instant::now() + window;
        let mut changes = vec![first];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match raw.recv_timeout(left) {
                Ok(c) => {
                    if !changes.contains(&c) {
                        changes.push(c);
                    }
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = out.send(changes);
                    return;
                }
            }
        }
        if out.send(changes).is_err() {
            return;
        }
    }
}

fn send(tx: &Sender<Change>, path: PathBuf, kind: ChangeKind) {
    let _ = tx.send(Change { path, kind });
}

#[cfg(target_os = "linux")]
mod backend {
    use std::collections::HashMap;
    use std::os::fd::OwnedFd;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::Sender;
    use std::sync::{Arc, Mutex};

    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
    use rustix::event::{EventfdFlags, PollFd, PollFlags};

    use super::{Change, ChangeKind, send};

    /// Changes only: no opens, reads or closes after reading (the server's own walks and reads
    /// must not flood the queue), and never through a symlink.
    fn mask() -> WatchMask {
        WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MODIFY
            | WatchMask::CLOSE_WRITE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::ONLYDIR
            | WatchMask::DONT_FOLLOW
            | WatchMask::EXCL_UNLINK
    }

    #[derive(Default)]
    struct Table {
        by_path: HashMap<PathBuf, WatchDescriptor>,
        by_id: HashMap<i32, PathBuf>,
        /// Said once: the system's watch limit ran out.
        warned_limit: bool,
    }

    pub(super) struct Backend {
        watches: Mutex<Watches>,
        table: Arc<Mutex<Table>>,
        stop: Arc<AtomicBool>,
        wake: Arc<OwnedFd>,
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    impl Backend {
        pub(super) fn start(tx: Sender<Change>) -> std::io::Result<Backend> {
            let inotify = Inotify::init()?;
            let wake = Arc::new(rustix::event::eventfd(
                0,
                EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK,
            )?);
            let table = Arc::new(Mutex::new(Table::default()));
            let stop = Arc::new(AtomicBool::new(false));
            let watches = inotify.watches();
            let (t, s, w) = (table.clone(), stop.clone(), wake.clone());
            std::thread::Builder::new()
                .name("watch".into())
                .spawn(move || read(inotify, &t, &s, &w, &tx))?;
            Ok(Backend {
                watches: Mutex::new(watches),
                table,
                stop,
                wake,
            })
        }

        /// Watches exactly `dirs`; returns those the system's watch limit left unwatched.
        pub(super) fn set_dirs(&self, dirs: Vec<PathBuf>) -> Vec<PathBuf> {
            let mut refused = Vec::new();
            let mut watches = lock(&self.watches);
            let wanted: std::collections::HashSet<&PathBuf> = dirs.iter().collect();
            let gone: Vec<(PathBuf, WatchDescriptor)> = lock(&self.table)
                .by_path
                .iter()
                .filter(|(p, _)| !wanted.contains(p))
                .map(|(p, wd)| (p.clone(), wd.clone()))
                .collect();
            for (path, wd) in gone {
                let mut table = lock(&self.table);
                table.by_path.remove(&path);
                table.by_id.remove(&wd.get_watch_descriptor_id());
                drop(table);
                let _ = watches.remove(wd);
            }
            for dir in dirs {
                if lock(&self.table).by_path.contains_key(&dir) {
                    continue;
                }
                // The table is locked while adding, so the reader never sees an event of a
                // watch it cannot name.
                let mut table = lock(&self.table);
                match watches.add(&dir, mask()) {
                    Ok(wd) => {
                        table
                            .by_id
                            .insert(wd.get_watch_descriptor_id(), dir.clone());
                        table.by_path.insert(dir, wd);
                    }
                    Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                        if !table.warned_limit {
                            table.warned_limit = true;
                            tracing::warn!(
                                "the system's limit of file watches is reached (fs.inotify.max_user_watches): {} and the folders after it are polled every {}s instead",
                                dir.display(),
                                super::FALLBACK_POLL.as_secs()
                            );
                        }
                        refused.push(dir);
                    }
                    // A folder that went away meanwhile: its parent's events say so.
                    Err(e) => tracing::debug!("cannot watch {}: {e}", dir.display()),
                }
            }
            refused
        }

        pub(super) fn watched(&self) -> usize {
            lock(&self.table).by_path.len()
        }
    }

    impl Drop for Backend {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            let _ = rustix::io::write(&*self.wake, &1u64.to_ne_bytes());
        }
    }

    /// The reader thread: waits for inotify (or the stop signal), turns events into changes.
    fn read(
        mut inotify: Inotify,
        table: &Mutex<Table>,
        stop: &AtomicBool,
        wake: &OwnedFd,
        tx: &Sender<Change>,
    ) {
        let mut buffer = vec![0u8; 64 * 1024];
        while !stop.load(Ordering::SeqCst) {
            let mut fds = [
                PollFd::new(&inotify, PollFlags::IN),
                PollFd::new(wake, PollFlags::IN),
            ];
            match rustix::event::poll(&mut fds, None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    tracing::warn!("file watching stopped: {e}");
                    return;
                }
            }
            if stop.load(Ordering::SeqCst) {
                return;
            }
            let events = match inotify.read_events(&mut buffer) {
                Ok(events) => events,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => {
                    tracing::warn!("file watching stopped: {e}");
                    return;
                }
            };
            for e in events {
                if e.mask.contains(EventMask::Q_OVERFLOW) {
                    send(tx, PathBuf::from("/"), ChangeKind::Rescan);
                    continue;
                }
                let id = e.wd.get_watch_descriptor_id();
                let mut t = lock(table);
                let Some(dir) = t.by_id.get(&id).cloned() else {
                    continue;
                };
                if e.mask.contains(EventMask::IGNORED) {
                    // The folder is gone (or was unwatched): forget its watch.
                    if t.by_path
                        .get(&dir)
                        .is_some_and(|wd| wd.get_watch_descriptor_id() == id)
                    {
                        t.by_path.remove(&dir);
                    }
                    t.by_id.remove(&id);
                    continue;
                }
                drop(t);
                let path = match e.name {
                    Some(name) => dir.join(name),
                    None => dir,
                };
                let kind = if e.mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
                    ChangeKind::Created
                } else if e.mask.intersects(
                    EventMask::DELETE
                        | EventMask::MOVED_FROM
                        | EventMask::DELETE_SELF
                        | EventMask::MOVE_SELF,
                ) {
                    ChangeKind::Removed
                } else {
                    ChangeKind::Modified
                };
                send(tx, path, kind);
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod backend {
    use std::collections::HashSet;
    use std::path::PathBuf;
    use std::sync::Mutex;
    use std::sync::mpsc::Sender;

    use notify::event::{EventKind, ModifyKind, RenameMode};
    use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};

    use super::{Change, ChangeKind, send};

    pub(super) struct Backend {
        watcher: Mutex<RecommendedWatcher>,
        dirs: Mutex<HashSet<PathBuf>>,
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    impl Backend {
        pub(super) fn start(tx: Sender<Change>) -> std::io::Result<Backend> {
            let watcher = notify::recommended_watcher(move |r: notify::Result<notify::Event>| {
                let e = match r {
                    Ok(e) => e,
                    Err(e) => {
                        tracing::warn!("file watcher: {e}");
                        return;
                    }
                };
                if e.need_rescan() {
                    send(&tx, PathBuf::from("/"), ChangeKind::Rescan);
                    return;
                }
                let kind = match e.kind {
                    EventKind::Create(_) => ChangeKind::Created,
                    EventKind::Remove(_) => ChangeKind::Removed,
                    EventKind::Modify(ModifyKind::Name(RenameMode::From)) => ChangeKind::Removed,
                    EventKind::Modify(ModifyKind::Name(RenameMode::To)) => ChangeKind::Created,
                    EventKind::Modify(ModifyKind::Name(_)) => {
                        for p in &e.paths {
                            let kind = if p.exists() {
                                ChangeKind::Created
                            } else {
                                ChangeKind::Removed
                            };
                            send(&tx, p.clone(), kind);
                        }
                        return;
                    }
                    EventKind::Modify(_) => ChangeKind::Modified,
                    _ => return,
                };
                for p in e.paths {
                    send(&tx, p, kind);
                }
            })
            .map_err(std::io::Error::other)?;
            Ok(Backend {
                watcher: Mutex::new(watcher),
                dirs: Mutex::new(HashSet::new()),
            })
        }

        pub(super) fn set_dirs(&self, dirs: Vec<PathBuf>) -> Vec<PathBuf> {
            let mut watcher = lock(&self.watcher);
            let mut current = lock(&self.dirs);
            let wanted: HashSet<PathBuf> = dirs.into_iter().collect();
            for gone in current.difference(&wanted) {
                let _ = watcher.unwatch(gone);
            }
            let mut now = HashSet::with_capacity(wanted.len());
            for dir in wanted {
                if current.contains(&dir)
                    || watcher.watch(&dir, RecursiveMode::NonRecursive).is_ok()
                {
                    now.insert(dir);
                }
            }
            *current = now;
            Vec::new()
        }

        pub(super) fn watched(&self) -> usize {
            lock(&self.dirs).len()
        }
    }
}

/// Folders read every so often, each compared with what the last read saw.
mod poll {
    use std::collections::HashMap;
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};
    use std::sync::mpsc::Sender;
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::{Duration, Instant, SystemTime};

    use super::{Change, ChangeKind, send};

    /// What a file's change would move: a change that keeps all of these is not seen (the
    /// rule of every polling watcher; a write within one tick of the clock that keeps the size
    /// moves the change time on every local file system).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Stamp {
        ino: u64,
        size: u64,
        modified: Option<SystemTime>,
        changed: (i64, i64),
        dir: bool,
    }

    struct Dir {
        every: Duration,
        due: Instant,
        /// What the last read saw; `None`: the folder could not be read.
        seen: Option<HashMap<OsString, Stamp>>,
    }

    #[derive(Default)]
    struct State {
        dirs: HashMap<PathBuf, Dir>,
        stop: bool,
    }

    pub(super) struct Poller {
        st: Arc<(Mutex<State>, Condvar)>,
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[cfg(unix)]
    fn stamp(m: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt as _;
        Stamp {
            ino: m.ino(),
            size: m.size(),
            modified: m.modified().ok(),
            changed: (m.ctime(), m.ctime_nsec()),
            dir: m.is_dir(),
        }
    }

    #[cfg(not(unix))]
    fn stamp(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            ino: 0,
            size: m.len(),
            modified: m.modified().ok(),
            changed: (0, 0),
            dir: m.is_dir(),
        }
    }

    /// The folder's entries (never through a symlink), or `None` when it cannot be read.
    fn read(dir: &Path) -> Option<HashMap<OsString, Stamp>> {
        let entries = std::fs::read_dir(dir).ok()?;
        let mut out = HashMap::new();
        for e in entries.flatten() {
            if let Ok(m) = std::fs::symlink_metadata(e.path()) {
                out.insert(e.file_name(), stamp(&m));
            }
        }
        Some(out)
    }

    /// What differs between two reads of `dir`, as the system's watcher would say it.
    fn compare(
        dir: &Path,
        before: &HashMap<OsString, Stamp>,
        now: &HashMap<OsString, Stamp>,
        tx: &Sender<Change>,
    ) {
        for (name, was) in before {
            match now.get(name) {
                None => send(tx, dir.join(name), ChangeKind::Removed),
                Some(is) if is.dir != was.dir || is.ino != was.ino => {
                    send(tx, dir.join(name), ChangeKind::Removed);
                    send(tx, dir.join(name), ChangeKind::Created);
                }
                // A folder's own entries are its own poll's business.
                Some(is) if is != was && !is.dir => {
                    send(tx, dir.join(name), ChangeKind::Modified);
                }
                Some(_) => {}
            }
        }
        for name in now.keys().filter(|n| !before.contains_key(*n)) {
            send(tx, dir.join(name), ChangeKind::Created);
        }
    }

    impl Poller {
        pub(super) fn start(tx: Sender<Change>) -> std::io::Result<Poller> {
            let st = Arc::new((Mutex::new(State::default()), Condvar::new()));
            let shared = st.clone();
            std::thread::Builder::new()
                .name("watch-poll".into())
                .spawn(move || run(&shared, &tx))?;
            Ok(Poller { st })
        }

        /// Polls exactly `dirs` from now on; one newly polled is read now (what the next poll
        /// compares with), so a change made once this returns is seen.
        pub(super) fn set(&self, dirs: Vec<(PathBuf, Duration)>) {
            let (m, wake) = &*self.st;
            let wanted: HashMap<PathBuf, Duration> = dirs.into_iter().collect();
            let new: Vec<(PathBuf, Duration)> = {
                let mut st = lock(m);
                st.dirs.retain(|p, _| wanted.contains_key(p));
                for (p, every) in &wanted {
                    if let Some(d) = st.dirs.get_mut(p) {
                        d.every = *every;
                    }
                }
                wanted
                    .iter()
                    .filter(|(p, _)| !st.dirs.contains_key(*p))
                    .map(|(p, e)| (p.clone(), *e))
                    .collect()
            };
            let read: Vec<(PathBuf, Dir)> = new
                .into_iter()
                .map(|(p, every)| {
                    let seen = read(&p);
                    let due = Instant::now() + every;
                    (p, Dir { every, due, seen })
                })
                .collect();
            let mut st = lock(m);
            for (p, d) in read {
                st.dirs.entry(p).or_insert(d);
            }
            wake.notify_all();
        }

        pub(super) fn polled(&self) -> usize {
            lock(&self.st.0).dirs.len()
        }
    }

    impl Drop for Poller {
        fn drop(&mut self) {
            lock(&self.st.0).stop = true;
            self.st.1.notify_all();
        }
    }

    fn run(st: &(Mutex<State>, Condvar), tx: &Sender<Change>) {
        let (m, wake) = st;
        let mut guard = lock(m);
        loop {
            if guard.stop {
                return;
            }
            let now = Instant::now();
            let next = guard.dirs.values().map(|d| d.due).min();
            match next {
                None => {
                    guard = wake.wait(guard).unwrap_or_else(|p| p.into_inner());
                    continue;
                }
                Some(due) if due > now => {
                    guard = wake
                        .wait_timeout(guard, due - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    continue;
                }
                Some(_) => {}
            }
            let due: Vec<PathBuf> = guard
                .dirs
                .iter()
                .filter(|(_, d)| d.due <= now)
                .map(|(p, _)| p.clone())
                .collect();
            drop(guard);
            // Read without the lock (a slow file system must not hold up `set`).
            let read: Vec<(PathBuf, Option<HashMap<OsString, Stamp>>)> = due
                .into_iter()
                .map(|p| {
                    let r = read(&p);
                    (p, r)
                })
                .collect();
            guard = lock(m);
            for (p, now_seen) in read {
                let Some(d) = guard.dirs.get_mut(&p) else {
                    continue;
                };
                if let (Some(before), Some(after)) = (&d.seen, &now_seen) {
                    compare(&p, before, after, tx);
                }
                d.seen = now_seen;
                d.due = Instant::now() + d.every;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_a_window_apart_and_keep_the_last_change() {
        let (raw_tx, raw_rx) = std::sync::mpsc::channel();
        let (tx, mut rx) = unbounded_channel();
        let window = Duration::from_millis(40);
        let t = std::thread::spawn(move || batch(raw_rx, tx, window));
        let start = Instant::now();
        let mut n = 0;
        while start.elapsed() < Duration::from_millis(400) {
            n += 1;
            send(
                &raw_tx,
                PathBuf::from(format!("/f{}", n % 3)),
                ChangeKind::Modified,
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        send(&raw_tx, PathBuf::from("/last"), ChangeKind::Modified);
        drop(raw_tx);
        t.join().unwrap();
        let mut batches = Vec::new();
        while let Ok(b) = rx.try_recv() {
            batches.push(b);
        }
        // 400 ms of changes in 40 ms windows: at most 11 batches, however many changes.
        assert!(
            !batches.is_empty() && batches.len() <= 11,
            "{}",
            batches.len()
        );
        assert!(batches.iter().all(|b| b.len() <= 4));
        assert!(
            batches
                .last()
                .unwrap()
                .iter()
                .any(|c| c.path == std::path::Path::new("/last"))
        );
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn reports_changes_but_not_reads_and_stops_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a"), "a").unwrap();
        let (w, mut rx) = Watcher::start(Duration::from_millis(20)).unwrap();
        w.set_dirs(vec![root.clone()], Vec::new());
        assert_eq!(w.watched(), 1);
        // Reading and listing cause nothing.
        for _ in 0..100 {
            let _ = std::fs::read(root.join("a")).unwrap();
            let _ = std::fs::read_dir(&root).unwrap().count();
        }
        std::fs::write(root.join("b"), "b").unwrap();
        let batch = rx.recv().await.unwrap();
        assert!(batch.iter().all(|c| c.path == root.join("b")), "{batch:?}");
        assert!(batch.iter().any(|c| c.kind == ChangeKind::Created));
        drop(w);
        // The threads end and the channel closes (maybe after a last batch).
        while rx.recv().await.is_some() {}
    }

    /// Waits for a batch holding `kind` for `path` (other changes may come first).
    async fn seen(
        rx: &mut UnboundedReceiver<Vec<Change>>,
        path: &std::path::Path,
        kind: ChangeKind,
    ) {
        let wait = async {
            while let Some(batch) = rx.recv().await {
                if batch.iter().any(|c| c.path == path && c.kind == kind) {
                    return;
                }
            }
            panic!("the watcher stopped before {kind:?} {}", path.display());
        };
        tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .unwrap_or_else(|_| panic!("no {kind:?} for {} in 20 s", path.display()));
    }

    /// On every platform (inotify, FSEvents, ReadDirectoryChangesW, and polling): a file made,
    /// renamed and removed in a watched folder, and one made in a polled folder, are reported.
    #[tokio::test]
    async fn creates_renames_and_removes_are_reported_watched_or_polled() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::providers::platform::canonical(dir.path()).unwrap();
        let polled = root.join("polled");
        let watched = root.join("watched");
        std::fs::create_dir(&polled).unwrap();
        std::fs::create_dir(&watched).unwrap();
        let (w, mut rx) = Watcher::start(Duration::from_millis(20)).unwrap();
        w.set_dirs(
            vec![watched.clone()],
            vec![(polled.clone(), Duration::from_millis(50))],
        );
        assert_eq!(w.watched(), 2);
        std::fs::write(watched.join("b"), "b").unwrap();
        seen(&mut rx, &watched.join("b"), ChangeKind::Created).await;
        std::fs::rename(watched.join("b"), watched.join("c")).unwrap();
        seen(&mut rx, &watched.join("c"), ChangeKind::Created).await;
        std::fs::remove_file(watched.join("c")).unwrap();
        seen(&mut rx, &watched.join("c"), ChangeKind::Removed).await;
        std::fs::write(polled.join("p"), "p").unwrap();
        seen(&mut rx, &polled.join("p"), ChangeKind::Created).await;
        drop(w);
    }
}
