//! The workloads: what each one asks the server, how its first answer is checked, what it is
//! compared with (its floor), how many times, and the targets of issue 14 (and earlier issues).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use base64::Engine as _;
use serde_json::{Value, json};

use crate::fixtures::{self, Fixtures};

pub type Check = Box<dyn Fn(&Value) -> Result<()>>;
pub type OutputCheck = Box<dyn Fn(&[u8]) -> Result<()>>;

/// What one sequential operation against the server is.
pub enum Op {
    /// One request; `params` may change with the iteration. `check` runs on the first answer.
    Request {
        method: &'static str,
        params: Box<dyn Fn(u64) -> Value>,
        check: Check,
    },
    /// `resources/list` followed from page to page to the end (`pages` pages of the null server).
    ListAll { expect: usize, pages: usize },
    /// Writes `file` and waits for `notifications/resources/updated` of `uri` (subscribed once).
    Updated { file: PathBuf, uri: String },
    /// Runs the binary as a command (`mcp-manifest ARGS…`) to the end of its output.
    Cli {
        args: Vec<OsString>,
        check: OutputCheck,
    },
}

/// What a workload is compared with, beside the null server.
pub enum Beside {
    /// A command run to the end of its output, once per operation.
    Spawn {
        argv: Vec<OsString>,
        cwd: PathBuf,
        check: OutputCheck,
    },
    /// One long-lived `sqlite3` process fed a script per operation on its stdin.
    Sqlite3 {
        db: PathBuf,
        script: Box<dyn Fn(u64) -> String>,
        check: OutputCheck,
    },
    /// inotify watching the file's folder in this process: the kernel's close-after-write event.
    Inotify { file: PathBuf },
    /// One long-lived `psql` session fed a script per operation on its stdin (`postgres.rs`).
    Psql(crate::postgres::Psql),
    /// One long-lived `mariadb` client session fed a script per operation (`mysql.rs`).
    Mariadb(crate::mysql::Session),
}

pub struct BesideSpec {
    pub label: String,
    pub kind: Beside,
    /// Operations per round.
    pub n: usize,
}

/// Why a workload cannot run on this machine (a program it needs is not installed): it is
/// reported as not available, not as a failure.
#[derive(Debug)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

/// A figure to reach, on the server's median figures.
#[derive(Clone, Copy)]
pub enum Target {
    /// Sequential p50 at most the null server's p50 plus this.
    FloorPlus(Duration),
    /// Sequential p50 at most this.
    SeqAtMost(Duration),
    /// Sequential p50 at most this many times the comparison's p50.
    BesideRatio(f64),
    /// Pipelined requests per second at least this.
    RateAtLeast(f64),
    /// Peak RSS at most this many bytes.
    RssAtMost(u64),
    /// Cold start at most this.
    ColdAtMost(Duration),
}

pub struct Workload {
    /// The manifest served (`None` for `Op::Cli`, which names its own).
    pub manifest: Option<PathBuf>,
    pub op: Op,
    pub beside: Option<BesideSpec>,
    /// Whether the null server runs the same requests as a floor.
    pub null_floor: bool,
    /// Sequential operations per round, after `warm` untimed ones.
    pub seq: usize,
    pub warm: usize,
    /// Pipelined requests per round (0: not pipelined).
    pub pipe: usize,
    /// Cold starts per round.
    pub cold: usize,
    /// A tool the server must list for this workload to run ("not served" otherwise).
    pub needs_tool: Option<&'static str>,
    /// Figures to reach, each with the issue that set it.
    pub targets: Vec<(Target, &'static str)>,
}

/// Counts scaled by `--scale`.
#[derive(Clone, Copy)]
pub struct Scale(pub f64);

impl Scale {
    pub fn n(self, base: usize) -> usize {
        ((base as f64 * self.0).round() as usize).max(1)
    }
}

type Build = Box<dyn Fn(&Fixtures, Scale) -> Result<Workload>>;

/// One catalog entry: a name, a line of description, and how to build it (fixtures on demand).
pub struct Entry {
    pub name: &'static str,
    pub about: &'static str,
    build: Build,
}

impl Entry {
    pub fn build(&self, fx: &Fixtures, scale: Scale) -> Result<Workload> {
        (self.build)(fx, scale)
    }
}

pub const MIB: u64 = 1024 * 1024;

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

pub fn entry(
    name: &'static str,
    about: &'static str,
    build: impl Fn(&Fixtures, Scale) -> Result<Workload> + 'static,
) -> Entry {
    Entry {
        name,
        about,
        build: Box::new(build),
    }
}

/// A request workload with the usual counts, to adjust.
pub fn request(
    manifest: PathBuf,
    method: &'static str,
    params: impl Fn(u64) -> Value + 'static,
    check: impl Fn(&Value) -> Result<()> + 'static,
    s: Scale,
) -> Workload {
    Workload {
        manifest: Some(manifest.join("mcp-server.toml")),
        op: Op::Request {
            method,
            params: Box::new(params),
            check: Box::new(check),
        },
        beside: None,
        null_floor: true,
        seq: s.n(5000),
        warm: s.n(200),
        pipe: s.n(20_000),
        cold: s.n(10),
        needs_tool: None,
        targets: Vec::new(),
    }
}

pub fn catalog() -> Vec<Entry> {
    let mut out = vec![entry(
        "ping",
        "`ping`: the transport and the protocol layer alone",
        |fx, s| {
            let mut w = request(
                fx.files()?,
                "ping",
                |_| json!({}),
                |r| {
                    ensure!(r == &json!({}), "ping answered {r}");
                    Ok(())
                },
                s,
            );
            w.pipe = s.n(100_000);
            w.targets = vec![
                (Target::ColdAtMost(Duration::from_millis(10)), "issue 2"),
                (Target::FloorPlus(us(25)), "issue 14"),
                (Target::RateAtLeast(400_000.0), "issue 14"),
                (Target::RssAtMost(32 * MIB), "issue 14"),
            ];
            Ok(w)
        },
    )];
    for (file, len, text) in fixtures::READ_FILES {
        let (name, about): (&'static str, &'static str) = match (*len, *text) {
            (100, true) => ("read/100B-text", "`resources/read` of a 100-byte text file"),
            (100, false) => (
                "read/100B-binary",
                "`resources/read` of a 100-byte binary file (base64)",
            ),
            (65536, true) => ("read/64KiB-text", "`resources/read` of a 64 KiB text file"),
            (65536, false) => (
                "read/64KiB-binary",
                "`resources/read` of a 64 KiB binary file",
            ),
            (_, true) => ("read/1MiB-text", "`resources/read` of a 1 MiB text file"),
            (_, false) => (
                "read/1MiB-binary",
                "`resources/read` of a 1 MiB binary file",
            ),
        };
        let (len, text) = (*len, *text);
        out.push(entry(name, about, move |fx, s| {
            let dir = fx.files()?;
            let path = dir.join("data").join(file);
            let uri = format!("file://{}", path.display());
            let expected = std::fs::read(&path)?;
            let u = uri.clone();
            let mut w = request(
                dir,
                "resources/read",
                move |_| json!({ "uri": uri }),
                move |r| check_read(r, &u, &expected, text),
                s,
            );
            let (seq, pipe) = match len {
                100 => (5000, 20_000),
                65536 => (1000, 2000),
                _ => (100, 200),
            };
            (w.seq, w.pipe, w.warm) = (s.n(seq), s.n(pipe), s.n(seq / 20));
            if len == 100 && text {
                w.targets = vec![
                    (Target::FloorPlus(us(35)), "issue 14"),
                    (Target::RateAtLeast(200_000.0), "issue 14"),
                    (Target::RssAtMost(32 * MIB), "issue 14"),
                ];
            } else {
                w.targets = vec![(Target::RssAtMost(32 * MIB), "issue 14")];
            }
            Ok(w)
        }));
    }
    out.push(entry(
        "list/1",
        "`resources/list` of a folder holding one file",
        |fx, s| {
            let mut w = request(
                fx.one()?,
                "resources/list",
                |_| json!({}),
                |r| {
                    let n = r["resources"].as_array().map_or(0, Vec::len);
                    ensure!(n == 1, "listed {n} resources, not 1");
                    Ok(())
                },
                s,
            );
            w.targets = vec![
                (Target::RateAtLeast(200_000.0), "issue 14"),
                (Target::RssAtMost(32 * MIB), "issue 14"),
            ];
            Ok(w)
        },
    ));
    for (name, about, files, stat, flat) in [
        (
            "list/10k",
            "`resources/list` of 10 000 files (`watch = false`), all 10 pages of 1 000, beside `find`",
            10_000,
            false,
            false,
        ),
        (
            "list/100k",
            "`resources/list` of 100 000 files (`watch = false`), all 100 pages of 1 000, beside `find`",
            100_000,
            false,
            false,
        ),
        (
            "list/flat-100k",
            "`resources/list` of 100 000 files in one folder (`watch = false`), all 100 pages of \
             1 000, beside `find`",
            100_000,
            false,
            true,
        ),
        (
            "list/100k-stat",
            "`resources/list` of 100 000 files (`watch = false`), all 100 pages of 1 000, beside a \
             walk that also `stat`s each file for its size (`bench --stat-walk`, one thread)",
            100_000,
            true,
            false,
        ),
    ] {
        out.push(entry(name, about, move |fx, s| {
            let dir = if flat {
                fx.flat(files)?
            } else {
                fx.tree(files)?
            };
            let ops = if files >= 100_000 { 1 } else { 5 };
            let (beside, targets) = if stat {
                (stat_walk(&dir, files, s.n(10))?, Vec::new())
            } else {
                (
                    find(&dir, files, s.n(10)),
                    vec![
                        (Target::BesideRatio(2.0), "issue 14"),
                        (Target::RssAtMost(32 * MIB), "issue 14"),
                    ],
                )
            };
            Ok(Workload {
                manifest: Some(dir.join("mcp-server.toml")),
                op: Op::ListAll {
                    expect: files,
                    pages: files / 1000,
                },
                beside: Some(beside),
                null_floor: true,
                seq: s.n(ops),
                warm: 0,
                pipe: 0,
                cold: if stat { 0 } else { s.n(5) },
                needs_tool: None,
                targets,
            })
        }));
    }
    // `mcp-manifest list` beside `find -type f` (the floor), and beside the floor of a
    // listing that must give each file's size (`stat_walk`: a `stat` per file, one thread).
    for (name, about, stat, target) in [
        (
            "cli-list/100k",
            "`mcp-manifest list` of the 100 000-file tree (the CLI, not the server), beside `find`",
            false,
            Some((Target::BesideRatio(2.0), "issue 14")),
        ),
        (
            "cli-list/100k-stat",
            "`mcp-manifest list` of the 100 000-file tree beside a walk that also `stat`s each file \
             for its size, as a listing must (`bench --stat-walk`, one thread, no sorting)",
            true,
            None,
        ),
    ] {
        out.push(entry(name, about, move |fx, s| {
            let dir = fx.tree(100_000)?;
            let beside = if stat {
                stat_walk(&dir, 100_000, s.n(10))?
            } else {
                find(&dir, 100_000, s.n(10))
            };
            Ok(Workload {
                manifest: None,
                op: Op::Cli {
                    args: vec!["list".into(), dir.join("mcp-server.toml").into()],
                    check: Box::new(|out| {
                        let first = String::from_utf8_lossy(
                            out.split(|&b| b == b'\n').next().unwrap_or_default(),
                        )
                        .into_owned();
                        ensure!(first == "resources (100000)", "`list` began with {first:?}");
                        Ok(())
                    }),
                },
                beside: Some(beside),
                null_floor: false,
                seq: s.n(3),
                warm: 0,
                pipe: 0,
                cold: 0,
                needs_tool: None,
                targets: target.into_iter().collect(),
            })
        }));
    }
    out.push(entry(
        "sqlite/table-100",
        "`resources/read` of a 100-row table, beside `sqlite3` answering the same SELECT on a pipe",
        |fx, s| {
            let dir = fx.sqlite()?;
            let mut w = request(
                dir.clone(),
                "resources/read",
                |_| json!({ "uri": "sqlite://bench/tables/items" }),
                |r| {
                    let rows = json_text(r)?;
                    let n = rows["rows"].as_array().map_or(0, Vec::len);
                    ensure!(n == fixtures::ROWS, "{n} rows, not {}", fixtures::ROWS);
                    ensure!(rows["truncated"] == false, "the table read says truncated");
                    Ok(())
                },
                s,
            );
            (w.seq, w.warm, w.pipe) = (s.n(1000), s.n(50), s.n(2000));
            w.beside = Some(sqlite3(
                &dir,
                |_| format!("SELECT * FROM items LIMIT {};", fixtures::ROWS + 1),
                fixtures::ROWS,
                s.n(1000),
            ));
            w.targets = vec![
                (Target::SeqAtMost(us(500)), "issue 3"),
                (Target::RssAtMost(32 * MIB), "issue 14"),
            ];
            Ok(w)
        },
    ));
    out.push(entry(
        "sqlite/query-1",
        "`resources/read` of a named query with one bound parameter (one row), beside `sqlite3`",
        |fx, s| {
            let dir = fx.sqlite()?;
            let id = |i: u64| i % fixtures::ROWS as u64 + 1;
            let mut w = request(
                dir.clone(),
                "resources/read",
                move |i| json!({ "uri": format!("sqlite://bench/queries/by_id?id={}", id(i)) }),
                |r| {
                    let rows = json_text(r)?;
                    ensure!(
                        rows["rows"].as_array().map_or(0, Vec::len) == 1,
                        "the query answered {rows}"
                    );
                    Ok(())
                },
                s,
            );
            (w.seq, w.warm, w.pipe) = (s.n(2000), s.n(100), s.n(10_000));
            w.beside = Some(sqlite3(
                &dir,
                move |i| format!(".parameter set :id {}\n{};", id(i), fixtures::QUERY_SQL),
                1,
                s.n(2000),
            ));
            w.targets = vec![
                (Target::SeqAtMost(us(500)), "issue 3"),
                (Target::RssAtMost(32 * MIB), "issue 14"),
            ];
            Ok(w)
        },
    ));
    out.extend(crate::postgres::entries());
    out.extend(crate::mysql::entries());
    out.push(entry(
        "git/log",
        "`git://bench/log` (50 commits of 10 000), beside `git log -n 50 --format=…`",
        |fx, s| {
            let dir = fx.git()?;
            let repo = dir.join("repo");
            let format = "--format=%h%x09%aI%x09%an%x09%s";
            let cli = fixtures::git(&repo, &["log", "-n", "50", format])?;
            let hashes: Vec<String> = cli
                .lines()
                .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
                .collect();
            ensure!(hashes.len() == 50, "git log printed {} lines", hashes.len());
            let mut w = request(
                dir,
                "resources/read",
                |_| json!({ "uri": "git://bench/log" }),
                move |r| {
                    let text = r["contents"][0]["text"].as_str().unwrap_or_default();
                    let ours: Vec<&str> = text
                        .lines()
                        .map(|l| l.split('\t').next().unwrap_or_default())
                        .collect();
                    ensure!(
                        ours.len() == hashes.len(),
                        "{} log lines, not 50",
                        ours.len()
                    );
                    for (a, b) in ours.iter().zip(&hashes) {
                        ensure!(
                            a.starts_with(b.as_str()) || b.starts_with(a),
                            "log hash {a} where git says {b}"
                        );
                    }
                    Ok(())
                },
                s,
            );
            (w.seq, w.warm, w.pipe) = (s.n(500), s.n(20), s.n(1000));
            w.beside = Some(spawn(
                "git log",
                &["git", "log", "-n", "50", format],
                &repo,
                Box::new(|out| {
                    let n = out.iter().filter(|&&b| b == b'\n').count();
                    ensure!(n == 50, "git log printed {n} lines");
                    Ok(())
                }),
                s.n(200),
            ));
            w.targets = vec![
                (Target::BesideRatio(2.0), "issue 4"),
                (Target::RssAtMost(32 * MIB), "issue 14"),
            ];
            Ok(w)
        },
    ));
    out.push(entry(
        "git/blob",
        "`git://bench/blob/REV/docs/README.md` (7.5 KiB, REV = HEAD~1234), beside `git show REV:PATH`",
        |fx, s| {
            let dir = fx.git()?;
            let repo = dir.join("repo");
            let rev = fixtures::git(&repo, &["rev-parse", &format!("HEAD~{}", fixtures::BLOB_DEPTH)])?
                .trim()
                .to_owned();
            let spec = format!("{rev}:{}", fixtures::BLOB_PATH);
            let expected = fixtures::git(&repo, &["show", &spec])?;
            let uri = format!("git://bench/blob/{rev}/{}", fixtures::BLOB_PATH);
            let exp = expected.clone();
            let mut w = request(
                dir,
                "resources/read",
                move |_| json!({ "uri": uri }),
                move |r| {
                    ensure!(
                        r["contents"][0]["text"].as_str() == Some(exp.as_str()),
                        "the blob differs from `git show`"
                    );
                    Ok(())
                },
                s,
            );
            (w.seq, w.warm, w.pipe) = (s.n(1000), s.n(50), s.n(2000));
            w.beside = Some(spawn(
                "git show",
                &["git", "show", &spec],
                &repo,
                Box::new(move |out| {
                    ensure!(out == expected.as_bytes(), "git show printed something else");
                    Ok(())
                }),
                s.n(200),
            ));
            w.targets = vec![
                (Target::BesideRatio(2.0), "issue 4"),
                (Target::RssAtMost(32 * MIB), "issue 14"),
            ];
            Ok(w)
        },
    ));
    out.push(entry(
        "tool/true",
        "`tools/call` of a tool running `true`, beside spawning `true` directly (output captured)",
        |fx, s| {
            let dir = fx.tool()?;
            let mut w = request(
                dir.clone(),
                "tools/call",
                |_| json!({ "name": "nothing", "arguments": {} }),
                |r| {
                    ensure!(r["isError"] == false, "the tool call failed: {r}");
                    Ok(())
                },
                s,
            );
            (w.seq, w.warm, w.pipe) = (s.n(500), s.n(20), s.n(1000));
            w.beside = Some(spawn(
                "spawn true",
                &["true"],
                &dir,
                Box::new(|_| Ok(())),
                s.n(500),
            ));
            w.targets = vec![
                (Target::BesideRatio(1.5), "issue 5"),
                (Target::RssAtMost(32 * MIB), "issue 14"),
            ];
            Ok(w)
        },
    ));
    out.push(entry(
        "tools/list/200-templates",
        "`tools/list` of a manifest with 200 `[templates]` entries: 202 tools (template tools)",
        |fx, s| {
            let mut w = request(
                fx.templates()?,
                "tools/list",
                |_| json!({}),
                |r| {
                    let n = r["tools"].as_array().map_or(0, Vec::len);
                    ensure!(n == fixtures::TEMPLATES + 2, "{n} tools listed");
                    eprintln!("tools/list answer: {} bytes", r.to_string().len());
                    Ok(())
                },
                s,
            );
            (w.seq, w.warm, w.pipe) = (s.n(500), s.n(20), s.n(1000));
            w.targets = vec![(Target::RssAtMost(32 * MIB), "issue 14")];
            Ok(w)
        },
    ));
    out.push(entry(
        "search_files",
        "`search_files` for `needle_\\d+` over 1 000 files (50 matches), beside `rg`",
        |fx, s| {
            let dir = fx.code()?;
            let mut w = request(
                dir.clone(),
                "tools/call",
                |_| json!({ "name": "search_files", "arguments": { "pattern": fixtures::NEEDLE, "source": "code" } }),
                |r| {
                    ensure!(r["isError"] == false, "search_files failed: {r}");
                    let n = r["structuredContent"]["matches"].as_array().map_or(0, Vec::len);
                    ensure!(n == fixtures::NEEDLES, "{n} matches, not {}", fixtures::NEEDLES);
                    Ok(())
                },
                s,
            );
            (w.seq, w.warm, w.pipe) = (s.n(100), s.n(5), s.n(200));
            w.needs_tool = Some("search_files");
            w.beside = Some(spawn(
                "rg",
                &["rg", "--line-number", "--no-heading", "--color", "never", fixtures::NEEDLE, "src"],
                &dir,
                Box::new(|out| {
                    let n = out.iter().filter(|&&b| b == b'\n').count();
                    ensure!(n == fixtures::NEEDLES, "rg printed {n} lines");
                    Ok(())
                }),
                s.n(100),
            ));
            w.targets = vec![(Target::RssAtMost(32 * MIB), "issue 14")];
            Ok(w)
        },
    ));
    out.push(entry(
        "search_files/100k",
        "`search_files` for `needle_\\d+` over 100 000 files (50 matches, `watch = false`), beside `rg`",
        |fx, s| {
            let dir = fx.search_tree()?;
            let expect = fixtures::SEARCH_TREE_FILES / 2000;
            search_beside_rg(dir, "tree", fixtures::NEEDLE, "tree", expect, s)
        },
    ));
    out.push(entry(
        "search_files/repo",
        "`search_files` for `fn [a-z_]+_blocking` over this repository (`watch = false`), beside `rg`",
        |fx, s| {
            let dir = fx.repo()?;
            let root = env!("CARGO_MANIFEST_DIR");
            let out = std::process::Command::new("rg")
                .args(["--count-matches", "--no-filename", "--", fixtures::REPO_PATTERN, "."])
                .current_dir(root)
                .output()?;
            let expect: usize = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.trim().parse::<usize>().ok())
                .sum();
            ensure!(expect > 0, "rg finds no `{}` in {root}", fixtures::REPO_PATTERN);
            search_beside_rg(dir, "repo", fixtures::REPO_PATTERN, root, expect, s)
        },
    ));
    out.push(entry(
        "updated",
        "write a subscribed file → `notifications/resources/updated` (debounce 50 ms), beside the kernel's inotify event",
        |fx, s| {
            let dir = fx.watched()?;
            let file = dir.join("data/watched.txt");
            Ok(Workload {
                manifest: Some(dir.join("mcp-server.toml")),
                op: Op::Updated {
                    uri: format!("file://{}", file.display()),
                    file: file.clone(),
                },
                beside: Some(BesideSpec {
                    label: "inotify".into(),
                    kind: Beside::Inotify { file },
                    n: s.n(20),
                }),
                null_floor: false,
                seq: s.n(20),
                warm: 1,
                pipe: 0,
                cold: s.n(5),
                needs_tool: None,
                targets: vec![(Target::RssAtMost(32 * MIB), "issue 14")],
            })
        },
    ));
    out
}

/// `search_files` over source `source` of the manifest in `dir`, beside `rg` run in `rg_dir`
/// (relative to `dir`, or absolute) on the same files: both must find `expect` matching lines.
fn search_beside_rg(
    dir: PathBuf,
    source: &'static str,
    pattern: &'static str,
    rg_dir: &str,
    expect: usize,
    s: Scale,
) -> Result<Workload> {
    ensure!(
        expect <= 1000,
        "{expect} matches: more than max_matches can hold"
    );
    let mut w = request(
        dir.clone(),
        "tools/call",
        move |_| json!({ "name": "search_files", "arguments": { "pattern": pattern, "source": source, "max_matches": 1000 } }),
        move |r| {
            ensure!(r["isError"] == false, "search_files failed: {r}");
            let n = r["structuredContent"]["matches"]
                .as_array()
                .map_or(0, Vec::len);
            ensure!(n == expect, "{n} matches, not {expect} as rg finds");
            Ok(())
        },
        s,
    );
    (w.seq, w.warm, w.pipe, w.cold) = (s.n(5), 1, 0, 0);
    w.needs_tool = Some("search_files");
    w.beside = Some(spawn(
        "rg",
        &[
            "rg",
            "--line-number",
            "--no-heading",
            "--color",
            "never",
            pattern,
            rg_dir,
        ],
        &dir,
        Box::new(move |out| {
            let n = out.iter().filter(|&&b| b == b'\n').count();
            ensure!(n == expect, "rg printed {n} lines, not {expect}");
            Ok(())
        }),
        s.n(5),
    ));
    // Issue 10: at least half ripgrep's throughput on the same files.
    w.targets = vec![(Target::BesideRatio(2.0), "issue 10")];
    Ok(w)
}

fn check_read(r: &Value, uri: &str, expected: &[u8], text: bool) -> Result<()> {
    let c = &r["contents"][0];
    ensure!(c["uri"] == uri, "read answered {}", c["uri"]);
    let got = if text {
        c["text"].as_str().map(|t| t.as_bytes().to_vec())
    } else {
        match c["blob"].as_str() {
            Some(b) => Some(base64::engine::general_purpose::STANDARD.decode(b)?),
            None => None,
        }
    };
    match got {
        Some(bytes) if bytes == expected => Ok(()),
        Some(bytes) => bail!(
            "read {} bytes, not the file's {}",
            bytes.len(),
            expected.len()
        ),
        None => bail!("the read has no {}", if text { "text" } else { "blob" }),
    }
}

/// The JSON text of a SQLite or PostgreSQL read.
pub fn json_text(r: &Value) -> Result<Value> {
    let text = r["contents"][0]["text"].as_str().unwrap_or_default();
    Ok(serde_json::from_str(text)?)
}

/// This bench run as `--stat-walk tree`: one line per file.
fn stat_walk(dir: &Path, files: usize, n: usize) -> Result<BesideSpec> {
    let exe = std::env::current_exe()?;
    let exe = exe.to_str().context("the bench's path is not UTF-8")?;
    Ok(spawn(
        "stat walk",
        &[exe, crate::peer::STAT_WALK_FLAG, "tree"],
        dir,
        Box::new(move |out| {
            let got = out.iter().filter(|&&b| b == b'\n').count();
            ensure!(
                got == files,
                "the stat walk printed {got} files, not {files}"
            );
            Ok(())
        }),
        n,
    ))
}

fn find(dir: &Path, files: usize, n: usize) -> BesideSpec {
    find_with(dir, files, n, "find", &[])
}

/// `find tree -type f` followed by `more` arguments, labelled `label`: one line per file.
fn find_with(dir: &Path, files: usize, n: usize, label: &str, more: &[&str]) -> BesideSpec {
    let mut argv = vec!["find", "tree", "-type", "f"];
    argv.extend_from_slice(more);
    spawn(
        label,
        &argv,
        dir,
        Box::new(move |out| {
            let got = out.iter().filter(|&&b| b == b'\n').count();
            ensure!(got == files, "find printed {got} files, not {files}");
            Ok(())
        }),
        n,
    )
}

fn spawn(label: &str, argv: &[&str], cwd: &Path, check: OutputCheck, n: usize) -> BesideSpec {
    BesideSpec {
        label: label.to_owned(),
        kind: Beside::Spawn {
            argv: argv.iter().map(OsString::from).collect(),
            cwd: cwd.to_owned(),
            check,
        },
        n,
    }
}

fn sqlite3(
    dir: &Path,
    script: impl Fn(u64) -> String + 'static,
    rows: usize,
    n: usize,
) -> BesideSpec {
    BesideSpec {
        label: "sqlite3".into(),
        kind: Beside::Sqlite3 {
            db: dir.join("bench.db"),
            script: Box::new(script),
            check: Box::new(move |out| {
                let v: Value = serde_json::from_slice(out)?;
                let got = v.as_array().map_or(0, Vec::len);
                ensure!(got == rows, "sqlite3 answered {got} rows, not {rows}");
                Ok(())
            }),
        },
        n,
    }
}
