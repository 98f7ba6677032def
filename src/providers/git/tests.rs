//! The git source's unit tests.

use super::*;

#[test]
fn quotes_paths_like_git_porcelain() {
    assert_eq!(quote_path(b"src/main.rs"), "src/main.rs");
    assert_eq!(quote_path("é.txt".as_bytes()), "é.txt");
    assert_eq!(quote_path(b"a b"), "\"a b\"");
    assert_eq!(quote_path(b"q\"\\"), "\"q\\\"\\\\\"");
    assert_eq!(quote_path(b"t\tn\n"), "\"t\\tn\\n\"");
    assert_eq!(quote_path(b"bad\xffname"), "\"bad\\377name\"");
}

#[test]
fn iso_dates_keep_the_signature_offset() {
    assert_eq!(
        iso_date(git2::Time::new(1_700_000_000, 60)),
        "2023-11-14T23:13:20+01:00"
    );
    assert_eq!(
        iso_date(git2::Time::new(0, -330)),
        "1969-12-31T18:30:00-05:30"
    );
}

fn source(path: &Path, diags: &mut Diagnostics) -> Option<GitSource> {
    let loc = manifest::Loc { line: 1, col: 1 };
    let def = manifest::Git {
        name: "r".into(),
        loc,
        path: path.to_path_buf(),
        path_loc: loc,
        log_limit: 50,
        watch: true,
        description: None,
        commit_tool: None,
        file_tool: None,
    };
    GitSource::build(&def, diags)
}

#[test]
fn discovery_and_fixed_uris_for_a_work_tree_and_a_bare_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let top = crate::providers::platform::canonical(tmp.path()).unwrap();
    Repository::init(top.join("work")).unwrap();
    std::fs::create_dir(top.join("work/sub")).unwrap();
    Repository::init_bare(top.join("bare.git")).unwrap();
    let mut diags = Diagnostics::new("m.toml");

    let work = source(&top.join("work/sub"), &mut diags).unwrap();
    let uris =
        |g: &GitSource| -> Vec<String> { g.fixed_resources().into_iter().map(|r| r.uri).collect() };
    assert_eq!(
        uris(&work),
        [
            "git://r/log",
            "git://r/status",
            "git://r/branches",
            "git://r/diff"
        ]
    );
    // Discovered upward from the subfolder: the repository's git dir and work tree.
    assert_eq!(work.git_dir, top.join("work/.git"));
    assert_eq!(work.work_tree, Some(top.join("work/")));

    let bare = source(&top.join("bare.git"), &mut diags).unwrap();
    assert_eq!(uris(&bare), ["git://r/log", "git://r/branches"]);
    assert_eq!(bare.work_tree, None);
    assert!(bare.git_dir.ends_with("bare.git"));
    assert!(diags.is_empty());

    assert!(source(&top, &mut diags).is_none());
    assert_eq!(diags.items.len(), 1);
}

#[test]
fn template_and_hand_written_uris_give_rev_and_path() {
    let tmp = tempfile::tempdir().unwrap();
    Repository::init(tmp.path()).unwrap();
    let mut diags = Diagnostics::new("m.toml");
    let g = source(tmp.path(), &mut diags).unwrap();
    let commit = |u: &str| g.match_commit(u);
    assert_eq!(commit("git://r/commit/HEAD~2").as_deref(), Some("HEAD~2"));
    assert_eq!(commit("git://r/commit/HEAD%5E2").as_deref(), Some("HEAD^2"));
    assert_eq!(commit("git://r/commit/HEAD^2").as_deref(), Some("HEAD^2"));
    assert_eq!(
        commit("git://r/commit/feature%2Fx").as_deref(),
        Some("feature/x")
    );
    assert_eq!(
        commit("git://r/commit/feature/x").as_deref(),
        Some("feature/x")
    );
    assert_eq!(commit("git://r/commit/"), None);
    assert_eq!(commit("git://r/commit/bad%zz"), None);
    assert_eq!(commit("git://other/commit/HEAD"), None);
    let blob = |u: &str| g.match_blob(u);
    let pair = |r: &str, p: &str| Some((r.to_owned(), p.to_owned()));
    assert_eq!(blob("git://r/blob/v1.0/a/b.txt"), pair("v1.0", "a/b.txt"));
    assert_eq!(
        blob("git://r/blob/topic%2Fx/a%20b/%231%3F.md"),
        pair("topic/x", "a b/#1?.md")
    );
    assert_eq!(blob("git://r/blob/HEAD^/a.txt"), pair("HEAD^", "a.txt"));
    assert_eq!(blob("git://r/blob/HEAD"), None);
    assert_eq!(blob("git://r/blob//a.txt"), None);
    assert_eq!(blob("git://r/blob/HEAD/%FF"), None);
}
