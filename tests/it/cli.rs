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

/// A manifest that does not exist is an error that says how to write one, naming the folder it
/// was looked for in: for `check`, `serve` and no verb at all (which serves), and for a manifest
/// named elsewhere. The command it names then writes a manifest `check` accepts. A manifest that
/// exists but cannot be read (a folder) gets no such hint: `init` would not help.
#[test]
fn a_missing_manifest_suggests_init_for_its_folder() {
    let f = Fixture::new();
    f.write("docs/a.md", "# A\n");
    let hint = |folder: &std::path::Path| {
        format!(
            "; `mcp-manifest init {}` writes a starter manifest from what the folder holds",
            folder.display()
        )
    };
    let root = f.root();
    for args in [&["check"][..], &["serve"], &[]] {
        let out = f.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
        let err = stderr(&out);
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("mcp-server.toml:1:1: cannot read the manifest: ")
                && first.ends_with(&format!(
                    "(tried {}; working directory {}){}",
                    f.path("mcp-server.toml").display(),
                    root.display(),
                    hint(&root)
                )),
            "{args:?}: {err}"
        );
        assert_eq!(
            err.lines().nth(1),
            Some("mcp-server.toml: 1 error found"),
            "{args:?}: {err}"
        );
    }
    // Named elsewhere: the hint names that manifest's folder, not the working directory.
    let out = f.run(&["check", "sub/m.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("sub/m.toml:1:1: cannot read the manifest: ")
            && err
                .lines()
                .next()
                .unwrap_or_default()
                .ends_with(&hint(&f.path("sub"))),
        "{err}"
    );
    // The suggested command, run as written, gives a manifest that serves the folder.
    let err = stderr(&f.run(&["check"]));
    let suggested = err
        .split('`')
        .nth(1)
        .and_then(|c| c.strip_prefix("mcp-manifest init "))
        .unwrap_or_else(|| panic!("a suggested `mcp-manifest init DIR`: {err}"));
    let out = f.run(&["init", suggested]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = f.run(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(stdout(&out).contains("resources  1"), "{}", stdout(&out));
    // There but unreadable: the error, without the hint.
    let g = Fixture::new();
    g.mkdir("mcp-server.toml");
    let out = g.run(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("mcp-server.toml:1:1: cannot read the manifest: ")
            && !err.contains("mcp-manifest init"),
        "{err}"
    );
}

/// A manifest that declares nothing to serve (empty, comments only, or only `[server]`) is a
/// warning, not an error: `check` passes and says it (`--deny-warnings` fails), `serve` logs it
/// at the default level and serves. A prompt alone is something served: no warning. The fix it
/// names (`init --force`) writes a manifest that serves the folder, without the warning.
#[test]
fn a_manifest_that_serves_nothing_is_a_warning() {
    let f = Fixture::new();
    f.write("docs/a.md", "# A\n");
    let warning = "mcp-server.toml:1:1: warning: the manifest serves nothing: no [files], \
                   [sqlite], [postgres], [mysql], [git], [templates], [skills], [tools] or \
                   [prompts] section (`mcp-manifest init --force` writes a starter one from \
                   what the folder holds)";
    for text in ["", "# later\n", "[server]\nname = \"x\"\n"] {
        f.manifest(text);
        let out = f.run(&["check"]);
        assert_eq!(out.status.code(), Some(0), "{text:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out).lines().collect::<Vec<_>>(),
            [warning],
            "{text:?}"
        );
        let summary = stdout(&out);
        assert!(
            summary.starts_with("mcp-server.toml: ok") && summary.contains("resources  0"),
            "{text:?}: {summary}"
        );
        let out = f.run(&["check", "--deny-warnings"]);
        assert_eq!(out.status.code(), Some(1), "{text:?}");
        assert_eq!(
            stderr(&out).lines().collect::<Vec<_>>(),
            [
                warning,
                "mcp-server.toml: 1 warning found",
                "mcp-server.toml: failing because of --deny-warnings"
            ],
            "{text:?}"
        );
        let (out, _) = f.serve_input("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        assert_eq!(out.status.code(), Some(0), "{text:?}: {}", stderr(&out));
        assert_eq!(
            stdout(&out).trim_end(),
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            "{text:?}"
        );
        let logged = stderr(&out);
        assert!(
            logged
                .lines()
                .any(|l| l.contains("WARN") && l.ends_with(warning)),
            "{text:?}: {logged}"
        );
    }
    f.manifest("[prompts.p]\nmessages = [{ role = \"user\", text = \"hi\" }]\n");
    let out = f.run(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    // The fix the warning names.
    f.manifest("");
    let out = f.run(&["init", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = f.run(&["check", "--deny-warnings"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("resources  1"), "{}", stdout(&out));
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
