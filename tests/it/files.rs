//! `[files.NAME]`: listing, reading (text and exact bytes), globs, ignore files, limits,
//! templates and completion, and "not found" for every way out of (or hidden inside) the root.

use serde_json::{Value, json};

use crate::support::{Fixture, Server, list_all};

fn names(resources: &[Value]) -> Vec<String> {
    resources
        .iter()
        .map(|r| r["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn listed(s: &mut Server) -> Vec<String> {
    names(&list_all(s, "resources/list", "resources").0)
}

#[test]
fn lists_files_with_uri_name_mime_size_and_last_modified() {
    let f = Fixture::new();
    f.write("docs/guide.md", "# Guide\n");
    f.write("docs/sub/data.json", "{}");
    f.write("docs/notes", "plain words");
    f.write("docs/blob", [0u8, 159, 146, 150]);
    f.manifest("[files.docs]\nroot = \"docs\"\ndescription = \"Docs\"\n");
    let mut s = f.serve().started();
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(names(&all), ["blob", "guide.md", "notes", "sub/data.json"]);
    let guide = &all[1];
    assert_eq!(guide["uri"], f.uri("docs/guide.md"));
    assert_eq!(guide["mimeType"], "text/markdown");
    assert_eq!(guide["size"], 8);
    assert_eq!(guide["description"], "Docs");
    let modified = guide["annotations"]["lastModified"]
        .as_str()
        .expect("lastModified");
    assert!(
        modified.len() == 20 && modified.ends_with('Z') && modified.contains('T'),
        "{modified}"
    );
    assert_eq!(all[0]["mimeType"], "application/octet-stream");
    assert_eq!(all[2]["mimeType"], "text/plain");
    assert_eq!(all[3]["mimeType"], "application/json");
}

#[test]
fn text_and_binary_round_trip_exactly() {
    let f = Fixture::new();
    let text = "héllo wörld ✓\nline two\r\n\ttabbed\n";
    f.write("d/t.txt", text);
    let bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    f.write("d/b.bin", &bytes);
    f.write("d/empty.txt", "");
    f.manifest("[files.d]\nroot = \"d\"\n");
    let mut s = f.serve().started();
    let r = s.ok("resources/read", json!({"uri": f.uri("d/t.txt")}));
    let c = &r["contents"][0];
    assert_eq!(c["text"], text);
    assert_eq!(c["uri"], f.uri("d/t.txt"));
    assert_eq!(c["mimeType"], "text/plain");
    assert!(c.get("blob").is_none());
    let r = s.ok("resources/read", json!({"uri": f.uri("d/b.bin")}));
    let c = &r["contents"][0];
    assert!(c.get("text").is_none());
    let blob = c["blob"].as_str().expect("blob");
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .expect("base64");
    assert_eq!(decoded, bytes);
    let r = s.ok("resources/read", json!({"uri": f.uri("d/empty.txt")}));
    assert_eq!(r["contents"][0]["text"], "");
}

#[test]
fn include_exclude_and_hidden_files() {
    let f = Fixture::new();
    f.write("docs/a.md", "a");
    f.write("docs/b.txt", "b");
    f.write("docs/drafts/c.md", "c");
    f.write("docs/deep/d.md", "d");
    f.write("docs/.env", "SECRET=1");
    f.write("docs/.hidden/e.md", "e");
    f.manifest(
        "[files.docs]\nroot = \"docs\"\ninclude = [\"**/*.md\"]\nexclude = [\"drafts/**\"]\n",
    );
    let mut s = f.serve().started();
    assert_eq!(listed(&mut s), ["a.md", "deep/d.md"]);
    for hidden in [
        "docs/b.txt",
        "docs/drafts/c.md",
        "docs/.env",
        "docs/.hidden/e.md",
    ] {
        let e = s.err("resources/read", json!({"uri": f.uri(hidden)}));
        assert_eq!(e["code"], -32002, "{hidden} must read as not found");
    }
    let f2 = Fixture::new();
    f2.write("docs/.github/ci.yml", "on: push");
    f2.write("docs/.git/config", "[core]");
    f2.manifest("[files.docs]\nroot = \"docs\"\nhidden = true\n");
    let mut s = f2.serve().started();
    assert_eq!(listed(&mut s), [".github/ci.yml"], ".git is never served");
}

#[test]
fn gitignore_and_ignore_files_are_honoured_outside_a_git_repository() {
    let f = Fixture::new();
    f.write("p/.gitignore", "*.log\nbuild/\n!keep.log\n");
    f.write("p/app.log", "noise");
    f.write("p/keep.log", "kept");
    f.write("p/build/out.txt", "built");
    f.write("p/src/main.rs", "fn main() {}");
    f.write("p/src/.gitignore", "gen.rs\n");
    f.write("p/src/gen.rs", "// generated");
    f.write("p/.ignore", "secret.txt\n");
    f.write("p/secret.txt", "s3cret");
    f.manifest("[files.p]\nroot = \"p\"\n");
    let mut s = f.serve().started();
    assert_eq!(listed(&mut s), ["keep.log", "src/main.rs"]);
    for hidden in [
        "p/app.log",
        "p/build/out.txt",
        "p/src/gen.rs",
        "p/secret.txt",
    ] {
        let e = s.err("resources/read", json!({"uri": f.uri(hidden)}));
        assert_eq!(e["code"], -32002, "{hidden}");
    }
    let f2 = Fixture::new();
    f2.write("p/.gitignore", "*.log\n");
    f2.write("p/app.log", "noise");
    f2.manifest("[files.p]\nroot = \"p\"\ngitignore = false\n");
    let mut s = f2.serve().started();
    assert_eq!(listed(&mut s), ["app.log"]);
}

#[test]
fn gitignore_of_the_enclosing_repository_applies_to_a_subfolder_root() {
    let f = Fixture::new();
    f.mkdir(".git");
    f.write(".gitignore", "*.tmp\n");
    f.write("docs/a.md", "a");
    f.write("docs/b.tmp", "b");
    f.manifest("[files.docs]\nroot = \"docs\"\n");
    let mut s = f.serve().started();
    assert_eq!(listed(&mut s), ["a.md"]);
}

#[test]
fn every_way_out_of_the_root_is_not_found() {
    let f = Fixture::new();
    f.write("docs/a.md", "inside");
    f.write("docs/sub/b.md", "inside too");
    f.write("secret.txt", "outside");
    f.write("docs-other/x.md", "sibling with a shared prefix");
    let linked = crate::support::symlink(f.path("secret.txt"), f.path("docs/link-out.txt"))
        & crate::support::symlink(f.path("docs/a.md"), f.path("docs/link-in.md"))
        & crate::support::symlink(f.root(), f.path("docs/up"));
    f.manifest("[files.docs]\nroot = \"docs\"\n");
    let mut s = f.serve().started();
    // `file:///C:/…` on Windows: `root` is what follows `file://`.
    let root_uri = crate::support::file_uri(&f.path("docs"));
    let root = root_uri
        .strip_prefix("file://")
        .expect("a file URI")
        .to_owned();
    let attempts = [
        format!("file://{root}/../secret.txt"),
        format!("file://{root}/sub/../../secret.txt"),
        format!("file://{root}/%2e%2e/secret.txt"),
        format!("file://{root}/%2E%2E/secret.txt"),
        format!("file://{root}/..%2fsecret.txt"),
        format!("file://{root}/sub%2fb.md"),
        format!("file://{root}/sub%2Fb.md"),
        format!("file://{root}/%2e%2e%2fsecret.txt"),
        format!("file://{root}/./a.md"),
        format!("file://{root}//a.md"),
        format!("file://{root}/a.md%00"),
        format!("file://{root}/link-out.txt"),
        format!("file://{root}/up/secret.txt"),
        format!("file://{root}-other/x.md"),
        format!("file://{root}"),
        format!("file://{root}/"),
        format!("file://{root}/sub"),
        // What Windows would open as something else: an alternate data stream, trailing dots
        // and spaces, a device, backslashes (not found on Unix either: no such files).
        format!("file://{root}/a.md::$DATA"),
        format!("file://{root}/a.md:x"),
        format!("file://{root}/a.md."),
        format!("file://{root}/a.md%20"),
        format!("file://{root}/CON"),
        format!("file://{root}/nul.md"),
        format!("file://{root}/sub%5C..%5C..%5Csecret.txt"),
        format!("file://{root}/sub%5Cb.md"),
        crate::support::file_uri(&f.path("secret.txt")),
        "file:///etc/passwd".to_owned(),
        "file://../../etc/passwd".to_owned(),
        format!("FILE://{root}/a.md"),
        "notes://x".to_owned(),
    ];
    for uri in &attempts {
        let e = s.err("resources/read", json!({"uri": uri}));
        assert_eq!(e["code"], -32002, "{uri}: {e}");
        assert_eq!(
            e["message"],
            format!("resource not found: {uri}"),
            "same answer as missing"
        );
    }
    // A symlink that stays inside the root is fine; the file is listed once, at its target.
    if linked {
        let r = s.ok("resources/read", json!({"uri": f.uri("docs/link-in.md")}));
        assert_eq!(r["contents"][0]["text"], "inside");
    }
    assert_eq!(listed(&mut s), ["a.md", "sub/b.md"]);
    // Completion never reveals anything outside.
    let c = s.ok(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": format!("file://{root}/{{+path}}")},
               "argument": {"name": "path", "value": "../"}}),
    );
    assert_eq!(c["completion"]["values"], json!([]));
}

#[test]
fn names_with_spaces_hash_question_mark_and_unicode_round_trip() {
    let f = Fixture::new();
    // Windows names cannot hold `?`: there the odd name has a `;` and a `&` instead.
    let odd = if cfg!(windows) {
        "a b/c#1;&.md"
    } else {
        "a b/c#1?.md"
    };
    f.write(&format!("d/{odd}"), "odd");
    f.write("d/ünï.txt", "unicode");
    f.write("d/100%.txt", "percent");
    f.manifest("[files.d]\nroot = \"d\"\n");
    let mut s = f.serve().started();
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(names(&all), ["100%.txt", odd, "ünï.txt"]);
    for r in &all {
        let uri = r["uri"].as_str().expect("uri");
        assert!(
            !uri.contains(' ') && !uri.contains('#') && !uri.contains('?'),
            "{uri}"
        );
        let read = s.ok("resources/read", json!({"uri": uri}));
        assert_eq!(read["contents"][0]["uri"], uri);
    }
    let read = s.ok("resources/read", json!({"uri": all[1]["uri"]}));
    assert_eq!(read["contents"][0]["text"], "odd");
}

#[test]
fn max_size_lists_but_refuses_to_read_with_a_clear_error() {
    let f = Fixture::new();
    f.write("d/big.txt", "x".repeat(2048));
    f.write("d/small.txt", "x");
    f.manifest("[files.d]\nroot = \"d\"\nmax_size = \"1KiB\"\n");
    let mut s = f.serve().started();
    assert_eq!(listed(&mut s), ["big.txt", "small.txt"]);
    let e = s.err("resources/read", json!({"uri": f.uri("d/big.txt")}));
    assert_eq!(e["code"], -32602);
    let msg = e["message"].as_str().expect("message");
    assert!(
        msg.contains("2 KiB") && msg.contains("max_size 1 KiB"),
        "{msg}"
    );
    s.ok("resources/read", json!({"uri": f.uri("d/small.txt")}));
}

#[test]
fn a_single_file_root_serves_that_file() {
    let f = Fixture::new();
    f.write("README.md", "# readme");
    f.write("other.md", "no");
    f.manifest("[files.readme]\nroot = \"README.md\"\n");
    let mut s = f.serve().started();
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(names(&all), ["README.md"]);
    assert_eq!(all[0]["uri"], f.uri("README.md"));
    let r = s.ok("resources/read", json!({"uri": f.uri("README.md")}));
    assert_eq!(r["contents"][0]["text"], "# readme");
    let e = s.err("resources/read", json!({"uri": f.uri("other.md")}));
    assert_eq!(e["code"], -32002);
}

#[test]
fn template_is_listed_and_completes_path_by_prefix_capped_at_100() {
    let f = Fixture::new();
    for i in 0..150 {
        f.write(&format!("d/f{i:03}.txt"), "x");
    }
    f.write("d/sub/g.txt", "x");
    f.manifest("[files.d]\nroot = \"d\"\n");
    let mut s = f.serve().started();
    let t = s.ok("resources/templates/list", json!({}));
    let template = format!("{}/{{+path}}", crate::support::file_uri(&f.path("d")));
    assert_eq!(t["resourceTemplates"][0]["uriTemplate"], template);
    assert_eq!(t["resourceTemplates"][0]["name"], "d");
    let complete = |s: &mut Server, value: &str| {
        s.ok(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": template}, "argument": {"name": "path", "value": value}}),
        )["completion"]
            .clone()
    };
    let all = complete(&mut s, "");
    assert_eq!(all["values"].as_array().map(Vec::len), Some(100));
    assert_eq!(all["total"], 151);
    assert_eq!(all["hasMore"], true);
    let some = complete(&mut s, "f14");
    assert_eq!(
        some["values"],
        json!([
            "f140.txt", "f141.txt", "f142.txt", "f143.txt", "f144.txt", "f145.txt", "f146.txt",
            "f147.txt", "f148.txt", "f149.txt"
        ])
    );
    assert_eq!(some["hasMore"], false);
    assert_eq!(complete(&mut s, "sub/")["values"], json!(["sub/g.txt"]));
    // The template reads like any listed resource.
    let uri = template.replace("{+path}", "sub/g.txt");
    s.ok("resources/read", json!({"uri": uri}));
}

#[test]
fn resource_tools_list_and_read_like_the_resource_methods() {
    let f = Fixture::new();
    f.write("d/a.md", "# A");
    f.write("d/b.bin", [0u8, 1, 2, 255]);
    f.manifest("[server]\npage_size = 1\n\n[files.d]\nroot = \"d\"\ndescription = \"D\"\n");
    let mut s = f.serve().started();
    let (tools, _) = list_all(&mut s, "tools/list", "tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["list_resources", "read_resource", "search_files"]);
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["uri"]));
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);

    let page1 = s.ok(
        "tools/call",
        json!({"name": "list_resources", "arguments": {}}),
    );
    assert_eq!(page1["isError"], false);
    let body: Value = serde_json::from_str(page1["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["resources"][0]["uri"], f.uri("d/a.md"));
    assert_eq!(body["resources"][0]["description"], "D");
    assert_eq!(body["resources"][0]["mimeType"], "text/markdown");
    let cursor = body["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let page2 = s.ok(
        "tools/call",
        json!({"name": "list_resources", "arguments": {"cursor": cursor}}),
    );
    let body2: Value = serde_json::from_str(page2["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body2["resources"][0]["uri"], f.uri("d/b.bin"));
    // The templates come after the resources, paged with them.
    let cursor = body2["nextCursor"]
        .as_str()
        .expect("a third page")
        .to_owned();
    let page3 = s.ok(
        "tools/call",
        json!({"name": "list_resources", "arguments": {"cursor": cursor}}),
    );
    let body3 = &page3["structuredContent"];
    assert_eq!(body3["resources"], json!([]));
    let t = &body3["resourceTemplates"][0];
    assert!(
        t["uriTemplate"].as_str().unwrap().ends_with("/{+path}"),
        "{t}"
    );
    assert_eq!(t["variables"], json!([{"name": "path"}]));
    assert!(body3.get("nextCursor").is_none());

    let text = s.ok(
        "tools/call",
        json!({"name": "read_resource", "arguments": {"uri": f.uri("d/a.md")}}),
    );
    assert_eq!(text["content"], json!([{"type": "text", "text": "# A"}]));
    let bin = s.ok(
        "tools/call",
        json!({"name": "read_resource", "arguments": {"uri": f.uri("d/b.bin")}}),
    );
    assert_eq!(bin["content"][0]["type"], "resource");
    assert_eq!(bin["content"][0]["resource"]["blob"], "AAEC/w==");
    let missing = s.ok(
        "tools/call",
        json!({"name": "read_resource", "arguments": {"uri": f.uri("d/zz")}}),
    );
    assert_eq!(missing["isError"], true);
    let bad = s.ok(
        "tools/call",
        json!({"name": "read_resource", "arguments": {}}),
    );
    assert_eq!(bad["isError"], true);
    let e = s.err(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert_eq!(e["code"], -32602);
}

#[test]
fn without_watching_every_listing_and_read_sees_the_current_tree() {
    let f = Fixture::new();
    f.write("d/a.md", "a");
    f.write("d/b.log", "b");
    f.manifest("[files.d]\nroot = \"d\"\nwatch = false\n");
    let mut s = f.serve().started();
    assert_eq!(listed(&mut s), ["a.md", "b.log"]);
    f.write("d/.gitignore", "*.log\n");
    f.write("d/c.md", "c");
    assert_eq!(listed(&mut s), ["a.md", "c.md"]);
    let e = s.err("resources/read", json!({"uri": f.uri("d/b.log")}));
    assert_eq!(e["code"], -32002);
    std::fs::remove_file(f.path("d/.gitignore")).unwrap();
    s.ok("resources/read", json!({"uri": f.uri("d/b.log")}));
}

/// Every listed file gets its own size, modification time and MIME type (by extension, any
/// case; by content, file by file, where the extension names none), whatever the folder holds
/// next to it: FIFOs, symlinks and names that are not UTF-8 are left out.
#[test]
fn each_file_of_a_large_folder_is_listed_with_its_own_size_time_and_type() {
    use std::time::{Duration, UNIX_EPOCH};
    let f = Fixture::new();
    let mut want = Vec::new();
    for i in 0..400usize {
        let (name, body, mime) = match i % 4 {
            0 => (format!("f{i:03}.txt"), "x".repeat(i), "text/plain"),
            1 => (
                format!("f{i:03}.dat9"),
                "words ".repeat(i % 7),
                "text/plain",
            ),
            2 => (
                format!("f{i:03}.dat9"),
                format!("\0{}", "b".repeat(i % 5)),
                "application/octet-stream",
            ),
            _ => (format!("f{i:03}.MD"), "# t".to_owned(), "text/markdown"),
        };
        f.write(&format!("d/{name}"), &body);
        want.push((name, mime.to_owned(), body.len() as u64));
    }
    let set = |rel: &str, t: std::time::SystemTime| {
        let file = std::fs::File::options()
            .write(true)
            .open(f.path(rel))
            .unwrap();
        file.set_modified(t).unwrap();
    };
    set(
        "d/f000.txt",
        UNIX_EPOCH + Duration::new(981_173_106, 250_000_000),
    );
    // Before 1970, with a fraction of a second: 1969-07-20T20:17:40.5Z.
    set(
        "d/f001.dat9",
        UNIX_EPOCH - Duration::new(14_182_939, 500_000_000),
    );
    crate::support::symlink(f.path("d/f000.txt"), f.path("d/link.txt"));
    crate::support::symlink(f.path("d"), f.path("d/dir-link"));
    unlisted_unix_entries(&f);
    f.manifest("[server]\npage_size = 150\n\n[files.d]\nroot = \"d\"\nwatch = false\n");
    let mut s = f.serve().started();
    let (all, pages) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(pages, 3);
    let got: Vec<(String, String, u64)> = all
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                r["mimeType"].as_str().unwrap().to_owned(),
                r["size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
    for (r, (name, _, _)) in all.iter().zip(&want) {
        assert_eq!(r["uri"], f.uri(&format!("d/{name}")));
    }
    let modified = |i: usize| all[i]["annotations"]["lastModified"].clone();
    assert_eq!(modified(0), "2001-02-03T04:05:06Z");
    assert_eq!(modified(1), "1969-07-20T20:17:40Z");
}

/// A FIFO and a name that is not UTF-8 in `d/`, never listed. Unix only: Windows has no FIFO
/// in its file system, and its names are UTF-16 (devices and names it would alias are refused
/// by `platform::windows::tests`).
#[cfg(unix)]
fn unlisted_unix_entries(f: &Fixture) {
    use std::os::unix::ffi::OsStrExt as _;
    let fifo = std::process::Command::new("mkfifo")
        .arg(f.path("d/pipe.txt"))
        .status()
        .expect("run mkfifo");
    assert!(fifo.success());
    let raw = std::ffi::OsStr::from_bytes(b"d/bad-\xff.txt");
    std::fs::write(f.root().join(raw), "x").expect("write");
}

#[cfg(not(unix))]
fn unlisted_unix_entries(_: &Fixture) {}

/// A read sent once the previous answer came sees a change made in between, though the reader
/// answered that file from what it kept: each read of the input is checked again
/// (`providers::arrival`); two reads sent in one write share one check.
#[test]
fn a_read_sent_after_a_change_sees_it_though_the_file_was_kept() {
    let f = Fixture::new();
    f.manifest("[files.d]\nroot = \"d\"\n");
    f.write("d/a.txt", "v0");
    // A file is kept once it has stood unchanged for a second (`files::SETTLED`): the clock's
    // wait, no event to wait for.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let mut s = f.serve().started();
    let uri = f.uri("d/a.txt");
    let text = |r: &Value| {
        r["contents"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    for _ in 0..2 {
        assert_eq!(text(&s.ok("resources/read", json!({"uri": uri}))), "v0");
    }
    // Two in one write: both answered, from what was kept.
    let ids = [s.fresh_id(), s.fresh_id()];
    let both = ids
        .iter()
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}})
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n");
    s.send_raw(&both);
    for id in ids {
        assert_eq!(text(&s.response(&json!(id))["result"]), "v0");
    }
    for i in 1..=3 {
        f.write("d/a.txt", format!("v{i}"));
        assert_eq!(
            text(&s.ok("resources/read", json!({"uri": uri}))),
            format!("v{i}")
        );
    }
}
