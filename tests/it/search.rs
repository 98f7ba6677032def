//! `search_files` through the real server: it finds only what the files sources serve (never a
//! hidden, ignored, excluded, binary, oversized or outside file), stops at `max_matches`, answers
//! bad arguments with `isError` and the reason, and reports progress.

use serde_json::{Value, json};

use crate::support::{Fixture, Server};

/// A tree where every file says `needle`, but only `src/a.rs`, `src/b.txt` and `notes.md`
/// are served.
fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("root/src/a.rs", "fn main() {\n    // needle one\n}\n");
    f.write("root/src/b.txt", "x\nneedle two\ny\nNEEDLE three\nz\n");
    f.write("root/notes.md", "a needle in notes\n");
    f.write("root/.hidden/h.txt", "needle hidden\n");
    f.write("root/.env", "needle dotfile\n");
    f.write("root/.gitignore", "ignored.txt\nbuild/\n");
    f.write("root/ignored.txt", "needle ignored\n");
    f.write("root/build/out.txt", "needle build\n");
    f.write("root/drafts/d.md", "needle draft\n");
    f.write("root/bin.dat", b"needle\0binary\n".as_slice());
    f.write("root/late-binary.txt", {
        let mut v = b"needle before the NUL\n".repeat(2);
        v.extend_from_slice(b"\0\n");
        v
    });
    f.write("root/big.txt", "needle big\n".repeat(200));
    f.write("outside/o.txt", "needle outside\n");
    crate::support::symlink(f.path("outside/o.txt"), f.path("root/link.txt"));
    crate::support::symlink(f.path("outside"), f.path("root/linkdir"));
    f.write("other/c.txt", "needle other\n");
    f.manifest(
        r#"
[files.docs]
root = "root"
exclude = ["drafts/**"]
max_size = "1KiB"

[files.other]
root = "other"

[files.quiet]
root = "outside"
search = false
"#,
    );
    f
}

fn search(s: &mut Server, args: Value) -> Value {
    s.ok(
        "tools/call",
        json!({"name": "search_files", "arguments": args}),
    )
}

fn paths(r: &Value) -> Vec<String> {
    r["structuredContent"]["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| format!("{}:{}", m["path"].as_str().expect("test value"), m["line"]))
        .collect()
}

#[test]
fn finds_only_what_the_sources_serve() {
    let f = fixture();
    let mut s = f.serve().started();
    let r = search(&mut s, json!({"pattern": "needle"}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        paths(&r),
        ["notes.md:1", "src/a.rs:2", "src/b.txt:2", "c.txt:1"]
    );
    assert_eq!(r["structuredContent"]["truncated"], false);
    let first = &r["structuredContent"]["matches"][0];
    assert_eq!(first["uri"], f.uri("root/notes.md"));
    assert_eq!(first["text"], "a needle in notes");
    let text = r["content"][0]["text"].as_str().expect("test value");
    assert_eq!(
        text,
        format!(
            "{}\nnotes.md:1:a needle in notes\n\n{}\nsrc/a.rs:2:    // needle one\n\n{}\nsrc/b.txt:2:needle two\n\n{}\nc.txt:1:needle other\n",
            f.uri("root/notes.md"),
            f.uri("root/src/a.rs"),
            f.uri("root/src/b.txt"),
            f.uri("other/c.txt"),
        )
    );
    // Every match is a URI that resources/read serves.
    for m in r["structuredContent"]["matches"]
        .as_array()
        .expect("test value")
    {
        let read = s.ok("resources/read", json!({"uri": m["uri"]}));
        assert!(read["contents"][0]["text"].is_string(), "{read}");
    }
}

#[test]
fn arguments_narrow_the_search() {
    let f = fixture();
    let mut s = f.serve().started();
    let r = search(
        &mut s,
        json!({"pattern": "needle", "case_insensitive": true, "source": "docs"}),
    );
    assert_eq!(
        paths(&r),
        ["notes.md:1", "src/a.rs:2", "src/b.txt:2", "src/b.txt:4"]
    );
    let r = search(&mut s, json!({"pattern": "needle", "glob": "*.txt"}));
    assert_eq!(paths(&r), ["src/b.txt:2", "c.txt:1"]);
    let r = search(&mut s, json!({"pattern": "needle", "glob": "src/*.rs"}));
    assert_eq!(paths(&r), ["src/a.rs:2"]);
    let r = search(&mut s, json!({"pattern": "two", "context": 1}));
    let text = r["content"][0]["text"].as_str().expect("test value");
    assert!(
        text.ends_with("src/b.txt-1-x\nsrc/b.txt:2:needle two\nsrc/b.txt-3-y\n"),
        "{text}"
    );
    assert_eq!(paths(&r), ["src/b.txt:2"]);
    let r = search(&mut s, json!({"pattern": "nothing like this"}));
    assert_eq!(r["isError"], false);
    assert_eq!(paths(&r), Vec::<String>::new());
}

#[test]
fn stops_at_max_matches() {
    let f = Fixture::new();
    for i in 0..30 {
        f.write(&format!("d/f{i:02}.txt"), "hit\nhit\nmiss\nhit\n");
    }
    f.manifest("[files.d]\nroot = \"d\"\n");
    let mut s = f.serve().started();
    let r = search(&mut s, json!({"pattern": "hit", "max_matches": 5}));
    assert_eq!(
        paths(&r),
        [
            "f00.txt:1",
            "f00.txt:2",
            "f00.txt:4",
            "f01.txt:1",
            "f01.txt:2"
        ]
    );
    assert_eq!(r["structuredContent"]["truncated"], true);
    assert!(
        r["content"][0]["text"]
            .as_str()
            .expect("test value")
            .contains("stopped at max_matches = 5"),
        "{r}"
    );
    // Exactly as many as there are: not truncated.
    let r = search(&mut s, json!({"pattern": "hit", "max_matches": 90}));
    assert_eq!(paths(&r).len(), 90);
    assert_eq!(r["structuredContent"]["truncated"], false);
    let r = search(&mut s, json!({"pattern": "hit"}));
    assert_eq!(paths(&r).len(), 90);
    let r = search(&mut s, json!({"pattern": "hit", "max_matches": 12}));
    assert_eq!(paths(&r).len(), 12);
    assert_eq!(r["structuredContent"]["truncated"], true);
}

#[test]
fn bad_arguments_are_tool_errors_with_the_reason() {
    let f = fixture();
    let mut s = f.serve().started();
    for (args, reason) in [
        (json!({"pattern": "needle("}), "unclosed group"),
        (json!({}), "`pattern` is required"),
        (json!({"pattern": 5}), "`pattern` must be a string"),
        (
            json!({"pattern": "a", "source": "quiet"}),
            "no searchable [files] source `quiet`",
        ),
        (
            json!({"pattern": "a", "max_matches": 0}),
            "`max_matches` must be an integer from 1 to 1000",
        ),
        (
            json!({"pattern": "a", "max_matches": 1001}),
            "from 1 to 1000",
        ),
        (
            json!({"pattern": "a", "context": 6}),
            "`context` must be an integer from 0 to 5",
        ),
        (json!({"pattern": "a", "glob": "[z-a"}), "invalid glob"),
        (
            json!({"pattern": "a", "regex": "b"}),
            "unknown argument `regex`",
        ),
        (json!({"pattern": "a\\nb"}), "invalid pattern"),
    ] {
        let r = search(&mut s, args.clone());
        assert_eq!(r["isError"], true, "{args}: {r}");
        let text = r["content"][0]["text"].as_str().expect("test value");
        assert!(text.contains(reason), "{args}: {text}");
    }
}

#[test]
fn is_listed_read_only_and_only_with_a_searchable_source() {
    let f = fixture();
    let mut s = f.serve().started();
    let tools = s.ok("tools/list", json!({}));
    let tool = tools["tools"]
        .as_array()
        .expect("test value")
        .iter()
        .find(|t| t["name"] == "search_files")
        .expect("search_files listed")
        .clone();
    assert_eq!(
        tool["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(tool["inputSchema"]["required"], json!(["pattern"]));
    assert_eq!(
        tool["inputSchema"]["properties"]["source"]["enum"],
        json!(["docs", "other"])
    );

    let g = Fixture::new();
    g.write("d/a.txt", "x");
    g.manifest("[server]\nresource_tools = false\n\n[files.d]\nroot = \"d\"\nsearch = false\n");
    let mut s = g.serve();
    let init = s.initialize("2025-11-25");
    assert!(init["capabilities"].get("tools").is_none(), "{init}");
}

#[test]
fn a_manifest_tool_named_search_files_is_an_error() {
    let f = Fixture::new();
    f.write("d/a.txt", "x");
    let errs =
        f.diagnose("[files.d]\nroot = \"d\"\n\n[tools.search_files]\ncommand = [\"true\"]\n");
    assert!(
        errs.iter()
            .any(|e| e.contains("4:8") && e.contains("clashes with the built-in search tool")),
        "{errs:?}"
    );
    f.write(
        "ok.toml",
        "[files.d]\nroot = \"d\"\nsearch = false\n\n[tools.search_files]\ncommand = [\"true\"]\n",
    );
    let out = f.run(&["check", "ok.toml"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::support::stderr(&out)
    );
}

#[test]
fn reports_progress_when_asked() {
    let f = Fixture::new();
    for i in 0..200 {
        f.write(&format!("d/f{i:03}.txt"), "some text\nneedle\n");
    }
    f.manifest("[files.d]\nroot = \"d\"\n");
    let mut s = f.serve().started();
    let id = s.fresh_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "search_files", "arguments": {"pattern": "needle", "max_matches": 1000},
            "_meta": {"progressToken": "p1"}
        }}),
    );
    let progress = s.wait_for(|v| v["method"] == "notifications/progress");
    assert_eq!(progress["params"]["progressToken"], "p1");
    assert!(
        progress["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("of 200 files")),
        "{progress}"
    );
    let r = s.response(&json!(id));
    assert_eq!(paths(&r["result"]).len(), 200);
}
