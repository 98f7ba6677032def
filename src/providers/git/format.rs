//! What git itself would print or do, written with libgit2: abbreviated hashes, ISO dates,
//! `git status --porcelain` codes and quoted paths, capped patches, the log's commit order, rev
//! names and tracked paths for completion.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use git2::{Commit, DiffOptions, ErrorCode, ObjectType, Repository, Status, Tree};

use super::super::{Body, Contents};
use crate::manifest::expand::format_size;

use super::*;

/// Files larger than this are diffed as binary ("Binary files … differ"), never loaded to be
/// compared line by line: a 200 MiB file's diff took 1.8 GB (libgit2's default is 512 MiB),
/// and the answer holds at most `DIFF_CAP` anyway.
pub(super) const DIFF_FILE_CAP: u64 = 4 * 1024 * 1024;

/// Options of every diff: `DIFF_FILE_CAP`.
pub(super) fn diff_options() -> DiffOptions {
    let mut opts = DiffOptions::new();
    opts.max_size(i64::try_from(DIFF_FILE_CAP).unwrap_or(i64::MAX));
    opts
}

/// Collects patch lines up to `DIFF_CAP`, remembering whether anything was left out.
#[derive(Default)]
pub(super) struct PatchWriter {
    pub(super) bytes: Vec<u8>,
    pub(super) cut: bool,
}

impl PatchWriter {
    /// Adds one line (with its `+`, `-` or ` ` origin); `false` once the cap is reached, which
    /// stops libgit2's printing.
    pub(super) fn line(&mut self, line: &git2::DiffLine) -> bool {
        let origin = line.origin();
        let marked = matches!(origin, '+' | '-' | ' ');
        if self.bytes.len() + usize::from(marked) + line.content().len() > DIFF_CAP {
            self.cut = true;
            return false;
        }
        if marked {
            self.bytes.push(origin as u8);
        }
        self.bytes.extend_from_slice(line.content());
        true
    }

    /// The text (bytes that are not UTF-8 replaced), ending with a line naming the cap when cut.
    pub(super) fn finish(self, source: &str) -> String {
        let mut text = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.cut {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            let _ = writeln!(
                text,
                "[diff cut: it is longer than the {} cap of [git.{source}]]",
                format_size(DIFF_CAP as u64)
            );
        }
        text
    }
}

pub(super) fn dirs_of(walk: ignore::Walk) -> impl Iterator<Item = PathBuf> {
    walk.flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_dir()))
        .map(ignore::DirEntry::into_path)
}

pub(super) fn text_contents(uri: &str, text: String) -> Contents {
    Contents {
        uri: uri.to_owned(),
        mime_type: Some(TEXT.to_owned()),
        body: Body::Text(text),
    }
}

/// A commit waiting in the log queue: newest committer date first, then first in, first out.
pub(super) struct Queued<'r> {
    pub(super) time: i64,
    pub(super) seq: u64,
    pub(super) commit: Commit<'r>,
}

impl<'r> Queued<'r> {
    pub(super) fn new(commit: Commit<'r>, seq: &mut u64) -> Queued<'r> {
        *seq += 1;
        Queued {
            time: commit.time().seconds(),
            seq: *seq,
            commit,
        }
    }

    pub(super) fn key(&self) -> (i64, std::cmp::Reverse<u64>) {
        (self.time, std::cmp::Reverse(self.seq))
    }
}

impl PartialEq for Queued<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Queued<'_> {}

impl PartialOrd for Queued<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Queued<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// The commit HEAD points at; `None` for an unborn HEAD (a new, empty repository).
pub(super) fn head_commit(repo: &Repository) -> Result<Option<Commit<'_>>, git2::Error> {
    match repo.head() {
        Ok(r) => r.peel_to_commit().map(Some),
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// How git abbreviates hashes in this repository: the shortest prefix of at least `min` hex
/// digits that names one object.
pub(super) struct Abbrev<'r> {
    pub(super) min: usize,
    pub(super) odb: Option<git2::Odb<'r>>,
}

impl<'r> Abbrev<'r> {
    /// `min` is `core.abbrev` when it is a number (`no` means full hashes); otherwise git's
    /// "auto" length, which grows with the repository: half the bits of the number of packed
    /// objects, rounded up, at least 7. (libgit2's own `short_id` knows neither "auto" nor a
    /// `core.abbrev` changed after the repository was opened.)
    pub(super) fn of(repo: &'r Repository) -> Abbrev<'r> {
        let configured = repo.config().and_then(|c| c.get_string("core.abbrev")).ok();
        let auto = || {
            let count = packed_object_count(&repo.commondir().join("objects/pack"));
            let bits = (u64::BITS - count.leading_zeros()) as usize;
            bits.div_ceil(2).max(7)
        };
        let min = match configured.as_deref().map(str::trim) {
            Some(v) if v.eq_ignore_ascii_case("no") => 40,
            Some(v) => v
                .parse::<usize>()
                .map_or_else(|_| auto(), |n| n.clamp(4, 40)),
            None => auto(),
        };
        Abbrev {
            min,
            odb: repo.odb().ok(),
        }
    }

    /// The abbreviation of `obj`, or its full hash.
    pub(super) fn short(&self, obj: &git2::Object) -> String {
        let hex = obj.id().to_string();
        let Some(odb) = &self.odb else {
            return hex;
        };
        for len in self.min..hex.len() {
            let Ok(prefix) = git2::Oid::from_str(&hex[..len]) else {
                break;
            };
            match odb.exists_prefix(prefix, len) {
                Ok(_) => return hex[..len].to_owned(),
                Err(e) if e.code() == ErrorCode::Ambiguous => continue,
                Err(_) => break,
            }
        }
        hex
    }
}

/// The number of objects in a repository's packs, from the header of each pack index (what git
/// counts for its "auto" abbreviation length; loose objects are not counted).
pub(super) fn packed_object_count(pack_dir: &Path) -> u64 {
    use std::io::Read as _;
    let Ok(entries) = std::fs::read_dir(pack_dir) else {
        return 0;
    };
    let mut total = 0u64;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "idx") {
            continue;
        }
        // Version 2 starts with a magic number and a version; version 1 with the fan-out table,
        // whose last entry is the number of objects.
        let mut head = [0u8; 8 + 256 * 4];
        let Ok(mut f) = std::fs::File::open(&path) else {
            continue;
        };
        if f.read_exact(&mut head).is_err() {
            continue;
        }
        let fanout_at = if head[..4] == *b"\xfftOc" { 8 } else { 0 };
        let last = fanout_at + 255 * 4;
        let mut n = [0u8; 4];
        n.copy_from_slice(&head[last..last + 4]);
        total += u64::from(u32::from_be_bytes(n));
    }
    total
}

/// `2025-01-02T10:00:00+01:00`, in the signature's own offset, `Z` for UTC (what
/// `git log --format=%aI` shows).
pub(super) fn iso_date(t: git2::Time) -> String {
    let offset = chrono::FixedOffset::east_opt(t.offset_minutes() * 60)
        .or_else(|| chrono::FixedOffset::east_opt(0));
    match (chrono::DateTime::from_timestamp(t.seconds(), 0), offset) {
        // Current git writes a zero offset as `Z`; so do we.
        (Some(utc), Some(off)) if off.local_minus_utc() == 0 => {
            utc.format("%Y-%m-%dT%H:%M:%SZ").to_string()
        }
        (Some(utc), Some(off)) => utc
            .with_timezone(&off)
            .format("%Y-%m-%dT%H:%M:%S%:z")
            .to_string(),
        _ => format!("@{}", t.seconds()),
    }
}

pub(super) fn index_bits() -> Status {
    Status::INDEX_NEW
        | Status::INDEX_MODIFIED
        | Status::INDEX_DELETED
        | Status::INDEX_RENAMED
        | Status::INDEX_TYPECHANGE
}

pub(super) fn index_letter(s: Status) -> char {
    if s.contains(Status::INDEX_NEW) {
        'A'
    } else if s.contains(Status::INDEX_MODIFIED) {
        'M'
    } else if s.contains(Status::INDEX_DELETED) {
        'D'
    } else if s.contains(Status::INDEX_RENAMED) {
        'R'
    } else if s.contains(Status::INDEX_TYPECHANGE) {
        'T'
    } else {
        ' '
    }
}

pub(super) fn work_tree_letter(s: Status) -> char {
    if s.contains(Status::WT_MODIFIED) {
        'M'
    } else if s.contains(Status::WT_DELETED) {
        'D'
    } else if s.contains(Status::WT_TYPECHANGE) {
        'T'
    } else if s.contains(Status::WT_RENAMED) {
        'R'
    } else {
        ' '
    }
}

/// The porcelain codes of unmerged paths (`UU`, `AA`, `DU`, …), from the index's conflict stages.
pub(super) fn conflict_codes(
    repo: &Repository,
) -> Result<HashMap<Vec<u8>, &'static str>, git2::Error> {
    let index = repo.index()?;
    let mut out = HashMap::new();
    for c in index.conflicts()? {
        let c = c?;
        let code = match (c.ancestor.is_some(), c.our.is_some(), c.their.is_some()) {
            (true, true, true) => "UU",
            (false, true, true) => "AA",
            (true, true, false) => "UD",
            (true, false, true) => "DU",
            (false, true, false) => "AU",
            (false, false, true) => "UA",
            (true, false, false) => "DD",
            (false, false, false) => continue,
        };
        let path = [&c.our, &c.their, &c.ancestor]
            .into_iter()
            .flatten()
            .next()
            .map(|e| e.path.clone())
            .unwrap_or_default();
        out.insert(path, code);
    }
    Ok(out)
}

/// A path as `git status --porcelain` writes it: as is, or in double quotes with C escapes when
/// it holds a space, `"`, `\`, a control character or bytes that are not UTF-8 (octal escapes).
/// Other non-ASCII text stays readable (as with `core.quotePath=false`).
pub(super) fn quote_path(path: &[u8]) -> String {
    let plain = std::str::from_utf8(path).ok().filter(|s| {
        !s.chars()
            .any(|c| c == ' ' || c == '"' || c == '\\' || c.is_control())
    });
    if let Some(s) = plain {
        return s.to_owned();
    }
    let mut out = String::from("\"");
    for chunk in path.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() && c.is_ascii() => {
                    let _ = write!(out, "\\{:03o}", c as u8);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\{b:03o}");
        }
    }
    out.push('"');
    out
}

/// Branch names (local and remote-tracking), tag names and `HEAD` when it resolves.
pub(super) fn rev_names(repo: &Repository) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(Some(_)) = head_commit(repo) {
        out.push("HEAD".to_owned());
    }
    if let Ok(branches) = repo.branches(None) {
        for (branch, _) in branches.flatten() {
            if let Ok(Some(name)) = branch.name() {
                out.push(name.to_owned());
            }
        }
    }
    if let Ok(tags) = repo.tag_names(None) {
        out.extend(tags.iter().flatten().flatten().map(str::to_owned));
    }
    out
}

/// Paths of files (blobs, symlinks) tracked in `tree` that may start with `prefix`: only the
/// folders on the way to `prefix` are entered, so completing deep in a large tree stays cheap.
/// Submodules (gitlinks) and names that are not UTF-8 are skipped: no blob URI can read them.
pub(super) fn tracked_paths(repo: &Repository, tree: &Tree, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack: Vec<(String, Tree)> = vec![(String::new(), tree.clone())];
    while let Some((dir, tree)) = stack.pop() {
        for entry in tree.iter() {
            let Ok(name) = std::str::from_utf8(entry.name_bytes()) else {
                continue;
            };
            let full = format!("{dir}{name}");
            match entry.kind() {
                Some(ObjectType::Blob) if full.starts_with(prefix) => out.push(full),
                Some(ObjectType::Tree) => {
                    let folder = format!("{full}/");
                    let on_the_way = folder.starts_with(prefix) || prefix.starts_with(&folder);
                    if on_the_way && let Ok(sub) = repo.find_tree(entry.id()) {
                        stack.push((folder, sub));
                    }
                }
                _ => {}
            }
        }
    }
    out
}
