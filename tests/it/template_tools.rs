//! `template_tools`: every resource template (user templates of each backend, named queries,
//! table templates, git commit / blob) as a typed tool; calls read exactly what
//! `resources/read` of the expanded URI reads; `vars` rules shared by reads and tools; `tool =
//! false` / `tool = "name"`; name clashes; `list_resources` templates; overlapping sources
//! listed once; `list` naming the tool of each template; `tools/list_changed` on edits.

use serde_json::{Value, json};

use crate::sqlite::make_db;
use crate::support::{Fixture, Server, list_all, stderr, stdout};

const MANIFEST: &str = r#"
[files.notes]
root = "notes"

[sqlite.shop]
path = "shop.db"
description = "The shop"

[sqlite.shop.queries.top_customers]
description = "Best customers by revenue"
sql = "SELECT name, SUM(total) AS revenue FROM orders JOIN customers USING (customer_id) GROUP BY name ORDER BY revenue DESC LIMIT :limit"
params.limit = { type = "integer", default = 10, minimum = 1, description = "How many customers" }

[sqlite.shop.queries.everyone]
sql = "SELECT name FROM customers ORDER BY name"

[git.repo]
path = "repo"

[templates.note]
uri = "notes://{topic}"
description = "A note by topic"
mime_type = "text/markdown"
file = "notes/{topic}.md"
vars.topic = { pattern = "^[a-z]+$", description = "The topic, lower-case letters" }

[templates.customer]
uri = "customer://{id}"
description = "One customer"
sqlite = "shop"
sql = "SELECT customer_id, name FROM customers WHERE customer_id = :id"
vars.id = { type = "integer", minimum = 1, description = "The customer's id" }

[templates.shout]
uri = "shout://{word}{?times}"
command = ["{helper}", "out", "{word}", "out", ":", "out", "{times}"]
vars.word = { enum = ["hi", "ho"] }
vars.times = { type = "integer", default = 2, maximum = 9 }
"#;

/// A name with characters a URI reserves or cannot hold raw, and its URI path segment. No `?`
/// on Windows: the git provider checks a blob's path with the platform's file-name rules
/// (`providers::platform::name_allowed`), which refuse it there.
#[cfg(not(windows))]
const ODD: (&str, &str) = ("odd #1?%41é.txt", "odd%20%231%3F%2541%C3%A9.txt");
#[cfg(windows)]
const ODD: (&str, &str) = ("odd #1;%41é.txt", "odd%20%231%3B%2541%C3%A9.txt");

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("notes/alpha.md", "# Alpha\n");
    f.write("notes/Upper.md", "# Upper\n");
    make_db(
        &f.path("shop.db"),
        r#"
        CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL);
        INSERT INTO customers VALUES (1, 'Ada'), (2, 'Bob'), (3, 'Cy');
        INSERT INTO orders VALUES (1, 1, 50), (2, 2, 500), (3, 3, 5), (4, 1, 20);
        "#,
    );
    // Committed without a work tree: names are git's, whatever the platform's file names allow.
    let repo = f.mkdir("repo");
    crate::support::git_commit_files(
        &repo,
        &[
            ("dir/f.txt", "version one\n"),
            (&format!("dir/{}", ODD.0), "odd\n"),
        ],
        "first",
    );
    crate::support::git_commit_files(&repo, &[("dir/f.txt", "version two\n")], "second");
    f.manifest(&MANIFEST.replace("{helper}", &crate::support::helper_path()));
    f
}

fn tools(s: &mut Server) -> Vec<Value> {
    list_all(s, "tools/list", "tools").0
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool `{name}` in {tools:?}"))
}

fn call(s: &mut Server, name: &str, args: Value) -> Value {
    s.ok("tools/call", json!({"name": name, "arguments": args}))
}

/// The text of a successful call's first content block.
fn call_text(s: &mut Server, name: &str, args: Value) -> (String, Value) {
    let r = call(s, name, args.clone());
    assert_eq!(r["isError"], false, "{name} {args}: {r}");
    (
        r["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("text content: {r}"))
            .to_owned(),
        r,
    )
}

/// The text `resources/read` gives for `uri`.
fn read_text(s: &mut Server, uri: &str) -> String {
    let r = s.ok("resources/read", json!({"uri": uri}));
    r["contents"][0]["text"]
        .as_str()
        .expect("text content")
        .to_owned()
}

/// A call that must fail: its error text.
fn call_error(s: &mut Server, name: &str, args: Value) -> String {
    let r = call(s, name, args.clone());
    assert_eq!(r["isError"], true, "{name} {args} should fail: {r}");
    r["content"][0]["text"].as_str().expect("text").to_owned()
}

#[test]
fn every_template_is_a_typed_tool_with_the_contracts_schema_and_annotations() {
    let f = fixture();
    let mut s = f.serve().started();
    let all = tools(&mut s);
    let names: Vec<&str> = all.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "list_resources",
            "read_resource",
            "search_files",
            "shop_table",
            "top_customers",
            "everyone",
            "repo_commit",
            "repo_file",
            "note",
            "customer",
            "shout"
        ]
    );
    let top = tool(&all, "top_customers");
    assert_eq!(
        top["inputSchema"],
        json!({
            "type": "object",
            "properties": {"limit": {"type": "integer", "description": "How many customers", "default": 10, "minimum": 1}},
            "additionalProperties": false
        })
    );
    assert_eq!(
        top["description"],
        "Best customers by revenue\n\nReads `sqlite://shop/queries/top_customers{?limit}`."
    );
    assert_eq!(
        top["outputSchema"]["required"],
        json!(["columns", "rows", "truncated"])
    );
    assert_eq!(
        tool(&all, "everyone")["inputSchema"]["properties"],
        json!({})
    );
    let table = tool(&all, "shop_table");
    assert_eq!(table["inputSchema"]["required"], json!(["table"]));
    assert!(table["outputSchema"].is_object());
    let note = tool(&all, "note");
    assert_eq!(
        note["inputSchema"]["properties"]["topic"],
        json!({"type": "string", "description": "The topic, lower-case letters", "pattern": "^[a-z]+$"})
    );
    assert_eq!(note["inputSchema"]["required"], json!(["topic"]));
    assert!(note.get("outputSchema").is_none());
    assert_eq!(
        tool(&all, "customer")["inputSchema"]["properties"]["id"]["type"],
        "integer"
    );
    let shout = tool(&all, "shout");
    // `{?times}` with a default is optional; `{word}` is required.
    assert_eq!(shout["inputSchema"]["required"], json!(["word"]));
    assert_eq!(
        shout["inputSchema"]["properties"]["word"]["enum"],
        json!(["hi", "ho"])
    );
    assert_eq!(
        tool(&all, "repo_file")["inputSchema"]["required"],
        json!(["rev", "path"])
    );
    for t in &all[2..] {
        let a = &t["annotations"];
        assert_eq!(a["readOnlyHint"], true, "{t}");
        assert_eq!(a["destructiveHint"], false, "{t}");
        assert_eq!(a["idempotentHint"], true, "{t}");
        let open = t["name"] == "shout";
        assert_eq!(a["openWorldHint"], open, "{t}");
    }
}

#[test]
fn calls_answer_the_same_bytes_as_resources_read() {
    let f = fixture();
    let mut s = f.serve().started();
    let cases = [
        (
            "top_customers",
            json!({"limit": 2}),
            "sqlite://shop/queries/top_customers?limit=2",
        ),
        (
            "top_customers",
            json!({}),
            "sqlite://shop/queries/top_customers",
        ),
        ("everyone", json!({}), "sqlite://shop/queries/everyone"),
        (
            "shop_table",
            json!({"table": "customers"}),
            "sqlite://shop/tables/customers",
        ),
        ("note", json!({"topic": "alpha"}), "notes://alpha"),
        ("customer", json!({"id": 2}), "customer://2"),
        ("shout", json!({"word": "hi"}), "shout://hi?times=2"),
        (
            "shout",
            json!({"word": "ho", "times": 3}),
            "shout://ho?times=3",
        ),
        (
            "repo_commit",
            json!({"rev": "HEAD~1"}),
            "git://repo/commit/HEAD~1",
        ),
        (
            "repo_file",
            json!({"rev": "HEAD~1", "path": "dir/f.txt"}),
            "git://repo/blob/HEAD~1/dir/f.txt",
        ),
    ];
    for (name, args, uri) in cases {
        let (text, r) = call_text(&mut s, name, args.clone());
        assert_eq!(text, read_text(&mut s, uri), "{name} {args} vs {uri}");
        let json_content = text.starts_with('{');
        if json_content {
            let parsed: Value = serde_json::from_str(&text).expect("JSON");
            assert_eq!(r["structuredContent"], parsed, "{name}");
        } else {
            assert!(r.get("structuredContent").is_none(), "{name}: {r}");
        }
    }
    let (rows, _) = call_text(&mut s, "top_customers", json!({"limit": 1}));
    let rows: Value = serde_json::from_str(&rows).expect("JSON");
    assert_eq!(rows["rows"], json!([{"name": "Bob", "revenue": 500.0}]));
    let (shouted, _) = call_text(&mut s, "shout", json!({"word": "hi"}));
    assert_eq!(shouted, "hi:2");
    let (old, _) = call_text(
        &mut s,
        "repo_file",
        json!({"rev": "HEAD~1", "path": "dir/f.txt"}),
    );
    assert_eq!(old, "version one\n");
    // Characters a URI reserves or cannot hold raw reach the same file.
    let (odd, _) = call_text(
        &mut s,
        "repo_file",
        json!({"rev": "HEAD", "path": format!("dir/{}", ODD.0)}),
    );
    assert_eq!(odd, "odd\n");
    assert_eq!(
        odd,
        read_text(&mut s, &format!("git://repo/blob/HEAD/dir/{}", ODD.1))
    );
}

#[test]
fn bad_arguments_fail_as_the_reads_fail_with_the_reason() {
    let f = fixture();
    let mut s = f.serve().started();
    // The tool and the read apply one rule with one wording.
    let e = call_error(&mut s, "top_customers", json!({"limit": 0}));
    assert!(
        e.contains("argument `limit` must be at least 1, got 0"),
        "{e}"
    );
    let r = s.err(
        "resources/read",
        json!({"uri": "sqlite://shop/queries/top_customers?limit=0"}),
    );
    assert_eq!(r["code"], -32602);
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("parameter `limit` must be at least 1, got 0"),
        "{r}"
    );
    let e = call_error(&mut s, "note", json!({"topic": "Upper"}));
    assert!(
        e.contains("argument `topic` must match the pattern `^[a-z]+$`, got \"Upper\""),
        "{e}"
    );
    // `vars` apply to reads too: the file exists, the variable's rule refuses it.
    let r = s.err("resources/read", json!({"uri": "notes://Upper"}));
    assert_eq!(r["code"], -32602);
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("variable `topic` must match the pattern `^[a-z]+$`, got \"Upper\""),
        "{r}"
    );
    let r = s.err("resources/read", json!({"uri": "customer://0"}));
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("variable `id` must be at least 1, got 0"),
        "{r}"
    );
    let r = s.err("resources/read", json!({"uri": "customer://two"}));
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("variable `id` must be an integer, got \"two\""),
        "{r}"
    );
    let r = s.err("resources/read", json!({"uri": "shout://hey"}));
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("variable `word` must be one of \"hi\", \"ho\", got \"hey\""),
        "{r}"
    );
    let e = call_error(&mut s, "shout", json!({"word": "hi", "times": 10}));
    assert!(
        e.contains("argument `times` must be at most 9, got 10"),
        "{e}"
    );
    let e = call_error(&mut s, "customer", json!({"id": "2"}));
    assert!(e.contains("argument `id` must be an integer"), "{e}");
    let e = call_error(&mut s, "note", json!({}));
    assert!(e.contains("missing required argument `topic`"), "{e}");
    let e = call_error(&mut s, "note", json!({"topic": "alpha", "extra": 1}));
    assert!(e.contains("unknown argument `extra`"), "{e}");
    // What the read refuses, the tool refuses with the read's reason.
    let e = call_error(&mut s, "note", json!({"topic": "missing"}));
    assert!(e.contains("resource not found: notes://missing"), "{e}");
    let e = call_error(&mut s, "shop_table", json!({"table": "nope"}));
    assert!(
        e.contains("resource not found: sqlite://shop/tables/nope"),
        "{e}"
    );
    let e = call_error(&mut s, "repo_commit", json!({"rev": "no-such-rev"}));
    assert!(e.contains("no-such-rev"), "{e}");
    // A value that would leave the template's segment is encoded, never a path.
    let e = call_error(&mut s, "repo_file", json!({"rev": "HEAD", "path": "../x"}));
    assert!(
        e.contains("reading `git://repo/blob/HEAD/../x` failed"),
        "{e}"
    );
    // Unknown tools stay a protocol error.
    let r = s.err("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(r["code"], -32602);
}

#[test]
fn list_resources_lists_templates_with_their_variables_and_tools() {
    let f = fixture();
    let mut s = f.serve().started();
    let mut templates = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let args = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = call(&mut s, "list_resources", args);
        let body = &r["structuredContent"];
        templates.extend(
            body["resourceTemplates"]
                .as_array()
                .expect("resourceTemplates")
                .clone(),
        );
        match body["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let (listed, _) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    let uris = |v: &[Value]| -> Vec<String> {
        v.iter()
            .map(|t| t["uriTemplate"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(uris(&templates), uris(&listed));
    let note = templates
        .iter()
        .find(|t| t["uriTemplate"] == "notes://{topic}")
        .expect("the note template");
    assert_eq!(
        note,
        &json!({
            "uriTemplate": "notes://{topic}",
            "name": "note",
            "description": "A note by topic",
            "mimeType": "text/markdown",
            "variables": [{"name": "topic", "description": "The topic, lower-case letters"}],
            "tool": "note"
        })
    );
    let top = templates
        .iter()
        .find(|t| t["tool"] == "top_customers")
        .expect("the query template");
    assert_eq!(
        top["variables"],
        json!([{"name": "limit", "description": "How many customers"}])
    );
    // The files source's template has no tool.
    let files = templates
        .iter()
        .find(|t| t["uriTemplate"].as_str().unwrap().ends_with("/{+path}"))
        .expect("the files template");
    assert!(files.get("tool").is_none());
}

#[test]
fn tool_false_renames_and_template_tools_off() {
    let f = fixture();
    let text = MANIFEST
        .replace(
            "[templates.customer]\n",
            "[templates.customer]\ntool = false\n",
        )
        .replace(
            "[sqlite.shop.queries.everyone]\n",
            "[sqlite.shop.queries.everyone]\ntool = \"all_customers\"\n",
        )
        .replace("[git.repo]\n", "[git.repo]\ntool = \"history\"\n")
        .replace(
            "description = \"The shop\"\n",
            "description = \"The shop\"\ntool = false\n",
        )
        .replace("{helper}", &crate::support::helper_path());
    f.manifest(&text);
    let mut s = f.serve().started();
    let all = tools(&mut s);
    let names: Vec<&str> = all.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "list_resources",
            "read_resource",
            "search_files",
            "top_customers",
            "all_customers",
            "history_commit",
            "history_file",
            "note",
            "shout"
        ]
    );
    let (text_out, _) = call_text(&mut s, "all_customers", json!({}));
    assert!(text_out.contains("Ada"), "{text_out}");
    // The template without a tool is still a template.
    assert!(read_text(&mut s, "customer://1").contains("Ada"));
    drop(s);

    f.manifest(&format!(
        "[server]\ntemplate_tools = false\n{}",
        MANIFEST.replace("{helper}", &crate::support::helper_path())
    ));
    let mut s = f.serve().started();
    let names: Vec<String> = tools(&mut s)
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(names, ["list_resources", "read_resource", "search_files"]);
}

#[test]
fn name_clashes_are_manifest_errors_naming_both_entries() {
    let f = fixture();
    // The other entry is named by its place in the same file, as the diagnostic's own prefix.
    let prefix = format!("{}{}", f.root().display(), std::path::MAIN_SEPARATOR);
    let diagnose = |text: &str| -> Vec<String> {
        f.diagnose(text)
            .into_iter()
            .map(|l| l.replace(&prefix, ""))
            .collect()
    };
    let lines = diagnose(
        "[tools.note]\ncommand = [\"true\"]\n\n[templates.note]\nuri = \"n://{x}\"\nfile = \"{x}\"\n",
    );
    assert_eq!(
        lines,
        [
            "bad.toml:4:12: tool `note` of [templates.note] has the same name as [tools.note] (bad.toml:1:8); set `tool = \"…\"` (or `tool = false`) on one of them"
        ]
    );
    let lines = diagnose(
        "[sqlite.shop]\npath = \"shop.db\"\n\n[sqlite.shop.queries.list_resources]\nsql = \"SELECT 1\"\n",
    );
    assert_eq!(
        lines,
        [
            "bad.toml:4:22: tool `list_resources` of [sqlite.shop.queries.list_resources] has the same name as the built-in resource tool; set `tool = \"…\"` on [sqlite.shop.queries.list_resources] (or `resource_tools = false` in [server])"
        ]
    );
    // Two template tools: a table tool and a template named like it.
    let lines = diagnose(
        "[sqlite.shop]\npath = \"shop.db\"\n\n[templates.shop_table]\nuri = \"n://{x}\"\nfile = \"{x}\"\n",
    );
    assert_eq!(
        lines,
        [
            "bad.toml:4:12: tool `shop_table` of [templates.shop_table] has the same name as [sqlite.shop] (bad.toml:1:9); set `tool = \"…\"` (or `tool = false`) on one of them"
        ]
    );
    // Renaming resolves it; `tool = false` too; off, nothing clashes.
    for fix in ["tool = \"shop_rows\"", "tool = false"] {
        f.manifest(&format!(
            "[sqlite.shop]\npath = \"shop.db\"\n{fix}\n\n[templates.shop_table]\nuri = \"n://{{x}}\"\nfile = \"{{x}}\"\n"
        ));
        let out = f.run(&["check"]);
        assert!(out.status.success(), "{fix}: {}", stderr(&out));
    }
    let lines = diagnose("[templates.t]\nuri = \"n://{x}\"\nfile = \"{x}\"\ntool = \"bad name\"\n");
    assert_eq!(
        lines,
        [
            "bad.toml:4:8: [templates.t] `tool = \"bad name\"` is not a tool name: use 1 to 128 letters, digits, `_`, `-` or `.`"
        ]
    );
    let lines = diagnose(
        "[templates.t]\nuri = \"n://{x}\"\nfile = \"{x}\"\nvars.y = { pattern = \"^a\" }\nvars.x = { type = \"array\" }\n",
    );
    assert_eq!(
        lines,
        [
            "bad.toml:4:6: [templates.t] `vars.y` names no variable of `n://{x}`; its variables are: x",
            "bad.toml:5:6: [templates.t] variable `x` is an array; a template variable is a string, integer, number or boolean (an exploded `{x*}` checks each item against these rules)",
        ]
    );
}

#[test]
fn an_edit_that_changes_the_templates_changes_the_tools() {
    let f = fixture();
    let mut s = f.serve().started();
    // Subscribed to a file, so the watcher is known to run before the edit.
    s.ok(
        "resources/subscribe",
        json!({"uri": f.uri("notes/alpha.md")}),
    );
    f.manifest(&format!(
        "{}\n[templates.memo]\nuri = \"memo://{{topic}}\"\nfile = \"notes/{{topic}}.md\"\n",
        MANIFEST.replace("{helper}", &crate::support::helper_path())
    ));
    s.wait_for(|v| v["method"] == "notifications/tools/list_changed");
    let all = tools(&mut s);
    assert_eq!(all.last().expect("tools")["name"], "memo");
    let (text, _) = call_text(&mut s, "memo", json!({"topic": "alpha"}));
    assert_eq!(text, "# Alpha\n");
}

#[test]
fn overlapping_sources_list_each_uri_once() {
    let f = Fixture::new();
    f.write("docs/a.md", "a");
    f.write("docs/sub/b.md", "b");
    f.write("docs/sub/c.md", "c");
    f.manifest(
        "[files.all]\nroot = \"docs\"\ndescription = \"all\"\n\n[files.sub]\nroot = \"docs/sub\"\ndescription = \"sub\"\n",
    );
    let mut s = f.serve().started();
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    let uris: Vec<&str> = all.iter().filter_map(|r| r["uri"].as_str()).collect();
    assert_eq!(
        uris,
        [
            f.uri("docs/a.md"),
            f.uri("docs/sub/b.md"),
            f.uri("docs/sub/c.md")
        ]
    );
    // The first source in manifest order wins.
    assert!(all.iter().all(|r| r["description"] == "all"), "{all:?}");
    let tool = call(&mut s, "list_resources", json!({}));
    assert_eq!(
        tool["structuredContent"]["resources"]
            .as_array()
            .expect("resources")
            .len(),
        3
    );
    let out = f.run(&["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("resources (3)"), "{}", stdout(&out));
    assert!(
        stderr(&out)
            .contains("2 URI(s) of the source at line 5 are also served by the source at line 1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn list_names_the_tool_of_each_template() {
    let f = fixture();
    let out = f.run(&["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("  notes://{topic}  (note)  tool note\n"),
        "{text}"
    );
    assert!(
        text.contains("  sqlite://shop/tables/{table}  (shop/tables)  tool shop_table\n"),
        "{text}"
    );
    assert!(
        text.contains("  git://repo/blob/{rev}/{+path}  (repo/blob)  tool repo_file\n"),
        "{text}"
    );
    let out = f.run(&["list", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let commit = v["resourceTemplates"]
        .as_array()
        .expect("templates")
        .iter()
        .find(|t| t["uriTemplate"] == "git://repo/commit/{rev}")
        .expect("commit template");
    assert_eq!(commit["tool"], "repo_commit");
}

#[test]
fn a_cancelled_template_tool_call_kills_the_templates_process() {
    use crate::tools::{alive, read_pid, wait_gone};
    let f = Fixture::new();
    f.manifest(
        &format!(
            "[templates.slow]\nuri = \"slow://{{n}}\"\ncommand = [\"{}\", \"pid\", \"pid.txt\", \"sleep\", \"100000\", \"out\", \"{{n}}\"]\ntimeout = \"60s\"\n",
            crate::support::helper_path()
        ),
    );
    let mut s = f.serve().started();
    s.send(&json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "slow", "arguments": {"n": "x"}}}));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_to_string(f.path("pid.txt"))
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = read_pid(&f, "pid.txt");
    assert!(alive(pid));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c"}}));
    wait_gone(pid, "the cancelled tool's template process");
    assert_eq!(s.ok("ping", json!({})), json!({}));
}
