//! Repository habits checked by a test: every Rust file says what it owns on its first line,
//! nothing generated is tracked, scripts follow one naming style, and the release workflow
//! installs the database servers its test runs need.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_source_file_starts_with_a_module_doc_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        if root.join(dir).is_dir() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    assert!(files.len() > 20, "{files:?}");
    let missing: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("read");
            !text.starts_with("//!")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` first line: {missing:?}"
    );
}

#[test]
fn nothing_generated_is_tracked() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(root)
        .output()
        .expect("git ls-files");
    if !out.status.success() {
        // Not a git checkout (a packaged crate): nothing to check.
        return;
    }
    let tracked = String::from_utf8_lossy(&out.stdout);
    let generated: Vec<&str> = tracked
        .lines()
        .filter(|p| {
            p.contains("__pycache__")
                || p.ends_with(".pyc")
                || p.starts_with("target/")
                || p.contains("node_modules/")
        })
        .collect();
    assert!(
        generated.is_empty(),
        "generated files are tracked: {generated:?}"
    );
}

/// One naming style for scripts: Python files with underscores (they import each other), shell
/// scripts with hyphens.
#[test]
fn scripts_follow_one_naming_style() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let mut wrong = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("scripts/") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if (name.ends_with(".py") && name.contains('-'))
            || (name.ends_with(".sh") && name.contains('_'))
        {
            wrong.push(name);
        }
    }
    assert!(
        wrong.is_empty(),
        "scripts named against the style: {wrong:?}"
    );
}

/// Rust source with comments, string and char literals blanked (newlines kept, so byte
/// offsets still give line numbers): what is left is code, where `crate::` means a path.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' | b'b' | b'"' => {
                // `"…"`, `b"…"`, `r#"…"#`, `br"…"` (not when `r`/`b` ends an identifier).
                let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
                let mut j = i;
                if b[j] == b'b' {
                    j += 1;
                }
                let raw = b.get(j) == Some(&b'r');
                if raw {
                    j += 1;
                }
                let hashes = b[j..].iter().take_while(|c| **c == b'#').count();
                j += hashes;
                if ident_before || b.get(j) != Some(&b'"') || (!raw && hashes > 0) {
                    i += 1;
                    continue;
                }
                j += 1;
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += if !raw && b[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + close.len()).min(b.len());
                blank(&mut out, i, end);
                i = end;
            }
            b'\'' => {
                // A char literal (`'x'`, `'\n'`, `'\u{..}'`), not a lifetime (`'a`).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    text[i + 2..].find('\'').map(|n| i + 2 + n + 1)
                } else {
                    let c = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + c) == Some(&b'\'')).then_some(i + 2 + c)
                };
                match end {
                    Some(end) => {
                        blank(&mut out, i, end);
                        i = end;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8")
}

/// `code` without its `#[cfg(test)] mod NAME { … }` blocks, and the names of its
/// `#[cfg(test)] mod NAME;` files (test code may reach anywhere).
fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut out = code.to_owned();
    let mut test_files = Vec::new();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|n| from + n) {
        let rest = &out[at + "#[cfg(test)]".len()..];
        let trimmed = rest.trim_start();
        let Some(after_mod) = trimmed.strip_prefix("mod ") else {
            from = at + 1;
            continue;
        };
        let name: String = after_mod
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let body_at = at + "#[cfg(test)]".len() + (rest.len() - trimmed.len()) + 4 + name.len();
        let next = out[body_at..].trim_start().chars().next();
        if next == Some(';') {
            test_files.push(name);
            from = body_at;
            continue;
        }
        let open = body_at + out[body_at..].find('{').expect("a module body");
        let mut depth = 0;
        let mut end = out.len();
        for (k, c) in out[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
        from = end;
    }
    (out, test_files)
}

/// The module paths a piece of code names from the crate root (`crate::a::b`, `use
/// crate::{a::X, b}`, `super::…` resolved from `module`), each with the byte offset it is at.
fn crate_paths(code: &str, module: &[String]) -> Vec<(Vec<String>, usize)> {
    // Tokens: identifiers, `::`, and single punctuation.
    let mut tokens: Vec<(String, usize)> = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            tokens.push((code[start..i].to_owned(), start));
        } else if b[i..].starts_with(b"::") {
            tokens.push(("::".into(), i));
            i += 2;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else {
            tokens.push(((c as char).to_string(), i));
            i += 1;
        }
    }
    let ident = |t: &str| t.chars().all(|c| c.is_alphanumeric() || c == '_');
    let mut out = Vec::new();
    // Each path's start: `crate` or a chain of `super` (or `self` in a `use`), not after `::`.
    for k in 0..tokens.len() {
        let first = tokens[k].0.as_str();
        if k > 0 && (tokens[k - 1].0 == "::" || tokens[k - 1].0 == "$") {
            continue;
        }
        let mut base: Vec<String> = match first {
            "crate" => Vec::new(),
            "super" => {
                let mut m = module.to_vec();
                m.pop();
                m
            }
            _ => continue,
        };
        let mut j = k + 1;
        // More `super`s.
        while tokens.get(j).is_some_and(|t| t.0 == "::")
            && tokens.get(j + 1).is_some_and(|t| t.0 == "super")
        {
            base.pop();
            j += 2;
        }
        if tokens.get(j).is_none_or(|t| t.0 != "::") {
            continue;
        }
        j += 1;
        // `a::b::c` or `a::{…}` / `{…}`: collect the first segment of each alternative.
        let mut seg = base.clone();
        while let Some((t, _)) = tokens.get(j) {
            if t == "{" {
                // Each item of the group, up to its first `::`, `,` or `}` at depth 1.
                let mut depth = 0;
                let mut expect_item = true;
                while let Some((t, at)) = tokens.get(j) {
                    match t.as_str() {
                        "{" => {
                            depth += 1;
                            expect_item = depth == 1;
                        }
                        "}" => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        "," if depth == 1 => expect_item = true,
                        name if depth == 1 && expect_item && ident(name) => {
                            expect_item = false;
                            if name != "self" {
                                let mut p = seg.clone();
                                p.push(name.to_owned());
                                out.push((p, *at));
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                seg.clear();
                break;
            }
            if !ident(t) {
                break;
            }
            seg.push(t.clone());
            if tokens.get(j + 1).is_some_and(|t| t.0 == "::") {
                j += 2;
            } else {
                break;
            }
        }
        if !seg.is_empty() && seg.len() > base.len() {
            out.push((seg, tokens[k].1));
        }
    }
    out
}

/// The top-level modules of the library (`src/lib.rs`'s `mod` lines).
fn top_level_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l
                .strip_prefix("pub(crate) mod ")
                .or_else(|| l.strip_prefix("pub mod "))
                .or_else(|| l.strip_prefix("mod "))?;
            l.strip_suffix(';').map(str::to_owned)
        })
        .collect()
}

/// Which top-level module of the library imports which, with a place that shows each edge.
type Graph = std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>;

/// The graph of `crate::` paths between the top-level modules of the library in `src`.
fn module_graph(src: &Path) -> Graph {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let tops = top_level_modules(&lib);
    assert!(tops.len() > 5, "modules of lib.rs: {tops:?}");
    let mut files = Vec::new();
    rust_files(src, &mut files);
    // Files that are test modules (`#[cfg(test)] mod tests;`), by path.
    let mut test_files = Vec::new();
    let mut graph = Graph::new();
    let mut parsed = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(src).expect("under src");
        let mut module: Vec<String> = rel
            .with_extension("")
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        if module == ["main"] {
            // The binary: a crate of its own.
            continue;
        }
        if module.last().is_some_and(|m| m == "mod" || m == "lib") {
            module.pop();
        }
        let text = std::fs::read_to_string(file).expect("read");
        let (code, tests) = without_tests(&code_only(&text));
        for t in tests {
            let dir = if rel.file_name().is_some_and(|n| n == "mod.rs") {
                file.parent().expect("folder").to_path_buf()
            } else {
                file.with_extension("")
            };
            test_files.push(dir.join(format!("{t}.rs")));
            test_files.push(dir.join(t).join("mod.rs"));
        }
        parsed.push((file.clone(), module, text, code));
    }
    for (file, module, text, code) in parsed {
        if test_files.contains(&file) || module.is_empty() {
            continue;
        }
        let from = module[0].clone();
        for (path, at) in crate_paths(&code, &module) {
            let to = &path[0];
            if *to == from || !tops.contains(to) {
                continue;
            }
            let line = text[..at].matches('\n').count() + 1;
            let rel = file
                .strip_prefix(src.parent().expect("repo"))
                .expect("in repo");
            graph
                .entry(from.clone())
                .or_default()
                .entry(to.clone())
                .or_insert_with(|| format!("{}:{line}: crate::{}", rel.display(), path.join("::")));
        }
    }
    graph
}

/// Every cycle of strongly connected modules (Tarjan), each as its modules in a loop.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = graph
        .keys()
        .chain(graph.values().flat_map(|m| m.keys()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    // Simple and small: for each edge a→b, a path from b back to a closes a cycle.
    let reach = |from: &str, to: &str| -> Option<Vec<String>> {
        let mut prev: std::collections::BTreeMap<String, String> = Default::default();
        let mut queue = std::collections::VecDeque::from([from.to_owned()]);
        let mut seen = std::collections::BTreeSet::from([from.to_owned()]);
        while let Some(n) = queue.pop_front() {
            if n == to {
                let mut path = vec![n.clone()];
                let mut cur = n;
                while let Some(p) = prev.get(&cur) {
                    path.push(p.clone());
                    cur = p.clone();
                }
                path.reverse();
                return Some(path);
            }
            for next in graph.get(&n).into_iter().flat_map(|m| m.keys()) {
                if seen.insert(next.clone()) {
                    prev.insert(next.clone(), n.clone());
                    queue.push_back(next.clone());
                }
            }
        }
        None
    };
    let mut found: Vec<Vec<String>> = Vec::new();
    for a in &nodes {
        for b in graph.get(*a).into_iter().flat_map(|m| m.keys()) {
            if let Some(back) = reach(b, a) {
                let mut cycle = vec![(*a).clone()];
                cycle.extend(back);
                // The same cycle seen from another edge: keep one.
                let mut key = cycle[..cycle.len() - 1].to_vec();
                key.sort();
                if !found.iter().any(|c| {
                    let mut k = c[..c.len() - 1].to_vec();
                    k.sort();
                    k == key
                }) {
                    found.push(cycle);
                }
            }
        }
    }
    found
}

/// Each hop of a cycle with the place that makes it.
fn explain(graph: &Graph, cycle: &[String]) -> String {
    cycle
        .windows(2)
        .map(|w| format!("  {} → {}: {}", w[0], w[1], graph[&w[0]][&w[1]]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Layering breaks: `providers/` (the sources) reaching up into the modules that use them, and
/// the registry reaching into the wire.
const FORBIDDEN: [(&str, &str); 5] = [
    ("providers", "registry"),
    ("providers", "tools"),
    ("providers", "server"),
    ("providers", "cli"),
    ("registry", "server"),
];

/// The library's top-level modules import each other without a cycle (a module is read after
/// those it uses), `providers/` never imports the layers above it, nor `registry` the server. The graph is built from
/// every `crate::` path of `src/` outside test code (`use` lines, groups and paths in code,
/// `super::` resolved).
#[test]
fn modules_form_no_cycle_and_providers_import_nothing_above_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    assert!(
        graph
            .get("registry")
            .is_some_and(|m| m.contains_key("providers")),
        "the graph sees `registry` → `providers`: {graph:#?}"
    );
    let mut problems = Vec::new();
    for cycle in cycles(&graph) {
        problems.push(format!(
            "cycle {}:\n{}",
            cycle.join(" → "),
            explain(&graph, &cycle)
        ));
    }
    for (from, to) in FORBIDDEN {
        if let Some(place) = graph.get(from).and_then(|m| m.get(to)) {
            problems.push(format!("{from} → {to}: {place}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The graph reader itself: grouped and nested `use`, `super::` chains, paths in code, and
/// what it must not count (comments, strings, test modules).
#[test]
fn the_module_graph_reads_every_form_of_path() {
    let module = |s: &str| -> Vec<String> { s.split("::").map(str::to_owned).collect() };
    let code = code_only(
        "use crate::{a::{self, X}, b::Y as Z};\nuse super::super::c::D;\nfn f() { crate::d::e(); \
         let s = \"crate::no\"; let r = r#\"crate::raw\"#; let c = '\"'; } // crate::comment\n\
         /* crate::block */ fn g<'a>(x: &'a str) { super::e::f(x) }\n\
         #[cfg(test)]\nmod tests { use crate::t; }\n",
    );
    let (code, _) = without_tests(&code);
    let firsts: Vec<String> = crate_paths(&code, &module("p::q"))
        .into_iter()
        .map(|(p, _)| p.join("::"))
        .collect();
    assert_eq!(firsts, ["a", "b", "c::D", "d::e", "p::e::f"]);
}

/// The release workflow runs the test suite on real Linux and macOS runners, where the postgres
/// and mysql tests fail (by design: never skipped) without the servers' binaries. Each runner
/// that tests gets a step before the test suite installing them, and every variable that step
/// hands on is one the harness reads (`tests/it/postgres/cluster.rs`, `tests/it/mysql/server.rs`);
/// the Debian places the Linux step checks are the ones the harness looks at. Windows ignores
/// those tests (`cfg_attr(not(unix), ignore)`).
#[test]
fn the_release_workflow_installs_the_servers_its_tests_need() {
    use yaml_rust2::{Yaml, YamlLoader};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(text) = std::fs::read_to_string(root.join(".github/workflows/release.yml")) else {
        // A packaged crate: nothing to check.
        return;
    };
    let harness = ["tests/it/postgres/cluster.rs", "tests/it/mysql/server.rs"]
        .map(|p| std::fs::read_to_string(root.join(p)).expect("harness source"))
        .join("\n");
    let docs = YamlLoader::load_from_str(&text).expect("release.yml is YAML");
    let build = &docs[0]["jobs"]["build"];
    let steps = build["steps"].as_vec().expect("build steps");
    let name = |s: &Yaml| s["name"].as_str().unwrap_or_default().to_owned();
    let tests_at = steps
        .iter()
        .position(|s| name(s) == "Test suite")
        .expect("a `Test suite` step");
    assert!(
        steps[tests_at]["run"]
            .as_str()
            .is_some_and(|r| r.contains("cargo test"))
    );
    let mut tested = Vec::new();
    for row in build["strategy"]["matrix"]["include"]
        .as_vec()
        .expect("matrix rows")
    {
        if row["test"].as_bool() == Some(true) {
            tested.push(row["runner"].as_str().expect("runner").to_owned());
        }
    }
    assert!(tested.len() >= 3, "{tested:?}");
    for runner in &tested {
        let (os, installs): (&str, &[&str]) = if runner.starts_with("ubuntu-") {
            ("Linux", &["postgresql-15", "mariadb-server"])
        } else if runner.starts_with("macos-") {
            ("macOS", &["postgresql@15", "mariadb@"])
        } else {
            assert!(runner.starts_with("windows-"), "unknown runner {runner}");
            continue;
        };
        let condition = format!("matrix.test && runner.os == '{os}'");
        let step = steps[..tests_at]
            .iter()
            .find(|s| s["if"].as_str() == Some(condition.as_str()))
            .unwrap_or_else(|| panic!("{runner}: no step `if: {condition}` before the tests"));
        let run = step["run"].as_str().expect("a run script");
        for package in installs {
            assert!(run.contains(package), "{runner}: {package} not installed");
        }
        for line in run.lines().filter(|l| l.contains("$GITHUB_ENV")) {
            let var = line
                .split('"')
                .nth(1)
                .and_then(|v| v.split_once('='))
                .map(|(v, _)| v)
                .unwrap_or_else(|| panic!("{runner}: unexpected line {line}"));
            assert!(
                harness.contains(&format!("var_os(\"{var}\")")),
                "{runner}: the harness reads no {var}"
            );
        }
        if os == "Linux" {
            for path in ["/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db"] {
                assert!(run.contains(path) && harness.contains(&format!("\"{path}\"")));
            }
        }
    }
}
