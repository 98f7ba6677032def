//! MCP Apps views (`view = …`): the `io.modelcontextprotocol/ui` extension declared in both
//! eras, each tool's `_meta.ui.resourceUri` (and the flat `ui/resourceUri`), the `ui://`
//! resources listed and read (`text/html;profile=mcp-app`, `_meta.ui.csp`), results that keep
//! their text for hosts without views, `list`, and `check`'s errors. The views themselves run in
//! Chromium: scripts/views-browser.sh.

use serde_json::{Value, json};

use crate::sqlite::make_db;
use crate::support::{Fixture, Server, list_all, stdout};

const UI: &str = "io.modelcontextprotocol/ui";
const MIME: &str = "text/html;profile=mcp-app";
const TABLE: &str = "ui://mcp-manifest/table";

const MANIFEST: &str = r#"
[sqlite.shop]
path = "shop.db"
view = "table"

[sqlite.shop.queries.monthly]
sql = "SELECT month, revenue FROM sales ORDER BY month"
view = { chart = "line", x = "month", y = ["revenue"] }

[sqlite.shop.queries.plain]
sql = "SELECT month FROM sales"

[templates.by_month]
uri = "sales://{month}"
sqlite = "shop"
sql = "SELECT month, revenue FROM sales WHERE month = :month"
view = { chart = "bar", x = "month", y = ["revenue"] }

[templates.json_file]
uri = "data://{name}"
file = "data/{name}.json"
mime_type = "application/json"
view = "table"

[tools.people]
command = ["{helper}", "out", '[{"name":"Ada","langs":3},{"name":"<b>Grace</b>","langs":null}]']
output = "json"
view = "table"

[tools.echo]
command = ["{helper}", "out", "hi"]
"#;

fn fixture() -> Fixture {
    let f = Fixture::new();
    make_db(
        &f.path("shop.db"),
        "CREATE TABLE sales (month TEXT, revenue REAL);
         INSERT INTO sales VALUES ('2026-01', 10.5), ('2026-02', 12), ('2026-03', NULL);",
    );
    f.write("data/a.json", r#"[{"x": 1}]"#);
    // The tools run the test helper program (the same on every platform).
    f.manifest(&MANIFEST.replace("{helper}", &crate::support::helper_path()));
    f
}

/// What each tool's `_meta` names: tool name → its view (`None`: no `_meta` at all).
fn views_of(tools: &[Value]) -> Vec<(String, Option<String>)> {
    tools
        .iter()
        .map(|t| {
            let meta = t.get("_meta");
            if let Some(m) = meta {
                // The nested key and the flat one the spec still names agree.
                assert_eq!(m["ui"]["resourceUri"], m["ui/resourceUri"], "{t}");
                assert_eq!(m.as_object().map(|o| o.len()), Some(2), "{m}");
            }
            (
                t["name"].as_str().expect("name").to_owned(),
                meta.map(|m| m["ui"]["resourceUri"].as_str().expect("uri").to_owned()),
            )
        })
        .collect()
}

fn expected_views() -> Vec<(String, Option<String>)> {
    [
        ("list_resources", None),
        ("read_resource", None),
        ("people", Some(TABLE)),
        ("echo", None),
        ("shop_table", Some(TABLE)),
        ("monthly", Some("ui://mcp-manifest/chart/monthly")),
        ("plain", None),
        ("by_month", Some("ui://mcp-manifest/chart/by_month")),
        ("json_file", Some(TABLE)),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_owned(), v.map(str::to_owned)))
    .collect()
}

#[test]
fn tools_name_their_views_and_the_extension_is_declared() {
    let f = fixture();
    let mut s = f.serve();
    // A host that declares the extension (SEP-1865) …
    let init = s.ok(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"extensions": {UI: {"mimeTypes": [MIME]}}},
               "clientInfo": {"name": "host", "version": "1"}}),
    );
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(
        init["capabilities"]["extensions"][UI],
        json!({"mimeTypes": [MIME]})
    );
    let (tools, _) = list_all(&mut s, "tools/list", "tools");
    assert_eq!(views_of(&tools), expected_views());

    // … and one that does not see the same tools: a view is an addition hosts without the
    // extension ignore, and the results keep their text.
    let mut plain = f.serve().started();
    let (tools, _) = list_all(&mut plain, "tools/list", "tools");
    assert_eq!(views_of(&tools), expected_views());
}

#[test]
fn the_stateless_era_declares_it_too() {
    let f = fixture();
    let mut s = f.serve();
    let discover = s.modern("server/discover", json!({}));
    assert_eq!(
        discover["result"]["capabilities"]["extensions"][UI],
        json!({"mimeTypes": [MIME]}),
        "{discover}"
    );
    let tools = s.modern("tools/list", json!({}));
    let tools = tools["result"]["tools"].as_array().expect("tools").clone();
    assert_eq!(views_of(&tools), expected_views());
    let read = s.modern("resources/read", json!({"uri": TABLE}));
    assert_eq!(read["result"]["contents"][0]["mimeType"], MIME, "{read}");
}

#[test]
fn views_are_resources_with_their_security_settings() {
    let f = fixture();
    let mut s = f.serve().started();
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let views: Vec<(&str, &str)> = resources
        .iter()
        .filter(|r| r["uri"].as_str().is_some_and(|u| u.starts_with("ui://")))
        .map(|r| {
            (
                r["uri"].as_str().expect("uri"),
                r["mimeType"].as_str().expect("mime"),
            )
        })
        .collect();
    assert_eq!(
        views,
        [
            (TABLE, MIME),
            ("ui://mcp-manifest/chart/monthly", MIME),
            ("ui://mcp-manifest/chart/by_month", MIME)
        ]
    );
    let csp = json!({"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []});
    for uri in [
        TABLE,
        "ui://mcp-manifest/chart/monthly",
        "ui://mcp-manifest/chart/by_month",
    ] {
        let r = s.ok("resources/read", json!({"uri": uri}));
        let c = &r["contents"][0];
        assert_eq!(c["uri"], uri);
        assert_eq!(c["mimeType"], MIME);
        assert_eq!(c["_meta"]["ui"]["csp"], csp, "{uri}");
        assert_eq!(c["_meta"]["ui"]["prefersBorder"], true);
        let html = c["text"].as_str().expect("HTML text");
        assert!(html.starts_with("<!DOCTYPE html>"), "{uri}");
        assert!(
            html.contains(r#"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'sha256-"#),
            "the document declares its own policy"
        );
        // The listed size is the read's.
        let listed = resources.iter().find(|l| l["uri"] == uri).expect("listed");
        assert_eq!(listed["size"], json!(html.len()), "{uri}");
    }
    let chart = s.ok(
        "resources/read",
        json!({"uri": "ui://mcp-manifest/chart/monthly"}),
    );
    assert!(
        chart["contents"][0]["text"].as_str().expect("text").contains(
            r#"<meta name="mcp-manifest-view" content="{&quot;chart&quot;:&quot;line&quot;,&quot;x&quot;:&quot;month&quot;,&quot;y&quot;:[&quot;revenue&quot;],&quot;tool&quot;:&quot;monthly&quot;}">"#
        )
    );
    // Other `ui://mcp-manifest/` URIs are not found, and other resources carry no `_meta`.
    for uri in [
        "ui://mcp-manifest/chart/people",
        "ui://mcp-manifest/chart/nope",
        "ui://mcp-manifest/other",
    ] {
        let e = s.err("resources/read", json!({"uri": uri}));
        assert_eq!(e["code"], -32002, "{uri}: {e}");
    }
    let schema = s.ok("resources/read", json!({"uri": "sqlite://shop/schema"}));
    assert!(schema["contents"][0].get("_meta").is_none());
    // A subscription to a view is accepted (it never changes).
    s.ok("resources/subscribe", json!({"uri": TABLE}));
}

#[test]
fn results_keep_their_text_for_hosts_without_views() {
    let f = fixture();
    let mut s = f.serve().started();
    let people = s.ok("tools/call", json!({"name": "people", "arguments": {}}));
    assert_eq!(
        people["structuredContent"],
        json!({"result": [{"name": "Ada", "langs": 3}, {"name": "<b>Grace</b>", "langs": null}]})
    );
    assert_eq!(
        people["content"],
        json!([{"type": "text", "text": people["structuredContent"].to_string()}])
    );
    let table = s.ok(
        "tools/call",
        json!({"name": "shop_table", "arguments": {"table": "sales"}}),
    );
    assert_eq!(
        table["structuredContent"],
        json!({"columns": ["month", "revenue"], "rows": [
            {"month": "2026-01", "revenue": 10.5}, {"month": "2026-02", "revenue": 12.0},
            {"month": "2026-03", "revenue": null}], "truncated": false})
    );
    let text: Value = serde_json::from_str(table["content"][0]["text"].as_str().expect("text"))
        .expect("the text is the rows");
    assert_eq!(text, table["structuredContent"]);
}

#[test]
fn without_views_nothing_changes() {
    let f = Fixture::new();
    f.manifest("[tools.echo]\ncommand = [\"printf\", \"hi\"]\n");
    let mut s = f.serve();
    let init = s.initialize("2025-11-25");
    assert!(init["capabilities"].get("extensions").is_none(), "{init}");
    let (tools, _) = list_all(&mut s, "tools/list", "tools");
    assert!(tools.iter().all(|t| t.get("_meta").is_none()));
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    assert!(resources.is_empty(), "{resources:?}");
    let e = s.err("resources/read", json!({"uri": TABLE}));
    assert_eq!(e["code"], -32002);
}

#[test]
fn list_names_each_tools_view() {
    let f = fixture();
    let out = f.run(&["list"]);
    let text = stdout(&out);
    assert!(
        text.contains("  people  (view ui://mcp-manifest/table)  "),
        "{text}"
    );
    assert!(text.contains("  monthly  (view ui://mcp-manifest/chart/monthly)  "));
    assert!(text.contains("  ui://mcp-manifest/table  text/html;profile=mcp-app  "));
    let out = f.run(&["list", "--json"]);
    let listing: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(
        views_of(listing["tools"].as_array().expect("tools")),
        expected_views()
    );
}

#[test]
fn check_reports_views_that_cannot_work() {
    let f = Fixture::new();
    make_db(&f.path("shop.db"), "CREATE TABLE t (a TEXT, b REAL);");
    let lines = f.diagnose(
        r#"[sqlite.shop]
path = "shop.db"
tables = false
view = "table"

[sqlite.shop.queries.q]
sql = "SELECT a, b FROM t"
tool = false
view = { chart = "line", x = "a", y = ["b"] }

[sqlite.shop.queries.r]
sql = "SELECT a, b FROM t"
view = { chart = "bar", x = "a", y = [] }

[sqlite.shop.queries.s]
sql = "SELECT a, b FROM t"
view = { chart = "line", x = "a", y = ["b", "b"] }

[templates.notes]
uri = "notes://{name}"
file = "notes/{name}.md"
view = "table"

[templates.cmd]
uri = "cmd://{x}"
command = ["printf", "%s", "{x}"]
view = "table"

[tools.text]
command = ["printf", "hi"]
view = "table"

[tools.json]
command = ["printf", "{}"]
output = "json"
view = { chart = "line", x = "a", y = ["b"] }
"#,
    );
    assert_eq!(
        lines,
        [
            "bad.toml:4:8: [sqlite.shop] has a `view`, but no tool to show it with (`tables = false`); a view shows a tool's result",
            "bad.toml:9:8: [sqlite.shop.queries.q] has a `view`, but no tool to show it with (`tool = false`); a view shows a tool's result",
            "bad.toml:13:38: [sqlite.shop.queries.r] `view.y` is empty: name at least one numeric column to plot",
            "bad.toml:17:45: [sqlite.shop.queries.s] `view.y` names column `b` twice",
            "bad.toml:22:8: [templates.notes] has a `view`, which shows structured rows, but a `file` template's content is text: set `mime_type = \"application/json\"` for a file of JSON rows",
            "bad.toml:27:8: [templates.cmd] has a `view`, which shows structured rows, but a `command` template's output is text: set `mime_type = \"application/json\"` for a program that prints JSON rows",
            "bad.toml:31:8: [tools.text] has a `view`, which shows structured rows, but this tool's output is text: set `output = \"json\"` (stdout parsed into structured rows)",
        ]
    );
}

#[test]
fn check_reports_bad_view_values_with_their_place() {
    let f = Fixture::new();
    f.write("data/a.json", "[]");
    let lines = f.diagnose_with_binary(
        r#"[templates.a]
uri = "a://{name}"
file = "data/{name}.json"
mime_type = "application/json"
view = "tabel"

[templates.b]
uri = "b://{name}"
file = "data/{name}.json"
mime_type = "application/json"
view = { chart = "pie", x = "a", y = ["b"] }

[templates.c]
uri = "c://{name}"
file = "data/{name}.json"
mime_type = "application/json"
view = { chart = "line", x = "a", y = ["b"], colour = "red" }

[templates.d]
uri = "d://{name}"
file = "data/{name}.json"
mime_type = "application/json"
view = { chart = "line", y = "b" }
"#,
    );
    assert_eq!(
        lines,
        [
            "bad.toml:5:8: `templates.a.view` cannot be `tabel`, did you mean `table`?",
            "bad.toml:11:18: `templates.b.view.chart` cannot be `pie`; expected one of: `line`, `bar`",
            "bad.toml:17:46: unknown key `colour` in `templates.c.view`; expected one of: `chart`, `x`, `y`",
            "bad.toml:23:8: missing required key `x` in `templates.d.view`",
            "bad.toml:23:30: `templates.d.view.y` must be an array, found a string",
        ]
    );
}

#[test]
fn template_tools_off_leaves_no_tool_for_a_view() {
    let f = Fixture::new();
    make_db(&f.path("shop.db"), "CREATE TABLE t (a TEXT);");
    let lines = f.diagnose(
        "[server]\ntemplate_tools = false\n\n[sqlite.shop]\npath = \"shop.db\"\nview = \"table\"\n",
    );
    assert_eq!(
        lines,
        [
            "bad.toml:6:8: [sqlite.shop] has a `view`, but no tool to show it with (`template_tools = false` in [server]); a view shows a tool's result"
        ]
    );
}

#[test]
fn a_manifest_edit_adds_a_view() {
    let f = Fixture::new();
    f.write("notes/a.md", "a");
    let head = "[files.notes]\nroot = \"notes\"\n\n[tools.people]\ncommand = [\"printf\", \"[]\"]\noutput = \"json\"\n";
    f.manifest(head);
    let mut s: Server = f.serve().started();
    let (tools, _) = list_all(&mut s, "tools/list", "tools");
    let people = |tools: &[Value]| tools.iter().find(|t| t["name"] == "people").cloned();
    assert!(people(&tools).expect("people").get("_meta").is_none());
    // Subscribed to a file, so the watcher is known to run before the edit.
    s.ok("resources/subscribe", json!({"uri": f.uri("notes/a.md")}));
    f.manifest(&format!("{head}view = \"table\"\n"));
    s.wait_for(|m| m["method"] == "notifications/tools/list_changed");
    let (tools, _) = list_all(&mut s, "tools/list", "tools");
    assert_eq!(
        people(&tools).expect("people")["_meta"]["ui"]["resourceUri"],
        TABLE
    );
    let r = s.ok("resources/read", json!({"uri": TABLE}));
    assert_eq!(r["contents"][0]["mimeType"], MIME);
}

#[test]
fn postgres_sections_take_views_too() {
    let f = Fixture::new();
    let lines = f.diagnose(
        r#"[postgres.crm]
url = "postgres://reader@127.0.0.1:1/crm"
tables = false
view = "table"

[postgres.crm.queries.deals]
sql = "SELECT owner, amount FROM deals"
view = { chart = "bar", x = "owner", y = [] }
"#,
    );
    assert_eq!(
        lines,
        [
            "bad.toml:4:8: [postgres.crm] has a `view`, but no tool to show it with (`tables = false`); a view shows a tool's result",
            "bad.toml:8:42: [postgres.crm.queries.deals] `view.y` is empty: name at least one numeric column to plot",
        ]
    );
}
