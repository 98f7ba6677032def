//! `[git.NAME]`: the fixed resources (log, status, branches, diff) and the templates (commit, blob)
//! on repositories built here with the git CLI, compared with what the git CLI prints; bare
//! repositories, subfolder discovery, unborn and detached HEADs, submodules, odd path names,
//! caps, completion and the errors (bad rev → -32602 naming it, missing path → not found).

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::support::{Fixture, Server, list_all, stderr};

/// A repository driven through the git CLI with fixed names and a clock that advances one
/// minute per command, so hashes, dates and log order are reproducible.
struct Repo {
    dir: PathBuf,
    tick: Cell<i64>,
}

impl Repo {
    /// `git init` (with `extra` arguments such as `--bare`) in `dir`, branch `main`.
    fn init(dir: PathBuf, extra: &[&str]) -> Repo {
        std::fs::create_dir_all(&dir).expect("repo dir");
        let repo = Repo {
            dir,
            tick: Cell::new(0),
        };
        let mut args = vec!["init", "-q", "-b", "main"];
        args.extend_from_slice(extra);
        repo.git(&args);
        repo
    }

    fn command(&self, args: &[&str]) -> Command {
        let t = 1_700_000_000 + 60 * self.tick.get();
        self.tick.set(self.tick.get() + 1);
        let date = format!("{t} +0100");
        let mut c = Command::new("git");
        c.args(["-c", "color.ui=never", "-c", "core.quotePath=false"])
            .args(["-c", "protocol.file.allow=always"])
            .args(args)
            .current_dir(&self.dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "Ada Tester")
            .env("GIT_AUTHOR_EMAIL", "ada@example.com")
            .env("GIT_COMMITTER_NAME", "Ada Tester")
            .env("GIT_COMMITTER_EMAIL", "ada@example.com")
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run git")
    }

    /// Runs git, fails the test when it fails, returns stdout.
    fn git(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            stderr(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let p = self.dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("dirs");
        }
        std::fs::write(p, contents).expect("write");
    }

    /// `git add -A` and commit.
    fn commit(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    fn short(&self, rev: &str) -> String {
        self.git(&["rev-parse", "--short", rev]).trim().to_owned()
    }

    fn full(&self, rev: &str) -> String {
        self.git(&["rev-parse", rev]).trim().to_owned()
    }

    /// What `git://NAME/log` should say for the last `n` commits.
    fn expected_log(&self, n: usize) -> String {
        self.git(&["log", &format!("-n{n}"), "--format=%h%x09%aI%x09%an%x09%s"])
    }
}

/// Bytes of a small PNG-like binary file (a NUL makes it binary for git and for us).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01\x00\xff";

const SPACE_PATH: &str = "space dir/a b.txt";
const ODD_PATH: &str = "odd/#1?.md";

/// A history with a tag, a branch merged with a merge commit, a rename, a binary file and paths
/// with a space, `#` and `?`:
///
/// ```text
/// * rename guide          (main, tag light)
/// *   Merge branch 'feature'
/// |\
/// | * feature work        (feature)
/// * | main work
/// |/
/// * initial               (tag v1.0, annotated)
/// ```
fn history(dir: PathBuf) -> Repo {
    let r = Repo::init(dir, &[]);
    r.write("a.txt", "one\n");
    r.write("docs/guide.md", "# Guide\n");
    r.write(SPACE_PATH, "spaced\n");
    r.write(ODD_PATH, "odd name\n");
    r.write("logo.png", PNG);
    r.commit("initial\n\nThe first commit.\nIt has a body.");
    r.git(&["tag", "-a", "v1.0", "-m", "version 1.0"]);
    r.git(&["checkout", "-q", "-b", "feature"]);
    r.write("a.txt", "one\nfeature\n");
    r.commit("feature work");
    r.git(&["checkout", "-q", "main"]);
    r.write("b.txt", "bee\n");
    r.commit("main work");
    r.git(&[
        "merge",
        "-q",
        "--no-ff",
        "feature",
        "-m",
        "Merge branch 'feature'",
    ]);
    r.git(&["mv", "docs/guide.md", "docs/manual.md"]);
    r.commit("rename guide");
    r.git(&["tag", "light"]);
    r
}

/// Uncommitted changes of every kind: staged and unstaged edits, a staged new file, a staged
/// rename of a path with a space, an unstaged deletion, untracked files and an untracked folder.
fn dirty(r: &Repo) {
    r.write("a.txt", "one\nfeature\nunstaged\n");
    r.write("b.txt", "bee\nstaged\n");
    r.git(&["add", "b.txt"]);
    r.write("c.txt", "new and staged\n");
    r.git(&["add", "c.txt"]);
    r.git(&["mv", SPACE_PATH, "space dir/c d.txt"]);
    std::fs::remove_file(r.dir.join("logo.png")).expect("rm");
    r.write("u.txt", "untracked\n");
    r.write("newdir/x.txt", "untracked folder\n");
}

fn serve(f: &Fixture, manifest: &str) -> Server {
    f.manifest(manifest);
    f.serve().started()
}

fn read(s: &mut Server, uri: &str) -> Value {
    let r = s.ok("resources/read", json!({ "uri": uri }));
    let c = r["contents"][0].clone();
    assert_eq!(c["uri"], uri);
    c
}

fn read_text(s: &mut Server, uri: &str) -> String {
    let c = read(s, uri);
    c["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{uri} should be text: {c}"))
        .to_owned()
}

fn read_err(s: &mut Server, uri: &str) -> Value {
    s.err("resources/read", json!({ "uri": uri }))
}

fn complete(s: &mut Server, template: &str, var: &str, value: &str, context: Value) -> Value {
    let mut params = json!({
        "ref": {"type": "ref/resource", "uri": template},
        "argument": {"name": var, "value": value}
    });
    if !context.is_null() {
        params["context"] = json!({ "arguments": context });
    }
    s.ok("completion/complete", params)["completion"].clone()
}

/// The blob URI of `path` at `rev`, encoded as an RFC 6570 client would expand
/// `git://NAME/blob/{rev}/{+path}` (space, `#`, `?` percent-encoded).
fn blob_uri(name: &str, rev: &str, path: &str) -> String {
    let enc = |s: &str, keep_slash: bool| {
        let mut out = String::new();
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (keep_slash && b == b'/') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    };
    format!("git://{name}/blob/{}/{}", enc(rev, false), enc(path, true))
}

#[test]
fn fixed_resources_match_the_git_cli_on_a_working_tree() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    dirty(&r);
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\ndescription = \"Acme\"\n");

    let (all, _) = list_all(&mut s, "resources/list", "resources");
    let uris: Vec<&str> = all.iter().filter_map(|r| r["uri"].as_str()).collect();
    assert_eq!(
        uris,
        [
            "git://repo/log",
            "git://repo/status",
            "git://repo/branches",
            "git://repo/diff"
        ]
    );
    for res in &all {
        assert_eq!(res["mimeType"], "text/plain", "{res}");
        let d = res["description"].as_str().unwrap_or_default();
        assert!(d.starts_with("Acme: "), "{d}");
    }
    let (templates, _) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    let templates: Vec<&str> = templates
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert_eq!(
        templates,
        ["git://repo/commit/{rev}", "git://repo/blob/{rev}/{+path}"]
    );

    let log = read_text(&mut s, "git://repo/log");
    assert_eq!(log, r.expected_log(50));
    assert_eq!(log.lines().count(), 5);
    let first = log.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("{}\t2023-11-1", r.short("HEAD"))),
        "{first}"
    );
    assert!(
        first.ends_with("+01:00\tAda Tester\trename guide"),
        "{first}"
    );

    let status = read_text(&mut s, "git://repo/status");
    assert_eq!(status, r.git(&["status", "--porcelain"]));
    // What that is, spelled out (so a change in git's own output cannot hide a change in ours).
    assert_eq!(
        status,
        " M a.txt\nM  b.txt\nA  c.txt\n D logo.png\nR  \"space dir/a b.txt\" -> \"space dir/c d.txt\"\n?? newdir/\n?? u.txt\n"
    );

    let branches = read_text(&mut s, "git://repo/branches");
    assert_eq!(branches, r.git(&["branch", "-a"]));
    assert_eq!(branches, "  feature\n* main\n");

    let diff = read_text(&mut s, "git://repo/diff");
    assert_eq!(diff, r.git(&["diff", "HEAD"]));
    assert!(
        diff.contains("+unstaged\n") && diff.contains("+staged\n"),
        "{diff}"
    );
    assert!(diff.contains("rename from space dir/a b.txt"), "{diff}");
    assert!(
        diff.contains("Binary files a/logo.png and /dev/null differ"),
        "{diff}"
    );
    assert!(
        !diff.contains("untracked"),
        "untracked files are not in git diff HEAD"
    );
}

#[test]
fn log_limit_and_a_clean_tree() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    // Same content, newer modification time: git would refresh the index; we must not write.
    std::thread::sleep(std::time::Duration::from_millis(20));
    r.write("a.txt", "one\nfeature\n");
    let index = r.dir.join(".git/index");
    let before = std::fs::read(&index).expect("index");
    let mut s = serve(&f, "[git.h]\npath = \"repo\"\nlog_limit = 3\n");
    let log = read_text(&mut s, "git://h/log");
    assert_eq!(log, r.expected_log(3));
    assert_eq!(log.lines().count(), 3);
    assert_eq!(read_text(&mut s, "git://h/status"), "");
    assert_eq!(read_text(&mut s, "git://h/diff"), "");
    assert_eq!(
        std::fs::read(&index).expect("index"),
        before,
        "reads never write"
    );
    assert!(!r.dir.join(".git/index.lock").exists());
    // The description names what the resource holds and the limit.
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    let d = all[0]["description"].as_str().unwrap_or_default();
    assert!(d.contains("last 3 commits") && d.contains("[git.h]"), "{d}");
}

#[test]
fn commit_shows_hash_author_date_message_and_patch() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");

    // The root commit, through an annotated tag: its patch adds every file.
    let text = read_text(&mut s, "git://repo/commit/v1.0");
    let head = format!(
        "commit {}\nAuthor: Ada Tester <ada@example.com>\nDate:   {}\n\n    initial\n\n    The first commit.\n    It has a body.\n\n",
        r.full("v1.0^{commit}"),
        r.git(&["log", "-1", "--format=%aI", "v1.0"]).trim()
    );
    assert!(text.starts_with(&head), "{text}");
    assert!(text.contains("new file mode 100644"), "{text}");
    assert!(text.contains("+# Guide\n"), "{text}");
    assert!(
        text.contains("Binary files /dev/null and b/logo.png differ"),
        "{text}"
    );
    assert!(!text.contains("Merge:"), "{text}");

    // A rename.
    let text = read_text(&mut s, "git://repo/commit/HEAD");
    assert!(text.starts_with(&format!("commit {}\n", r.full("HEAD"))));
    assert!(
        text.contains("rename from docs/guide.md\nrename to docs/manual.md"),
        "{text}"
    );
    assert_eq!(text, read_text(&mut s, "git://repo/commit/light"));
    assert_eq!(text, read_text(&mut s, "git://repo/commit/main"));

    // The merge: both parents, and the patch against the first.
    let merge = read_text(&mut s, "git://repo/commit/HEAD~1");
    let parents = format!("Merge: {} {}\n", r.short("HEAD~1^1"), r.short("HEAD~1^2"));
    assert!(merge.contains(&parents), "{merge}");
    assert!(
        merge.contains(&format!(
            "Diff against the first parent {}:",
            r.short("HEAD~1^1")
        )),
        "{merge}"
    );
    assert!(merge.contains("+feature\n"), "{merge}");
    // `HEAD~1^2` (the caret encoded, as a client expanding `{rev}` sends it) is the feature tip.
    let feature = read_text(&mut s, "git://repo/commit/HEAD~1%5E2");
    assert!(feature.starts_with(&format!("commit {}\n", r.full("feature"))));
    // A full hash and a short one.
    let full = read_text(&mut s, &format!("git://repo/commit/{}", r.full("feature")));
    assert_eq!(full, feature);
    let short = read_text(&mut s, &format!("git://repo/commit/{}", r.short("feature")));
    assert_eq!(short, feature);
}

#[test]
fn bad_revisions_are_invalid_params_naming_the_rev() {
    let f = Fixture::new();
    history(f.path("repo"));
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    for (uri, rev) in [
        ("git://repo/commit/no-such-branch", "no-such-branch"),
        ("git://repo/commit/HEAD~99", "HEAD~99"),
        ("git://repo/blob/v9.9/a.txt", "v9.9"),
        ("git://repo/blob/deadbeef/a.txt", "deadbeef"),
    ] {
        let e = read_err(&mut s, uri);
        assert_eq!(e["code"], -32602, "{uri}: {e}");
        let m = e["message"].as_str().unwrap_or_default();
        assert!(m.contains(&format!("`{rev}`")), "{uri}: {m}");
    }
    // A rev naming a blob is not a commit.
    let e = read_err(&mut s, "git://repo/commit/HEAD%3Aa.txt");
    assert_eq!(e["code"], -32602);
    let m = e["message"].as_str().unwrap_or_default();
    assert!(
        m.contains("`HEAD:a.txt`") && m.contains("not a commit"),
        "{m}"
    );
    // The stateless era answers the same code.
    let e = s.modern(
        "resources/read",
        json!({"uri": "git://repo/commit/no-such-branch"}),
    );
    assert_eq!(e["error"]["code"], -32602, "{e}");
}

#[test]
fn blobs_at_a_revision_text_binary_and_odd_names() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    r.write("a.txt", "changed in the work tree only\n");
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");

    let c = read(&mut s, "git://repo/blob/HEAD/a.txt");
    assert_eq!(c["text"], "one\nfeature\n");
    assert_eq!(c["text"], r.git(&["show", "HEAD:a.txt"]));
    assert_eq!(c["mimeType"], "text/plain");
    assert_eq!(read_text(&mut s, "git://repo/blob/v1.0/a.txt"), "one\n");
    let c = read(&mut s, "git://repo/blob/v1.0/docs/guide.md");
    assert_eq!(c["text"], "# Guide\n");
    assert_eq!(c["mimeType"], "text/markdown");
    // A rev with a slash is one encoded segment.
    r.git(&["branch", "topic/x", "v1.0"]);
    assert_eq!(
        read_text(&mut s, "git://repo/blob/topic%2Fx/a.txt"),
        "one\n"
    );

    // Binary content comes back as base64 that decodes to the exact bytes.
    let c = read(&mut s, "git://repo/blob/HEAD/logo.png");
    assert!(c.get("text").is_none(), "{c}");
    assert_eq!(c["mimeType"], "image/png");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(c["blob"].as_str().expect("blob"))
        .expect("base64");
    assert_eq!(bytes, PNG);

    // Space, `#` and `?` round-trip through the URI.
    for path in [SPACE_PATH, ODD_PATH] {
        let uri = blob_uri("repo", "HEAD", path);
        assert!(!uri.contains(' ') && !uri.contains('#') && !uri.contains('?'));
        let c = read(&mut s, &uri);
        assert_eq!(
            c["text"],
            r.git(&["show", &format!("HEAD:{path}")]),
            "{path}"
        );
    }
    assert_eq!(
        read_text(&mut s, "git://repo/blob/HEAD/space%20dir/a%20b.txt"),
        "spaced\n"
    );

    // Not found: a missing path, a path only in the work tree, a folder, dot segments, and a
    // path that only exists at another revision.
    r.write("only-here.txt", "x");
    for uri in [
        "git://repo/blob/HEAD/missing.txt",
        "git://repo/blob/HEAD/only-here.txt",
        "git://repo/blob/HEAD/docs",
        "git://repo/blob/HEAD/docs/",
        "git://repo/blob/HEAD/docs/../a.txt",
        "git://repo/blob/HEAD/./a.txt",
        "git://repo/blob/HEAD//a.txt",
        "git://repo/blob/HEAD/docs/guide.md",
        "git://repo/blob/v1.0/docs/manual.md",
        "git://repo/blob/HEAD/",
        "git://repo/blob/HEAD",
        "git://repo/nothing",
        "git://repo/log/extra",
    ] {
        let e = read_err(&mut s, uri);
        assert_eq!(e["code"], -32002, "{uri}: {e}");
        assert_eq!(e["message"], format!("resource not found: {uri}"));
    }
}

#[test]
fn completion_of_revs_and_tracked_paths() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    r.git(&["branch", "topic/x", "v1.0"]);
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    let blob = "git://repo/blob/{rev}/{+path}";
    let commit = "git://repo/commit/{rev}";

    let c = complete(&mut s, commit, "rev", "", Value::Null);
    assert_eq!(
        c["values"],
        json!(["HEAD", "feature", "light", "main", "topic/x", "v1.0"])
    );
    assert_eq!(c["total"], 6);
    assert_eq!(c["hasMore"], false);
    let c = complete(&mut s, blob, "rev", "t", Value::Null);
    assert_eq!(c["values"], json!(["topic/x"]));
    let c = complete(&mut s, blob, "rev", "zzz", Value::Null);
    assert_eq!(c["values"], json!([]));

    // Paths at HEAD by default; at the rev given in the context otherwise.
    let c = complete(&mut s, blob, "path", "", Value::Null);
    assert_eq!(
        c["values"],
        json!([
            "a.txt",
            "b.txt",
            "docs/manual.md",
            "logo.png",
            ODD_PATH,
            SPACE_PATH
        ])
    );
    let c = complete(&mut s, blob, "path", "docs/", Value::Null);
    assert_eq!(c["values"], json!(["docs/manual.md"]));
    let c = complete(&mut s, blob, "path", "docs/", json!({"rev": "v1.0"}));
    assert_eq!(c["values"], json!(["docs/guide.md"]));
    let c = complete(&mut s, blob, "path", "do", json!({"rev": "v1.0"}));
    assert_eq!(c["values"], json!(["docs/guide.md"]));
    let c = complete(&mut s, blob, "path", "b", json!({"rev": "v1.0"}));
    assert_eq!(c["values"], json!([]), "b.txt came later");
    let c = complete(&mut s, blob, "path", "space", Value::Null);
    assert_eq!(c["values"], json!([SPACE_PATH]));
    // A rev still being typed gives nothing rather than an error.
    let c = complete(&mut s, blob, "path", "", json!({"rev": "no-such"}));
    assert_eq!(c["values"], json!([]));
    // The commit template has no `path`.
    let c = complete(&mut s, commit, "path", "", Value::Null);
    assert_eq!(c["values"], json!([]));
}

#[test]
fn path_completion_is_capped_at_one_hundred() {
    let f = Fixture::new();
    let r = Repo::init(f.path("repo"), &[]);
    for i in 0..150 {
        r.write(&format!("many/f{i:03}.txt"), format!("{i}\n"));
    }
    r.write("other.txt", "o\n");
    r.commit("many files");
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    let c = complete(
        &mut s,
        "git://repo/blob/{rev}/{+path}",
        "path",
        "many/",
        Value::Null,
    );
    let values = c["values"].as_array().expect("values");
    assert_eq!(values.len(), 100);
    assert_eq!(values[0], "many/f000.txt");
    assert_eq!(c["total"], 150);
    assert_eq!(c["hasMore"], true);
    let c = complete(
        &mut s,
        "git://repo/blob/{rev}/{+path}",
        "path",
        "many/f14",
        Value::Null,
    );
    assert_eq!(c["total"], 10);
    assert_eq!(c["hasMore"], false);
}

#[test]
fn an_empty_repository_has_an_empty_log() {
    let f = Fixture::new();
    let r = Repo::init(f.path("repo"), &[]);
    r.write("first.txt", "not committed yet\n");
    r.write("staged.txt", "staged\n");
    r.git(&["add", "staged.txt"]);
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    assert_eq!(read_text(&mut s, "git://repo/log"), "");
    assert_eq!(read_text(&mut s, "git://repo/branches"), "");
    assert_eq!(
        read_text(&mut s, "git://repo/status"),
        r.git(&["status", "--porcelain"])
    );
    assert_eq!(
        read_text(&mut s, "git://repo/status"),
        "A  staged.txt\n?? first.txt\n"
    );
    // With no HEAD, the diff compares the index and work tree with the empty tree.
    let diff = read_text(&mut s, "git://repo/diff");
    assert!(
        diff.starts_with("diff --git a/staged.txt b/staged.txt\nnew file mode 100644\n"),
        "{diff}"
    );
    let e = read_err(&mut s, "git://repo/commit/HEAD");
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap_or_default().contains("`HEAD`"));
    let e = read_err(&mut s, "git://repo/blob/HEAD/staged.txt");
    assert_eq!(e["code"], -32602);
    let blob = "git://repo/blob/{rev}/{+path}";
    assert_eq!(
        complete(&mut s, blob, "rev", "", Value::Null)["values"],
        json!([])
    );
    assert_eq!(
        complete(&mut s, blob, "path", "", Value::Null)["values"],
        json!([])
    );
}

#[test]
fn a_detached_head() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    r.git(&["checkout", "-q", "--detach", "HEAD~2"]);
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    let branches = read_text(&mut s, "git://repo/branches");
    assert_eq!(branches, r.git(&["branch", "-a"]));
    assert_eq!(
        branches,
        format!(
            "* (HEAD detached at {})\n  feature\n  main\n",
            r.short("HEAD")
        )
    );
    let log = read_text(&mut s, "git://repo/log");
    assert_eq!(log, r.expected_log(50));
    assert!(log.starts_with(&r.short("HEAD")));
    assert!(read_text(&mut s, "git://repo/commit/HEAD").contains("    main work\n"));
}

#[test]
fn a_bare_repository_has_no_status_or_diff() {
    let f = Fixture::new();
    let work = history(f.path("work"));
    let out = Command::new("git")
        .args(["clone", "-q", "--bare", "work", "bare.git"])
        .current_dir(f.root())
        .output()
        .expect("git clone");
    assert!(out.status.success(), "{}", stderr(&out));
    let bare = Repo {
        dir: f.path("bare.git"),
        tick: Cell::new(0),
    };
    let mut s = serve(&f, "[git.b]\npath = \"bare.git\"\n");
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    let uris: Vec<&str> = all.iter().filter_map(|r| r["uri"].as_str()).collect();
    assert_eq!(uris, ["git://b/log", "git://b/branches"]);
    for uri in ["git://b/status", "git://b/diff"] {
        assert_eq!(read_err(&mut s, uri)["code"], -32002, "{uri}");
    }
    assert_eq!(read_text(&mut s, "git://b/log"), bare.expected_log(50));
    assert_eq!(read_text(&mut s, "git://b/log"), work.expected_log(50));
    assert_eq!(
        read_text(&mut s, "git://b/branches"),
        bare.git(&["branch", "-a"])
    );
    assert_eq!(read_text(&mut s, "git://b/blob/v1.0/a.txt"), "one\n");
    assert!(read_text(&mut s, "git://b/commit/main").contains("rename guide"));
}

#[test]
fn a_subfolder_path_serves_its_whole_repository() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    r.write("a.txt", "edited\n");
    let mut s = serve(&f, "[git.sub]\npath = \"repo/docs\"\n");
    assert_eq!(read_text(&mut s, "git://sub/log"), r.expected_log(50));
    // Paths are relative to the top of the work tree, as in git's own output.
    assert_eq!(read_text(&mut s, "git://sub/status"), " M a.txt\n");
    assert_eq!(
        read_text(&mut s, "git://sub/blob/HEAD/a.txt"),
        "one\nfeature\n"
    );
}

#[test]
fn check_reports_a_path_outside_any_repository() {
    let f = Fixture::new();
    f.mkdir("plain");
    history(f.path("repo"));
    f.manifest(
        "[git.ok]\npath = \"repo\"\n\n[git.plain]\npath = \"plain\"\n\n[git.gone]\npath = \"nope\"\n",
    );
    let out = f.run(&["check", "mcp-server.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[..2],
        [
            format!(
                "mcp-server.toml:5:8: [git.plain] path `{}` is not inside a git repository (run `git init` there, or point `path` at a repository)",
                f.path("plain").display()
            ),
            format!(
                "mcp-server.toml:8:8: [git.gone] path `{}` does not exist; it should be a git work tree or a bare repository",
                f.path("nope").display()
            ),
        ],
        "{err}"
    );
    // The valid one alone checks, counting its resources and templates.
    f.manifest("[git.ok]\npath = \"repo\"\n");
    let out = f.run(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary = crate::support::stdout(&out);
    assert!(summary.contains("resources  4"), "{summary}");
    assert!(summary.contains("templates  2"), "{summary}");
}

#[test]
fn a_submodule_entry_is_skipped_not_fatal() {
    let f = Fixture::new();
    let lib = Repo::init(f.path("lib"), &[]);
    lib.write("lib.txt", "library\n");
    lib.commit("lib");
    let r = Repo::init(f.path("repo"), &[]);
    r.write("top.txt", "top\n");
    r.commit("top");
    let lib_path = f.path("lib");
    let lib_path = lib_path.to_str().expect("utf-8 temp path");
    r.git(&["submodule", "add", "-q", lib_path, "vendor/lib"]);
    r.commit("add the submodule");
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    let blob = "git://repo/blob/{rev}/{+path}";
    // The gitlink is not a file: not completed, not readable, and nothing crashes.
    assert_eq!(
        complete(&mut s, blob, "path", "", Value::Null)["values"],
        json!([".gitmodules", "top.txt"])
    );
    assert_eq!(
        complete(&mut s, blob, "path", "vendor/", Value::Null)["values"],
        json!([])
    );
    assert_eq!(
        read_err(&mut s, "git://repo/blob/HEAD/vendor/lib")["code"],
        -32002
    );
    assert_eq!(
        read_err(&mut s, "git://repo/blob/HEAD/vendor/lib/lib.txt")["code"],
        -32002
    );
    let show = read_text(&mut s, "git://repo/commit/HEAD");
    assert!(show.contains("+Subproject commit "), "{show}");
    assert_eq!(read_text(&mut s, "git://repo/status"), "");
    assert_eq!(read_text(&mut s, "git://repo/diff"), "");
    // A new commit inside the submodule shows as a modified path in the parent.
    let inner = Repo {
        dir: f.path("repo/vendor/lib"),
        tick: Cell::new(100),
    };
    inner.write("lib.txt", "library 2\n");
    inner.commit("lib 2");
    assert_eq!(read_text(&mut s, "git://repo/status"), " M vendor/lib\n");
    assert!(read_text(&mut s, "git://repo/diff").contains("+Subproject commit "));
}

// Unix only: Windows file names are UTF-16, none is bytes that are not UTF-8.
#[cfg(unix)]
#[test]
fn names_that_are_not_utf8_do_not_break_anything() {
    use std::os::unix::ffi::OsStrExt as _;
    let f = Fixture::new();
    let r = Repo::init(f.path("repo"), &[]);
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(r.dir.join(odd), "latin-1 name\n").expect("write");
    r.write("plain.txt", "plain\n");
    r.commit("odd names");
    std::fs::write(r.dir.join(odd), "changed\n").expect("write");
    std::fs::write(
        r.dir.join(std::ffi::OsStr::from_bytes(b"new\xff")),
        "untracked",
    )
    .expect("write");
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    assert_eq!(
        read_text(&mut s, "git://repo/status"),
        " M \"caf\\351.txt\"\n?? \"new\\377\"\n"
    );
    let diff = read_text(&mut s, "git://repo/diff");
    assert!(diff.contains("+changed\n"), "{diff}");
    assert_eq!(read_text(&mut s, "git://repo/log").lines().count(), 1);
    assert!(read_text(&mut s, "git://repo/commit/HEAD").contains("+latin-1 name\n"));
    assert_eq!(
        complete(
            &mut s,
            "git://repo/blob/{rev}/{+path}",
            "path",
            "",
            Value::Null
        )["values"],
        json!(["plain.txt"])
    );
    // `%E9` does not decode to UTF-8: no URI names that file, so it reads as not found.
    assert_eq!(
        read_err(&mut s, "git://repo/blob/HEAD/caf%E9.txt")["code"],
        -32002
    );
}

#[test]
fn large_diffs_are_cut_and_large_blobs_refused() {
    let f = Fixture::new();
    let r = Repo::init(f.path("repo"), &[]);
    let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";
    r.write("big.txt", line.repeat(24 * 1024)); // 1.5 MiB
    r.write("huge.bin", vec![0u8; 10 * 1024 * 1024 + 1]);
    r.commit("big files");
    r.write("big.txt", line.to_uppercase().repeat(24 * 1024));
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    let marker = "[diff cut: it is longer than the 1 MiB cap of [git.repo]]\n";
    let diff = read_text(&mut s, "git://repo/diff");
    assert!(diff.ends_with(marker), "{}", &diff[diff.len() - 200..]);
    assert!(diff.len() <= 1024 * 1024 + marker.len(), "{}", diff.len());
    assert!(diff.starts_with("diff --git a/big.txt b/big.txt\n"));
    let body = &diff[..diff.len() - marker.len()];
    assert!(body.ends_with('\n'), "cut at a line end");
    let show = read_text(&mut s, "git://repo/commit/HEAD");
    assert!(show.ends_with(marker));
    // The text blob under the cap is whole.
    assert_eq!(
        read_text(&mut s, "git://repo/blob/HEAD/big.txt").len(),
        line.len() * 24 * 1024
    );
    let e = read_err(&mut s, "git://repo/blob/HEAD/huge.bin");
    assert_eq!(e["code"], -32602);
    let m = e["message"].as_str().unwrap_or_default();
    assert!(m.contains("10 MiB") && m.contains("huge.bin"), "{m}");
}

#[test]
fn reads_follow_the_repository_as_it_changes() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\nwatch = false\n");
    assert_eq!(read_text(&mut s, "git://repo/log"), r.expected_log(50));
    r.write("later.txt", "later\n");
    r.commit("a later commit");
    r.git(&["branch", "newer"]);
    let log = read_text(&mut s, "git://repo/log");
    assert_eq!(log, r.expected_log(50));
    assert!(
        log.lines()
            .next()
            .unwrap_or_default()
            .ends_with("a later commit")
    );
    assert!(read_text(&mut s, "git://repo/branches").contains("  newer\n"));
    assert_eq!(
        read_text(&mut s, "git://repo/blob/HEAD/later.txt"),
        "later\n"
    );
    // The index, as it changes.
    assert_eq!(read_text(&mut s, "git://repo/status"), "");
    r.write("later.txt", "later, edited\n");
    assert_eq!(read_text(&mut s, "git://repo/status"), " M later.txt\n");
    r.git(&["add", "later.txt"]);
    assert_eq!(read_text(&mut s, "git://repo/status"), "M  later.txt\n");
    assert_eq!(
        read_text(&mut s, "git://repo/diff"),
        r.git(&["diff", "HEAD"])
    );
    r.commit("edit later");
    assert_eq!(read_text(&mut s, "git://repo/status"), "");
    // Everything repacked (loose objects gone, a new pack), then more commits.
    r.git(&["gc", "-q", "--prune=now"]);
    r.write("after-gc.txt", "after gc\n");
    r.commit("after gc");
    assert_eq!(read_text(&mut s, "git://repo/log"), r.expected_log(50));
    assert_eq!(
        read_text(&mut s, "git://repo/blob/HEAD~1/later.txt"),
        "later, edited\n"
    );
    assert_eq!(
        read_text(&mut s, "git://repo/blob/HEAD/after-gc.txt"),
        "after gc\n"
    );
    r.git(&["repack", "-q", "-a", "-d"]);
    assert_eq!(
        read_text(&mut s, "git://repo/blob/HEAD/after-gc.txt"),
        "after gc\n"
    );
    assert_eq!(read_text(&mut s, "git://repo/log"), r.expected_log(50));
}

#[test]
fn read_resource_tool_and_cli_read_a_git_uri() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    let out = s.ok(
        "tools/call",
        json!({"name": "read_resource", "arguments": {"uri": "git://repo/log"}}),
    );
    assert_eq!(out["content"][0]["text"], r.expected_log(50));
    let out = f.run(&["read", "git://repo/blob/v1.0/a.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(crate::support::stdout(&out), "one\n");
}

/// A sanity check of the fixture itself: the repository really has what the tests assume.
#[test]
fn the_fixture_history_is_what_the_tests_assume() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    assert_eq!(
        r.git(&["log", "--format=%s"]),
        "rename guide\nMerge branch 'feature'\nmain work\nfeature work\ninitial\n"
    );
    assert_eq!(r.git(&["tag"]), "light\nv1.0\n");
    assert!(Path::new(&r.dir.join(".git")).is_dir());
}

#[test]
fn a_merge_in_conflict_shows_unmerged_codes() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    r.git(&["checkout", "-q", "-b", "other", "v1.0"]);
    r.write("a.txt", "other side\n");
    r.write("both.txt", "added here\n");
    r.git(&["rm", "-q", "logo.png"]);
    r.commit("other side");
    r.git(&["checkout", "-q", "main"]);
    r.write("both.txt", "added there\n");
    r.write("logo.png", "changed on main\n");
    r.commit("main side");
    let out = r.run(&["merge", "-q", "other"]);
    assert!(!out.status.success(), "the merge should conflict");
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    let status = read_text(&mut s, "git://repo/status");
    assert_eq!(status, r.git(&["status", "--porcelain"]));
    assert_eq!(status, "UU a.txt\nAA both.txt\nUD logo.png\n");
    let diff = read_text(&mut s, "git://repo/diff");
    assert_eq!(diff, r.git(&["diff", "HEAD"]));
    assert!(diff.contains("+<<<<<<< HEAD\n"), "{diff}");
}

fn updated_for(uri: &str) -> impl Fn(&Value) -> bool {
    let uri = uri.to_owned();
    move |v: &Value| {
        v.get("method").and_then(Value::as_str) == Some("notifications/resources/updated")
            && v["params"]["uri"] == uri.as_str()
    }
}

#[test]
fn subscribed_git_uris_are_updated_when_head_refs_index_or_work_tree_change() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    let blob = "git://repo/blob/HEAD/a.txt";
    for uri in [
        "git://repo/log",
        "git://repo/status",
        "git://repo/branches",
        blob,
    ] {
        s.ok("resources/subscribe", json!({ "uri": uri }));
    }
    // Subscriptions are answered once the watcher watches the repository.
    // A work tree edit changes status, not the log: a second edit's status update comes in a
    // later batch, and by then no log update has come.
    r.write("a.txt", "edited\n");
    s.wait_for(updated_for("git://repo/status"));
    r.write("a.txt", "edited twice\n");
    s.wait_for(updated_for("git://repo/status"));
    let stray = s
        .pending()
        .iter()
        .find(|v| updated_for("git://repo/log")(v));
    assert!(stray.is_none(), "{stray:?}");
    r.write("a.txt", "edited\n");
    s.wait_for(updated_for("git://repo/status"));
    assert_eq!(read_text(&mut s, "git://repo/status"), " M a.txt\n");

    // A commit moves the branch: the log and what HEAD:a.txt means change.
    r.commit("edit a");
    s.wait_for(updated_for("git://repo/log"));
    s.wait_for(updated_for(blob));
    assert_eq!(read_text(&mut s, blob), "edited\n");

    // A branch in a new folder of refs/heads.
    r.git(&["branch", "topic/new"]);
    s.wait_for(updated_for("git://repo/branches"));
    assert!(read_text(&mut s, "git://repo/branches").contains("  topic/new\n"));
}

#[test]
fn short_hashes_grow_with_the_repository_like_git() {
    use std::io::Write as _;
    let f = Fixture::new();
    let r = Repo::init(f.path("repo"), &[]);
    r.write("a.txt", "a\n");
    r.commit("first");
    // 17 000 small blobs in one pack: git's "auto" abbreviation is then 8 digits, not 7.
    let mut stream = Vec::new();
    stream.extend_from_slice(
        b"commit refs/heads/main\ncommitter Ada Tester <ada@example.com> 1700001000 +0100\ndata 5\nmany\nfrom refs/heads/main^0\n",
    );
    for i in 0..17_000 {
        let body = format!("{i}\n");
        stream.extend_from_slice(
            format!("M 100644 inline f/{i}.txt\ndata {}\n{body}", body.len()).as_bytes(),
        );
    }
    stream.extend_from_slice(b"\n");
    let mut child = r
        .command(&["fast-import", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("fast-import");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&stream)
        .expect("write");
    assert!(child.wait().expect("wait").success());
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    let log = read_text(&mut s, "git://repo/log");
    assert_eq!(log, r.expected_log(50));
    assert_eq!(log.split('\t').next().map(str::len), Some(8), "{log}");
    // A configured core.abbrev wins, as in git.
    r.git(&["config", "core.abbrev", "12"]);
    let log = read_text(&mut s, "git://repo/log");
    assert_eq!(log, r.expected_log(50));
    assert_eq!(log.split('\t').next().map(str::len), Some(12), "{log}");
    r.git(&["config", "core.abbrev", "auto"]);
    assert_eq!(read_text(&mut s, "git://repo/log"), r.expected_log(50));
}

#[test]
fn a_linked_work_tree_and_its_main_one() {
    let f = Fixture::new();
    let r = history(f.path("repo"));
    r.git(&["worktree", "add", "-q", "../wt", "feature"]);
    let wt = Repo {
        dir: f.path("wt"),
        tick: Cell::new(500),
    };
    wt.write("a.txt", "edited in the linked work tree\n");
    let mut s = serve(
        &f,
        "[git.main]\npath = \"repo\"\n\n[git.wt]\npath = \"wt\"\n",
    );
    let branches = read_text(&mut s, "git://wt/branches");
    assert_eq!(branches, wt.git(&["branch", "-a"]));
    assert_eq!(branches, "* feature\n+ main\n");
    assert_eq!(
        read_text(&mut s, "git://main/branches"),
        r.git(&["branch", "-a"])
    );
    assert_eq!(read_text(&mut s, "git://wt/status"), " M a.txt\n");
    assert_eq!(read_text(&mut s, "git://main/status"), "");
    assert_eq!(read_text(&mut s, "git://wt/log"), wt.expected_log(50));
    assert_eq!(
        read_text(&mut s, "git://wt/diff"),
        wt.git(&["diff", "HEAD"])
    );
}

#[test]
fn files_over_four_mebibytes_diff_as_binary_without_being_compared() {
    let f = Fixture::new();
    let r = Repo::init(f.path("repo"), &[]);
    // 5 MiB of text, then every line changed: compared line by line, the diff would be
    // 10 MiB of lines (cut at 1 MiB, but made whole first: a 200 MiB file took 1.8 GB).
    let text = |tag: &str| format!("{tag} line of the large file\n").repeat(5 * 1024 * 1024 / 26);
    r.write("large.txt", text("one"));
    r.write("small.txt", "small\n");
    r.commit("large");
    r.write("large.txt", text("two"));
    r.write("small.txt", "small, changed\n");
    r.commit("larger");
    r.write("large.txt", text("six"));
    let mut s = serve(&f, "[git.repo]\npath = \"repo\"\n");
    for uri in ["git://repo/commit/HEAD", "git://repo/diff"] {
        let patch = read_text(&mut s, uri);
        assert!(
            patch.contains("Binary files a/large.txt and b/large.txt differ"),
            "{uri}: {}",
            &patch[..patch.len().min(400)]
        );
        assert!(patch.len() < 4096, "{uri}: {} bytes", patch.len());
    }
    // Small files still diff line by line.
    let patch = read_text(&mut s, "git://repo/commit/HEAD");
    assert!(patch.contains("+small, changed"), "{patch}");
}
