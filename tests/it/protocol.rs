//! Both protocol eras through the real binary: negotiation, discovery, errors, framing, exit.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Fixture, list_all};

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("docs/a.md", "# a\n");
    f.manifest(
        "[server]\nname = \"proto\"\nversion = \"9.9.9\"\ninstructions = \"Serves docs.\"\n\n[files.docs]\nroot = \"docs\"\n",
    );
    f
}

#[test]
fn initialize_echoes_every_known_handshake_version() {
    let f = fixture();
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut s = f.serve();
        let r = s.initialize(v);
        assert_eq!(r["protocolVersion"], v);
        assert_eq!(r["serverInfo"]["name"], "proto");
        assert_eq!(r["serverInfo"]["version"], "9.9.9");
        assert_eq!(r["instructions"], "Serves docs.");
    }
}

#[test]
fn unknown_or_stateless_versions_get_the_newest_handshake_version() {
    let f = fixture();
    for v in ["2099-01-01", "1999-01-01", "2026-07-28", "not-a-date"] {
        let mut s = f.serve();
        let r = s.initialize(v);
        assert_eq!(r["protocolVersion"], "2025-11-25", "asked for {v}");
    }
}

#[test]
fn capabilities_advertise_only_what_is_served() {
    let f = fixture();
    let mut s = f.serve();
    let r = s.initialize("2025-11-25");
    let caps = r["capabilities"].as_object().expect("capabilities");
    assert!(caps.contains_key("resources"));
    assert!(
        caps.contains_key("tools"),
        "resource_tools is on by default"
    );
    assert!(caps.contains_key("completions"), "files templates complete");
    assert!(!caps.contains_key("prompts"), "no prompts in this manifest");
    assert!(
        caps.contains_key("logging"),
        "an invalid manifest edit is reported as a message"
    );
    assert_eq!(
        caps["resources"],
        json!({"subscribe": true, "listChanged": true})
    );

    let g = Fixture::new();
    g.manifest("[server]\nresource_tools = false\n");
    let mut s = g.serve();
    let r = s.initialize("2025-11-25");
    let caps = r["capabilities"].as_object().expect("capabilities");
    assert!(!caps.contains_key("tools"), "{caps:?}");
    assert!(!caps.contains_key("completions"), "{caps:?}");
    assert_eq!(s.err("tools/list", json!({}))["code"], -32601);
}

#[test]
fn ping_answers_before_and_after_initialize() {
    let f = fixture();
    let mut s = f.serve();
    assert_eq!(s.ok("ping", json!({})), json!({}));
    s.initialize("2025-06-18");
    assert_eq!(s.ok("ping", json!({})), json!({}));
}

#[test]
fn stateless_era_discover_and_requests_carry_result_type_and_cache_hints() {
    let f = fixture();
    let mut s = f.serve();
    let d = s.modern("server/discover", json!({}));
    let d = &d["result"];
    assert_eq!(d["resultType"], "complete");
    let versions: Vec<&str> = d["supportedVersions"]
        .as_array()
        .expect("versions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for v in [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    ] {
        assert!(versions.contains(&v), "{versions:?} lacks {v}");
    }
    assert_eq!(d["instructions"], "Serves docs.");
    assert!(d["ttlMs"].is_u64());
    assert!(d["cacheScope"].is_string());
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "proto"
    );

    let list = s.modern("resources/list", json!({}));
    let list = &list["result"];
    assert_eq!(list["resultType"], "complete");
    assert!(
        list["ttlMs"].is_u64() && list["cacheScope"].is_string(),
        "{list}"
    );
    assert_eq!(list["resources"][0]["name"], "a.md");
    assert_eq!(
        list["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "proto"
    );

    let uri = f.uri("docs/a.md");
    let read = s.modern("resources/read", json!({"uri": uri}));
    assert_eq!(read["result"]["contents"][0]["text"], "# a\n");
    assert_eq!(read["result"]["resultType"], "complete");

    // Not found is -32602 in this era.
    let missing = s.modern("resources/read", json!({"uri": f.uri("docs/none.md")}));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");

    // A stateless request without its _meta is rejected with -32602.
    let bare = s.call("resources/list", json!({}));
    assert_eq!(bare["error"]["code"], -32602, "{bare}");
}

#[test]
fn stateless_request_with_an_unsupported_version_is_rejected() {
    let f = fixture();
    let mut s = f.serve();
    let mut meta = crate::support::modern_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = s.call("resources/list", json!({"_meta": meta}));
    assert_eq!(r["error"]["code"], -32022, "{r}");
    assert!(
        r["error"]["data"]["supported"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("2026-07-28")))
    );
}

#[test]
fn handshake_era_not_found_is_32002() {
    let f = fixture();
    let mut s = f.serve().started();
    let e = s.err("resources/read", json!({"uri": f.uri("docs/none.md")}));
    assert_eq!(e["code"], -32002);
}

#[test]
fn malformed_json_gets_a_parse_error_with_null_id_and_serving_goes_on() {
    let f = fixture();
    let mut s = f.serve().started();
    s.send_raw("{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": ");
    let e = s.wait_for(|v| v.get("error").is_some());
    assert_eq!(e["error"]["code"], -32700);
    assert!(
        e.as_object().is_some_and(|o| o.contains_key("id")) && e["id"].is_null(),
        "{e}"
    );
    s.send_raw("this is not json");
    let e = s.wait_for(|v| v.get("error").is_some());
    assert_eq!(e["error"]["code"], -32700);
    assert_eq!(s.ok("ping", json!({})), json!({}));
}

#[test]
fn unknown_method_is_32601_and_bad_params_are_32602() {
    let f = fixture();
    let mut s = f.serve().started();
    assert_eq!(s.err("no/such/method", json!({}))["code"], -32601);
    assert_eq!(s.err("resources/read", json!({}))["code"], -32602);
    assert_eq!(s.err("resources/read", json!({"uri": 5}))["code"], -32602);
    // A request that is not JSON-RPC at all.
    s.send_raw("{\"hello\": 1}");
    let e = s.wait_for(|v| v.get("error").is_some());
    assert_eq!(e["error"]["code"], -32600);
    assert_eq!(s.ok("ping", json!({})), json!({}));
}

#[test]
fn a_bad_cursor_is_invalid_params() {
    let f = fixture();
    let mut s = f.serve().started();
    for method in ["resources/list", "resources/templates/list", "tools/list"] {
        let e = s.err(method, json!({"cursor": "bogus"}));
        assert_eq!(e["code"], -32602, "{method}");
    }
}

#[test]
fn every_list_pages_to_the_end_with_page_size_3() {
    let f = Fixture::new();
    for i in 0..8 {
        f.write(&format!("d{i}/f.txt"), format!("{i}"));
    }
    let mut m = String::from("[server]\npage_size = 3\n");
    for i in 0..8 {
        m.push_str(&format!("\n[files.d{i}]\nroot = \"d{i}\"\n"));
    }
    f.manifest(&m);
    let mut s = f.serve().started();
    let (resources, pages) = list_all(&mut s, "resources/list", "resources");
    assert_eq!((resources.len(), pages), (8, 3));
    let names: Vec<String> = resources
        .iter()
        .map(|r| r["uri"].as_str().unwrap_or_default().to_owned())
        .collect();
    let expected: Vec<String> = (0..8).map(|i| f.uri(&format!("d{i}/f.txt"))).collect();
    assert_eq!(names, expected, "manifest order, no repeats, nothing lost");
    let (templates, pages) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    assert_eq!((templates.len(), pages), (8, 3));
    let (tools, pages) = list_all(&mut s, "tools/list", "tools");
    assert_eq!((tools.len(), pages), (3, 1));
}

#[test]
fn batch_requests_of_2025_03_26_are_answered() {
    let f = fixture();
    let mut s = f.serve();
    s.initialize("2025-03-26");
    s.send_raw(
        r#"[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"resources/list"}]"#,
    );
    // One array line holds every answer of the batch.
    let answers = s.wait_for(Value::is_array);
    let by_id = |id: &str| {
        answers
            .as_array()
            .and_then(|a| a.iter().find(|x| x["id"] == id))
            .cloned()
            .unwrap_or_else(|| panic!("no answer for {id} in {answers}"))
    };
    assert_eq!(by_id("b1")["result"], json!({}));
    assert!(by_id("b2")["result"]["resources"].is_array());
}

#[test]
fn stdin_eof_exits_within_one_second() {
    let f = fixture();
    let mut s = f.serve_process().started();
    assert_eq!(s.ok("ping", json!({})), json!({}));
    s.close_stdin();
    let took = s.wait_exit(Duration::from_secs(5));
    assert!(took < Duration::from_secs(1), "took {took:?}");
}

#[test]
fn notifications_get_no_answer() {
    let f = fixture();
    let mut s = f.serve().started();
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/whatever"}));
    // Anything said about the notifications would come before the ping's answer.
    assert_eq!(s.ok("ping", json!({})), json!({}));
    assert!(s.pending().is_empty(), "{:?}", s.pending());
}

#[test]
fn thousands_of_pipelined_requests_are_all_answered() {
    let f = fixture();
    let mut s = f.serve().started();
    let uri = f.uri("docs/a.md");
    let mut batch = String::new();
    for i in 0..3000 {
        let msg = if i % 3 == 0 {
            json!({"jsonrpc": "2.0", "id": format!("p{i}"), "method": "resources/read", "params": {"uri": uri}})
        } else {
            json!({"jsonrpc": "2.0", "id": format!("p{i}"), "method": "ping"})
        };
        batch.push_str(&msg.to_string());
        batch.push('\n');
        // Cancelling requests that may or may not be answered yet must not leak capacity.
        if i % 7 == 0 {
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": format!("p{i}")}});
            batch.push_str(&cancel.to_string());
            batch.push('\n');
        }
    }
    s.send_raw(batch.trim_end());
    let mut answered = 0;
    for i in 0..3000 {
        if i % 7 == 0 {
            continue;
        }
        let r = s.response(&json!(format!("p{i}")));
        assert!(r.get("result").is_some(), "{r}");
        answered += 1;
    }
    assert_eq!(answered, 3000 - 3000_usize.div_ceil(7));
    assert_eq!(s.ok("ping", json!({})), json!({}));
}

#[test]
fn a_slow_tool_does_not_delay_a_ping() {
    let f = Fixture::new();
    f.manifest(&format!(
        "[tools.slow]\ncommand = [\"{}\", \"sleep\", \"2000\", \"outln\", \"done\"]\n",
        crate::support::helper_path()
    ));
    let mut s = f.serve().started();
    s.send(
        &json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
        "params": {"name": "slow", "arguments": {}}}),
    );
    let started = std::time::Instant::now();
    assert_eq!(s.ok("ping", json!({})), json!({}));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "ping took {took:?}");
    let slow = s.response(&json!("slow"));
    assert_eq!(slow["result"]["content"][0]["text"], "done\n", "{slow}");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the tool really ran while the ping was answered"
    );
}

#[test]
fn every_request_sent_before_eof_is_answered_before_exit() {
    let f = fixture();
    let mut input = String::new();
    input.push_str(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}}).to_string(),
    );
    input.push('\n');
    for i in 1..=5000 {
        input.push_str(&json!({"jsonrpc": "2.0", "id": i, "method": "ping"}).to_string());
        input.push('\n');
    }
    let (out, _) = f.serve_input(&input);
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let ids: std::collections::HashSet<i64> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
        .filter_map(|v| v["id"].as_i64())
        .collect();
    assert_eq!(ids.len(), 5001, "every request answered once");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_quick_tool_called_just_before_eof_still_answers() {
    let f = Fixture::new();
    f.manifest(&format!(
        "[tools.hi]\ncommand = [\"{}\", \"sleep\", \"200\", \"outln\", \"hi\"]\n",
        crate::support::helper_path()
    ));
    let input = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hi", "arguments": {}}}),
    ]
    .iter()
    .map(|m| format!("{m}\n"))
    .collect::<String>();
    let (out, after_eof) = f.serve_input(&input);
    assert!(after_eof < Duration::from_secs(1), "{after_eof:?}");
    let answer = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
        .find(|v| v["id"] == 1)
        .expect("the tool's answer");
    assert_eq!(answer["result"]["content"][0]["text"], "hi\n", "{answer}");
    assert_eq!(answer["result"]["isError"], false);
}

/// A small file's `resources/read`, a cached `resources/list` page and a `tools/list` page are
/// answered by the transport's reader thread (no `_meta`); with `_meta` the same requests go
/// through rmcp. The answers must be the same, for every kind of answer.
#[test]
fn reads_and_listings_answered_on_the_reader_are_what_rmcp_answers() {
    let f = Fixture::new();
    f.write("d/a.txt", "quote \" tab \t backslash \\ control \u{1} é\n");
    f.write("d/b.bin", [0u8, 159, 146, 150, 255]);
    f.write("d/big.txt", "x".repeat(40_000));
    f.write("d/c.md", "# c\n");
    f.write("d/.env", "SECRET=1\n");
    f.manifest(concat!(
        "[server]\npage_size = 2\n\n[files.d]\nroot = \"d\"\n\n",
        "[tools.echo]\ncommand = [\"echo\", \"{word}\"]\ndescription = \"Says \\\"a word\\\"\"\n",
        "params.word = { description = \"é \\t\", pattern = \"^[a-z]+$\" }\n",
        "output = \"json\"\noutput_schema = { type = \"object\", properties = { n = { type = \"integer\" } } }\n\n",
        "[templates.note]\nuri = \"note://{topic}\"\nfile = \"d/{topic}.md\"\n",
    ));
    for version in ["2024-11-05", "2025-11-25"] {
        let mut s = f.serve();
        s.initialize(version);
        let mut both = |method: &str, params: Value| {
            let mut with_meta = params.clone();
            with_meta["_meta"] = json!({"progressToken": "p"});
            let (mut direct, mut through) = (s.call(method, params), s.call(method, with_meta));
            for v in [&mut direct, &mut through] {
                v.as_object_mut().expect("an object").remove("id");
            }
            assert_eq!(direct, through, "{method} ({version})");
            direct
        };
        for name in ["a.txt", "b.bin", "big.txt", "c.md", ".env", "missing"] {
            both(
                "resources/read",
                json!({ "uri": f.uri(&format!("d/{name}")) }),
            );
        }
        // What an attacker writes: a NUL, a way out of the root, a dot segment, an option.
        let root = f.uri("d");
        for rest in [
            "a%00.txt",
            "a.txt%00",
            "..%2Fmcp-server.toml",
            "%2e%2e/mcp-server.toml",
            "../mcp-server.toml",
            "./a.txt",
            "-rf",
            "a\u{0}.txt",
        ] {
            both("resources/read", json!({ "uri": format!("{root}/{rest}") }));
        }
        // The first listing fills the cache the later pages come from.
        let (mut cursor, mut listed, mut pages) = (None, 0, 0);
        loop {
            let params = match &cursor {
                None => json!({}),
                Some(c) => json!({ "cursor": c }),
            };
            let page = both("resources/list", params)["result"].clone();
            listed += page["resources"].as_array().map_or(0, Vec::len);
            pages += 1;
            cursor = page["nextCursor"].as_str().map(str::to_owned);
            if cursor.is_none() || pages > 3 {
                break;
            }
        }
        assert_eq!((listed, pages), (4, 2), "{version}");
        both("resources/list", json!({ "cursor": "not-a-cursor" }));
        // Every page of tools (the built-in ones, a shell tool, a template tool), then a
        // cursor the server never gave and one past the end.
        let (mut cursor, mut names) = (None, Vec::new());
        loop {
            let params = match &cursor {
                None => json!({}),
                Some(c) => json!({ "cursor": c }),
            };
            let page = both("tools/list", params)["result"].clone();
            for t in page["tools"].as_array().expect("tools") {
                names.push(t["name"].as_str().expect("a name").to_owned());
            }
            cursor = page["nextCursor"].as_str().map(str::to_owned);
            if cursor.is_none() || names.len() > 50 {
                break;
            }
        }
        assert!(
            names.iter().any(|n| n == "echo") && names.iter().any(|n| n == "note"),
            "{names:?}"
        );
        both("tools/list", json!({ "cursor": "not-a-cursor" }));
        both("tools/list", json!({ "cursor": "cGFnZToxMDAw" }));
        both("tools/list", json!({ "cursor": 7 }));
        both("tools/list", json!(null));
    }
}
