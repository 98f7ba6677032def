//! One definition of "hidden" (`providers::visible`), seen by every reader of a tree: a file that
//! `.git/info/exclude`, a nested `.gitignore` or a dot name hides is hidden from reads, listings,
//! completion, `search_files`, `file` templates, `check`'s warnings, `init` and the watcher; a
//! negation shows it again everywhere.

use serde_json::{Value, json};

use crate::support::{Fixture, Server, list_all, stdout};

/// A git repository (made with git2) whose `docs/` holds files hidden three ways, and two
/// that stay visible: `open.md` and `sub/keep.log` (a negation in a nested `.gitignore`).
fn repo() -> Fixture {
    let f = Fixture::new();
    git2::Repository::init(f.root()).expect("git init");
    f.write(".git/info/exclude", "# local rules\nsecret.md\n");
    f.write("docs/secret.md", "needle secret");
    f.write("docs/open.md", "needle open");
    f.write("docs/.dot.md", "needle dot");
    f.write("docs/sub/.gitignore", "*.log\n!keep.log\n");
    f.write("docs/sub/a.log", "needle log");
    f.write("docs/sub/keep.log", "needle keep");
    f.write("sentinel/s.md", "s");
    f
}

const SERVED: [&str; 2] = ["open.md", "sub/keep.log"];
const HIDDEN: [&str; 3] = ["secret.md", ".dot.md", "sub/a.log"];

fn names(s: &mut Server) -> Vec<String> {
    let (all, _) = list_all(s, "resources/list", "resources");
    all.iter()
        .filter(|r| r["uri"].as_str().is_some_and(|u| u.contains("/docs/")))
        .filter_map(|r| r["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn serving_lists_reads_and_completes_only_what_the_rules_show() {
    let f = repo();
    f.manifest("[files.docs]\nroot = \"docs\"\n");
    let mut s = f.serve().started();
    assert_eq!(names(&mut s), SERVED);
    for rel in SERVED {
        s.ok(
            "resources/read",
            json!({"uri": f.uri(&format!("docs/{rel}"))}),
        );
    }
    for rel in HIDDEN {
        let e = s.err(
            "resources/read",
            json!({"uri": f.uri(&format!("docs/{rel}"))}),
        );
        assert_eq!(e["code"], -32002, "{rel}: {e}");
    }
    let root = crate::support::file_uri(&f.path("docs"));
    for prefix in ["s", "sub/"] {
        let c = s.ok(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": format!("{root}/{{+path}}")},
                   "argument": {"name": "path", "value": prefix}}),
        );
        assert_eq!(
            c["completion"]["values"],
            json!(["sub/keep.log"]),
            "{prefix}"
        );
    }
}

#[test]
fn search_files_searches_only_what_the_rules_show() {
    let f = repo();
    f.manifest("[files.docs]\nroot = \"docs\"\n");
    let mut s = f.serve().started();
    let r = s.ok(
        "tools/call",
        json!({"name": "search_files", "arguments": {"pattern": "needle"}}),
    );
    let found: Vec<&str> = r["structuredContent"]["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .filter_map(|m| m["path"].as_str())
        .collect();
    assert_eq!(found, SERVED, "{r}");
}

#[test]
fn file_templates_read_only_what_the_rules_show() {
    let f = repo();
    f.manifest(
        "[templates.doc]\nuri = \"doc://{+path}\"\nfile = \"docs/{path}\"\n\n\
         [templates.any]\nuri = \"any://{+path}\"\nfile = \"{path}\"\n",
    );
    let mut s = f.serve().started();
    for rel in SERVED {
        let r = s.ok("resources/read", json!({"uri": format!("doc://{rel}")}));
        assert!(r["contents"][0]["text"].is_string(), "{rel}: {r}");
    }
    for rel in HIDDEN {
        let e = s.err("resources/read", json!({"uri": format!("doc://{rel}")}));
        assert_eq!(e["code"], -32002, "{rel}: {e}");
    }
    // The manifest itself and the repository's own files.
    for rel in ["mcp-server.toml", ".git/info/exclude", ".git/HEAD"] {
        let e = s.err("resources/read", json!({"uri": format!("any://{rel}")}));
        assert_eq!(e["code"], -32002, "{rel}: {e}");
    }
}

#[test]
fn check_warns_about_an_include_that_matches_only_hidden_files() {
    let f = repo();
    let lines = f.check_lines(
        "[files.secret]\nroot = \"docs\"\ninclude = [\"secret.md\", \"sub/*.log\"]\n\n\
         [files.dot]\nroot = \"docs\"\ninclude = [\".dot.md\"]\n",
    );
    let warned: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("matches no file"))
        .collect();
    assert_eq!(warned.len(), 2, "{lines:#?}");
    assert!(warned[0].contains("`secret.md`"), "{lines:#?}");
    assert!(warned[1].contains("`.dot.md`"), "{lines:#?}");
}

#[test]
fn init_proposes_nothing_the_rules_hide_and_its_manifest_checks_clean() {
    let f = Fixture::new();
    git2::Repository::init(f.root()).expect("git init");
    f.write(".git/info/exclude", "notes/\n*.rst\n");
    f.write("README.txt", "read me");
    f.write("guide.rst", "hidden guide");
    f.write("notes/a.md", "hidden note");
    let out = f.run(&["init"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let manifest = std::fs::read_to_string(f.path("mcp-server.toml")).expect("written");
    assert!(manifest.contains("include = [\"README*\"]"), "{manifest}");
    assert!(
        !manifest.contains("*.rst") && !manifest.contains("*.md"),
        "{manifest}"
    );
    let check = f.run(&["check", "--deny-warnings"]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

fn is_method(v: &Value, method: &str) -> bool {
    v.get("method").and_then(Value::as_str) == Some(method)
}

#[test]
fn editing_the_repositorys_exclude_file_changes_the_list() {
    let f = repo();
    f.manifest("[files.docs]\nroot = \"docs\"\n\n[files.sentinel]\nroot = \"sentinel\"\n");
    let mut s = f.serve().started();
    s.ok(
        "resources/subscribe",
        json!({"uri": f.uri("sentinel/s.md")}),
    );
    assert_eq!(names(&mut s), SERVED);
    f.write(".git/info/exclude", "secret.md\nopen.md\n");
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    assert_eq!(names(&mut s), ["sub/keep.log"]);
    let e = s.err("resources/read", json!({"uri": f.uri("docs/open.md")}));
    assert_eq!(e["code"], -32002, "{e}");
}
