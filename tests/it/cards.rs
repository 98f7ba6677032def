//! Server cards and group endpoints over HTTP: `GET /mcp/server-card` (and each group's) before
//! authentication with the discovery document's headers, ETag revalidation, the AI catalog,
//! `mcp-manifest card`, the card checked against the published schema, and `/mcp/NAME` serving
//! only its group while `/mcp` needs the token as before.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;

use serde_json::{Value, json};

use crate::support::{BIN, Fixture, TIMEOUT, stdout};

const MANIFEST: &str = r#"
[server]
name = "shop"
title = "Acme shop"
description = "Orders, docs and history of the Acme shop"
repository = "https://github.com/acme/shop"
website = "https://acme.example.com"
icons = [{ src = "https://acme.example.com/icon.png", mime_type = "image/png", sizes = ["48x48"] }]

[server.http]
auth = "token"
tokens = ["secret-token"]
catalog = true

[files.docs]
root = "docs"

[prompts.review]
messages = [{ role = "user", text = "Review" }]

[groups.readers]
description = "Only the documentation"
tools = ["read_resource"]
prompts = []
"#;

struct Web {
    child: Child,
    addr: String,
}

impl Web {
    fn start(f: &Fixture) -> Web {
        let mut child = Command::new(BIN)
            .args(["serve", "--http", "127.0.0.1:0", "mcp-server.toml"])
            .current_dir(f.root())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let err = child.stderr.take().expect("stderr");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("at http://").nth(1) {
                    let _ = tx.send(rest.split('/').next().unwrap_or_default().to_owned());
                }
            }
        });
        let addr = rx.recv_timeout(TIMEOUT).expect("the server started");
        Web { child, addr }
    }

    /// One request; the status, the headers (lower-case names) and the body.
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, Vec<(String, String)>, String) {
        let mut s = TcpStream::connect(&self.addr).expect("connect");
        s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        s.write_all(req.as_bytes()).expect("write");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        (status, headers, body.to_owned())
    }

    fn post(
        &self,
        path: &str,
        session: Option<&str>,
        body: &Value,
    ) -> (u16, Vec<(String, String)>, Value) {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", "Bearer secret-token"),
            ("Mcp-Protocol-Version", "2025-11-25"),
        ];
        if let Some(s) = session {
            headers.push(("Mcp-Session-Id", s));
        }
        let (status, headers, text) = self.request("POST", path, &headers, &body.to_string());
        // A JSON answer, or an SSE stream (chunked) whose `data:` line holds it.
        let value = serde_json::from_str(&text)
            .ok()
            .or_else(|| {
                text.lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .find_map(|d| serde_json::from_str::<Value>(d).ok())
            })
            .unwrap_or_else(|| json!({"status": status, "raw": text}));
        (status, headers, value)
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("docs/a.md", "# A\n");
    f.manifest(MANIFEST);
    f
}

#[test]
fn the_card_is_public_cached_and_revalidated() {
    let f = fixture();
    let web = Web::start(&f);
    let (status, headers, body) = web.request(
        "GET",
        "/mcp/server-card",
        &[("Accept", "application/mcp-server-card+json")],
        "",
    );
    assert_eq!(status, 200, "no token needed: {body}");
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/mcp-server-card+json")
    );
    assert_eq!(header(&headers, "access-control-allow-origin"), Some("*"));
    assert_eq!(
        header(&headers, "access-control-expose-headers"),
        Some("ETag")
    );
    assert_eq!(
        header(&headers, "cache-control"),
        Some("public, max-age=3600")
    );
    let card: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(card["name"], "io.github.acme/shop");
    assert_eq!(card["title"], "Acme shop");
    assert_eq!(
        card["remotes"][0]["url"],
        format!("http://{}/mcp", web.addr)
    );
    assert_eq!(card["remotes"][0]["headers"][0]["isSecret"], true);
    assert!(!body.contains("secret-token"), "no secret in a card");
    let etag = header(&headers, "etag").expect("an ETag").to_owned();
    let (status, _, body) = web.request("GET", "/mcp/server-card", &[("If-None-Match", &etag)], "");
    assert_eq!((status, body.as_str()), (304, ""));
    let (status, headers, _) = web.request(
        "OPTIONS",
        "/mcp/server-card",
        &[("Origin", "https://x.example")],
        "",
    );
    assert_eq!(status, 204);
    assert_eq!(
        header(&headers, "access-control-allow-methods"),
        Some("GET")
    );

    // The group's card names the group's endpoint.
    let (status, _, body) = web.request("GET", "/mcp/readers/server-card", &[], "");
    assert_eq!(status, 200);
    let group: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(group["name"], "io.github.acme/shop-readers");
    assert_eq!(group["description"], "Only the documentation");
    assert_eq!(
        group["remotes"][0]["url"],
        format!("http://{}/mcp/readers", web.addr)
    );
    let (status, _, _) = web.request("GET", "/mcp/nope/server-card", &[], "");
    assert_eq!(status, 404);

    // The catalog lists both cards.
    let (status, headers, body) = web.request("GET", "/.well-known/ai-catalog.json", &[], "");
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/ai-catalog+json")
    );
    let catalog: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        catalog["entries"][1]["url"],
        format!("http://{}/mcp/readers/server-card", web.addr)
    );
    assert_eq!(
        catalog["entries"][0]["type"],
        "application/mcp-server-card+json"
    );

    // The card verb prints what the server answers (but the address it was not told).
    let out = f.run(&["card", "--http", &web.addr]);
    assert!(out.status.success());
    let printed: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(printed, card);
    let _ = stdout(&out);
}

#[test]
fn a_group_endpoint_serves_its_subset_and_needs_the_token() {
    let f = fixture();
    let web = Web::start(&f);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "it", "version": "1"}}});
    let (status, _, _) = web.request(
        "POST",
        "/mcp/readers",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        &init.to_string(),
    );
    assert_eq!(status, 401, "group endpoints authenticate like /mcp");
    let (status, headers, _) = web.post("/mcp/readers", None, &init);
    assert_eq!(status, 200);
    let session = header(&headers, "mcp-session-id")
        .expect("a session")
        .to_owned();
    web.post(
        "/mcp/readers",
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let (_, _, tools) = web.post(
        "/mcp/readers",
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools: {tools}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["read_resource"], "{tools}");
    let (_, _, prompts) = web.post(
        "/mcp/readers",
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/list"}),
    );
    assert_eq!(prompts["result"]["prompts"], json!([]), "{prompts}");
    // The same session id on /mcp itself is another endpoint's: the default one lists all.
    let (status, _, _) = web.post("/mcp/nope", None, &init);
    assert_eq!(status, 404);
    let (_, headers, _) = web.post("/mcp", None, &init);
    let default = header(&headers, "mcp-session-id")
        .expect("a session")
        .to_owned();
    web.post(
        "/mcp",
        Some(&default),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let (_, _, prompts) = web.post(
        "/mcp",
        Some(&default),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/list"}),
    );
    assert_eq!(
        prompts["result"]["prompts"][0]["name"], "review",
        "{prompts}"
    );
}

/// The card validates against the published schema (SEP-2127's `server-card.schema.json`,
/// kept as published in `tests/fixtures/`).
#[test]
fn the_card_validates_against_the_published_schema() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/server-card.schema.json"
    ))
    .expect("the schema");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler
        .add_resource("urn:server-card", schema)
        .expect("a schema");
    let card_schema = compiler
        .compile("urn:server-card", &mut schemas)
        .expect("a valid schema");
    let errors_of = |card: &Value| match schemas.validate(card, card_schema) {
        Ok(()) => String::new(),
        Err(e) => format!("{e:#}"),
    };
    let f = fixture();
    for args in [
        vec!["card", "--http", "127.0.0.1:8080"],
        vec!["card", "--group", "readers", "--http", "127.0.0.1:8080"],
    ] {
        let out = f.run(&args);
        assert!(out.status.success(), "{args:?}");
        let card: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let errors = errors_of(&card);
        assert!(errors.is_empty(), "{args:?}: {errors}\n{card:#}");
    }
    // A bare manifest too (name, description and version from defaults; no remotes).
    f.manifest("");
    let out = f.run(&["card"]);
    let card: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let errors = errors_of(&card);
    assert!(errors.is_empty(), "{errors}\n{card:#}");
}
