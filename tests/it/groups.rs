//! `[groups.NAME]` and `[server] expose`: a session opened on a group (`serve --group`) sees
//! exactly its subset — lists, reads, calls, completion, subscriptions, in both eras — and
//! `check` refuses a pattern that matches nothing.

use serde_json::{Value, json};

use crate::support::{Fixture, Server, list_all, stderr};

const MANIFEST: &str = r#"
[files.docs]
root = "docs"

[templates.note]
uri = "note://{topic}"
file = "notes/{topic}.md"

[tools.hidden]
command = ["true"]

[prompts.review]
args.path = { completions = ["a", "b"] }
messages = [{ role = "user", text = "Review {path}" }]

[prompts.secret_prompt]
messages = [{ role = "user", text = "hidden" }]

[groups.public]
tools = ["list_resources", "read_resource", "search_files", "no*"]
resources = ["file://*/docs/public/*", "note://*"]
prompts = ["review"]
exclude = ["file://*/docs/public/drafts/*"]
"#;

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("docs/public/a.md", "needle in public\n");
    f.write("docs/public/drafts/d.md", "needle in a draft\n");
    f.write("docs/secret/s.md", "needle in secret\n");
    f.write("notes/x.md", "a note\n");
    f.manifest(MANIFEST);
    f
}

fn names(items: &[Value], key: &str) -> Vec<String> {
    let mut out: Vec<String> = items
        .iter()
        .filter_map(|i| i[key].as_str().map(str::to_owned))
        .collect();
    out.sort();
    out
}

fn group(f: &Fixture, name: &str) -> Server {
    Server::in_process_group(&f.path("mcp-server.toml"), Some(name)).started()
}

#[test]
fn a_group_session_lists_reads_and_calls_only_its_subset() {
    let f = fixture();
    let mut s = group(&f, "public");

    let (tools, _) = list_all(&mut s, "tools/list", "tools");
    assert_eq!(
        names(&tools, "name"),
        ["list_resources", "note", "read_resource", "search_files"],
        "the template tool `note` matches `no*`"
    );
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(names(&resources, "uri"), [f.uri("docs/public/a.md")]);
    let (templates, _) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    assert_eq!(names(&templates, "uriTemplate"), ["note://{topic}"]);
    let (prompts, _) = list_all(&mut s, "prompts/list", "prompts");
    assert_eq!(names(&prompts, "name"), ["review"]);

    // Reads: a URI outside the group is not found, exactly like a missing one.
    let secret = f.uri("docs/secret/s.md");
    let missing = f.uri("docs/secret/none.md");
    let e = s.err("resources/read", json!({"uri": secret}));
    let m = s.err("resources/read", json!({"uri": missing}));
    assert_eq!(e["code"], m["code"], "{e} {m}");
    assert_eq!(e["code"], -32002);
    let draft = f.uri("docs/public/drafts/d.md");
    assert_eq!(
        s.err("resources/read", json!({"uri": draft}))["code"],
        -32002
    );
    let ok = s.ok("resources/read", json!({"uri": f.uri("docs/public/a.md")}));
    assert_eq!(ok["contents"][0]["text"], "needle in public\n");

    // Calls: a tool outside the group is an unknown tool; the resource tools and search keep
    // to the group's resources.
    let e = s.err("tools/call", json!({"name": "hidden", "arguments": {}}));
    assert_eq!(e["code"], -32602, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown tool `hidden`"),
        "{e}"
    );
    let read = s.ok(
        "tools/call",
        json!({"name": "read_resource", "arguments": {"uri": secret}}),
    );
    assert_eq!(read["isError"], true, "{read}");
    let listed = s.ok(
        "tools/call",
        json!({"name": "list_resources", "arguments": {}}),
    );
    let text = listed.to_string();
    assert!(text.contains("public/a.md"), "{text}");
    assert!(
        !text.contains("secret") && !text.contains("drafts"),
        "{text}"
    );
    let found = s.ok(
        "tools/call",
        json!({"name": "search_files", "arguments": {"pattern": "needle"}}),
    );
    let matches = found["structuredContent"]["matches"]
        .as_array()
        .expect("matches")
        .clone();
    assert_eq!(names(&matches, "path"), ["public/a.md"], "{found}");

    // Prompts and completion.
    assert_eq!(
        s.err("prompts/get", json!({"name": "secret_prompt"}))["code"],
        -32602
    );
    let c = s.call(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "secret_prompt"},
               "argument": {"name": "x", "value": ""}}),
    );
    assert!(c.get("error").is_some(), "{c}");
    let c = s.ok(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "review"},
               "argument": {"name": "path", "value": ""}}),
    );
    assert_eq!(c["completion"]["values"], json!(["a", "b"]));

    // Subscriptions: only to what the group shows.
    assert_eq!(
        s.err("resources/subscribe", json!({"uri": secret}))["code"],
        -32002
    );
    s.ok(
        "resources/subscribe",
        json!({"uri": f.uri("docs/public/a.md")}),
    );
}

#[test]
fn the_stateless_era_sees_the_same_subset() {
    let f = fixture();
    let mut s = Server::in_process_group(&f.path("mcp-server.toml"), Some("public"));
    let r = s.modern("tools/list", json!({}));
    assert_eq!(
        names(r["result"]["tools"].as_array().expect("tools"), "name"),
        ["list_resources", "note", "read_resource", "search_files"]
    );
    let r = s.modern("resources/read", json!({"uri": f.uri("docs/secret/s.md")}));
    assert_eq!(r["error"]["code"], -32602, "not found in 2026-07-28: {r}");
    let r = s.modern(
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": [f.uri("docs/secret/s.md")]}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[test]
fn expose_filters_the_default_endpoint() {
    let f = fixture();
    f.manifest(&MANIFEST.replace(
        "[groups.public]",
        "[server]\nexpose = { exclude = [\"file://*/docs/secret/*\", \"secret_*\", \"hidden\"] }\n\n[groups.public]",
    ));
    let mut s = f.serve().started();
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let uris = names(&resources, "uri");
    assert!(uris.contains(&f.uri("docs/public/a.md")), "{uris:?}");
    assert!(!uris.contains(&f.uri("docs/secret/s.md")), "{uris:?}");
    let (prompts, _) = list_all(&mut s, "prompts/list", "prompts");
    assert_eq!(names(&prompts, "name"), ["review"]);
    let (tools, _) = list_all(&mut s, "tools/list", "tools");
    assert!(!names(&tools, "name").contains(&"hidden".to_owned()));
    assert!(names(&tools, "name").contains(&"note".to_owned()));
    assert!(names(&tools, "name").contains(&"search_files".to_owned()));
}

#[test]
fn patterns_that_match_nothing_are_errors_and_many_tools_a_warning() {
    let f = fixture();
    // Skills and views are sources too: the groups are still checked with them.
    f.write(
        "skills/lint/SKILL.md",
        "---\nname: lint\ndescription: Lints the code\n---\nRun the linter.\n",
    );
    let lines = f.check_lines(
        r#"
[files.docs]
root = "docs"

[skills.team]
root = "skills"

[tools.rows]
command = ["printf", "[]"]
output = "json"
view = "table"

[groups.g]
tools = ["search_files", "serach_*"]
resources = ["git://nothing/*"]
prompts = ["none"]
"#,
    );
    let text = lines.join("\n");
    assert!(
        text.contains(
            "bad.toml:14:26: [groups.g] `tools`: `serach_*` matches no tool; the tools are:"
        ),
        "{text}"
    );
    assert!(
        text.contains("bad.toml:15:14: [groups.g] `resources`: `git://nothing/*` matches no resource or template"),
        "{text}"
    );
    assert!(
        text.contains(
            "bad.toml:16:12: [groups.g] `prompts`: `none` matches no prompt; there are no prompts"
        ),
        "{text}"
    );
    assert_eq!(
        f.diagnose("[groups.server-card]\ntools = []\n"),
        [
            "bad.toml:1:9: `[groups.server-card]`: that name is reserved (`/mcp/server-card` is the server card); choose another"
        ]
    );
    let mut many = String::new();
    for i in 0..41 {
        many.push_str(&format!("[tools.t{i}]\ncommand = [\"true\"]\n"));
    }
    // 41 tools and the two resource tools.
    let lines = f.check_lines(&many);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("warning: clients of the default endpoint see 43 tools")),
        "{lines:?}"
    );
    let lines = f.check_lines(&format!(
        "[server]\nexpose = {{ tools = [\"t1*\"] }}\n{many}"
    ));
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("clients of the default endpoint see")),
        "{lines:?}"
    );
}

#[test]
fn serving_an_unknown_group_fails_naming_the_groups() {
    // `serve` and `card` say it in the same words (`register` too: tests/it/setup.rs).
    let f = fixture();
    for args in [
        &["serve", "--group", "nope", "mcp-server.toml"][..],
        &["card", "--group", "nope", "mcp-server.toml"],
    ] {
        let out = f.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("no group `nope` in mcp-server.toml; its groups are: public"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

/// `check` prints, per endpoint, how many tools `tools/list` gives there and the answer's size
/// in bytes, and both are what a session on that endpoint gets.
#[test]
fn check_prints_tools_list_per_endpoint_as_sessions_get_it() {
    let f = fixture();
    let out = f.run(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = crate::support::stdout(&out);
    assert!(text.contains("tools/list per endpoint"), "{text}");
    for (endpoint, group) in [("default", None), ("public", Some("public"))] {
        let mut s = Server::in_process_group(&f.path("mcp-server.toml"), group).started();
        let list = s.ok("tools/list", json!({}));
        let tools = list["tools"].as_array().expect("tools").len();
        let bytes = serde_json::to_string(&list).expect("JSON").len();
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{endpoint} ")))
            .unwrap_or_else(|| panic!("no row for {endpoint}: {text}"));
        let figures: Vec<usize> = row
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        assert_eq!(figures, [tools, bytes], "{endpoint}: {row}\n{list}");
    }
}

/// A view goes with its tool: a group showing a tool lists and reads its chart view (and the
/// table view every endpoint shares); a group without the tool does not see its chart.
#[test]
fn a_group_sees_the_views_of_its_tools() {
    let f = Fixture::new();
    f.manifest(
        r#"
[tools.people]
command = ["printf", "[]"]
output = "json"
view = { chart = "bar", x = "name", y = ["age"] }

[tools.rows]
command = ["printf", "[]"]
output = "json"
view = "table"

[groups.with_chart]
tools = ["people"]
resources = []

[groups.without]
tools = ["rows"]
resources = []
"#,
    );
    let chart = "ui://mcp-manifest/chart/people";
    let table = "ui://mcp-manifest/table";
    let mut s = group(&f, "with_chart");
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(names(&resources, "uri"), [chart, table]);
    let r = s.ok("resources/read", json!({"uri": chart}));
    assert!(r["contents"][0]["text"].is_string(), "{r}");
    let mut s = group(&f, "without");
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(names(&resources, "uri"), [table]);
    let e = s.err("resources/read", json!({"uri": chart}));
    assert!(e["code"].is_i64(), "{e}");
}

/// A manifest for the notification tests: the group `pub` sees `docs/public/` and the tools
/// named `inside_*`; `{extra}` is where an edit adds tools.
const NOTIFY: &str = r#"
[files.docs]
root = "docs"

[tools.inside_one]
command = ["true"]

[tools.outside_one]
command = ["true"]
{extra}
[groups.pub]
resources = ["file://*/docs/public/*"]
tools = ["inside_*"]
prompts = []
{group_extra}
"#;

fn notify_manifest(extra: &str, group_extra: &str) -> String {
    NOTIFY
        .replace("{extra}", extra)
        .replace("{group_extra}", group_extra)
}

fn notify_fixture() -> Fixture {
    let f = Fixture::new();
    f.write("docs/public/a.md", "sentinel\n");
    f.write("docs/public/b.md", "b\n");
    f.write("docs/secret/s.md", "secret\n");
    f.manifest(&notify_manifest("", ""));
    f
}

fn is_list_changed(v: &Value) -> bool {
    v["method"]
        .as_str()
        .is_some_and(|m| m.starts_with("notifications/") && m.ends_with("/list_changed"))
}

fn is_updated(v: &Value, uri: &str) -> bool {
    v["method"] == "notifications/resources/updated" && v["params"]["uri"] == uri
}

/// Every change made before this call has been announced (or not) to `s`: the subscribed
/// sentinel `docs/public/a.md` is changed twice, each change waited for (the second is
/// announced in a later batch than anything changed before; one session's notifications
/// arrive in order). Fails if a `*/list_changed` or an update of `stray` arrived meanwhile.
fn settled(s: &mut Server, f: &Fixture, stray: Option<&str>) {
    let sentinel = f.uri("docs/public/a.md");
    for round in 0..2 {
        f.write("docs/public/a.md", format!("round {round}\n"));
        s.wait_for(|v| is_updated(v, &sentinel));
    }
    let unexpected: Vec<&Value> = s
        .pending()
        .iter()
        .filter(|v| is_list_changed(v) || stray.is_some_and(|u| is_updated(v, u)))
        .collect();
    assert!(unexpected.is_empty(), "unexpected {unexpected:?}");
}

/// A file added outside what the endpoint shows (in a folder that exists, and in a new folder)
/// says nothing to its session; one added inside says `resources/list_changed`.
fn hears_only_of_its_resources(mut s: Server, f: &Fixture) {
    s.ok(
        "resources/subscribe",
        json!({"uri": f.uri("docs/public/a.md")}),
    );
    f.write("docs/secret/new.md", "outside\n");
    f.write("docs/secret/deeper/x.md", "outside, in a new folder\n");
    std::fs::remove_file(f.path("docs/secret/s.md")).expect("remove");
    settled(&mut s, f, None);
    f.write("docs/public/new.md", "inside\n");
    s.wait_for(|v| v["method"] == "notifications/resources/list_changed");
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    assert!(
        names(&resources, "uri").contains(&f.uri("docs/public/new.md")),
        "{resources:?}"
    );
}

#[test]
fn a_group_session_hears_only_of_files_in_its_group() {
    let f = notify_fixture();
    hears_only_of_its_resources(group(&f, "pub"), &f);
}

#[test]
fn the_default_endpoint_under_expose_hears_only_of_exposed_files() {
    let f = notify_fixture();
    f.manifest(&notify_manifest(
        "\n[server]\nexpose = { exclude = [\"file://*/docs/secret/*\"] }\n",
        "",
    ));
    hears_only_of_its_resources(f.serve().started(), &f);
}

/// A reload that adds a tool outside the group says nothing to the group's session; one that
/// adds a tool inside says `tools/list_changed` (and nothing about resources or prompts).
#[test]
fn a_group_session_hears_only_of_tools_in_its_group() {
    let f = notify_fixture();
    let mut s = group(&f, "pub");
    s.ok(
        "resources/subscribe",
        json!({"uri": f.uri("docs/public/a.md")}),
    );
    f.manifest(&notify_manifest(
        "\n[tools.outside_two]\ncommand = [\"true\"]\n",
        "",
    ));
    settled(&mut s, &f, None);
    f.manifest(&notify_manifest(
        "\n[tools.outside_two]\ncommand = [\"true\"]\n\n[tools.inside_two]\ncommand = [\"true\"]\n",
        "",
    ));
    s.wait_for(|v| v["method"] == "notifications/tools/list_changed");
    settled(&mut s, &f, None);
    let (tools, _) = list_all(&mut s, "tools/list", "tools");
    assert_eq!(names(&tools, "name"), ["inside_one", "inside_two"]);
}

/// A subscribed file of the group is reported when it changes; once a reload takes it out of
/// the group, the session hears `resources/list_changed` (its group's patterns changed, not
/// the files) and nothing more about that file.
#[test]
fn a_group_session_hears_of_subscribed_files_only_while_they_are_in_its_group() {
    let f = notify_fixture();
    let mut s = group(&f, "pub");
    let b = f.uri("docs/public/b.md");
    s.ok(
        "resources/subscribe",
        json!({"uri": f.uri("docs/public/a.md")}),
    );
    s.ok("resources/subscribe", json!({"uri": b}));
    f.write("docs/public/b.md", "b, edited\n");
    s.wait_for(|v| is_updated(v, &b));
    f.manifest(&notify_manifest(
        "",
        "exclude = [\"file://*/docs/public/b.md\"]",
    ));
    s.wait_for(|v| v["method"] == "notifications/resources/list_changed");
    f.write("docs/public/b.md", "b, edited again\n");
    settled(&mut s, &f, Some(&b));
}

/// Over HTTP, `/mcp/NAME`: a handshake-era session's stream and a 2026-07-28 listen stream on
/// the group's endpoint hear of a file or a tool only when the group shows it.
#[test]
fn a_group_endpoint_over_http_notifies_only_what_the_group_shows() {
    use crate::http::{Legacy, Web, listen_at, next_notification};
    use std::sync::mpsc::Receiver;

    let f = notify_fixture();
    let web = Web::start(&f, &[]);
    let mut session = Legacy::start_at(&web, "/mcp/pub", &[]);
    let stream = session.notifications();
    let sentinel = f.uri("docs/public/a.md");
    session.ok("resources/subscribe", json!({"uri": sentinel}));
    let listening = listen_at(
        &web,
        "/mcp/pub",
        json!({"resourceSubscriptions": [sentinel], "resourcesListChanged": true,
               "toolsListChanged": true, "promptsListChanged": true}),
    );
    let streams: [&Receiver<Value>; 2] = [&stream, &listening];
    // As `settled`, for both streams: any `*/list_changed` before the sentinel's updates fails.
    let settled = || {
        for round in 0..2 {
            f.write("docs/public/a.md", format!("round {round}\n"));
            for rx in streams {
                let deadline = std::time::Instant::now() + crate::support::TIMEOUT;
                loop {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    let v = rx.recv_timeout(left).expect("the sentinel's update");
                    assert!(!is_list_changed(&v), "unexpected {v}");
                    if is_updated(&v, &sentinel) {
                        break;
                    }
                }
            }
        }
    };

    f.write("docs/secret/new.md", "outside\n");
    settled();
    f.write("docs/public/new.md", "inside\n");
    for rx in streams {
        next_notification(rx, "notifications/resources/list_changed");
    }

    f.manifest(&notify_manifest(
        "\n[tools.outside_two]\ncommand = [\"true\"]\n",
        "",
    ));
    settled();
    f.manifest(&notify_manifest(
        "\n[tools.outside_two]\ncommand = [\"true\"]\n\n[tools.inside_two]\ncommand = [\"true\"]\n",
        "",
    ));
    for rx in streams {
        next_notification(rx, "notifications/tools/list_changed");
    }
}
