//! Fixtures, made by code in one temp dir and only when a selected workload needs them: each
//! group is a folder holding its `mcp-server.toml` and the data it serves.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// Environment for every git command: no system or user configuration, a fixed identity.
pub const GIT_ENV: &[(&str, &str)] = &[
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_AUTHOR_NAME", "Bench"),
    ("GIT_AUTHOR_EMAIL", "bench@example.com"),
    ("GIT_COMMITTER_NAME", "Bench"),
    ("GIT_COMMITTER_EMAIL", "bench@example.com"),
];

/// Commits in the git fixture.
pub const COMMITS: usize = 10_000;
/// The file `git/blob` reads, at `HEAD~BLOB_DEPTH`.
pub const BLOB_PATH: &str = "docs/README.md";
pub const BLOB_DEPTH: usize = 1234;
/// Rows in the SQLite fixture's table.
pub const ROWS: usize = 100;
/// Files of the search fixture, and how many of them hold one line matching `NEEDLE`.
pub const CODE_FILES: usize = 1000;
pub const NEEDLES: usize = 50;
pub const NEEDLE: &str = r"needle_\d+";
/// Files of the 100 000-file search tree.
pub const SEARCH_TREE_FILES: usize = 100_000;
/// What the repository search looks for.
pub const REPO_PATTERN: &str = r"fn [a-z_]+_blocking";

pub struct Fixtures {
    root: PathBuf,
    /// The PostgreSQL cluster, started by the first `postgres/…` workload; stopped (and its
    /// folder removed) when the fixtures are dropped.
    pg: std::cell::RefCell<Option<crate::postgres::Cluster>>,
    /// The MariaDB server, started by the first `mysql/…` workload.
    my: std::cell::RefCell<Option<crate::mysql::Server>>,
    _dir: tempfile::TempDir,
}

/// The files a `resources/read` workload reads: `data/<name>` under the `files` group.
pub const READ_FILES: &[(&str, usize, bool)] = &[
    ("100B.txt", 100, true),
    ("100B.bin", 100, false),
    ("64KiB.txt", 64 * 1024, true),
    ("64KiB.bin", 64 * 1024, false),
    ("1MiB.txt", 1024 * 1024, true),
    ("1MiB.bin", 1024 * 1024, false),
];

impl Fixtures {
    pub fn new() -> Result<Fixtures> {
        let dir = tempfile::Builder::new()
            .prefix("mcp-bench-")
            .tempdir()
            .context("creating the fixture folder")?;
        let root = dir.path().canonicalize()?;
        Ok(Fixtures {
            root,
            pg: std::cell::RefCell::new(None),
            my: std::cell::RefCell::new(None),
            _dir: dir,
        })
    }

    /// The folder of one fixture group, built by `build` the first time it is asked for.
    fn group(&self, name: &str, build: impl FnOnce(&Path) -> Result<()>) -> Result<PathBuf> {
        let dir = self.root.join(name);
        if !dir.exists() {
            eprintln!("  building fixture `{name}`…");
            fs::create_dir_all(&dir)?;
            build(&dir).with_context(|| format!("building the `{name}` fixture"))?;
        }
        Ok(dir)
    }

    /// `files/`: the files of `READ_FILES` under `data/`, served with `max_size = "2MiB"`.
    pub fn files(&self) -> Result<PathBuf> {
        self.group("files", |dir| {
            for (name, len, text) in READ_FILES {
                let bytes = if *text {
                    text_bytes(*len)
                } else {
                    binary_bytes(*len)
                };
                write(&dir.join("data").join(name), &bytes)?;
            }
            write(
                &dir.join("mcp-server.toml"),
                b"[files.f]\nroot = \"data\"\nmax_size = \"2MiB\"\n",
            )
        })
    }

    /// `one/`: a folder holding one file.
    pub fn one(&self) -> Result<PathBuf> {
        self.group("one", |dir| {
            write(&dir.join("data/only.txt"), b"the only file\n")?;
            write(
                &dir.join("mcp-server.toml"),
                b"[files.one]\nroot = \"data\"\n",
            )
        })
    }

    /// `tree-N/`: `files` small files in folders of 1000 (100 for small trees), listed in pages
    /// of 1000 with `watch = false`.
    pub fn tree(&self, files: usize) -> Result<PathBuf> {
        self.group(&format!("tree-{files}"), |dir| {
            let per_dir = if files >= 100_000 { 1000 } else { 100 };
            let tree = dir.join("tree");
            for i in 0..files {
                let sub = tree.join(format!("d{:03}", i / per_dir));
                if i % per_dir == 0 {
                    fs::create_dir_all(&sub)?;
                }
                fs::write(sub.join(format!("f{i:06}.txt")), b"a small file\n")?;
            }
            write(
                &dir.join("mcp-server.toml"),
                b"[server]\npage_size = 1000\n\n[files.tree]\nroot = \"tree\"\nwatch = false\n",
            )
        })
    }

    /// `flat-N/`: `files` small files in one folder, listed in pages of 1000 with
    /// `watch = false` (a page resumes inside a folder far larger than itself).
    pub fn flat(&self, files: usize) -> Result<PathBuf> {
        self.group(&format!("flat-{files}"), |dir| {
            let tree = dir.join("tree");
            fs::create_dir_all(&tree)?;
            for i in 0..files {
                fs::write(tree.join(format!("f{i:06}.txt")), b"a small file\n")?;
            }
            write(
                &dir.join("mcp-server.toml"),
                b"[server]\npage_size = 1000\n\n[files.tree]\nroot = \"tree\"\nwatch = false\n",
            )
        })
    }

    /// `sqlite/`: `bench.db` with a 100-row table `items` and the named query `by_id`. Made with
    /// the `sqlite3` CLI (also what the SQLite workloads are compared with).
    pub fn sqlite(&self) -> Result<PathBuf> {
        self.group("sqlite", |dir| {
            let sql = format!(
                "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, qty INTEGER, note TEXT);\n\
                 WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {ROWS})\n\
                 INSERT INTO items SELECT i, 'item ' || i, i * 1.25, i % 7, CASE WHEN i % 3 THEN NULL ELSE 'sale' END FROM c;\n"
            );
            run_stdin(
                Command::new("sqlite3").arg(dir.join("bench.db")),
                sql.as_bytes(),
            )?;
            write(
                &dir.join("mcp-server.toml"),
                format!(
                    "[sqlite.bench]\npath = \"bench.db\"\nrow_limit = {ROWS}\n\n\
                     [sqlite.bench.queries.by_id]\nsql = \"{}\"\nparams.id = {{ type = \"integer\" }}\n",
                    QUERY_SQL
                )
                .as_bytes(),
            )
        })
    }

    /// `postgres/`: a manifest serving the throwaway cluster's `bench` database (started the
    /// first time; `postgres.rs`), and how to reach it. `Unavailable` without PostgreSQL.
    pub fn postgres(&self) -> Result<(PathBuf, crate::postgres::Access)> {
        let mut pg = self.pg.borrow_mut();
        let access = match pg.as_ref() {
            Some(c) => c.access.clone(),
            None => pg.insert(crate::postgres::Cluster::start()?).access.clone(),
        };
        let dir = self.group("postgres", |dir| {
            write(
                &dir.join("mcp-server.toml"),
                crate::postgres::manifest(&access).as_bytes(),
            )
        })?;
        Ok((dir, access))
    }

    /// `mysql/`: a manifest serving the throwaway MariaDB's `bench` database (started the first
    /// time; `mysql.rs`), and how to reach it. `Unavailable` without MariaDB.
    pub fn mysql(&self) -> Result<(PathBuf, crate::mysql::Access)> {
        let mut my = self.my.borrow_mut();
        let access = match my.as_ref() {
            Some(s) => s.access.clone(),
            None => my.insert(crate::mysql::Server::start()?).access.clone(),
        };
        let dir = self.group("mysql", |dir| {
            write(
                &dir.join("mcp-server.toml"),
                crate::mysql::manifest(&access).as_bytes(),
            )
        })?;
        Ok((dir, access))
    }

    /// `git/`: a repository of `COMMITS` commits over 200 files (git fast-import, one pack,
    /// checked out).
    pub fn git(&self) -> Result<PathBuf> {
        self.group("git", |dir| {
            let repo = dir.join("repo");
            fs::create_dir_all(&repo)?;
            git(&repo, &["init", "-q", "-b", "main"])?;
            let mut stream = Vec::new();
            let t = 1_700_000_000u64;
            for i in 0..COMMITS {
                let path = format!("src/m{}/file{:03}.txt", i % 10, i % 200);
                let mut body = String::new();
                for k in 0..40 {
                    let _ = writeln!(body, "line {k} of commit {i}");
                }
                let msg = format!("commit {i}: touch {path}\n");
                let _ = write!(
                    stream,
                    "commit refs/heads/main\ncommitter Bench <bench@example.com> {} +0000\ndata {}\n{msg}",
                    t + 60 * i as u64,
                    msg.len()
                );
                if i == 0 {
                    let readme = format!("# Bench\n{}", "Some documentation text.\n".repeat(300));
                    let _ = write!(
                        stream,
                        "M 100644 inline {BLOB_PATH}\ndata {}\n{readme}",
                        readme.len()
                    );
                }
                let _ = write!(
                    stream,
                    "M 100644 inline {path}\ndata {}\n{body}\n",
                    body.len()
                );
            }
            let mut cmd = Command::new("git");
            cmd.args(["fast-import", "--quiet"]).current_dir(&repo);
            run_stdin(cmd.envs(GIT_ENV.iter().copied()), &stream)?;
            git(&repo, &["checkout", "-q", "-f", "main"])?;
            write(&dir.join("mcp-server.toml"), b"[git.bench]\npath = \"repo\"\n")
        })
    }

    /// `tool/`: one tool running `true`, no resource tools.
    pub fn tool(&self) -> Result<PathBuf> {
        self.group("tool", |dir| {
            write(
                &dir.join("mcp-server.toml"),
                b"[server]\nresource_tools = false\n\n[tools.nothing]\ndescription = \"Runs true\"\ncommand = [\"true\"]\n",
            )
        })
    }

    /// `code/`: `CODE_FILES` source-like files of 60 lines under `src/`; `NEEDLES` of them hold
    /// one line matching `NEEDLE`.
    pub fn code(&self) -> Result<PathBuf> {
        self.group("code", |dir| {
            let every = CODE_FILES / NEEDLES;
            for i in 0..CODE_FILES {
                let mut text = String::new();
                for k in 0..60 {
                    let _ = writeln!(
                        text,
                        "    let value_{k} = compute(\"module {i}\", {k}); // line {k} of file {i}"
                    );
                    if k == 30 && i % every == 0 {
                        let _ = writeln!(text, "    // needle_{i} is here");
                    }
                }
                write(
                    &dir.join(format!("src/m{:02}/file{i:04}.rs", i / 100)),
                    text.as_bytes(),
                )?;
            }
            write(
                &dir.join("mcp-server.toml"),
                b"[files.code]\nroot = \"src\"\n",
            )
        })
    }

    /// `templates/`: `TEMPLATES` `[templates]` entries (file backend, a described and
    /// patterned variable each), so `tools/list` holds as many template tools.
    pub fn templates(&self) -> Result<PathBuf> {
        self.group("templates", |dir| {
            write(&dir.join("notes/a.md"), b"# A\n")?;
            let mut text = String::from("[server]\npage_size = 1000\n");
            for i in 0..TEMPLATES {
                let _ = write!(
                    text,
                    "\n[templates.note_{i}]\nuri = \"note{i}://{{topic}}\"\ndescription = \"Note {i} by topic: the notes folder's markdown file of that name\"\nfile = \"notes/{{topic}}.md\"\nvars.topic = {{ pattern = \"^[a-z0-9-]+$\", description = \"The topic, lower-case\" }}\n"
                );
            }
            write(&dir.join("mcp-server.toml"), text.as_bytes())
        })
    }

    /// `search-100k/`: `SEARCH_TREE_FILES` source-like files of 12 lines in folders of 1000;
    /// every 2000th holds one line matching `NEEDLE` (`SEARCH_TREE_FILES / 2000` of them).
    pub fn search_tree(&self) -> Result<PathBuf> {
        self.group("search-100k", |dir| {
            let tree = dir.join("tree");
            for i in 0..SEARCH_TREE_FILES {
                let sub = tree.join(format!("d{:03}", i / 1000));
                if i % 1000 == 0 {
                    fs::create_dir_all(&sub)?;
                }
                let mut text = String::new();
                for k in 0..12 {
                    let _ = writeln!(text, "    let value_{k} = compute(\"file {i}\", {k});");
                    if k == 6 && i % 2000 == 0 {
                        let _ = writeln!(text, "    // needle_{i} is here");
                    }
                }
                fs::write(sub.join(format!("f{i:06}.rs")), text)?;
            }
            write(
                &dir.join("mcp-server.toml"),
                b"[files.tree]\nroot = \"tree\"\nwatch = false\n",
            )
        })
    }

    /// `repo/`: a manifest serving this repository (its `.gitignore` keeps `target/` out).
    pub fn repo(&self) -> Result<PathBuf> {
        self.group("repo", |dir| {
            let root = env!("CARGO_MANIFEST_DIR")
                .replace('\\', "\\\\")
                .replace('"', "\\\"");
            write(
                &dir.join("mcp-server.toml"),
                format!("[files.repo]\nroot = \"{root}\"\nwatch = false\nmax_size = \"256MiB\"\n")
                    .as_bytes(),
            )
        })
    }

    /// `watch/`: one watched file, `data/watched.txt`.
    pub fn watched(&self) -> Result<PathBuf> {
        self.group("watch", |dir| {
            write(&dir.join("data/watched.txt"), b"version 0\n")?;
            write(
                &dir.join("mcp-server.toml"),
                b"[files.w]\nroot = \"data\"\n",
            )
        })
    }
}

/// `[templates]` entries of the `templates/` fixture.
pub const TEMPLATES: usize = 200;

/// The named query of the SQLite fixture.
pub const QUERY_SQL: &str = "SELECT id, name, price, qty FROM items WHERE id = :id";

/// Text that JSON must escape now and then (quotes, backslashes, tabs, newlines), `len` bytes,
/// ending with a newline.
pub fn text_bytes(len: usize) -> Vec<u8> {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < len {
        let _ = writeln!(
            out,
            "line {i:05}: \"quoted\" words,\ta tab and a backslash \\ in plain ASCII text"
        );
        i += 1;
    }
    let mut bytes = out.into_bytes();
    bytes.truncate(len - 1);
    bytes.push(b'\n');
    bytes
}

/// `len` pseudo-random bytes starting with a NUL (so the file reads as binary).
pub fn binary_bytes(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    out[0] = 0;
    out
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Runs git in `repo` with `GIT_ENV`; returns its stdout.
pub fn git(repo: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .envs(GIT_ENV.iter().copied())
        .stdin(Stdio::null())
        .output()
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

fn run_stdin(cmd: &mut Command, input: &[u8]) -> Result<()> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {cmd:?} (is it installed?)"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input)?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}
