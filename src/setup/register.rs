//! `register` / `unregister`: this server as an entry of an MCP client's configuration file
//! (which file, in what shape: [`super::clients`]).
//!
//! JSON files are edited in place through a syntax tree ([`super::json`]: comments, order and
//! layout kept), Codex's TOML with `toml_edit` (comments kept). Every other entry and key of the
//! file is left as it was; a file that does not parse is refused, never rewritten; an entry that
//! does not run mcp-manifest is never replaced nor removed. Backups of a project's files go to
//! setup's state folder, outside the project ([`super::state`]); a file `register` created is
//! removed by `unregister` once it holds nothing again, with the folders made for it.

use std::path::{Path, PathBuf};

use super::clients::{Format, Scope, Target};
use super::json::{self, Layout};
use super::state::State;
use super::write;
use crate::providers::platform::same_path;

/// What a registered server runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// What `register` did to the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Added,
    Updated,
    Unchanged,
}

/// `--env K=V` pairs: names like shell variables, no NUL anywhere, each name once.
pub(crate) fn parse_env(pairs: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for pair in pairs {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(format!("--env `{pair}` is not NAME=VALUE"));
        };
        let mut chars = k.chars();
        let valid = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "--env `{pair}`: `{k}` is not a variable name (letters, digits and _, not starting with a digit)"
            ));
        }
        if v.contains('\0') {
            return Err(format!(
                "--env `{k}`: the value holds a NUL byte, which no environment can carry"
            ));
        }
        if out.iter().any(|(name, _)| name == k) {
            return Err(format!("--env `{k}` is given twice"));
        }
        out.push((k.to_owned(), v.to_owned()));
    }
    Ok(out)
}

/// A server name every client accepts: 1 to 64 of `A-Z a-z 0-9 _ -`, starting with a letter
/// or digit (Claude Code builds tool names `mcp__NAME__tool` from it; Codex accepts only
/// `[A-Za-z0-9_-]`).
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "server name `{name}` cannot be used in a client's configuration: use 1 to 64 letters, digits, `_` or `-`, starting with a letter or digit (for example --name {})",
            suggest_name(name)
        ))
    }
}

/// `name` made into one that [`check_name`] accepts.
pub(crate) fn suggest_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= 64 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        "mcp-manifest".into()
    } else {
        out
    }
}

/// Whether a client entry's `command` runs mcp-manifest: a file named `mcp-manifest*` (on any
/// platform's paths), or `own`, this program (the same path, or the same file).
pub(crate) fn runs_us(command: &str, own: &Path) -> bool {
    let file = command.rsplit(['/', '\\']).next().unwrap_or(command);
    if file.to_ascii_lowercase().starts_with("mcp-manifest") {
        return true;
    }
    if Path::new(command) == own {
        return true;
    }
    same_path(Path::new(command), own)
}

/// How `register` treats an entry of the same name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opts<'a> {
    /// This program's own executable (an entry running it is ours).
    pub own: &'a Path,
    /// `--replace`: repoint an entry of ours that serves another manifest.
    pub replace: bool,
    /// The project folder: a relative or `${workspaceFolder}/` manifest path is in it.
    pub project: &'a Path,
}

/// What `register` / `unregister` did, to tell the user.
#[derive(Debug)]
pub(crate) struct Done {
    pub outcome: Outcome,
    pub backup: Option<PathBuf>,
    pub notes: Vec<String>,
    /// Files and folders `unregister` removed (it had created them; they held nothing more).
    pub removed: Vec<PathBuf>,
}

/// The manifest an entry of ours serves (`serve MANIFEST`).
pub(crate) fn served_manifest<'a>(
    args: impl IntoIterator<Item = Option<&'a str>>,
) -> Option<&'a str> {
    let mut it = args.into_iter();
    match (it.next(), it.next()) {
        (Some(Some("serve")), Some(Some(m))) => Some(m),
        _ => None,
    }
}

/// When `name` would be repointed from `old` to `new` manifest: an error if the old manifest
/// still exists (unless `--replace`), else a note.
pub(crate) fn repoint(
    path: &Path,
    name: &str,
    old: Option<&str>,
    new: &[String],
    opts: Opts,
) -> Result<Option<String>, String> {
    let (Some(old), Some(new)) = (old, new.get(1)) else {
        return Ok(None);
    };
    let (old_file, new_file) = (resolve(old, opts.project), resolve(new, opts.project));
    if old == new || old_file == new_file || same_path(&old_file, &new_file) {
        return Ok(None);
    }
    let replace = opts.replace;
    if !old_file.exists() {
        return Ok(Some(format!(
            "`{name}` served {old}, which no longer exists: it now serves {new}"
        )));
    }
    if replace {
        return Ok(Some(format!(
            "`{name}` served {old}: it now serves {new} (--replace)"
        )));
    }
    Err(format!(
        "{}: the server `{name}` there already serves another manifest, {old}; registering {new} under the same name would take its place. Left as it is: choose another name (--name {name}-2, say), or give --replace to point `{name}` at {new}",
        path.display()
    ))
}

/// A manifest path as an entry holds it, resolved: `${workspaceFolder}/…` and relative paths
/// are in the project folder.
fn resolve(arg: &str, project: &Path) -> PathBuf {
    match arg.strip_prefix("${workspaceFolder}/") {
        Some(rest) => project.join(rest),
        None => project.join(arg),
    }
}

/// How the state names "register added the servers key to this file" (`FILE#KEY`).
fn key_marker(target: &Target) -> PathBuf {
    let key = layout(target.format).map_or("mcp_servers", |l| l.key);
    PathBuf::from(format!("{}#{key}", target.path.display()))
}

fn layout(format: Format) -> Option<Layout> {
    match format {
        Format::Json { key, shape, jsonc } => Some(Layout { key, shape, jsonc }),
        Format::CodexToml => None,
    }
}

/// Where backups of `target`'s file go: the state folder for a project file, else beside it.
fn backups(target: &Target, state: Option<&State>) -> Option<PathBuf> {
    match (target.scope, state) {
        (Scope::Project, Some(s)) => Some(s.backups_for(&target.path)),
        _ => None,
    }
}

/// Adds or updates `name` in the file, under the file's lock; writes (after a backup) only
/// when something changes. A file (and folders) it creates is recorded in `state`.
pub(crate) fn register(
    target: &Target,
    name: &str,
    entry: &Entry,
    opts: Opts,
    state: Option<&State>,
) -> Result<Done, String> {
    let locked = lock(&target.path, true)?
        .ok_or_else(|| format!("{}: cannot create the file", target.path.display()))?;
    let text = utf8_text(&locked, &target.path)?;
    let key_missing = layout(target.format).is_some_and(|l| !json::has_key(&text, &target.path, l));
    let (outcome, new_text, note) = match layout(target.format) {
        Some(l) => json::set(&text, &target.path, l, name, entry, opts)?,
        None => set_codex(&text, &target.path, name, entry, opts)?,
    };
    let mut notes: Vec<String> = note.into_iter().collect();
    if outcome == Outcome::Unchanged {
        return Ok(Done {
            outcome,
            backup: None,
            notes,
            removed: Vec::new(),
        });
    }
    let backup_dir = backups(target, state);
    let saved = locked.commit(
        new_text.as_bytes(),
        !entry.env.is_empty(),
        backup_dir.as_deref(),
    )?;
    if let Some(s) = state.filter(|_| key_missing && !locked.created())
        && let Err(e) = s.remember(&[key_marker(target)])
    {
        notes.push(format!("could not record the key register added ({e})"));
    }
    if let Some(s) = state.filter(|_| locked.created()) {
        let mut made = locked.created_dirs.clone();
        made.push(locked.target.clone());
        if let Err(e) = s.remember(&made) {
            notes.push(format!(
                "could not record that this run created {} ({e}): `unregister` will leave the file",
                locked.target.display()
            ));
        }
    }
    notes.extend(saved.notes);
    Ok(Done {
        outcome,
        backup: saved.backup,
        notes,
        removed: Vec::new(),
    })
}

/// Removes `name` from the file if it is there and runs mcp-manifest. `Ok(None)` when there was
/// nothing to remove. A file `register` created that now holds nothing is removed, with the
/// folders made for it that are empty.
pub(crate) fn unregister(
    target: &Target,
    name: &str,
    own: &Path,
    state: Option<&State>,
) -> Result<Option<Done>, String> {
    let Some(locked) = lock(&target.path, false)? else {
        return Ok(None);
    };
    let text = utf8_text(&locked, &target.path)?;
    let marker = key_marker(target);
    let drop_key = state.is_some_and(|s| s.created(&marker));
    let removed = match layout(target.format) {
        Some(l) => json::remove(&text, &target.path, l, name, own, drop_key)?,
        None => remove_codex(&text, &target.path, name, own)?,
    };
    let Some(removed) = removed else {
        return Ok(None);
    };
    if let Some(s) = state.filter(|s| removed.empty && s.created(&locked.target)) {
        let folders = s.created_folders(&locked.target);
        let gone = locked.remove_file(&folders);
        let mut notes = Vec::new();
        if let Err(e) = s.forget(&gone) {
            notes.push(format!("could not update {}: {e}", s.dir.display()));
        }
        return Ok(Some(Done {
            outcome: Outcome::Updated,
            backup: None,
            notes,
            removed: gone,
        }));
    }
    let saved = locked.commit(
        removed.text.as_bytes(),
        false,
        backups(target, state).as_deref(),
    )?;
    Ok(Some(Done {
        outcome: Outcome::Updated,
        backup: saved.backup,
        notes: saved.notes,
        removed: Vec::new(),
    }))
}

/// Locks the configuration file for an edit (see [`write::lock`]).
fn lock(path: &Path, create: bool) -> Result<Option<write::Locked>, String> {
    write::lock(path, create).map_err(|e| format!("{}: {e}", path.display()))
}

fn utf8_text(locked: &write::Locked, path: &Path) -> Result<String, String> {
    String::from_utf8(locked.bytes.clone())
        .map_err(|_| format!("{}: not UTF-8 text; left as it is", path.display()))
}

/// The entry as the client's file would hold it, for `--print`.
pub(crate) fn snippet(format: Format, name: &str, entry: &Entry) -> String {
    match layout(format) {
        Some(l) => json::snippet(l, name, entry),
        None => {
            let mut doc = toml_edit::DocumentMut::new();
            let mut servers = toml_edit::Table::new();
            servers.set_implicit(true);
            servers.insert(name, toml_edit::Item::Table(codex_table(entry)));
            doc.insert("mcp_servers", toml_edit::Item::Table(servers));
            doc.to_string()
        }
    }
}

pub(crate) fn not_ours(path: &Path, name: &str, command: Option<&str>) -> String {
    format!(
        "{}: the server `{name}` there does not run mcp-manifest (its command is {}); left as it is: choose another --name, or remove that entry yourself",
        path.display(),
        command.map_or_else(|| "missing".to_owned(), |c| format!("`{c}`"))
    )
}

fn parse_codex(text: &str, path: &Path) -> Result<toml_edit::DocumentMut, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        let loc = crate::manifest::SourceMap::new(text).loc(e.span().map_or(0, |s| s.start));
        format!(
            "{}:{}:{}: not valid TOML ({}); left as it is",
            path.display(),
            loc.line,
            loc.col,
            e.message().trim()
        )
    })
}

fn codex_table(entry: &Entry) -> toml_edit::Table {
    let mut t = toml_edit::Table::new();
    t.insert("command", toml_edit::value(entry.command.as_str()));
    t.insert("args", toml_edit::value(string_array(&entry.args)));
    if !entry.env.is_empty() {
        let mut env = toml_edit::InlineTable::new();
        for (k, v) in &entry.env {
            env.insert(k, v.as_str().into());
        }
        t.insert("env", toml_edit::value(env));
    }
    t
}

fn string_array(items: &[String]) -> toml_edit::Array {
    items.iter().map(String::as_str).collect()
}

/// The `mcp_servers` table (made, implicit, when missing).
fn codex_servers<'a>(
    doc: &'a mut toml_edit::DocumentMut,
    path: &Path,
) -> Result<&'a mut dyn toml_edit::TableLike, String> {
    if !doc.contains_key("mcp_servers") {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        doc.insert("mcp_servers", toml_edit::Item::Table(t));
    }
    doc.get_mut("mcp_servers")
        .and_then(toml_edit::Item::as_table_like_mut)
        .ok_or_else(|| {
            format!(
                "{}: `mcp_servers` is not a table; left as it is",
                path.display()
            )
        })
}

fn set_codex(
    text: &str,
    path: &Path,
    name: &str,
    entry: &Entry,
    opts: Opts,
) -> Result<(Outcome, String, Option<String>), String> {
    let mut doc = parse_codex(text, path)?;
    let mut note = None;
    // An inline `mcp_servers = { … }` holds inline tables; a table holds tables.
    let inline = doc.get("mcp_servers").is_some_and(|i| i.is_inline_table());
    let servers = codex_servers(&mut doc, path)?;
    let outcome = match servers.get_mut(name) {
        None => {
            let table = codex_table(entry);
            let item = if inline {
                toml_edit::value(table.into_inline_table())
            } else {
                toml_edit::Item::Table(table)
            };
            servers.insert(name, item);
            Outcome::Added
        }
        Some(item) => {
            let Some(old) = item.as_table_like_mut() else {
                return Err(not_ours(path, name, None));
            };
            let command = old.get("command").and_then(toml_edit::Item::as_str);
            if !command.is_some_and(|c| runs_us(c, opts.own)) {
                return Err(not_ours(path, name, command.map(str::to_owned).as_deref()));
            }
            let old_args = old.get("args").and_then(toml_edit::Item::as_array);
            let served = served_manifest(
                old_args
                    .into_iter()
                    .flat_map(|a| a.iter())
                    .map(toml_edit::Value::as_str),
            );
            note = repoint(path, name, served, &entry.args, opts)?;
            let same_command = command == Some(entry.command.as_str());
            let same_args = old
                .get("args")
                .and_then(toml_edit::Item::as_array)
                .is_some_and(|a| {
                    a.len() == entry.args.len()
                        && a.iter()
                            .zip(&entry.args)
                            .all(|(x, y)| x.as_str() == Some(y.as_str()))
                });
            let env_has = |k: &str, v: &str| {
                old.get("env")
                    .and_then(toml_edit::Item::as_table_like)
                    .and_then(|t| t.get(k))
                    .and_then(toml_edit::Item::as_str)
                    == Some(v)
            };
            let same_env = entry.env.iter().all(|(k, v)| env_has(k, v));
            if same_command && same_args && same_env {
                Outcome::Unchanged
            } else {
                old.insert("command", toml_edit::value(entry.command.as_str()));
                old.insert("args", toml_edit::value(string_array(&entry.args)));
                if !entry.env.is_empty() {
                    if old.get("env").is_none_or(|e| e.as_table_like().is_none()) {
                        old.insert("env", toml_edit::value(toml_edit::InlineTable::new()));
                    }
                    if let Some(env) = old
                        .get_mut("env")
                        .and_then(toml_edit::Item::as_table_like_mut)
                    {
                        for (k, v) in &entry.env {
                            env.insert(k, toml_edit::value(v.as_str()));
                        }
                    }
                }
                Outcome::Updated
            }
        }
    };
    Ok((outcome, keep_bom(text, doc.to_string()), note))
}

/// `new` with the UTF-8 BOM `old` started with.
fn keep_bom(old: &str, new: String) -> String {
    if old.starts_with('\u{feff}') {
        format!("\u{feff}{new}")
    } else {
        new
    }
}

fn remove_codex(
    text: &str,
    path: &Path,
    name: &str,
    own: &Path,
) -> Result<Option<json::Removed>, String> {
    let mut doc = parse_codex(text, path)?;
    let Some(servers) = doc.get_mut("mcp_servers").map(|s| s.as_table_like_mut()) else {
        return Ok(None);
    };
    let Some(servers) = servers else {
        return Err(format!(
            "{}: `mcp_servers` is not a table; left as it is",
            path.display()
        ));
    };
    let Some(existing) = servers.get(name) else {
        return Ok(None);
    };
    let command = existing
        .as_table_like()
        .and_then(|t| t.get("command"))
        .and_then(toml_edit::Item::as_str)
        .map(str::to_owned);
    if !command.as_deref().is_some_and(|c| runs_us(c, own)) {
        return Err(not_ours(path, name, command.as_deref()));
    }
    servers.remove(name);
    let empty = servers.is_empty() && doc.iter().all(|(k, _)| k == "mcp_servers");
    Ok(Some(json::Removed {
        text: keep_bom(text, doc.to_string()),
        empty,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn env_pairs_and_names_are_checked() {
        let ok = parse_env(&["A=1".into(), "B_2=x=y".into(), "EMPTY=".into()]).unwrap();
        assert_eq!(ok[1], ("B_2".into(), "x=y".into()));
        assert_eq!(ok[2], ("EMPTY".into(), "".into()));
        for bad in ["NOVALUE", "=v", "1A=v", "A-B=v", "A=\0"] {
            assert!(parse_env(&[bad.into()]).is_err(), "{bad:?}");
        }
        assert!(parse_env(&["A=1".into(), "A=2".into()]).is_err());
        assert!(check_name("acme").is_ok());
        assert!(check_name("my_server_2-x").is_ok());
        // Codex accepts only [A-Za-z0-9_-]: a dot is refused, with a name that works.
        let err = check_name("a.b").unwrap_err();
        assert!(err.contains("--name a-b"), "{err}");
        for bad in ["", "-x", "a b", "é", ".", "a.b", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(suggest_name("My Notes!"), "my-notes");
        assert_eq!(suggest_name("!!!"), "mcp-manifest");
    }

    fn own() -> &'static Path {
        Path::new("/bin/mcp-manifest")
    }

    fn opts() -> Opts<'static> {
        Opts {
            own: own(),
            replace: false,
            project: Path::new("/p"),
        }
    }

    fn entry() -> Entry {
        Entry {
            command: "/bin/mcp-manifest".into(),
            args: vec!["serve".into(), "/p/mcp-server.toml".into()],
            env: vec![],
        }
    }

    #[test]
    fn an_entry_serving_another_existing_manifest_is_not_repointed_silently() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.toml");
        std::fs::write(&a, "").unwrap();
        let p = Path::new("/c.json");
        let mut first = entry();
        first.args[1] = a.to_string_lossy().into_owned();
        let l = Layout {
            key: "mcpServers",
            shape: super::super::clients::Shape::Plain,
            jsonc: false,
        };
        let (_, text, _) = json::set("", p, l, "acme", &first, opts()).unwrap();
        let err = json::set(&text, p, l, "acme", &entry(), opts()).unwrap_err();
        assert!(
            err.contains(&*a.to_string_lossy()) && err.contains("/p/mcp-server.toml"),
            "{err}"
        );
        assert!(err.contains("--replace") && err.contains("--name"), "{err}");
        let replace = Opts {
            own: own(),
            replace: true,
            project: Path::new("/p"),
        };
        let (o, _, note) = json::set(&text, p, l, "acme", &entry(), replace).unwrap();
        assert_eq!(o, Outcome::Updated);
        assert!(note.is_some());
        // The same in Codex's file.
        let (_, toml, _) = set_codex("", p, "acme", &first, opts()).unwrap();
        assert!(set_codex(&toml, p, "acme", &entry(), opts()).is_err());
        // Once the old manifest is gone, the entry is repointed, with a note.
        std::fs::remove_file(&a).unwrap();
        let (o, _, note) = json::set(&text, p, l, "acme", &entry(), opts()).unwrap();
        assert_eq!(o, Outcome::Updated);
        assert!(note.unwrap().contains("no longer exists"));
    }

    #[test]
    fn entries_of_a_renamed_binary_are_ours() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("mm");
        std::fs::write(&own, "").unwrap();
        assert!(runs_us("/opt/mcp-manifest-0.1.0", &own));
        assert!(runs_us(&own.to_string_lossy(), &own));
        // Unix only: a symlink to the binary (Windows needs a privilege to make one).
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&own, &link).unwrap();
            assert!(runs_us(&link.to_string_lossy(), &own));
        }
        assert!(!runs_us("/usr/bin/npx", &own));
    }

    #[test]
    fn codex_edits_keep_comments_and_other_tables() {
        let p = Path::new("/config.toml");
        let text = "# my settings\nmodel = \"o3\" # inline comment\n\n[mcp_servers.other]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\n\n[profiles.fast]\nmodel = \"mini\"\n";
        let mut e = entry();
        e.env = vec![("K".into(), "v".into())];
        let (o, new, _) = set_codex(text, p, "acme", &e, opts()).unwrap();
        assert_eq!(o, Outcome::Added);
        assert!(
            new.starts_with("# my settings\nmodel = \"o3\" # inline comment\n"),
            "{new}"
        );
        assert!(new.contains("[mcp_servers.acme]\ncommand = \"/bin/mcp-manifest\"\nargs = [\"serve\", \"/p/mcp-server.toml\"]\nenv = { K = \"v\" }\n"), "{new}");
        assert!(new.contains("[profiles.fast]\nmodel = \"mini\"\n"), "{new}");
        let (o, again, _) = set_codex(&new, p, "acme", &e, opts()).unwrap();
        assert_eq!((o, again.as_str()), (Outcome::Unchanged, new.as_str()));
        assert!(set_codex(&new, p, "other", &e, opts()).is_err());
        let removed = remove_codex(&new, p, "acme", own()).unwrap().unwrap();
        assert_eq!(removed.text, text);
        assert!(!removed.empty);
        let err = set_codex("a = [", p, "acme", &e, opts()).unwrap_err();
        assert!(err.starts_with("/config.toml:1:"), "{err}");
        let (_, only, _) = set_codex("", p, "acme", &e, opts()).unwrap();
        assert!(
            remove_codex(&only, p, "acme", own())
                .unwrap()
                .unwrap()
                .empty
        );
        let snippet = snippet(Format::CodexToml, "acme", &e);
        assert!(snippet.starts_with("[mcp_servers.acme]\n"), "{snippet}");
    }
}
