//! Unit tests of `tools::search`.

use super::*;
use crate::manifest::{self, Diagnostics, Loc};

fn tool(dir: &std::path::Path) -> SearchTool {
    tool_of(&[("d", dir)])
}

/// The tool over one source per `(name, root)`, in that order.
fn tool_of(roots: &[(&str, &std::path::Path)]) -> SearchTool {
    let sources: Vec<Arc<FilesSource>> = roots
        .iter()
        .map(|(name, root)| Arc::new(source(name, root)))
        .collect();
    SearchTool::build(&sources).expect("searchable")
}

fn source(name: &str, dir: &std::path::Path) -> FilesSource {
    source_up_to(name, dir, 1 << 20)
}

fn source_up_to(name: &str, dir: &std::path::Path, max_size: u64) -> FilesSource {
    let def = manifest::Files {
        name: name.into(),
        loc: Loc::default(),
        root: dir.to_path_buf(),
        root_loc: Loc::default(),
        include: vec![("**/*".into(), Loc::default())],
        exclude: Vec::new(),
        gitignore: true,
        hidden: false,
        max_size,
        watch: false,
        poll: None,
        description: None,
        search: true,
    };
    let mut diags = Diagnostics::new("t.toml");
    FilesSource::build(&def, &mut diags).expect("source")
}

/// The (source, path, line) of each match.
fn found(result: &ToolResult) -> Vec<(String, String, u64)> {
    let structured = result.structured.as_ref().expect("structured");
    structured["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| {
            (
                m["source"].as_str().unwrap_or_default().to_owned(),
                m["path"].as_str().unwrap_or_default().to_owned(),
                m["line"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

/// Sources searched in manifest order, each file once: a file two overlapping roots serve
/// (either way round, or a one-file root inside another's) under the first source, and a
/// source beside them all with its own name. The glob narrows every source.
/// `n` matching lines.
fn hit(n: usize) -> FileHits {
    FileHits {
        lines: (1..=n as u64)
            .map(|number| Line {
                number,
                text: "x".into(),
                is_match: true,
                after_break: false,
            })
            .collect(),
        matches: n,
    }
}

#[test]
fn only_what_the_answer_can_reach_is_kept_however_slow_an_early_file_is() {
    let mut r = Results {
        hits: BTreeMap::new(),
        last: None,
    };
    let kept = |r: &Results| r.hits.keys().copied().collect::<Vec<_>>();
    // File 0 is still being searched; the other thread finds two matches in every later
    // file (max_matches 3): by file 2 the answer is full, whatever file 0 holds.
    assert!(!r.record(1, hit(2), 3));
    assert!(r.record(2, hit(2), 3));
    for i in 3..10_000 {
        assert!(r.record(i, hit(2), 3));
    }
    assert_eq!(kept(&r), [1, 2]);
    // File 0 ends with matches of its own: the cut moves up to it.
    assert!(r.record(0, hit(4), 3));
    assert_eq!(kept(&r), [0]);
    assert_eq!(r.last, Some(0));
    // Files without a match take no room, before or after the cut.
    let mut r = Results {
        hits: BTreeMap::new(),
        last: None,
    };
    for i in (0..100).rev() {
        assert!(!r.record(i, FileHits::default(), 3));
    }
    assert!(!r.record(50, hit(3), 3));
    assert!(!r.record(7, FileHits::default(), 3));
    assert!(r.record(60, hit(1), 3));
    assert_eq!(kept(&r), [50, 60]);
}

#[test]
fn overlapping_sources_search_each_file_once_under_the_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let top = dir.path().join("top");
    let other = dir.path().join("other");
    std::fs::create_dir_all(top.join("sub")).expect("mkdir");
    std::fs::create_dir_all(&other).expect("mkdir");
    for (path, text) in [
        (top.join("a.txt"), "needle a\n"),
        (top.join("sub/b.txt"), "x\nneedle b\n"),
        (top.join("sub/c.md"), "needle c\n"),
        (other.join("d.txt"), "needle d\n"),
    ] {
        std::fs::write(path, text).expect("write");
    }
    let sub = top.join("sub");
    let one_file = sub.join("c.md");
    let stop = CancellationToken::new();
    let search = |t: &SearchTool, a: Value| {
        let q = t.query(&args(a)).expect("query");
        found(&run(&t.sources, &q, &stop, None).expect("searched"))
    };
    let row = |s: &str, p: &str, l: u64| (s.to_owned(), p.to_owned(), l);
    // The inner root first: its files are its own, the outer root keeps the rest.
    let t = tool_of(&[("inner", &sub), ("outer", &top), ("beside", &other)]);
    assert_eq!(
        search(&t, json!({"pattern": "needle"})),
        [
            row("inner", "b.txt", 2),
            row("inner", "c.md", 1),
            row("outer", "a.txt", 1),
            row("beside", "d.txt", 1),
        ]
    );
    // The outer root first: it has them all; a one-file root inside it adds nothing.
    let t = tool_of(&[("outer", &top), ("file", &one_file), ("beside", &other)]);
    assert_eq!(
        search(&t, json!({"pattern": "needle"})),
        [
            row("outer", "a.txt", 1),
            row("outer", "sub/b.txt", 2),
            row("outer", "sub/c.md", 1),
            row("beside", "d.txt", 1),
        ]
    );
    assert_eq!(
        search(&t, json!({"pattern": "needle", "glob": "*.txt"})),
        [
            row("outer", "a.txt", 1),
            row("outer", "sub/b.txt", 2),
            row("beside", "d.txt", 1),
        ]
    );
    // The one-file source alone.
    assert_eq!(
        search(&t, json!({"pattern": "needle", "source": "file"})),
        [row("file", "c.md", 1)]
    );
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

#[test]
fn a_cancelled_search_stops_and_answers_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..5000 {
        let sub = dir.path().join(format!("d{}", i / 500));
        std::fs::create_dir_all(&sub).expect("mkdir");
        // Matches only in a few files: a search must read them all (one that reached its
        // cap in the first files could end before the cancellation comes).
        let last = if i % 1000 == 999 {
            "three needle\n"
        } else {
            "three\n"
        };
        std::fs::write(
            sub.join(format!("f{i}.txt")),
            format!("one\ntwo\n{last}").repeat(20),
        )
        .expect("write");
    }
    let t = tool(dir.path());
    let q = t
        .query(&args(json!({"pattern": "needle", "max_matches": 1000})))
        .expect("query");
    let whole = run(&t.sources, &q, &CancellationToken::new(), None).expect("searched");
    assert_eq!(whole.structured.expect("structured")["truncated"], false);

    // Cancelled before it starts.
    let stop = CancellationToken::new();
    stop.cancel();
    assert!(run(&t.sources, &q, &stop, None).is_none());

    // Cancelled once it reports that it started (before any file is searched): the threads
    // stop at their next file and the search answers nothing.
    let stop = CancellationToken::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::scope(|scope| {
        let running = scope.spawn(|| run(&t.sources, &q, &stop, Some(tx)));
        let first = rx.blocking_recv().expect("a first progress report");
        assert!(
            first.message.is_some_and(|m| m.contains("of 5000 files")),
            "first report"
        );
        stop.cancel();
        assert!(running.join().expect("no panic").is_none());
    });
}

/// The walk gives names only (no `stat`): a file swapped after it for a symlink leading out
/// of the root, or for a FIFO, is not searched (each file is opened with every check a read
/// makes) and does not hold the search up; one that went is skipped.
// Unix only: symlinks and FIFOs (Windows needs a privilege to make a symlink, has no FIFO
// in its file system; the Windows opens are tested in `platform::windows::tests`).
#[cfg(unix)]
#[test]
fn files_swapped_after_the_walk_are_not_searched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("sub")).expect("mkdir");
    std::fs::write(dir.path().join("secret.txt"), "needle outside\n").expect("write");
    for name in ["a.txt", "sub/b.txt", "sub/c.txt", "sub/d.txt"] {
        std::fs::write(root.join(name), "needle inside\n").expect("write");
    }
    let t = tool(&root);
    let source = &t.sources[0];
    let walked = source.served_paths();
    assert_eq!(
        walked.iter().collect::<Vec<_>>(),
        ["a.txt", "sub/b.txt", "sub/c.txt", "sub/d.txt"]
    );
    std::fs::remove_file(root.join("a.txt")).expect("rm");
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("a.txt")).expect("symlink");
    std::fs::remove_file(root.join("sub/b.txt")).expect("rm");
    let fifo = std::ffi::CString::new(root.join("sub/b.txt").as_os_str().as_encoded_bytes())
        .expect("a path");
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::fs::remove_file(root.join("sub/c.txt")).expect("rm");
    let q = t.query(&args(json!({"pattern": "needle"}))).expect("query");
    let stop = CancellationToken::new();
    let mut searcher = SearcherBuilder::new().line_number(true).build();
    let mut dirs = None;
    let found: Vec<usize> = walked
        .iter()
        .map(|rel| search_one(&mut searcher, source, &mut dirs, rel, &q, &stop).matches)
        .collect();
    assert_eq!(found, [0, 0, 0, 1], "only the file still in place");
    // The whole search (a walk of its own now) finds only that one too.
    let whole = run(&t.sources, &q, &stop, None).expect("searched");
    let text = whole.structured.expect("structured").to_string();
    assert!(!text.contains("outside"), "{text}");
    assert!(text.contains("sub/d.txt"), "{text}");
}

/// `regex` repeats a pattern it cannot compile: a short one keeps that message, a long one
/// (4 MiB here) is quoted cut, with only what is wrong.
#[test]
fn invalid_patterns_are_quoted_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tool(dir.path());
    let short = t.query(&args(json!({"pattern": "("}))).err();
    assert_eq!(
        short.as_deref(),
        Some("invalid pattern `(`: regex parse error:\n    (\n    ^\nerror: unclosed group")
    );
    let long = format!("({}", "é".repeat(2 << 20));
    let m = t
        .query(&args(json!({"pattern": long})))
        .err()
        .unwrap_or_default();
    assert!(m.len() < 1024, "{} bytes", m.len());
    assert!(
        m.ends_with("…` (2097153 characters): unclosed group"),
        "{m:.300}"
    );
    let m = t.query(&args(json!({long: 1}))).err().unwrap_or_default();
    assert!(
        m.len() < 1024 && m.starts_with("unknown argument `(éé"),
        "{m:.300}"
    );
}

#[test]
fn long_lines_are_cut_at_a_character_boundary() {
    let line = format!("{}é tail\n", "a".repeat(MAX_LINE - 1));
    let text = line_text(line.as_bytes());
    assert!(text.starts_with(&"a".repeat(MAX_LINE - 1)), "{text}");
    assert!(text.ends_with("more bytes]"), "{text}");
    assert!(!text.contains('é'), "{text}");
    assert_eq!(line_text(b"plain\r\n"), "plain");
    assert_eq!(line_text(b"bad \xff byte\n"), "bad \u{fffd} byte");
}

/// A file whose lines are longer than the line buffer holds (a minified bundle) is searched
/// in windows: every match is found once with its line number, even one across a window's
/// edge or after a character cut there, and its text is the part of the line around it (not
/// the line's start), at most `MAX_LINE` bytes and marked where the line goes on. The lines
/// of a file after a long one still count.
#[test]
fn lines_longer_than_the_buffer_are_searched_in_windows() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut text = String::from("short needle first\n");
    let long_at = [10usize, WINDOW - 3, WINDOW + OVERLAP + 5, 3 * WINDOW];
    let mut long = "é".repeat(2 * WINDOW);
    for (k, at) in long_at.iter().enumerate() {
        // At a character boundary at or after `at`.
        let mut at = *at;
        while !long.is_char_boundary(at) {
            at += 1;
        }
        long.insert_str(at, &format!("needle{k}"));
    }
    text.push_str(&long);
    text.push_str("\nlast needle\n");
    std::fs::write(dir.path().join("min.js"), &text).expect("write");
    let t = SearchTool::build(&[Arc::new(source_up_to("d", dir.path(), 16 << 20))])
        .expect("searchable");
    let q = t
        .query(&args(json!({"pattern": "needle\\d?"})))
        .expect("query");
    let r = run(&t.sources, &q, &CancellationToken::new(), None).expect("searched");
    let lines: Vec<u64> = found(&r).iter().map(|(_, _, l)| *l).collect();
    assert_eq!(lines, [1, 2, 2, 2, 2, 3], "{:?}", r.structured);
    let matches = r.structured.as_ref().expect("structured")["matches"]
        .as_array()
        .expect("matches")
        .clone();
    for (k, m) in matches[1..5].iter().enumerate() {
        let t = m["text"].as_str().expect("text");
        assert!(t.contains(&format!("needle{k}")), "{k}: {t}");
        assert!(t.len() <= MAX_LINE + 16, "{k}: {} bytes", t.len());
        assert!(t.ends_with(" […]"), "{k}: {t}");
        assert!(!t.contains('\u{fffd}'), "{k}: no cut character: {t}");
    }
    assert!(
        !matches[1]["text"]
            .as_str()
            .expect("text")
            .starts_with("[…]")
    );
    assert!(
        matches[2]["text"]
            .as_str()
            .expect("text")
            .starts_with("[…] ")
    );
    assert_eq!(matches[5]["text"], "last needle");
}
