//! What is hidden below a root: the one definition every reader of a served tree uses — a files
//! source's reads, listings, watch and `search_files`, a `file` template's reads and completions,
//! `check`'s warnings and `init`'s walk. A `Visibility` is built once per root and asked about
//! paths relative to it (`/`-separated).
//!
//! A path is hidden when any of its components is:
//! - a dot name (unless `hidden = true`), or `.git` (always), or a name the platform marks
//!   hidden (the Windows hidden attribute, `platform::marked_hidden`);
//! - ignored by the rules of the ignore files (unless `gitignore = false`), read with the `ignore`
//!   crate's gitignore matcher and combined as ripgrep combines them: `.ignore` files, then
//!   `.gitignore` files, then the repository's `.git/info/exclude`; within each kind the deepest
//!   folder with an opinion decides (negations included), and a `.ignore` match anywhere beats
//!   a `.gitignore` one. `.gitignore` and `exclude` rules stop at the top of the repository that
//!   holds the path (a repository nested in another has its own). Ignore files of the root and
//!   every folder below it count; above the root, those of the folders up to the top of the
//!   enclosing git work tree (none outside a repository);
//! - for a file: not matched by `include`, or matched by `exclude` (files sources);
//! - the manifest itself (`file` templates, unless `hidden = true`), by identity: a hard link
//!   or a symlink to it is the manifest too.
//!
//! Ignore files are read like served files (regular files only, never blocking, at most 1 MiB).
//! A watched source keeps them between checks (`keeping_rules`) until the watcher says one
//! changed (`forget`); otherwise every operation starts from a clean slate (`fresh`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use globset::{GlobSet, GlobSetBuilder};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::paths;
use super::platform;

/// The ignore files a folder may hold, by name.
pub(crate) const IGNORE_FILES: [&str; 2] = [".ignore", ".gitignore"];

/// The largest ignore file read (a larger one counts as absent).
const RULES_CAP: u64 = 1024 * 1024;

/// The hiding rules of one root.
#[derive(Debug)]
pub(crate) struct Visibility {
    /// Canonical.
    root: PathBuf,
    /// `include` / `exclude` of a files source; `None`: every name is selected.
    select: Option<(GlobSet, GlobSet)>,
    /// Dot names are shown (`hidden = true`).
    hidden: bool,
    /// Ignore files count (`gitignore = true`).
    gitignore: bool,
    /// Folders above the root whose ignore files apply, outermost first.
    parents: Vec<PathBuf>,
    /// The manifest, hidden by identity (`file` templates).
    manifest: Option<PathBuf>,
    /// Keep the ignore rules read between operations (a watched source).
    keep: bool,
    rules: Mutex<HashMap<PathBuf, Arc<DirRules>>>,
}

/// The ignore rules one folder holds.
#[derive(Debug, Default)]
pub(crate) struct DirRules {
    dot_ignore: Option<Gitignore>,
    git_ignore: Option<Gitignore>,
    /// `.git/info/exclude`, when this folder is the top of a repository.
    git_exclude: Option<Gitignore>,
    /// This folder holds `.git`: the `.gitignore` files above it belong to another repository.
    repo_top: bool,
}

impl DirRules {
    fn any(&self) -> bool {
        self.dot_ignore.is_some() || self.git_ignore.is_some() || self.git_exclude.is_some()
    }
}

/// The ignore rules in force in one folder: those of every folder above it that count,
/// outermost first. A walk pushes a folder's rules as it enters it and pops them as it leaves.
#[derive(Debug, Clone, Default)]
pub(crate) struct Frames {
    stack: Vec<Arc<DirRules>>,
    /// How many frames hold any rule (so a walk without rules matches nothing).
    with_rules: usize,
}

impl Frames {
    /// Enters the folder `dir` (absolute): its rules join those in force.
    pub(crate) fn push(&mut self, vis: &Visibility, dir: &Path) {
        let rules = vis.rules_of(dir);
        self.with_rules += usize::from(rules.any());
        self.stack.push(rules);
    }

    /// Leaves the folder entered last.
    pub(crate) fn pop(&mut self) {
        if let Some(r) = self.stack.pop() {
            self.with_rules -= usize::from(r.any());
        }
    }

    /// Whether any rule is in force (if not, nothing is ignored: no need to ask).
    pub(crate) fn any(&self) -> bool {
        self.with_rules > 0
    }

    /// Whether the rules in force ignore `path` (absolute, below the folders entered).
    pub(crate) fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        if self.with_rules == 0 {
            return false;
        }
        let (mut git, mut exclude) = (Match::None, Match::None);
        let mut outside_repo = false;
        for rules in self.stack.iter().rev() {
            if let Some(m) = &rules.dot_ignore {
                match m.matched(path, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            if !outside_repo {
                if git.is_none()
                    && let Some(m) = &rules.git_ignore
                {
                    git = m.matched(path, is_dir);
                }
                if exclude.is_none()
                    && let Some(m) = &rules.git_exclude
                {
                    exclude = m.matched(path, is_dir);
                }
            }
            outside_repo |= rules.repo_top;
        }
        git.or(exclude).is_ignore()
    }
}

impl Visibility {
    /// The rules of `root` (canonical): dot names shown only with `hidden`, ignore files only
    /// with `gitignore`; every name selected (see `selecting`).
    pub(crate) fn new(root: &Path, hidden: bool, gitignore: bool) -> Visibility {
        Visibility {
            root: root.to_path_buf(),
            select: None,
            hidden,
            gitignore,
            parents: if gitignore {
                repo_parents(root)
            } else {
                Vec::new()
            },
            manifest: None,
            keep: false,
            rules: Mutex::new(HashMap::new()),
        }
    }

    /// Only files `include` matches and `exclude` does not (globs relative to the root, `*`
    /// not crossing `/`; the manifest checked them, one that does not compile matches nothing).
    pub(crate) fn selecting(mut self, include: &[String], exclude: &[String]) -> Visibility {
        self.select = Some((globs(include), globs(exclude)));
        self
    }

    /// The manifest at `path` is hidden too (a `file` template without `hidden = true`).
    pub(crate) fn hiding_manifest(mut self, path: Option<PathBuf>) -> Visibility {
        self.manifest = path;
        self
    }

    /// Keeps the ignore rules read until `forget` (a watched source).
    pub(crate) fn keeping_rules(mut self) -> Visibility {
        self.keep = true;
        self
    }

    /// Whether ignore files count.
    pub(crate) fn uses_ignore_files(&self) -> bool {
        self.gitignore
    }

    /// Without a watcher nothing says an ignore file changed: an operation starts by forgetting
    /// the rules read before (a watched source keeps them).
    pub(crate) fn fresh(&self) {
        if !self.keep {
            self.forget_all();
        }
    }

    /// Forgets the rules read of the folder `dir` (one of its ignore files changed).
    pub(crate) fn forget(&self, dir: &Path) {
        lock(&self.rules).remove(dir);
    }

    /// Forgets every rule read.
    pub(crate) fn forget_all(&self) {
        lock(&self.rules).clear();
    }

    /// Whether a change of `path` changes the rules: an ignore file of the root, a folder below
    /// it or one of the folders above that count, or a repository's `.git/info/exclude`. The
    /// folder whose rules it changes, if so.
    pub(crate) fn rules_changed_by<'p>(&self, path: &'p Path) -> Option<&'p Path> {
        if !self.gitignore {
            return None;
        }
        let name = path.file_name()?.to_str()?;
        let dir = path.parent()?;
        if IGNORE_FILES.contains(&name) {
            return (dir.starts_with(&self.root) || self.parents.iter().any(|p| p == dir))
                .then_some(dir);
        }
        if name == "exclude" && dir.ends_with(".git/info") {
            return dir.parent()?.parent();
        }
        None
    }

    /// Folders to watch for the rules beside the served tree: those above the root whose
    /// ignore files count, and the `.git/info` of each repository top among them and the root.
    pub(crate) fn rules_dirs(&self) -> Vec<PathBuf> {
        if !self.gitignore {
            return Vec::new();
        }
        let mut out = self.parents.clone();
        for top in self.parents.iter().chain(std::iter::once(&self.root)) {
            let info = top.join(".git").join("info");
            if info.is_dir() {
                out.push(info);
            }
        }
        out
    }

    /// The rules in force in the root: those of the folders above it.
    pub(crate) fn frames(&self) -> Frames {
        let mut f = Frames::default();
        if self.gitignore {
            for p in &self.parents {
                f.push(self, p);
            }
        }
        f
    }

    /// Enters `dir` (absolute) if ignore files count.
    pub(crate) fn enter(&self, frames: &mut Frames, dir: &Path) -> bool {
        if !self.gitignore {
            return false;
        }
        frames.push(self, dir);
        true
    }

    /// Whether a name of a folder's entry may be shown at all: not a dot name (unless
    /// `hidden`), not `.git`.
    pub(crate) fn name_shown(&self, name: &str) -> bool {
        name != ".git" && (self.hidden || !name.starts_with('.'))
    }

    /// `name_shown`, and not marked hidden by the platform (`meta` of the entry, not followed).
    pub(crate) fn entry_shown(&self, name: &str, meta: Option<&std::fs::Metadata>) -> bool {
        self.name_shown(name) && (self.hidden || !meta.is_some_and(platform::marked_hidden))
    }

    /// Whether names the platform marks hidden are shown (`hidden = true`).
    pub(crate) fn shows_marked(&self) -> bool {
        self.hidden
    }

    /// Whether `include` / `exclude` select the file at `rel`.
    pub(crate) fn selects(&self, rel: &str) -> bool {
        match &self.select {
            None => true,
            Some((include, exclude)) => include.is_match(rel) && !exclude.is_match(rel),
        }
    }

    /// The full check of one file, by its plain path below the root: every folder on the way
    /// and the file itself (names, ignore rules, `include` / `exclude`). Reads ignore files and,
    /// where the platform marks hidden files, the metadata of each component (blocking).
    pub(crate) fn visible(&self, rel: &str) -> bool {
        let Some((dirs, file)) = split_rel(rel) else {
            return false;
        };
        let mut frames = self.frames();
        let mut path = self.root.clone();
        self.enter(&mut frames, &path);
        for d in &dirs {
            path.push(d);
            if !self.component_shown(d, &path) || (frames.any() && frames.ignores(&path, true)) {
                return false;
            }
            self.enter(&mut frames, &path);
        }
        path.push(file);
        self.component_shown(file, &path)
            && self.selects(rel)
            && !(frames.any() && frames.ignores(&path, false))
    }

    /// The check of a folder by its plain path below the root (every folder on the way too).
    pub(crate) fn dir_visible(&self, rel: &str) -> bool {
        let Some((dirs, last)) = split_rel(rel) else {
            return rel.is_empty();
        };
        let mut frames = self.frames();
        let mut path = self.root.clone();
        self.enter(&mut frames, &path);
        for d in dirs.iter().chain(std::iter::once(&last)) {
            path.push(d);
            if !self.component_shown(d, &path) || (frames.any() && frames.ignores(&path, true)) {
                return false;
            }
            self.enter(&mut frames, &path);
        }
        true
    }

    /// Whether a file opened as the plain path `rel`, whose real path below the root is
    /// `real_rel` (symlinks resolved), is shown: both paths pass every rule.
    pub(crate) fn shows(&self, rel: &str, real_rel: &str) -> bool {
        self.visible(rel) && (real_rel == rel || self.visible(real_rel))
    }

    /// Whether `file` (open) is the manifest this root hides.
    pub(crate) fn is_manifest(&self, file: &std::fs::File) -> bool {
        self.manifest
            .as_deref()
            .is_some_and(|m| platform::same_file(file, m))
    }

    /// Whether the file at `path` (followed) is the manifest this root hides.
    pub(crate) fn is_manifest_at(&self, path: &Path) -> bool {
        self.manifest
            .as_deref()
            .is_some_and(|m| platform::same_path(path, m))
    }

    /// The files below the root that names and ignore rules let through (not `include` /
    /// `exclude`: see `selects`), as `/`-separated paths, each given to `each` until it says
    /// stop (false). Never follows a symlink (one is not listed); `sorted`: in path order (a
    /// folder's files before its folders' files, names in byte order), else in the order the
    /// folders are read. Blocking.
    pub(crate) fn walk(&self, sorted: bool, mut each: impl FnMut(&str) -> bool) {
        self.fresh();
        let mut frames = self.frames();
        let root = self.root.clone();
        self.walk_dir(&root, "", &mut frames, sorted, &mut each);
    }

    fn walk_dir(
        &self,
        dir: &Path,
        rel_dir: &str,
        frames: &mut Frames,
        sorted: bool,
        each: &mut dyn FnMut(&str) -> bool,
    ) -> bool {
        let Ok(read) = std::fs::read_dir(dir) else {
            return true;
        };
        let entered = self.enter(frames, dir);
        let mut entries: Vec<std::fs::DirEntry> = read.flatten().collect();
        if sorted {
            entries.sort_by_key(std::fs::DirEntry::file_name);
        }
        let mut going_on = true;
        let mut dirs = Vec::new();
        for e in entries {
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            let Ok(kind) = e.file_type() else { continue };
            if !(kind.is_dir() || kind.is_file()) || !self.name_shown(&name) {
                continue;
            }
            if !self.hidden
                && platform::marks_hidden()
                && !self.entry_shown(&name, e.metadata().ok().as_ref())
            {
                continue;
            }
            let path = e.path();
            if frames.any() && frames.ignores(&path, kind.is_dir()) {
                continue;
            }
            let rel = if rel_dir.is_empty() {
                name
            } else {
                format!("{rel_dir}/{name}")
            };
            if kind.is_dir() {
                dirs.push((path, rel));
            } else if !each(&rel) {
                going_on = false;
                break;
            }
        }
        if going_on {
            for (path, rel) in dirs {
                if !self.walk_dir(&path, &rel, frames, sorted, each) {
                    going_on = false;
                    break;
                }
            }
        }
        if entered {
            frames.pop();
        }
        going_on
    }

    /// One component's own name check (`path`: where it is, for the platform's mark).
    fn component_shown(&self, name: &str, path: &Path) -> bool {
        if !self.name_shown(name) {
            return false;
        }
        if self.hidden || !platform::marks_hidden() {
            return true;
        }
        !std::fs::symlink_metadata(path)
            .ok()
            .as_ref()
            .is_some_and(platform::marked_hidden)
    }

    /// The rules of the folder `dir` (absolute), read or kept.
    fn rules_of(&self, dir: &Path) -> Arc<DirRules> {
        if let Some(r) = lock(&self.rules).get(dir) {
            return r.clone();
        }
        let read = |file: &Path| {
            let bytes = paths::read_regular(file, RULES_CAP).ok()?;
            let mut b = GitignoreBuilder::new(dir);
            for line in String::from_utf8_lossy(&bytes).lines() {
                let _ = b.add_line(Some(file.to_path_buf()), line);
            }
            b.build().ok().filter(|g| !g.is_empty())
        };
        let git = dir.join(".git");
        let repo_top = std::fs::symlink_metadata(&git).is_ok();
        let rules = Arc::new(DirRules {
            dot_ignore: read(&dir.join(IGNORE_FILES[0])),
            git_ignore: read(&dir.join(IGNORE_FILES[1])),
            git_exclude: repo_top
                .then(|| git_dir(&git))
                .flatten()
                .and_then(|g| read(&g.join("info").join("exclude"))),
            repo_top,
        });
        lock(&self.rules).insert(dir.to_path_buf(), rules.clone());
        rules
    }
}

/// The git folder a `.git` entry stands for: itself, or for a `.git` file (a linked work tree,
/// a submodule) the folder it names, or that folder's common folder (where `info/exclude` is).
fn git_dir(dot_git: &Path) -> Option<PathBuf> {
    let meta = std::fs::symlink_metadata(dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git.to_path_buf());
    }
    let text = paths::read_regular(dot_git, 4096).ok()?;
    let text = String::from_utf8(text).ok()?;
    let named = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let gitdir = dot_git.parent()?.join(named);
    match paths::read_regular(&gitdir.join("commondir"), 4096) {
        Ok(common) => {
            let common = String::from_utf8(common).ok()?;
            Some(gitdir.join(common.trim()))
        }
        Err(_) => Some(gitdir),
    }
}

/// `rel`'s folders and file name, if it is a plain relative path.
fn split_rel(rel: &str) -> Option<(Vec<&str>, &str)> {
    if !paths::is_plain_relative(rel) {
        return None;
    }
    let mut parts: Vec<&str> = rel.split('/').collect();
    let last = parts.pop()?;
    Some((parts, last))
}

/// Folders above `root` whose ignore files apply, outermost first: up to and including the top
/// of the git work tree that holds it. Outside a repository (or at its top), none.
fn repo_parents(root: &Path) -> Vec<PathBuf> {
    if std::fs::symlink_metadata(root.join(".git")).is_ok() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for dir in root.ancestors().skip(1) {
        out.push(dir.to_path_buf());
        if std::fs::symlink_metadata(dir.join(".git")).is_ok() {
            out.reverse();
            return out;
        }
    }
    Vec::new()
}

/// A set of globs as the manifest writes them (`*` does not cross `/`).
fn globs(list: &[String]) -> GlobSet {
    // `**/*`, the default `include`, is compiled once: each build compiles a regex (with a full
    // DFA), and a manifest may have a source or a template per note.
    static ALL: OnceLock<GlobSet> = OnceLock::new();
    let build = |list: &[String]| {
        let mut b = GlobSetBuilder::new();
        for g in list {
            if let Ok(glob) = globset::GlobBuilder::new(g).literal_separator(true).build() {
                b.add(glob);
            }
        }
        b.build().unwrap_or_else(|_| GlobSet::empty())
    };
    if list.len() == 1 && list[0] == "**/*" {
        return ALL.get_or_init(|| build(list)).clone();
    }
    build(list)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::Visibility;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    /// Every file of the tree, walked without any rule.
    fn all_files(root: &Path) -> Vec<String> {
        fn go(dir: &Path, rel: &str, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
                let name = e.file_name().into_string().expect("utf-8");
                let r = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                if e.file_type().expect("type").is_dir() {
                    go(&e.path(), &r, out);
                } else {
                    out.push(r);
                }
            }
        }
        let mut out = Vec::new();
        go(root, "", &mut out);
        out.sort();
        out
    }

    fn walked(vis: &Visibility) -> Vec<String> {
        let mut out = Vec::new();
        vis.walk(true, |rel| {
            if vis.selects(rel) {
                out.push(rel.to_owned());
            }
            true
        });
        out.sort();
        out
    }

    /// ripgrep's precedence: a `.ignore` match anywhere beats `.gitignore`, which beats
    /// `.git/info/exclude`; within a kind the deepest folder decides; negations show again.
    /// The walk and the one-path check agree on every file of the tree.
    #[test]
    fn ignore_files_combine_as_ripgrep_combines_them() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = crate::providers::platform::canonical(dir.path()).expect("canonical");
        std::fs::create_dir(root.join(".git")).expect(".git");
        write(&root, ".git/info/exclude", "*.tmp\nexcluded/\n");
        write(&root, ".gitignore", "*.log\n!important.log\nbuild/\n");
        write(&root, ".ignore", "!kept.tmp\n");
        write(&root, "a.txt", "");
        write(&root, "x.tmp", "");
        write(&root, "kept.tmp", "");
        write(&root, "x.log", "");
        write(&root, "important.log", "");
        write(&root, "build/out.txt", "");
        write(&root, "excluded/e.txt", "");
        write(&root, "sub/.gitignore", "!x.log\nlocal.txt\n");
        write(&root, "sub/x.log", "");
        write(&root, "sub/local.txt", "");
        write(&root, "sub/.ignore", "gitkept.txt\n");
        write(&root, "sub/gitkept.txt", "");
        write(&root, "sub/deep/.gitignore", "!local.txt\n");
        write(&root, "sub/deep/local.txt", "");
        write(&root, ".hidden/h.txt", "");
        let vis = Visibility::new(&root, false, true);
        let want = [
            "a.txt",
            "important.log",
            "kept.tmp",
            "sub/deep/local.txt",
            "sub/x.log",
        ];
        assert_eq!(walked(&vis), want);
        for rel in all_files(&root) {
            assert_eq!(
                vis.visible(&rel),
                want.contains(&rel.as_str()),
                "{rel}: the check of one path agrees with the walk"
            );
        }
        // `gitignore = false`: names only. `hidden = true`: dot names too, never `.git`.
        let names_only = Visibility::new(&root, true, false);
        assert!(names_only.visible("x.log") && names_only.visible(".hidden/h.txt"));
        assert!(!names_only.visible(".git/info/exclude"));
        assert!(walked(&names_only).iter().all(|r| !r.starts_with(".git/")));
    }

    /// A repository nested in another has its own `.gitignore` and `exclude`; `.ignore` files
    /// still count from above. A `.git` file (a linked work tree) leads to its `info/exclude`.
    #[test]
    fn a_nested_repository_has_its_own_git_rules() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = crate::providers::platform::canonical(dir.path()).expect("canonical");
        std::fs::create_dir(root.join(".git")).expect(".git");
        write(&root, ".gitignore", "*.log\n");
        write(&root, ".ignore", "*.bak\n");
        write(&root, "inner/.git", "gitdir: ../store/wt\n");
        write(&root, "store/wt/commondir", "../common\n");
        write(&root, "store/common/info/exclude", "*.ex\n");
        write(&root, "inner/a.log", "");
        write(&root, "inner/a.bak", "");
        write(&root, "inner/a.ex", "");
        write(&root, "inner/a.txt", "");
        write(&root, "top.log", "");
        let vis = Visibility::new(&root, false, true);
        assert!(
            vis.visible("inner/a.log"),
            "the outer .gitignore stops at the inner repository"
        );
        assert!(
            !vis.visible("inner/a.bak"),
            ".ignore counts across repositories"
        );
        assert!(
            !vis.visible("inner/a.ex"),
            "the linked work tree's common exclude"
        );
        assert!(vis.visible("inner/a.txt"));
        assert!(!vis.visible("top.log"));
        // Seen from the inner repository's top: its own rules; nothing above it counts.
        let inner = Visibility::new(&root.join("inner"), false, true);
        assert!(inner.visible("a.log") && inner.visible("a.bak") && !inner.visible("a.ex"));
    }

    /// Above the root, the ignore files of the folders up to the repository's top count, and
    /// the top's `exclude`; outside a repository, only the root and below.
    #[test]
    fn folders_above_the_root_count_up_to_the_repository_top() {
        let dir = tempfile::tempdir().expect("tmp");
        let base = crate::providers::platform::canonical(dir.path()).expect("canonical");
        write(&base, ".gitignore", "*.md\n");
        write(&base, "repo/docs/a.md", "");
        write(&base, "repo/docs/b.txt", "");
        write(&base, "repo/docs/c.tmp", "");
        let outside = Visibility::new(&base.join("repo/docs"), false, true);
        assert!(
            outside.visible("a.md"),
            "no repository: nothing above the root counts"
        );
        std::fs::create_dir(base.join("repo/.git")).expect(".git");
        write(&base, "repo/.git/info/exclude", "*.tmp\n");
        write(&base, "repo/.gitignore", "b.txt\n");
        let inside = Visibility::new(&base.join("repo/docs"), false, true);
        assert!(
            inside.visible("a.md"),
            "above the repository's top: not counted"
        );
        assert!(!inside.visible("b.txt"));
        assert!(!inside.visible("c.tmp"));
        assert_eq!(
            inside.rules_dirs(),
            [base.join("repo"), base.join("repo/.git/info")]
        );
        assert_eq!(
            inside.rules_changed_by(&base.join("repo/.git/info/exclude")),
            Some(base.join("repo").as_path())
        );
        assert_eq!(inside.rules_changed_by(&base.join(".gitignore")), None);
    }
}
