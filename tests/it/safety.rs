//! Issue 9's attacks as regression tests: a value that would become an option, a `file` template
//! serving what a files source hides, a FIFO or a too-large `max_size` where a file belongs, a
//! WAL database read without leaving files behind, a value no program can receive; and a URI or
//! an argument of megabytes, which must get a short error at once.

use serde_json::{Value, json};

use crate::support::{Fixture, Server};

// (For `a_value_cannot_become_an_option`: Unix only.)
#[cfg(unix)]
fn git(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository with two commits on `main`, in the fixture's root.
#[cfg(unix)]
fn repo() -> Fixture {
    let f = Fixture::new();
    git(&f.root(), &["init", "-q", "-b", "main"]);
    f.write("a.txt", "one\n");
    git(&f.root(), &["add", "a.txt"]);
    git(&f.root(), &["commit", "-q", "-m", "one"]);
    f.write("a.txt", "one\ntwo\n");
    git(&f.root(), &["commit", "-q", "-am", "two"]);
    f
}

fn call(s: &mut Server, name: &str, args: Value) -> Value {
    s.ok("tools/call", json!({"name": name, "arguments": args}))
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The same rule on every platform, with the helper program (which prints each argument and a
/// NUL): a value that would start an argument is refused when it begins with `-`, and on
/// Windows also with `/` (Windows programs take `/x` switches: `dir /s`, `findstr /c:…`); after
/// a literal `--`, with `allow_dash`, or later in an element it is data.
#[test]
fn a_value_cannot_become_a_switch_on_any_platform() {
    let f = Fixture::new();
    f.manifest(
        &r#"
[tools.say]
command = ["{helper}", "args", "{x}"]
params.x = { type = "string" }

[tools.after_dashes]
command = ["{helper}", "args", "--", "{x}"]
params.x = { type = "string" }

[tools.allowed]
command = ["{helper}", "args", "{x}"]
params.x = { type = "string", allow_dash = true }

[tools.inside]
command = ["{helper}", "args", "x{x}", "--name={x}"]
params.x = { type = "string" }
"#
        .replace("{helper}", &crate::support::helper_path()),
    );
    let mut s = f.serve().started();
    let args =
        |r: &Value| -> Vec<String> { text(r).split_terminator('\0').map(str::to_owned).collect() };
    let r = call(&mut s, "say", json!({"x": "-v"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        text(&r).contains("argument `x` must not begin with `-`"),
        "{r}"
    );
    let r = call(&mut s, "say", json!({"x": "/s"}));
    if cfg!(windows) {
        assert_eq!(r["isError"], true, "{r}");
        assert!(
            text(&r).contains("must not begin with `-` or `/`") && text(&r).contains("\"/s\""),
            "{r}"
        );
    } else {
        // A Unix program reads `/s` as a path: data.
        assert_eq!(args(&r), ["/s"], "{r}");
    }
    for value in ["-v", "/s", "/?"] {
        let r = call(&mut s, "after_dashes", json!({"x": value}));
        assert_eq!(args(&r), ["--", value], "{r}");
        let r = call(&mut s, "allowed", json!({"x": value}));
        assert_eq!(args(&r), [value], "{r}");
        let r = call(&mut s, "inside", json!({"x": value}));
        assert_eq!(
            args(&r),
            [format!("x{value}"), format!("--name={value}")],
            "{r}"
        );
    }
}

// Unix only: `git`, `printf`, `sort` and `grep` (the portable rule with the helper program:
// `a_value_cannot_become_a_switch_on_any_platform`).
#[cfg(unix)]
#[test]
fn a_value_cannot_become_an_option() {
    let f = repo();
    f.write("words.txt", "b\na\n-v\n");
    f.manifest(
        r#"
[templates.compare]
uri = "compare://{base}/{head}"
command = ["git", "diff", "{base}...{head}"]

[templates.show]
uri = "show://{x}"
command = ["printf", "%s|", "{x}", "--", "x{x}"]

[tools.sort]
command = ["sort", "{x}"]
params.x = { type = "string" }

[tools.grep]
command = ["git", "grep", "{x}"]
params.x = { type = "string" }

[tools.find]
command = ["grep", "-c", "--", "{x}", "words.txt"]
params.x = { type = "string" }

[tools.say]
command = ["printf", "%s|", "{x}", "{y}"]
params.x = { type = "string", allow_dash = true }
params.y = { type = "string", default = "end" }
"#,
    );
    let mut s = f.serve().started();

    // `git diff {base}...{head}` read as compare://--output%3Dpwned.txt/HEAD wrote a file.
    let e = s.err(
        "resources/read",
        json!({"uri": "compare://--output%3Dpwned.txt/HEAD"}),
    );
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(
        e["message"],
        "[templates.compare] variable `base` must not begin with `-` where it starts a command-line argument (it would be read as an option), got \"--output=pwned.txt\"; put a literal \"--\" before it in `command` or set `allow_dash = true`"
    );
    assert!(!f.path("pwned.txt").exists());
    // The same template still works, and a dash that does not start the element is data.
    let r = s.ok("resources/read", json!({"uri": "compare://HEAD~1/HEAD"}));
    assert!(
        r["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("+two")),
        "{r}"
    );
    let e = s.err("resources/read", json!({"uri": "compare://HEAD/-x"}));
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("exit code")),
        "the value reached git as data: {e}"
    );

    // After a literal `--` the value is data; before it, it is refused.
    let e = s.err("resources/read", json!({"uri": "show://-n"}));
    assert_eq!(e["code"], -32602);
    let r = s.ok("resources/read", json!({"uri": "show://n-"}));
    assert_eq!(r["contents"][0]["text"], "n-|--|xn-|");

    // `sort {x}` ran --output=FILE; `git grep {x}` ran --open-files-in-pager=CMD.
    let r = call(&mut s, "sort", json!({"x": "--output=pwned.txt"}));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        text(&r),
        "invalid arguments:\nargument `x` must not begin with `-` where it starts a command-line argument (it would be read as an option), got \"--output=pwned.txt\"; put a literal \"--\" before it in `command` or set `allow_dash = true`"
    );
    let r = call(
        &mut s,
        "grep",
        json!({"x": "--open-files-in-pager=touch pwned2.txt"}),
    );
    assert_eq!(r["isError"], true, "{r}");
    for made in ["pwned.txt", "pwned2.txt"] {
        assert!(!f.path(made).exists(), "{made}");
    }
    let r = call(&mut s, "grep", json!({"x": "two"}));
    assert_eq!(text(&r), "a.txt:two\n");

    // `--` earlier in `command`: the value is a pattern, not an option.
    let r = call(&mut s, "find", json!({"x": "-v"}));
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(text(&r), "1\n");

    // `allow_dash = true` lets that parameter through, and only that one.
    let r = call(&mut s, "say", json!({"x": "-n"}));
    assert_eq!(text(&r), "-n|end|");
    let r = call(&mut s, "say", json!({"x": "a", "y": "-n"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        text(&r).contains("argument `y` must not begin with `-`"),
        "{r}"
    );
}

#[test]
fn allow_dash_is_a_manifest_key_only_where_values_reach_a_program() {
    let f = Fixture::new();
    let errors = f.diagnose(
        r#"
[tools.t]
command = ["echo", "{x}"]
params.x = { type = "string", allow_dash = "yes" }
"#,
    );
    assert!(
        errors.iter().any(|e| e.contains("allow_dash")),
        "{errors:?}"
    );
    crate::sqlite::make_db(&f.path("d.db"), "CREATE TABLE t(x);");
    let errors = f.diagnose(
        r#"
[sqlite.d]
path = "d.db"

[sqlite.d.queries.q]
sql = "SELECT * FROM t WHERE x = :x"
params.x = { type = "string", allow_dash = true }
"#,
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("bad.toml:7:")
            && errors[0].ends_with(": `allow_dash` is for values passed to a program; query parameters are bound to SQL, never passed as arguments"),
        "{errors:?}"
    );
}

#[test]
fn max_size_above_256_mib_is_a_manifest_error() {
    let f = Fixture::new();
    f.mkdir("docs");
    let errors = f.diagnose(
        "[files.docs]\nroot = \"docs\"\nmax_size = \"20GiB\"\n\n[files.more]\nroot = \"docs\"\nmax_size = 268435457\n",
    );
    assert_eq!(
        errors,
        [
            "bad.toml:3:12: `max_size` must be at most 256 MiB (what is read is held in memory whole), got 20 GiB",
            "bad.toml:7:12: `max_size` must be at most 256 MiB (what is read is held in memory whole), got 268435457 bytes"
        ]
    );
    // So is a tool's or a command template's `max_output` (a 1 GiB output of a tool with
    // `max_output = "2GiB"` aborted the server).
    let errors = f.diagnose(
        "[tools.t]\ncommand = [\"ls\"]\nmax_output = \"2GiB\"\n\n[templates.c]\nuri = \"c://{x}\"\ncommand = [\"echo\", \"{x}\"]\nmax_output = \"257MiB\"\n",
    );
    assert_eq!(
        errors,
        [
            "bad.toml:3:14: `max_output` must be at most 256 MiB (a program's output is held in memory whole), got 2 GiB",
            "bad.toml:8:14: `max_output` must be at most 256 MiB (a program's output is held in memory whole), got 257 MiB"
        ]
    );
    // 256 MiB itself is allowed.
    f.manifest("[files.docs]\nroot = \"docs\"\nmax_size = \"256MiB\"\n\n[tools.t]\ncommand = [\"ls\"]\nmax_output = \"256MiB\"\n");
    let out = f.run(&["check"]);
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
}

#[test]
fn a_file_template_hides_what_a_files_source_hides() {
    let f = Fixture::new();
    f.write(".env", "TOKEN=secret");
    f.write(".git/config", "[core]");
    f.write(".gitignore", "*.log\n");
    f.write("build.log", "ignored");
    f.write("sub/.secret", "dot");
    f.write("sub/ok.md", "fine");
    f.write("ok.txt", "fine");
    let linked = crate::support::symlink(".env", f.path("env-link.txt"));
    let manifest = f.manifest(
        r#"
[templates.any]
uri = "any://{+path}"
file = "{path}"

[templates.all]
uri = "all://{+path}"
file = "{path}"
hidden = true
gitignore = false
"#,
    );
    std::fs::hard_link(&manifest, f.path("copy.toml")).expect("hard link");
    let mut s = f.serve().started();
    for uri in ["any://ok.txt", "any://sub/ok.md", "all://ok.txt"] {
        let r = s.ok("resources/read", json!({"uri": uri}));
        assert_eq!(r["contents"][0]["text"], "fine", "{uri}");
    }
    for hidden in [
        "any://.env",
        "any://.git/config",
        "any://build.log",
        "any://sub/.secret",
        "any://mcp-server.toml",
        "any://env-link.txt",
        "any://copy.toml",
        "all://.git/config",
    ] {
        let e = s.err("resources/read", json!({"uri": hidden}));
        assert_eq!(e["code"], -32002, "{hidden}: {e}");
    }
    for shown in [
        "all://.env",
        "all://build.log",
        "all://sub/.secret",
        "all://mcp-server.toml",
        "all://env-link.txt",
    ] {
        if shown.contains("link") && !linked {
            continue;
        }
        s.ok("resources/read", json!({"uri": shown}));
    }
    let values = |s: &mut Server, uri: &str| -> Vec<String> {
        let r = s.ok(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": uri},
                   "argument": {"name": "path", "value": ""}}),
        );
        let mut v: Vec<String> = r["completion"]["values"]
            .as_array()
            .expect("values")
            .iter()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect();
        v.sort();
        v
    };
    assert_eq!(values(&mut s, "any://{+path}"), ["ok.txt"]);
    let mut all = vec![
        "build.log",
        "copy.toml",
        "env-link.txt",
        "mcp-server.toml",
        "ok.txt",
    ];
    all.retain(|v| linked || !v.contains("link"));
    assert_eq!(values(&mut s, "all://{+path}"), all);

    let errors = f.diagnose(
        "[templates.t]\nuri = \"t://{x}\"\ncommand = [\"echo\", \"{x}\"]\nhidden = true\ngitignore = false\n",
    );
    assert_eq!(
        errors,
        [
            "bad.toml:1:12: `gitignore` only applies to the `file` backend",
            "bad.toml:1:12: `hidden` only applies to the `file` backend"
        ]
    );
}

// (For the FIFO tests: Unix only.)
#[cfg(unix)]
fn mkfifo(path: &std::path::Path) {
    let out = std::process::Command::new("mkfifo")
        .arg(path)
        .output()
        .expect("run mkfifo");
    assert!(out.status.success(), "mkfifo failed");
}

// Unix only: FIFOs (Windows has none in its file system; its devices are refused by name:
// `platform::windows::tests`).
#[cfg(unix)]
#[test]
fn a_sqlite_file_swapped_for_a_fifo_is_refused_and_the_source_recovers() {
    let f = Fixture::new();
    crate::sqlite::make_db(
        &f.path("d.db"),
        "CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);",
    );
    f.manifest("[sqlite.d]\npath = \"d.db\"\ntimeout = \"2s\"\nwatch = false\n");
    let mut s = f.serve().started();
    let rows = |s: &mut Server| crate::sqlite::read_json(s, "sqlite://d/tables/t")["rows"].clone();
    assert_eq!(rows(&mut s), json!([{"x": 1}, {"x": 2}]));

    // Swapped for a FIFO: every read is answered (none waits for a writer that never comes).
    std::fs::rename(f.path("d.db"), f.path("d.db.real")).expect("move the database away");
    mkfifo(&f.path("d.db"));
    let started = std::time::Instant::now();
    let ids: Vec<Value> = (0..16).map(|i| json!(format!("fifo-{i}"))).collect();
    for id in &ids {
        s.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                       "params": {"uri": "sqlite://d/tables/t"}}),
        );
    }
    for id in &ids {
        let r = s.response(id);
        let message = r["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("not a regular file"), "{r}");
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // The real database back: it answers again.
    std::fs::remove_file(f.path("d.db")).expect("remove the FIFO");
    std::fs::rename(f.path("d.db.real"), f.path("d.db")).expect("restore the database");
    assert_eq!(rows(&mut s), json!([{"x": 1}, {"x": 2}]));
}

// Unix only: FIFOs (see above).
#[cfg(unix)]
#[test]
fn a_sqlite_path_that_is_a_fifo_is_a_clear_error_at_startup() {
    let f = Fixture::new();
    mkfifo(&f.path("d.db"));
    let errors = f.diagnose("[sqlite.d]\npath = \"d.db\"\n");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("bad.toml:2:8: ") && errors[0].contains("not a file"),
        "{errors:?}"
    );
}

/// The names in the fixture's root that start with `d.db`, sorted.
fn db_files(f: &Fixture) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(f.root())
        .expect("read the fixture")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("d.db"))
        .collect();
    names.sort();
    names
}

fn wal_fixture() -> Fixture {
    let f = Fixture::new();
    crate::sqlite::make_db(
        &f.path("d.db"),
        "PRAGMA journal_mode = WAL; CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);",
    );
    f.manifest(
        r#"
[sqlite.d]
path = "d.db"
watch = false

[sqlite.d.queries.big]
sql = "SELECT x FROM t WHERE x >= :min"
params.min = { type = "integer", default = 0 }

[templates.row]
uri = "row://{x}"
sqlite = "d"
sql = "SELECT x FROM t WHERE x = :x"
"#,
    );
    f
}

#[test]
fn a_wal_database_without_its_wal_file_is_read_without_creating_one() {
    let f = wal_fixture();
    // A cleanly closed WAL database: the main file holds everything, nothing beside it.
    assert_eq!(db_files(&f), ["d.db"]);
    let mut s = f.serve().started();
    let rows = crate::sqlite::read_json(&mut s, "sqlite://d/tables/t")["rows"].clone();
    assert_eq!(rows, json!([{"x": 1}, {"x": 2}]));
    crate::sqlite::read_json(&mut s, "sqlite://d/queries/big?min=2");
    crate::sqlite::read_json(&mut s, "row://1");
    s.ok("resources/read", json!({"uri": "sqlite://d/schema"}));
    assert_eq!(
        db_files(&f),
        ["d.db"],
        "files were created beside the database"
    );
    drop(s);
    assert_eq!(db_files(&f), ["d.db"], "files were left behind");
}

#[test]
fn a_wal_database_with_a_live_writer_is_read_through_its_wal_and_left_to_the_writer() {
    let f = wal_fixture();
    let writer = rusqlite::Connection::open(f.path("d.db")).expect("a writer");
    writer
        .execute_batch("PRAGMA wal_autocheckpoint = 0; INSERT INTO t VALUES (3);")
        .expect("write into the WAL");
    assert_eq!(db_files(&f), ["d.db", "d.db-shm", "d.db-wal"]);
    let mut s = f.serve().started();
    // The row that only the WAL holds is read.
    let rows = crate::sqlite::read_json(&mut s, "sqlite://d/tables/t")["rows"].clone();
    assert_eq!(rows, json!([{"x": 1}, {"x": 2}, {"x": 3}]));
    writer
        .execute_batch("INSERT INTO t VALUES (4);")
        .expect("write again");
    let rows = crate::sqlite::read_json(&mut s, "sqlite://d/tables/t")["rows"].clone();
    assert_eq!(rows, json!([{"x": 1}, {"x": 2}, {"x": 3}, {"x": 4}]));
    // The writer closes while the server still runs: as the last connection it checkpoints and
    // removes its files (no idle connection of ours keeps them).
    writer
        .close()
        .map_err(|(_, e)| e)
        .expect("close the writer");
    assert_eq!(db_files(&f), ["d.db"]);
    // Its content is now in the main file, read without a WAL.
    let rows = crate::sqlite::read_json(&mut s, "sqlite://d/tables/t")["rows"].clone();
    assert_eq!(rows.as_array().map(Vec::len), Some(4));
    drop(s);
    assert_eq!(db_files(&f), ["d.db"]);
}

// Unix only: Linux's limits (128 KiB per argument, ARG_MAX with the environment) and `echo`,
// `printf` and `wc`; Windows' limit (32 767 UTF-16 units for the whole command line, the
// environment apart) is met in tools::hostile_values_reach_the_program_as_one_literal_argv_element.
#[cfg(unix)]
#[test]
fn values_too_large_to_pass_to_a_program_are_invalid_params() {
    let f = Fixture::new();
    f.manifest(
        r#"
[templates.echo]
uri = "echo://{x}"
command = ["echo", "{x}"]
tool = false

[templates.triple]
uri = "triple://{x}"
command = ["echo", "{x}{x}{x}"]
tool = false

[tools.echo]
command = ["echo", "{x}"]
params.x = { type = "string" }

[tools.script]
run = 'printf %s "$x" | wc -c'
params.x = { type = "string" }
"#,
    );
    let mut s = f.serve().started();
    let big = "a".repeat(200 * 1024);
    // A URI that long is refused for its length (at most 64 KiB) before any template sees it;
    // a value written three times in one element passes the system's limit within it.
    let e = s.err("resources/read", json!({"uri": format!("echo://{big}")}));
    assert_eq!(e["code"], -32602, "{e}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("the URI `echo://aaa") && m.len() < 1024),
        "{e}"
    );
    let third = "a".repeat(50 * 1024);
    let e = s.err(
        "resources/read",
        json!({"uri": format!("triple://{third}")}),
    );
    assert_eq!(e["code"], -32602, "{e}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("[templates.triple] the variables are too large")),
        "{e}"
    );
    // A value with a NUL: the same error class.
    let e = s.err("resources/read", json!({"uri": "echo://a%00b"}));
    assert_eq!(e["code"], -32602, "{e}");
    for tool in ["echo", "script"] {
        let r = call(&mut s, tool, json!({"x": big}));
        assert_eq!(r["isError"], true, "{r}");
        assert!(text(&r).starts_with("invalid arguments:\n"), "{r}");
    }
    // Large but passable values still run.
    let fine = "b".repeat(100 * 1024);
    let r = call(&mut s, "script", json!({"x": fine}));
    assert_eq!(text(&r).trim(), "102400", "{r}");
    let fine = "b".repeat(60 * 1024);
    let r = s.ok("resources/read", json!({"uri": format!("echo://{fine}")}));
    assert_eq!(r["contents"][0]["text"].as_str().map(str::len), Some(61441));
}

/// A template variable declared `allow_dash = true` passes a value beginning with `-`; the
/// template's other variables are still refused one.
#[test]
fn a_template_variable_with_allow_dash_passes_a_dash_value() {
    let f = Fixture::new();
    f.manifest(
        &r#"
[templates.show]
uri = "show://{x}/{y}"
command = ["{helper}", "out", "{x}", "out", "|", "out", "{y}", "out", "|"]
vars.x = { allow_dash = true }
"#
        .replace("{helper}", &crate::support::helper_path()),
    );
    let mut s = f.serve().started();
    let r = s.ok("resources/read", json!({"uri": "show://-n/b"}));
    assert_eq!(r["contents"][0]["text"], "-n|b|", "{r}");
    let e = s.err("resources/read", json!({"uri": "show://a/-n"}));
    assert_eq!(e["code"], -32602, "{e}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("variable `y` must not begin with `-`")),
        "{e}"
    );
}

/// A watched files source reads from its root folder kept open: swapping the root for a symlink
/// to an outside folder never serves the outside, neither before the watcher notices (the folder
/// kept open is the moved one) nor after (the root is opened again, and a symlink is refused).
// Unix only: Windows holds a root being read open without FILE_SHARE_DELETE, so it cannot be
// moved away meanwhile (`platform::windows`), and making a symlink needs a privilege there.
#[cfg(unix)]
#[test]
fn a_watched_root_swapped_for_a_symlink_never_serves_the_outside() {
    let f = Fixture::new();
    f.write("docs/a.md", "inside");
    f.write("outside/a.md", "SECRET");
    f.manifest("[files.docs]\nroot = \"docs\"\n");
    let mut s = f.serve().started();
    let uri = f.uri("docs/a.md");
    // Answered once the watcher watches the root; the read keeps the root folder open.
    s.ok("resources/subscribe", json!({"uri": uri}));
    let first = s.ok("resources/read", json!({"uri": uri}));
    assert_eq!(first["contents"][0]["text"], "inside");
    std::fs::rename(f.path("docs"), f.path("docs.old")).expect("move the root away");
    assert!(crate::support::symlink(f.path("outside"), f.path("docs")));
    let read = |s: &mut Server| s.call("resources/read", json!({"uri": uri}));
    let during = read(&mut s);
    assert!(!during.to_string().contains("SECRET"), "{during}");
    s.wait_for(|v| v["method"] == "notifications/resources/list_changed");
    let after = read(&mut s);
    assert!(!after.to_string().contains("SECRET"), "{after}");
    assert_eq!(after["error"]["code"], -32002, "{after}");
}

/// Messages quote a value cut (`crate::quote`): `"éé…" (7000000 characters)`, a few hundred bytes.
fn assert_short(m: &str) {
    assert!(m.len() < 1024, "a message of {} bytes: {m:.300}", m.len());
    assert!(
        m.contains(" characters)"),
        "says how long the value was: {m:.300}"
    );
}

/// A URI of 14 MB that fits a template's scheme (`note199://` then 7 million `é`), to read or to
/// subscribe to: refused by its length before any template is matched against it (matching it
/// took 4 s on the runtime thread), with a message that quotes it cut (the pattern error a match
/// led to quoted the whole value). Tool arguments of the same size get short messages too. The
/// server answers the next requests.
#[test]
fn a_uri_or_an_argument_of_megabytes_gets_a_short_error() {
    let f = Fixture::new();
    f.write("notes/abc.md", "hello");
    let mut manifest = String::new();
    for i in 0..200 {
        manifest.push_str(&format!(
            "[templates.note{i}]\nuri = \"note{i}://{{name}}\"\nfile = \"notes/{{name}}.md\"\nvars.name = {{ pattern = \"^[a-z]+$\" }}\n\n"
        ));
    }
    manifest.push_str(
        r#"
[templates.raw]
uri = "raw://{name}"
file = "notes/{name}.md"

[tools.echo]
command = ["echo", "{x}"]
params.x = { type = "string", pattern = "^[a-z]+$" }
"#,
    );
    f.manifest(&manifest);
    let mut s = f.serve().started();
    let value = "é".repeat(7_000_000);
    let uri = format!("note199://{value}");
    for method in ["resources/read", "resources/subscribe"] {
        let e = s.err(method, json!({"uri": uri}));
        assert_eq!(e["code"], -32602, "{method}: {:.300}", e.to_string());
        let m = e["message"].as_str().unwrap_or_default();
        assert_short(m);
        // Refused for its length: a template's match would have broken `name`'s pattern.
        assert!(
            m.starts_with("the URI `note199://éé")
                && m.ends_with("…` (7000010 characters) is 14000010 bytes long; a URI may have at most 64 KiB (65536 bytes): shorten the values in it"),
            "{method}: {m:.300}"
        );
        assert!(e.to_string().len() < 1024, "no copy in `data` either");
    }
    // Through a template without rules the file was not found, and "not found" quoted the URI
    // whole (in `data` too). Refused the same way now; a URI under the limit that is not found
    // is quoted cut in the message and given whole in `data`.
    let e = s.err("resources/read", json!({"uri": format!("raw://{value}")}));
    assert_eq!(e["code"], -32602);
    assert!(e.to_string().len() < 1024, "{:.300}", e.to_string());
    let long = format!("raw://{}", "x".repeat(60_000));
    let e = s.err("resources/read", json!({"uri": long}));
    assert_eq!(e["code"], -32002);
    assert_eq!(
        e["message"],
        format!(
            "resource not found: raw://{}… (60006 characters)",
            "x".repeat(94)
        )
    );
    assert_eq!(e["data"]["uri"], long);
    // A ping, and a read that goes through the same template, are answered.
    assert_eq!(s.ok("ping", json!({})), json!({}));
    let r = s.ok("resources/read", json!({"uri": "note199://abc"}));
    assert_eq!(r["contents"][0]["text"], "hello");
    // The same value as arguments: of a tool, and of the template tools (the one with a pattern
    // breaks it; the other one's URI would be 42 MB, which the read refuses).
    for (tool, args, says) in [
        (
            "echo",
            json!({"x": value}),
            "argument `x` must match the pattern",
        ),
        (
            "note199",
            json!({"name": value}),
            "argument `name` must match the pattern",
        ),
        (
            "echo",
            json!({"x": "a", value.clone(): 1}),
            "unknown argument `éé",
        ),
        ("raw", json!({"name": value}), "reading `raw://%C3%A9"),
        (
            "read_resource",
            json!({"uri": uri}),
            "the URI `note199://éé",
        ),
    ] {
        let r = call(&mut s, tool, args);
        assert_eq!(r["isError"], true, "{tool}: {:.300}", r.to_string());
        assert_short(text(&r));
        assert!(text(&r).contains(says), "{tool}: {:.300}", text(&r));
    }
    // A method of that name is unknown, in a few hundred bytes.
    let e = s.err(&value, json!({}));
    assert_eq!(e["code"], -32601);
    assert_short(e["message"].as_str().unwrap_or_default());
    assert_eq!(s.ok("ping", json!({})), json!({}));
}
