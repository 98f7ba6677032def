//! Repository habits checked by a test: every Rust file says what it owns on its first line,
//! nothing generated is tracked, and scripts follow one naming style.

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
