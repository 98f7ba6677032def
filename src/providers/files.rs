//! `[files.NAME]`: a folder (or one file) served as `file://` resources, with include/exclude
//! globs, `.gitignore` / `.ignore` rules and the one visibility check every read goes through.
//!
//! Invariant: a path is served only if `visible` says so and its canonical form lies under the
//! canonical root. Listing and reading use the same `visible`, so what a client cannot list it
//! cannot read, and every way out (`..`, encoded separators, symlinks) answers "not found".

use std::collections::HashMap;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use globset::{GlobSet, GlobSetBuilder};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::{Body, Completion, Contents, RequestError, ResourceInfo, TemplateInfo, encode_path};
use crate::manifest::{self, Diagnostics, expand::format_size};

/// The live files source.
#[derive(Debug)]
pub struct FilesSource {
    pub name: String,
    /// Canonical root.
    root: PathBuf,
    root_is_file: bool,
    /// `file://` + the encoded root, without a trailing slash.
    root_uri: String,
    include: GlobSet,
    exclude: GlobSet,
    gitignore: bool,
    hidden: bool,
    max_size: u64,
    pub watch: bool,
    description: Option<String>,
    /// Ignore rules per directory (`.ignore`, `.gitignore`). While the source is watched they
    /// live until a change to an ignore file drops them; otherwise they last one listing or read.
    ignores: Mutex<HashMap<PathBuf, Arc<DirRules>>>,
    /// The last listing; only kept while the source is watched (see `invalidate`).
    listing: Mutex<Option<Arc<Vec<Entry>>>>,
    /// Folders above the root whose ignore files apply (up to the enclosing git work tree).
    parents: Vec<PathBuf>,
}

#[derive(Debug, Default)]
struct DirRules {
    dot_ignore: Option<Gitignore>,
    git_ignore: Option<Gitignore>,
}

/// One visible file, as listed.
#[derive(Debug, Clone)]
struct Entry {
    rel: String,
    size: u64,
    modified: Option<SystemTime>,
    mime: String,
}

impl FilesSource {
    /// Builds the source from its checked entry; the root must exist.
    pub fn build(def: &manifest::Files, diags: &mut Diagnostics) -> Option<FilesSource> {
        let root = match fs::canonicalize(&def.root) {
            Ok(r) => r,
            Err(e) => {
                diags.push(
                    def.root_loc,
                    format!(
                        "[files.{}] root `{}` cannot be opened: {}",
                        def.name,
                        def.root.display(),
                        io_reason(&e)
                    ),
                );
                return None;
            }
        };
        let root_is_file = root.is_file();
        let Some(root_str) = root.to_str() else {
            diags.push(
                def.root_loc,
                format!(
                    "[files.{}] root `{}` is not valid UTF-8",
                    def.name,
                    root.display()
                ),
            );
            return None;
        };
        let root_uri = format!("file://{}", encode_path(root_str.trim_end_matches('/')));
        let globs = |list: &[(String, manifest::Loc)]| {
            let mut b = GlobSetBuilder::new();
            for (g, _) in list {
                // Globs were validated when the manifest was checked.
                if let Ok(glob) = globset::GlobBuilder::new(g).literal_separator(true).build() {
                    b.add(glob);
                }
            }
            b.build().unwrap_or_else(|_| GlobSet::empty())
        };
        let parents = if def.gitignore && !root_is_file {
            ignore_parents(&root)
        } else {
            Vec::new()
        };
        Some(FilesSource {
            name: def.name.clone(),
            root_is_file,
            root_uri,
            include: globs(&def.include),
            exclude: globs(&def.exclude),
            gitignore: def.gitignore,
            hidden: def.hidden,
            max_size: def.max_size,
            watch: def.watch,
            description: def.description.clone(),
            ignores: Mutex::new(HashMap::new()),
            listing: Mutex::new(None),
            parents,
            root,
        })
    }

    /// The URI template of this source, for folders.
    pub fn template_uri(&self) -> Option<String> {
        (!self.root_is_file).then(|| format!("{}/{{+path}}", self.root_uri))
    }

    pub fn templates(&self) -> Vec<TemplateInfo> {
        self.template_uri()
            .map(|uri_template| TemplateInfo {
                uri_template,
                name: self.name.clone(),
                description: Some(
                    self.description
                        .clone()
                        .unwrap_or_else(|| format!("A file of [files.{}] by its path", self.name)),
                ),
                mime_type: None,
            })
            .into_iter()
            .collect()
    }

    /// Whether `uri` belongs to this source (it may still be "not found").
    pub fn owns(&self, uri: &str) -> bool {
        uri.strip_prefix(&self.root_uri)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }

    /// Drops cached listings and ignore rules (called by the watcher when the tree changes).
    pub fn invalidate(&self, changed: &Path) {
        if let Ok(mut l) = self.listing.lock() {
            *l = None;
        }
        let name = changed.file_name().and_then(|n| n.to_str());
        if matches!(name, Some(".gitignore" | ".ignore"))
            && let (Some(dir), Ok(mut map)) = (changed.parent(), self.ignores.lock())
        {
            map.remove(dir);
        }
    }

    /// Every visible file, sorted by name. Walks the tree (blocking: call from a blocking thread).
    pub fn list_blocking(&self) -> Vec<ResourceInfo> {
        self.entries()
            .iter()
            .map(|e| ResourceInfo {
                uri: self.uri_of(&e.rel),
                name: e.rel.clone(),
                title: None,
                description: self.description.clone(),
                mime_type: Some(e.mime.clone()),
                size: Some(e.size),
                last_modified: e.modified,
            })
            .collect()
    }

    fn uri_of(&self, rel: &str) -> String {
        if self.root_is_file {
            self.root_uri.clone()
        } else {
            format!("{}/{}", self.root_uri, encode_path(rel))
        }
    }

    fn entries(&self) -> Arc<Vec<Entry>> {
        if self.watch
            && let Ok(l) = self.listing.lock()
            && let Some(cached) = l.as_ref()
        {
            return cached.clone();
        }
        self.forget_rules_unless_watched();
        let mut out = Vec::new();
        if self.root_is_file {
            if let Ok(meta) = fs::metadata(&self.root) {
                let name = self
                    .root
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push(self.entry(name, &self.root, &meta));
            }
        } else {
            self.walk(&self.root, "", &mut out);
            out.sort_by(|a, b| a.rel.cmp(&b.rel));
        }
        let out = Arc::new(out);
        if self.watch
            && let Ok(mut l) = self.listing.lock()
        {
            *l = Some(out.clone());
        }
        out
    }

    fn entry(&self, rel: String, path: &Path, meta: &fs::Metadata) -> Entry {
        let mime = mime_for(path, || sniff_is_text(path));
        Entry {
            rel,
            size: meta.len(),
            modified: meta.modified().ok(),
            mime,
        }
    }

    fn walk(&self, dir: &Path, rel_dir: &str, out: &mut Vec<Entry>) {
        let Ok(read) = fs::read_dir(dir) else { return };
        for item in read.flatten() {
            let Ok(name) = item.file_name().into_string() else {
                // Names that are not UTF-8 cannot be written in a URI we could read back.
                continue;
            };
            let rel = if rel_dir.is_empty() {
                name.clone()
            } else {
                format!("{rel_dir}/{name}")
            };
            let Ok(ft) = item.file_type() else { continue };
            // Symlinks are never listed: one inside the root is listed at its target, one
            // leading outside is not served at all.
            if ft.is_symlink() {
                continue;
            }
            let path = item.path();
            if ft.is_dir() {
                if self.dir_visible(&rel, &path) {
                    self.walk(&path, &rel, out);
                }
            } else if ft.is_file()
                && self.file_visible(&rel, &path)
                && let Ok(meta) = item.metadata()
            {
                out.push(self.entry(rel, &path, &meta));
            }
        }
    }

    /// Whether a folder under the root may hold served files (hidden names, ignore rules).
    fn dir_visible(&self, rel: &str, path: &Path) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if name == ".git" || (!self.hidden && name.starts_with('.')) {
            return false;
        }
        !self.ignored(path, true)
    }

    /// Whether a file (its parents already found visible) is served.
    fn file_visible(&self, rel: &str, path: &Path) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if !self.hidden && name.starts_with('.') {
            return false;
        }
        self.include.is_match(rel) && !self.exclude.is_match(rel) && !self.ignored(path, false)
    }

    /// The full check for one path relative to the root: every parent folder and the file.
    fn visible(&self, rel: &str) -> bool {
        let mut path = self.root.clone();
        let parts: Vec<&str> = rel.split('/').collect();
        let (file, dirs) = match parts.split_last() {
            Some(x) => x,
            None => return false,
        };
        let mut rel_dir = String::new();
        for d in dirs {
            path.push(d);
            if !rel_dir.is_empty() {
                rel_dir.push('/');
            }
            rel_dir.push_str(d);
            if !self.dir_visible(&rel_dir, &path) {
                return false;
            }
        }
        path.push(file);
        self.file_visible(rel, &path)
    }

    /// Gitignore semantics: the deepest folder's rules decide, `.ignore` before `.gitignore`.
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        if !self.gitignore {
            return false;
        }
        let mut dirs: Vec<&Path> = path
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(&self.root))
            .collect();
        dirs.extend(self.parents.iter().map(PathBuf::as_path));
        for dir in dirs {
            let rules = self.rules(dir);
            for m in [&rules.dot_ignore, &rules.git_ignore].into_iter().flatten() {
                match m.matched(path, is_dir) {
                    ignore::Match::Ignore(_) => return true,
                    ignore::Match::Whitelist(_) => return false,
                    ignore::Match::None => {}
                }
            }
        }
        false
    }

    /// Without a watcher nothing tells us an ignore file changed: start from a clean slate.
    fn forget_rules_unless_watched(&self) {
        if !self.watch
            && let Ok(mut map) = self.ignores.lock()
        {
            map.clear();
        }
    }

    fn rules(&self, dir: &Path) -> Arc<DirRules> {
        if let Ok(map) = self.ignores.lock()
            && let Some(r) = map.get(dir)
        {
            return r.clone();
        }
        let load = |file: &str| {
            let p = dir.join(file);
            if !p.is_file() {
                return None;
            }
            let mut b = GitignoreBuilder::new(dir);
            b.add(&p);
            b.build().ok().filter(|g| !g.is_empty())
        };
        let rules = Arc::new(DirRules {
            dot_ignore: load(".ignore"),
            git_ignore: load(".gitignore"),
        });
        if let Ok(mut map) = self.ignores.lock() {
            map.insert(dir.to_path_buf(), rules.clone());
        }
        rules
    }

    /// Maps a URI to a served file, or `None` ("not found") for anything else: malformed
    /// escapes, encoded separators, `.`/`..` segments, paths outside the root after resolving
    /// symlinks, hidden or ignored files, folders.
    fn resolve(&self, uri: &str) -> Option<(PathBuf, String)> {
        let rest = uri.strip_prefix(&self.root_uri)?;
        if self.root_is_file {
            return rest.is_empty().then(|| {
                let name = self.root.file_name()?.to_str()?.to_owned();
                Some((self.root.clone(), name))
            })?;
        }
        let encoded = rest.strip_prefix('/')?;
        let lower = encoded.to_ascii_lowercase();
        if lower.contains("%2f") || lower.contains("%5c") || lower.contains("%00") {
            return None;
        }
        let rel = crate::uri::percent_decode(encoded)?;
        if rel.is_empty()
            || rel.contains('\0')
            || rel.contains('\\')
            || rel
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == "..")
        {
            return None;
        }
        let requested = self.root.join(&rel);
        let canonical = fs::canonicalize(&requested).ok()?;
        let real_rel = canonical.strip_prefix(&self.root).ok()?;
        if real_rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return None;
        }
        let real_rel = real_rel.to_str()?.to_owned();
        if real_rel.is_empty() || !canonical.is_file() || !self.visible(&real_rel) {
            return None;
        }
        Some((canonical, real_rel))
    }

    /// Reads one resource (blocking: call from a blocking thread).
    pub fn read_blocking(&self, uri: &str) -> Result<Contents, RequestError> {
        let not_found = || RequestError::NotFound(uri.to_owned());
        self.forget_rules_unless_watched();
        let (path, _rel) = self.resolve(uri).ok_or_else(not_found)?;
        let meta = fs::metadata(&path).map_err(|_| not_found())?;
        if meta.len() > self.max_size {
            return Err(RequestError::Refused(format!(
                "{uri} is {}, larger than max_size {} of [files.{}]",
                format_size(meta.len()),
                format_size(self.max_size),
                self.name
            )));
        }
        let bytes = fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => not_found(),
            _ => RequestError::Refused(format!("{uri} cannot be read: {}", io_reason(&e))),
        })?;
        let body = Body::from_bytes(bytes);
        let is_text = matches!(body, Body::Text(_));
        Ok(Contents {
            uri: uri.to_owned(),
            mime_type: Some(mime_for(&path, || is_text)),
            body,
        })
    }

    /// Completes the `path` variable of this source's template (blocking).
    pub fn complete_blocking(&self, var: &str, prefix: &str) -> Completion {
        if var != "path" || self.root_is_file {
            return Completion::default();
        }
        let entries = self.entries();
        Completion::from_candidates(entries.iter().map(|e| e.rel.as_str()), prefix)
    }

    /// Whether a listed file lives at `path` (used to decide between updated and list_changed).
    pub fn is_listed(&self, path: &Path) -> bool {
        match path.strip_prefix(&self.root).ok().and_then(Path::to_str) {
            Some("") => self.root_is_file,
            Some(rel) => !self.root_is_file && self.visible(rel) && path.is_file(),
            None => false,
        }
    }
}

impl FilesSource {
    /// The folders to watch for this source (blocking: walks the visible folders).
    pub fn watch_dirs_blocking(&self, out: &mut std::collections::HashSet<PathBuf>) {
        if !self.watch {
            return;
        }
        if self.root_is_file {
            if let Some(parent) = self.root.parent() {
                out.insert(parent.to_path_buf());
            }
            return;
        }
        out.insert(self.root.clone());
        self.walk_dirs(&self.root, "", out);
    }

    fn walk_dirs(&self, dir: &Path, rel_dir: &str, out: &mut std::collections::HashSet<PathBuf>) {
        let Ok(read) = fs::read_dir(dir) else { return };
        for item in read.flatten() {
            let Ok(ft) = item.file_type() else { continue };
            if !ft.is_dir() {
                continue;
            }
            let Ok(name) = item.file_name().into_string() else {
                continue;
            };
            let rel = if rel_dir.is_empty() {
                name
            } else {
                format!("{rel_dir}/{name}")
            };
            let path = item.path();
            if self.dir_visible(&rel, &path) {
                out.insert(path.clone());
                self.walk_dirs(&path, &rel, out);
            }
        }
    }

    /// Applies a batch of changes (blocking): drops stale caches and says whether the list of
    /// resources changed and whether the set of watched folders must be recomputed.
    pub fn apply_changes_blocking(&self, changes: &[crate::watch::Change]) -> ChangeEffect {
        use crate::watch::ChangeKind;
        let mut effect = ChangeEffect::default();
        let old = self.listing.lock().ok().and_then(|l| l.clone());
        let mut touched = false;
        for c in changes {
            let Ok(rel) = c.path.strip_prefix(&self.root) else {
                continue;
            };
            if self.root_is_file && !rel.as_os_str().is_empty() {
                continue;
            }
            touched = true;
            let Some(rel) = rel.to_str() else { continue };
            let name = c.path.file_name().and_then(|n| n.to_str());
            if matches!(name, Some(".gitignore" | ".ignore")) {
                if let (Some(dir), Ok(mut map)) = (c.path.parent(), self.ignores.lock()) {
                    map.remove(dir);
                }
                effect.list_changed = true;
                effect.rewatch = true;
                continue;
            }
            let is_dir = c.path.is_dir();
            if is_dir
                || (c.kind == ChangeKind::Removed
                    && old.as_ref().is_none_or(|o| {
                        let prefix = format!("{rel}/");
                        o.iter().any(|e| e.rel.starts_with(&prefix))
                    }))
            {
                // A folder came or went: its files did too.
                effect.rewatch = true;
                effect.list_changed |= c.kind != ChangeKind::Modified;
                continue;
            }
            let now = self.is_listed(&c.path);
            let before = match &old {
                Some(o) => o
                    .binary_search_by(|e| {
                        e.rel
                            .as_str()
                            .cmp(if self.root_is_file { &e.rel } else { rel })
                    })
                    .is_ok(),
                None => c.kind != ChangeKind::Created && now,
            };
            if before != now {
                effect.list_changed = true;
            }
        }
        if touched && let Ok(mut l) = self.listing.lock() {
            *l = None;
        }
        effect
    }

    /// Whether a change to one of `paths` changes what `uri` reads as.
    pub fn affected_by(&self, uri: &str, paths: &[&Path]) -> bool {
        let Some(rest) = uri.strip_prefix(&self.root_uri) else {
            return false;
        };
        let target = if self.root_is_file {
            if !rest.is_empty() {
                return false;
            }
            self.root.clone()
        } else {
            match rest.strip_prefix('/').and_then(crate::uri::percent_decode) {
                Some(rel) => self.root.join(rel),
                None => return false,
            }
        };
        paths.iter().any(|p| {
            *p == target
                || p.file_name()
                    .is_some_and(|n| n == ".gitignore" || n == ".ignore")
        })
    }
}

/// What a batch of changes means for one source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangeEffect {
    pub list_changed: bool,
    pub rewatch: bool,
}

/// Folders above `root` whose ignore files apply: up to and including the git work tree that
/// holds it. Outside a repository, only the root and below count.
fn ignore_parents(root: &Path) -> Vec<PathBuf> {
    if root.join(".git").exists() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for dir in root.ancestors().skip(1) {
        out.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            return out;
        }
    }
    Vec::new()
}

/// MIME type from the extension; for unknown extensions, text/plain when `is_text()` says so.
pub fn mime_for(path: &Path, is_text: impl FnOnce() -> bool) -> String {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    // mime_guess maps a few source-code extensions to media types (`.ts` is MPEG transport
    // stream); these are the ones a code assistant meets every day.
    let fixed = match ext.as_deref() {
        Some("ts" | "mts" | "cts") => Some("text/x-typescript"),
        Some("tsx") => Some("text/x-tsx"),
        Some("rs") => Some("text/x-rust"),
        Some("md" | "markdown") => Some("text/markdown"),
        Some("toml") => Some("application/toml"),
        Some("lock") => Some("text/plain"),
        _ => None,
    };
    if let Some(m) = fixed {
        return m.to_owned();
    }
    if let Some(m) = mime_guess::from_path(path).first_raw() {
        return m.to_owned();
    }
    if is_text() {
        "text/plain".to_owned()
    } else {
        "application/octet-stream".to_owned()
    }
}

/// Whether the first 8 KiB of a file are UTF-8 (a cut multi-byte character at the end is fine).
fn sniff_is_text(path: &Path) -> bool {
    use std::io::Read;
    let mut buf = [0u8; 8192];
    let Ok(mut f) = fs::File::open(path) else {
        return false;
    };
    let Ok(n) = f.read(&mut buf) else {
        return false;
    };
    if buf[..n].contains(&0) {
        return false;
    }
    match std::str::from_utf8(&buf[..n]) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && n == buf.len(),
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}
