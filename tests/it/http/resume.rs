//! Handshake-era streams that lose nothing: event ids unique in a session, a dropped POST or GET
//! stream resumed with `Last-Event-ID` (exactly the events after it, then live), a fresh GET
//! from now, the answer to an id no longer held; and the JSON-RPC errors and batches of the
//! transport spec.

use super::*;

/// One SSE event as it came.
#[derive(Debug, Clone)]
struct Event {
    id: Option<String>,
    retry: Option<u64>,
    /// Its JSON-RPC message (none for an empty event).
    message: Option<Value>,
}

/// An open SSE response, read event by event; dropping it drops the connection (a cut).
struct Sse {
    lines: std::io::Lines<BufReader<ureq::BodyReader<'static>>>,
}

impl Sse {
    fn open(r: ureq::http::Response<ureq::Body>) -> Sse {
        assert_eq!(r.status().as_u16(), 200, "stream refused");
        assert!(
            r.headers()["content-type"]
                .to_str()
                .expect("ASCII")
                .starts_with("text/event-stream")
        );
        Sse {
            lines: BufReader::new(r.into_body().into_reader()).lines(),
        }
    }

    /// The next event, or `None` when the stream ended.
    fn next(&mut self) -> Option<Event> {
        let mut e = Event {
            id: None,
            retry: None,
            message: None,
        };
        let mut any = false;
        loop {
            let line = match self.lines.next() {
                Some(Ok(l)) => l,
                _ => return None,
            };
            if line.is_empty() {
                if any {
                    return Some(e);
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            any = true;
            let (field, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => e.id = Some(value.to_owned()),
                "retry" => e.retry = value.parse().ok(),
                "data" if !value.is_empty() => {
                    e.message = Some(serde_json::from_str(value).expect("JSON data"))
                }
                _ => {}
            }
        }
    }

    /// Events until (and with) the one `stop` says is the last; the stream may go on.
    fn until(&mut self, mut stop: impl FnMut(&Event) -> bool) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(e) = self.next() {
            let last = stop(&e);
            out.push(e);
            if last {
                return out;
            }
        }
        panic!("the stream ended before the event looked for: {out:?}");
    }

    /// Every event to the end of the stream.
    fn rest(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.next()).collect()
    }
}

/// POSTs `body` in session `s` and opens its SSE answer.
fn post_stream(s: &Legacy<'_>, body: &Value) -> Sse {
    let r = agent()
        .post(&s.web.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &s.id)
        .header("mcp-protocol-version", "2025-11-25")
        .send(body.to_string().as_bytes())
        .expect("POST");
    Sse::open(r)
}

/// A GET of session `s`, resuming from `last` when given: the response.
fn get_stream(s: &Legacy<'_>, last: Option<&str>) -> ureq::http::Response<ureq::Body> {
    let mut req = agent()
        .get(&s.web.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &s.id)
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(last) = last {
        req = req.header("last-event-id", last);
    }
    req.call().expect("GET")
}

fn is_answer(e: &Event, id: i64) -> bool {
    e.message
        .as_ref()
        .is_some_and(|m| m["id"] == json!(id) && m.get("method").is_none())
}

fn progress_of(events: &[Event]) -> Vec<f64> {
    events
        .iter()
        .filter_map(|e| e.message.as_ref())
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().expect("a number"))
        .collect()
}

/// A manifest whose tool reports progress (a line of stderr every 0.3 s, `n` times), then says
/// `done`: the test helper program, the same on every platform.
fn progress_manifest() -> String {
    r#"
[tools.steps]
description = "reports progress, then says done"
command = ["{helper}", "steps", "{n}", "300"]
params.n = { type = "string" }
"#
    .replace("{helper}", &crate::support::helper_path())
}

fn steps(id: i64, n: u32) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "steps", "arguments": {"n": n.to_string()}, "_meta": {"progressToken": id}}})
}

#[test]
fn a_dropped_post_stream_resumes_with_exactly_the_events_after_its_last_id() {
    let f = fixture(&progress_manifest());
    let web = Web::start(&f, &[]);
    let s = Legacy::start(&web);
    // The answer's stream: a priming event (an id, the retry hint, no data) first.
    let mut post = post_stream(&s, &steps(7, 8));
    let first = post.until(|e| {
        e.message
            .as_ref()
            .is_some_and(|m| m["method"] == "notifications/progress")
    });
    assert!(
        first[0].message.is_none() && first[0].id.is_some(),
        "{first:?}"
    );
    assert_eq!(first[0].retry, Some(1000));
    let last = first.last().unwrap().id.clone().expect("an id");
    // The connection drops; the call goes on (the answer waits).
    drop(post);
    std::thread::sleep(Duration::from_millis(800));
    let mut resumed = Sse::open(get_stream(&s, Some(&last)));
    let rest = resumed.rest();
    // Exactly what came after `last`: no event twice, the answer last, then the end.
    assert!(is_answer(rest.last().unwrap(), 7), "{rest:?}");
    assert_eq!(
        text_of(&rest.last().unwrap().message.as_ref().unwrap()["result"]),
        "done\n"
    );
    let before = progress_of(&first);
    let after = progress_of(&rest);
    assert!(
        after.iter().all(|p| !before.contains(p)),
        "{before:?} {after:?}"
    );
    let all: Vec<f64> = before.iter().chain(&after).copied().collect();
    assert!(all.windows(2).all(|w| w[0] < w[1]), "{all:?}");
    assert!(
        all.windows(2).all(|w| w[1] - w[0] < 0.9),
        "a progress report is missing: {all:?}"
    );
    // Ids: unique in the session, of this stream, growing.
    let ids: Vec<&str> = first
        .iter()
        .chain(&rest)
        .filter_map(|e| e.id.as_deref())
        .collect();
    let stream = last.split('.').next().unwrap();
    let numbers: Vec<u64> = ids
        .iter()
        .map(|id| {
            let (s, n) = id.split_once('.').unwrap();
            assert_eq!(s, stream, "{ids:?}");
            n.parse().unwrap()
        })
        .collect();
    // The resumed stream names where it resumed from first; then every event is new.
    assert_eq!(rest[0].id.as_deref(), Some(last.as_str()));
    assert!(rest[0].message.is_none());
    let fresh = &numbers[first.len()..];
    assert!(
        fresh.windows(2).all(|w| w[0] < w[1]),
        "ids do not grow: {ids:?}"
    );
    // Resuming again from the same id gets the same events again (they are held).
    let again = Sse::open(get_stream(&s, Some(&last))).rest();
    assert_eq!(progress_of(&again), after);
    assert!(is_answer(again.last().unwrap(), 7));
    // Another call's stream has other ids.
    let mut other = post_stream(&s, &steps(8, 1));
    let other_ids: Vec<String> = other.rest().into_iter().filter_map(|e| e.id).collect();
    assert!(other_ids.iter().all(|id| !ids.contains(&id.as_str())));
}

#[test]
fn a_fresh_get_starts_from_now_and_a_dropped_get_resumes() {
    let f = fixture("");
    f.write("docs/b.md", "# B\n");
    let web = Web::start(&f, &[]);
    let mut s = Legacy::start(&web);
    let (a, b) = (f.uri("docs/a.md"), f.uri("docs/b.md"));
    s.ok("resources/subscribe", json!({"uri": a}));
    s.ok("resources/subscribe", json!({"uri": b}));
    let updated = |e: &Event| {
        e.message
            .as_ref()
            .is_some_and(|m| m["method"] == "notifications/resources/updated")
    };
    let mut get = Sse::open(get_stream(&s, None));
    let marker = get.next().expect("the first event");
    assert!(
        marker.message.is_none() && marker.id.is_some(),
        "{marker:?}"
    );
    f.write("docs/a.md", "# A, edited\n");
    let seen = get.until(updated);
    let last = seen.last().unwrap().id.clone().unwrap();
    drop(get);
    // A fresh GET carries nothing of before: its first event marks now.
    let mut fresh = Sse::open(get_stream(&s, None));
    let mark = fresh.next().unwrap();
    assert!(mark.message.is_none());
    drop(fresh);
    // While no stream is open, b changes; resuming from the last event seen brings exactly that.
    f.write("docs/b.md", "# B, edited\n");
    std::thread::sleep(Duration::from_millis(1200));
    let mut resumed = Sse::open(get_stream(&s, Some(&last)));
    let got = resumed.until(updated);
    let uris: Vec<&Value> = got
        .iter()
        .filter_map(|e| e.message.as_ref())
        .map(|m| &m["params"]["uri"])
        .collect();
    assert_eq!(uris, vec![&json!(b)], "{got:?}");
    // And it goes on live.
    f.write("docs/a.md", "# A, again\n");
    let live = resumed.until(updated);
    assert_eq!(
        live.last().unwrap().message.as_ref().unwrap()["params"]["uri"],
        json!(a)
    );
    // Resuming from the fresh GET's mark works too (nothing was sent there since but b, a).
    let from_mark = Sse::open(get_stream(&s, mark.id.as_deref())).until(updated);
    assert_eq!(
        from_mark.last().unwrap().message.as_ref().unwrap()["params"]["uri"],
        json!(b)
    );
}

#[test]
fn an_event_id_no_longer_held_is_told_not_met_with_an_empty_stream() {
    let f = fixture(&format!(
        "{}\n[server.http]\nresume_window = \"1s\"\n",
        progress_manifest()
    ));
    let web = Web::start(&f, &[]);
    let s = Legacy::start(&web);
    let mut post = post_stream(&s, &steps(3, 2));
    let priming = post.next().unwrap();
    let id = priming.id.clone().unwrap();
    drop(post);
    // The answer is made, then held one second; well after, a resume is told it is gone.
    std::thread::sleep(Duration::from_millis(3500));
    let told = Sse::open(get_stream(&s, Some(&id))).rest();
    let error = told
        .iter()
        .find_map(|e| e.message.clone())
        .expect("a message");
    assert_eq!(error["id"], 3, "{told:?}");
    assert_eq!(error["error"]["code"], -32000);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no longer held"),
        "{error}"
    );
    // An id this session never sent: 400 with a JSON-RPC error saying so.
    for bad in ["99.99", "junk", "0.999999"] {
        let r = reply(get_stream(&s, Some(bad)));
        assert_eq!(r.status, 400, "{bad}: {}", r.text);
        let body: Value = serde_json::from_str(&r.text).unwrap();
        assert_eq!(body["error"]["code"], -32600, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Last-Event-ID")
        );
    }
}

#[test]
fn a_client_that_goes_away_does_not_cancel_its_call() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    let s = Legacy::start(&web);
    let pidfile = f.path("stays.pid");
    let mut post = post_stream(
        &s,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "slow", "arguments": {"pidfile": pidfile, "secs": "2"}}}),
    );
    let priming = post.next().unwrap();
    let pid = wait_pid(&pidfile);
    drop(post);
    std::thread::sleep(Duration::from_millis(500));
    assert!(pid_alive(pid), "the call was cancelled with its connection");
    let answer = Sse::open(get_stream(&s, priming.id.as_deref())).rest();
    assert!(is_answer(answer.last().unwrap(), 4), "{answer:?}");
}

/// A raw POST of `body` with `content_type` (in session `s` when given): status and body.
fn raw_post(web: &Web, session: Option<&str>, content_type: &str, body: &str) -> (u16, String) {
    let session = session.map_or(String::new(), |s| {
        format!("Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: 2025-03-26\r\n")
    });
    let (status, text) = raw(
        &web.addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: {content_type}\r\nAccept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            web.addr,
            body.len()
        ),
    );
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// The JSON-RPC error code of a refusal's body.
fn code_of(body: &str) -> i64 {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {body}"));
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error code: {v}"))
}

#[test]
fn bad_bodies_get_json_rpc_errors_by_the_book() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    let s = Legacy::start(&web);
    // Not JSON: 400, -32700.
    let (status, body) = raw_post(&web, Some(&s.id), "application/json", "{\"jsonrpc\": ");
    assert_eq!((status, code_of(&body)), (400, -32700), "{body}");
    // Not JSON-RPC: 400, -32600.
    for bad in ["42", "{\"hello\": 1}", "{\"jsonrpc\": \"2.0\", \"id\": 1}"] {
        let (status, body) = raw_post(&web, Some(&s.id), "application/json", bad);
        assert_eq!((status, code_of(&body)), (400, -32600), "{bad}: {body}");
    }
    // Not said to be JSON: 415 with a JSON-RPC error body.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let (status, body) = raw_post(&web, Some(&s.id), "text/plain", &ping);
    assert_eq!((status, code_of(&body)), (415, -32600), "{body}");
    // A response to nothing the server asked: 400.
    let answer = json!({"jsonrpc": "2.0", "id": 77, "result": {}}).to_string();
    let (status, body) = raw_post(&web, Some(&s.id), "application/json", &answer);
    assert_eq!((status, code_of(&body)), (400, -32600), "{body}");
    // In 2026-07-28 too (no session): a client sends no responses there.
    let (status, body) = raw_post(&web, None, "application/json", &answer);
    assert_eq!(status, 400, "{body}");
    // The session still serves.
    assert_eq!(ping_status(&s), 200);
}

#[test]
fn batches_are_answered_in_2025_03_26_and_refused_after() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    // A 2025-03-26 session.
    let r = post(
        &web.url("/mcp"),
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "it", "version": "1"}}}),
        &[],
    );
    assert_eq!(r.message(0)["result"]["protocolVersion"], "2025-03-26");
    let id = r.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(
        raw_post(&web, Some(&id), "application/json", &initialized).0,
        202
    );
    // Requests, a notification and a member that is no message: one array, in order.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
        42,
        {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}
    ])
    .to_string();
    let (status, body) = raw_post(&web, Some(&id), "application/json", &batch);
    assert_eq!(status, 200, "{body}");
    let answers: Vec<Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(answers.len(), 4, "{body}");
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[0]["result"], json!({}));
    assert_eq!(answers[1]["id"], "two");
    assert!(answers[1]["result"]["tools"].is_array(), "{body}");
    assert_eq!(answers[2]["error"]["code"], -32600);
    assert_eq!(answers[2]["id"], Value::Null);
    assert_eq!(answers[3]["id"], 3);
    assert_eq!(answers[3]["error"]["code"], -32601, "{body}");
    // Only notifications: 202, no body.
    let notes =
        json!([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]).to_string();
    let (status, body) = raw_post(&web, Some(&id), "application/json", &notes);
    assert_eq!((status, body.as_str()), (202, ""));
    // An empty batch: 400.
    assert_eq!(raw_post(&web, Some(&id), "application/json", "[]").0, 400);
    // A later revision has no batches: refused, saying so.
    let s = Legacy::start(&web);
    let (status, body) = raw_post(
        &web,
        Some(&s.id),
        "application/json",
        "[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}]",
    );
    assert_eq!((status, code_of(&body)), (400, -32600), "{body}");
    assert!(body.contains("2025-11-25"), "{body}");
    // And without a session (2026-07-28, or before initialize).
    let (status, body) = raw_post(
        &web,
        None,
        "application/json",
        "[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}]",
    );
    assert_eq!((status, code_of(&body)), (400, -32600), "{body}");
}

#[test]
fn sessions_belong_to_the_principal_that_opened_them() {
    let f =
        fixture("[server.http]\nauth = \"token\"\ntokens = [\"alpha-token\", \"bravo-token\"]\n");
    let web = Web::start(&f, &[]);
    let alpha = [("authorization", "Bearer alpha-token")];
    let bravo = [("authorization", "Bearer bravo-token")];
    let s = Legacy::start_with(&web, &alpha);
    // 128 random bits.
    assert_eq!(s.id.len(), 32, "{}", s.id);
    assert!(s.id.bytes().all(|b| b.is_ascii_hexdigit()));
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
    assert_eq!(s.post(&ping, &alpha).status, 200);
    // The other token's requests, GET stream and DELETE find no such session.
    let r = s.post(&ping, &bravo);
    assert_eq!(r.status, 404, "{}", r.text);
    let r = get(
        &web.url("/mcp"),
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &s.id),
            ("authorization", "Bearer bravo-token"),
        ],
    );
    assert_eq!(r.status, 404);
    let r = agent()
        .delete(&web.url("/mcp"))
        .header("mcp-session-id", &s.id)
        .header("authorization", "Bearer bravo-token")
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    // It is still there for its own.
    assert_eq!(s.post(&ping, &alpha).status, 200);
    let r = agent()
        .delete(&web.url("/mcp"))
        .header("mcp-session-id", &s.id)
        .header("authorization", "Bearer alpha-token")
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
}

/// With OAuth the principal is the token's issuer and subject: another token of the same
/// subject uses the session; a token of another subject, signed by the same key, finds none.
#[test]
fn oauth_sessions_belong_to_the_subject_that_opened_them() {
    let key = TestKey::new("k1");
    let f = fixture(&format!(
        "[server.http]\nauth = \"oauth\"\n[server.http.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\njwks = \"keys/jwks.json\"\n"
    ));
    write_jwks(&f, &[&key]);
    let web = Web::start(&f, &[]);
    let bearer = |sub: &str, ttl: u64| {
        let mut c = claims();
        c["sub"] = json!(sub);
        c["exp"] = json!(now() + ttl);
        format!("Bearer {}", key.sign(&c))
    };
    let (first, renewed, other) = (bearer("u1", 600), bearer("u1", 900), bearer("u2", 600));
    assert_ne!(first, renewed);
    let s = Legacy::start_with(&web, &[("authorization", &first)]);
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
    assert_eq!(s.post(&ping, &[("authorization", &renewed)]).status, 200);
    let r = s.post(&ping, &[("authorization", &other)]);
    assert_eq!(r.status, 404, "{}", r.text);
    let r = agent()
        .delete(&web.url("/mcp"))
        .header("mcp-session-id", &s.id)
        .header("authorization", &other)
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(s.post(&ping, &[("authorization", &first)]).status, 200);
}
