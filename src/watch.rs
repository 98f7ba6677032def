//! File watching: notify + notify-debouncer-full → debounced batches of changed paths on a
//! channel. Never calls rmcp: `server.rs` turns batches into notifications through the registry.
//!
//! Folders are watched one by one, non-recursively, as the registry asks (`set_dirs`): a
//! recursive inotify watch would also cover ignored trees like `target/` and run out of watches
//! on big repositories. New folders are reported as `Created` so the registry can walk them and
//! widen the watch (inotify misses files written into a folder before its watch exists).

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind, RenameMode};
use notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Bursts closer together than this are merged (editor "atomic saves" are several events).
pub const DEBOUNCE: Duration = Duration::from_millis(50);

/// What happened to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Created,
    Removed,
    Modified,
}

/// One changed path in a debounced batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    pub kind: ChangeKind,
}

/// The live watcher; dropping it stops watching.
pub struct Watcher {
    debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    dirs: HashSet<PathBuf>,
}

impl Watcher {
    /// Starts a watcher (watching nothing yet) and the channel its batches arrive on.
    pub fn new(debounce: Duration) -> notify::Result<(Watcher, UnboundedReceiver<Vec<Change>>)> {
        let (tx, rx) = unbounded_channel();
        let debouncer = new_debouncer(debounce, None, move |result: DebounceEventResult| {
            forward(&tx, result)
        })?;
        Ok((
            Watcher {
                debouncer,
                dirs: HashSet::new(),
            },
            rx,
        ))
    }

    /// Watches exactly `dirs` (each non-recursively) from now on.
    pub fn set_dirs(&mut self, dirs: HashSet<PathBuf>) {
        for gone in self.dirs.difference(&dirs) {
            let _ = self.debouncer.unwatch(gone);
        }
        let mut watched = HashSet::with_capacity(dirs.len());
        for dir in dirs {
            if self.dirs.contains(&dir) {
                watched.insert(dir);
                continue;
            }
            match self.debouncer.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    watched.insert(dir);
                }
                Err(e) => tracing::warn!("cannot watch {}: {e}", dir.display()),
            }
        }
        self.dirs = watched;
    }

    pub fn watched(&self) -> usize {
        self.dirs.len()
    }
}

fn forward(tx: &UnboundedSender<Vec<Change>>, result: DebounceEventResult) {
    let events = match result {
        Ok(events) => events,
        Err(errors) => {
            for e in errors {
                tracing::warn!("file watcher: {e}");
            }
            return;
        }
    };
    let mut batch = Vec::new();
    for e in events {
        let kind = match e.kind {
            EventKind::Create(_) => ChangeKind::Created,
            EventKind::Remove(_) => ChangeKind::Removed,
            EventKind::Modify(ModifyKind::Name(mode)) => {
                match (mode, e.paths.as_slice()) {
                    (RenameMode::Both, [from, to, ..]) => {
                        batch.push(Change {
                            path: from.clone(),
                            kind: ChangeKind::Removed,
                        });
                        batch.push(Change {
                            path: to.clone(),
                            kind: ChangeKind::Created,
                        });
                        continue;
                    }
                    (RenameMode::From, _) => ChangeKind::Removed,
                    (RenameMode::To, _) => ChangeKind::Created,
                    // The platform did not say which side this is: ask the filesystem.
                    _ => match e.paths.first() {
                        Some(p) if p.exists() => ChangeKind::Created,
                        _ => ChangeKind::Removed,
                    },
                }
            }
            EventKind::Modify(_) => ChangeKind::Modified,
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => ChangeKind::Modified,
            _ => continue,
        };
        for path in &e.paths {
            batch.push(Change {
                path: path.clone(),
                kind,
            });
        }
    }
    batch.dedup();
    if !batch.is_empty() {
        let _ = tx.send(batch);
    }
}
