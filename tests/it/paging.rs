//! `resources/list` paging: pages resume after the last path served (O(page) for a source that
//! is not watched), in the same order as one full listing, across sources, and stay right when
//! the tree changes between pages.

use serde_json::{Value, json};

use crate::support::{Fixture, list_all};

/// Names whose order trips a walk that sorts each folder by bare name: `-` and `.` sort before
/// `/`, so `a-b` and `a.txt` come before `a/x`; `a0` comes after it.
fn tricky_tree(f: &Fixture) -> Vec<&'static str> {
    let files = [
        "a-b", "a.txt", "a/x", "a/y/z.md", "a0", "b/c-d/e", "b/c.d", "b/c/f", "z",
    ];
    for (i, rel) in files.iter().enumerate() {
        f.write(&format!("t/{rel}"), format!("file {i}"));
    }
    // Not served: hidden, ignored.
    f.write("t/.hidden", "h");
    f.write("t/b/.gitignore", "ignored.txt\n");
    f.write("t/b/ignored.txt", "i");
    files.to_vec()
}

fn uris(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|r| r["uri"].as_str().expect("uri").to_owned())
        .collect()
}

#[test]
fn pages_follow_path_order_whatever_the_page_size_and_watch() {
    let f = Fixture::new();
    let files = tricky_tree(&f);
    let mut expected: Vec<String> = files.iter().map(|r| f.uri(&format!("t/{r}"))).collect();
    expected.sort();
    let want: Vec<String> = files.iter().map(|r| f.uri(&format!("t/{r}"))).collect();
    assert_eq!(expected, want, "the fixture lists files in byte order");
    for watch in [false, true] {
        for page_size in [1, 2, 3, 4, 9, 10, 100] {
            f.manifest(&format!(
                "[server]\npage_size = {page_size}\n\n[files.t]\nroot = \"t\"\nwatch = {watch}\n"
            ));
            let mut s = f.serve().started();
            let (items, pages) = list_all(&mut s, "resources/list", "resources");
            assert_eq!(
                uris(&items),
                want,
                "watch = {watch}, page_size = {page_size}"
            );
            assert_eq!(pages, files.len().div_ceil(page_size), "no empty last page");
        }
    }
}

#[test]
fn pages_span_sources_without_gaps_or_empty_pages() {
    let f = Fixture::new();
    f.write("one/a.txt", "a");
    f.write("one/b.txt", "b");
    f.write("two/c.txt", "c");
    f.write("three/d.txt", "d");
    f.mkdir("empty");
    f.manifest(
        "[server]\npage_size = 2\n\n\
         [files.one]\nroot = \"one\"\nwatch = false\n\n\
         [files.empty]\nroot = \"empty\"\nwatch = false\n\n\
         [files.two]\nroot = \"two\"\n\n\
         [files.three]\nroot = \"three/d.txt\"\n",
    );
    let mut s = f.serve().started();
    let (items, pages) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(
        uris(&items),
        [
            f.uri("one/a.txt"),
            f.uri("one/b.txt"),
            f.uri("two/c.txt"),
            f.uri("three/d.txt")
        ]
    );
    assert_eq!(pages, 2);
}

#[test]
fn a_page_resumes_after_its_last_path_when_the_tree_changes() {
    let f = Fixture::new();
    for name in ["a", "b", "c", "d"] {
        f.write(&format!("t/{name}"), name);
    }
    f.manifest("[server]\npage_size = 2\n\n[files.t]\nroot = \"t\"\nwatch = false\n");
    let mut s = f.serve().started();
    let first = s.ok("resources/list", json!({}));
    let cursor = first["nextCursor"].as_str().expect("more").to_owned();
    // `b` (served) goes and `a0` (before the cursor) comes: the next page is still c, d.
    std::fs::remove_file(f.path("t/b")).unwrap();
    f.write("t/a0", "new");
    let second = s.ok("resources/list", json!({"cursor": cursor}));
    assert_eq!(
        uris(second["resources"].as_array().unwrap()),
        [f.uri("t/c"), f.uri("t/d")]
    );
    assert!(second.get("nextCursor").is_none());
}

#[test]
fn bad_resource_cursors_are_invalid_params() {
    let f = Fixture::new();
    f.write("t/a", "a");
    f.write("t/b", "b");
    f.manifest("[server]\npage_size = 1\n\n[files.t]\nroot = \"t\"\n");
    let mut s = f.serve().started();
    use base64::Engine as _;
    let enc = |raw: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
    for bad in [
        "bogus".to_owned(),
        enc("res:9:a"),
        enc("res:x:a"),
        enc("page:1"),
        enc("nothing"),
    ] {
        let e = s.err("resources/list", json!({"cursor": bad}));
        assert_eq!(e["code"], -32602, "{bad}: {e}");
    }
}
