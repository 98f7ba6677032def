//! The manifest: reading `mcp-server.toml`, checking it, and the checked model every other module
//! builds from. No IO here but reading the file; checks that need the filesystem, a database or a
//! repository happen when the registry is built (`registry.rs`).
//!
//! Two phases, as in ripgrep: `raw` is the manifest as written (serde, spans); `load` turns it
//! into `Manifest`, where paths are absolute, units are parsed, defaults are filled in and every
//! problem is a `Diagnostic` with line and column.

pub mod about;
mod checker;
pub mod diag;
pub mod expand;
mod files;
mod git;
pub mod groups;
mod hints;
mod http;
mod prompts;
pub mod raw;
mod read;
mod skills;
pub mod sql;
mod templates;
mod tools;
mod validate;
mod view;

use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;

pub use about::{About, Skills};
pub(crate) use checker::Checker;
pub use diag::{Diagnostics, Loc, SourceMap};
pub use groups::{Filter, Group};
pub use http::{Http, HttpAuth, Jwks, OAuth, open_listen_refusal, parse_listen};
pub use raw::{OutputKind, ParamType, Role};
use read::read_text;
pub use read::{check_str, load_str};
pub use sql::DatabaseDef;
pub use view::{Chart, ChartKind, ToolView, View};

/// Default cap on a file read (`max_size`).
pub const DEFAULT_MAX_SIZE: u64 = 10 * 1024 * 1024;
/// The largest `max_size` a manifest may set: a read is held in memory whole (and base64 makes
/// it a third larger on the wire).
pub const MAX_MAX_SIZE: u64 = 256 * 1024 * 1024;
pub use crate::process::{DEFAULT_MAX_PROCESSES, MAX_MAX_PROCESSES};
/// Default process timeout for tools and command templates.
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

    /// The group of that name, or why there is none, in the words every command uses (`serve
    /// --group`, `card --group`, `register --group`): what the manifest declares instead.
    pub fn group_or_why(&self, name: &str) -> Result<&Group, String> {
        if let Some(g) = self.group(name) {
            return Ok(g);
        }
        let file = &self.file;
        let names: Vec<&str> = self.groups.iter().map(|g| g.name.as_str()).collect();
        if names.is_empty() {
            return Err(format!(
                "no group `{name}` in {file}: it declares no groups; add a [groups.{name}] section naming the tools, resources and prompts it serves (the README's \"Groups\")"
            ));
        }
        let hint = match diag::did_you_mean(name, names.iter().copied()) {
            Some(m) => format!("did you mean `{m}`? "),
            None => String::new(),
        };
        Err(format!(
            "no group `{name}` in {file}; {hint}its groups are: {}",
            names.join(", ")
        ))
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
                let folder = abs.parent().unwrap_or(Path::new("."));
                format!(
                    "; `mcp-manifest init {}` writes a starter manifest from what the folder holds",
                    shell_word(&folder.display().to_string())
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

/// The built-in content search over `[files]` sources with `search = true`.
pub const SEARCH_TOOL_NAME: &str = "search_files";

/// Names of the tools `resource_tools = true` adds.
pub const RESOURCE_TOOL_NAMES: [&str; 2] = ["list_resources", "read_resource"];

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

pub fn type_phrase(ty: ParamType) -> &'static str {
    match ty {
        ParamType::String => "a string",
        ParamType::Integer => "an integer",
        ParamType::Number => "a number",
        ParamType::Boolean => "a boolean",
        ParamType::Array => "an array of strings",
    }
}

/// `word` as one word of a command a user pastes into a shell: as it is when it holds only
/// characters no shell treats specially, else quoted (single quotes for a POSIX shell on Unix,
/// double quotes for cmd and PowerShell on Windows, where a path cannot hold `"`).
pub(crate) fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || "/._-+=:,@".contains(c)
                || if cfg!(windows) { c == '\\' } else { c == '%' }
        });
    if plain {
        word.to_owned()
    } else if cfg!(windows) {
        format!("\"{word}\"")
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
