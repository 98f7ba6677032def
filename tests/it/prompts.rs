//! Prompts through the real binary: listing, argument substitution, embedded resources read with
//! the same access rules as `resources/read`, completion of arguments, and errors.

use serde_json::json;

use crate::support::Fixture;

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("docs/a b.md", "# A\nsome text\n");
    f.write("docs/.secret", "TOP SECRET\n");
    f.write("outside.txt", "NOT SERVED\n");
    f.manifest(
        r#"
[files.docs]
root = "docs"

[prompts.review]
description = "Review one file"
title = "Review"
args.path = { description = "File to review", required = true, completions = ["docs/a.md", "docs/b.md", "src/x.rs"] }
args.focus = { description = "What to look at" }
messages = [
  { role = "user", text = "Review {path} for {focus}. Answer as {{\"ok\": bool}}." },
  { role = "user", resource = "file://{path}" },
  { role = "assistant", text = "Reading it now." },
]

[prompts.hello]
messages = [{ role = "user", text = "Hello" }]
"#,
    );
    f
}

#[test]
fn prompts_are_listed_with_their_arguments() {
    let f = fixture();
    let mut s = f.serve();
    let init = s.initialize("2025-11-25");
    let caps = &init["capabilities"];
    assert!(caps.get("prompts").is_some(), "{caps}");
    assert!(caps.get("completions").is_some(), "{caps}");
    let list = s.ok("prompts/list", json!({}));
    assert_eq!(
        list["prompts"],
        json!([
            {
                "name": "review",
                "title": "Review",
                "description": "Review one file",
                "arguments": [
                    {"name": "path", "description": "File to review", "required": true},
                    {"name": "focus", "description": "What to look at", "required": false}
                ]
            },
            {"name": "hello"}
        ])
    );
}

/// What `file://{path}` needs as `path` to name `p`: the path itself on Unix, `/C:/…` on Windows.
fn uri_path(p: &std::path::Path) -> String {
    let uri = crate::support::file_uri(p);
    uri.strip_prefix("file://").expect("a file URI").to_owned()
}

#[test]
fn a_prompt_embeds_a_file_read_through_the_server() {
    let f = fixture();
    let mut s = f.serve().started();
    let path = uri_path(&f.path("docs/a b.md"));
    let r = s.ok(
        "prompts/get",
        json!({"name": "review", "arguments": {"path": path, "focus": "naming"}}),
    );
    assert_eq!(r["description"], "Review one file");
    let messages = r["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(
        messages[0]["content"],
        json!({"type": "text", "text": format!("Review {path} for naming. Answer as {{\"ok\": bool}}.")})
    );
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(messages[1]["content"]["type"], "resource");
    let res = &messages[1]["content"]["resource"];
    assert_eq!(res["uri"], f.uri("docs/a%20b.md"));
    assert_eq!(res["text"], "# A\nsome text\n");
    assert_eq!(res["mimeType"], "text/markdown");
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"]["text"], "Reading it now.");
}

#[test]
fn a_prompt_cannot_embed_a_hidden_or_outside_file() {
    let f = fixture();
    let mut s = f.serve().started();
    for rel in [
        "docs/.secret",
        "outside.txt",
        "docs/../outside.txt",
        "docs/missing.md",
    ] {
        let path = format!("{}/{rel}", uri_path(&f.root()));
        let e = s.err(
            "prompts/get",
            json!({"name": "review", "arguments": {"path": path}}),
        );
        assert_eq!(e["code"], -32602, "{rel}: {e}");
        let text = e.to_string();
        assert!(text.contains("resource not found"), "{rel}: {text}");
        assert!(
            !text.contains("SECRET") && !text.contains("NOT SERVED"),
            "{rel}: {text}"
        );
    }
    let e = s.err(
        "prompts/get",
        json!({"name": "review", "arguments": {"path": "/etc/passwd"}}),
    );
    assert_eq!(e["code"], -32602, "{e}");
    assert!(!e.to_string().contains("root:"), "{e}");
}

#[test]
fn missing_arguments_and_unknown_prompts_are_invalid_params() {
    let f = fixture();
    let mut s = f.serve().started();
    let e = s.err("prompts/get", json!({"name": "review", "arguments": {}}));
    assert_eq!(e["code"], -32602);
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("missing required argument `path`")),
        "{e}"
    );
    let e = s.err("prompts/get", json!({"name": "nope"}));
    assert_eq!(e["code"], -32602);
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown prompt `nope`")),
        "{e}"
    );
    let r = s.ok("prompts/get", json!({"name": "hello"}));
    assert_eq!(r["messages"][0]["content"]["text"], "Hello");
}

#[test]
fn prompt_arguments_complete_from_their_declared_values() {
    let f = fixture();
    let mut s = f.serve().started();
    let r = s.ok(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "path", "value": "docs/"}}),
    );
    assert_eq!(r["completion"]["values"], json!(["docs/a.md", "docs/b.md"]));
    assert_eq!(r["completion"]["total"], 2);
    let r = s.ok(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "focus", "value": ""}}),
    );
    assert_eq!(r["completion"]["values"], json!([]));
    let e = s.err(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}}),
    );
    assert_eq!(e["code"], -32602);
}

#[test]
fn completions_are_advertised_for_prompt_arguments_alone() {
    let f = Fixture::new();
    f.manifest(
        r#"
[server]
resource_tools = false

[prompts.p]
args.lang = { completions = ["rust", "ruby"] }
messages = [{ role = "user", text = "Use {lang}" }]
"#,
    );
    let mut s = f.serve();
    let init = s.initialize("2025-11-25");
    assert!(init["capabilities"].get("completions").is_some(), "{init}");
    assert!(init["capabilities"].get("tools").is_none(), "{init}");
    let r = s.ok(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "lang", "value": "ru"}}),
    );
    assert_eq!(r["completion"]["values"], json!(["ruby", "rust"]));
}

#[test]
fn a_placeholder_naming_no_argument_is_a_manifest_error() {
    let f = Fixture::new();
    f.write(
        "bad.toml",
        "[prompts.p]\nargs.path = {}\nmessages = [{ role = \"user\", resource = \"file://{pth}\" }]\n",
    );
    let out = f.run(&["check", "bad.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = crate::support::stderr(&out);
    assert!(
        err.starts_with(
            "bad.toml:3:41: prompt `p`: `{pth}` names no declared argument, did you mean `{path}`?"
        ),
        "{err}"
    );
}

/// A prompt with defaults, optional arguments, a `file` embed and `complete_from`.
fn usable() -> Fixture {
    let f = Fixture::new();
    f.write("src/lib.rs", "pub fn x() {}\n");
    f.write("src/main.rs", "fn main() {}\n");
    f.write("src/.env", "SECRET=1\n");
    f.write("src/pic.png", b"\x89PNG\r\n\x1a\n\0\0".as_slice());
    f.write("outside.txt", "NOT SERVED\n");
    crate::support::symlink(f.path("outside.txt"), f.path("src/out.rs"));
    f.manifest(
        r#"
[files.src]
root = "src"

[prompts.review]
description = "Review one file"
args.path = { description = "File to review", required = true, complete_from = "src" }
args.focus = { description = "What to look at" }
args.tone = { description = "How to say it", default = "friendly" }
messages = [
  { role = "user", text = "Review {path} for {focus}. Be {tone}." },
  { role = "user", text = "Focus: \"{focus}\" ({focus}) then {focus} done" },
  { role = "user", file = { source = "src", path = "{path}" } },
]
"#,
    );
    f
}

#[test]
fn defaults_fill_and_missing_optionals_leave_no_hole() {
    let f = usable();
    let mut s = f.serve().started();
    let list = s.ok("prompts/list", json!({}));
    assert_eq!(
        list["prompts"][0]["arguments"][2],
        json!({"name": "tone", "description": "How to say it (default: friendly)", "required": false})
    );
    let r = s.ok(
        "prompts/get",
        json!({"name": "review", "arguments": {"path": "lib.rs"}}),
    );
    let m = r["messages"].as_array().expect("test value");
    assert_eq!(m[0]["content"]["text"], "Review lib.rs for. Be friendly.");
    assert_eq!(m[1]["content"]["text"], "Focus: then done");
    // An empty value is not given (client forms send "" for blank fields).
    let r = s.ok(
        "prompts/get",
        json!({"name": "review", "arguments": {"path": "lib.rs", "focus": "", "tone": ""}}),
    );
    assert_eq!(
        r["messages"][0]["content"]["text"],
        "Review lib.rs for. Be friendly."
    );
    let r = s.ok(
        "prompts/get",
        json!({"name": "review", "arguments": {"path": "lib.rs", "focus": "names", "tone": "blunt"}}),
    );
    let m = r["messages"].as_array().expect("test value");
    assert_eq!(
        m[0]["content"]["text"],
        "Review lib.rs for names. Be blunt."
    );
    assert_eq!(
        m[1]["content"]["text"],
        "Focus: \"names\" (names) then names done"
    );
}

#[test]
fn a_file_message_embeds_a_path_relative_to_the_source() {
    let f = usable();
    let mut s = f.serve().started();
    for given in ["lib.rs", "./lib.rs"] {
        let r = s.ok(
            "prompts/get",
            json!({"name": "review", "arguments": {"path": given}}),
        );
        let res = &r["messages"][2]["content"]["resource"];
        assert_eq!(res["uri"], f.uri("src/lib.rs"), "{given}");
        assert_eq!(res["text"], "pub fn x() {}\n");
    }
    let r = s.ok(
        "prompts/get",
        json!({"name": "review", "arguments": {"path": "pic.png"}}),
    );
    assert!(
        r["messages"][2]["content"]["resource"]["blob"].is_string(),
        "{r}"
    );
    for bad in [
        ".env",
        "../outside.txt",
        "out.rs",
        "/etc/passwd",
        "missing.rs",
        "a/../lib.rs",
    ] {
        let e = s.err(
            "prompts/get",
            json!({"name": "review", "arguments": {"path": bad}}),
        );
        assert_eq!(e["code"], -32602, "{bad}: {e}");
        let text = e.to_string();
        assert!(text.contains("not found"), "{bad}: {text}");
        assert!(
            !text.contains("SECRET") && !text.contains("NOT SERVED") && !text.contains("root:"),
            "{bad}: {text}"
        );
    }
}

#[test]
fn complete_from_completes_with_the_source_paths() {
    let f = usable();
    let mut s = f.serve().started();
    let r = s.ok(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "path", "value": "m"}}),
    );
    assert_eq!(r["completion"]["values"], json!(["main.rs"]));
    let r = s.ok(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "path", "value": ""}}),
    );
    assert_eq!(
        r["completion"]["values"],
        json!(["lib.rs", "main.rs", "pic.png"])
    );
}

#[test]
fn file_and_complete_from_must_name_a_files_source() {
    let f = Fixture::new();
    f.write("src/a.rs", "x");
    let errs = f.diagnose(
        r#"[files.src]
root = "src"

[prompts.p]
args.path = { complete_from = "sources" }
messages = [{ role = "user", file = { source = "srcs", path = "{path}" } }]
"#,
    );
    assert!(
        errs.iter().any(|e| e.contains("5:31")
            && e.contains("no [files] source `sources`; the sources are: `src`")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("6:48") && e.contains("no [files] source `srcs`")),
        "{errs:?}"
    );
    let errs = f.diagnose(
        "[files.s]\nroot = \"src\"\n\n[prompts.p]\nargs.path = {}\nmessages = [{ role = \"user\", file = { source = \"s\", path = \"{pth}\" } }]\n",
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("`{pth}` names no declared argument")),
        "{errs:?}"
    );
}

#[test]
fn the_prompt_verb_renders_as_a_client_would() {
    let f = usable();
    let out = f.run(&["prompt", "review", "path=lib.rs", "focus=names"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::support::stderr(&out)
    );
    assert_eq!(
        crate::support::stdout(&out),
        format!(
            "[user]\nReview lib.rs for names. Be friendly.\n\n[user]\nFocus: \"names\" (names) then names done\n\n[user] resource {} (text/x-rust)\npub fn x() {{}}\n",
            f.uri("src/lib.rs")
        )
    );
    let out = f.run(&[
        "prompt",
        "review",
        "path=lib.rs",
        "--json",
        "--manifest",
        "mcp-server.toml",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value =
        serde_json::from_str(&crate::support::stdout(&out)).expect("test value");
    assert_eq!(v["description"], "Review one file");
    assert_eq!(
        v["messages"][2]["content"]["resource"]["text"],
        "pub fn x() {}\n"
    );
    for (args, reason) in [
        (vec!["prompt", "review"], "missing required argument `path`"),
        (
            vec!["prompt", "review", "path=lib.rs", "pth=x"],
            "unknown argument `pth`",
        ),
        (vec!["prompt", "review", "path"], "`path` is not NAME=VALUE"),
        (vec!["prompt", "review", "path=../outside.txt"], "not found"),
        (
            vec!["prompt", "nope"],
            "unknown prompt `nope`; the prompts are: review",
        ),
    ] {
        let out = f.run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = crate::support::stderr(&out);
        assert!(err.contains(reason), "{args:?}: {err}");
        assert!(crate::support::stdout(&out).is_empty(), "{args:?}");
    }
}
