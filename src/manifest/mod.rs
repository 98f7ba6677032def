//! The manifest: reading `mcp-server.toml`, checking it, and the checked model every other module
//! builds from. No IO here but reading the file; checks that need the filesystem, a database or a
//! repository happen when the registry is built (`registry.rs`).
//!
//! Two phases, as in ripgrep: `raw` is the manifest as written (serde, spans); `load` turns it
//! into `Manifest`, where paths are absolute, units are parsed, defaults are filled in and every
//! problem is a `Diagnostic` with line and column.

pub mod about;
pub mod diag;
pub mod expand;
pub mod groups;
mod http;
pub mod raw;
mod validate;
mod view;

use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

pub use crate::providers::sql::section::DatabaseDef;
pub use about::{About, Skills};
pub use diag::{Diagnostics, Loc, SourceMap};
pub use groups::{Filter, Group};
pub use http::{Http, HttpAuth, Jwks, OAuth, open_listen_refusal, parse_listen};
pub use raw::{OutputKind, ParamType, Role};
pub use view::{Chart, ChartKind, ToolView, View};

use raw::{Key, RawArg, RawManifest, RawParam, SizeValue, Sp};

/// Default cap on a file read (`max_size`).
pub const DEFAULT_MAX_SIZE: u64 = 10 * 1024 * 1024;
/// The largest `max_size` a manifest may set: a read is held in memory whole (and base64 makes
/// it a third larger on the wire).
pub const MAX_MAX_SIZE: u64 = 256 * 1024 * 1024;
/// Default process timeout for tools and command templates.
/// `[server] max_processes` when not written.
pub const DEFAULT_MAX_PROCESSES: usize = 16;
/// The largest `max_processes` accepted.
pub const MAX_MAX_PROCESSES: usize = 4096;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default limit on how long one SQL statement may run.
pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default change-notification window.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(50);
/// Default cap on a process's captured output.
pub const DEFAULT_MAX_OUTPUT: u64 = 1024 * 1024;

/// A checked manifest: absolute paths, parsed units, defaults filled in, entries in file order.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The manifest path as the user gave it, for messages.
    pub file: String,
    /// Absolute path of the manifest file.
    pub path: PathBuf,
    pub server: Server,
    pub files: Vec<Files>,
    /// The SQL sources of every engine (`[sqlite]`, `[postgres]`, `[mysql]`), in file order.
    pub databases: Vec<DatabaseDef>,
    pub git: Vec<Git>,
    pub templates: Vec<Template>,
    pub tools: Vec<Tool>,
    pub prompts: Vec<Prompt>,
    pub skills: Vec<Skills>,
    pub groups: Vec<Group>,
    /// The tools' views (`view = …` of an entry with a tool), in manifest order.
    pub views: Vec<ToolView>,
}

impl Manifest {
    /// The group of that name.
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }
}

#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    pub version: String,
    pub instructions: Option<String>,
    pub page_size: usize,
    pub resource_tools: bool,
    /// Every resource template is also a typed tool (`template_tools`).
    pub template_tools: bool,
    /// The change-notification window.
    pub debounce: Duration,
    /// `path`: folders put before the inherited `PATH` for every process, absolute.
    pub path: Vec<PathBuf>,
    /// `max_processes`: tool processes running at once.
    pub max_processes: usize,
    /// `[server.http]`: serving over Streamable HTTP.
    pub http: Http,
    /// `expose`: what clients of the default endpoint see.
    pub expose: Filter,
    /// What the server card says (`title`, `description`, `website`, …).
    pub about: About,
}

#[derive(Debug, Clone)]
pub struct Files {
    pub name: String,
    pub loc: Loc,
    /// Absolute, not yet canonical (the registry checks it exists).
    pub root: PathBuf,
    pub root_loc: Loc,
    pub include: Vec<(String, Loc)>,
    pub exclude: Vec<(String, Loc)>,
    pub gitignore: bool,
    pub hidden: bool,
    pub max_size: u64,
    pub watch: bool,
    /// `watch = "poll"`: look for changes this often (`poll_interval`) instead of asking the
    /// system.
    pub poll: Option<Duration>,
    pub description: Option<String>,
    /// Searched by the built-in `search_files` tool.
    pub search: bool,
}

/// Default `poll_interval` of a polled files source.
pub const DEFAULT_FILES_POLL: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct Query {
    pub name: String,
    /// The query's tool (`template_tools`); `None`: no tool.
    pub tool: Option<String>,
    pub description: Option<String>,
    pub sql: String,
    pub sql_loc: Loc,
    pub params: Vec<Param>,
}

/// A typed parameter of a tool or a named query.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub loc: Loc,
    pub ty: ParamType,
    pub description: Option<String>,
    pub default: Option<serde_json::Value>,
    pub required: bool,
    pub enum_values: Option<Vec<serde_json::Value>>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub pattern: Option<String>,
    /// A value may begin an argv element with `-` (tool `command` parameters, template vars).
    pub allow_dash: bool,
}

impl Param {
    /// A required string and no other rule: what a variable nobody declared is.
    pub fn string(name: &str, loc: Loc) -> Param {
        Param {
            name: name.to_owned(),
            loc,
            ty: ParamType::String,
            description: None,
            default: None,
            required: true,
            enum_values: None,
            minimum: None,
            maximum: None,
            pattern: None,
            allow_dash: false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Git {
    pub name: String,
    pub loc: Loc,
    pub path: PathBuf,
    pub path_loc: Loc,
    pub log_limit: u64,
    pub watch: bool,
    pub description: Option<String>,
    /// The tools of `commit/{rev}` and `blob/{rev}/{+path}` (`template_tools`); `None`: none.
    pub commit_tool: Option<String>,
    pub file_tool: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Template {
    pub name: String,
    pub loc: Loc,
    pub uri: String,
    pub uri_loc: Loc,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub backend: TemplateBackend,
    /// Static completion values per variable, in file order.
    pub completions: IndexMap<String, Vec<String>>,
    pub completions_loc: IndexMap<String, Loc>,
    /// Declared rules per variable (`vars.VAR`), in file order, each with its `required` as
    /// written (the default depends on where the variable stands in the URI template).
    pub vars: Vec<(Param, Option<bool>)>,
    /// The template's tool (`template_tools`); `None`: no tool.
    pub tool: Option<String>,
}

#[derive(Debug, Clone)]
pub enum TemplateBackend {
    /// `file = "notes/{topic}.md"`: a path template; the result must stay inside `root`.
    File {
        path: String,
        path_loc: Loc,
        root: PathBuf,
        /// Dotfiles, dot-folders and the manifest are served (`.git` never is).
        hidden: bool,
        /// `.gitignore` / `.ignore` rules hide what they ignore.
        gitignore: bool,
        /// The manifest file, never served unless `hidden`.
        manifest: PathBuf,
    },
    /// `sqlite = "shop"` (or `postgres = "crm"`, `mysql = "shop"`) + `sql`: variables bind to
    /// `:var`.
    Sql {
        /// The engine's section.
        section: &'static str,
        source: String,
        sql: String,
        sql_loc: Loc,
    },
    /// `command = [...]`: stdout is the content.
    Command(Command),
}

/// A process to run: argv (with `{name}` placeholders still in it) and its limits.
#[derive(Debug, Clone)]
pub struct Command {
    pub argv: Vec<ArgvItem>,
    pub cwd: PathBuf,
    /// Where `cwd` is written (the entry's name when it is the default).
    pub cwd_loc: Loc,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub max_output: u64,
}

/// One element of `command`, placeholders still in it. The first element is the program: an
/// `Arg` without placeholders, made absolute against the manifest folder when it holds a `/`.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgvItem {
    /// One argument.
    Arg(String, Loc),
    /// A group of arguments kept or dropped as a whole (`["--max-count", "{max}"]`).
    Group(Vec<(String, Loc)>, Loc),
}

#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    pub description: Option<String>,
    pub title: Option<String>,
    pub exec: Exec,
    pub cwd: PathBuf,
    /// Where `cwd` is written (the tool's name when it is the default).
    pub cwd_loc: Loc,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub max_output: u64,
    pub output: OutputKind,
    pub output_schema: Option<(serde_json::Value, Loc)>,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
    /// Exit codes that are success (never empty).
    pub ok_exit_codes: Vec<i32>,
    pub params: Vec<Param>,
}

#[derive(Debug, Clone)]
pub enum Exec {
    /// argv, no shell; elements still hold their `{param}` placeholders.
    Command(Vec<ArgvItem>),
    /// A script for its shell (`sh -c` unless `shell` says otherwise); parameters arrive as
    /// environment variables.
    Run(String, Loc, crate::process::Shell),
}

#[derive(Debug, Clone)]
pub struct Prompt {
    pub name: String,
    pub description: Option<String>,
    pub title: Option<String>,
    pub args: Vec<PromptArg>,
    pub messages: Vec<Message>,
}

#[derive(Debug, Clone)]
pub struct PromptArg {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
    pub completions: Vec<String>,
    /// The value used when the argument is not given.
    pub default: Option<String>,
    /// A `[files]` source whose paths complete this argument.
    pub complete_from: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Message {
    pub role: Role,
    pub content: MessageContent,
    /// Where the `text` or `resource` value is written.
    pub content_loc: Loc,
}

#[derive(Debug, Clone)]
pub enum MessageContent {
    /// Text with `{arg}` placeholders.
    Text(String),
    /// A URI (template) read through this server and embedded.
    Resource(String),
    /// A file of a `[files]` source by its relative path (a template), embedded.
    File { source: String, path: String },
}

/// Reads and checks the manifest at `path`; `display` is how to name the file in messages.
pub fn load(path: &Path, display: &str) -> Result<Manifest, Diagnostics> {
    check(path, display).into_result()
}

/// What checking a manifest found: every problem, and the entries that have none, so that the
/// checks that need the filesystem (`Registry::build`) and `check`'s cross-section checks still
/// run on them. One problem never hides another.
#[derive(Debug)]
pub struct Checked {
    /// The manifest without the entries that have problems; `None` when the text is not TOML.
    pub manifest: Option<Manifest>,
    /// Every problem found (errors only).
    pub diags: Diagnostics,
    /// Whether an entry of a source section (files, sqlite, postgres, git, templates) was set
    /// aside: checks that ask "can any source serve this?" would then be guesses.
    pub sources_dropped: bool,
}

impl Checked {
    /// The manifest when nothing is wrong, else every problem.
    pub fn into_result(self) -> Result<Manifest, Diagnostics> {
        match self.manifest {
            Some(m) if self.diags.is_empty() => Ok(m),
            _ => Err(self.diags.finish()),
        }
    }

    fn failed(diags: Diagnostics) -> Checked {
        Checked {
            manifest: None,
            diags: diags.finish(),
            sources_dropped: true,
        }
    }
}

/// `load`, keeping what is valid (see `Checked`).
pub fn check(path: &Path, display: &str) -> Checked {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let text = match read_text(path) {
        Ok(t) => t,
        Err(e) => {
            let mut d = Diagnostics::new(display);
            let cwd = std::env::current_dir()
                .map_or_else(|e| format!("unknown ({e})"), |p| p.display().to_string());
            // A missing manifest is most often one not written yet.
            let hint = if e.kind() == std::io::ErrorKind::NotFound {
                let folder = abs
                    .parent()
                    .map_or_else(|| ".".into(), |p| p.display().to_string());
                format!(
                    "; `mcp-manifest init {folder}` writes a starter manifest from what the folder holds"
                )
            } else {
                String::new()
            };
            d.push(
                Loc { line: 1, col: 1 },
                format!(
                    "cannot read the manifest: {e} (tried {}; working directory {cwd}){hint}",
                    abs.display()
                ),
            );
            return Checked::failed(d);
        }
    };
    let dir = abs
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let env = |name: &str| std::env::var(name).ok();
    check_str(&text, display, &abs, &dir, &env)
}

/// The largest manifest read (a manifest is a page of TOML; this only stops a runaway file).
const MAX_MANIFEST: u64 = 16 * 1024 * 1024;

/// Reads the manifest: only a regular file (a FIFO or device put in its place is refused, never
/// waited on), at most `MAX_MANIFEST` bytes, UTF-8.
fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let (file, _) = crate::providers::platform::open_regular(path)?;
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
    let databases = crate::providers::sql::section::take(doc.get_mut());

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
struct Declared {
    /// Each SQL engine's section and the names it declares.
    databases: Vec<(&'static str, Vec<String>)>,
    /// How many entries the source sections hold.
    sources: usize,
}

impl Declared {
    fn of(doc: &Spanned<DeTable<'_>>) -> Declared {
        let names = |section: &str| -> Vec<String> {
            match doc.get_ref().get(section).map(|v| v.get_ref()) {
                Some(DeValue::Table(t)) => t.iter().map(|(k, _)| k.get_ref().to_string()).collect(),
                _ => Vec::new(),
            }
        };
        let databases = crate::providers::sql::section::declared(doc.get_ref());
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
const NAMED_SECTIONS: [&str; 5] = ["files", "git", "templates", "tools", "prompts"];

fn named_sections() -> impl Iterator<Item = &'static str> {
    NAMED_SECTIONS
        .into_iter()
        .chain(crate::providers::sql::section::section_names())
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

/// The built-in content search over `[files]` sources with `search = true`.
pub const SEARCH_TOOL_NAME: &str = "search_files";

/// The error for a prompt naming a `[files]` source that does not exist.
fn unknown_files_source(prompt: &str, given: &str, files: &[&str]) -> String {
    if files.is_empty() {
        format!("prompt `{prompt}`: no [files] source `{given}` (this manifest has none)")
    } else {
        let known: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
        format!(
            "prompt `{prompt}`: no [files] source `{given}`; the sources are: {}",
            known.join(", ")
        )
    }
}

/// Names of the tools `resource_tools = true` adds.
pub const RESOURCE_TOOL_NAMES: [&str; 2] = ["list_resources", "read_resource"];

/// Checks the raw manifest into the checked one, reporting into `diags`. The SQL engines'
/// sections (`providers::sql`) use its helpers.
pub(crate) struct Checker<'a> {
    map: &'a SourceMap,
    diags: &'a mut Diagnostics,
    dir: &'a Path,
    /// The manifest file itself.
    path: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl Checker<'_> {
    pub(crate) fn loc<T>(&self, sp: &Sp<T>) -> Loc {
        self.map.loc(sp.span().start)
    }

    pub(crate) fn err<T>(&mut self, at: &Sp<T>, msg: impl Into<String>) {
        let loc = self.loc(at);
        self.diags.push(loc, msg);
    }

    /// How many problems were reported so far.
    pub(crate) fn problems(&self) -> usize {
        self.diags.items.len()
    }

    /// An error at byte `offset` of the manifest.
    pub(crate) fn err_at(&mut self, offset: usize, msg: impl Into<String>) {
        let loc = self.map.loc(offset);
        self.diags.push(loc, msg);
    }

    fn text(s: &Option<Sp<String>>) -> Option<String> {
        s.as_ref().map(|s| s.get().clone())
    }

    /// A path from the manifest, made absolute against the manifest folder (`~/` is the home folder).
    pub(crate) fn path(&self, s: &str) -> PathBuf {
        let p = match s.strip_prefix("~/") {
            Some(rest) => match (self.env)("HOME") {
                Some(home) => PathBuf::from(home).join(rest),
                None => PathBuf::from(s),
            },
            None => PathBuf::from(s),
        };
        let joined = if p.is_absolute() { p } else { self.dir.join(p) };
        normalize(&joined)
    }

    fn size(&mut self, v: &Option<Sp<SizeValue>>, default: u64) -> u64 {
        match v {
            None => default,
            Some(sp) => match sp.get() {
                SizeValue::Bytes(n) => *n,
                SizeValue::Text(t) => match expand::parse_size(t) {
                    Ok(n) => n,
                    Err(e) => {
                        self.err(sp, e);
                        default
                    }
                },
            },
        }
    }

    /// A `max_size`: a size, at most `MAX_MAX_SIZE` (a larger one is an error and the cap).
    pub(crate) fn max_size(&mut self, v: &Option<Sp<SizeValue>>) -> u64 {
        let n = self.size(v, DEFAULT_MAX_SIZE);
        if n > MAX_MAX_SIZE
            && let Some(sp) = v
        {
            let got = match expand::format_size(n) {
                rounded if rounded.contains('.') => format!("{n} bytes"),
                exact => exact,
            };
            self.err(
                sp,
                format!(
                    "`max_size` must be at most {} (what is read is held in memory whole), got {got}",
                    expand::format_size(MAX_MAX_SIZE)
                ),
            );
            return MAX_MAX_SIZE;
        }
        n
    }

    pub(crate) fn duration(
        &mut self,
        v: &Option<Sp<raw::DurationStr>>,
        default: Duration,
    ) -> Duration {
        match v {
            None => default,
            Some(sp) => match expand::parse_duration(&sp.get().0) {
                Ok(d) => d,
                Err(e) => {
                    self.err(sp, e);
                    default
                }
            },
        }
    }

    fn env_vars(&mut self, env: &IndexMap<Key, Sp<String>>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (k, v) in env {
            let name = k.get();
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                self.err(
                    k,
                    format!("`{name}` is not a valid environment variable name"),
                );
            }
            out.push((name.clone(), v.get().clone()));
        }
        out
    }

    /// `f`'s entry, or `None` when checking it found a problem (it is reported; the entry is
    /// set aside so the checks that come later do not trip over it again). Used for the entries
    /// whose problems leave them without a meaning (a template without one backend, a postgres
    /// source without a URL); the others keep a default for the value in error, so the checks
    /// of the registry still run on the rest of them.
    fn clean<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let before = self.diags.items.len();
        let entry = f(self);
        entry.filter(|_| self.diags.items.len() == before)
    }

    fn manifest(
        &mut self,
        mut raw: RawManifest,
        taken: &crate::providers::sql::section::Taken<'_>,
        display: &str,
        path: &Path,
        declared: &Declared,
    ) -> Manifest {
        let server = self.server(raw.server.take().unwrap_or_default());
        let files = raw.files.iter().map(|(k, v)| self.files(k, v)).collect();
        let databases = taken.check(self);
        let git = raw.git.iter().map(|(k, v)| self.git(k, v)).collect();
        let templates = raw
            .templates
            .iter()
            .filter_map(|(k, v)| {
                let refs = taken.template_refs(k.get());
                self.clean(|c| Some(c.template(k, v, refs, &declared.databases)))
            })
            // A `sql` template over a source set aside for its own problem is set aside too.
            .filter(|t| match &t.backend {
                TemplateBackend::Sql {
                    section, source, ..
                } => databases
                    .iter()
                    .any(|d| d.section == *section && &d.name == source),
                _ => true,
            })
            .collect();
        let tools = raw
            .tools
            .iter()
            .filter_map(|(k, v)| self.tool(k, v, server.resource_tools))
            .collect();
        let files_names: Vec<&str> = raw.files.keys().map(|k| k.get().as_str()).collect();
        let prompts = raw
            .prompts
            .iter()
            .map(|(k, v)| self.prompt(k, v, &files_names))
            .collect();
        if raw.files.values().any(|f| f.search.unwrap_or(true)) {
            for k in raw.tools.keys().filter(|k| k.get() == SEARCH_TOOL_NAME) {
                self.err(
                    k,
                    format!("tool `{SEARCH_TOOL_NAME}` clashes with the built-in search tool of that name; rename it or set `search = false` on every [files] source"),
                );
            }
        }
        let skills = raw.skills.iter().map(|(k, v)| self.skills(k, v)).collect();
        let groups = raw
            .groups
            .iter()
            .map(|(k, v)| {
                let map = self.map;
                let diags = &mut *self.diags;
                groups::group(k, v, &|sp| map.loc(sp.span().start), &mut |sp, msg| {
                    diags.push(map.loc(sp.span().start), msg)
                })
            })
            .collect();
        let mut m = Manifest {
            file: display.to_owned(),
            path: path.to_path_buf(),
            server,
            files,
            databases,
            git,
            templates,
            tools,
            prompts,
            skills,
            groups,
            views: Vec::new(),
        };
        self.template_tools(&raw, taken, &mut m);
        m.views = self.views(&raw, taken, &m);
        m
    }

    fn server(&mut self, s: raw::RawServer) -> Server {
        let default_name = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "mcp-manifest".into());
        let page_size = match &s.page_size {
            Some(p) if *p.get() == 0 => {
                self.err(p, "`page_size` must be at least 1");
                100
            }
            Some(p) => usize::try_from(*p.get()).unwrap_or(usize::MAX),
            None => 100,
        };
        let max_processes = match &s.max_processes {
            Some(p) if *p.get() == 0 => {
                self.err(p, "`max_processes` must be at least 1");
                DEFAULT_MAX_PROCESSES
            }
            Some(p) if *p.get() > MAX_MAX_PROCESSES as u64 => {
                self.err(
                    p,
                    format!(
                        "`max_processes` must be at most {MAX_MAX_PROCESSES}, found {}",
                        p.get()
                    ),
                );
                DEFAULT_MAX_PROCESSES
            }
            Some(p) => usize::try_from(*p.get()).unwrap_or(DEFAULT_MAX_PROCESSES),
            None => DEFAULT_MAX_PROCESSES,
        };
        Server {
            name: Self::text(&s.name).unwrap_or(default_name),
            version: Self::text(&s.version).unwrap_or_else(|| env!("CARGO_PKG_VERSION").into()),
            instructions: Self::text(&s.instructions),
            page_size,
            resource_tools: s.resource_tools.unwrap_or(true),
            template_tools: s.template_tools.unwrap_or(true),
            debounce: self.duration(&s.debounce, DEFAULT_DEBOUNCE),
            path: self.search_path(&s.path),
            max_processes,
            expose: self.expose(&s.expose),
            about: self.about(&s),
            http: self.http(s.http),
        }
    }

    fn expose(&mut self, raw: &Option<raw::RawGroup>) -> Filter {
        let Some(raw) = raw else {
            return Filter::everything();
        };
        let map = self.map;
        let diags = &mut *self.diags;
        groups::filter(raw, &|sp| map.loc(sp.span().start), &mut |sp, msg| {
            diags.push(map.loc(sp.span().start), msg)
        })
    }

    fn about(&mut self, s: &raw::RawServer) -> About {
        let map = self.map;
        let diags = &mut *self.diags;
        let mut about = about::about(
            &s.title,
            &s.description,
            &s.website,
            &s.repository,
            &s.icons,
            &mut |sp, msg| diags.push(map.loc(sp.span().start), msg),
        );
        if let Some(h) = &s.http {
            if let Some(u) = &h.public_url {
                match about::http_url(u.get()) {
                    Ok(u) => about.public_url = Some(u),
                    Err(e) => self.err(u, format!("[server.http] `public_url`: {e}")),
                }
            }
            about.catalog = h.catalog.unwrap_or(false);
        }
        about
    }

    fn skills(&mut self, key: &Key, s: &raw::RawSkills) -> Skills {
        if let Some(p) = &s.prefix
            && !about::valid_prefix(p.get())
        {
            self.err(
                p,
                format!(
                    "[skills.{}] `prefix` must be `/`-separated segments of letters, digits, `.`, `-`, `_`, `~`, found `{}`",
                    key.get(),
                    p.get()
                ),
            );
        }
        Skills {
            name: key.get().clone(),
            loc: self.loc(key),
            root: self.path(s.root.get()),
            root_loc: self.loc(&s.root),
            gitignore: s.gitignore.unwrap_or(true),
            watch: s.watch.unwrap_or(true),
            prefix: s
                .prefix
                .as_ref()
                .map(|p| p.get().clone())
                .filter(|p| about::valid_prefix(p)),
        }
    }

    fn files(&mut self, key: &Key, f: &raw::RawFiles) -> Files {
        let globs = |this: &mut Self, list: &Option<Vec<Sp<String>>>| -> Vec<(String, Loc)> {
            let mut out = Vec::new();
            for g in list.iter().flatten() {
                if let Err(e) = globset::Glob::new(g.get()) {
                    this.err(g, format!("invalid glob `{}`: {}", g.get(), e.kind()));
                }
                out.push((g.get().clone(), this.loc(g)));
            }
            out
        };
        let include = match &f.include {
            None => vec![("**/*".to_owned(), self.loc(key))],
            Some(_) => globs(self, &f.include),
        };
        let exclude = globs(self, &f.exclude);
        let poll_interval = self.duration(&f.poll_interval, DEFAULT_FILES_POLL);
        if let Some(t) = &f.poll_interval
            && poll_interval < Duration::from_millis(100)
        {
            self.err(
                t,
                format!(
                    "[files.{}] `poll_interval` must be at least 100ms",
                    key.get()
                ),
            );
        }
        let (watch, poll) = match f.watch {
            None | Some(raw::RawWatch::On(true)) => (true, None),
            Some(raw::RawWatch::On(false)) => (false, None),
            Some(raw::RawWatch::Poll) => (true, Some(poll_interval)),
        };
        Files {
            name: key.get().clone(),
            loc: self.loc(key),
            root: self.path(f.root.get()),
            root_loc: self.loc(&f.root),
            include,
            exclude,
            gitignore: f.gitignore.unwrap_or(true),
            hidden: f.hidden.unwrap_or(false),
            max_size: self.max_size(&f.max_size),
            watch,
            poll,
            description: Self::text(&f.description),
            search: f.search.unwrap_or(true),
        }
    }

    pub(crate) fn queries(&mut self, queries: &IndexMap<Key, raw::RawQuery>) -> Vec<Query> {
        queries
            .iter()
            .map(|(qk, q)| Query {
                name: qk.get().clone(),
                tool: None,
                description: Self::text(&q.description),
                sql: q.sql.get().clone(),
                sql_loc: self.loc(&q.sql),
                params: {
                    for a in q.params.values().filter_map(|p| p.allow_dash.as_ref()) {
                        self.err(
                            a,
                            "`allow_dash` is for values passed to a program; query parameters are bound to SQL, never passed as arguments",
                        );
                    }
                    self.params(&q.params)
                },
            })
            .collect()
    }

    fn params(&mut self, params: &IndexMap<Key, RawParam>) -> Vec<Param> {
        params.iter().map(|(k, p)| self.param(k, p)).collect()
    }

    fn param(&mut self, key: &Key, p: &RawParam) -> Param {
        let name = key.get().clone();
        let ty = p.ty.as_ref().map_or(ParamType::String, |t| *t.get());
        let default = p.default.as_ref().map(|d| d.get().clone());
        if let Some(d) = &p.default
            && !value_fits(ty, d.get())
        {
            self.err(
                d,
                format!(
                    "the default of `{name}` must be {} (its type)",
                    type_phrase(ty)
                ),
            );
        }
        if let (Some(true), Some(d)) = (p.required, &p.default) {
            self.err(
                d,
                format!("`{name}` has a default, so it cannot be `required = true`"),
            );
        }
        if let Some(values) = &p.enum_values {
            if values.get().is_empty() {
                self.err(values, format!("`enum` of `{name}` is empty"));
            }
            if let Some(bad) = values.get().iter().find(|v| !value_fits(ty, v)) {
                self.err(
                    values,
                    format!(
                        "`enum` of `{name}` holds {bad}, which is not {}",
                        type_phrase(ty)
                    ),
                );
            }
        }
        for bound in [&p.minimum, &p.maximum].into_iter().flatten() {
            if !matches!(ty, ParamType::Integer | ParamType::Number) {
                self.err(
                    bound,
                    format!(
                        "`minimum` / `maximum` need an integer or number parameter; `{name}` is {}",
                        type_phrase(ty)
                    ),
                );
            }
        }
        if let (Some(min), Some(max)) = (&p.minimum, &p.maximum)
            && min.get() > max.get()
        {
            self.err(
                min,
                format!("`minimum` of `{name}` is larger than its `maximum`"),
            );
        }
        if let Some(pat) = &p.pattern {
            if !matches!(ty, ParamType::String | ParamType::Array) {
                self.err(
                    pat,
                    format!(
                        "`pattern` needs a string parameter; `{name}` is {}",
                        type_phrase(ty)
                    ),
                );
            }
            if let Err(e) = crate::pattern::Pattern::new(pat.get()) {
                self.err(
                    pat,
                    format!("invalid `pattern` for `{name}`: {}", last_line(&e)),
                );
            }
        }
        if let Some(d) = &p.default
            && value_fits(ty, d.get())
            && let Some(why) = default_breaks(p, d.get())
        {
            self.err(d, format!("the default of `{name}` {why}"));
        }
        Param {
            loc: self.loc(key),
            required: p.required.unwrap_or(p.default.is_none()),
            name,
            ty,
            description: Self::text(&p.description),
            default,
            enum_values: p.enum_values.as_ref().map(|v| v.get().clone()),
            minimum: p.minimum.as_ref().map(|v| *v.get()),
            maximum: p.maximum.as_ref().map(|v| *v.get()),
            pattern: p.pattern.as_ref().map(|v| v.get().clone()),
            allow_dash: p.allow_dash.as_ref().is_some_and(|v| *v.get()),
        }
    }

    fn git(&mut self, key: &Key, g: &raw::RawGit) -> Git {
        Git {
            name: key.get().clone(),
            loc: self.loc(key),
            path: self.path(g.path.get()),
            path_loc: self.loc(&g.path),
            log_limit: g.log_limit.as_ref().map_or(50, |r| *r.get()),
            watch: g.watch.unwrap_or(true),
            description: Self::text(&g.description),
            commit_tool: None,
            file_tool: None,
        }
    }

    /// Checks the shape of a `command` array (placeholders are checked when the registry builds
    /// the entry, against its parameters): a program first, no empty group.
    fn argv(&mut self, argv: &[Sp<RawArg>], at: &Key, what: &str) -> Vec<ArgvItem> {
        let mut out = Vec::with_capacity(argv.len());
        for (i, item) in argv.iter().enumerate() {
            let loc = self.loc(item);
            match item.get() {
                RawArg::One(program) if i == 0 => {
                    if program.is_empty() {
                        self.err(
                            item,
                            format!("{what}: the program (first element of `command`) is empty"),
                        );
                    }
                    let program = if program.contains('/') {
                        self.path(program).to_string_lossy().into_owned()
                    } else {
                        program.clone()
                    };
                    out.push(ArgvItem::Arg(program, loc));
                }
                RawArg::One(arg) => out.push(ArgvItem::Arg(arg.clone(), loc)),
                RawArg::Group(_) if i == 0 => {
                    self.err(item, format!("{what}: the first element of `command` is the program, a string, not a group"));
                }
                RawArg::Group(items) if items.is_empty() => {
                    self.err(item, format!("{what}: an empty group in `command`"));
                }
                RawArg::Group(items) => out.push(ArgvItem::Group(
                    items
                        .iter()
                        .map(|a| (a.get().clone(), self.loc(a)))
                        .collect(),
                    loc,
                )),
            }
        }
        if argv.is_empty() {
            self.err(
                at,
                format!("{what}: `command` needs at least a program name"),
            );
        }
        out
    }

    fn cwd(&self, cwd: &Option<Sp<String>>, at: &Key) -> (PathBuf, Loc) {
        match cwd {
            Some(c) => (self.path(c.get()), self.loc(c)),
            None => (self.dir.to_path_buf(), self.loc(at)),
        }
    }

    fn command(
        &mut self,
        argv: &[Sp<RawArg>],
        at: &Key,
        cwd: &Option<Sp<String>>,
        env: &IndexMap<Key, Sp<String>>,
        timeout: &Option<Sp<raw::DurationStr>>,
        max_output: &Option<Sp<SizeValue>>,
    ) -> Command {
        let (cwd, cwd_loc) = self.cwd(cwd, at);
        Command {
            argv: self.argv(argv, at, &format!("template `{}`", at.get())),
            cwd,
            cwd_loc,
            env: self.env_vars(env),
            timeout: self.duration(timeout, DEFAULT_TIMEOUT),
            max_output: self.size(max_output, DEFAULT_MAX_OUTPUT),
        }
    }

    fn template(
        &mut self,
        key: &Key,
        t: &raw::RawTemplate,
        db_refs: &[(&'static str, Sp<String>)],
        declared: &[(&'static str, Vec<String>)],
    ) -> Template {
        use crate::providers::sql::section as sql;
        let name = key.get().clone();
        let backends = [
            t.file.is_some(),
            !db_refs.is_empty() || t.sql.is_some(),
            t.command.is_some(),
        ];
        let count = backends.iter().filter(|b| **b).count();
        if count != 1 {
            self.err(
                key,
                format!(
                    "template `{name}` needs exactly one backend: `file`, {}, or `command` (found {count})",
                    sql::backend_keys()
                ),
            );
        }
        let not_with = |this: &mut Self, field: &str, present: bool, backend: &str| {
            if present {
                this.err(
                    key,
                    format!("`{field}` only applies to the `{backend}` backend"),
                );
            }
        };
        if t.file.is_none() {
            not_with(self, "root", t.root.is_some(), "file");
            not_with(self, "hidden", t.hidden.is_some(), "file");
            not_with(self, "gitignore", t.gitignore.is_some(), "file");
        }
        if t.command.is_none() {
            not_with(self, "cwd", t.cwd.is_some(), "command");
            not_with(self, "env", !t.env.is_empty(), "command");
            not_with(self, "timeout", t.timeout.is_some(), "command");
            not_with(self, "max_output", t.max_output.is_some(), "command");
        }
        let backend = if let Some(file) = &t.file {
            TemplateBackend::File {
                path: file.get().clone(),
                path_loc: self.loc(file),
                root: t
                    .root
                    .as_ref()
                    .map_or_else(|| self.dir.to_path_buf(), |r| self.path(r.get())),
                hidden: t.hidden.unwrap_or(false),
                gitignore: t.gitignore.unwrap_or(true),
                manifest: self.path.to_path_buf(),
            }
        } else if let Some(argv) = &t.command {
            TemplateBackend::Command(self.command(
                argv,
                key,
                &t.cwd,
                &t.env,
                &t.timeout,
                &t.max_output,
            ))
        } else {
            let db = sql::template_source(self, &name, db_refs, declared);
            let nothing = || TemplateBackend::File {
                path: String::new(),
                path_loc: Loc::default(),
                root: self.dir.to_path_buf(),
                hidden: false,
                gitignore: true,
                manifest: self.path.to_path_buf(),
            };
            match (db, &t.sql) {
                (Some((section, src)), Some(sql)) => TemplateBackend::Sql {
                    section,
                    source: src.get().clone(),
                    sql: sql.get().clone(),
                    sql_loc: self.loc(sql),
                },
                (Some((section, src)), None) => {
                    self.err(
                        &src,
                        format!("template `{name}` has `{section}` but no `sql`"),
                    );
                    nothing()
                }
                (None, Some(sql)) => {
                    self.err(
                        sql,
                        format!(
                            "template `{name}` has `sql` but no {} source",
                            sql::either_key()
                        ),
                    );
                    nothing()
                }
                (None, None) => nothing(),
            }
        };
        let mut completions = IndexMap::new();
        let mut completions_loc = IndexMap::new();
        for (var, values) in &t.completions {
            completions.insert(
                var.get().clone(),
                values.iter().map(|v| v.get().clone()).collect(),
            );
            completions_loc.insert(var.get().clone(), self.loc(var));
        }
        let vars = t
            .vars
            .iter()
            .map(|(k, p)| (self.param(k, p), p.required))
            .collect();
        Template {
            vars,
            tool: None,
            name,
            loc: self.loc(key),
            uri: t.uri.get().clone(),
            uri_loc: self.loc(&t.uri),
            description: Self::text(&t.description),
            mime_type: Self::text(&t.mime_type),
            backend,
            completions,
            completions_loc,
        }
    }

    fn tool(&mut self, key: &Key, t: &raw::RawTool, resource_tools: bool) -> Option<Tool> {
        let name = key.get().clone();
        if resource_tools && RESOURCE_TOOL_NAMES.contains(&name.as_str()) {
            self.err(
                key,
                format!("tool `{name}` clashes with the built-in resource tool of that name; rename it or set `resource_tools = false` in [server]"),
            );
        }
        let exec = match (&t.command, &t.run) {
            (Some(argv), None) => {
                if let Some(shell) = &t.shell {
                    self.err(
                        shell,
                        format!("tool `{name}`: `shell` is for `run` scripts; `command` runs its program without a shell"),
                    );
                }
                Exec::Command(self.argv(argv, key, &format!("tool `{name}`")))
            }
            (None, Some(script)) => {
                let shell = match (&t.shell, crate::process::Shell::default_here()) {
                    (Some(shell), _) => *shell.get(),
                    (None, Some(default)) => default,
                    (None, None) => {
                        self.err(
                            script,
                            format!("tool `{name}`: `run` needs `shell = \"powershell\"`, \"pwsh\", \"cmd\" or \"sh\" on this system (there is no default shell here)"),
                        );
                        return None;
                    }
                };
                Exec::Run(script.get().clone(), self.loc(script), shell)
            }
            (Some(_), Some(run)) => {
                self.err(
                    run,
                    format!("tool `{name}` has both `command` and `run`; keep one"),
                );
                return None;
            }
            (None, None) => {
                self.err(
                    key,
                    format!("tool `{name}` needs `command` (argv) or `run` (a script)"),
                );
                return None;
            }
        };
        let output = t.output.as_ref().map_or(OutputKind::Text, |o| *o.get());
        if let Some(schema) = &t.output_schema {
            if output != OutputKind::Json {
                self.err(
                    schema,
                    format!("tool `{name}` has `output_schema` but not `output = \"json\"`"),
                );
            }
            match schema.get().get("type") {
                _ if !schema.get().is_object() => self.err(
                    schema,
                    format!("`output_schema` of tool `{name}` must be a table (a JSON Schema object)"),
                ),
                Some(ty) if ty != "object" => self.err(
                    schema,
                    format!("`output_schema` of tool `{name}` must describe an object (`type = \"object\"`): structured content is always a JSON object"),
                ),
                _ => {}
            }
        }
        let (cwd, cwd_loc) = self.cwd(&t.cwd, key);
        // MCP's defaults unless the manifest says otherwise: a read-only tool is not destructive.
        let read_only = t.read_only.as_ref().is_some_and(|r| *r.get());
        let destructive = match &t.destructive {
            Some(d) if read_only && *d.get() => {
                self.err(
                    d,
                    format!("tool `{name}` cannot be both `read_only` and `destructive`; a tool that only reads changes nothing"),
                );
                false
            }
            Some(d) => *d.get(),
            None => !read_only,
        };
        Some(Tool {
            description: Self::text(&t.description),
            title: Self::text(&t.title),
            exec,
            cwd,
            cwd_loc,
            env: self.env_vars(&t.env),
            timeout: self.duration(&t.timeout, DEFAULT_TIMEOUT),
            max_output: self.size(&t.max_output, DEFAULT_MAX_OUTPUT),
            output,
            output_schema: t
                .output_schema
                .as_ref()
                .map(|s| (s.get().clone(), self.loc(s))),
            read_only,
            destructive,
            idempotent: t.idempotent.unwrap_or(false),
            open_world: t.open_world.unwrap_or(true),
            ok_exit_codes: self.ok_exit_codes(&t.ok_exit_codes, &name),
            params: self.params(&t.params),
            name,
        })
    }

    /// `[server] path`: folders, absolute; `:` cannot be inside one (it separates `PATH`).
    fn search_path(&mut self, list: &Option<Vec<Sp<String>>>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for p in list.iter().flatten() {
            if p.get().is_empty() || p.get().contains(':') || p.get().contains('\0') {
                self.err(
                    p,
                    format!(
                        "`path` entry `{}` cannot be used in PATH: it is empty or holds `:` or a NUL",
                        p.get().escape_debug()
                    ),
                );
                continue;
            }
            out.push(self.path(p.get()));
        }
        out
    }

    /// `ok_exit_codes`: a non-empty list of exit codes (0–255); `[0]` when not written.
    fn ok_exit_codes(
        &mut self,
        codes: &Option<Sp<Vec<Sp<raw::OkExitCode>>>>,
        tool: &str,
    ) -> Vec<i32> {
        let Some(list) = codes else {
            return vec![0];
        };
        if list.get().is_empty() {
            self.err(
                list,
                format!("`ok_exit_codes` of tool `{tool}` is empty; list the exit codes that mean success (e.g. [0])"),
            );
            return vec![0];
        }
        let mut out = Vec::new();
        for c in list.get() {
            match i32::try_from(c.get().0) {
                Ok(code) if (0..=255).contains(&code) => {
                    if !out.contains(&code) {
                        out.push(code);
                    }
                }
                _ => self.err(
                    c,
                    format!(
                        "`ok_exit_codes` of tool `{tool}`: an exit code is 0 to 255, found {}",
                        c.get().0
                    ),
                ),
            }
        }
        out
    }

    fn prompt(&mut self, key: &Key, p: &raw::RawPrompt, files: &[&str]) -> Prompt {
        let name = key.get().clone();
        let args = p
            .args
            .iter()
            .map(|(k, a)| PromptArg {
                name: k.get().clone(),
                description: Self::text(&a.description),
                required: a.required.unwrap_or(false),
                completions: a
                    .completions
                    .iter()
                    .flatten()
                    .map(|c| c.get().clone())
                    .collect(),
                default: Self::text(&a.default),
                complete_from: Self::text(&a.complete_from),
            })
            .collect();
        for a in p.args.values() {
            if let Some(src) = &a.complete_from
                && !files.contains(&src.get().as_str())
            {
                self.err(src, unknown_files_source(&name, src.get(), files));
            }
        }
        let mut messages = Vec::new();
        for m in &p.messages {
            let (content, content_loc) = match (&m.text, &m.resource, &m.file) {
                (Some(t), None, None) => (MessageContent::Text(t.get().clone()), self.loc(t)),
                (None, Some(r), None) => (MessageContent::Resource(r.get().clone()), self.loc(r)),
                (None, None, Some(f)) => {
                    if !files.contains(&f.source.get().as_str()) {
                        self.err(
                            &f.source,
                            unknown_files_source(&name, f.source.get(), files),
                        );
                    }
                    let content = MessageContent::File {
                        source: f.source.get().clone(),
                        path: f.path.get().clone(),
                    };
                    (content, self.loc(&f.path))
                }
                _ => {
                    self.err(
                        &m.role,
                        format!(
                            "a message of prompt `{name}` needs exactly one of `text`, `resource` or `file`"
                        ),
                    );
                    continue;
                }
            };
            messages.push(Message {
                role: *m.role.get(),
                content,
                content_loc,
            });
        }
        if p.messages.is_empty() {
            self.err(key, format!("prompt `{name}` has no `messages`"));
        }
        Prompt {
            description: Self::text(&p.description),
            title: Self::text(&p.title),
            args,
            messages,
            name,
        }
    }
}

impl Checker<'_> {
    /// Names the tools `template_tools` makes (each entry's `tool` setting applied) and reports
    /// two tools with one name, from any section, naming both entries.
    fn template_tools(
        &mut self,
        raw: &RawManifest,
        databases: &crate::providers::sql::section::Taken<'_>,
        m: &mut Manifest,
    ) {
        // (name, where, which entry) of every tool so far, built-ins first.
        let mut taken: Vec<(String, Option<Loc>, String)> = Vec::new();
        if m.server.resource_tools {
            for n in RESOURCE_TOOL_NAMES {
                taken.push((n.to_owned(), None, "the built-in resource tool".into()));
            }
        }
        if raw.files.values().any(|f| f.search.unwrap_or(true)) {
            taken.push((
                SEARCH_TOOL_NAME.to_owned(),
                None,
                "the built-in search tool".into(),
            ));
        }
        for (k, _) in &raw.tools {
            taken.push((
                k.get().clone(),
                Some(self.loc(k)),
                format!("[tools.{}]", k.get()),
            ));
        }
        let on = m.server.template_tools;
        // Entries in file order, so the later of two clashing entries is the one reported.
        let mut wanted: Vec<(Loc, Want)> = Vec::new();
        for (loc, w) in crate::providers::sql::section::wanted_tools(self, databases, on) {
            wanted.push((loc, Want::Database(w)));
        }
        for (i, (k, g)) in raw.git.iter().enumerate() {
            let entry = format!("[git.{}]", k.get());
            let prefix = self.tool_name(on, &g.tool, k.get().clone(), &entry);
            let commit = prefix.as_ref().map(|p| format!("{p}_commit"));
            let file = prefix.as_ref().map(|p| format!("{p}_file"));
            wanted.push((self.loc(k), Want::GitCommit(i, commit, entry.clone())));
            wanted.push((self.loc(k), Want::GitFile(i, file, entry)));
        }
        for (i, (k, t)) in raw.templates.iter().enumerate() {
            let entry = format!("[templates.{}]", k.get());
            let name = self.tool_name(on, &t.tool, k.get().clone(), &entry);
            wanted.push((self.loc(k), Want::Template(i, name, entry)));
        }
        wanted.sort_by_key(|(loc, _)| (loc.line, loc.col));
        for (loc, want) in wanted {
            let (name, entry) = want.name_and_entry();
            let Some(name) = name else { continue };
            if let Some((_, other_loc, other)) = taken.iter().find(|(n, _, _)| *n == name) {
                let at = match other_loc {
                    Some(l) => format!(" ({}:{}:{})", m.file, l.line, l.col),
                    None => String::new(),
                };
                let hint = if other_loc.is_none() && name == SEARCH_TOOL_NAME {
                    format!(
                        "set `tool = \"…\"` on {entry} (or `search = false` on every [files] source)"
                    )
                } else if other_loc.is_none() {
                    format!(
                        "set `tool = \"…\"` on {entry} (or `resource_tools = false` in [server])"
                    )
                } else {
                    "set `tool = \"…\"` (or `tool = false`) on one of them".to_owned()
                };
                self.diags.push(
                    loc,
                    format!("tool `{name}` of {entry} has the same name as {other}{at}; {hint}"),
                );
                continue;
            }
            taken.push((name.clone(), Some(loc), entry.clone()));
            let name = Some(name);
            // `i` counts the entries as written; an entry set aside for its own problem is
            // missing from `m`, so the checked entry is found by its name.
            let i = want.index();
            let key = |keys: &mut dyn Iterator<Item = &Key>| keys.nth(i).map(|k| k.get().clone());
            match want {
                Want::Database(w) => w.apply(databases, &mut m.databases, name),
                Want::GitCommit(..) => {
                    if let Some(e) = key(&mut raw.git.keys())
                        .and_then(|n| m.git.iter_mut().find(|e| e.name == n))
                    {
                        e.commit_tool = name;
                    }
                }
                Want::GitFile(..) => {
                    if let Some(e) = key(&mut raw.git.keys())
                        .and_then(|n| m.git.iter_mut().find(|e| e.name == n))
                    {
                        e.file_tool = name;
                    }
                }
                Want::Template(..) => {
                    if let Some(e) = key(&mut raw.templates.keys())
                        .and_then(|n| m.templates.iter_mut().find(|e| e.name == n))
                    {
                        e.tool = name;
                    }
                }
            }
        }
    }

    /// The tool name an entry asks for: `None` when `template_tools` is off or `tool = false`.
    pub(crate) fn tool_name(
        &mut self,
        on: bool,
        setting: &Option<Sp<raw::RawToolSetting>>,
        default: String,
        entry: &str,
    ) -> Option<String> {
        match setting.as_ref().map(|s| (s, s.get())) {
            _ if !on => None,
            None | Some((_, raw::RawToolSetting::On(true))) => Some(default),
            Some((_, raw::RawToolSetting::On(false))) => None,
            Some((at, raw::RawToolSetting::Named(n))) => {
                let ok = !n.is_empty()
                    && n.len() <= 128
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
                if !ok {
                    self.err(
                        at,
                        format!("{entry} `tool = \"{}\"` is not a tool name: use 1 to 128 letters, digits, `_`, `-` or `.`", n.escape_debug()),
                    );
                    return None;
                }
                Some(n.clone())
            }
        }
    }
}

/// One tool `template_tools` would make: indexes into the manifest's sections, its name (`None`:
/// none) and the entry, for messages.
enum Want {
    Database(crate::providers::sql::section::WantedTool),
    GitCommit(usize, Option<String>, String),
    GitFile(usize, Option<String>, String),
    Template(usize, Option<String>, String),
}

impl Want {
    /// The entry's position among its section's entries as written.
    fn index(&self) -> usize {
        match self {
            Want::Database(_) => 0,
            Want::GitCommit(i, ..) | Want::GitFile(i, ..) | Want::Template(i, ..) => *i,
        }
    }

    fn name_and_entry(&self) -> (Option<String>, String) {
        match self {
            Want::Database(w) => w.name_and_entry(),
            Want::GitCommit(_, n, e) | Want::GitFile(_, n, e) | Want::Template(_, n, e) => {
                (n.clone(), e.clone())
            }
        }
    }
}

/// Removes `.` and resolves `..` lexically (no filesystem access; symlinks are the registry's job).
pub fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Which of its own rules (`enum`, `pattern`, `minimum`, `maximum`) a parameter's default breaks,
/// worded as a value's problem is when a call brings it ("must be at most 200, got 500").
fn default_breaks(p: &RawParam, default: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let show = |v: &Value| v.to_string();
    let items: Vec<&Value> = match default {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    for item in items {
        if let Some(allowed) = &p.enum_values
            && !allowed
                .get()
                .iter()
                .any(|a| a == item || a.as_f64().is_some_and(|x| Some(x) == item.as_f64()))
        {
            let list: Vec<String> = allowed.get().iter().map(show).collect();
            return Some(format!(
                "must be one of {}, got {}",
                list.join(", "),
                show(item)
            ));
        }
        if let (Some(pattern), Some(text)) = (&p.pattern, item.as_str())
            && let Ok(re) = crate::pattern::Pattern::new(pattern.get())
            && !re.is_match(text)
        {
            return Some(format!(
                "must match the pattern `{}`, got {}",
                pattern.get(),
                show(item)
            ));
        }
    }
    let x = default.as_f64()?;
    let number = |n: f64| {
        if n.fract() == 0.0 && n.abs() < 9.0e15 {
            format!("{}", n as i64)
        } else {
            n.to_string()
        }
    };
    if let Some(min) = &p.minimum
        && x < *min.get()
    {
        return Some(format!(
            "must be at least {}, got {}",
            number(*min.get()),
            show(default)
        ));
    }
    if let Some(max) = &p.maximum
        && x > *max.get()
    {
        return Some(format!(
            "must be at most {}, got {}",
            number(*max.get()),
            show(default)
        ));
    }
    None
}

fn value_fits(ty: ParamType, v: &serde_json::Value) -> bool {
    match ty {
        ParamType::String => v.is_string(),
        ParamType::Integer => v.is_i64() || v.is_u64(),
        ParamType::Number => v.is_number(),
        ParamType::Boolean => v.is_boolean(),
        ParamType::Array => v
            .as_array()
            .is_some_and(|a| a.iter().all(serde_json::Value::is_string)),
    }
}

pub fn type_phrase(ty: ParamType) -> &'static str {
    match ty {
        ParamType::String => "a string",
        ParamType::Integer => "an integer",
        ParamType::Number => "a number",
        ParamType::Boolean => "a boolean",
        ParamType::Array => "an array of strings",
    }
}

/// The last line of a multi-line error (regex errors end with the reason).
fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or(s).trim()
}
