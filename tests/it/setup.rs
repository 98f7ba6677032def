//! `init`, `register` / `unregister` and the command line around them, through the real binary:
//! init on a git repository with docs and sources, on a folder with a SQLite file and on an empty
//! folder (each result must pass `check`); every client's file under a temporary HOME and
//! project folder, with other servers and unknown keys that must come through unchanged.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::sqlite::make_db;
use crate::support::{BIN, Fixture, stderr, stdout};

/// Runs the binary in `cwd` with `home` as HOME and no other config-locating variables.
fn run(cwd: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("APPDATA")
        .env_remove("LOCALAPPDATA")
        .env_remove("CODEX_HOME")
        .env_remove("USERPROFILE")
        .stdin(Stdio::null())
        .output()
        .expect("run mcp-manifest")
}

fn ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
    stdout(out)
}

fn failed(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
    stderr(out)
}

/// `check` on the folder's manifest through the binary, from another working directory.
fn checks(f: &Fixture) -> String {
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let manifest = f.path("mcp-server.toml").display().to_string();
    ok(&run(
        elsewhere.path(),
        elsewhere.path(),
        &["check", &manifest],
    ))
}

fn list_json(f: &Fixture) -> Value {
    let out = ok(&run(&f.root(), &f.root(), &["list", "--json"]));
    serde_json::from_str(&out).expect("list --json prints JSON")
}

fn uris(listing: &Value) -> Vec<String> {
    listing["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["uri"].as_str().expect("uri").to_owned())
        .collect()
}

#[test]
fn init_on_a_git_repository_with_docs_and_sources() {
    let f = Fixture::new();
    f.write("README.md", "# Demo\n");
    f.write("docs/guide.md", "# Guide\n");
    f.write("docs/diagram.svg", "<svg/>");
    f.write("notes/idea.md", "an idea\n");
    f.write("src/main.rs", "fn main() {}\n");
    f.write("tests/it.rs", "#[test] fn t() {}\n");
    f.write("node_modules/pkg/README.md", "# not ours\n");
    f.write(".private/secret.md", "hidden\n");
    f.write(".gitignore", "build/\n");
    f.mkdir("build");
    make_db(&f.path("build/cache.db"), "CREATE TABLE t (x);");
    crate::support::git_commit_all(&f.root(), "first");

    let out = ok(&run(&f.root(), &f.root(), &["init"]));
    assert!(out.contains("git repository"), "{out}");
    assert!(out.contains("documentation    README.md"), "{out}");
    assert!(out.contains("source folder    src/"), "{out}");
    assert!(out.contains("source folder    tests/"), "{out}");
    assert!(
        !out.contains("cache.db"),
        "a gitignored folder is not entered: {out}"
    );
    assert!(
        out.contains(&format!(
            "Next:  mcp-manifest check {}",
            f.path("mcp-server.toml").display()
        )),
        "{out}"
    );
    let text = std::fs::read_to_string(f.path("mcp-server.toml")).expect("manifest written");
    assert!(
        text.starts_with("#:schema ./mcp-server.schema.json\n"),
        "{text}"
    );
    for section in ["[git.repo]", "[files.docs]", "[files.src]", "[files.tests]"] {
        assert!(text.contains(section), "{section} in:\n{text}");
    }
    // The schema beside the manifest is the one `schema` prints.
    let schema = ok(&run(&f.root(), &f.root(), &["schema"]));
    assert_eq!(
        std::fs::read_to_string(f.path("mcp-server.schema.json")).expect("schema written"),
        schema
    );

    let summary = checks(&f);
    assert!(summary.contains("1 git"), "{summary}");
    let listing = list_json(&f);
    let uris = uris(&listing);
    for rel in ["README.md", "docs/guide.md", "notes/idea.md", "src/main.rs"] {
        assert!(uris.contains(&f.uri(rel)), "{rel} in {uris:?}");
    }
    assert!(uris.contains(&"git://repo/log".to_owned()), "{uris:?}");
    assert!(
        !uris
            .iter()
            .any(|u| u.contains("node_modules") || u.contains(".private")),
        "{uris:?}"
    );
    // Each file is served once: the docs source leaves the source folders to their own.
    let main_rs = uris.iter().filter(|u| **u == f.uri("src/main.rs")).count();
    assert_eq!(main_rs, 1);

    // A second init refuses and leaves the file; --force rewrites it.
    std::fs::write(f.path("mcp-server.toml"), "# mine\n").expect("edit");
    let err = failed(&run(&f.root(), &f.root(), &["init"]));
    assert!(err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read_to_string(f.path("mcp-server.toml")).expect("kept"),
        "# mine\n"
    );
    ok(&run(&f.root(), &f.root(), &["init", "--force"]));
    assert_eq!(
        std::fs::read_to_string(f.path("mcp-server.toml")).expect("rewritten"),
        text
    );
}

#[test]
fn init_finds_sqlite_files_by_their_header_not_their_extension() {
    let f = Fixture::new();
    f.mkdir("data");
    make_db(
        &f.path("data/store.bin"),
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items (name) VALUES ('pen');",
    );
    // Named like a database, but not one; and one with the header but garbage after it.
    f.write("fake.db", "not a database\n".repeat(100));
    let mut broken = b"SQLite format 3\0".to_vec();
    broken.extend([0xFFu8; 1024]);
    f.write("broken.sqlite", broken);
    f.write("prices.csv", "name,price\npen,1\n");

    let elsewhere = tempfile::tempdir().expect("temp dir");
    let dir = f.root().display().to_string();
    let out = ok(&run(elsewhere.path(), elsewhere.path(), &["init", &dir]));
    assert!(out.contains("SQLite database  data/store.bin"), "{out}");
    assert!(
        out.contains("SQLite database  broken.sqlite  (left out:"),
        "{out}"
    );
    assert!(!out.contains("fake.db"), "{out}");
    let text = std::fs::read_to_string(f.path("mcp-server.toml")).expect("manifest written");
    assert!(
        text.contains("[sqlite.store]\npath = \"data/store.bin\"\n"),
        "{text}"
    );
    assert!(!text.contains("[sqlite.broken]"), "{text}");
    // The other files are served too, the database file itself only as a database.
    assert!(text.contains("[files.files]"), "{text}");

    checks(&f);
    let manifest = f.path("mcp-server.toml").display().to_string();
    let out = ok(&run(
        elsewhere.path(),
        elsewhere.path(),
        &["read", "sqlite://store/tables/items", "-m", &manifest],
    ));
    let rows: Value = serde_json::from_str(&out).expect("JSON rows");
    assert_eq!(rows["rows"][0]["name"], "pen");
    let uris = uris(&list_json(&f));
    assert!(uris.contains(&f.uri("prices.csv")), "{uris:?}");
    assert!(!uris.contains(&f.uri("data/store.bin")), "{uris:?}");
}

#[test]
fn init_in_an_empty_folder_and_its_examples_check() {
    let f = Fixture::new();
    let out = ok(&run(&f.root(), &f.root(), &["init", "."]));
    assert!(out.contains("nothing to serve yet"), "{out}");
    let text = std::fs::read_to_string(f.path("mcp-server.toml")).expect("manifest written");
    let summary = checks(&f);
    assert!(summary.contains("resources  0"), "{summary}");

    // The commented examples are valid manifest text once uncommented.
    let (head, examples) = text
        .split_once("# More you can add")
        .expect("an examples block");
    let uncommented: String = examples
        .lines()
        .skip(1)
        .map(|l| l.strip_prefix("# ").or(l.strip_prefix('#')).unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    f.write("mcp-server.toml", format!("{head}\n{uncommented}\n"));
    let summary = checks(&f);
    assert!(summary.contains("prompts    1"), "{summary}");
    assert!(summary.contains("1 from the manifest"), "{summary}");
    // And each runs, in this folder as init left it (nothing added by hand). The example tool
    // is `grep`, which Windows lacks.
    let root = f.root();
    if cfg!(unix) {
        let out = ok(&run(
            &root,
            &root,
            &["call", "grep", "pattern=no such text anywhere"],
        ));
        assert!(!out.contains("error"), "{out}");
        let out = ok(&run(
            &root,
            &root,
            &["call", "grep", "pattern=^\\[server\\]"],
        ));
        assert!(out.contains("mcp-server.toml:"), "{out}");
    }
    // (The manifest itself is never served; the schema init wrote beside it is.)
    let out = ok(&run(
        &root,
        &root,
        &["read", "text:///mcp-server.schema.json"],
    ));
    assert!(out.contains("\"$schema\""), "{out}");
    let out = ok(&run(&root, &root, &["prompt", "review", "path=src/a.rs"]));
    assert!(out.contains("Review src/a.rs"), "{out}");
    let out = ok(&run(&root, &root, &["list"]));
    assert!(out.contains("docs"), "{out}");
}

#[test]
fn init_serves_build_manifests_and_offers_the_test_runner() {
    let f = Fixture::new();
    f.write(
        "Cargo.toml",
        "[package]\nname = \"t\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    f.write("src/lib.rs", "#[test]\nfn passes() {}\n");
    f.write("README.md", "# T\n");
    let out = ok(&run(&f.root(), &f.root(), &["init", "."]));
    let text = std::fs::read_to_string(f.path("mcp-server.toml")).expect("manifest");
    assert!(text.contains("\"Cargo.toml\""), "{text}");
    let listing = list_json(&f);
    assert!(
        uris(&listing).iter().any(|u| u.ends_with("/Cargo.toml")),
        "{listing}"
    );
    let has_cargo = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("cargo").is_file()));
    assert_eq!(text.contains("[tools.test]"), has_cargo, "{out}\n{text}");
    if has_cargo {
        assert!(out.contains("test tool        cargo test"), "{out}");
        assert!(
            text.contains("command = [\"cargo\", \"test\", \"--quiet\"]"),
            "{text}"
        );
    }
}

#[test]
fn init_walk_is_bounded_and_refuses_what_is_not_a_folder() {
    let f = Fixture::new();
    let deep = (0..12)
        .map(|i| format!("d{i}"))
        .collect::<Vec<_>>()
        .join("/");
    f.mkdir(&deep);
    make_db(&f.path(&format!("{deep}/deep.db")), "CREATE TABLE t (x);");
    let out = ok(&run(&f.root(), &f.root(), &["init"]));
    assert!(out.contains("stopped at the walk's bounds"), "{out}");
    assert!(!out.contains("deep.db"), "{out}");
    checks(&f);

    let missing = f.path("missing").display().to_string();
    let err = failed(&run(&f.root(), &f.root(), &["init", &missing]));
    assert!(
        err.contains("missing") && err.contains("working directory"),
        "{err}"
    );
    let file = f.path("mcp-server.toml").display().to_string();
    let err = failed(&run(&f.root(), &f.root(), &["init", &file]));
    assert!(err.contains("is not a folder"), "{err}");
}

/// A project with a manifest (server `demo`) and a home folder, both temporary.
struct Setup {
    home: tempfile::TempDir,
    project: Fixture,
}

impl Setup {
    fn new() -> Setup {
        let project = Fixture::new();
        project.write("docs/a.md", "# A\n");
        project.manifest("[server]\nname = \"demo\"\n\n[files.docs]\nroot = \"docs\"\n");
        Setup {
            home: tempfile::tempdir().expect("home"),
            project,
        }
    }

    fn home(&self) -> PathBuf {
        crate::support::plain(self.home.path().canonicalize().expect("home"))
    }

    fn run(&self, args: &[&str]) -> Output {
        run(&self.project.root(), &self.home(), args)
    }

    fn bin() -> String {
        crate::support::plain(Path::new(BIN).canonicalize().expect("binary"))
            .display()
            .to_string()
    }

    fn manifest(&self) -> String {
        self.project.path("mcp-server.toml").display().to_string()
    }

    fn backups(&self, file: &Path) -> Vec<PathBuf> {
        self.backups_in(file.parent().expect("folder"), file)
    }

    /// The backups of `file` in `dir`.
    fn backups_in(&self, dir: &Path, file: &Path) -> Vec<PathBuf> {
        let name = file
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|r| r.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        out.retain(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{name}.bak-")))
        });
        out
    }
}

/// A client, its scope flag, the file it must write (from HOME or the project), the key that
/// holds servers (`None` for Codex's TOML), the entry it must hold, and where backups go.
struct Case {
    client: &'static str,
    user: bool,
    file: PathBuf,
    key: Option<&'static str>,
    entry: Value,
    /// Backups of a project file go to the state folder, outside the project.
    backups: PathBuf,
}

impl Setup {
    /// Where backups of a project file `file` go.
    fn state_backups(&self, file: &Path) -> PathBuf {
        let folder: String = file
            .parent()
            .expect("folder")
            .to_string_lossy()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let state = if cfg!(windows) {
            self.home().join("AppData").join("Local")
        } else if cfg!(target_os = "macos") {
            self.home().join("Library").join("Application Support")
        } else {
            self.home().join(".local").join("state")
        };
        state.join("mcp-manifest").join("backups").join(folder)
    }
}

/// Where desktop applications keep their settings in `home` when no variable moves it
/// (`setup::platform::Dirs::app_config`).
fn app_config(home: &Path) -> PathBuf {
    if cfg!(windows) {
        home.join("AppData").join("Roaming")
    } else if cfg!(target_os = "macos") {
        home.join("Library").join("Application Support")
    } else {
        home.join(".config")
    }
}

/// The folder of `home` that setup's state goes to (`setup::platform::Dirs::state`).
fn state_folder() -> &'static str {
    if cfg!(windows) {
        "AppData"
    } else if cfg!(target_os = "macos") {
        "Library"
    } else {
        ".local"
    }
}

fn cases(s: &Setup) -> Vec<Case> {
    let home = s.home();
    let project = s.project.root();
    let bin = Setup::bin();
    let abs = s.manifest();
    let plain = |m: &str| json!({"command": bin, "args": ["serve", m]});
    let stdio = |m: &str| json!({"type": "stdio", "command": bin, "args": ["serve", m]});
    let case = |client, user, file: PathBuf, key, entry| Case {
        client,
        user,
        backups: if user || matches!(client, "claude-desktop" | "windsurf" | "codex") {
            file.parent().expect("folder").to_path_buf()
        } else {
            s.state_backups(&file)
        },
        file,
        key,
        entry,
    };
    let ws = "${workspaceFolder}/mcp-server.toml";
    vec![
        case(
            "claude-desktop",
            false,
            app_config(&home)
                .join("Claude")
                .join("claude_desktop_config.json"),
            Some("mcpServers"),
            plain(&abs),
        ),
        case(
            "claude-code",
            false,
            project.join(".mcp.json"),
            Some("mcpServers"),
            stdio(&abs),
        ),
        case(
            "claude-code",
            true,
            home.join(".claude.json"),
            Some("mcpServers"),
            stdio(&abs),
        ),
        case(
            "cursor",
            false,
            project.join(".cursor").join("mcp.json"),
            Some("mcpServers"),
            plain(ws),
        ),
        case(
            "cursor",
            true,
            home.join(".cursor").join("mcp.json"),
            Some("mcpServers"),
            plain(&abs),
        ),
        case(
            "vscode",
            false,
            project.join(".vscode").join("mcp.json"),
            Some("servers"),
            stdio(ws),
        ),
        case(
            "vscode",
            true,
            app_config(&home).join("Code").join("User").join("mcp.json"),
            Some("servers"),
            stdio(&abs),
        ),
        case(
            "windsurf",
            false,
            home.join(".codeium")
                .join("windsurf")
                .join("mcp_config.json"),
            Some("mcpServers"),
            plain(&abs),
        ),
        case(
            "codex",
            false,
            home.join(".codex").join("config.toml"),
            None,
            Value::Null,
        ),
        case(
            "gemini",
            false,
            project.join(".gemini").join("settings.json"),
            Some("mcpServers"),
            plain("mcp-server.toml"),
        ),
        case(
            "gemini",
            true,
            home.join(".gemini").join("settings.json"),
            Some("mcpServers"),
            plain(&abs),
        ),
        case(
            "copilot",
            false,
            project.join(".mcp.json"),
            Some("mcpServers"),
            stdio(&abs),
        ),
        case(
            "copilot",
            true,
            home.join(".copilot").join("mcp-config.json"),
            Some("mcpServers"),
            json!({"type": "local", "command": bin, "args": ["serve", abs], "tools": ["*"]}),
        ),
        case(
            "qwen",
            false,
            project.join(".qwen").join("settings.json"),
            Some("mcpServers"),
            plain("mcp-server.toml"),
        ),
        case(
            "qwen",
            true,
            home.join(".qwen").join("settings.json"),
            Some("mcpServers"),
            plain(&abs),
        ),
        case(
            "opencode",
            false,
            project.join("opencode.json"),
            Some("mcp"),
            json!({"type": "local", "command": [bin, "serve", abs], "enabled": true}),
        ),
        case(
            "opencode",
            true,
            home.join(".config").join("opencode").join("opencode.json"),
            Some("mcp"),
            json!({"type": "local", "command": [bin, "serve", abs], "enabled": true}),
        ),
    ]
}

fn args<'a>(c: &'a Case, verb: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![verb, c.client];
    if c.user {
        a.push("--user");
    }
    a.extend_from_slice(extra);
    a
}

/// A config file with another server and keys no one here knows.
fn existing_json(key: &str) -> String {
    format!(
        "{{\n  \"theme\": \"dark\",\n  \"{key}\": {{\n    \"other\": {{\"command\": \"npx\", \"args\": [\"-y\", \"other-server\"], \"env\": {{\"TOKEN\": \"t\"}}, \"custom\": [1, {{\"deep\": null}}]}}\n  }},\n  \"zzz\": {{\"n\": 1.5, \"list\": [true, false]}}\n}}\n"
    )
}

const EXISTING_TOML: &str = "# Codex settings\nmodel = \"o3\"  # the default model\n\n[mcp_servers.other]\ncommand = \"npx\"\nargs = [\"-y\", \"other-server\"]\n\n[mcp_servers.other.env]\nTOKEN = \"t\"\n\n[profiles.fast]\nmodel = \"mini\"\n";

#[test]
fn every_client_keeps_other_servers_and_keys_and_runs_twice_without_change() {
    let s = Setup::new();
    let bin = Setup::bin();
    let manifest = s.manifest();
    for c in cases(&s) {
        let label = format!("{} (user: {})", c.client, c.user);
        let original = match c.key {
            Some(key) => existing_json(key),
            None => EXISTING_TOML.to_owned(),
        };
        std::fs::create_dir_all(c.file.parent().expect("folder")).expect("config folder");
        std::fs::write(&c.file, &original).expect("config file");
        let before = s.backups_in(&c.backups, &c.file).len();

        let out = ok(&s.run(&args(&c, "register", &[])));
        assert!(out.contains("Registered `demo`"), "{label}: {out}");
        assert!(
            out.contains(&c.file.display().to_string()),
            "{label}: {out}"
        );
        let written = std::fs::read_to_string(&c.file).expect("config after register");
        // One backup more (claude-code and copilot share .mcp.json: earlier ones stay).
        let mut backups = s.backups_in(&c.backups, &c.file);
        backups.sort();
        assert_eq!(backups.len(), before + 1, "{label}: one backup");
        assert_eq!(
            std::fs::read_to_string(backups.last().expect("backup")).expect("backup"),
            original,
            "{label}"
        );
        assert!(
            !backups[0].starts_with(s.project.root()),
            "{label}: a backup inside the project: {backups:?}"
        );
        match c.key {
            Some(key) => {
                let mut v: Value = serde_json::from_str(&written).expect("strict JSON");
                assert_eq!(v[key]["demo"], c.entry, "{label}");
                // Everything else is what it was, in the same order.
                v[key]
                    .as_object_mut()
                    .expect("servers")
                    .shift_remove("demo");
                let before: Value = serde_json::from_str(&original).expect("original");
                assert_eq!(v, before, "{label}");
                let keys: Vec<&String> = v.as_object().expect("root").keys().collect();
                assert_eq!(keys, ["theme", key, "zzz"], "{label}");
            }
            None => {
                assert!(
                    written.starts_with("# Codex settings\nmodel = \"o3\"  # the default model\n"),
                    "{label}: {written}"
                );
                let v: toml::Table = toml::from_str(&written).expect("TOML");
                let demo = &v["mcp_servers"]["demo"];
                assert_eq!(demo["command"].as_str(), Some(bin.as_str()), "{label}");
                assert_eq!(
                    demo["args"],
                    toml::Value::Array(vec!["serve".into(), manifest.clone().into()])
                );
                assert_eq!(
                    v["mcp_servers"]["other"]["env"]["TOKEN"].as_str(),
                    Some("t")
                );
                assert_eq!(v["profiles"]["fast"]["model"].as_str(), Some("mini"));
            }
        }

        // A second run changes nothing: same bytes, no new backup.
        let out = ok(&s.run(&args(&c, "register", &[])));
        assert!(out.contains("nothing changed"), "{label}: {out}");
        assert_eq!(
            std::fs::read_to_string(&c.file).expect("config"),
            written,
            "{label}"
        );
        assert_eq!(
            s.backups_in(&c.backups, &c.file).len(),
            before + 1,
            "{label}"
        );

        // unregister takes out ours only, and the file means what it meant before.
        let out = ok(&s.run(&args(&c, "unregister", &[])));
        assert!(out.contains("Removed `demo`"), "{label}: {out}");
        let after = std::fs::read_to_string(&c.file).expect("config");
        match c.key {
            Some(_) => assert_eq!(
                serde_json::from_str::<Value>(&after).expect("JSON"),
                serde_json::from_str::<Value>(&original).expect("JSON"),
                "{label}"
            ),
            None => assert_eq!(after, original, "{label}: comments and layout kept"),
        }
        let out = ok(&s.run(&args(&c, "unregister", &[])));
        assert!(out.contains("nothing changed"), "{label}: {out}");
        // `unregister` never removes a server it did not write.
        let err = failed(&s.run(&args(&c, "unregister", &["--name", "other"])));
        assert!(err.contains("does not run mcp-manifest"), "{label}: {err}");
        assert_eq!(std::fs::read_to_string(&c.file).expect("config"), after);
    }
}

#[test]
fn register_creates_missing_files_and_folders() {
    let s = Setup::new();
    for c in cases(&s) {
        let label = c.client;
        ok(&s.run(&args(&c, "register", &[])));
        let written = std::fs::read_to_string(&c.file).expect("config created");
        match c.key {
            Some(key) => {
                let v: Value = serde_json::from_str(&written).expect("strict JSON");
                assert_eq!(v[key]["demo"], c.entry, "{label}");
            }
            None => assert!(written.starts_with("[mcp_servers.demo]\n"), "{written}"),
        }
        assert!(
            s.backups_in(&c.backups, &c.file).is_empty(),
            "{label}: nothing to back up"
        );
        // unregister removes the file it created, and the folders made for it, once empty.
        let out = ok(&s.run(&args(&c, "unregister", &[])));
        assert!(out.contains("removed"), "{label}: {out}");
        assert!(!c.file.exists(), "{label}: {out}");
        let folder = c.file.parent().expect("folder");
        if folder != s.project.root() && folder != s.home() {
            assert!(!folder.exists(), "{label}: {out}");
        }
        // The project holds what it held before: the manifest and its docs.
        let mut left: Vec<String> = std::fs::read_dir(s.project.root())
            .expect("project")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["docs", "mcp-server.toml"], "{label}");
    }
}

#[test]
fn unregister_keeps_a_created_file_that_now_holds_more() {
    let s = Setup::new();
    ok(&s.run(&["register", "vscode"]));
    let file = s.project.path(".vscode/mcp.json");
    let text = std::fs::read_to_string(&file).expect("created");
    // The user adds a setting of their own (JSONC: with a comment).
    let text = text.replacen('{', "{\n  // mine\n  \"inputs\": [],", 1);
    std::fs::write(&file, &text).expect("edit");
    let out = ok(&s.run(&["unregister", "vscode"]));
    assert!(!out.contains("removed "), "{out}");
    let after = std::fs::read_to_string(&file).expect("kept");
    assert!(
        after.contains("// mine") && after.contains("\"inputs\": []"),
        "{after}"
    );
    assert!(!after.contains("\"demo\""), "{after}");
}

#[test]
fn print_writes_nothing_and_shows_the_entry() {
    let s = Setup::new();
    let bin = Setup::bin();
    let out = ok(&s.run(&[
        "register", "vscode", "--print", "--name", "docs", "--env", "A=1", "--env", "B=x=y",
    ]));
    let v: Value = serde_json::from_str(&out).expect("the entry as JSON");
    assert_eq!(
        v,
        json!({"servers": {"docs": {"type": "stdio", "command": bin, "args": ["serve", "${workspaceFolder}/mcp-server.toml"], "env": {"A": "1", "B": "x=y"}}}})
    );
    let out = ok(&s.run(&["register", "vscode", "--user", "--print"]));
    let v: Value = serde_json::from_str(&out).expect("the entry as JSON");
    assert_eq!(v["servers"]["demo"]["args"][1], s.manifest());
    let out = ok(&s.run(&["register", "codex", "--print"]));
    assert!(out.starts_with("[mcp_servers.demo]\ncommand = "), "{out}");
    // Nothing was written anywhere: not in the home folder, not in the project.
    assert_eq!(std::fs::read_dir(s.home()).expect("home").count(), 0);
    let project: Vec<String> = std::fs::read_dir(s.project.root())
        .expect("project")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(project.len(), 2, "{project:?}");
}

#[test]
fn invalid_config_files_are_refused_and_left_as_they_are() {
    let s = Setup::new();
    let file = app_config(&s.home())
        .join("Claude")
        .join("claude_desktop_config.json");
    std::fs::create_dir_all(file.parent().expect("folder")).expect("folder");
    let broken = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n  }\n}\n";
    std::fs::write(&file, broken).expect("write");
    for verb in ["register", "unregister"] {
        let err = failed(&s.run(&[verb, "claude-desktop"]));
        assert!(
            err.contains(&format!("{}:4:3: not valid JSON", file.display())),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&file).expect("kept"), broken);
        assert!(s.backups(&file).is_empty());
    }
    let codex = s.home().join(".codex").join("config.toml");
    std::fs::create_dir_all(codex.parent().expect("folder")).expect("folder");
    std::fs::write(&codex, "model = \n").expect("write");
    let err = failed(&s.run(&["register", "codex"]));
    assert!(err.contains(&format!("{}:1:", codex.display())), "{err}");
    assert_eq!(std::fs::read_to_string(&codex).expect("kept"), "model = \n");
    // A top level that is not an object, and a servers key that is not one.
    std::fs::write(&file, "[1, 2]").expect("write");
    failed(&s.run(&["register", "claude-desktop"]));
    std::fs::write(&file, "{\"mcpServers\": \"no\"}").expect("write");
    let err = failed(&s.run(&["register", "claude-desktop"]));
    assert!(err.contains("`mcpServers` is not a JSON object"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("kept"),
        "{\"mcpServers\": \"no\"}"
    );
}

#[test]
fn register_refuses_to_replace_a_server_it_did_not_write() {
    let s = Setup::new();
    let file = s.project.path(".mcp.json");
    let text = "{\"mcpServers\": {\"demo\": {\"command\": \"npx\", \"args\": [\"demo\"]}}}\n";
    std::fs::write(&file, text).expect("write");
    let err = failed(&s.run(&["register", "claude-code"]));
    assert!(
        err.contains("does not run mcp-manifest (its command is `npx`)"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), text);
    // Under another name it goes in beside it.
    ok(&s.run(&["register", "claude-code", "--name", "demo-docs"]));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON");
    assert_eq!(v["mcpServers"]["demo"]["command"], "npx");
    assert_eq!(v["mcpServers"]["demo-docs"]["args"][0], "serve");
}

#[test]
fn register_updates_its_own_entry_and_keeps_keys_added_to_it() {
    let s = Setup::new();
    let file = s.home().join(".gemini").join("settings.json");
    std::fs::create_dir_all(file.parent().expect("folder")).expect("folder");
    // An entry of ours from an older binary path, with a key the user added.
    let old = json!({"mcpServers": {"demo": {"command": "/old/bin/mcp-manifest", "args": ["serve", "/old.toml"], "trust": true, "env": {"KEEP": "1"}}}});
    std::fs::write(&file, old.to_string()).expect("write");
    let out = ok(&s.run(&["register", "gemini", "--user", "--env", "NEW=2"]));
    assert!(out.contains("Updated `demo`"), "{out}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON");
    assert_eq!(
        v["mcpServers"]["demo"],
        json!({"command": Setup::bin(), "args": ["serve", s.manifest()], "trust": true, "env": {"KEEP": "1", "NEW": "2"}})
    );
}

#[test]
fn register_checks_its_inputs_before_writing() {
    let s = Setup::new();
    for (args, says) in [
        (
            vec!["register", "cursor", "--env", "1A=x"],
            "not a variable name",
        ),
        (
            vec!["register", "cursor", "--env", "NOVALUE"],
            "is not NAME=VALUE",
        ),
        (
            vec!["register", "cursor", "--name", "a b"],
            "cannot be used",
        ),
        (
            vec!["register", "cursor", "nope.toml"],
            "cannot read the manifest",
        ),
    ] {
        let err = failed(&s.run(&args));
        assert!(err.contains(says), "{args:?}: {err}");
    }
    s.project.write("bad.toml", "[server]\nnmae = \"x\"\n");
    let err = failed(&s.run(&["register", "cursor", "bad.toml"]));
    assert!(
        err.contains("bad.toml:2:1") && err.contains("nothing registered"),
        "{err}"
    );
    let out = s.run(&["register", "notaclient"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("claude-desktop"), "{}", stderr(&out));
    assert!(!s.project.path(".cursor").exists());
}

#[test]
fn config_locations_follow_xdg_config_home_and_codex_home() {
    let s = Setup::new();
    let xdg = tempfile::tempdir().expect("xdg");
    let codex = tempfile::tempdir().expect("codex home");
    // What moves Claude Desktop's folder: XDG_CONFIG_HOME on Linux, APPDATA on Windows; on
    // macOS nothing (~/Library/Application Support).
    let app_var = if cfg!(windows) {
        Some("APPDATA")
    } else if cfg!(target_os = "macos") {
        None
    } else {
        Some("XDG_CONFIG_HOME")
    };
    let run_with = |args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(s.project.root())
            .env("HOME", s.home())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("APPDATA")
            .env_remove("LOCALAPPDATA")
            .env_remove("USERPROFILE")
            .env("CODEX_HOME", codex.path());
        if let Some(var) = app_var {
            cmd.env(var, xdg.path());
        }
        cmd.output().expect("run")
    };
    ok(&run_with(&["register", "claude-desktop"]));
    if app_var.is_some() {
        assert!(
            xdg.path()
                .join("Claude")
                .join("claude_desktop_config.json")
                .is_file()
        );
    }
    ok(&run_with(&["register", "codex"]));
    assert!(codex.path().join("config.toml").is_file());
    // Only setup's state (the files it created) went to the home folder.
    let home: Vec<_> = std::fs::read_dir(s.home())
        .expect("home")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let mut want = vec![state_folder()];
    if app_var.is_none() {
        want = vec!["Library"];
    }
    assert_eq!(home, want);
}

#[test]
fn manifest_as_option_or_positional_with_home_expansion() {
    let s = Setup::new();
    let other = tempfile::tempdir().expect("cwd");
    let home_rel = format!(
        "~/{}",
        s.project
            .path("mcp-server.toml")
            .strip_prefix(s.project.root().parent().expect("parent"))
            .expect("relative")
            .display()
    );
    let home = s.project.root().parent().expect("parent").to_path_buf();
    for args in [
        vec!["check", home_rel.as_str()],
        vec!["check", "--manifest", home_rel.as_str()],
        vec!["check", "-m", home_rel.as_str()],
        vec!["list", "-m", home_rel.as_str()],
    ] {
        let out = ok(&run(other.path(), &home, &args));
        assert!(!out.is_empty(), "{args:?}");
    }
    let both = run(other.path(), &home, &["check", "a.toml", "-m", "b.toml"]);
    assert_eq!(
        both.status.code(),
        Some(2),
        "positional and --manifest conflict"
    );
    let err = failed(&run(
        other.path(),
        &home,
        &["check", "nope/mcp-server.toml"],
    ));
    let cwd = crate::support::plain(other.path().canonicalize().expect("cwd"));
    assert!(
        err.contains(&format!(
            "tried {}; working directory {}",
            cwd.join("nope").join("mcp-server.toml").display(),
            cwd.display()
        )),
        "{err}"
    );
}

#[test]
fn version_and_completions() {
    let dir = tempfile::tempdir().expect("dir");
    let out = ok(&run(dir.path(), dir.path(), &["--version"]));
    assert_eq!(out, format!("mcp-manifest {}\n", env!("CARGO_PKG_VERSION")));
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = ok(&run(dir.path(), dir.path(), &["completions", shell]));
        assert!(out.contains("register") && out.contains("init"), "{shell}");
        if shell == "bash" || shell == "zsh" {
            assert!(
                out.contains("claude-desktop"),
                "{shell}: the clients complete"
            );
        }
    }
    assert_eq!(
        run(dir.path(), dir.path(), &["completions", "tcsh"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn list_json_is_the_listing_with_mcp_field_names() {
    let f = Fixture::new();
    f.write("docs/a.md", "# A\n");
    f.manifest(
        "[server]\nname = \"demo\"\n\n[files.docs]\nroot = \"docs\"\n\n[tools.hi]\ndescription = \"Say hi\"\ncommand = [\"echo\", \"hi {who}\"]\nread_only = true\nparams.who = { type = \"string\" }\n\n[prompts.p]\ndescription = \"A prompt\"\nargs.x = { required = true }\nmessages = [{ role = \"user\", text = \"{x}\" }]\n",
    );
    let v = list_json(&f);
    assert_eq!(v["server"]["name"], "demo");
    assert_eq!(v["resources"][0]["uri"], f.uri("docs/a.md"));
    assert_eq!(v["resources"][0]["name"], "a.md");
    assert_eq!(v["resources"][0]["mimeType"], "text/markdown");
    assert_eq!(v["resources"][0]["size"], 4);
    assert_eq!(
        v["resourceTemplates"][0]["uriTemplate"],
        format!("{}/{{+path}}", crate::support::file_uri(&f.path("docs")))
    );
    let tools: Vec<&str> = v["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        tools,
        ["list_resources", "read_resource", "search_files", "hi"]
    );
    assert_eq!(v["tools"][3]["inputSchema"]["required"], json!(["who"]));
    assert_eq!(v["tools"][3]["annotations"]["readOnlyHint"], true);
    assert_eq!(
        v["prompts"][0],
        json!({"name": "p", "description": "A prompt", "arguments": [{"name": "x", "required": true}]})
    );
    let summary = ok(&run(&f.root(), &f.root(), &["check"]));
    assert!(
        summary.contains(
            "tools      4 (1 from the manifest, 3 built-in: list_resources, read_resource, search_files)"
        ),
        "{summary}"
    );
    assert!(
        summary.contains(
            "sources    1 (1 files, 0 sqlite, 0 postgres, 0 mysql, 0 git, 0 templates, 0 skills)"
        ),
        "{summary}"
    );
}

#[test]
fn schema_write_puts_the_schema_where_asked() {
    let dir = tempfile::tempdir().expect("dir");
    let printed = ok(&run(dir.path(), dir.path(), &["schema"]));
    let out = ok(&run(
        dir.path(),
        dir.path(),
        &["schema", "--write", "~/sub/s.json"],
    ));
    assert!(out.contains("#:schema ./s.json"), "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sub").join("s.json")).expect("written"),
        printed
    );
}

/// Runs `cmd`, killing it after 20 s (a FIFO opened blocking would hang it forever; the FIFO
/// tests are Unix only).
#[cfg(unix)]
fn run_bounded(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("hung (killed after 20 s)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(st.success());
}

// Unix only: file names holding a newline, a `"` or control characters (Windows names cannot).
#[cfg(unix)]
#[test]
fn init_escapes_hostile_file_names_in_comments_and_its_report() {
    let f = Fixture::new();
    let hostile = "data\n[tools.setup]\ncommand = [\"touch\", \"PWNED\"]\n#.db";
    make_db(&f.path(hostile), "CREATE TABLE t(a)");
    make_db(
        &f.path("line\u{2028}sep\r\u{1b}[2J.db"),
        "CREATE TABLE t(a)",
    );
    let out = ok(&run(&f.root(), &f.root(), &["init"]));
    for line in out.lines() {
        assert!(
            !line
                .chars()
                .any(|c| c.is_control() && c != '\t' || c == '\u{2028}'),
            "raw control character in the report: {line:?}"
        );
    }
    let text = std::fs::read_to_string(f.path("mcp-server.toml")).expect("manifest");
    let parsed: toml::Table = toml::from_str(&text).expect("TOML");
    assert!(parsed.get("tools").is_none(), "{text}");
    let paths: Vec<&str> = parsed["sqlite"]
        .as_table()
        .expect("sqlite sections")
        .values()
        .filter_map(|s| s["path"].as_str())
        .collect();
    assert!(paths.contains(&hostile), "{paths:?}");
    assert!(!text.contains('\u{2028}') && !text.contains('\r'), "{text}");
    checks(&f);
}

#[test]
fn concurrent_registers_keep_every_entry() {
    let s = Setup::new();
    for (client, file) in [
        ("cursor", s.home().join(".cursor").join("mcp.json")),
        ("codex", s.home().join(".codex").join("config.toml")),
    ] {
        let children: Vec<_> = (0..16)
            .map(|i| {
                Command::new(BIN)
                    .args(["register", client, "--user", "--name", &format!("s{i}")])
                    .current_dir(s.project.root())
                    .env("HOME", s.home())
                    .env_remove("XDG_CONFIG_HOME")
                    .env_remove("CODEX_HOME")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().expect("wait");
            assert!(out.status.success(), "{}", stderr(&out));
        }
        let text = std::fs::read_to_string(&file).expect("config");
        for i in 0..16 {
            assert!(
                text.contains(&format!("\"s{i}\""))
                    || text.contains(&format!("[mcp_servers.s{i}]")),
                "{client}: s{i} lost:\n{text}"
            );
        }
    }
}

#[cfg(unix)]
#[test]
fn configs_that_are_not_regular_files_are_refused_without_hanging() {
    let s = Setup::new();
    let dir = s.home().join(".cursor");
    std::fs::create_dir_all(&dir).expect("dir");
    let fifo = s.home().join("fifo");
    mkfifo(&fifo);
    for config_is_link in [false, true] {
        let config = dir.join("mcp.json");
        let _ = std::fs::remove_file(&config);
        if config_is_link {
            std::os::unix::fs::symlink(&fifo, &config).expect("link");
        } else {
            mkfifo(&config);
        }
        for verb in ["register", "unregister"] {
            let mut cmd = Command::new(BIN);
            cmd.args([verb, "cursor", "--user", "--name", "demo"])
                .current_dir(s.project.root())
                .env("HOME", s.home());
            let err = failed(&run_bounded(cmd));
            assert!(err.contains("FIFO"), "{err}");
        }
        use std::os::unix::fs::FileTypeExt;
        assert!(
            std::fs::metadata(&config)
                .expect("still there")
                .file_type()
                .is_fifo()
        );
    }
}

#[cfg(unix)]
#[test]
fn init_never_follows_or_hangs_on_its_outputs() {
    // A FIFO named like the schema: init finishes, and leaves it.
    let f = Fixture::new();
    f.write("README.md", "# x\n");
    mkfifo(&f.path("mcp-server.schema.json"));
    let mut cmd = Command::new(BIN);
    cmd.args(["init"])
        .current_dir(f.root())
        .env("HOME", f.root());
    let out = stdout(&run_bounded(cmd));
    assert!(out.contains("FIFO"), "{out}");

    // A dangling symlink as the manifest: a clear refusal, and --force replaces the link.
    let f = Fixture::new();
    let outside = tempfile::tempdir().expect("dir");
    let nowhere = outside.path().join("nowhere.toml");
    std::os::unix::fs::symlink(&nowhere, f.path("mcp-server.toml")).expect("link");
    let err = failed(&run(&f.root(), &f.root(), &["init"]));
    assert!(
        err.contains("symlink") && err.contains("does not exist"),
        "{err}"
    );
    ok(&run(&f.root(), &f.root(), &["init", "--force"]));
    assert!(
        std::fs::symlink_metadata(f.path("mcp-server.toml"))
            .expect("manifest")
            .is_file()
    );
    assert!(!nowhere.exists());

    // A symlink to a file outside: --force replaces the link, never the file it points to.
    let f = Fixture::new();
    let precious = outside.path().join("outside.toml");
    std::fs::write(&precious, "precious = 1\n").expect("write");
    std::os::unix::fs::symlink(&precious, f.path("mcp-server.toml")).expect("link");
    ok(&run(&f.root(), &f.root(), &["init", "--force"]));
    assert_eq!(
        std::fs::read_to_string(&precious).expect("kept"),
        "precious = 1\n"
    );
    assert!(
        std::fs::symlink_metadata(f.path("mcp-server.toml"))
            .expect("manifest")
            .is_file()
    );
    checks(&f);
}

#[test]
fn a_renamed_binary_recognizes_its_own_entries() {
    let s = Setup::new();
    let dir = tempfile::tempdir().expect("dir");
    let renamed = dir.path().join("mm");
    std::fs::copy(BIN, &renamed).expect("copy");
    let run_renamed = |args: &[&str]| {
        Command::new(&renamed)
            .args(args)
            .current_dir(s.project.root())
            .env("HOME", s.home())
            .output()
            .expect("run")
    };
    ok(&run_renamed(&["register", "cursor", "--user"]));
    let out = ok(&run_renamed(&["register", "cursor", "--user"]));
    assert!(out.contains("nothing changed"), "{out}");
    let out = ok(&run_renamed(&["unregister", "cursor", "--user"]));
    assert!(out.contains("Removed"), "{out}");
}

#[cfg(unix)]
#[test]
fn a_symlinked_install_registers_the_link_not_the_versioned_file() {
    let s = Setup::new();
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().canonicalize().expect("dir");
    let keg = root
        .join("Cellar")
        .join("mcp-manifest")
        .join("0.1.0")
        .join("bin");
    std::fs::create_dir_all(&keg).expect("keg");
    std::fs::copy(BIN, keg.join("mcp-manifest")).expect("copy");
    std::fs::create_dir_all(root.join("bin")).expect("bin");
    let link = root.join("bin").join("mcp-manifest");
    std::os::unix::fs::symlink(keg.join("mcp-manifest"), &link).expect("link");
    let path = format!("{}:/usr/bin:/bin", root.join("bin").display());
    let out = Command::new("mcp-manifest")
        .args(["register", "cursor", "--user"])
        .current_dir(s.project.root())
        .env("HOME", s.home())
        .env("PATH", path)
        .output()
        .expect("run");
    ok(&out);
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(s.home().join(".cursor").join("mcp.json")).expect("config"),
    )
    .expect("JSON");
    assert_eq!(
        v["mcpServers"]["demo"]["command"],
        link.display().to_string()
    );
}

#[cfg(unix)]
#[test]
fn modes_private_new_files_kept_old_modes_and_read_only_refused() {
    use std::os::unix::fs::PermissionsExt;
    let s = Setup::new();
    let mode = |p: &Path| std::fs::metadata(p).expect("file").permissions().mode() & 0o777;
    // A new file without secrets gets what the umask leaves of 0666 (the kernel's, whatever the
    // platform: 027 here).
    let umasked = Command::new("sh")
        .arg("-c")
        .arg(r#"umask 027; exec "$0" "$@""#)
        .arg(BIN)
        .args(["register", "claude-code"])
        .current_dir(s.project.root())
        .env("HOME", s.home())
        .stdin(Stdio::null())
        .output()
        .expect("run mcp-manifest");
    ok(&umasked);
    assert_eq!(mode(&s.project.path(".mcp.json")), 0o640);
    // A new file carrying env values is 0600.
    ok(&s.run(&["register", "cursor", "--user", "--env", "TOKEN=s3cr3t"]));
    let config = s.home().join(".cursor").join("mcp.json");
    assert_eq!(mode(&config), 0o600);
    // An existing file keeps its mode, and so does its backup.
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    ok(&s.run(&["register", "cursor", "--user", "--name", "two"]));
    assert_eq!(mode(&config), 0o640);
    let backups = s.backups(&config);
    assert_eq!(backups.len(), 1);
    assert_eq!(mode(&backups[0]), 0o640);
    // A read-only file is refused with the way to make it writable.
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    let before = std::fs::read(&config).expect("read");
    let err = failed(&s.run(&["register", "cursor", "--user", "--name", "three"]));
    assert!(
        err.contains("read-only") && err.contains("chmod u+w"),
        "{err}"
    );
    assert_eq!(std::fs::read(&config).expect("read"), before);
    // A hard-linked file: the split is said.
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let other = s.home().join("dotfiles-mcp.json");
    std::fs::hard_link(&config, &other).expect("link");
    let out = ok(&s.run(&["register", "cursor", "--user", "--name", "four"]));
    assert!(out.contains("hard links"), "{out}");
}

#[test]
fn backups_are_rotated_and_leftovers_of_killed_runs_removed() {
    let s = Setup::new();
    let dir = s.home().join(".cursor");
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("mcp.json");
    std::fs::write(&config, "{}\n").expect("write");
    for d in 1..=5 {
        std::fs::write(dir.join(format!("mcp.json.bak-2020010{d}-000000")), "{}").expect("b");
    }
    // Not ours: never removed.
    std::fs::write(dir.join("mcp.json.bak-mine"), "{}").expect("b");
    let dead = dir.join(".mcp.json.tmp-2147483646-0");
    let live = dir.join(format!(".mcp.json.tmp-{}-0", std::process::id()));
    std::fs::write(&dead, "{\"half").expect("t");
    std::fs::write(&live, "{\"half").expect("t");
    ok(&s.run(&["register", "cursor", "--user"]));
    let mut backups: Vec<String> = s
        .backups(&config)
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    backups.sort();
    assert_eq!(backups.len(), 4, "{backups:?}");
    assert_eq!(backups[0], "mcp.json.bak-20200104-000000", "{backups:?}");
    assert!(backups.contains(&"mcp.json.bak-mine".to_owned()));
    assert!(!dead.exists());
    assert!(live.exists());
}

#[cfg(unix)]
#[test]
fn a_dangling_config_symlink_gets_its_target_created() {
    let s = Setup::new();
    let dir = s.home().join(".cursor");
    let dot = s.home().join("dotfiles");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::create_dir_all(&dot).expect("dir");
    std::os::unix::fs::symlink(dot.join("notyet.json"), dir.join("mcp.json")).expect("link");
    ok(&s.run(&["register", "cursor", "--user"]));
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(dot.join("notyet.json")).expect("target created"),
    )
    .expect("JSON");
    assert_eq!(v["mcpServers"]["demo"]["args"][0], "serve");
    assert!(
        std::fs::symlink_metadata(dir.join("mcp.json"))
            .expect("link")
            .file_type()
            .is_symlink()
    );
}

#[test]
fn same_name_for_another_manifest_needs_replace() {
    let s = Setup::new();
    ok(&s.run(&["register", "cursor", "--user"]));
    s.project.write("other/docs/a.md", "# A\n");
    s.project.write(
        "other/mcp-server.toml",
        "[server]\nname = \"demo\"\n\n[files.docs]\nroot = \"docs\"\n",
    );
    let other = s
        .project
        .path("other/mcp-server.toml")
        .display()
        .to_string();
    let err = failed(&s.run(&["register", "cursor", "--user", &other]));
    assert!(
        err.contains(&s.manifest()) && err.contains(&other) && err.contains("--replace"),
        "{err}"
    );
    let out = ok(&s.run(&["register", "cursor", "--user", "--replace", &other]));
    assert!(out.contains("Updated"), "{out}");
}

/// Runs a client entry as its client would (its `command` and `args`, from `cwd`) with an
/// `initialize` and then `requests` on stdin, closed after them, and returns the answers.
fn run_entry(entry: &Value, cwd: &Path, requests: &[Value]) -> Vec<Value> {
    use std::io::Write as _;
    let args: Vec<&str> = entry["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string"))
        .collect();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let mut child = Command::new(entry["command"].as_str().expect("command"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the registered command");
    let mut input = String::new();
    for r in [&initialize, &initialized].into_iter().chain(requests) {
        input.push_str(&r.to_string());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).expect("write"));
    let out = child.wait_with_output().expect("output");
    writer.join().expect("writer");
    stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("id").is_some())
        .collect()
}

/// `register CLIENT --group NAME`: the entry runs `serve MANIFEST --group NAME` and serves only
/// that group; an unknown group (or a manifest without groups) is refused before anything is
/// written, naming the groups there are.
#[test]
fn register_group_writes_an_entry_that_serves_only_that_group() {
    let s = Setup::new();
    let helper = crate::support::helper_path();
    let manifest = format!(
        "[server]\nname = \"demo\"\n\n[files.docs]\nroot = \"docs\"\n\n\
         [tools.hi]\ncommand = [\"{helper}\", \"echo\", \"hi\"]\n\n\
         [tools.bye]\ncommand = [\"{helper}\", \"echo\", \"bye\"]\n\n\
         [groups.greet]\ntools = [\"hi\"]\nresources = []\n"
    );
    s.project.manifest(&manifest);

    let err = failed(&s.run(&["register", "cursor", "--user", "--group", "gret"]));
    assert!(
        err.contains(
            "no group `gret` in mcp-server.toml; did you mean `greet`? its groups are: greet"
        ) && err.contains("nothing registered"),
        "{err}"
    );
    assert!(!s.home().join(".cursor").exists(), "nothing written");

    let out = ok(&s.run(&["register", "cursor", "--user", "--group", "greet"]));
    assert!(out.contains("--group greet"), "{out}");
    let file = s.home().join(".cursor/mcp.json");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("written")).expect("JSON");
    let entry = &v["mcpServers"]["demo"];
    assert_eq!(
        entry["args"],
        json!(["serve", s.manifest(), "--group", "greet"]),
        "{v}"
    );
    // Twice: nothing changes; Codex's TOML gets the same arguments.
    let out = ok(&s.run(&["register", "cursor", "--user", "--group", "greet"]));
    assert!(out.contains("nothing changed"), "{out}");
    let out = ok(&s.run(&["register", "codex", "--group", "greet", "--print"]));
    assert!(out.contains("\"--group\", \"greet\"]"), "{out}");

    // The entry as the client runs it (from another folder) sees the group's tool only.
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let answers = run_entry(
        entry,
        elsewhere.path(),
        &[
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "bye", "arguments": {}}}),
        ],
    );
    let list = answers.iter().find(|a| a["id"] == 2).expect("tools/list");
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"hi") && !names.contains(&"bye"), "{list}");
    let call = answers.iter().find(|a| a["id"] == 3).expect("tools/call");
    assert!(call.get("error").is_some(), "outside the group: {call}");

    // A manifest without groups: refused, saying how to declare one.
    s.project
        .manifest("[server]\nname = \"demo\"\n\n[files.docs]\nroot = \"docs\"\n");
    let err = failed(&s.run(&["register", "gemini", "--group", "greet"]));
    assert!(
        err.contains("declares no groups") && err.contains("[groups.greet]"),
        "{err}"
    );
    assert!(!s.project.path(".gemini").exists());
}

/// A manifest that listens on HTTP is registered for stdio (`--stdio`), which clients speak.
#[test]
fn register_keeps_a_listening_manifest_on_stdio() {
    let s = Setup::new();
    s.project.manifest(
        "[server]\nname = \"demo\"\n\n[server.http]\nlisten = \"127.0.0.1:0\"\n\n[files.docs]\nroot = \"docs\"\n",
    );
    let out = ok(&s.run(&["register", "cursor", "--user", "--print"]));
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        v["mcpServers"]["demo"]["args"],
        json!(["serve", s.manifest(), "--stdio"])
    );
    let answers = run_entry(&v["mcpServers"]["demo"], &s.project.root(), &[]);
    assert_eq!(
        answers.len(),
        1,
        "initialize answered on stdio: {answers:?}"
    );
}

/// `init` finds folders of agent skills (`.agents/skills`, `.claude/skills`, `skills/`: each
/// holding `*/SKILL.md`) and offers a `[skills.NAME]` section for each that serves them; a
/// later root gets a `prefix` (two roots may hold skills of the same name); a symlinked root is
/// never followed; the result passes `check` and serves the skills.
#[test]
fn init_offers_a_skills_section_for_each_skills_folder() {
    let f = Fixture::new();
    let skill = |name: &str| {
        format!("---\nname: {name}\ndescription: Does {name} things.\n---\n# {name}\n")
    };
    f.write(".agents/skills/pdf/SKILL.md", skill("pdf"));
    f.write(".agents/skills/pdf/scripts/fill.py", "print(1)\n");
    f.write(".agents/skills/review/SKILL.md", skill("review"));
    f.write(".claude/skills/pdf/SKILL.md", skill("pdf"));
    f.write("skills/notes/README.md", "no SKILL.md here\n");
    f.write("README.md", "# Project\n");
    let out = ok(&run(&f.root(), &f.root(), &["init", "."]));
    assert!(
        out.contains("agent skills     .agents/skills/ (2 skills)"),
        "{out}"
    );
    assert!(
        out.contains("agent skills     .claude/skills/ (1 skill)"),
        "{out}"
    );
    let text = std::fs::read_to_string(f.path("mcp-server.toml")).expect("manifest");
    assert!(
        text.contains("[skills.agents]\nroot = \".agents/skills\"\n"),
        "{text}"
    );
    assert!(
        text.contains("[skills.claude]\nroot = \".claude/skills\"\nprefix = \"claude\"\n"),
        "{text}"
    );
    assert!(
        !text.contains("[skills.skills]"),
        "no SKILL.md in skills/: {text}"
    );
    checks(&f);
    let served = uris(&list_json(&f));
    for want in [
        "skill://pdf/SKILL.md",
        "skill://pdf/scripts/fill.py",
        "skill://review/SKILL.md",
        "skill://claude/pdf/SKILL.md",
    ] {
        assert!(served.iter().any(|u| u == want), "{want}: {served:?}");
    }

    // A plain skills/ folder: served as skills, not again as documentation.
    let g = Fixture::new();
    g.write("skills/lint/SKILL.md", skill("lint"));
    g.write("docs/guide.md", "# Guide\n");
    ok(&run(&g.root(), &g.root(), &["init", "."]));
    let text = std::fs::read_to_string(g.path("mcp-server.toml")).expect("manifest");
    assert!(
        text.contains("[skills.skills]\nroot = \"skills\"\n"),
        "{text}"
    );
    checks(&g);
    let uris_g = uris(&list_json(&g));
    assert!(
        uris_g.iter().any(|u| u == "skill://lint/SKILL.md"),
        "{uris_g:?}"
    );
    assert!(
        !uris_g.iter().any(|u| u.ends_with("/skills/lint/SKILL.md")),
        "not served twice: {uris_g:?}"
    );

    // A symlinked skills root is not followed.
    #[cfg(unix)]
    {
        let h = Fixture::new();
        h.write("elsewhere/skills/x/SKILL.md", skill("x"));
        std::fs::create_dir_all(h.path(".agents")).expect("mkdir");
        std::os::unix::fs::symlink(h.path("elsewhere/skills"), h.path(".agents/skills"))
            .expect("symlink");
        ok(&run(&h.root(), &h.root(), &["init", "."]));
        let text = std::fs::read_to_string(h.path("mcp-server.toml")).expect("manifest");
        assert!(!text.contains("[skills."), "{text}");
    }
}
