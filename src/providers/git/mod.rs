//! `[git.NAME]`: a git repository served as `git://NAME/...` resources — `log`, `status`,
//! `branches`, `diff` — and the templates `commit/{rev}` and `blob/{rev}/{+path}`, with completion
//! of `rev` (branches, tags) and `path` (tracked paths at a revision).
//!
//! The repository is found once, in `GitSource::build` (discovering upward from `path`); requests
//! run on blocking threads, each with a `git2::Repository` handle of its own (handles are not
//! `Sync`) taken from a small pool, opened on first use (see `GitSource::with_repo`). Listing the
//! fixed resources opens nothing.
//!
//! Output formats are fixed here and documented in README.md; where git has a porcelain format
//! (`status --porcelain`, `branch -a`, `diff HEAD`) the text follows it, so tests compare with the
//! git CLI.

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use git2::{
    BranchType, Commit, Delta, Diff, DiffFindOptions, DiffFormat, ErrorCode, ObjectType,
    Repository, Status, StatusOptions, Tree,
};

use super::paths::{is_plain_relative, mime_for};
use super::{
    Body, BoxFut, ChangeEffect, Completion, CompletionRequest, Contents, RequestError,
    ResourceInfo, Source, TemplateInfo, on_blocking, on_blocking_or, ready,
};
use crate::manifest::{self, Diagnostics, expand::format_size};
use crate::quote::{Quote, quote};
use crate::uri::UriTemplate;
use crate::uri::percent_decode as decode_percent;
use crate::watch::{Change, ChangeKind};

mod format;
use format::*;

/// Diffs (`diff`, the patch of `commit/{rev}`) longer than this are cut, with a line saying so.
pub const DIFF_CAP: usize = 1024 * 1024;

/// Blobs larger than this are refused with an error naming both sizes (a cut file would be a
/// wrong file).
pub const BLOB_CAP: u64 = 10 * 1024 * 1024;

const TEXT: &str = "text/plain";

/// What kind of repository state a changed path belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Touched {
    /// HEAD, a ref or packed-refs: what every revision means.
    Refs,
    /// The index or a work tree file: what `status` and `diff` compare.
    IndexOrWorkTree,
}

/// The four fixed resources, in listing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fixed {
    Log,
    Status,
    Branches,
    Diff,
}

impl Fixed {
    const ALL: [Fixed; 4] = [Fixed::Log, Fixed::Status, Fixed::Branches, Fixed::Diff];

    fn segment(self) -> &'static str {
        match self {
            Fixed::Log => "log",
            Fixed::Status => "status",
            Fixed::Branches => "branches",
            Fixed::Diff => "diff",
        }
    }

    /// Status and diff compare with a work tree; a bare repository has none.
    fn needs_work_tree(self) -> bool {
        matches!(self, Fixed::Status | Fixed::Diff)
    }
}

/// The live git source.
#[derive(Debug)]
pub(crate) struct GitSource {
    pub name: String,
    /// `git://NAME/`.
    prefix: String,
    /// The repository's git dir (`.git`, or the bare repository itself); what requests open.
    git_dir: PathBuf,
    /// Where refs and packed-refs live (differs from `git_dir` in a linked work tree).
    common_dir: PathBuf,
    /// The work tree; `None` for a bare repository.
    work_tree: Option<PathBuf>,
    log_limit: usize,
    pub watch: bool,
    description: Option<String>,
    /// `git://NAME/commit/{rev}`.
    commit_template: UriTemplate,
    /// `git://NAME/blob/{rev}/{+path}`.
    blob_template: UriTemplate,
    /// Open repositories between requests (see `with_repo`); empty until the first request.
    pool: Pool,
    /// The tools of the commit and blob templates (`template_tools`), if any.
    commit_tool: Option<String>,
    file_tool: Option<String>,
}

/// The most open repositories a source keeps between requests.
const POOL_MAX: usize = 4;

#[derive(Default)]
struct Pool(Mutex<Vec<Repository>>);

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().map_or(0, |p| p.len());
        write!(f, "Pool({kept} open)")
    }
}

impl GitSource {
    /// Builds the source from its checked entry: `path` must be in a repository (a work tree, a
    /// folder inside one, or a bare repository). Problems are reported at `path`.
    pub(crate) fn build(def: &manifest::Git, diags: &mut Diagnostics) -> Option<GitSource> {
        let shown = def.path.display();
        if !def.path.exists() {
            diags.push(
                def.path_loc,
                format!(
                    "[git.{}] path `{shown}` does not exist; it should be a git work tree or a bare repository",
                    def.name
                ),
            );
            return None;
        }
        // Discovery starts at a folder; a file inside a work tree counts as its folder.
        let start = if def.path.is_file() {
            def.path.parent().unwrap_or(&def.path)
        } else {
            &def.path
        };
        let repo = match Repository::discover(start) {
            Ok(r) => r,
            Err(e) if e.code() == ErrorCode::NotFound => {
                diags.push(
                    def.path_loc,
                    format!(
                        "[git.{}] path `{shown}` is not inside a git repository (run `git init` there, or point `path` at a repository)",
                        def.name
                    ),
                );
                return None;
            }
            Err(e) => {
                diags.push(
                    def.path_loc,
                    format!(
                        "[git.{}] the repository at `{shown}` cannot be opened: {}",
                        def.name,
                        e.message()
                    ),
                );
                return None;
            }
        };
        let templates = (
            UriTemplate::parse(&format!("git://{}/commit/{{rev}}", def.name)),
            UriTemplate::parse(&format!("git://{}/blob/{{rev}}/{{+path}}", def.name)),
        );
        let (Ok(commit_template), Ok(blob_template)) = templates else {
            // Names match `[a-z][a-z0-9_-]*`, so both templates are always valid.
            diags.push(
                def.loc,
                format!("[git.{}] has a name no URI can hold", def.name),
            );
            return None;
        };
        // Canonical, like the paths in change events.
        let canonical =
            |p: &Path| crate::providers::platform::canonical(p).unwrap_or_else(|_| p.to_path_buf());
        Some(GitSource {
            name: def.name.clone(),
            prefix: format!("git://{}/", def.name),
            git_dir: canonical(repo.path()),
            common_dir: canonical(repo.commondir()),
            work_tree: repo.workdir().map(canonical),
            log_limit: usize::try_from(def.log_limit).unwrap_or(usize::MAX),
            watch: def.watch,
            description: def.description.clone(),
            commit_template,
            blob_template,
            pool: Pool::default(),
            commit_tool: def.commit_tool.clone(),
            file_tool: def.file_tool.clone(),
        })
    }

    fn fixed(&self) -> impl Iterator<Item = Fixed> + '_ {
        Fixed::ALL
            .into_iter()
            .filter(|f| !f.needs_work_tree() || self.work_tree.is_some())
    }

    /// Adds the folders a watcher must watch (each non-recursively): the git dir (`HEAD`,
    /// `index`), the common dir (`packed-refs`), every folder under `refs/`, and the work tree's
    /// folders that `.gitignore` does not hide. Blocking (walks the work tree).
    fn watch_dirs_blocking(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        out.push(self.git_dir.clone());
        out.push(self.common_dir.clone());
        let refs = self.common_dir.join("refs");
        let walk = ignore::WalkBuilder::new(&refs)
            .standard_filters(false)
            .build();
        out.extend(dirs_of(walk));
        if let Some(work_tree) = &self.work_tree {
            let git_dir = self.git_dir.clone();
            let walk = ignore::WalkBuilder::new(work_tree)
                .hidden(false)
                .filter_entry(move |e| e.file_name() != ".git" && e.path() != git_dir)
                .build();
            out.extend(dirs_of(walk));
        }
        out
    }

    /// What a changed path means here; `None` for paths that change nothing we serve (objects,
    /// logs and lock files in the git dir, paths elsewhere).
    fn touched(&self, path: &Path) -> Option<Touched> {
        let refs = self.common_dir.join("refs");
        if path == self.git_dir.join("HEAD")
            || path == self.common_dir.join("packed-refs")
            || path.starts_with(&refs)
        {
            return Some(Touched::Refs);
        }
        if path == self.git_dir.join("index") {
            return Some(Touched::IndexOrWorkTree);
        }
        if path.starts_with(&self.git_dir) || path.starts_with(&self.common_dir) {
            return None;
        }
        match &self.work_tree {
            Some(w) if path.starts_with(w) => Some(Touched::IndexOrWorkTree),
            _ => None,
        }
    }

    fn describe(&self, what: &str) -> String {
        match &self.description {
            Some(d) => format!("{d}: {what}"),
            None => format!("{what} ([git.{}])", self.name),
        }
    }

    /// The fixed resources. Opens nothing.
    fn fixed_resources(&self) -> Vec<ResourceInfo> {
        self.fixed()
            .map(|f| {
                let what = match f {
                    Fixed::Log => format!(
                        "the last {} commits, newest first: short hash, date, author, summary",
                        self.log_limit
                    ),
                    Fixed::Status => "changed paths with porcelain status codes".to_owned(),
                    Fixed::Branches => "branches, the current one marked *".to_owned(),
                    Fixed::Diff => "unified diff of the working tree against HEAD".to_owned(),
                };
                let mut r = ResourceInfo::new(
                    format!("{}{}", self.prefix, f.segment()),
                    format!("{}/{}", self.name, f.segment()),
                );
                r.description = Some(self.describe(&what));
                r.mime_type = Some(TEXT.to_owned());
                r
            })
            .collect()
    }

    fn template_infos(&self) -> Vec<TemplateInfo> {
        vec![
            TemplateInfo {
                uri_template: self.commit_template.as_str().to_owned(),
                name: format!("{}/commit", self.name),
                description: Some(self.describe(
                    "one commit by revision (hash, branch, tag, HEAD~2, …): hash, author, date, message and patch",
                )),
                mime_type: Some(TEXT.to_owned()),
            },
            TemplateInfo {
                uri_template: self.blob_template.as_str().to_owned(),
                name: format!("{}/blob", self.name),
                description: Some(
                    self.describe("a file as it was at a revision (text, or base64 for binary)"),
                ),
                mime_type: None,
            },
        ]
    }

    /// Reads one resource (blocking: call from a blocking thread).
    fn read_blocking(&self, uri: &str) -> Result<Contents, RequestError> {
        let not_found = || RequestError::NotFound(uri.to_owned());
        let rest = uri.strip_prefix(&self.prefix).ok_or_else(not_found)?;
        if let Some(f) = self.fixed().find(|f| f.segment() == rest) {
            let text = self.with_repo(|repo| match f {
                Fixed::Log => self.log(repo),
                Fixed::Status => self.status(repo),
                Fixed::Branches => self.branches(repo),
                Fixed::Diff => self.work_tree_diff(repo),
            })?;
            return Ok(text_contents(uri, text));
        }
        if let Some(rev) = self.match_commit(uri) {
            let text = self.with_repo(|repo| self.show_commit(repo, &rev))?;
            return Ok(text_contents(uri, text));
        }
        if let Some((rev, path)) = self.match_blob(uri) {
            return self.with_repo(|repo| self.blob(repo, uri, &rev, &path));
        }
        Err(not_found())
    }

    /// Completes `rev` (branches, tags, `HEAD`) of either template, or `path` of the blob
    /// template (files tracked at `context["rev"]`, or at HEAD). Blocking.
    fn complete_blocking(
        &self,
        template: &str,
        var: &str,
        prefix: &str,
        context: &HashMap<String, String>,
    ) -> Result<Completion, RequestError> {
        let path_var = template == self.blob_template.as_str() && var == "path";
        if var != "rev" && !path_var {
            return Ok(Completion::default());
        }
        self.with_repo(|repo| match var {
            "rev" => Ok(Completion::from_candidates(rev_names(repo), prefix)),
            _ => {
                let rev = context.get("rev").map_or("HEAD", String::as_str);
                let Ok(tree) = repo.revparse_single(rev).and_then(|o| o.peel_to_tree()) else {
                    // A rev still being typed, or an unborn HEAD: nothing to offer yet.
                    return Ok(Completion::default());
                };
                Ok(Completion::from_candidates(
                    tracked_paths(repo, &tree, prefix),
                    prefix,
                ))
            }
        })
    }

    /// Runs `f` with an open repository: one from the pool, or a newly opened one, put back in
    /// the pool afterwards.
    ///
    /// Why a pool: libgit2 shares an opened pack (its index checked, its file mapped) between the
    /// `Repository` handles that use it and closes it with the last one, so a handle opened per
    /// request re-reads every pack index — most of the time of a blob read on a large
    /// repository. A kept handle stays current: refs and HEAD are read from disk on each lookup,
    /// the index and config files are reloaded when they change on disk, and an object missing
    /// from the known packs makes libgit2 look for new ones. Handles are not `Sync`, so each
    /// request takes one for itself; at most `POOL_MAX` are kept.
    fn with_repo<T>(
        &self,
        f: impl FnOnce(&Repository) -> Result<T, RequestError>,
    ) -> Result<T, RequestError> {
        let kept = self.pool.0.lock().ok().and_then(|mut p| p.pop());
        let repo = match kept {
            Some(r) => r,
            None => self.open()?,
        };
        let out = f(&repo);
        if let Ok(mut p) = self.pool.0.lock()
            && p.len() < POOL_MAX
        {
            p.push(repo);
        }
        out
    }

    fn open(&self) -> Result<Repository, RequestError> {
        Repository::open(&self.git_dir).map_err(|e| {
            RequestError::Internal(format!(
                "[git.{}] the repository at `{}` cannot be opened: {}",
                self.name,
                self.git_dir.display(),
                e.message()
            ))
        })
    }

    fn internal(&self, e: &git2::Error) -> RequestError {
        RequestError::Internal(format!("[git.{}] {}", self.name, e.message()))
    }

    // ---- URI matching -------------------------------------------------------------------------

    /// `git://NAME/commit/{rev}` → the decoded rev. Besides what the template matches (a rev
    /// expanded by RFC 6570, `^` as `%5E`, `/` as `%2F`), everything after `commit/` is taken
    /// as the rev, so hand-written URIs like `git://NAME/commit/HEAD^` or `.../feature/x` work.
    fn match_commit(&self, uri: &str) -> Option<String> {
        if let Some(vars) = self.commit_template.matches(uri) {
            let rev = vars.get("rev")?.as_str()?;
            return (!rev.is_empty()).then(|| rev.to_owned());
        }
        let raw = uri.strip_prefix(&self.prefix)?.strip_prefix("commit/")?;
        decode_percent(raw).filter(|rev| !rev.is_empty())
    }

    /// `git://NAME/blob/{rev}/{+path}` → the decoded rev and path. A hand-written rev with
    /// characters RFC 6570 would encode (`HEAD^`) is accepted up to the first `/`.
    fn match_blob(&self, uri: &str) -> Option<(String, String)> {
        if let Some(vars) = self.blob_template.matches(uri) {
            let rev = vars.get("rev")?.as_str()?.to_owned();
            let path = vars.get("path")?.as_str()?.to_owned();
            return (!rev.is_empty()).then_some((rev, path));
        }
        let raw = uri.strip_prefix(&self.prefix)?.strip_prefix("blob/")?;
        let (rev, path) = raw.split_once('/')?;
        let rev = decode_percent(rev).filter(|r| !r.is_empty())?;
        Some((rev, decode_percent(path)?))
    }

    // ---- the fixed resources ------------------------------------------------------------------

    /// `log`: one commit a line, newest first: short hash, date (ISO 8601, the author's offset),
    /// author name and summary, separated by tabs. An unborn HEAD has an empty log.
    ///
    /// The order is git's default (`git log` without options): a queue of commits by committer
    /// date, HEAD first, each popped commit adding its parents; equal dates leave in the order
    /// they came in. Only the commits shown (and their parents) are loaded, so the cost does not
    /// grow with the length of the history.
    fn log(&self, repo: &Repository) -> Result<String, RequestError> {
        let Some(head) = head_commit(repo).map_err(|e| self.internal(&e))? else {
            return Ok(String::new());
        };
        let abbrev = Abbrev::of(repo);
        let mut queue = BinaryHeap::new();
        let mut seen = HashSet::new();
        let mut seq = 0u64;
        seen.insert(head.id());
        queue.push(Queued::new(head, &mut seq));
        let mut out = String::new();
        let mut shown = 0;
        while shown < self.log_limit {
            let Some(Queued { commit, .. }) = queue.pop() else {
                break;
            };
            for parent_id in commit.parent_ids() {
                if seen.insert(parent_id) {
                    // A parent missing from a shallow clone ends that line of history.
                    if let Ok(parent) = repo.find_commit(parent_id) {
                        queue.push(Queued::new(parent, &mut seq));
                    }
                }
            }
            let author = commit.author();
            let _ = writeln!(
                out,
                "{}\t{}\t{}\t{}",
                abbrev.short(commit.as_object()),
                iso_date(author.when()),
                String::from_utf8_lossy(author.name_bytes()),
                String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default()),
            );
            shown += 1;
        }
        Ok(out)
    }

    /// `status`: `git status --porcelain` (v1): two status letters, a space, the path (quoted
    /// like git when it holds spaces, quotes, backslashes, control characters or non-UTF-8
    /// bytes); `R  old -> new` for a staged rename; tracked changes first, then untracked paths,
    /// an untracked folder as one `?? dir/`. Unmerged paths get git's codes (`UU`, `AA`, …).
    fn status(&self, repo: &Repository) -> Result<String, RequestError> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(false)
            .include_ignored(false)
            .renames_head_to_index(true)
            .sort_case_sensitively(true);
        let statuses = repo
            .statuses(Some(&mut opts))
            .map_err(|e| self.internal(&e))?;
        let conflicts = if statuses
            .iter()
            .any(|s| s.status().contains(Status::CONFLICTED))
        {
            conflict_codes(repo).map_err(|e| self.internal(&e))?
        } else {
            HashMap::new()
        };
        // git lists tracked changes first, then untracked paths, each group by path.
        let mut out = String::new();
        let mut untracked = String::new();
        for entry in statuses.iter() {
            let s = entry.status();
            if s.contains(Status::IGNORED) {
                continue;
            }
            let path = entry.path_bytes();
            let code = if s.contains(Status::CONFLICTED) {
                conflicts.get(path).copied().unwrap_or("UU").to_owned()
            } else if s.contains(Status::WT_NEW) && !s.intersects(index_bits()) {
                let _ = writeln!(untracked, "?? {}", quote_path(path));
                continue;
            } else {
                format!("{}{}", index_letter(s), work_tree_letter(s))
            };
            let renamed = entry
                .head_to_index()
                .filter(|_| s.contains(Status::INDEX_RENAMED));
            match renamed {
                Some(d) => {
                    let old = d.old_file().path_bytes().unwrap_or(path);
                    let new = d.new_file().path_bytes().unwrap_or(path);
                    let _ = writeln!(out, "{code} {} -> {}", quote_path(old), quote_path(new));
                }
                None => {
                    let _ = writeln!(out, "{code} {}", quote_path(path));
                }
            }
        }
        out.push_str(&untracked);
        Ok(out)
    }

    /// `branches`: like `git branch -a`: local branches, then remote-tracking ones as
    /// `remotes/<remote>/<name>`, each after two columns holding `* ` for the current branch
    /// (`+ ` for one checked out in another work tree); a detached HEAD is the first line,
    /// `* (HEAD detached at <short hash>)`.
    fn branches(&self, repo: &Repository) -> Result<String, RequestError> {
        let mut local = Vec::new();
        let mut remote = Vec::new();
        let elsewhere = self.checked_out_elsewhere(repo);
        let branches = repo.branches(None).map_err(|e| self.internal(&e))?;
        for item in branches {
            let (branch, kind) = item.map_err(|e| self.internal(&e))?;
            let name =
                String::from_utf8_lossy(branch.name_bytes().unwrap_or_default()).into_owned();
            let reference = branch.get();
            match kind {
                BranchType::Local => {
                    let mark = if branch.is_head() {
                        '*'
                    } else if reference
                        .name_bytes()
                        .strip_prefix(b"refs/heads/")
                        .is_some_and(|n| elsewhere.iter().any(|e| e == n))
                    {
                        '+'
                    } else {
                        ' '
                    };
                    local.push((name, mark));
                }
                BranchType::Remote => {
                    let line = match reference.symbolic_target_bytes() {
                        Some(t) => {
                            let t = String::from_utf8_lossy(t);
                            let short = t.strip_prefix("refs/remotes/").unwrap_or(&t);
                            format!("remotes/{name} -> {short}")
                        }
                        None => format!("remotes/{name}"),
                    };
                    remote.push(line);
                }
            }
        }
        local.sort();
        remote.sort();
        let mut out = String::new();
        if repo.head_detached().unwrap_or(false)
            && let Ok(Some(head)) = head_commit(repo)
        {
            let short = Abbrev::of(repo).short(head.as_object());
            let _ = writeln!(out, "* (HEAD detached at {short})");
        }
        for (name, mark) in local {
            let _ = writeln!(out, "{mark} {name}");
        }
        for line in remote {
            let _ = writeln!(out, "  {line}");
        }
        Ok(out)
    }

    /// Branches (names under `refs/heads/`) checked out in the repository's other work trees:
    /// the main one (unless the repository is bare) and the linked ones, read from their `HEAD`
    /// files.
    fn checked_out_elsewhere(&self, repo: &Repository) -> Vec<Vec<u8>> {
        let linked = self.common_dir.join("worktrees");
        let mut heads = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&linked) {
            heads.extend(entries.flatten().map(|e| e.path().join("HEAD")));
        }
        let bare = repo
            .config()
            .and_then(|c| c.get_bool("core.bare"))
            .unwrap_or(false);
        if self.common_dir != self.git_dir && !bare {
            heads.push(self.common_dir.join("HEAD"));
        }
        let own = self.git_dir.join("HEAD");
        heads
            .into_iter()
            .filter(|h| *h != own)
            .filter_map(|h| std::fs::read(h).ok())
            .filter_map(|text| {
                let name = text.strip_prefix(b"ref: refs/heads/")?;
                Some(name.trim_ascii_end().to_vec())
            })
            .collect()
    }

    /// `diff`: `git diff HEAD` — staged and unstaged changes of tracked files against HEAD (an
    /// unborn HEAD compares with the empty tree), renames detected, cut at `DIFF_CAP`.
    fn work_tree_diff(&self, repo: &Repository) -> Result<String, RequestError> {
        let head_tree = match head_commit(repo).map_err(|e| self.internal(&e))? {
            Some(c) => Some(c.tree().map_err(|e| self.internal(&e))?),
            None => None,
        };
        let mut diff = repo
            .diff_tree_to_workdir_with_index(head_tree.as_ref(), Some(&mut diff_options()))
            .map_err(|e| self.internal(&e))?;
        let conflicted: Vec<Vec<u8>> = diff
            .deltas()
            .filter(|d| d.status() == Delta::Conflicted)
            .filter_map(|d| d.new_file().path_bytes().map(<[u8]>::to_vec))
            .collect();
        if conflicted.is_empty() {
            return self.patch_text(&mut diff);
        }
        // During a merge in conflict the index holds no content for unmerged paths, so libgit2
        // has nothing to compare; git compares HEAD with the work tree file (conflict markers
        // and all). Do the same for those paths, and interleave them in path order.
        self.find_renames(&mut diff)?;
        let mut opts = diff_options();
        opts.disable_pathspec_match(true);
        for p in &conflicted {
            opts.pathspec(p.as_slice());
        }
        let unmerged = repo
            .diff_tree_to_workdir(head_tree.as_ref(), Some(&mut opts))
            .map_err(|e| self.internal(&e))?;
        let mut order: Vec<(&[u8], &Diff, usize)> = Vec::new();
        for (d, skip_conflicted) in [(&diff, true), (&unmerged, false)] {
            for (i, delta) in d.deltas().enumerate() {
                if skip_conflicted && delta.status() == Delta::Conflicted {
                    continue;
                }
                let path = delta.new_file().path_bytes();
                let path = path.or(delta.old_file().path_bytes()).unwrap_or_default();
                order.push((path, d, i));
            }
        }
        order.sort_by(|a, b| a.0.cmp(b.0));
        let mut w = PatchWriter::default();
        for (_, d, i) in order {
            let Some(mut patch) = git2::Patch::from_diff(d, i).map_err(|e| self.internal(&e))?
            else {
                continue;
            };
            let printed = patch.print(&mut |_, _, line| w.line(&line));
            if w.cut {
                break;
            }
            printed.map_err(|e| self.internal(&e))?;
        }
        Ok(w.finish(&self.name))
    }

    // ---- the templates ------------------------------------------------------------------------

    fn resolve<'r>(
        &self,
        repo: &'r Repository,
        rev: &str,
    ) -> Result<git2::Object<'r>, RequestError> {
        if rev.is_empty() {
            return Err(RequestError::InvalidParams(format!(
                "empty revision in [git.{}]",
                self.name
            )));
        }
        // libgit2's message repeats the revision: cut like it.
        repo.revparse_single(rev).map_err(|e| {
            RequestError::InvalidParams(format!(
                "unknown revision {} in [git.{}]: {}",
                quote(rev, Quote::Code),
                self.name,
                quote(e.message(), Quote::Plain)
            ))
        })
    }

    /// `commit/{rev}`: like `git show --format=medium`, with ISO dates; a merge's patch is
    /// against its first parent, a root commit's against the empty tree.
    fn show_commit(&self, repo: &Repository, rev: &str) -> Result<String, RequestError> {
        let obj = self.resolve(repo, rev)?;
        let commit = obj.peel_to_commit().map_err(|_| {
            RequestError::InvalidParams(format!(
                "revision {} in [git.{}] is a {}, not a commit",
                quote(rev, Quote::Code),
                self.name,
                obj.kind().map_or("object", |k| k.str())
            ))
        })?;
        let abbrev = Abbrev::of(repo);
        let mut out = format!("commit {}\n", commit.id());
        let parents: Vec<Commit> = commit.parents().collect();
        if parents.len() > 1 {
            let shorts: Vec<String> = parents
                .iter()
                .map(|p| abbrev.short(p.as_object()))
                .collect();
            let _ = writeln!(out, "Merge: {}", shorts.join(" "));
        }
        let author = commit.author();
        let _ = writeln!(
            out,
            "Author: {} <{}>",
            String::from_utf8_lossy(author.name_bytes()),
            String::from_utf8_lossy(author.email_bytes())
        );
        let _ = writeln!(out, "Date:   {}\n", iso_date(author.when()));
        let message = String::from_utf8_lossy(commit.message_bytes());
        for line in message.trim_end().lines() {
            if line.trim().is_empty() {
                out.push('\n');
            } else {
                let _ = writeln!(out, "    {line}");
            }
        }
        out.push('\n');
        if let Some(first) = parents.first()
            && parents.len() > 1
        {
            let _ = writeln!(
                out,
                "Diff against the first parent {}:\n",
                abbrev.short(first.as_object())
            );
        }
        let old_tree: Option<Tree> = match parents.first() {
            Some(p) => Some(p.tree().map_err(|e| self.internal(&e))?),
            None => None,
        };
        let new_tree = commit.tree().map_err(|e| self.internal(&e))?;
        let mut diff = repo
            .diff_tree_to_tree(
                old_tree.as_ref(),
                Some(&new_tree),
                Some(&mut diff_options()),
            )
            .map_err(|e| self.internal(&e))?;
        out.push_str(&self.patch_text(&mut diff)?);
        Ok(out)
    }

    /// `blob/{rev}/{+path}`: the file's bytes at `rev` (text, or bytes sent as base64), its MIME
    /// type from the path. Folders, submodules and missing paths are "not found".
    fn blob(
        &self,
        repo: &Repository,
        uri: &str,
        rev: &str,
        path: &str,
    ) -> Result<Contents, RequestError> {
        let not_found = || RequestError::NotFound(uri.to_owned());
        let obj = self.resolve(repo, rev)?;
        let tree = obj.peel_to_tree().map_err(|_| {
            RequestError::InvalidParams(format!(
                "revision {} in [git.{}] is a {}, not a commit or tree",
                quote(rev, Quote::Code),
                self.name,
                obj.kind().map_or("object", |k| k.str())
            ))
        })?;
        if !is_plain_relative(path) {
            return Err(not_found());
        }
        let entry = tree.get_path(Path::new(path)).map_err(|_| not_found())?;
        if entry.kind() != Some(ObjectType::Blob) {
            return Err(not_found());
        }
        let odb = repo.odb().map_err(|e| self.internal(&e))?;
        let (size, _) = odb.read_header(entry.id()).map_err(|_| not_found())?;
        let size = size as u64;
        if size > BLOB_CAP {
            return Err(RequestError::Refused(format!(
                "{} is {}, larger than the {} cap on git blobs",
                quote(uri, Quote::Plain),
                format_size(size),
                format_size(BLOB_CAP)
            )));
        }
        let blob = repo.find_blob(entry.id()).map_err(|_| not_found())?;
        let body = Body::from_bytes(blob.content().to_vec());
        let is_text = matches!(body, Body::Text(_));
        Ok(Contents {
            uri: uri.to_owned(),
            mime_type: Some(mime_for(Path::new(path), || is_text)),
            body,
        })
    }

    /// A diff as unified patch text (renames detected), cut at `DIFF_CAP`.
    fn patch_text(&self, diff: &mut Diff) -> Result<String, RequestError> {
        self.find_renames(diff)?;
        let mut w = PatchWriter::default();
        let printed = diff.print(DiffFormat::Patch, |_, _, line| w.line(&line));
        if let Err(e) = printed
            && !w.cut
        {
            return Err(self.internal(&e));
        }
        Ok(w.finish(&self.name))
    }

    fn find_renames(&self, diff: &mut Diff) -> Result<(), RequestError> {
        diff.find_similar(Some(DiffFindOptions::new().renames(true)))
            .map_err(|e| self.internal(&e))
    }
}

/// The folders a walk visits.
impl GitSource {
    /// Whether `uri` names one of this source's resources (no IO: a rev or path may still be
    /// unknown).
    fn names(&self, uri: &str) -> bool {
        let Some(rest) = uri.strip_prefix(&self.prefix) else {
            return false;
        };
        self.fixed().any(|f| f.segment() == rest)
            || self.match_commit(uri).is_some()
            || self.match_blob(uri).is_some()
    }
}

impl Source for GitSource {
    fn owns(&self, uri: &str) -> bool {
        uri.starts_with(&self.prefix)
    }

    /// The fixed resources. Opens nothing.
    fn list(self: Arc<Self>) -> BoxFut<Result<Vec<ResourceInfo>, RequestError>> {
        ready(Ok(self.fixed_resources()))
    }

    fn templates(&self) -> Vec<TemplateInfo> {
        self.template_infos()
    }

    /// `commit/{rev}` and `blob/{rev}/{+path}` as tools.
    fn template_specs(&self) -> Vec<crate::providers::spec::TemplateSpec> {
        use crate::providers::spec::{TemplateSpec, string_args};
        let rev = (
            "rev",
            "A revision: anything `git rev-parse` takes (hash, branch, tag, HEAD~2, …)",
        );
        let path = (
            "path",
            "A path in the repository, relative to its top folder",
        );
        let infos = self.template_infos();
        let description = |i: usize| infos.get(i).and_then(|t| t.description.clone());
        let mut out = Vec::new();
        let tools = [
            (&self.commit_template, &self.commit_tool, vec![rev]),
            (&self.blob_template, &self.file_tool, vec![rev, path]),
        ];
        for (i, (template, tool, args)) in tools.into_iter().enumerate() {
            if let Some(args) = string_args(&args) {
                out.push(TemplateSpec {
                    uri: template.clone(),
                    entry: format!("[git.{}]", self.name),
                    tool: tool.clone(),
                    args,
                    description: description(i),
                    rows: false,
                    open_world: false,
                });
            }
        }
        out
    }

    fn read(self: Arc<Self>, uri: String) -> BoxFut<Result<Contents, RequestError>> {
        on_blocking(move || self.read_blocking(&uri))
    }

    fn serves(self: Arc<Self>, uri: String) -> BoxFut<bool> {
        ready(self.names(&uri))
    }

    fn complete(
        self: Arc<Self>,
        req: CompletionRequest,
    ) -> BoxFut<Result<Completion, RequestError>> {
        on_blocking(move || {
            self.complete_blocking(&req.template, &req.var, &req.prefix, &req.context)
        })
    }

    /// The git dir (`HEAD`, `index`), the common dir (`packed-refs`), every folder under
    /// `refs/`, and the work tree's folders that `.gitignore` does not hide.
    fn watch_dirs(self: Arc<Self>) -> BoxFut<Vec<PathBuf>> {
        if !self.watch {
            return ready(Vec::new());
        }
        on_blocking_or(Vec::new(), move || self.watch_dirs_blocking())
    }

    /// A batch of changes never changes the resource list (it is fixed); a folder created in
    /// `refs/` or the work tree must be watched too.
    fn apply_changes(self: Arc<Self>, changes: Arc<[Change]>) -> BoxFut<ChangeEffect> {
        if !self.watch {
            return ready(ChangeEffect::default());
        }
        on_blocking_or(ChangeEffect::default(), move || ChangeEffect {
            list_changed: false,
            came_or_went: None,
            rewatch: changes.iter().any(|c| {
                c.is_rescan()
                    || c.kind == ChangeKind::Created
                        && c.path.is_dir()
                        && self.touched(&c.path).is_some()
            }),
        })
    }

    /// A moved HEAD or ref changes every `git://NAME/` URI (a rev like `HEAD` may now mean
    /// another commit); the index and the work tree change only `status` and `diff`.
    fn affected(&self, uri: &str, changes: &[Change]) -> bool {
        let Some(rest) = uri.strip_prefix(&self.prefix) else {
            return false;
        };
        if !self.watch {
            return false;
        }
        let compares_work_tree = matches!(rest, "status" | "diff");
        changes.iter().any(|c| {
            c.is_rescan()
                || match self.touched(&c.path) {
                    Some(Touched::Refs) => true,
                    Some(Touched::IndexOrWorkTree) => compares_work_tree,
                    None => false,
                }
        })
    }
}

#[cfg(test)]
mod tests;
