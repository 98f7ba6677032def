//! `init`: a commented starter manifest for a folder, from what the folder holds: a git
//! repository, documentation, source folders, SQLite files (found by their header), folders of
//! agent skills (`.agents/skills`, `.claude/skills`, `skills/` holding `*/SKILL.md`).
//!
//! The walk is bounded (depth, entries, header reads) so a huge tree stays fast; it never
//! follows symlinks and skips `.git`, `node_modules`, `target`, hidden and ignored folders (what
//! a files source hides: `providers::visible`); ignored files are not proposed as documentation.
//! Every proposed section is checked on its own as `check` would (a database that does not open
//! is left out, with the reason), then the whole manifest is built before it is written: what
//! `init` writes passes `check`.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::providers::visible::{Frames, Visibility};
use crate::registry::Registry;

/// The manifest's file name in the folder.
pub(crate) const MANIFEST: &str = "mcp-server.toml";
/// The JSON Schema written beside it, named by its `#:schema` line.
pub(crate) const SCHEMA: &str = "mcp-server.schema.json";

/// How deep the walk goes below the folder.
const MAX_DEPTH: usize = 8;
/// Entries looked at before the walk stops.
const MAX_ENTRIES: usize = 50_000;
/// Files whose first bytes are read to find SQLite databases.
const MAX_HEADER_READS: usize = 5_000;
/// Databases put in the manifest (more are named in the report).
const MAX_DATABASES: usize = 10;
/// Folders served as source folders when found at the top.
const SOURCE_DIRS: &[&str] = &[
    "src", "lib", "app", "pkg", "cmd", "internal", "include", "crates", "packages", "tests",
    "test", "examples", "scripts",
];
/// Folders of documentation when found at the top.
const DOC_DIRS: &[&str] = &["docs", "doc", "documentation"];
/// Extensions of documentation files, served wherever they are (outside source folders).
const DOC_EXTS: &[&str] = &["md", "markdown", "mdx", "rst", "adoc"];
/// Folders never entered (besides hidden and gitignored ones).
const SKIP_DIRS: &[&str] = &["node_modules", "target"];
/// The first 16 bytes of every SQLite 3 database.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// What the walk found in the folder.
#[derive(Debug, Default, Clone)]
pub(crate) struct Findings {
    /// The git repository's work tree (the folder or one above it).
    pub git: Option<PathBuf>,
    /// `README*` files at the top.
    pub readmes: Vec<String>,
    /// Build manifests at the top (`Cargo.toml`, `pyproject.toml`, `package.json`), served with
    /// the documentation: they say what the project is and how it builds.
    pub build_files: Vec<String>,
    /// The test command the project's build manifest names, when its program is on PATH.
    pub test: Option<TestRunner>,
    /// Documentation files (by extension) outside the source folders, by extension.
    pub doc_exts: Vec<(String, usize)>,
    /// Documentation folders at the top.
    pub doc_dirs: Vec<String>,
    /// Source folders at the top.
    pub source_dirs: Vec<String>,
    /// SQLite files, relative, `/`-separated, in walk order.
    pub databases: Vec<String>,
    /// Folders of agent skills (`SKILL_ROOTS` that hold a `*/SKILL.md`) and how many skills
    /// each holds.
    pub skills: Vec<(&'static str, usize)>,
    /// Regular files that are none of the above (and not the manifest or its schema).
    pub other_files: usize,
    /// Names from `SKIP_DIRS` seen (served sources exclude them too).
    pub skipped: Vec<String>,
    /// Entries looked at; whether a bound stopped the walk early.
    pub entries: usize,
    pub truncated: bool,
    pub elapsed: Duration,
}

/// Walks `dir` (canonical) within the bounds.
pub(crate) fn inspect(dir: &Path) -> Findings {
    let start = Instant::now();
    let mut f = Findings {
        git: git2::Repository::discover(dir)
            .ok()
            .and_then(|r| r.workdir().map(Path::to_path_buf)),
        ..Findings::default()
    };
    let mut header_reads = 0;
    let mut doc_counts: Vec<(String, usize)> = Vec::new();
    // What a files source of `dir` would hide (dot names, `.git`, ignore files).
    let vis = Visibility::new(dir, false, true);
    // (folder, path relative to `dir`, depth, the ignore rules in force above it)
    let mut queue: VecDeque<(PathBuf, String, usize, Frames)> = VecDeque::new();
    queue.push_back((dir.to_path_buf(), String::new(), 0, vis.frames()));
    'walk: while let Some((folder, rel, depth, mut matchers)) = queue.pop_front() {
        vis.enter(&mut matchers, &folder);
        let Ok(read) = std::fs::read_dir(&folder) else {
            continue;
        };
        let mut entries: Vec<_> = read.flatten().collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        let in_source = rel
            .split('/')
            .next()
            .is_some_and(|top| f.source_dirs.iter().any(|s| s == top));
        for entry in entries {
            if f.entries >= MAX_ENTRIES {
                f.truncated = true;
                break 'walk;
            }
            f.entries += 1;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !vis.entry_shown(&name, entry.metadata().ok().as_ref()) {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let child_rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if kind.is_dir() {
                if SKIP_DIRS.contains(&name.as_str()) {
                    if !f.skipped.contains(&name) {
                        f.skipped.push(name);
                    }
                    continue;
                }
                if matchers.ignores(&path, true) {
                    continue;
                }
                if depth == 0 {
                    if SOURCE_DIRS.contains(&name.as_str()) {
                        f.source_dirs.push(name.clone());
                    } else if DOC_DIRS.contains(&name.as_str()) {
                        f.doc_dirs.push(name.clone());
                    }
                }
                if depth + 1 < MAX_DEPTH {
                    queue.push_back((path, child_rel, depth + 1, matchers.clone()));
                } else {
                    f.truncated = true;
                }
                continue;
            }
            if !kind.is_file() {
                continue; // symlinks are never followed
            }
            if depth == 0 && (name == MANIFEST || name == SCHEMA) {
                continue;
            }
            // Not served by a files source of the folder: not proposed as documentation.
            let ignored = matchers.ignores(&path, false);
            if depth == 0 && !ignored && name.to_ascii_lowercase().starts_with("readme") {
                f.readmes.push(name.clone());
            }
            if depth == 0 && BUILD_FILES.contains(&name.as_str()) {
                f.build_files.push(name.clone());
            }
            let ext = Path::new(&name)
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase);
            if let Some(ext) = ext.filter(|e| DOC_EXTS.contains(&e.as_str())) {
                if !in_source && !ignored {
                    match doc_counts.iter_mut().find(|(e, _)| *e == ext) {
                        Some((_, n)) => *n += 1,
                        None => doc_counts.push((ext, 1)),
                    }
                }
                continue;
            }
            // A database has at least one 512-byte page.
            let big_enough = entry.metadata().is_ok_and(|m| m.len() >= 512);
            if big_enough && header_reads < MAX_HEADER_READS {
                header_reads += 1;
                if is_sqlite(&path) {
                    f.databases.push(child_rel);
                    continue;
                }
            } else if big_enough {
                f.truncated = true;
            }
            if !name.to_ascii_lowercase().starts_with("readme") {
                f.other_files += 1;
            }
        }
    }
    f.doc_exts = doc_counts;
    f.test = test_runner(dir, &f.build_files);
    f.skills = SKILL_ROOTS
        .iter()
        .filter_map(|root| Some((*root, skills_in(dir, root)?)))
        .collect();
    f.elapsed = start.elapsed();
    f
}

/// Where agents keep skills, each a folder holding a `SKILL.md`: the cross-agent place, Claude
/// Code's, and a plain `skills/` folder. The first two are hidden, so the walk does not enter
/// them: they are looked at directly.
const SKILL_ROOTS: &[&str] = &[".agents/skills", ".claude/skills", "skills"];
/// Folders of a skills root looked at.
const MAX_SKILL_FOLDERS: usize = 1_000;

/// How many folders of `dir/root` hold a `SKILL.md` file; `None` when none does, or when the
/// root or a folder on the way to it is a symlink (never followed).
fn skills_in(dir: &Path, root: &str) -> Option<usize> {
    let mut at = dir.to_path_buf();
    for part in root.split('/') {
        at.push(part);
        if !std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
            return None;
        }
    }
    let count = std::fs::read_dir(&at)
        .ok()?
        .flatten()
        .take(MAX_SKILL_FOLDERS)
        .filter(|e| {
            let hidden = e.file_name().to_string_lossy().starts_with('.');
            !hidden
                && e.file_type().is_ok_and(|t| t.is_dir())
                && std::fs::symlink_metadata(e.path().join("SKILL.md")).is_ok_and(|m| m.is_file())
        })
        .count();
    (count > 0).then_some(count)
}

/// Build manifests served with the documentation when found at the top.
const BUILD_FILES: &[&str] = &["Cargo.toml", "pyproject.toml", "package.json"];

/// A project's test command, offered as a `test` tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TestRunner {
    pub argv: Vec<&'static str>,
    /// What found it, for the report.
    pub why: &'static str,
}

/// The test runner `dir`'s build manifest names, when its program is on PATH (init offers
/// nothing it cannot back): `cargo test` for Cargo.toml, `npm test` for a package.json with a
/// `test` script, `pytest` for a pyproject.toml (or a tests/ folder) with pytest installed.
fn test_runner(dir: &Path, build_files: &[String]) -> Option<TestRunner> {
    let has = |f: &str| build_files.iter().any(|b| b == f);
    let on_path = |program: &str| {
        std::env::var_os("PATH").is_some_and(|p| {
            std::env::split_paths(&p).any(|d| d.is_absolute() && d.join(program).is_file())
        })
    };
    if has("Cargo.toml") && on_path("cargo") {
        return Some(TestRunner {
            argv: vec!["cargo", "test", "--quiet"],
            why: "Cargo.toml",
        });
    }
    if has("package.json") && on_path("npm") {
        let script = std::fs::read(dir.join("package.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["scripts"]["test"].as_str().map(str::to_owned));
        // npm's placeholder script only fails: no test there.
        if script.is_some_and(|s| !s.contains("no test specified")) {
            return Some(TestRunner {
                argv: vec!["npm", "test", "--silent"],
                why: "package.json's test script",
            });
        }
    }
    let python_tests = has("pyproject.toml") || dir.join("tests").is_dir();
    if python_tests && on_path("pytest") && (has("pyproject.toml") || has_python_tests(dir)) {
        return Some(TestRunner {
            argv: vec!["pytest", "-q"],
            why: "pytest",
        });
    }
    None
}

/// Whether `dir/tests` holds a `test_*.py` file.
fn has_python_tests(dir: &Path) -> bool {
    std::fs::read_dir(dir.join("tests")).is_ok_and(|r| {
        r.flatten().any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("test_") && n.ends_with(".py")
        })
    })
}

fn is_sqlite(path: &Path) -> bool {
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == SQLITE_HEADER)
}

/// One proposed `[kind.name]` section.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    pub kind: &'static str,
    pub name: String,
    /// Comment lines above the header (without `# `).
    pub comment: Vec<String>,
    /// `key = value` lines.
    pub body: Vec<String>,
    /// What the report says about it.
    pub summary: String,
}

impl Section {
    fn text(&self) -> String {
        let mut s = String::new();
        for c in &self.comment {
            let _ = writeln!(s, "# {c}");
        }
        let _ = writeln!(s, "[{}.{}]", self.kind, self.name);
        for line in &self.body {
            let _ = writeln!(s, "{line}");
        }
        s
    }
}

/// The sections `findings` suggest, in the order they are written.
pub(crate) fn propose(f: &Findings) -> Vec<Section> {
    let mut out = Vec::new();
    if let Some(top) = &f.git {
        out.push(Section {
            kind: "git",
            name: "repo".into(),
            comment: vec![
                "The git repository: git://repo/log, status, branches, diff, commit/{rev},".into(),
                "blob/{rev}/{+path}. Read only: nothing here writes to the repository.".into(),
            ],
            body: vec!["path = \".\"".into(), "log_limit = 50".into()],
            summary: format!(
                "git repository   {}",
                shown(top.display().to_string().trim_end_matches('/'))
            ),
        });
    }
    let mut include = Vec::new();
    if !f.readmes.is_empty() {
        include.push("README*".to_owned());
    }
    include.extend(f.build_files.iter().cloned());
    for (ext, _) in &f.doc_exts {
        include.push(format!("**/*.{ext}"));
    }
    for d in &f.doc_dirs {
        include.push(format!("{d}/**"));
    }
    let skipped: Vec<String> = f.skipped.iter().map(|d| format!("**/{d}/**")).collect();
    // A skills folder is served by its own section (as `skill://`), not as documentation too.
    let skill_dirs: Vec<String> = f
        .skills
        .iter()
        .filter(|(root, _)| !root.starts_with('.'))
        .map(|(root, _)| format!("{root}/**"))
        .collect();
    if !include.is_empty() {
        let mut exclude: Vec<String> = f.source_dirs.iter().map(|d| format!("{d}/**")).collect();
        exclude.extend(skill_dirs.iter().cloned());
        exclude.extend(skipped.iter().cloned());
        let mut body = vec![
            "root = \".\"".to_owned(),
            format!("include = {}", toml_array(&include)),
        ];
        if !exclude.is_empty() {
            body.push(format!("exclude = {}", toml_array(&exclude)));
        }
        body.push("description = \"Documentation\"".into());
        let mut what: Vec<String> = f.readmes.iter().map(|r| shown(r)).collect();
        what.extend(f.build_files.iter().cloned());
        for (ext, n) in &f.doc_exts {
            what.push(format!(
                "{n} *.{ext} file{}",
                if *n == 1 { "" } else { "s" }
            ));
        }
        for d in &f.doc_dirs {
            what.push(format!("{d}/"));
        }
        out.push(Section {
            kind: "files",
            name: "docs".into(),
            comment: vec![
                "Documentation. Each file is a resource (file:// + its path); gitignored and"
                    .into(),
                "hidden files are not served.".into(),
            ],
            body,
            summary: format!("documentation    {}", what.join(", ")),
        });
    }
    for d in &f.source_dirs {
        out.push(Section {
            kind: "files",
            name: d.clone(),
            comment: vec![format!("The `{d}` folder.")],
            body: vec![
                format!("root = {}", toml_str(d)),
                format!("description = {}", toml_str(&format!("Files in {d}/"))),
            ],
            summary: format!("source folder    {d}/"),
        });
    }
    if include.is_empty() && f.source_dirs.is_empty() && f.other_files > 0 {
        let mut body = vec!["root = \".\"".to_owned()];
        // A path with glob characters stays served as a file too (harmless): it cannot be an
        // exact glob.
        let mut exclude: Vec<String> = f
            .databases
            .iter()
            .take(MAX_DATABASES)
            .filter(|p| !p.contains(['*', '?', '[', ']', '{', '}', '\\']))
            .cloned()
            .collect();
        exclude.extend(skill_dirs.iter().cloned());
        exclude.extend(skipped.iter().cloned());
        if !exclude.is_empty() {
            body.push(format!("exclude = {}", toml_array(&exclude)));
        }
        body.push("description = \"The files of this folder\"".into());
        out.push(Section {
            kind: "files",
            name: "files".into(),
            comment: vec!["Every file of this folder.".into()],
            body,
            summary: format!(
                "files            {} other file{} in the folder",
                f.other_files,
                if f.other_files == 1 { "" } else { "s" }
            ),
        });
    }
    for (i, (root, count)) in f.skills.iter().enumerate() {
        // `.agents/skills` → `agents`, `.claude/skills` → `claude`, `skills` → `skills`.
        let name = root
            .trim_start_matches('.')
            .split('/')
            .next()
            .unwrap_or("skills");
        let mut body = vec![format!("root = {}", toml_str(root))];
        if i > 0 {
            // Two roots may hold skills of the same name: the later ones' URIs get a prefix.
            body.push(format!("prefix = {}", toml_str(name)));
        }
        let uri = if i > 0 {
            format!("skill://{name}/NAME/SKILL.md")
        } else {
            "skill://NAME/SKILL.md".to_owned()
        };
        out.push(Section {
            kind: "skills",
            name: name.to_owned(),
            comment: vec![
                format!("Agent skills: every folder of {root} holding a SKILL.md, served as the"),
                format!("Skills extension (skills/list, skills/get) and as resources ({uri})."),
            ],
            body,
            summary: format!(
                "agent skills     {root}/ ({count} skill{})",
                if *count == 1 { "" } else { "s" }
            ),
        });
    }
    if let Some(t) = &f.test {
        let argv: Vec<String> = t.argv.iter().map(|a| (*a).to_owned()).collect();
        out.push(Section {
            kind: "tools",
            name: "test".into(),
            comment: vec![format!(
                "Runs the project's tests ({}); a failure is the tool's error.",
                t.why
            )],
            body: vec![
                format!("command = {}", toml_array(&argv)),
                "description = \"Run the project's test suite and return its output\"".into(),
                "timeout = \"10m\"".into(),
                "read_only = true".into(),
            ],
            summary: format!("test tool        {}", t.argv.join(" ")),
        });
    }
    let mut names: Vec<String> = Vec::new();
    for db in f.databases.iter().take(MAX_DATABASES) {
        let name = unique(source_name(db), &names);
        names.push(name.clone());
        out.push(Section {
            kind: "sqlite",
            name: name.clone(),
            comment: vec![
                format!(
                    "The SQLite database {}, opened read-only: sqlite://{name}/schema and",
                    shown(db)
                ),
                format!("sqlite://{name}/tables/{{table}}. A named query becomes a tool too:"),
                format!("  [sqlite.{name}.queries.recent]"),
                "  sql = \"SELECT * FROM some_table ORDER BY rowid DESC LIMIT :n\"".into(),
                "  params.n = { type = \"integer\", default = 10 }".into(),
            ],
            body: vec![
                format!("path = {}", toml_str(db)),
                format!("description = {}", toml_str(&format!("The database {db}"))),
            ],
            summary: format!("SQLite database  {}", shown(db)),
        });
    }
    out
}

/// A source name (`[a-z][a-z0-9_-]*`) from a database's file name.
fn source_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = match file.rsplit_once('.') {
        Some((s, _)) if !s.is_empty() => s,
        _ => file,
    };
    let mut out = String::new();
    for c in stem.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
        if out.len() >= 40 {
            break;
        }
    }
    let out = out.trim_matches('_').to_owned();
    if out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out
    } else {
        format!("db_{out}").trim_end_matches('_').to_owned()
    }
}

fn unique(name: String, taken: &[String]) -> String {
    if !taken.contains(&name) {
        return name;
    }
    (2..)
        .map(|n| format!("{name}_{n}"))
        .find(|c| !taken.contains(c))
        .unwrap_or(name)
}

/// `name` safe to write in a comment or print: control characters (newline, CR, tab, DEL, C1),
/// line and paragraph separators, bidirectional overrides and other invisible format
/// characters become `\u{…}` escapes, so a hostile file name can never end a comment and add
/// live TOML, nor move a terminal's cursor. A name with none is shown as it is (a Windows
/// path keeps its single backslashes, so a printed command can be pasted); one with some also
/// gets its backslashes doubled, so an escape cannot be confused with the name's own text.
pub(crate) fn shown(name: &str) -> String {
    fn invisible(c: char) -> bool {
        c.is_control()
            || matches!(c as u32, 0x2028 | 0x2029 | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0xFEFF | 0xFFF9..=0xFFFB | 0x061C | 0x180E)
    }
    if !name.chars().any(invisible) {
        return name.to_owned();
    }
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c == '\\' {
            out.push_str("\\\\");
        } else if invisible(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// A TOML basic string holding `s` exactly: quotes, backslashes and control characters
/// escaped, and `${` written `$${` so the manifest's `${VAR}` expansion leaves it alone.
pub(crate) fn toml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '$' if chars.peek() == Some(&'{') => out.push_str("$$"),
            c if c.is_control()
                || matches!(c as u32, 0x2028 | 0x2029 | 0x202A..=0x202E | 0x2066..=0x2069 | 0xFEFF) =>
            {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn toml_array(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| toml_str(s)).collect();
    format!("[{}]", quoted.join(", "))
}

/// The manifest text: a header, `[server]`, the accepted sections, and commented examples.
pub(crate) fn render(server_name: &str, sections: &[Section]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "#:schema ./{SCHEMA}");
    s.push_str(
        "# What mcp-manifest serves from this folder to AI assistants over MCP. Written by\n\
         # `mcp-manifest init`; edit freely. Relative paths are relative to this file's folder.\n\
         #   mcp-manifest check mcp-server.toml                    validate (every error at once)\n\
         #   mcp-manifest list mcp-server.toml                     what an assistant will see\n\
         #   mcp-manifest register claude-desktop mcp-server.toml  add it to a client\n\
         #     (or claude-code, cursor, vscode, windsurf, codex, gemini, copilot, qwen, opencode)\n\
         # Every key: the README's manifest reference, or `mcp-manifest schema`.\n\n",
    );
    s.push_str("[server]\n");
    let _ = writeln!(s, "name = {}", toml_str(server_name));
    let _ = writeln!(
        s,
        "instructions = {}",
        toml_str(&instructions(server_name, sections))
    );
    s.push_str(
        "# version = \"1.0.0\"        # default: the binary's version\n\
         # page_size = 100          # items per page of every list answer\n\
         # resource_tools = true    # also serve resources through list_resources / read_resource tools\n",
    );
    for section in sections {
        s.push('\n');
        s.push_str(&section.text());
    }
    s.push_str(EXAMPLES);
    if !sections.iter().any(|x| x.kind == "files") {
        s.push_str(FILES_EXAMPLE);
    }
    s
}

/// What the assistant is told the server holds.
fn instructions(name: &str, sections: &[Section]) -> String {
    let mut parts = Vec::new();
    for x in sections {
        let part = match x.kind {
            "git" => "its git history (git://repo/log, git://repo/commit/{rev})".to_owned(),
            "tools" => "a `test` tool that runs its test suite".to_owned(),
            "skills" => format!("the agent skills of `{}` (skills/list)", x.name),
            "sqlite" => format!(
                "the SQLite database `{}` (sqlite://{}/schema first)",
                x.name, x.name
            ),
            _ if x.name == "docs" => {
                "its documentation (the files source `docs`; list_resources lists them)".to_owned()
            }
            _ => format!("the files of `{}`", x.name),
        };
        parts.push(part);
    }
    if parts.is_empty() {
        return format!("Serves the folder `{name}`.");
    }
    format!("Serves the folder `{name}`: {}.", parts.join("; "))
}

/// Commented examples of what a manifest can add, after the sections.
const EXAMPLES: &str = r#"
# More you can add (uncomment and adapt; `mcp-manifest check` says what is wrong):
#
# [tools.grep]
# description = "Search the files for a regular expression (grep -E); prints FILE:LINE:TEXT"
# command = ["grep", "-rnE", "--", "{pattern}", "."]
# ok_exit_codes = [0, 1]   # grep exits 1 when no line matches: an answer, not an error
# read_only = true
# params.pattern = { type = "string", description = "Extended regular expression" }
#
# [templates.text]
# uri = "text:///{+path}"
# description = "Any text file of this folder, by its path"
# mime_type = "text/plain"
# file = "{path}"
#
# [prompts.review]
# description = "Review one file"
# args.path = { description = "Path of the file", required = true }
# messages = [{ role = "user", text = "Review {path} for bugs and unclear names." }]
"#;

/// Added when no files source was proposed (an empty folder, say).
const FILES_EXAMPLE: &str = r#"#
# [files.docs]
# root = "."
# include = ["**/*.md"]
# description = "Documentation"
"#;

/// Loads and builds manifest `text` as if it were `dir/mcp-server.toml`, as `check` does.
pub(crate) async fn check_text(text: &str, dir: &Path) -> Result<Registry, String> {
    let path = dir.join(MANIFEST);
    let env = |name: &str| std::env::var(name).ok();
    let manifest = crate::manifest::load_str(text, MANIFEST, &path, dir, &env)
        .map_err(|d| d.to_string().trim_end().to_owned())?;
    Registry::build(manifest, crate::process::Children::new())
        .await
        .map_err(|d| d.to_string().trim_end().to_owned())
}

/// Checks one section alone as `check` would: built, and its resources listed. Listing a files
/// source cannot fail (unreadable entries are skipped) and walks its whole tree, so only the
/// other kinds are listed: a huge folder stays fast.
async fn check_section(section: &Section, dir: &Path) -> Result<(), String> {
    let registry = check_text(&section.text(), dir).await?;
    if section.kind != "files" {
        let listed = registry
            .list_resources()
            .await
            .map_err(|e| format!("listing its resources failed: {e}"))?;
        if section.kind == "skills" && listed.is_empty() {
            return Err(
                "no skill in it is served (hidden or gitignored, or no SKILL.md front matter with `name` and `description`)"
                    .to_owned(),
            );
        }
    }
    Ok(())
}

/// The sections of `proposed` that pass `check` on their own, and the reasons for the others.
pub(crate) async fn accept(
    proposed: Vec<Section>,
    dir: &Path,
) -> (Vec<Section>, Vec<(Section, String)>) {
    let mut ok = Vec::new();
    let mut left_out = Vec::new();
    for s in proposed {
        match check_section(&s, dir).await {
            Ok(()) => ok.push(s),
            Err(why) => {
                // The first line names the problem, after `FILE:LINE:COL:`.
                let first = why.lines().next().unwrap_or("");
                let why = match first.strip_prefix(&format!("{MANIFEST}:")) {
                    Some(rest) => rest.splitn(3, ':').nth(2).unwrap_or(rest).trim().to_owned(),
                    None => first.to_owned(),
                };
                left_out.push((s, why));
            }
        }
    }
    (ok, left_out)
}

/// The report printed after the walk.
pub(crate) fn report(
    dir: &Path,
    f: &Findings,
    accepted: &[Section],
    left_out: &[(Section, String)],
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Looked at {} ({} entries in {:.2} s{}):",
        shown(&dir.display().to_string()),
        f.entries,
        f.elapsed.as_secs_f64(),
        if f.truncated {
            "; stopped at the walk's bounds, deeper or later entries were not looked at"
        } else {
            ""
        }
    );
    if accepted.is_empty() && left_out.is_empty() {
        let _ = writeln!(
            s,
            "  nothing to serve yet: no git repository, documentation, source folder, skills or SQLite file"
        );
    }
    for x in accepted {
        let _ = writeln!(s, "  {}", x.summary);
    }
    for (x, why) in left_out {
        let _ = writeln!(s, "  {}  (left out: {})", x.summary, shown(why));
    }
    let more = f.databases.len().saturating_sub(MAX_DATABASES);
    if more > 0 {
        let _ = writeln!(
            s,
            "  and {more} more SQLite files, not added (add them as [sqlite.NAME] sections): {}",
            f.databases[MAX_DATABASES..]
                .iter()
                .map(|d| shown(d))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_for_toml_and_for_env_expansion() {
        assert_eq!(toml_str("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(toml_str("x${HOME}y$z"), r#""x$${HOME}y$z""#);
        assert_eq!(toml_str("t\u{1}\n"), r#""t\u0001\n""#);
        let parsed: toml::Table =
            toml::from_str(&format!("k = {}", toml_str("é\"\\\u{7f}"))).unwrap();
        assert_eq!(parsed["k"].as_str(), Some("é\"\\\u{7f}"));
    }

    #[test]
    fn names_without_invisible_characters_are_shown_as_they_are() {
        assert_eq!(
            shown(r"C:\Users\me\proj\mcp-server.toml"),
            r"C:\Users\me\proj\mcp-server.toml"
        );
        assert_eq!(shown("a\\b\n"), "a\\\\b\\u{a}");
    }

    #[test]
    fn names_in_comments_cannot_end_the_comment() {
        let hostile =
            "data\n[tools.setup]\r\ncommand = [\"touch\"]\u{2028}\u{202e}\t\u{1b}[2J\\#.db";
        let s = shown(hostile);
        assert!(
            !s.chars()
                .any(|c| c.is_control() || c == '\u{2028}' || c == '\u{202e}'),
            "{s}"
        );
        assert_eq!(
            s,
            "data\\u{a}[tools.setup]\\u{d}\\u{a}command = [\"touch\"]\\u{2028}\\u{202e}\\u{9}\\u{1b}[2J\\\\#.db"
        );
        let sections = propose(&Findings {
            databases: vec![hostile.to_owned()],
            ..Findings::default()
        });
        let text = render("x", &sections);
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert!(parsed.get("tools").is_none(), "{text}");
        let dbs = parsed["sqlite"].as_table().unwrap();
        assert_eq!(dbs.len(), 1);
        let db = dbs.values().next().unwrap();
        assert_eq!(db["path"].as_str(), Some(hostile));
        assert!(!text.contains('\u{2028}'), "{text}");
    }

    #[test]
    fn database_names_become_source_names() {
        assert_eq!(source_name("data/shop.db"), "shop");
        assert_eq!(source_name("My Data.sqlite3"), "my_data");
        assert_eq!(source_name("2024.db"), "db_2024");
        assert_eq!(source_name("a/.db"), "db");
        assert_eq!(source_name("émoji.db"), "moji");
        assert_eq!(
            unique("shop".into(), &["shop".into(), "shop_2".into()]),
            "shop_3"
        );
    }
}
