//! The view document's safety rules, checked on the text that is served: its Content Security
//! Policy allows exactly its own script and style (by hash), it loads nothing, and it has no
//! way to turn text into code or markup. The browser test (scripts/views-browser.sh) shows the
//! same in Chromium.

use base64::Engine as _;
use sha2::Digest as _;

use super::*;

/// The text between `<tag>` and `</tag>` (the only one of its kind).
fn element<'a>(html: &'a str, tag: &str) -> &'a str {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    assert_eq!(html.matches(&open).count(), 1, "one <{tag}>");
    let start = html.find(&open).expect("open") + open.len();
    let end = html.find(&close).expect("close");
    &html[start..end]
}

fn sha256(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(text.as_bytes()))
}

fn policy(html: &str) -> &str {
    let start = html
        .find(r#"<meta http-equiv="Content-Security-Policy" content=""#)
        .expect("a CSP meta element")
        + r#"<meta http-equiv="Content-Security-Policy" content=""#.len();
    let end = start + html[start..].find('"').expect("end of the policy");
    &html[start..end]
}

#[test]
fn csp_hashes_match() {
    let script = sha256(element(HTML, "script"));
    let style = sha256(element(HTML, "style"));
    let want = format!(
        "default-src 'none'; script-src 'sha256-{script}'; style-src 'sha256-{style}'; base-uri 'none'; form-action 'none'"
    );
    assert_eq!(
        policy(HTML),
        want,
        "src/views/view.html: after editing its script or style, put this policy in its CSP meta element"
    );
    // The policy comes before anything it governs.
    assert!(HTML.find("Content-Security-Policy") < HTML.find("<style>"));
}

#[test]
fn no_dynamic_code_and_nothing_loaded() {
    let lower = HTML.to_ascii_lowercase();
    for bad in [
        "eval(",
        "function(",
        "new function",
        "innerhtml",
        "outerhtml",
        "insertadjacenthtml",
        "document.write",
        "srcdoc",
        "javascript:",
        "settimeout('",
        "settimeout(\"",
        "setinterval(",
        "@import",
        "url(",
        "<img",
        "<link",
        "<iframe",
        "fetch(",
        "xmlhttprequest",
        "websocket",
        "importscripts",
        "import(",
        "'unsafe-",
    ] {
        assert!(!lower.contains(bad), "the view must not contain `{bad}`");
    }
    // No inline event handler attribute (`onclick=`…) anywhere.
    let handler = regex::Regex::new(r"(?i)\son[a-z]+\s*=").expect("regex");
    assert!(
        !handler.is_match(HTML),
        "inline handler: {:?}",
        handler.find(HTML)
    );
    // The one URL is the SVG namespace, which loads nothing.
    let urls: Vec<&str> = regex::Regex::new(r"[a-z]+://[^'\s]*")
        .expect("regex")
        .find_iter(HTML)
        .map(|m| m.as_str())
        .collect();
    assert_eq!(urls, ["http://www.w3.org/2000/svg"]);
    // Values reach the page as text only.
    assert!(HTML.contains(".textContent = "));
    assert_eq!(HTML.matches("<script>").count(), 1);
}

fn chart(tool: &str, y: &[&str]) -> ToolView {
    ToolView {
        tool: tool.into(),
        view: View::Chart(Chart {
            kind: ChartKind::Bar,
            x: "month".into(),
            y: y.iter().map(|s| s.to_string()).collect(),
        }),
        loc: crate::manifest::Loc::default(),
    }
}

#[test]
fn chart_settings_are_an_escaped_attribute() {
    let hostile = r#""><script>alert(1)</script>&'"#;
    let views =
        ViewsSource::build(&[chart("sales", &["revenue", hostile])], |_| true).expect("a view");
    let html = views
        .html("ui://mcp-manifest/chart/sales")
        .expect("the chart");
    assert_eq!(html.matches("<script").count(), 1, "no element from a name");
    assert_eq!(policy(&html), policy(HTML), "the policy is unchanged");
    assert_eq!(element(&html, "script"), element(HTML, "script"));
    let start = html
        .find(r#"<meta name="mcp-manifest-view" content=""#)
        .expect("settings")
        + r#"<meta name="mcp-manifest-view" content=""#.len();
    let end = start + html[start..].find('"').expect("end");
    let decoded = html[start..end]
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let settings: serde_json::Value = serde_json::from_str(&decoded).expect("JSON settings");
    assert_eq!(
        settings,
        json!({"chart": "bar", "x": "month", "y": ["revenue", hostile], "tool": "sales"})
    );
}

#[test]
fn resources_and_links() {
    let table = ToolView {
        tool: "orders".into(),
        view: View::Table,
        loc: crate::manifest::Loc::default(),
    };
    let views = ViewsSource::build(&[table.clone(), chart("sales", &["revenue"])], |t| {
        t != "gone"
    })
    .expect("views");
    assert_eq!(views.uri_for("orders").as_deref(), Some(TABLE_URI));
    assert_eq!(
        views.uri_for("sales").as_deref(),
        Some("ui://mcp-manifest/chart/sales")
    );
    assert_eq!(views.uri_for("other"), None);
    assert_eq!(views.html(TABLE_URI).as_deref(), Some(HTML));
    // A chart of a tool that has none, and anything else, is not a view.
    for uri in [
        "ui://mcp-manifest/chart/orders",
        "ui://mcp-manifest/chart/",
        "ui://mcp-manifest/tables",
        "ui://mcp-manifest/table/",
    ] {
        assert!(views.html(uri).is_none(), "{uri}");
    }
    // Only the views of tools that were built.
    assert!(ViewsSource::build(&[table], |_| false).is_none());
    // No table view, no table resource.
    let only_chart = ViewsSource::build(&[chart("sales", &["revenue"])], |_| true).expect("views");
    assert!(only_chart.html(TABLE_URI).is_none());
}

#[test]
fn metadata() {
    assert_eq!(
        serde_json::Value::Object(tool_meta(TABLE_URI)),
        json!({"ui": {"resourceUri": TABLE_URI}, "ui/resourceUri": TABLE_URI})
    );
    assert_eq!(
        contents_meta(TABLE_URI, Some(MIME_TYPE)).map(serde_json::Value::Object),
        Some(json!({"ui": {
            "csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []},
            "prefersBorder": true
        }}))
    );
    // Not for anything else, whatever its type.
    assert_eq!(contents_meta("file:///x.html", Some(MIME_TYPE)), None);
    assert_eq!(contents_meta(TABLE_URI, Some("text/html")), None);
    assert_eq!(
        serde_json::Value::Object(capability()),
        json!({"mimeTypes": ["text/html;profile=mcp-app"]})
    );
}
