//! The command-line verbs as a user runs them.

use crate::support::{Fixture, stderr, stdout};

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("docs/a.md", "# A\n");
    f.write("docs/b.bin", [0u8, 1, 2]);
    f.manifest("[server]\nname = \"demo\"\n\n[files.docs]\nroot = \"docs\"\n");
    f
}

#[test]
fn check_prints_a_summary_with_counts() {
    let f = fixture();
    let out = f.run(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("mcp-server.toml: ok"), "{text}");
    assert!(text.contains("resources  2"), "{text}");
    assert!(text.contains("templates  1"), "{text}");
    assert!(text.contains("tools      3"), "{text}");
    assert!(text.contains("prompts    0"), "{text}");
}

#[test]
fn schema_prints_the_committed_schema_file() {
    let out = Fixture::new().run(&["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let printed: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let committed_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schemas/mcp-server.schema.json"
    );
    let committed =
        std::fs::read_to_string(committed_path).expect("schemas/mcp-server.schema.json");
    // Byte for byte: the file is what `schema` prints, so editors and the CLI agree.
    assert!(
        stdout(&out) == committed,
        "schemas/mcp-server.schema.json is out of date: run `cargo run -- schema > schemas/mcp-server.schema.json`"
    );
    assert_eq!(
        printed["properties"]["files"]["additionalProperties"]["$ref"],
        "#/$defs/RawFiles"
    );
}

#[test]
fn list_prints_resources_templates_tools_and_prompts() {
    let f = fixture();
    let out = f.run(&["list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&f.uri("docs/a.md")), "{text}");
    assert!(text.contains("templates (1)"), "{text}");
    assert!(text.contains("list_resources"), "{text}");
    assert!(text.contains("prompts (0)"), "{text}");
}

#[test]
fn read_prints_text_and_base64_and_fails_on_not_found() {
    let f = fixture();
    let out = f.run(&["read", &f.uri("docs/a.md")]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "# A\n");
    let out = f.run(&["read", &f.uri("docs/b.bin")]);
    assert_eq!(stdout(&out), "AAEC\n");
    let out = f.run(&["read", "--raw", &f.uri("docs/b.bin")]);
    assert_eq!(out.stdout, [0u8, 1, 2]);
    let out = f.run(&["read", &f.uri("docs/zz.md")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("resource not found"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn read_and_call_take_a_manifest_from_elsewhere() {
    let f = fixture();
    let other = Fixture::new();
    let manifest = f.path("mcp-server.toml").display().to_string();
    let out = other.run(&["read", "--manifest", &manifest, &f.uri("docs/a.md")]);
    assert_eq!(stdout(&out), "# A\n", "{}", stderr(&out));
    let out = other.run(&[
        "call",
        "read_resource",
        &format!("uri={}", f.uri("docs/a.md")),
        "--manifest",
        &manifest,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "# A\n", "text is printed as it is");
    let out = other.run(&["call", "read_resource", "uri=file:///nope", "-m", &manifest]);
    assert_eq!(out.status.code(), Some(1), "isError exits 1");
}

#[test]
fn relative_paths_resolve_against_the_manifest_folder_not_the_cwd() {
    let f = fixture();
    let elsewhere = Fixture::new();
    let manifest = f.path("mcp-server.toml").display().to_string();
    let out = elsewhere.run(&["check", &manifest]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("resources  2"));
}

#[test]
fn no_manifest_is_a_clear_error() {
    let out = Fixture::new().run(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("mcp-server.toml:1:1: cannot read the manifest"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn every_example_manifest_checks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let examples = std::fs::read_dir(root.join("examples")).expect("examples/");
    let mut checked = 0;
    for entry in examples.flatten() {
        let manifest = entry.path().join("mcp-server.toml");
        if !manifest.exists() {
            continue;
        }
        let out = std::process::Command::new(crate::support::BIN)
            .arg("check")
            .arg(&manifest)
            .output()
            .expect("run check");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            manifest.display(),
            stderr(&out)
        );
        checked += 1;
    }
    assert!(checked >= 3, "examples/notes, shop and project");
}

// Unix only: a terminal made by `script(1)` (util-linux).
#[cfg(unix)]
#[test]
fn serve_on_a_terminal_says_what_it_serves_on_stderr() {
    use std::io::{BufRead, BufReader};
    let f = fixture();
    // `script` (util-linux) runs the server on a pseudo-terminal, as a person at a shell would.
    let command = format!(
        "{} serve {}",
        crate::support::BIN,
        f.path("mcp-server.toml").display()
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("script(1) from util-linux");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a line");
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        first.contains("serving `demo`") && first.contains("waiting for an MCP client"),
        "{first:?}"
    );
}
