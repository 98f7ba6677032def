//! `serve --http`: the binary on 127.0.0.1 (a free port it picks), driven by a plain HTTP client:
//! both eras on `/mcp`, notifications to every session, Origin / Host / token / JWT checks,
//! `/healthz`, the body cap, the per-session bound, the SIGTERM drain, and tools of a session that
//! goes away being killed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::support::{BIN, Fixture, TIMEOUT, stderr};

mod hostile;
mod resume;

/// A manifest with a folder, a quick tool, a tool that sleeps (and says its pid), and a prompt;
/// its tools run the test helper program (`{helper}`), the same on every platform.
const MANIFEST_TEMPLATE: &str = r#"
[server]
name = "web"

[files.docs]
root = "docs"

[tools.quick]
description = "exits at once"
command = ["{helper}", "exit", "0"]

[tools.slow]
description = "writes its pid, then sleeps"
command = ["{helper}", "pid", "{pidfile}", "sleep_s", "{secs}"]
params.pidfile = { type = "string" }
params.secs = { type = "string" }

[tools.echo]
description = "echoes its text"
command = ["{helper}", "outln", "{text}"]
params.text = { type = "string" }
"#;

/// `MANIFEST_TEMPLATE` naming the helper.
fn manifest() -> String {
    MANIFEST_TEMPLATE.replace("{helper}", &crate::support::helper_path())
}

fn fixture(extra: &str) -> Fixture {
    let f = Fixture::new();
    f.write("docs/a.md", "# A\n");
    f.manifest(&format!("{}\n{extra}", manifest()));
    f
}

/// The binary serving over HTTP; stdin is /dev/null (it must not matter).
pub(crate) struct Web {
    child: Child,
    addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Web {
    pub(crate) fn start(f: &Fixture, env: &[(&str, &str)]) -> Web {
        Web::start_args(
            f,
            &["serve", "--http", "127.0.0.1:0", "mcp-server.toml"],
            env,
        )
    }

    fn start_args(f: &Fixture, args: &[&str], env: &[(&str, &str)]) -> Web {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(f.root())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp-manifest serve --http");
        let err = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = channel();
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("at http://").nth(1) {
                    let addr = rest.split('/').next().unwrap_or_default().to_owned();
                    let _ = tx.send(addr);
                }
                lines.lock().expect("log lock").push(line);
            }
        });
        let addr = match rx.recv_timeout(TIMEOUT) {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "the server did not start: {:?}",
                    log.lock().expect("log lock")
                );
            }
        };
        Web { child, addr, log }
    }

    /// The server's resident memory now (VmRSS), in bytes.
    fn rss(&self) -> Option<u64> {
        // /proc: Linux only; elsewhere the memory bounds are not measured (`grown` is 0) and
        // only the behaviour is checked.
        cfg!(target_os = "linux").then(|| crate::support::proc_memory(self.child.id(), "VmRSS"))
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn log(&self) -> String {
        self.log.lock().expect("log lock").join("\n")
    }

    /// Waits until a line of stderr contains `text`.
    fn wait_log(&self, text: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.log().contains(text) {
            assert!(
                Instant::now() < deadline,
                "no `{text}` on stderr: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until `n` lines of stderr contain `text`.
    fn wait_log_count(&self, text: &str, n: usize) {
        let deadline = Instant::now() + TIMEOUT;
        while self.log().matches(text).count() < n {
            assert!(
                Instant::now() < deadline,
                "fewer than {n} `{text}` on stderr: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM. Unix only, and so are the tests that use it: a Windows server stops on a
    /// console's Ctrl+C, which a test cannot send to one child process of its own.
    #[cfg(unix)]
    fn terminate(&mut self) {
        // SAFETY: kill(2) on the pid of our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
    }

    /// Waits for the exit and returns its code and how long it took (after `terminate`).
    #[cfg(unix)]
    fn wait_exit(&mut self, limit: Duration) -> (Option<i32>, Duration) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return (status.code(), start.elapsed());
            }
            assert!(
                start.elapsed() < limit,
                "the server did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A 2026-07-28 request (no session): `_meta` and the routing headers.
    fn modern(&self, method: &str, params: Value) -> Reply {
        self.modern_with(method, params, &[])
    }

    fn modern_with(&self, method: &str, mut params: Value, headers: &[(&str, &str)]) -> Reply {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
        });
        let name = match method {
            "tools/call" | "prompts/get" => params["name"].as_str().map(str::to_owned),
            "resources/read" => params["uri"].as_str().map(str::to_owned),
            _ => None,
        };
        let mut h: Vec<(&str, &str)> = vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ];
        if let Some(n) = &name {
            h.push(("mcp-name", n));
        }
        h.extend_from_slice(headers);
        post(
            &self.url("/mcp"),
            &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
            &h,
        )
    }

    /// The result of a 2026-07-28 request, failing the test on anything else.
    fn ok(&self, method: &str, params: Value) -> Value {
        let r = self.modern(method, params);
        assert_eq!(r.status, 200, "{method}: {}", r.text);
        r.message(1)["result"].clone()
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer: status, headers, body, and the JSON-RPC messages in it (JSON or SSE).
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    text: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn messages(&self) -> Vec<Value> {
        if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            sse_data(&self.text)
        } else {
            serde_json::from_str(&self.text).map_or_else(|_| vec![], |v| vec![v])
        }
    }

    /// The response to request `id`.
    fn message(&self, id: i64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == json!(id) && m.get("method").is_none())
            .unwrap_or_else(|| panic!("no response {id} in {self:?}"))
    }
}

fn sse_data(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(TIMEOUT))
        .build()
        .into()
}

fn reply(mut r: ureq::http::Response<ureq::Body>) -> Reply {
    let status = r.status().as_u16();
    let headers = r
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
        .collect();
    let text = r.body_mut().read_to_string().unwrap_or_default();
    Reply {
        status,
        headers,
        text,
    }
}

fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> Reply {
    let mut req = agent()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    reply(req.send(body.to_string().as_bytes()).expect("POST"))
}

fn get(url: &str, headers: &[(&str, &str)]) -> Reply {
    let mut req = agent().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    reply(req.call().expect("GET"))
}

/// Opens an SSE stream (GET, or a POST like `subscriptions/listen`) and hands over its JSON-RPC
/// messages as they come.
fn stream(req: ureq::RequestBuilder<ureq::typestate::WithBody>, body: &Value) -> Receiver<Value> {
    let r = req
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .send(body.to_string().as_bytes())
        .expect("open stream");
    read_stream(r)
}

fn read_stream(r: ureq::http::Response<ureq::Body>) -> Receiver<Value> {
    assert_eq!(r.status().as_u16(), 200, "stream refused");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let reader = BufReader::new(r.into_body().into_reader());
        for line in reader.lines() {
            let Ok(line) = line else { break };
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str::<Value>(data.trim())
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    rx
}

/// The next message of `rx` whose method is `method`.
pub(crate) fn next_notification(rx: &Receiver<Value>, method: &str) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(v) if v["method"] == method => return v,
            Ok(_) => {}
            Err(e) => panic!("no {method} ({e})"),
        }
    }
}

/// A handshake-era session.
pub(crate) struct Legacy<'a> {
    web: &'a Web,
    /// The endpoint: `/mcp`, or a group's `/mcp/NAME`.
    path: String,
    id: String,
    next: i64,
}

impl<'a> Legacy<'a> {
    fn start(web: &'a Web) -> Legacy<'a> {
        Legacy::start_with(web, &[])
    }

    fn start_with(web: &'a Web, headers: &[(&str, &str)]) -> Legacy<'a> {
        Legacy::start_at(web, "/mcp", headers)
    }

    /// A session on the endpoint at `path`.
    pub(crate) fn start_at(web: &'a Web, path: &str, headers: &[(&str, &str)]) -> Legacy<'a> {
        let r = post(
            &web.url(path),
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "it", "version": "1"}}}),
            headers,
        );
        assert_eq!(r.status, 200, "initialize: {}", r.text);
        assert_eq!(
            r.message(0)["result"]["protocolVersion"],
            "2025-11-25",
            "{r:?}"
        );
        let id = r.header("mcp-session-id").expect("a session id").to_owned();
        let s = Legacy {
            web,
            path: path.to_owned(),
            id,
            next: 1,
        };
        let r = s.post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            headers,
        );
        assert_eq!(r.status, 202, "{}", r.text);
        s
    }

    fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Reply {
        let mut h = vec![
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        h.extend_from_slice(extra);
        post(&self.web.url(&self.path), body, &h)
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let r = self.post(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            &[],
        );
        assert_eq!(r.status, 200, "{method}: {}", r.text);
        r.message(id)
    }

    pub(crate) fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params);
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {r}"))
    }

    /// The session's GET stream (server notifications).
    pub(crate) fn notifications(&self) -> Receiver<Value> {
        let r = agent()
            .get(&self.web.url(&self.path))
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .call()
            .expect("GET stream");
        read_stream(r)
    }

    fn delete(&self) -> u16 {
        let r = agent()
            .delete(&self.web.url(&self.path))
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .call()
            .expect("DELETE");
        r.status().as_u16()
    }
}

/// A `subscriptions/listen` stream (2026-07-28).
fn listen(web: &Web, notifications: Value) -> Receiver<Value> {
    listen_at(web, "/mcp", notifications)
}

/// A `subscriptions/listen` stream on the endpoint at `path`.
pub(crate) fn listen_at(web: &Web, path: &str, notifications: Value) -> Receiver<Value> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let rx = stream(
        agent()
            .post(&web.url(path))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen"),
        &json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                "params": {"notifications": notifications, "_meta": meta}}),
    );
    next_notification(&rx, "notifications/subscriptions/acknowledged");
    rx
}

/// One raw HTTP/1.1 exchange (for headers a client library sets itself); returns the status and
/// the whole answer.
fn raw(addr: &str, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    s.write_all(request.as_bytes()).expect("write");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, out)
}

fn modern_body(method: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string()
}

/// A raw POST of a 2026-07-28 `tools/list` with `Host: host`.
fn raw_tools_list(addr: &str, host: &str) -> (u16, String) {
    let body = modern_body("tools/list");
    raw(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// How much the server's memory grew from `before` to `after` (0 where it is not measured).
fn grown(before: Option<u64>, after: Option<u64>) -> u64 {
    before
        .zip(after)
        .map_or(0, |(before, after)| after.saturating_sub(before))
}

/// Whether `pid` runs (a zombie left to an init that does not reap does not count: /proc).
#[cfg(target_os = "linux")]
fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Whether `pid` runs (elsewhere than Linux: no zombies to tell apart on Windows; on macOS a
/// zombie counts as running).
#[cfg(not(target_os = "linux"))]
fn pid_alive(pid: i32) -> bool {
    crate::tools::alive(pid)
}

/// Waits for the pid written to `file` (by the `slow` tool).
fn wait_pid(file: &Path) -> i32 {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the tool did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn wait_gone(pid: i32) {
    let deadline = Instant::now() + TIMEOUT;
    while pid_alive(pid) {
        assert!(Instant::now() < deadline, "process {pid} is still running");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn both_eras_list_read_and_call_on_one_endpoint() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    let uri = f.uri("docs/a.md");

    // 2026-07-28: no session.
    let tools = web.ok("tools/list", json!({}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"quick") && names.contains(&"slow"),
        "{names:?}"
    );
    let read = web.ok("resources/read", json!({"uri": uri}));
    assert_eq!(read["contents"][0]["text"], "# A\n");
    assert_eq!(read["resultType"], "complete");
    let called = web.ok(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi there"}}),
    );
    assert_eq!(text_of(&called), "hi there\n");
    let missing = web.modern("resources/read", json!({"uri": f.uri("docs/nope.md")}));
    assert_eq!(missing.message(1)["error"]["code"], -32602, "{missing:?}");
    // A listen stream for a URI no source serves is refused before it is acknowledged.
    let refused = web.modern(
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": [f.uri("docs/nope.md")]}}),
    );
    assert_eq!(refused.message(1)["error"]["code"], -32602, "{refused:?}");
    assert!(!refused.text.contains("acknowledged"), "{}", refused.text);

    // The handshake era: a session.
    let mut s = Legacy::start(&web);
    let list = s.ok("resources/list", json!({}));
    assert_eq!(list["resources"][0]["uri"], json!(uri));
    let templates = s.ok("resources/templates/list", json!({}));
    assert!(
        templates["resourceTemplates"][0]["uriTemplate"]
            .as_str()
            .unwrap()
            .ends_with("/{+path}"),
        "{templates}"
    );
    assert_eq!(
        s.ok("resources/read", json!({"uri": uri}))["contents"][0]["text"],
        "# A\n"
    );
    let missing = s.call("resources/read", json!({"uri": f.uri("docs/nope.md")}));
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    assert_eq!(
        text_of(&s.ok(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x y"}})
        )),
        "x y\n"
    );
    // A request with an unknown session is 404; after DELETE the session is unknown.
    let unknown = post(
        &web.url("/mcp"),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        &[
            ("mcp-session-id", "no-such-session"),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    );
    assert_eq!(unknown.status, 404);
    assert_eq!(s.delete(), 204);
    let after = s.post(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
        &[],
    );
    assert_eq!(after.status, 404);

    // One access line per request: method, session or none, status, duration.
    web.wait_log("POST /mcp tools/call session=none status=200");
    let log = web.log();
    let short: String = s.id.chars().take(8).collect();
    assert!(
        log.contains(&format!(
            "POST /mcp resources/read session={short} status=200"
        )),
        "{log}"
    );
    assert!(log.contains("DELETE /mcp - session="), "{log}");
}

#[test]
fn stdin_is_not_read_and_healthz_answers_with_the_version() {
    let f = fixture("");
    // stdin is /dev/null: at EOF from the start, and the server keeps serving.
    let web = Web::start(&f, &[]);
    let r = get(&web.url("/healthz"), &[]);
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_str(&r.text).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(get(&web.url("/nope"), &[]).status, 404);
    assert!(web.ok("tools/list", json!({}))["tools"].is_array());
}

#[test]
fn notifications_reach_every_session_that_asked() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    let uri = f.uri("docs/a.md");

    let mut one = Legacy::start(&web);
    let mut two = Legacy::start(&web);
    let one_stream = one.notifications();
    let two_stream = two.notifications();
    one.ok("resources/subscribe", json!({"uri": uri}));
    let listening = listen(
        &web,
        json!({"resourceSubscriptions": [uri], "resourcesListChanged": true, "toolsListChanged": true}),
    );

    f.write("docs/a.md", "# A, edited\n");
    let updated = next_notification(&one_stream, "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], json!(uri));
    let updated = next_notification(&listening, "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], json!(uri));
    assert!(
        updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].is_number(),
        "{updated}"
    );

    // A new file: every session hears that the list changed.
    f.write("docs/b.md", "# B\n");
    next_notification(&one_stream, "notifications/resources/list_changed");
    next_notification(&two_stream, "notifications/resources/list_changed");
    next_notification(&listening, "notifications/resources/list_changed");
    // Session two never subscribed to a.md: its first updated (if any) would be a bug.
    two.ok("resources/subscribe", json!({"uri": f.uri("docs/b.md")}));
    f.write("docs/b.md", "# B, edited\n");
    let updated = next_notification(&two_stream, "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], json!(f.uri("docs/b.md")));

    // A manifest edit reaches every session at once, and every new request sees it.
    f.manifest(&format!(
        "{}\n[tools.added]\ndescription = \"new\"\ncommand = [\"{}\", \"exit\", \"0\"]\n",
        manifest(),
        crate::support::helper_path()
    ));
    next_notification(&one_stream, "notifications/tools/list_changed");
    next_notification(&two_stream, "notifications/tools/list_changed");
    next_notification(&listening, "notifications/tools/list_changed");
    let tools = web.ok("tools/list", json!({}));
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "added"),
        "{tools}"
    );
    let tools = one.ok("tools/list", json!({}));
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "added")
    );
}

#[test]
fn origins_outside_the_allow_list_are_refused() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    // No allow-list: any Origin but the server's own is refused; a request without one is
    // served.
    let r = web.modern_with(
        "tools/list",
        json!({}),
        &[("origin", "https://evil.example")],
    );
    assert_eq!(r.status, 403, "{}", r.text);
    let port: u16 = web.addr.rsplit(':').next().unwrap().parse().unwrap();
    let own = format!("http://localhost:{port}");
    let status = |origin: &str| {
        web.modern_with("tools/list", json!({}), &[("origin", origin)])
            .status
    };
    assert_eq!(status(&own), 200);
    assert_eq!(status(&format!("http://127.0.0.1:{port}")), 200);
    assert_eq!(status(&format!("http://localhost:{}", port ^ 1)), 403);
    assert_eq!(status(&format!("https://localhost:{port}")), 403);
    assert_eq!(web.modern("tools/list", json!({})).status, 200);
    drop(web);

    let f = fixture("[server.http]\nallowed_origins = [\"https://app.example.com\"]\n");
    let web = Web::start(&f, &[]);
    let r = web.modern_with(
        "tools/list",
        json!({}),
        &[("origin", "https://evil.example")],
    );
    assert_eq!(r.status, 403);
    let r = web.modern_with(
        "tools/list",
        json!({}),
        &[("origin", "https://app.example.com")],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example.com")
    );
    // A browser's preflight for an allowed origin.
    let (status, text) = raw(
        &web.addr,
        &format!(
            "OPTIONS /mcp HTTP/1.1\r\nHost: {}\r\nOrigin: https://app.example.com\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n",
            web.addr
        ),
    );
    assert_eq!(status, 204, "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("access-control-allow-headers: authorization"),
        "{text}"
    );
}

#[test]
fn host_must_be_the_listen_address_or_allowed() {
    let f = fixture("[server.http]\nallowed_hosts = [\"mcp.example.com\"]\n");
    let web = Web::start(&f, &[]);
    let port = web.addr.rsplit(':').next().unwrap();
    // DNS rebinding: a name that resolves to us but is not ours.
    let (status, text) = raw_tools_list(&web.addr, &format!("evil.example:{port}"));
    assert_eq!(status, 403, "{text}");
    let (status, text) = raw_tools_list(&web.addr, &web.addr);
    assert_eq!(status, 200, "{text}");
    let (status, text) = raw_tools_list(&web.addr, &format!("localhost:{port}"));
    assert_eq!(status, 200, "{text}");
    let (status, text) = raw_tools_list(&web.addr, "mcp.example.com");
    assert_eq!(status, 200, "{text}");
}

#[test]
fn a_public_address_without_auth_is_refused_at_start() {
    let f = fixture("");
    let out = f.run(&["serve", "--http", "0.0.0.0:0", "mcp-server.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("server.http.auth"), "{err}");
    assert!(err.contains("0.0.0.0:0"), "{err}");

    // In the manifest, `check` reports it at the key.
    f.write(
        "public.toml",
        "[files.docs]\nroot = \"docs\"\n[server.http]\nlisten = \"0.0.0.0:8080\"\n",
    );
    let out = f.run(&["check", "public.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("public.toml:4:10: listening on 0.0.0.0:8080"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_manifest_listen_address_serves_http_unless_stdio_is_asked() {
    let f = fixture("[server.http]\nlisten = \"127.0.0.1:0\"\n");
    let web = Web::start_args(&f, &["serve", "mcp-server.toml"], &[]);
    assert!(
        !web.ok("tools/list", json!({}))["tools"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    drop(web);
    // `--stdio` serves on stdio: EOF on stdin ends it at once.
    let out = f.run(&["serve", "--stdio", "mcp-server.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn http_settings_are_checked() {
    let f = Fixture::new();
    let lines = f.diagnose(
        r#"[server.http]
listen = "8080"
allowed_origins = ["app.example.com"]
allowed_hosts = ["https://x.example"]
auth = "token"
tokens = [""]
"#,
    );
    let text = lines.join("\n");
    assert!(
        text.contains("bad.toml:2:10: `8080` is not a listen address"),
        "{text}"
    );
    assert!(
        text.contains("bad.toml:3:20: `app.example.com` is not an origin"),
        "{text}"
    );
    assert!(
        text.contains("bad.toml:4:18: `https://x.example` is not a host"),
        "{text}"
    );
    assert!(
        text.contains("bad.toml:6:11: token 1 of `tokens` is empty"),
        "{text}"
    );
    let lines = f.diagnose("[server.http]\nlsiten = \"x\"\n");
    assert!(
        lines[0].starts_with("bad.toml:2:1: unknown key `lsiten`"),
        "{lines:?}"
    );

    let lines = f.diagnose("[server.http]\nauth = \"oauth\"\n");
    assert!(
        lines[0].contains("bad.toml:2:8: `auth = \"oauth\"` needs a [server.http.oauth] table"),
        "{lines:?}"
    );
    let lines = f.diagnose("[server.http]\nauth = \"token\"\n");
    assert!(lines[0].contains("needs `tokens"), "{lines:?}");
    let lines = f.diagnose("[server.http]\nauth = \"basic\"\n");
    assert!(lines[0].starts_with("bad.toml:2:8:"), "{lines:?}");
    let lines = f.diagnose(
        "[server.http]\nauth = \"oauth\"\n[server.http.oauth]\nissuer = \"https://a\"\naudience = \"https://m\"\njwks = \"http://example.com/jwks\"\n",
    );
    assert!(lines[0].contains("must be an https URL"), "{lines:?}");
    for n in ["0", "1000001"] {
        let lines = f.diagnose(&format!("[server.http]\nmax_sessions = {n}\n"));
        assert_eq!(
            lines[0],
            format!("bad.toml:2:16: `max_sessions` must be from 1 to 1000000, found {n}"),
            "{lines:?}"
        );
        let lines = f.diagnose(&format!("[server.http]\nmax_connections = {n}\n"));
        assert_eq!(
            lines[0],
            format!("bad.toml:2:19: `max_connections` must be from 1 to 1000000, found {n}"),
            "{lines:?}"
        );
    }
    for d in ["10ms", "2h"] {
        let lines = f.diagnose(&format!("[server.http]\nidle_timeout = \"{d}\"\n"));
        assert_eq!(
            lines[0],
            format!("bad.toml:2:16: `idle_timeout` must be from 100ms to 1h, found \"{d}\""),
            "{lines:?}"
        );
    }
    let lines = f.diagnose("[server.http]\nidle_timeout = \"soon\"\n");
    assert!(lines[0].starts_with("bad.toml:2:16: "), "{lines:?}");
}

#[test]
fn bearer_tokens_from_the_environment() {
    let f = fixture("[server.http]\nauth = \"token\"\ntokens = [\"${WEB_TOKEN}\"]\n");
    let token = "7b0c1d2e3f40516273849aabbccddeeff";
    let web = Web::start(&f, &[("WEB_TOKEN", token)]);
    let r = web.modern("tools/list", json!({}));
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer "));
    let r = web.modern_with(
        "tools/list",
        json!({}),
        &[("authorization", "Bearer not-the-token")],
    );
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_token\"")
    );
    // The same length, one byte off.
    let off = format!("{}0", &token[..token.len() - 1]);
    let auth = format!("Bearer {off}");
    assert_eq!(
        web.modern_with("tools/list", json!({}), &[("authorization", &auth)])
            .status,
        401
    );
    let auth = format!("Bearer {token}");
    let r = web.modern_with("tools/list", json!({}), &[("authorization", &auth)]);
    assert_eq!(r.status, 200, "{}", r.text);
    // Sessions too.
    let s = Legacy::start_with(&web, &[("authorization", &auth)]);
    let listed = s.post(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
        &[("authorization", &auth)],
    );
    assert_eq!(listed.status, 200);
    let denied = s.post(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}),
        &[],
    );
    assert_eq!(denied.status, 401);
    // /healthz needs no token.
    assert_eq!(get(&web.url("/healthz"), &[]).status, 200);
    // The token is never logged.
    assert!(!web.log().contains(token));
    // Without the variable the manifest is invalid.
    let out = f.run(&["check", "mcp-server.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("WEB_TOKEN"), "{}", stderr(&out));
}

/// An Ed25519 signing key generated for the test (by `ring`), its JWK, and tokens signed by hand
/// (base64url header, claims and signature): independent of the server's JWT code.
struct TestKey {
    pair: ring::signature::Ed25519KeyPair,
    kid: String,
    x: String,
}

fn b64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl TestKey {
    fn new(kid: &str) -> TestKey {
        use ring::signature::{Ed25519KeyPair, KeyPair as _};
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).expect("key");
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("key pair");
        let x = b64url(pair.public_key().as_ref());
        TestKey {
            pair,
            kid: kid.into(),
            x,
        }
    }

    fn jwk(&self) -> Value {
        json!({"kty": "OKP", "crv": "Ed25519", "x": self.x, "kid": self.kid, "use": "sig", "alg": "EdDSA"})
    }

    /// A token signed with this key (and named after `kid`).
    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": kid});
        let message = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let signature = self.pair.sign(message.as_bytes());
        format!("{message}.{}", b64url(signature.as_ref()))
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

const ISSUER: &str = "https://auth.example.com";
const AUDIENCE: &str = "https://mcp.example.com/mcp";

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "u1", "exp": now() + 600, "iat": now(), "scope": "openid mcp"})
}

fn write_jwks(f: &Fixture, keys: &[&TestKey]) -> PathBuf {
    let set = json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()});
    f.write("keys/jwks.json", set.to_string())
}

#[test]
fn oauth_tokens_are_checked_against_the_jwks() {
    let first = TestKey::new("k1");
    let f = fixture(&format!(
        "[server.http]\nauth = \"oauth\"\n[server.http.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\njwks = \"keys/jwks.json\"\nscopes = [\"mcp\"]\n"
    ));
    write_jwks(&f, &[&first]);
    let web = Web::start(&f, &[]);
    let call = |token: &str| {
        let auth = format!("Bearer {token}");
        web.modern_with("tools/list", json!({}), &[("authorization", &auth)])
    };
    let refused = |r: Reply, why: &str| {
        assert_eq!(r.status, 401, "{why}: {}", r.text);
        let challenge = r.header("www-authenticate").unwrap().to_owned();
        assert!(
            challenge.contains(
                "resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""
            ),
            "{challenge}"
        );
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
        assert!(r.text.contains(why), "{why}: {}", r.text);
    };

    // No token: 401 pointing at the metadata.
    let r = web.modern("tools/list", json!({}));
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("resource_metadata=")
    );
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("scope=\"mcp\"")
    );

    let good = first.sign(&claims());
    assert_eq!(call(&good).status, 200);

    let mut c = claims();
    c["aud"] = json!("https://other.example.com");
    refused(call(&first.sign(&c)), "another audience");
    let mut c = claims();
    c["iss"] = json!("https://evil.example.com");
    refused(call(&first.sign(&c)), "another issuer");
    let mut c = claims();
    c["exp"] = json!(now() - 3600);
    refused(call(&first.sign(&c)), "expired");
    let mut c = claims();
    c["nbf"] = json!(now() + 3600);
    refused(call(&first.sign(&c)), "not valid yet");
    let mut c = claims();
    c.as_object_mut().unwrap().remove("exp");
    refused(call(&first.sign(&c)), "`exp`");
    // Signed by another key that claims to be k1.
    let forger = TestKey::new("k1");
    refused(call(&forger.sign(&claims())), "signature");
    // Tampered with after signing.
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    parts[1].insert(2, 'A');
    refused(call(&parts.join(".")), "");
    refused(call("not.a.jwt"), "");
    // No `mcp` scope: 403 insufficient_scope.
    let mut c = claims();
    c["scope"] = json!("openid");
    let r = call(&first.sign(&c));
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("error=\"insufficient_scope\"")
    );
    // Scopes as an array (`scp`) count too.
    let mut c = claims();
    c.as_object_mut().unwrap().remove("scope");
    c["scp"] = json!(["mcp"]);
    assert_eq!(call(&first.sign(&c)).status, 200);

    // The keys rotate: a token with a new kid makes the server read the JWKS again.
    let second = TestKey::new("k2");
    refused(call(&second.sign(&claims())), "no signing key");
    write_jwks(&f, &[&first, &second]);
    // The refetch for an unknown kid is rate-limited; a fresh server reads the new file at once.
    drop(web);
    let web = Web::start(&f, &[]);
    let auth = format!("Bearer {}", second.sign(&claims()));
    assert_eq!(
        web.modern_with("tools/list", json!({}), &[("authorization", &auth)])
            .status,
        200
    );

    // The RFC 9728 metadata, at the root and with the resource's path.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = get(&web.url(path), &[]);
        assert_eq!(r.status, 200, "{path}");
        let doc: Value = serde_json::from_str(&r.text).unwrap();
        assert_eq!(doc["resource"], AUDIENCE);
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(doc["scopes_supported"], json!(["mcp"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }
}

#[test]
fn an_unknown_kid_fetches_the_keys_again() {
    let first = TestKey::new("k1");
    let f = fixture(&format!(
        "[server.http]\nauth = \"oauth\"\n[server.http.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\njwks = \"keys/jwks.json\"\n"
    ));
    write_jwks(&f, &[&first]);
    let web = Web::start(&f, &[]);
    let call = |token: &str| {
        let auth = format!("Bearer {token}");
        web.modern_with("tools/list", json!({}), &[("authorization", &auth)])
            .status
    };
    assert_eq!(call(&first.sign(&claims())), 200);
    let second = TestKey::new("k2");
    write_jwks(&f, &[&first, &second]);
    assert_eq!(call(&second.sign(&claims())), 200);
    // The metadata of a server without `scopes`.
    let doc: Value =
        serde_json::from_str(&get(&web.url("/.well-known/oauth-protected-resource"), &[]).text)
            .unwrap();
    assert_eq!(doc["scopes_supported"], json!([]));
}

#[test]
fn metadata_is_not_served_without_oauth() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    assert_eq!(
        get(&web.url("/.well-known/oauth-protected-resource"), &[]).status,
        404
    );
}

#[test]
fn bodies_over_four_mebibytes_are_413() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    // Declared too large: refused before it is read.
    let (status, _) = raw(
        &web.addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            web.addr,
            5 * 1024 * 1024
        ),
    );
    assert_eq!(status, 413);
    // Chunked, with no length: cut while it streams.
    let mut s = TcpStream::connect(&web.addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        web.addr
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut w = s.try_clone().unwrap();
    // Written from a thread while the answer is read here: it comes before the body ends.
    let writer = std::thread::spawn(move || {
        let chunk = vec![b' '; 64 * 1024];
        for _ in 0..80 {
            if w.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .and_then(|_| w.write_all(&chunk))
                .and_then(|_| w.write_all(b"\r\n"))
                .is_err()
            {
                break;
            }
        }
    });
    let mut out = [0u8; 64];
    let n = s.read(&mut out).unwrap_or(0);
    let out = String::from_utf8_lossy(&out[..n]);
    assert!(out.starts_with("HTTP/1.1 413"), "{out}");
    drop(s);
    let _ = writer.join();
    // A body under the cap is read (and the 3 MiB URI is refused for its length).
    let mut s = Legacy::start(&web);
    let uri = format!("file:///{}", "x".repeat(3 * 1024 * 1024));
    let r = s.call("resources/read", json!({"uri": uri}));
    assert_eq!(r["error"]["code"], -32602, "{:.300}", r.to_string());
}

#[test]
fn many_large_bodies_at_once_wait_for_room_instead_of_growing_the_server() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let f = fixture("");
    let web = Web::start(&f, &[]);
    web.ok("tools/list", json!({}));
    let before = web.rss();
    // 48 clients each send all but the last byte of a 4 MiB request (192 MiB in all): the
    // server keeps at most its 32 MiB budget of them (and what its HTTP library has read ahead
    // on a connection) and leaves the rest unread.
    const CLIENTS: usize = 48;
    const SIZE: usize = 4 * 1024 * 1024;
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let mut body = vec![b' '; SIZE - request.len()];
    body.extend_from_slice(request.as_bytes());
    let body = Arc::new(body);
    let sent: Arc<Vec<AtomicUsize>> = Arc::new((0..CLIENTS).map(|_| AtomicUsize::new(0)).collect());
    let mut sockets = Vec::new();
    let mut go = Vec::new();
    let mut writers = Vec::new();
    for i in 0..CLIENTS {
        let s = TcpStream::connect(&web.addr).expect("connect");
        s.set_read_timeout(Some(TIMEOUT)).expect("read timeout");
        let mut w = s.try_clone().expect("clone");
        sockets.push(s);
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nContent-Length: {SIZE}\r\n\r\n",
            web.addr
        );
        let (finish, finishing) = channel::<bool>();
        go.push(finish);
        let (sent, body) = (sent.clone(), body.clone());
        writers.push(std::thread::spawn(move || -> Option<String> {
            w.write_all(head.as_bytes()).ok()?;
            for piece in body[..SIZE - 1].chunks(64 * 1024) {
                w.write_all(piece).ok()?;
                sent[i].fetch_add(piece.len(), Ordering::SeqCst);
            }
            if !finishing.recv().ok()? {
                return None;
            }
            w.write_all(&body[SIZE - 1..]).ok()?;
            let mut status = String::new();
            BufReader::new(w).read_line(&mut status).ok()?;
            Some(status)
        }));
    }
    // Until no client has sent anything for half a second (what the server reads, it has read).
    let total = || sent.iter().map(|n| n.load(Ordering::SeqCst)).sum::<usize>();
    let mut last = (total(), Instant::now());
    while last.1.elapsed() < Duration::from_millis(500) && last.0 < CLIENTS * (SIZE - 1) {
        std::thread::sleep(Duration::from_millis(20));
        let now = total();
        if now != last.0 {
            last = (now, Instant::now());
        }
    }
    let grown = grown(before, web.rss());
    assert!(
        grown < 128 << 20,
        "{CLIENTS} bodies of 4 MiB grew the server by {} MiB",
        grown >> 20
    );
    // Half the clients go away (giving their share back), the other half finish: every one of
    // those is read and answered in turn (no body half read waits for another).
    for (i, (s, finish)) in sockets.iter().zip(&go).enumerate() {
        if i % 2 == 0 {
            let _ = finish.send(true);
        } else {
            let _ = finish.send(false);
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
    for (i, w) in writers.into_iter().enumerate() {
        let status = w.join().expect("writer");
        if i % 2 == 0 {
            let status = status.unwrap_or_else(|| panic!("client {i} had no answer"));
            assert!(status.starts_with("HTTP/1.1 200"), "client {i}: {status}");
        }
    }
    web.ok("tools/list", json!({}));
}

#[test]
fn each_session_has_at_most_256_requests_in_flight() {
    let f = fixture("");
    // All 256 calls must run at once to be in flight together.
    // (and one address may hold 256 connections: the limit per address is not what is tested).
    f.manifest(&format!(
        "{}\n[server.http]\nmax_connections_per_client = 300\n",
        manifest().replacen("name = \"web\"", "name = \"web\"\nmax_processes = 256", 1)
    ));
    let web = Web::start(&f, &[]);
    let s = Legacy::start(&web);
    let dir = f.mkdir("pids");
    let threads: Vec<_> = (0..256)
        .map(|i| {
            let url = web.url("/mcp");
            let id = s.id.clone();
            let pidfile = dir.join(format!("{i}"));
            std::thread::spawn(move || {
                post(
                    &url,
                    &json!({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": {
                        "name": "slow", "arguments": {"pidfile": pidfile, "secs": "30"}}}),
                    &[
                        ("mcp-session-id", &id),
                        ("mcp-protocol-version", "2025-11-25"),
                    ],
                )
            })
        })
        .collect();
    // Every call runs (so all are in flight), then one more is refused.
    for i in 0..256 {
        wait_pid(&dir.join(format!("{i}")));
    }
    let r = s.post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        &[],
    );
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.header("retry-after"), Some("1"));
    // Another session is not affected.
    let mut other = Legacy::start(&web);
    other.ok("tools/list", json!({}));
    // Ending the session kills its 256 processes and ends the calls.
    assert_eq!(s.delete(), 204);
    for i in 0..256 {
        let pid = wait_pid(&dir.join(format!("{i}")));
        wait_gone(pid);
    }
    for t in threads {
        let _ = t.join();
    }
}

/// One `initialize` on `agent`'s connection: the new session's id.
fn initialize_on(agent: &ureq::Agent, url: &str) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "it", "version": "1"}}});
    reply(
        agent
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .send(body.to_string().as_bytes())
            .expect("POST initialize"),
    )
}

fn ping_status(s: &Legacy<'_>) -> u16 {
    s.post(&json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}), &[])
        .status
}

#[test]
fn beyond_max_sessions_the_session_idle_longest_ends() {
    let f = fixture("[server.http]\nmax_sessions = 3\n");
    let web = Web::start(&f, &[]);
    // `a` listens on its GET stream: busy, so never ended to make room.
    let a = Legacy::start(&web);
    let _a_stream = a.notifications();
    let b = Legacy::start(&web);
    let c = Legacy::start(&web);
    assert_eq!(ping_status(&b), 200);
    // A fourth session ends the one used longest ago among those not busy: `c` (not `a`, the
    // oldest, which listens; not `b`, used after `c`).
    let d = Legacy::start(&web);
    assert_eq!(ping_status(&c), 404, "the session idle longest ended");
    web.wait_log("idle sessions ended to make room for new ones: 3 are kept at most");
    let e = Legacy::start(&web);
    assert_eq!(ping_status(&b), 404, "then the next idle longest");
    assert_eq!(ping_status(&a), 200, "a listening session stays");
    // Every session busy (`a`, `d` and `e` listen): a new one is refused, nothing ends.
    let _d_stream = d.notifications();
    let _e_stream = e.notifications();
    let r = initialize_on(&agent(), &web.url("/mcp"));
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.text.contains("max_sessions"), "{}", r.text);
    for s in [&a, &d, &e] {
        assert_eq!(ping_status(s), 200);
    }
    // A session that ends makes room.
    assert_eq!(d.delete(), 204);
    let g = Legacy::start(&web);
    assert_eq!(ping_status(&g), 200);
}

#[test]
fn beyond_max_sessions_the_oldest_listen_stream_ends() {
    let f = fixture("[server.http]\nmax_sessions = 2\n");
    let web = Web::start(&f, &[]);
    let uri = f.uri("docs/a.md");
    let subscriptions = json!({"resourceSubscriptions": [uri]});
    let first = listen(&web, subscriptions.clone());
    let second = listen(&web, subscriptions.clone());
    let third = listen(&web, subscriptions);
    // The oldest ends with its result (as when the server stops); the other two still hear.
    let end = first.recv_timeout(TIMEOUT).expect("the oldest stream ends");
    assert_eq!(end["id"], 7, "{end}");
    assert!(end.get("result").is_some(), "{end}");
    web.wait_log(
        "1 subscriptions/listen streams ended to make room for new ones: 2 are kept open at most",
    );
    f.write("docs/a.md", "# A, edited\n");
    for stream in [&second, &third] {
        let updated = next_notification(stream, "notifications/resources/updated");
        assert_eq!(updated["params"]["uri"], json!(uri));
    }
}

#[test]
fn a_client_that_never_ends_its_sessions_does_not_grow_the_server() {
    // Each session costs rmcp some 60–100 KiB: 1 500 of them kept would be about 100 MiB.
    let f = fixture("[server.http]\nmax_sessions = 16\n");
    let web = Web::start(&f, &[]);
    let url = web.url("/mcp");
    let agent = agent();
    let mut ids = Vec::new();
    for _ in 0..100 {
        let r = initialize_on(&agent, &url);
        assert_eq!(r.status, 200, "{}", r.text);
        ids.push(r.header("mcp-session-id").expect("a session id").to_owned());
    }
    let before = web.rss();
    for _ in 0..1_500 {
        let r = initialize_on(&agent, &url);
        assert_eq!(r.status, 200, "{}", r.text);
        ids.push(r.header("mcp-session-id").expect("a session id").to_owned());
    }
    let grown = grown(before, web.rss());
    assert!(
        grown < 16 << 20,
        "1 500 more sessions grew the server by {} MiB",
        grown >> 20
    );
    let answers = |id: &str| {
        let s = Legacy {
            web: &web,
            path: "/mcp".to_owned(),
            id: id.to_owned(),
            next: 1,
        };
        ping_status(&s)
    };
    assert_eq!(answers(&ids[0]), 404);
    assert_eq!(answers(&ids[ids.len() - 17]), 404);
    assert_eq!(answers(&ids[ids.len() - 1]), 200);
}

// Unix only: SIGTERM (see `Web::terminate`).
#[cfg(unix)]
#[test]
fn sigterm_lets_calls_in_flight_finish_then_exits() {
    let f = fixture("");
    let mut web = Web::start(&f, &[]);
    let pidfile = f.path("slow.pid");
    let url = web.url("/mcp");
    let pf = pidfile.clone();
    let call = std::thread::spawn(move || {
        post(
            &url,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "slow", "arguments": {"pidfile": pf, "secs": "1"},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}}}),
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "slow"),
            ],
        )
    });
    let listening = listen(&web, json!({"resourcesListChanged": true}));
    wait_pid(&pidfile);
    web.terminate();
    // New connections are answered 503 at once (not reset, not left waiting)…
    std::thread::sleep(Duration::from_millis(200));
    if let Ok(mut s) = TcpStream::connect(&web.addr) {
        s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
        let _ =
            s.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", web.addr).as_bytes());
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    }
    // …the listen stream ends with its result…
    let end = listening
        .recv_timeout(TIMEOUT)
        .expect("the listen stream ends");
    assert_eq!(end["id"], 7, "{end}");
    // …the call in flight finishes with its real answer, and the server exits 0.
    let r = call.join().unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.message(1)["result"]["isError"], false, "{}", r.text);
    let (code, _) = web.wait_exit(TIMEOUT);
    assert_eq!(code, Some(0), "{}", web.log());
}

// Unix only: SIGTERM (see `Web::terminate`).
#[cfg(unix)]
#[test]
fn sigterm_with_nothing_in_flight_still_ends_listen_streams_with_their_result() {
    let f = fixture("");
    let mut web = Web::start(&f, &[]);
    let listening = listen(&web, json!({"resourcesListChanged": true}));
    web.terminate();
    let end = listening
        .recv_timeout(TIMEOUT)
        .expect("the listen stream ends with its result");
    assert_eq!(end["id"], 7, "{end}");
    assert!(end.get("result").is_some(), "{end}");
    let (code, _) = web.wait_exit(TIMEOUT);
    assert_eq!(code, Some(0), "{}", web.log());
}

// Unix only: SIGTERM (see `Web::terminate`).
#[cfg(unix)]
#[test]
fn sigterm_kills_what_is_still_running_after_ten_seconds() {
    let f = fixture("");
    let mut web = Web::start(&f, &[]);
    let pidfile = f.path("slow.pid");
    let url = web.url("/mcp");
    let pf = pidfile.clone();
    let call = std::thread::spawn(move || {
        post(
            &url,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "slow", "arguments": {"pidfile": pf, "secs": "300"},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}}}),
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "slow"),
            ],
        )
    });
    let pid = wait_pid(&pidfile);
    let start = Instant::now();
    web.terminate();
    let (code, _) = web.wait_exit(Duration::from_secs(20));
    let took = start.elapsed();
    assert_eq!(code, Some(0), "{}", web.log());
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(14),
        "{took:?}"
    );
    assert!(!pid_alive(pid), "the tool outlived the server");
    let _ = call.join();
}

#[test]
fn a_client_that_goes_away_stops_its_call() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    // 2026-07-28: closing the connection is cancelling the request.
    let pidfile = f.path("gone.pid");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "slow", "arguments": {"pidfile": pidfile, "secs": "300"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let mut s = TcpStream::connect(&web.addr).unwrap();
    s.write_all(
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: slow\r\nContent-Length: {}\r\n\r\n{body}",
            web.addr,
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    let pid = wait_pid(&pidfile);
    drop(s);
    wait_gone(pid);

    // A handshake-era session that is deleted: its calls' processes go at once.
    let s = Legacy::start(&web);
    let pidfile = f.path("session.pid");
    let url = web.url("/mcp");
    let id = s.id.clone();
    let pf = pidfile.clone();
    let call = std::thread::spawn(move || {
        post(
            &url,
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "slow", "arguments": {"pidfile": pf, "secs": "300"}}}),
            &[
                ("mcp-session-id", &id),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        )
    });
    let pid = wait_pid(&pidfile);
    let start = Instant::now();
    assert_eq!(s.delete(), 204);
    wait_gone(pid);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    let _ = call.join();
    // The server is still serving.
    assert_eq!(web.modern("tools/list", json!({})).status, 200);
}

/// A JWKS served over HTTP on 127.0.0.1 (the `jwks` URL form): it answers every GET with the
/// current document and counts the fetches.
struct JwksServer {
    url: String,
    doc: Arc<Mutex<String>>,
    hits: Arc<std::sync::atomic::AtomicUsize>,
}

impl JwksServer {
    fn start(keys: &[&TestKey]) -> JwksServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!(
            "http://{}/keys/jwks.json",
            listener.local_addr().expect("addr")
        );
        let doc = Arc::new(Mutex::new(String::new()));
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (d, h) = (doc.clone(), hits.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { break };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read_exact(&mut byte).is_ok() {
                    head.push(byte[0]);
                }
                h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let body = d.lock().expect("doc").clone();
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        let s = JwksServer { url, doc, hits };
        s.set(keys);
        s
    }

    fn set(&self, keys: &[&TestKey]) {
        let set = json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()});
        *self.doc.lock().expect("doc") = set.to_string();
    }

    fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[test]
fn a_jwks_url_is_cached_and_fetched_again_for_a_new_kid_at_most_every_ten_seconds() {
    let first = TestKey::new("k1");
    let jwks = JwksServer::start(&[&first]);
    let f = fixture(&format!(
        "[server.http]\nauth = \"oauth\"\n[server.http.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\njwks = \"{}\"\n",
        jwks.url
    ));
    let web = Web::start(&f, &[]);
    let status = |key: &TestKey| {
        let auth = format!("Bearer {}", key.sign(&claims()));
        web.modern_with("tools/list", json!({}), &[("authorization", &auth)])
            .status
    };
    // Fetched once at start, then served from the cache.
    assert_eq!(jwks.hits(), 1);
    assert_eq!(status(&first), 200);
    assert_eq!(status(&first), 200);
    assert_eq!(jwks.hits(), 1);
    // A new key: the token's unknown kid fetches the set again.
    let second = TestKey::new("k2");
    jwks.set(&[&first, &second]);
    assert_eq!(status(&second), 200);
    assert_eq!(jwks.hits(), 2);
    // Made-up kids cannot make the server fetch in a loop.
    let stranger = TestKey::new("k3");
    assert_eq!(status(&stranger), 401);
    assert_eq!(status(&stranger), 401);
    assert_eq!(jwks.hits(), 2);
}

/// A connection whose receive buffer is as small as the kernel allows: a client that never
/// reads takes almost nothing of an answer.
fn tiny_window(addr: &str) -> TcpStream {
    hostile::connect_from("127.0.0.1", addr, Some(4096))
}

/// A raw 2026-07-28 `resources/read` of `uri`.
fn raw_read(addr: &str, uri: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {
        "uri": uri, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: resources/read\r\nMcp-Name: {uri}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn clients_that_never_read_their_answers_do_not_grow_the_server() {
    let f = fixture("[server.http]\nidle_timeout = \"1s\"\n");
    // A 4 MiB file: each answer weighs a little more.
    let big = "0123456789abcde\n".repeat(256 * 1024);
    f.write("docs/big.txt", &big);
    let uri = f.uri("docs/big.txt");
    let web = Web::start(&f, &[]);
    web.ok("tools/list", json!({}));
    let before = web.rss();
    // 32 clients ask for it and never read (32 answers held would be some 140 MiB).
    let request = raw_read(&web.addr, &uri);
    let stalled: Vec<TcpStream> = (0..32)
        .map(|_| {
            let mut s = tiny_window(&web.addr);
            s.write_all(request.as_bytes()).expect("write");
            s
        })
        .collect();
    // A client that reads waits its turn behind them: the answers held at once are bounded,
    // and each stalled client is dropped after `idle_timeout` without taking anything, which
    // gives its room back.
    let r = web.ok("resources/read", json!({"uri": uri}));
    assert_eq!(
        r["contents"][0]["text"].as_str().map(str::len),
        Some(big.len())
    );
    let peak =
        cfg!(target_os = "linux").then(|| crate::support::proc_memory(web.child.id(), "VmHWM"));
    let grown_at_peak = grown(before, peak);
    assert!(
        grown_at_peak < 96 << 20,
        "32 answers never read grew the server by {} MiB at their peak",
        grown_at_peak >> 20
    );
    // Every stalled client is cut off, said once.
    web.wait_log_count("resources/read session=none status=200", stalled.len() + 1);
    web.wait_log_count("(not all sent)", stalled.len());
    web.wait_log("connections closed: their clients took none of an answer for 1s");
    drop(stalled);
}

#[test]
fn clients_that_never_read_are_cut_off_within_a_second_while_other_answers_wait() {
    // An hour of `idle_timeout`: only the squeeze can free the room the stalled answers hold.
    let f = fixture("[server.http]\nidle_timeout = \"1h\"\n");
    let big = "0123456789abcde\n".repeat(256 * 1024);
    f.write("docs/big.txt", &big);
    let uri = f.uri("docs/big.txt");
    let web = Web::start(&f, &[]);
    // 24 clients ask for the 4 MiB file and never read: three budgets' worth.
    let request = raw_read(&web.addr, &uri);
    let stalled: Vec<TcpStream> = (0..24)
        .map(|_| {
            let mut s = tiny_window(&web.addr);
            s.write_all(request.as_bytes()).expect("write");
            s
        })
        .collect();
    // A client that reads has its answer once they are cut off, each after a second of
    // taking nothing while others wait (without the squeeze: after an hour).
    let r = web.ok("resources/read", json!({"uri": uri}));
    assert_eq!(
        r["contents"][0]["text"].as_str().map(str::len),
        Some(big.len())
    );
    web.wait_log("while other answers waited for room");
    assert!(web.log().contains("(not all sent)"), "{}", web.log());
    drop(stalled);
}

/// Reads one HTTP answer's status line on `s` (the rest is left unread).
fn status_line(s: &mut TcpStream) -> std::io::Result<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        if s.read(&mut byte)? == 0 {
            break;
        }
        line.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&line).trim().to_owned())
}

#[test]
fn beyond_max_connections_new_connections_wait_until_one_closes() {
    let f = fixture("[server.http]\nmax_connections = 2\n");
    let web = Web::start(&f, &[]);
    let healthz = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", web.addr);
    let open = || {
        let mut s = TcpStream::connect(&web.addr).expect("connect");
        s.write_all(healthz.as_bytes()).expect("write");
        s
    };
    let mut first = open();
    let mut second = open();
    for s in [&mut first, &mut second] {
        s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
        assert_eq!(status_line(s).expect("an answer"), "HTTP/1.1 200 OK");
    }
    // A third is not served while both stay open (kept alive, idle)…
    let mut third = open();
    third
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let early = status_line(&mut third);
    assert!(early.is_err(), "a third connection was served: {early:?}");
    web.wait_log("2 connections open, the most served at once");
    // …and is as soon as one closes.
    drop(first);
    third.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    assert_eq!(
        status_line(&mut third).expect("an answer"),
        "HTTP/1.1 200 OK"
    );
}

#[test]
fn idle_connections_and_slow_request_heads_are_closed_but_long_requests_are_not() {
    let f = fixture("[server.http]\nidle_timeout = \"300ms\"\n");
    let web = Web::start(&f, &[]);
    let closed = |mut s: TcpStream| {
        s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
        let mut got = Vec::new();
        let r = s.read_to_end(&mut got);
        assert!(r.is_ok(), "not closed: {r:?}");
        String::from_utf8_lossy(&got).into_owned()
    };
    // A connection that never sends anything.
    closed(TcpStream::connect(&web.addr).expect("connect"));
    // A kept-alive connection after its answer.
    let mut used = TcpStream::connect(&web.addr).expect("connect");
    let healthz = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", web.addr);
    used.write_all(healthz.as_bytes()).expect("write");
    assert!(closed(used).starts_with("HTTP/1.1 200 OK"));
    // A request head that never ends.
    let mut slow = TcpStream::connect(&web.addr).expect("connect");
    slow.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n", web.addr).as_bytes())
        .expect("write");
    assert!(!closed(slow).contains("200 OK"));
    // A call that runs longer than the idle timeout has its answer, and a stream that carries
    // nothing for longer stays open.
    let uri = f.uri("docs/a.md");
    let listening = listen(&web, json!({"resourceSubscriptions": [uri]}));
    let pidfile = f.path("slow.pid");
    let r = web.ok(
        "tools/call",
        json!({"name": "slow", "arguments": {"pidfile": pidfile, "secs": "1"}}),
    );
    assert_eq!(r["isError"], false, "{r}");
    f.write("docs/a.md", "# A, edited\n");
    let updated = next_notification(&listening, "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], json!(uri));
}

#[test]
fn a_request_head_over_64_kib_is_refused() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    let head = format!(
        "GET /healthz HTTP/1.1\r\nHost: {}\r\nX-Padding: {}\r\n\r\n",
        web.addr,
        "a".repeat(100 * 1024)
    );
    let mut s = TcpStream::connect(&web.addr).expect("connect");
    s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    // The server may close before it has read all of it: a failed write or a reset is a refusal.
    let _ = s.write_all(head.as_bytes());
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let got = String::from_utf8_lossy(&got);
    assert!(
        got.is_empty() || got.starts_with("HTTP/1.1 431"),
        "a 100 KiB head was served: {got}"
    );
    let (status, _) = raw(
        &web.addr,
        &format!(
            "GET /healthz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            web.addr
        ),
    );
    assert_eq!(status, 200);
}

// Unix only: descriptor limits (`RLIMIT_NOFILE`); Windows has no such limit on sockets.
#[cfg(unix)]
#[test]
fn a_low_descriptor_limit_lowers_max_connections_and_says_so() {
    use std::os::unix::process::CommandExt;
    let f = fixture("");
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--http", "127.0.0.1:0", "mcp-server.toml"])
        .current_dir(f.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; it runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 300,
                rlim_max: 300,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let mut child = cmd.spawn().expect("spawn");
    let err = BufReader::new(child.stderr.take().expect("stderr"));
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in err.lines().map_while(Result::ok) {
            if line.contains("connections at once") {
                let _ = tx.send(line);
            }
        }
    });
    let said = rx.recv_timeout(TIMEOUT);
    let _ = child.kill();
    let _ = child.wait();
    let said = said.expect("a line about the connection cap");
    assert!(
        said.contains("at most 44 connections at once, not 1024")
            && said.contains("the descriptor limit is 300"),
        "{said}"
    );
}
