//! Reading a manifest: the file (a regular file, at most 16 MiB, UTF-8), TOML parsed with spans,
//! `${VAR}` expanded, the schema's walk (`validate`), entries with problems set aside (`prune`) so
//! the rest still gets every check, then the checked model (`Checker::manifest`).

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{Checked, Checker, Diagnostics, Manifest, SourceMap, expand, validate};
use crate::manifest::raw::{self, RawManifest};

/// The largest manifest read (a manifest is a page of TOML; this only stops a runaway file).
const MAX_MANIFEST: u64 = 16 * 1024 * 1024;

/// Reads the manifest: only a regular file (a FIFO or device put in its place is refused, never
/// waited on), at most `MAX_MANIFEST` bytes, UTF-8.
pub(super) fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    // Opened without waiting (a FIFO put in its place is refused below, never waited on). This
    // one open is the manifest's own: the files seam (`providers::platform`) sits above it.
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_MANIFEST {
        return Err(std::io::Error::other("it is larger than 16 MiB"));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("it is not UTF-8 text"))
}

/// Checks manifest `text` as if read from `path` in folder `dir`, with `env` for `${VAR}`.
pub fn load_str(
    text: &str,
    display: &str,
    path: &Path,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Manifest, Diagnostics> {
    check_str(text, display, path, dir, env).into_result()
}

/// `load_str`, keeping what is valid (see `Checked`).
pub fn check_str(
    text: &str,
    display: &str,
    path: &Path,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Checked {
    let map = SourceMap::new(text);
    let mut diags = Diagnostics::new(display);

    let (mut doc, parse_errors) = DeTable::parse_recoverable(text);
    for e in &parse_errors {
        let span = e.span().unwrap_or(0..0);
        let mut message = e.message().trim().to_owned();
        if message == "duplicate key"
            && let Some(key) = text.get(span.clone()).filter(|k| !k.is_empty())
        {
            message = format!("duplicate key `{key}`: each name appears once in its table");
        }
        diags.push(map.loc(span.start), message);
    }
    if !diags.is_empty() {
        return Checked::failed(diags);
    }

    let mut bad = Vec::new();
    super::hints::tool_references(doc.get_mut(), text, &map, env, &mut diags, &mut bad);
    expand_table(doc.get_mut(), env, &map, &mut diags, &mut bad);
    let schema = raw::json_schema();
    let mut walker = validate::Walker::new(&schema, &map, &mut diags);
    walker.table(&doc, &schema, "");
    bad.extend(walker.bad);
    // Names as declared, before any entry is set aside: a reference to an entry that has a
    // problem of its own is not a second problem.
    let declared = Declared::of(&doc);
    // Entries with problems are set aside so the others still get every later check: one run
    // reports everything.
    prune(doc.get_mut(), &bad);
    // The SQL engines' sections are checked by their own code (`providers::sql::section`).
    let databases = crate::manifest::sql::take(doc.get_mut());

    let raw = match RawManifest::deserialize(toml::de::Deserializer::from(doc)) {
        Ok(raw) => raw,
        Err(e) => {
            let at = e.span().map_or(0, |s| s.start);
            diags.push(map.loc(at), e.message().trim().to_owned());
            return Checked::failed(diags);
        }
    };

    let mut cx = Checker {
        map: &map,
        diags: &mut diags,
        dir,
        path,
        env,
    };
    let manifest = cx.manifest(raw, &databases, display, path, &declared);
    let kept = manifest.files.len()
        + manifest.databases.len()
        + manifest.git.len()
        + manifest.templates.len();
    Checked {
        manifest: Some(manifest),
        diags: diags.finish(),
        sources_dropped: kept < declared.sources,
    }
}

/// The entry names each section declares, as written (see `check_str`).
#[derive(Debug, Default)]
pub(crate) struct Declared {
    /// Each SQL engine's section and the names it declares.
    pub(crate) databases: Vec<(&'static str, Vec<String>)>,
    /// How many entries the source sections hold.
    pub(crate) sources: usize,
}

impl Declared {
    fn of(doc: &Spanned<DeTable<'_>>) -> Declared {
        let names = |section: &str| -> Vec<String> {
            match doc.get_ref().get(section).map(|v| v.get_ref()) {
                Some(DeValue::Table(t)) => t.iter().map(|(k, _)| k.get_ref().to_string()).collect(),
                _ => Vec::new(),
            }
        };
        let databases = crate::manifest::sql::declared(doc.get_ref());
        let sources = ["files", "git", "templates"]
            .iter()
            .map(|s| names(s).len())
            .chain(databases.iter().map(|(_, n)| n.len()))
            .sum();
        Declared { databases, sources }
    }
}

/// Replaces `${VAR}` in every string value of the tree, in place.
fn expand_table(
    table: &mut DeTable<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    map: &SourceMap,
    diags: &mut Diagnostics,
    bad: &mut Vec<usize>,
) {
    for (_, value) in table.iter_mut() {
        expand_value(value, env, map, diags, bad);
    }
}

fn expand_value(
    value: &mut Spanned<DeValue<'_>>,
    env: &dyn Fn(&str) -> Option<String>,
    map: &SourceMap,
    diags: &mut Diagnostics,
    bad: &mut Vec<usize>,
) {
    let span = value.span();
    match value.get_mut() {
        DeValue::String(s) => match expand::expand_env(s, env) {
            Ok(v) => {
                if v != **s {
                    *s = v.into();
                }
            }
            Err(e) => {
                bad.push(span.start);
                diags.push(map.loc(span.start), e)
            }
        },
        DeValue::Array(items) => {
            for item in items.iter_mut() {
                expand_value(item, env, map, diags, bad);
            }
        }
        DeValue::Table(t) => expand_table(t, env, map, diags, bad),
        _ => {}
    }
}

/// The sections whose tables hold named entries (and the SQL engines' sections).
const NAMED_SECTIONS: [&str; 7] = [
    "files",
    "git",
    "templates",
    "tools",
    "prompts",
    "skills",
    "groups",
];

pub(super) fn named_sections() -> impl Iterator<Item = &'static str> {
    NAMED_SECTIONS
        .into_iter()
        .chain(crate::manifest::sql::section_names())
}

/// Removes what holds a problem at one of the `bad` offsets: an unknown section, the
/// `[server]` table, or one named entry of a section.
fn prune(doc: &mut DeTable<'_>, bad: &[usize]) {
    if bad.is_empty() {
        return;
    }
    let hit = |key: &Spanned<toml::de::DeString<'_>>, value: &Spanned<DeValue<'_>>| {
        let mut range = key.span();
        extent(value, &mut range);
        bad.iter().any(|b| range.contains(b))
    };
    let doomed: Vec<String> = doc
        .iter()
        .filter(|(k, v)| !named_sections().any(|n| n == k.get_ref().as_ref()) && hit(k, v))
        .map(|(k, _)| k.get_ref().to_string())
        .collect();
    for key in doomed {
        // In a table such as `[server]`, only the keys holding a problem go (the others keep
        // their meaning for later checks, e.g. `resource_tools = false`); an unknown section
        // (the problem is on its name) goes whole.
        let on_name = doc
            .get_key_value(key.as_str())
            .is_some_and(|(k, _)| bad.iter().any(|b| k.span().contains(b)));
        if !on_name
            && let Some(value) = doc.get_mut(key.as_str())
            && let DeValue::Table(t) = value.get_mut()
        {
            let keys: Vec<String> = t
                .iter()
                .filter(|(k, v)| hit(k, v))
                .map(|(k, _)| k.get_ref().to_string())
                .collect();
            if !keys.is_empty() {
                for k in keys {
                    t.remove(k.as_str());
                }
                continue;
            }
        }
        doc.remove(key.as_str());
    }
    for section in named_sections() {
        let Some(value) = doc.get_mut(section) else {
            continue;
        };
        let whole_span = value.span();
        match value.get_mut() {
            DeValue::Table(entries) => {
                let doomed: Vec<String> = entries
                    .iter()
                    .filter(|(k, v)| hit(k, v))
                    .map(|(k, _)| k.get_ref().to_string())
                    .collect();
                for key in doomed {
                    entries.remove(key.as_str());
                }
            }
            _ => {
                if bad.iter().any(|b| whole_span.contains(b)) {
                    doc.remove(section);
                }
            }
        }
    }
}

/// Widens `range` to cover every key and value inside `value`.
fn extent(value: &Spanned<DeValue<'_>>, range: &mut std::ops::Range<usize>) {
    let s = value.span();
    range.start = range.start.min(s.start);
    range.end = range.end.max(s.end.max(s.start + 1));
    match value.get_ref() {
        DeValue::Table(t) => {
            for (k, v) in t.iter() {
                let ks = k.span();
                range.start = range.start.min(ks.start);
                range.end = range.end.max(ks.end);
                extent(v, range);
            }
        }
        DeValue::Array(items) => {
            for item in items.iter() {
                extent(item, range);
            }
        }
        _ => {}
    }
}
