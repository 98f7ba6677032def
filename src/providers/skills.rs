//! `[skills.NAME]`: a folder of agent skills served as the Skills extension (SEP-2640,
//! `io.modelcontextprotocol/skills`) describes: every folder under `root` holding a `SKILL.md`
//! is a skill; each file of a skill is a `skill://<skill-path>/<file-path>` resource, where
//! `<skill-path>` is the folder's path below `root` (after `prefix`, when set).
//!
//! The files are a files source's (`FilesSource` over `root`, include everything): the same
//! visibility (hidden and gitignored files are never listed or read), the same race-free opens,
//! the same watching; this source only maps `skill://` URIs to its files and keeps the skills'
//! index — each skill's `SKILL.md` front matter (YAML rendered as JSON, verbatim) and every file
//! with its `sha256:` digest and size, for `skills/list` and `skills/get`. A digest is kept with
//! the file's size and modification time and computed again only when they change.
//!
//! Left out, each with a `check` warning: a `SKILL.md` without front matter, without a `name`
//! or `description`, with a `name` that breaks the Agent Skills naming rules or differs from its
//! folder's name, and a skill over the extension's limits (512 files, 16 MiB).

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::files::FilesSource;
use super::{
    BoxFut, ChangeEffect, Completion, CompletionRequest, Contents, RequestError, ResourceInfo,
    Source, TemplateInfo, on_blocking, on_blocking_or, ready,
};
use crate::manifest::{self, Diagnostics, Loc};
use crate::watch::Change;

/// The extension's identifier.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// Files per skill a host must accept (SEP-2640 "Limits").
pub(crate) const MAX_FILES: usize = 512;
/// Bytes per skill a host must accept.
pub(crate) const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// The largest `SKILL.md` front matter read (a real one is a few hundred bytes).
const MAX_FRONT_MATTER: usize = 64 * 1024;
/// The deepest nesting of front matter values rendered.
const MAX_DEPTH: usize = 32;

/// One skill, as `skills/list` and `skills/get` give it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Skill {
    /// The `skill://…/SKILL.md` URI.
    pub uri: String,
    /// The front matter, verbatim, as a JSON object (`name` and `description` always there).
    pub frontmatter: Map<String, Value>,
    /// Every file of the skill (nested skills' too), `SKILL.md` first, then in path order.
    pub files: Vec<SkillFile>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SkillFile {
    pub uri: String,
    /// `sha256:` and 64 lower-case hex digits.
    pub digest: String,
    pub size: u64,
}

/// What the folder holds now: the skills served, and the folders left out with why.
#[derive(Debug, Default)]
struct Index {
    skills: Vec<Skill>,
    /// The folders (below `root`) of the skills served.
    folders: Vec<String>,
    problems: Vec<String>,
}

/// Per file (path below the root): its size and modification time when digested, the digest.
type Digests = HashMap<String, (u64, Option<SystemTime>, String)>;

#[derive(Debug)]
pub(crate) struct SkillsSource {
    pub name: String,
    loc: Loc,
    /// `skill://` and the prefix with its `/`.
    base: String,
    /// With `prefix`, the skill whose `SKILL.md` is at `root` itself is at the prefix.
    prefix: Option<String>,
    files: Arc<FilesSource>,
    /// `file://…/` of the root: a file's URI is this and its encoded path.
    file_base: String,
    index: Mutex<Option<Arc<Index>>>,
    /// Per file (path below the root): size and modification time when digested, the digest.
    digests: Mutex<Digests>,
}

impl SkillsSource {
    /// Builds the source; the root must be a folder.
    pub(crate) fn build(def: &manifest::Skills, diags: &mut Diagnostics) -> Option<SkillsSource> {
        match std::fs::metadata(&def.root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                diags.push(
                    def.root_loc,
                    format!(
                        "[skills.{}] root `{}` is a file; it must be the folder holding the skills",
                        def.name,
                        def.root.display()
                    ),
                );
                return None;
            }
            Err(e) => {
                diags.push(
                    def.root_loc,
                    format!(
                        "[skills.{}] root `{}` cannot be opened: {}",
                        def.name,
                        def.root.display(),
                        super::paths::io_reason(&e)
                    ),
                );
                return None;
            }
        }
        let files = manifest::Files {
            name: def.name.clone(),
            loc: def.loc,
            root: def.root.clone(),
            root_loc: def.root_loc,
            include: vec![("**/*".to_owned(), def.loc)],
            exclude: Vec::new(),
            gitignore: def.gitignore,
            hidden: false,
            max_size: MAX_BYTES,
            watch: def.watch,
            poll: None,
            description: None,
            search: false,
        };
        let files = FilesSource::build(&files, diags)?;
        let file_base = files.uri_for("");
        let base = match &def.prefix {
            Some(p) => format!("skill://{p}/"),
            None => "skill://".to_owned(),
        };
        Some(SkillsSource {
            name: def.name.clone(),
            loc: def.loc,
            base,
            prefix: def.prefix.clone(),
            files: Arc::new(files),
            file_base,
            index: Mutex::new(None),
            digests: Mutex::new(HashMap::new()),
        })
    }

    /// The `skill://` URI of a file by its encoded path below the root.
    fn skill_uri(&self, encoded_rel: &str) -> String {
        format!("{}{encoded_rel}", self.base)
    }

    /// The `file://` URI behind a `skill://` one of this source (no IO).
    fn file_uri(&self, uri: &str) -> Option<String> {
        let rest = uri.strip_prefix(&self.base)?;
        (!rest.is_empty()).then(|| format!("{}{rest}", self.file_base))
    }

    /// The encoded path below the root of a `file://` URI of the inner source.
    fn encoded_rel<'a>(&self, file_uri: &'a str) -> Option<&'a str> {
        file_uri.strip_prefix(&self.file_base)
    }

    /// Whether the file at `rel` (decoded, below the root) belongs to a served skill.
    fn in_skill(index: &Index, rel: &str) -> bool {
        index.folders.iter().any(|f| {
            f.is_empty()
                || rel
                    .strip_prefix(f.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
    }

    /// The index, made when it is not at hand (blocking).
    fn index(&self) -> Arc<Index> {
        if let Some(i) = lock(&self.index).as_ref() {
            return i.clone();
        }
        let index = Arc::new(self.make_index());
        *lock(&self.index) = Some(index.clone());
        index
    }

    fn make_index(&self) -> Index {
        let paths = self.files.served_paths();
        let all: Vec<&str> = paths.iter().collect();
        let mut index = Index::default();
        let mut digests = lock(&self.digests);
        let mut seen_files: Vec<String> = Vec::new();
        for skill_md in all
            .iter()
            .filter(|p| **p == "SKILL.md" || p.ends_with("/SKILL.md"))
        {
            let folder = skill_md
                .strip_suffix("SKILL.md")
                .unwrap_or_default()
                .trim_end_matches('/');
            let expected = match (folder.rsplit('/').next(), &self.prefix) {
                (Some(last), _) if !folder.is_empty() => last.to_owned(),
                (_, Some(p)) => p.rsplit('/').next().unwrap_or(p).to_owned(),
                _ => {
                    index.problems.push(format!(
                        "`{skill_md}` is at the root of the skills folder: a skill is a folder named after it (or set `prefix` to the skill's name)"
                    ));
                    continue;
                }
            };
            let frontmatter = match self.read_rel(skill_md, MAX_FRONT_MATTER * 4) {
                Ok(bytes) => match front_matter(&bytes) {
                    Ok(fm) => fm,
                    Err(why) => {
                        index
                            .problems
                            .push(format!("`{skill_md}` is left out: {why}"));
                        continue;
                    }
                },
                Err(why) => {
                    index
                        .problems
                        .push(format!("`{skill_md}` is left out: {why}"));
                    continue;
                }
            };
            if let Err(why) = check_name(&frontmatter, &expected) {
                index
                    .problems
                    .push(format!("`{skill_md}` is left out: {why}"));
                continue;
            }
            let mut files: Vec<&str> = all
                .iter()
                .copied()
                .filter(|p| {
                    folder.is_empty() || p.strip_prefix(folder).is_some_and(|r| r.starts_with('/'))
                })
                .collect();
            // SKILL.md first, the rest in path order.
            files.sort_by_key(|p| (*p != *skill_md, *p));
            if files.len() > MAX_FILES {
                index.problems.push(format!(
                    "the skill in `{}` is left out: it has {} files, more than the {MAX_FILES} a host must accept",
                    display_folder(folder),
                    files.len()
                ));
                continue;
            }
            let mut entries = Vec::with_capacity(files.len());
            let mut total = 0u64;
            let mut failed = None;
            for rel in &files {
                match self.digest(rel, &mut digests) {
                    Ok((size, digest)) => {
                        total += size;
                        entries.push(SkillFile {
                            uri: self.skill_uri(&super::encode_path(rel)),
                            digest,
                            size,
                        });
                    }
                    Err(why) => {
                        failed = Some(format!("`{rel}` {why}"));
                        break;
                    }
                }
                seen_files.push((*rel).to_owned());
            }
            if let Some(why) = failed {
                index.problems.push(format!(
                    "the skill in `{}` is left out: {why}",
                    display_folder(folder)
                ));
                continue;
            }
            if total > MAX_BYTES {
                index.problems.push(format!(
                    "the skill in `{}` is left out: its files hold {total} bytes, more than the 16 MiB a host must accept",
                    display_folder(folder)
                ));
                continue;
            }
            index.skills.push(Skill {
                uri: self.skill_uri(&super::encode_path(skill_md)),
                frontmatter,
                files: entries,
            });
            index.folders.push(folder.to_owned());
        }
        // Digests of files no longer part of a skill are forgotten.
        digests.retain(|rel, _| seen_files.contains(rel));
        index
    }

    /// The bytes of a served file (at most `cap`), by its path below the root.
    fn read_rel(&self, rel: &str, cap: usize) -> Result<Vec<u8>, String> {
        let mut opened = self
            .files
            .open_served(rel)
            .ok_or_else(|| "it cannot be read".to_owned())?;
        let mut bytes = Vec::new();
        (&mut opened.file)
            .take(cap as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("it cannot be read: {e}"))?;
        if bytes.len() > cap {
            return Err(format!("it is larger than {cap} bytes"));
        }
        Ok(bytes)
    }

    /// The size and digest of a served file, from `cache` while its size and modification
    /// time are those it had when digested.
    fn digest(&self, rel: &str, cache: &mut Digests) -> Result<(u64, String), String> {
        let mut opened = self
            .files
            .open_served(rel)
            .ok_or_else(|| "cannot be read".to_owned())?;
        let meta = opened
            .file
            .metadata()
            .map_err(|e| format!("cannot be read: {e}"))?;
        let modified = meta.modified().ok();
        if let Some((size, when, digest)) = cache.get(rel)
            && *size == meta.len()
            && *when == modified
            && modified.is_some()
        {
            return Ok((*size, digest.clone()));
        }
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = opened
                .file
                .read(&mut buf)
                .map_err(|e| format!("cannot be read: {e}"))?;
            if n == 0 {
                break;
            }
            size += n as u64;
            if size > MAX_BYTES {
                return Err("is larger than 16 MiB".into());
            }
            hasher.update(&buf[..n]);
        }
        let hex: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let digest = format!("sha256:{hex}");
        cache.insert(rel.to_owned(), (size, modified, digest.clone()));
        Ok((size, digest))
    }

    /// Every skill (blocking).
    pub(crate) fn skills(&self) -> Vec<Skill> {
        self.index().skills.clone()
    }

    /// The skill whose `SKILL.md` is `uri` (blocking).
    pub(crate) fn skill(&self, uri: &str) -> Option<Skill> {
        self.index().skills.iter().find(|s| s.uri == uri).cloned()
    }

    /// Whether `uri` is of this source's namespace (no IO).
    pub(crate) fn owns_uri(&self, uri: &str) -> bool {
        self.file_uri(uri).is_some()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn display_folder(folder: &str) -> &str {
    if folder.is_empty() { "." } else { folder }
}

/// A `SKILL.md`'s front matter as a JSON object, or why it has none.
pub(crate) fn front_matter(bytes: &[u8]) -> Result<Map<String, Value>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "it is not UTF-8".to_owned())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(|l| l.trim_end()) != Some("---") {
        return Err("it does not begin with YAML front matter (a `---` line)".into());
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
        if yaml.len() > MAX_FRONT_MATTER {
            return Err(format!(
                "its front matter is larger than {MAX_FRONT_MATTER} bytes"
            ));
        }
    }
    if !closed {
        return Err("its front matter has no closing `---` line".into());
    }
    if nesting(&yaml) > MAX_DEPTH {
        return Err(format!(
            "its front matter nests deeper than {MAX_DEPTH} levels"
        ));
    }
    // The loader expands aliases into copies (a few bytes can make gigabytes): refused first,
    // from the parser's events.
    let mut parser = yaml_rust2::parser::Parser::new_from_str(&yaml);
    loop {
        use yaml_rust2::parser::Event;
        match parser.next_token() {
            Ok((Event::Alias(_), _)) => return Err("its front matter uses a YAML alias".into()),
            Ok((Event::StreamEnd, _)) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("its front matter is not valid YAML: {e}")),
        }
    }
    let docs = yaml_rust2::YamlLoader::load_from_str(&yaml)
        .map_err(|e| format!("its front matter is not valid YAML: {e}"))?;
    let doc = docs.into_iter().next().unwrap_or(yaml_rust2::Yaml::Null);
    match to_json(&doc, 0)? {
        Value::Object(map) => Ok(map),
        _ => Err("its front matter is not a mapping of fields".into()),
    }
}

/// How deeply `[` and `{` nest in `yaml` (a bound checked before parsing: the parser's values
/// are dropped recursively).
fn nesting(yaml: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in yaml.bytes() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max.max(
        yaml.lines()
            .map(|l| l.len() - l.trim_start().len())
            .max()
            .unwrap_or(0)
            / 2,
    )
}

fn to_json(y: &yaml_rust2::Yaml, depth: usize) -> Result<Value, String> {
    use yaml_rust2::Yaml;
    if depth > MAX_DEPTH {
        return Err(format!(
            "its front matter nests deeper than {MAX_DEPTH} levels"
        ));
    }
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(r) => match r.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
            Some(n) => Value::Number(n),
            None => Value::String(r.clone()),
        },
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| to_json(i, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(h) => {
            let mut map = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Real(r) => r.clone(),
                    Yaml::Boolean(b) => b.to_string(),
                    Yaml::Null => "null".into(),
                    _ => return Err("its front matter has a key that is not a plain value".into()),
                };
                map.insert(key, to_json(v, depth + 1)?);
            }
            Value::Object(map)
        }
        Yaml::Alias(_) => return Err("its front matter uses a YAML alias".into()),
        Yaml::BadValue => return Err("its front matter holds a value YAML cannot read".into()),
    })
}

/// The Agent Skills rules for `name` (1–64 lower-case letters, digits and single hyphens, not
/// at either end) and `description` (1–1024 characters), and the extension's: `name` is the
/// skill folder's name.
fn check_name(fm: &Map<String, Value>, folder_name: &str) -> Result<(), String> {
    let name = match fm.get("name") {
        Some(Value::String(n)) => n,
        Some(_) => return Err("its `name` is not a string".into()),
        None => return Err("its front matter has no `name`".into()),
    };
    match fm.get("description") {
        Some(Value::String(d)) if !d.trim().is_empty() && d.chars().count() <= 1024 => {}
        Some(Value::String(d)) => {
            return Err(format!(
                "its `description` must be 1 to 1024 characters, found {}",
                d.chars().count()
            ));
        }
        Some(_) => return Err("its `description` is not a string".into()),
        None => return Err("its front matter has no `description`".into()),
    }
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if !valid {
        return Err(format!(
            "its `name` `{}` breaks the Agent Skills naming rules (1 to 64 lower-case letters, digits and single hyphens, not first or last)",
            crate::quote::quote(name, crate::quote::Quote::Plain)
        ));
    }
    if name != folder_name {
        return Err(format!(
            "its `name` `{name}` is not its folder's name `{folder_name}` (the extension requires them equal)"
        ));
    }
    Ok(())
}

impl Source for SkillsSource {
    fn owns(&self, uri: &str) -> bool {
        self.owns_uri(uri)
    }

    fn list(self: Arc<Self>) -> BoxFut<Result<Vec<ResourceInfo>, RequestError>> {
        Box::pin(async move {
            let files = self.files.clone().list().await?;
            let this = self.clone();
            on_blocking(move || {
                let index = this.index();
                let mut out = Vec::new();
                for mut r in files {
                    let Some(encoded) = this.encoded_rel(&r.uri) else {
                        continue;
                    };
                    let encoded = encoded.to_owned();
                    let rel = r.name.clone();
                    if !Self::in_skill(&index, &rel) {
                        continue;
                    }
                    r.uri = this.skill_uri(&encoded);
                    if let Some(skill) = index.skills.iter().find(|s| s.uri == r.uri) {
                        // A skill's SKILL.md: its name and description (SEP-2640 "Resource
                        // Metadata").
                        r.name = string(&skill.frontmatter, "name").unwrap_or(rel);
                        r.description = string(&skill.frontmatter, "description");
                        r.mime_type = Some("text/markdown".into());
                    } else {
                        r.name = rel;
                    }
                    out.push(r);
                }
                Ok(out)
            })
            .await
        })
    }

    fn templates(&self) -> Vec<TemplateInfo> {
        Vec::new()
    }

    fn read(self: Arc<Self>, uri: String) -> BoxFut<Result<Contents, RequestError>> {
        Box::pin(async move {
            let Some(file_uri) = self.file_uri(&uri) else {
                return Err(RequestError::NotFound(uri));
            };
            let this = self.clone();
            let rel_ok = {
                let encoded = this.encoded_rel(&file_uri).unwrap_or_default().to_owned();
                on_blocking(move || {
                    let rel = super::paths::plain_relative(&encoded);
                    Ok(rel.is_some_and(|rel| Self::in_skill(&this.index(), &rel)))
                })
                .await?
            };
            if !rel_ok {
                return Err(RequestError::NotFound(uri));
            }
            let mut contents = self
                .files
                .clone()
                .read(file_uri)
                .await
                .map_err(|e| match e {
                    RequestError::NotFound(_) => RequestError::NotFound(uri.clone()),
                    other => other,
                })?;
            if uri.ends_with("/SKILL.md") {
                contents.mime_type = Some("text/markdown".into());
            }
            contents.uri = uri;
            Ok(contents)
        })
    }

    fn serves(self: Arc<Self>, uri: String) -> BoxFut<bool> {
        match self.file_uri(&uri) {
            Some(file_uri) => self.files.clone().serves(file_uri),
            None => ready(false),
        }
    }

    fn complete(
        self: Arc<Self>,
        _req: CompletionRequest,
    ) -> BoxFut<Result<Completion, RequestError>> {
        ready(Ok(Completion::default()))
    }

    fn watch_dirs(self: Arc<Self>) -> BoxFut<Vec<PathBuf>> {
        self.files.clone().watch_dirs()
    }

    fn apply_changes(self: Arc<Self>, changes: Arc<[Change]>) -> BoxFut<ChangeEffect> {
        Box::pin(async move {
            let mut effect = self.files.clone().apply_changes(changes.clone()).await;
            let root = self.files.root().to_path_buf();
            let ours: Vec<&Change> = changes
                .iter()
                .filter(|c| c.is_rescan() || c.path.starts_with(&root) || root.starts_with(&c.path))
                .collect();
            if !ours.is_empty() {
                // The index is made again on the next listing (digests only for files whose
                // size or time changed); a SKILL.md that changed changes the skills' list.
                let this = self.clone();
                let before = on_blocking_or(Vec::new(), move || this.skills()).await;
                *lock(&self.index) = None;
                let this = self.clone();
                let after = on_blocking_or(Vec::new(), move || this.skills()).await;
                let headline = |s: &[Skill]| -> Vec<(String, Map<String, Value>)> {
                    s.iter()
                        .map(|s| (s.uri.clone(), s.frontmatter.clone()))
                        .collect()
                };
                if headline(&before) != headline(&after)
                    || ours
                        .iter()
                        .any(|c| c.path.file_name().is_some_and(|n| n == "SKILL.md"))
                {
                    effect.list_changed = true;
                }
            }
            // The files behind are named by `file://` URIs; which `skill://` ones came or went
            // is not worked out: every session hears of a change here.
            effect.came_or_went = None;
            effect
        })
    }

    fn affected(&self, uri: &str, changes: &[Change]) -> bool {
        self.file_uri(uri)
            .is_some_and(|f| self.files.affected(&f, changes))
    }

    fn warnings(self: Arc<Self>) -> BoxFut<Vec<(Loc, String)>> {
        let loc = self.loc;
        on_blocking_or(Vec::new(), move || {
            let index = self.index();
            let mut out: Vec<(Loc, String)> = index
                .problems
                .iter()
                .map(|p| (loc, format!("[skills.{}] {p}", self.name)))
                .collect();
            if index.skills.is_empty() && index.problems.is_empty() {
                out.push((
                    loc,
                    format!(
                        "[skills.{}] no folder under `{}` holds a SKILL.md",
                        self.name,
                        self.files.root().display()
                    ),
                ));
            }
            out
        })
    }
}

fn string(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn front_matter_is_rendered_verbatim() {
        let fm = front_matter(
            b"---\nname: pdf\ndescription: Fill PDFs\nlicense: MIT\nmetadata:\n  version: 2.1.0\n  tags: [a, b]\n  n: 3\n  ratio: 0.5\n  on: true\n---\n# Body\n",
        )
        .expect("front matter");
        assert_eq!(
            Value::Object(fm),
            json!({"name": "pdf", "description": "Fill PDFs", "license": "MIT",
                   "metadata": {"version": "2.1.0", "tags": ["a", "b"], "n": 3, "ratio": 0.5, "on": true}})
        );
    }

    #[test]
    fn malformed_front_matter_says_why() {
        let why = |b: &[u8]| front_matter(b).expect_err("refused");
        assert!(why(b"# no front matter\n").contains("does not begin"));
        assert!(why(b"---\nname: x\n").contains("no closing"));
        assert!(why(b"---\n- a\n- b\n---\n").contains("not a mapping"));
        assert!(why(b"---\nname: [unclosed\n---\n").contains("not valid YAML"));
        assert!(why(b"---\na: &x 1\nb: *x\n---\n").contains("alias"));
        let deep = format!(
            "---\na: {}{}\n---\n",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        assert!(why(deep.as_bytes()).contains("nests deeper"));
        assert!(why(b"\xff\xfe").contains("UTF-8"));
    }

    #[test]
    fn names_follow_the_agent_skills_rules_and_the_folder() {
        let fm = |name: &str| {
            json!({"name": name, "description": "d"})
                .as_object()
                .cloned()
                .unwrap_or_default()
        };
        assert!(check_name(&fm("pdf-tools"), "pdf-tools").is_ok());
        assert!(check_name(&fm("PDF"), "PDF").is_err());
        assert!(check_name(&fm("a--b"), "a--b").is_err());
        assert!(check_name(&fm("-a"), "-a").is_err());
        assert!(
            check_name(&fm("other"), "pdf-tools")
                .expect_err("differs")
                .contains("folder")
        );
        let no_description = json!({"name": "a"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(check_name(&no_description, "a").is_err());
    }
}
