//! `register` / `unregister`: this server as an entry of an MCP client's configuration file.
//!
//! One table says, per client, which file holds its servers and in what shape; the JSON files
//! are edited as `serde_json::Value`s (key order kept), Codex's TOML with `toml_edit` (comments
//! kept). Every other entry and key of the file is left as it was; a file that does not parse is
//! refused, never rewritten. The paths and shapes below were checked against each client's own
//! documentation (cited per client in [`target`]).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Env, home_dir, write};

/// The clients `register` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Windsurf,
    Codex,
    Gemini,
}

impl Client {
    /// The name on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Windsurf => "windsurf",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }

    /// The product's name, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
            Client::Windsurf => "Windsurf",
            Client::Codex => "Codex",
            Client::Gemini => "Gemini CLI",
        }
    }

    /// Whether the client also reads a per-project file (then `--user` picks the user's file).
    pub fn has_project_scope(self) -> bool {
        matches!(
            self,
            Client::ClaudeCode | Client::Cursor | Client::Vscode | Client::Gemini
        )
    }
}

/// The operating system whose paths apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Os {
    Mac,
    Windows,
    Linux,
}

impl Os {
    pub(crate) fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::Mac
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

/// How a client's file holds its servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// A JSON object whose member `key` maps server names to `{command, args, env}` entries;
    /// `stdio_type` adds `"type": "stdio"` to each entry.
    Json { key: &'static str, stdio_type: bool },
    /// Codex's `config.toml`: a table `[mcp_servers.NAME]` with `command`, `args`, `env`.
    CodexToml,
}

/// Where one client's servers are written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub path: PathBuf,
    pub format: Format,
    /// "project" or "user", for messages.
    pub scope: &'static str,
}

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

/// The file that holds `client`'s servers. `user` picks the user's file of a client that also
/// reads a per-project one; `project` is the project folder.
pub(crate) fn target(
    client: Client,
    user: bool,
    project: &Path,
    os: Os,
    env: Env,
) -> Result<Target, String> {
    let home = || {
        let h = home_dir(env).ok_or_else(|| {
            "cannot find your home folder: HOME (or USERPROFILE) is not set".to_owned()
        })?;
        absolute_var("HOME", h)
    };
    // The user's configuration folder on Linux: XDG_CONFIG_HOME when absolute, else ~/.config.
    let xdg_config = || -> Result<PathBuf, String> {
        match env("XDG_CONFIG_HOME").map(PathBuf::from) {
            Some(p) if p.is_absolute() => Ok(p),
            _ => Ok(home()?.join(".config")),
        }
    };
    // Windows' roaming application data: APPDATA, else ~/AppData/Roaming.
    let appdata = || -> Result<PathBuf, String> {
        match env("APPDATA").map(PathBuf::from) {
            Some(p) => absolute_var("APPDATA", p),
            None => Ok(home()?.join("AppData").join("Roaming")),
        }
    };
    let json = |key, stdio_type| Format::Json { key, stdio_type };
    let (path, format, scope) = match client {
        // Claude Desktop (modelcontextprotocol.io "Connect to local MCP servers"; Settings →
        // Developer → Edit Config opens this file): `mcpServers` in
        // ~/Library/Application Support/Claude/claude_desktop_config.json on macOS and
        // %APPDATA%\Claude\claude_desktop_config.json on Windows. Anthropic ships no Linux
        // build; community builds read ~/.config/Claude/claude_desktop_config.json.
        Client::ClaudeDesktop => {
            let dir = match os {
                Os::Mac => home()?.join("Library/Application Support/Claude"),
                Os::Windows => appdata()?.join("Claude"),
                Os::Linux => xdg_config()?.join("Claude"),
            };
            (
                dir.join("claude_desktop_config.json"),
                json("mcpServers", false),
                "user",
            )
        }
        // Claude Code (code.claude.com/docs/en/mcp, "MCP installation scopes"): project scope is
        // `.mcp.json` at the project root, user scope the top-level `mcpServers` of
        // ~/.claude.json; `claude mcp add` writes `"type": "stdio"` in each entry.
        Client::ClaudeCode if user => (
            home()?.join(".claude.json"),
            json("mcpServers", true),
            "user",
        ),
        Client::ClaudeCode => (
            project.join(".mcp.json"),
            json("mcpServers", true),
            "project",
        ),
        // Cursor (cursor.com/docs/mcp): `mcpServers` in `.cursor/mcp.json` of the project, or
        // ~/.cursor/mcp.json for every project.
        Client::Cursor if user => (
            home()?.join(".cursor").join("mcp.json"),
            json("mcpServers", false),
            "user",
        ),
        Client::Cursor => (
            project.join(".cursor").join("mcp.json"),
            json("mcpServers", false),
            "project",
        ),
        // VS Code (code.visualstudio.com/docs/copilot/reference/mcp-configuration): a top-level
        // `servers` object, each stdio entry with `"type": "stdio"`, in `.vscode/mcp.json` of the
        // workspace or `mcp.json` in the user profile folder (Code/User).
        Client::Vscode if user => {
            let dir = match os {
                Os::Mac => home()?.join("Library/Application Support/Code/User"),
                Os::Windows => appdata()?.join("Code").join("User"),
                Os::Linux => xdg_config()?.join("Code").join("User"),
            };
            (dir.join("mcp.json"), json("servers", true), "user")
        }
        Client::Vscode => (
            project.join(".vscode").join("mcp.json"),
            json("servers", true),
            "project",
        ),
        // Windsurf (docs.windsurf.com/windsurf/cascade/mcp): ~/.codeium/windsurf/mcp_config.json,
        // "the same schema as the config file for Claude Desktop" (`mcpServers`); on Windows
        // %USERPROFILE%\.codeium\windsurf\mcp_config.json, the same place under the home folder.
        Client::Windsurf => (
            home()?.join(".codeium/windsurf/mcp_config.json"),
            json("mcpServers", false),
            "user",
        ),
        // Codex (developers.openai.com/codex/mcp): `[mcp_servers.NAME]` tables with `command`,
        // `args`, `env` in config.toml under CODEX_HOME (default ~/.codex). Codex also reads a
        // project's .codex/config.toml, but only in trusted projects; the user file is the one
        // `codex mcp add` writes.
        Client::Codex => {
            let dir = match env("CODEX_HOME").map(PathBuf::from) {
                Some(p) => absolute_var("CODEX_HOME", p)?,
                None => home()?.join(".codex"),
            };
            (dir.join("config.toml"), Format::CodexToml, "user")
        }
        // Gemini CLI (geminicli.com/docs/tools/mcp-server, docs/cli/configuration): `mcpServers`
        // in .gemini/settings.json of the project or ~/.gemini/settings.json.
        Client::Gemini if user => (
            home()?.join(".gemini").join("settings.json"),
            json("mcpServers", false),
            "user",
        ),
        Client::Gemini => (
            project.join(".gemini").join("settings.json"),
            json("mcpServers", false),
            "project",
        ),
    };
    Ok(Target {
        path,
        format,
        scope,
    })
}

/// `path` from the variable `var` when it is absolute: a relative one would put the file
/// wherever the command happens to run.
fn absolute_var(var: &str, path: PathBuf) -> Result<PathBuf, String> {
    // A Windows path (C:\..., \\server\...) is absolute on Windows only; accept its shape.
    let text = path.to_string_lossy();
    let windows_abs = text.as_bytes().get(1) == Some(&b':') || text.starts_with("\\\\");
    if path.is_absolute() || path.has_root() || windows_abs {
        Ok(path)
    } else {
        Err(format!(
            "{var} is `{}`, a relative path: it must be absolute (a `~` is not expanded in an environment variable); nothing written",
            path.display()
        ))
    }
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
    same_file(Path::new(command), own)
}

/// Whether two paths name the same existing file.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
    }
}

/// How `register` treats an entry of the same name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opts<'a> {
    /// This program's own executable (an entry running it is ours).
    pub own: &'a Path,
    /// `--replace`: repoint an entry of ours that serves another manifest.
    pub replace: bool,
}

/// What `register` / `unregister` did, to tell the user.
#[derive(Debug)]
pub(crate) struct Done {
    pub outcome: Outcome,
    pub backup: Option<PathBuf>,
    pub notes: Vec<String>,
}

/// The manifest an entry of ours serves (`serve MANIFEST`).
fn served_manifest<'a>(args: impl IntoIterator<Item = Option<&'a str>>) -> Option<&'a str> {
    let mut it = args.into_iter();
    match (it.next(), it.next()) {
        (Some(Some("serve")), Some(Some(m))) => Some(m),
        _ => None,
    }
}

/// When `name` would be repointed from `old` to `new` manifest: an error if the old manifest
/// still exists (unless `--replace`), else a note.
fn repoint(
    path: &Path,
    name: &str,
    old: Option<&str>,
    new: &[String],
    replace: bool,
) -> Result<Option<String>, String> {
    let (Some(old), Some(new)) = (old, new.get(1)) else {
        return Ok(None);
    };
    if old == new {
        return Ok(None);
    }
    if !Path::new(old).exists() {
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

/// Adds or updates `name` in the file, under the file's lock; writes (after a backup) only
/// when something changes.
pub(crate) fn register(
    target: &Target,
    name: &str,
    entry: &Entry,
    opts: Opts,
) -> Result<Done, String> {
    let locked = lock(&target.path, true)?
        .ok_or_else(|| format!("{}: cannot create the file", target.path.display()))?;
    let text = utf8_text(&locked, &target.path)?;
    let (outcome, new_text, note) = match target.format {
        Format::Json { key, stdio_type } => {
            set_json(&text, &target.path, key, stdio_type, name, entry, opts)?
        }
        Format::CodexToml => set_codex(&text, &target.path, name, entry, opts)?,
    };
    let mut notes: Vec<String> = note.into_iter().collect();
    if outcome == Outcome::Unchanged {
        return Ok(Done {
            outcome,
            backup: None,
            notes,
        });
    }
    let saved = locked.commit(new_text.as_bytes(), !entry.env.is_empty())?;
    notes.extend(saved.notes);
    Ok(Done {
        outcome,
        backup: saved.backup,
        notes,
    })
}

/// Removes `name` from the file if it is there and runs mcp-manifest. `Ok(None)` when there was
/// nothing to remove.
pub(crate) fn unregister(target: &Target, name: &str, own: &Path) -> Result<Option<Done>, String> {
    let Some(locked) = lock(&target.path, false)? else {
        return Ok(None);
    };
    let text = utf8_text(&locked, &target.path)?;
    let new_text = match target.format {
        Format::Json { key, .. } => remove_json(&text, &target.path, key, name, own)?,
        Format::CodexToml => remove_codex(&text, &target.path, name, own)?,
    };
    match new_text {
        None => Ok(None),
        Some(t) => {
            let saved = locked.commit(t.as_bytes(), false)?;
            Ok(Some(Done {
                outcome: Outcome::Updated,
                backup: saved.backup,
                notes: saved.notes,
            }))
        }
    }
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
    match format {
        Format::Json { key, stdio_type } => {
            let mut servers = Map::new();
            servers.insert(name.to_owned(), json_entry(entry, stdio_type));
            let mut root = Map::new();
            root.insert(key.to_owned(), Value::Object(servers));
            pretty(&Value::Object(root))
        }
        Format::CodexToml => {
            let mut doc = toml_edit::DocumentMut::new();
            let mut servers = toml_edit::Table::new();
            servers.set_implicit(true);
            servers.insert(name, toml_edit::Item::Table(codex_table(entry)));
            doc.insert("mcp_servers", toml_edit::Item::Table(servers));
            doc.to_string()
        }
    }
}

fn pretty(v: &Value) -> String {
    Style::default().render(v)
}

/// How a JSON file is laid out, kept when it is rewritten: a UTF-8 BOM, CRLF line ends, the
/// indentation (two or four spaces, a tab, …), a final newline.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Style {
    bom: bool,
    crlf: bool,
    indent: String,
    final_newline: bool,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            bom: false,
            crlf: false,
            indent: "  ".into(),
            final_newline: true,
        }
    }
}

impl Style {
    fn of(text: &str) -> Style {
        let bom = text.starts_with('\u{feff}');
        let body = text.strip_prefix('\u{feff}').unwrap_or(text);
        if body.trim().is_empty() {
            return Style {
                bom,
                ..Style::default()
            };
        }
        let indent = body
            .lines()
            .skip(1)
            .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
            .find(|w| !w.is_empty())
            .map(|w| {
                if w.starts_with('\t') {
                    "\t".to_owned()
                } else {
                    w.to_owned()
                }
            })
            .unwrap_or_else(|| "  ".into());
        Style {
            bom,
            crlf: body.contains("\r\n"),
            indent,
            final_newline: body.ends_with('\n'),
        }
    }

    fn render(&self, v: &Value) -> String {
        use serde::Serialize;
        let mut buf = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(self.indent.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        // Serializing a Value cannot fail (string keys, no non-finite numbers from our input).
        let text = match v.serialize(&mut ser) {
            Ok(()) => String::from_utf8(buf).unwrap_or_else(|_| v.to_string()),
            Err(_) => v.to_string(),
        };
        let mut out = String::new();
        if self.bom {
            out.push('\u{feff}');
        }
        out.push_str(&text);
        if self.final_newline {
            out.push('\n');
        }
        if self.crlf {
            out = out.replace('\n', "\r\n");
        }
        out
    }
}

fn json_entry(entry: &Entry, stdio_type: bool) -> Value {
    let mut obj = Map::new();
    if stdio_type {
        obj.insert("type".into(), "stdio".into());
    }
    obj.insert("command".into(), entry.command.clone().into());
    obj.insert(
        "args".into(),
        Value::Array(entry.args.iter().cloned().map(Value::from).collect()),
    );
    if !entry.env.is_empty() {
        let env: Map<String, Value> = entry
            .env
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.clone())))
            .collect();
        obj.insert("env".into(), Value::Object(env));
    }
    Value::Object(obj)
}

/// Parses a client's JSON file: a UTF-8 BOM is dropped, an empty file is `{}`; anything else
/// that is not strict JSON is an error naming the file, line and column.
fn parse_json(text: &str, path: &Path) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(format!(
            "{}:1:1: the file is JSON but not an object; left as it is",
            path.display()
        )),
        Err(e) => {
            let what = e.to_string();
            let what = match what.rfind(" at line ") {
                Some(i) => what[..i].to_owned(),
                None => what,
            };
            Err(format!(
                "{}:{}:{}: not valid JSON ({what}); mcp-manifest edits only strict JSON (no comments, no trailing commas) and left the file as it is: fix it, or add the entry by hand (`--print` shows it)",
                path.display(),
                e.line(),
                e.column()
            ))
        }
    }
}

fn servers_object<'a>(
    root: &'a mut Map<String, Value>,
    key: &str,
    path: &Path,
) -> Result<&'a mut Map<String, Value>, String> {
    root.entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| {
            format!(
                "{}: `{key}` is not a JSON object; left as it is",
                path.display()
            )
        })
}

fn not_ours(path: &Path, name: &str, command: Option<&str>) -> String {
    format!(
        "{}: the server `{name}` there does not run mcp-manifest (its command is {}); left as it is: choose another --name, or remove that entry yourself",
        path.display(),
        command.map_or_else(|| "missing".to_owned(), |c| format!("`{c}`"))
    )
}

fn set_json(
    text: &str,
    path: &Path,
    key: &str,
    stdio_type: bool,
    name: &str,
    entry: &Entry,
    opts: Opts,
) -> Result<(Outcome, String, Option<String>), String> {
    let mut root = parse_json(text, path)?;
    let servers = servers_object(&mut root, key, path)?;
    let mut note = None;
    let outcome = match servers.get(name) {
        None => {
            servers.insert(name.to_owned(), json_entry(entry, stdio_type));
            Outcome::Added
        }
        Some(existing) => {
            let Some(old) = existing.as_object() else {
                return Err(not_ours(path, name, None));
            };
            let command = old.get("command").and_then(Value::as_str);
            if !command.is_some_and(|c| runs_us(c, opts.own)) {
                return Err(not_ours(path, name, command));
            }
            let old_args = old.get("args").and_then(Value::as_array);
            let served = served_manifest(old_args.into_iter().flatten().map(Value::as_str));
            note = repoint(path, name, served, &entry.args, opts.replace)?;
            // Keys the user added to our entry (`disabled`, `timeout`, …) stay; ours are set.
            let mut new = old.clone();
            if stdio_type {
                new.insert("type".into(), "stdio".into());
            }
            new.insert("command".into(), entry.command.clone().into());
            new.insert(
                "args".into(),
                Value::Array(entry.args.iter().cloned().map(Value::from).collect()),
            );
            if !entry.env.is_empty() {
                let env = new
                    .entry("env")
                    .or_insert_with(|| Value::Object(Map::new()));
                if !env.is_object() {
                    *env = Value::Object(Map::new());
                }
                if let Some(env) = env.as_object_mut() {
                    for (k, v) in &entry.env {
                        env.insert(k.clone(), v.clone().into());
                    }
                }
            }
            if &new == old {
                Outcome::Unchanged
            } else {
                servers.insert(name.to_owned(), Value::Object(new));
                Outcome::Updated
            }
        }
    };
    Ok((outcome, Style::of(text).render(&Value::Object(root)), note))
}

fn remove_json(
    text: &str,
    path: &Path,
    key: &str,
    name: &str,
    own: &Path,
) -> Result<Option<String>, String> {
    let mut root = parse_json(text, path)?;
    let Some(servers) = root.get_mut(key) else {
        return Ok(None);
    };
    let Some(servers) = servers.as_object_mut() else {
        return Err(format!(
            "{}: `{key}` is not a JSON object; left as it is",
            path.display()
        ));
    };
    let Some(existing) = servers.get(name) else {
        return Ok(None);
    };
    let command = existing.get("command").and_then(Value::as_str);
    if !command.is_some_and(|c| runs_us(c, own)) {
        return Err(not_ours(path, name, command));
    }
    servers.shift_remove(name);
    Ok(Some(Style::of(text).render(&Value::Object(root))))
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
            note = repoint(path, name, served, &entry.args, opts.replace)?;
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

fn remove_codex(text: &str, path: &Path, name: &str, own: &Path) -> Result<Option<String>, String> {
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
    Ok(Some(keep_bom(text, doc.to_string())))
}

/// What to do after `register`, per client: restart, where to look, where logs go.
pub(crate) fn after_register(client: Client, target: &Target, name: &str) -> String {
    match client {
        Client::ClaudeDesktop => format!(
            "Quit Claude Desktop completely (not only its window) and start it again; the server is listed under Settings → Developer. Its log: ~/Library/Logs/Claude/mcp-server-{name}.log (macOS), %APPDATA%\\Claude\\logs\\mcp-server-{name}.log (Windows)."
        ),
        Client::ClaudeCode if target.scope == "project" => {
            "Start `claude` in the project folder: it asks once to approve servers from .mcp.json; `/mcp` shows their status.".to_owned()
        }
        Client::ClaudeCode => {
            "`claude mcp list` shows the server; inside a session `/mcp` shows its status.".to_owned()
        }
        Client::Cursor => {
            "Cursor reads mcp.json again on change: Settings → MCP lists the server (turn it on there if it is off); its log: the Output panel, channel \"MCP Logs\".".to_owned()
        }
        Client::Vscode => {
            "In VS Code open mcp.json and use the Start code lens above the server (or run `MCP: List Servers`); its tools appear in Chat's agent mode; `MCP: List Servers` → Show Output shows its log.".to_owned()
        }
        Client::Windsurf => {
            "Press the refresh button in Cascade's MCP panel (or restart Windsurf).".to_owned()
        }
        Client::Codex => "`codex mcp list` shows the server; new sessions start it.".to_owned(),
        Client::Gemini => {
            "Start `gemini` again; `/mcp` lists the server and its tools.".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |k: &str| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn config_paths_per_os_and_scope() {
        let env = env_of(&[("HOME", "/h"), ("APPDATA", "C:/Users/u/AppData/Roaming")]);
        let p = Path::new("/proj");
        let path = |c, user, os| target(c, user, p, os, &env).unwrap().path;
        assert_eq!(
            path(Client::ClaudeDesktop, false, Os::Mac),
            Path::new("/h/Library/Application Support/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            path(Client::ClaudeDesktop, false, Os::Windows),
            Path::new("C:/Users/u/AppData/Roaming/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            path(Client::ClaudeDesktop, false, Os::Linux),
            Path::new("/h/.config/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            path(Client::ClaudeCode, false, Os::Linux),
            Path::new("/proj/.mcp.json")
        );
        assert_eq!(
            path(Client::ClaudeCode, true, Os::Linux),
            Path::new("/h/.claude.json")
        );
        assert_eq!(
            path(Client::Cursor, false, Os::Linux),
            Path::new("/proj/.cursor/mcp.json")
        );
        assert_eq!(
            path(Client::Cursor, true, Os::Mac),
            Path::new("/h/.cursor/mcp.json")
        );
        assert_eq!(
            path(Client::Vscode, false, Os::Linux),
            Path::new("/proj/.vscode/mcp.json")
        );
        assert_eq!(
            path(Client::Vscode, true, Os::Mac),
            Path::new("/h/Library/Application Support/Code/User/mcp.json")
        );
        assert_eq!(
            path(Client::Vscode, true, Os::Windows),
            Path::new("C:/Users/u/AppData/Roaming/Code/User/mcp.json")
        );
        assert_eq!(
            path(Client::Windsurf, false, Os::Windows),
            Path::new("/h/.codeium/windsurf/mcp_config.json")
        );
        assert_eq!(
            path(Client::Codex, false, Os::Linux),
            Path::new("/h/.codex/config.toml")
        );
        assert_eq!(
            path(Client::Gemini, false, Os::Linux),
            Path::new("/proj/.gemini/settings.json")
        );
        assert_eq!(
            path(Client::Gemini, true, Os::Linux),
            Path::new("/h/.gemini/settings.json")
        );

        let xdg = env_of(&[
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", "/x"),
            ("CODEX_HOME", "/c"),
        ]);
        let t = |c| target(c, true, p, Os::Linux, &xdg).unwrap().path;
        assert_eq!(
            t(Client::ClaudeDesktop),
            Path::new("/x/Claude/claude_desktop_config.json")
        );
        assert_eq!(t(Client::Vscode), Path::new("/x/Code/User/mcp.json"));
        assert_eq!(t(Client::Codex), Path::new("/c/config.toml"));
        // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
        let rel = env_of(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "rel")]);
        assert_eq!(
            target(Client::ClaudeDesktop, false, p, Os::Linux, &rel)
                .unwrap()
                .path,
            Path::new("/h/.config/Claude/claude_desktop_config.json")
        );
        let none = |_: &str| None;
        assert!(target(Client::Windsurf, false, p, Os::Linux, &none).is_err());
        // A relative HOME, CODEX_HOME or APPDATA is refused, naming the variable.
        for (vars, client, os, var) in [
            (
                &[("HOME", "relhome")][..],
                Client::Windsurf,
                Os::Linux,
                "HOME",
            ),
            (
                &[("HOME", "/h"), ("CODEX_HOME", "~/cx")][..],
                Client::Codex,
                Os::Linux,
                "CODEX_HOME",
            ),
            (
                &[("HOME", "/h"), ("APPDATA", "AppData")][..],
                Client::ClaudeDesktop,
                Os::Windows,
                "APPDATA",
            ),
        ] {
            let env = |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            };
            let err = target(client, true, p, os, &env).unwrap_err();
            assert!(err.starts_with(var) && err.contains("relative"), "{err}");
        }
    }

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
    fn json_edits_keep_everything_else_and_refuse_what_is_not_ours() {
        let p = Path::new("/c.json");
        let text = r#"{"zeta": 1, "mcpServers": {"other": {"command": "npx", "args": ["x"]}}, "alpha": [1, 2]}"#;
        let (o, new, _) = set_json(text, p, "mcpServers", false, "acme", &entry(), opts()).unwrap();
        assert_eq!(o, Outcome::Added);
        let v: Value = serde_json::from_str(&new).unwrap();
        assert_eq!(v["zeta"], 1);
        assert_eq!(v["alpha"], serde_json::json!([1, 2]));
        assert_eq!(v["mcpServers"]["other"]["command"], "npx");
        assert_eq!(v["mcpServers"]["acme"]["args"][0], "serve");
        // Key order of the file is kept: zeta, mcpServers, alpha.
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["zeta", "mcpServers", "alpha"]);
        let (o, again, _) =
            set_json(&new, p, "mcpServers", false, "acme", &entry(), opts()).unwrap();
        assert_eq!((o, again), (Outcome::Unchanged, new.clone()));
        assert!(set_json(&new, p, "mcpServers", false, "other", &entry(), opts()).is_err());
        assert!(remove_json(&new, p, "mcpServers", "other", own()).is_err());
        let removed = remove_json(&new, p, "mcpServers", "acme", own())
            .unwrap()
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&removed).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        assert_eq!(
            remove_json(&removed, p, "mcpServers", "acme", own()).unwrap(),
            None
        );
        let err = set_json(
            "{\"a\": 1,}",
            p,
            "mcpServers",
            false,
            "acme",
            &entry(),
            opts(),
        )
        .unwrap_err();
        assert!(err.starts_with("/c.json:1:9: not valid JSON"), "{err}");
        assert!(set_json("[]", p, "mcpServers", false, "acme", &entry(), opts()).is_err());
        assert!(
            set_json(
                "{\"mcpServers\": 3}",
                p,
                "mcpServers",
                false,
                "acme",
                &entry(),
                opts()
            )
            .is_err()
        );
        let (o, fresh, _) =
            set_json("\u{feff}", p, "servers", true, "acme", &entry(), opts()).unwrap();
        assert_eq!(o, Outcome::Added);
        // The BOM is kept.
        let fresh = fresh.strip_prefix('\u{feff}').unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(fresh).unwrap()["servers"]["acme"]["type"],
            "stdio"
        );
    }

    #[test]
    fn json_rewrites_keep_bom_line_ends_and_indentation() {
        let p = Path::new("/c.json");
        for (text, indent) in [
            ("\u{feff}{\"mcpServers\": {}}\n", None),
            (
                "{\r\n    \"mcpServers\": {\r\n        \"x\": {\"command\": \"npx\"}\r\n    }\r\n}\r\n",
                Some("    "),
            ),
            ("{\n\t\"mcpServers\": {},\n\t\"a\": 1\n}", Some("\t")),
            ("{\n  \"mcpServers\": {}\n}\n", Some("  ")),
        ] {
            let (_, new, _) =
                set_json(text, p, "mcpServers", false, "acme", &entry(), opts()).unwrap();
            assert_eq!(
                new.starts_with('\u{feff}'),
                text.starts_with('\u{feff}'),
                "{new:?}"
            );
            let crlf = text.contains("\r\n");
            assert_eq!(new.contains("\r\n"), crlf, "{new:?}");
            if crlf {
                assert!(!new.replace("\r\n", "").contains('\n'), "{new:?}");
            }
            assert_eq!(new.ends_with('\n'), text.ends_with('\n'), "{new:?}");
            if let Some(indent) = indent {
                assert!(
                    new.contains(&format!("\n{indent}\"mcpServers\"")),
                    "{new:?}"
                );
                assert!(
                    new.contains(&format!("\n{indent}{indent}\"acme\"")),
                    "{new:?}"
                );
            }
            let removed = remove_json(&new, p, "mcpServers", "acme", own())
                .unwrap()
                .unwrap();
            assert_eq!(new.starts_with('\u{feff}'), removed.starts_with('\u{feff}'));
            assert_eq!(removed.contains("\r\n"), crlf, "{removed:?}");
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
        let (_, text, _) = set_json("", p, "mcpServers", false, "acme", &first, opts()).unwrap();
        let err = set_json(&text, p, "mcpServers", false, "acme", &entry(), opts()).unwrap_err();
        assert!(
            err.contains(&*a.to_string_lossy()) && err.contains("/p/mcp-server.toml"),
            "{err}"
        );
        assert!(err.contains("--replace") && err.contains("--name"), "{err}");
        let replace = Opts {
            own: own(),
            replace: true,
        };
        let (o, _, note) =
            set_json(&text, p, "mcpServers", false, "acme", &entry(), replace).unwrap();
        assert_eq!(o, Outcome::Updated);
        assert!(note.is_some());
        // The same in Codex's file.
        let (_, toml, _) = set_codex("", p, "acme", &first, opts()).unwrap();
        assert!(set_codex(&toml, p, "acme", &entry(), opts()).is_err());
        // Once the old manifest is gone, the entry is repointed, with a note.
        std::fs::remove_file(&a).unwrap();
        let (o, _, note) =
            set_json(&text, p, "mcpServers", false, "acme", &entry(), opts()).unwrap();
        assert_eq!(o, Outcome::Updated);
        assert!(note.unwrap().contains("no longer exists"));
    }

    #[test]
    fn entries_of_a_renamed_binary_are_ours() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("mm");
        std::fs::write(&own, "").unwrap();
        let link = dir.path().join("link");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&own, &link).unwrap();
        assert!(runs_us("/opt/mcp-manifest-0.1.0", &own));
        assert!(runs_us(&own.to_string_lossy(), &own));
        #[cfg(unix)]
        assert!(runs_us(&link.to_string_lossy(), &own));
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
        assert_eq!(removed, text);
        let err = set_codex("a = [", p, "acme", &e, opts()).unwrap_err();
        assert!(err.starts_with("/config.toml:1:"), "{err}");
        let snippet = snippet(Format::CodexToml, "acme", &e);
        assert!(snippet.starts_with("[mcp_servers.acme]\n"), "{snippet}");
    }
}
