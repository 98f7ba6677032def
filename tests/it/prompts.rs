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

#[test]
fn a_prompt_embeds_a_file_read_through_the_server() {
    let f = fixture();
    let mut s = f.serve().started();
    let path = f.path("docs/a b.md").display().to_string();
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
        let path = format!("{}/{rel}", f.root().display());
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
