//! Shell-backed tools through the real binary: values reach programs literally, process groups
//! die on timeout, cancellation and stdin EOF, output is capped, JSON output is checked, progress
//! is reported, and build-time mistakes are manifest errors with a place.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Fixture, Server, stderr, stdout};

/// `manifest` with `{helper}` naming the test helper program (support::helper; its `args` verb
/// prints each argument followed by a NUL byte, so the test sees argv exactly).
fn with_helper(manifest: &str) -> String {
    manifest.replace("{helper}", &crate::support::helper_path())
}

fn call(s: &mut Server, name: &str, args: Value) -> Value {
    s.ok("tools/call", json!({"name": name, "arguments": args}))
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result}"))
        .to_owned()
}

fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

/// The argv elements the helper's `args` printed.
fn dumped(result: &Value) -> Vec<String> {
    assert!(!is_error(result), "{result}");
    let t = text(result);
    let mut parts: Vec<String> = t.split('\0').map(str::to_owned).collect();
    assert_eq!(parts.pop().as_deref(), Some(""), "ends with NUL: {t:?}");
    parts
}

#[cfg(unix)]
pub fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Whether process `pid` still runs (not merely exists: a handle may keep an ended one).
#[cfg(windows)]
pub fn alive(pid: i32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: a handle opened here and closed here; the exit code is written to a local.
    unsafe {
        let h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid as u32);
        if h.is_null() {
            return false;
        }
        let mut code = 0u32;
        let ok = GetExitCodeProcess(h, &mut code) != 0;
        CloseHandle(h);
        ok && code == STILL_ACTIVE as u32
    }
}

/// Waits until `pid` no longer exists (the server reaps its children; orphaned grandchildren
/// are reaped by init, which may take a moment).
pub fn wait_gone(pid: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) is still alive"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn read_pid(f: &Fixture, rel: &str) -> i32 {
    let text = std::fs::read_to_string(f.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    text.trim().parse().unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Messages in arrival order up to and including the response to `id`.
fn until_response(s: &mut Server, id: &Value) -> (Vec<Value>, Value) {
    let mut before = Vec::new();
    loop {
        let m = s.wait_for(|_| true);
        if m.get("id") == Some(id) && m.get("method").is_none() {
            return (before, m);
        }
        before.push(m);
    }
}

fn hostile_values() -> Vec<String> {
    vec![
        "$(touch pwned1)".into(),
        "`touch pwned2`".into(),
        "a; touch pwned3".into(),
        "a | touch pwned4".into(),
        "true && touch pwned5".into(),
        "line one\nline two\n".into(),
        r#"say "hi" and 'bye'"#.into(),
        "*".into(),
        "-rf".into(),
        "--help".into(),
        "../../../etc/passwd".into(),
        // Within the system's limit for the two copies the test passes: Windows' command line
        // holds 32 767 UTF-16 units in all, Linux takes 128 KiB per argument.
        "x".repeat(if cfg!(windows) { 10_000 } else { 100_000 }),
        "héllo wörld 日本語 🎉".into(),
        "${HOME} $HOME %s %n".into(),
        "a b\tc".into(),
        "> /tmp/out < /dev/null 2>&1".into(),
        "".into(),
        "back\\slash \\n \\0".into(),
        "{v} {{v}} {}".into(),
        // What `CreateProcess` quoting must keep whole (the C runtime's splitting rules):
        // quotes, backslashes before quotes and at the end, `cmd` metacharacters.
        r#"a\"b"#.into(),
        r#"a\\"b c"#.into(),
        "ends with a backslash\\".into(),
        "\"".into(),
        r#"a" "b"#.into(),
        "%PATH% !x! ^& calc & echo pwned > x".into(),
        "/s".into(),
        "/?".into(),
    ]
}

#[test]
fn hostile_values_reach_the_program_as_one_literal_argv_element() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.argv]
command = ["{helper}", "args", "{v}", "pre-{v}-post"]
params.v = { type = "string", allow_dash = true }
"#,
    ));
    let mut s = f.serve().started();
    let values = hostile_values();
    assert!(values.len() >= 12);
    for v in &values {
        let r = call(&mut s, "argv", json!({ "v": v }));
        assert_eq!(
            dumped(&r),
            [v.clone(), format!("pre-{v}-post")],
            "value {v:?}"
        );
    }
    for i in 1..=5 {
        assert!(
            !f.path(&format!("pwned{i}")).exists(),
            "a value was run by a shell"
        );
    }
    // Past the system's limit: refused before anything runs (Linux: 128 KiB per argument;
    // Windows: the whole command line).
    let huge = "y".repeat(if cfg!(windows) { 20_000 } else { 140_000 });
    let r = call(&mut s, "argv", json!({ "v": huge }));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("too large to pass to a program"), "{r}");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "its subject is sh reading values as \"$v\" (Windows has no sh); cmd's and \
              PowerShell's own tests below are its Windows counterparts"
)]
fn hostile_values_reach_run_scripts_as_literal_environment_values() {
    let f = Fixture::new();
    f.manifest(
        r#"
[tools.env]
run = 'printf "%s" "$v"'
params.v = { type = "string" }
"#,
    );
    let mut s = f.serve().started();
    for v in &hostile_values() {
        let r = call(&mut s, "env", json!({ "v": v }));
        assert!(!is_error(&r), "{r}");
        assert_eq!(&text(&r), v, "value {v:?}");
    }
    for i in 1..=5 {
        assert!(
            !f.path(&format!("pwned{i}")).exists(),
            "a value was run by a shell"
        );
    }
}

#[test]
fn tools_are_listed_after_the_resource_tools_with_schemas_and_explicit_annotations() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.search]
description = "Search the code"
title = "Search"
command = ["grep", "-rn", "--", "{pattern}", "{path}"]
read_only = true
idempotent = true
open_world = false
params.pattern = { type = "string", description = "Regular expression" }
params.path = { type = "string", default = "." }

[tools.recent]
command = ["{helper}", "outln", "{count}"]
destructive = true
open_world = true
output = "json"
output_schema = { type = "object", properties = { n = { type = "integer" } } }
params.count = { type = "integer", default = 10, minimum = 1, maximum = 200 }
params.mode = { type = "string", enum = ["a", "b"], required = false }
params.tags = { type = "array", required = false }
"#,
    ));
    let mut s = f.serve().started();
    let list = s.ok("tools/list", json!({}));
    let tools = list["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        ["list_resources", "read_resource", "search", "recent"]
    );
    let search = &tools[2];
    assert_eq!(search["description"], "Search the code");
    assert_eq!(search["title"], "Search");
    assert_eq!(
        search["inputSchema"],
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression"},
                "path": {"type": "string", "default": "."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        search["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    let recent = &tools[3];
    assert_eq!(
        recent["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
    );
    assert_eq!(
        recent["inputSchema"]["properties"],
        json!({
            "count": {"type": "integer", "default": 10, "minimum": 1, "maximum": 200},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}}
        })
    );
    assert!(recent["inputSchema"].get("required").is_none());
    assert_eq!(
        recent["outputSchema"],
        json!({"type": "object", "properties": {"n": {"type": "integer"}}})
    );
    assert!(search.get("outputSchema").is_none());
}

#[test]
fn optional_parameters_drop_their_element_or_group_and_arrays_repeat() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.grep]
command = ["{helper}", "args", ["--max-count", "{max}"], "--color={color}", ["-g", "{globs}"], "--", "{pattern}"]
params.pattern = { type = "string" }
params.max = { type = "integer", required = false }
params.color = { type = "string", default = "never" }
params.globs = { type = "array", required = false, allow_dash = true }
"#,
    ));
    let mut s = f.serve().started();
    let r = call(&mut s, "grep", json!({"pattern": "fn main"}));
    assert_eq!(dumped(&r), ["--color=never", "--", "fn main"]);
    let r = call(
        &mut s,
        "grep",
        json!({"pattern": "x", "max": 3, "color": "always", "globs": ["*.rs", "-*.md"]}),
    );
    assert_eq!(
        dumped(&r),
        [
            "--max-count",
            "3",
            "--color=always",
            "-g",
            "*.rs",
            "-g",
            "-*.md",
            "--",
            "x"
        ]
    );
    let r = call(
        &mut s,
        "grep",
        json!({"pattern": "x", "max": null, "globs": []}),
    );
    assert_eq!(dumped(&r), ["--color=never", "--", "x"]);
}

#[test]
fn bad_arguments_are_error_results_naming_the_parameter_and_the_rule() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.t]
command = ["{helper}", "outln", "{count}"]
params.count = { type = "integer", default = 10, minimum = 1, maximum = 200 }
params.mode = { type = "string", enum = ["fast", "slow"], default = "fast" }
params.name = { type = "string", pattern = "^[a-z]+$" }
"#,
    ));
    let mut s = f.serve().started();
    let cases = [
        (json!({}), "missing required argument `name`"),
        (
            json!({"name": "ok", "count": 500}),
            "argument `count` must be at most 200, got 500",
        ),
        (
            json!({"name": "ok", "count": "5"}),
            "argument `count` must be an integer, got \"5\"",
        ),
        (
            json!({"name": "ok", "mode": "medium"}),
            "argument `mode` must be one of \"fast\", \"slow\", got \"medium\"",
        ),
        (
            json!({"name": "NO"}),
            "argument `name` must match the pattern `^[a-z]+$`",
        ),
        (
            json!({"name": "ok", "extra": 1}),
            "unknown argument `extra`",
        ),
    ];
    for (args, expected) in cases {
        let r = call(&mut s, "t", args.clone());
        assert!(is_error(&r), "{args}: {r}");
        assert!(text(&r).contains(expected), "{args}: {}", text(&r));
    }
    let r = call(&mut s, "t", json!({"name": "ok"}));
    assert_eq!((is_error(&r), text(&r)), (false, "10\n".to_owned()));

    let e = s.err("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(e["code"], -32602, "{e}");
}

#[test]
fn non_zero_exit_is_an_error_with_the_code_and_the_end_of_stderr() {
    let f = Fixture::new();
    // 30 lines on stderr: `err "err line 1"`, …, `err "err line 30"`.
    let errs: String = (1..=30)
        .map(|i| format!(r#", "err", "err line {i}""#))
        .collect();
    f.manifest(
        &r#"
[tools.fail]
command = ["{helper}", "outln", "partial"{errs}, "exit", "3"]

[tools.missing]
command = ["mcp-manifest-no-such-program", "x"]

[tools.abs]
command = ["./bin/nope"]
"#
        .replace("{helper}", &crate::support::helper_path())
        .replace("{errs}", &errs),
    );
    let mut s = f.serve().started();
    let r = call(&mut s, "fail", json!({}));
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(t.starts_with("tool `fail` failed: exit code 3"), "{t}");
    assert!(t.contains("err line 30"), "{t}");
    assert!(t.contains("err line 11\n"), "the last 20 lines: {t}");
    assert!(!t.contains("err line 10\n"), "only the last 20 lines: {t}");
    assert!(t.contains("stdout:\npartial"), "{t}");

    let r = call(&mut s, "missing", json!({}));
    assert!(is_error(&r), "{r}");
    assert!(
        text(&r).contains("program `mcp-manifest-no-such-program` not found in PATH"),
        "{}",
        text(&r)
    );
    let r = call(&mut s, "abs", json!({}));
    assert!(is_error(&r), "{r}");
    let expected = format!("program `{}` does not exist", f.path("bin/nope").display());
    assert!(text(&r).contains(&expected), "{}", text(&r));
}

#[test]
fn timeout_kills_the_process_and_its_grandchild() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.hang]
command = ["{helper}", "pid", "tool.pid", "spawn", "gc.pid", "wait", "gc.pid", "sleep", "100000"]
timeout = "500ms"
"#,
    ));
    let mut s = f.serve().started();
    let started = Instant::now();
    let r = call(&mut s, "hang", json!({}));
    assert!(is_error(&r), "{r}");
    assert!(
        text(&r).starts_with("tool `hang` timed out after 500ms"),
        "{}",
        text(&r)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // The server is still running: its direct child must be reaped (no zombie), and the
    // grandchild in the same group killed.
    wait_gone(read_pid(&f, "tool.pid"), "the tool");
    wait_gone(read_pid(&f, "gc.pid"), "the grandchild");
    assert_eq!(s.ok("ping", json!({})), json!({}));
}

#[test]
fn what_a_program_leaves_running_in_its_group_is_killed_when_it_exits() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.leave]
command = ["{helper}", "spawn", "gc.pid", "wait", "gc.pid", "outln", "done"]
"#,
    ));
    let mut s = f.serve().started();
    let started = Instant::now();
    let r = call(&mut s, "leave", json!({}));
    assert_eq!(
        (is_error(&r), text(&r)),
        (false, "done\n".to_owned()),
        "{r}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the background sleep held the call: {:?}",
        started.elapsed()
    );
    wait_gone(read_pid(&f, "gc.pid"), "the left-behind background process");
}

#[test]
fn cancellation_kills_the_process_group_and_sends_no_answer() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.wait]
command = ["{helper}", "pid", "tool.pid", "spawn", "gc.pid", "wait", "gc.pid", "err", "started", "sleep", "100000"]
"#,
    ));
    let mut s = f.serve().started();
    let id = s.fresh_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "wait", "arguments": {}, "_meta": {"progressToken": "c1"}}}));
    // The first progress report says the tool has started (its pid files are written).
    let p = s.wait_for(|m| m["method"] == "notifications/progress");
    assert_eq!(p["params"]["progressToken"], "c1");
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "test"}}),
    );
    wait_gone(read_pid(&f, "tool.pid"), "the cancelled tool");
    wait_gone(read_pid(&f, "gc.pid"), "the cancelled tool's grandchild");
    // No answer for a cancelled request (its call ended with its process, before these pings).
    assert_eq!(s.ok("ping", json!({})), json!({}));
    assert_eq!(s.ok("ping", json!({})), json!({}));
    let answered = s.pending().iter().find(|m| m.get("id") == Some(&json!(id)));
    assert!(
        answered.is_none(),
        "a cancelled request got an answer: {answered:?}"
    );
}

#[test]
fn output_beyond_max_output_is_cut_with_a_marker() {
    let f = Fixture::new();
    // `fits` prints 1 to 100, a line each, the last without its newline (292 bytes).
    let lines: String = (1..100).map(|i| format!(r#", "outln", "{i}""#)).collect();
    f.manifest(
        &r#"
[tools.loud]
command = ["{helper}", "repeat", "0123456789"]
max_output = "1KiB"

[tools.fits]
command = ["{helper}"{lines}, "out", "100"]
max_output = "1KiB"
"#
        .replace("{helper}", &crate::support::helper_path())
        .replace("{lines}", &lines),
    );
    let mut s = f.serve().started();
    let r = call(&mut s, "loud", json!({}));
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    let (kept, marker) = t.rsplit_once('\n').expect("a marker line");
    assert!(kept.len() <= 1024, "{} bytes kept", kept.len());
    assert!(kept.len() > 1000, "{} bytes kept", kept.len());
    assert!(kept.starts_with("0123456789\n0123456789\n"), "{kept:?}");
    assert_eq!(
        marker,
        "[output cut: tool `loud` wrote more than 1 KiB to stdout; the rest was dropped and its processes were stopped]"
    );
    let r = call(&mut s, "fits", json!({}));
    assert!(!is_error(&r), "{r}");
    assert!(text(&r).ends_with("\n100"));
}

#[test]
fn json_output_becomes_structured_content_checked_against_the_schema() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.stats]
command = ["{helper}", "out", '{{"count": {raw}, "name": "{name}"}}']
output = "json"
output_schema = { type = "object", properties = { count = { type = "integer" }, name = { type = "string" } }, required = ["count", "name"] }
params.raw = { type = "string" }
params.name = { type = "string", default = "n" }

[tools.list]
command = ["{helper}", "out", "[1, 2]"]
output = "json"
"#,
    ));
    let mut s = f.serve().started();
    let r = call(&mut s, "stats", json!({"raw": "3"}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"], json!({"count": 3, "name": "n"}));
    let as_text: Value = serde_json::from_str(&text(&r)).expect("text is the same JSON");
    assert_eq!(as_text, r["structuredContent"]);

    let r = call(&mut s, "stats", json!({"raw": "\"three\""}));
    assert!(is_error(&r), "{r}");
    assert!(r.get("structuredContent").is_none(), "{r}");
    let t = text(&r);
    assert!(
        t.starts_with("tool `stats` printed JSON that does not match its output_schema"),
        "{t}"
    );
    assert!(t.contains("/count"), "{t}");

    let r = call(&mut s, "stats", json!({"raw": "not json"}));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("its output is not JSON"), "{}", text(&r));

    let r = call(&mut s, "list", json!({}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"], json!({"result": [1, 2]}));
}

#[test]
fn progress_is_reported_while_the_process_runs_and_before_the_answer() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.work]
command = ["{helper}", "err", "step one", "sleep", "1200", "err", "step two", "sleep", "900", "outln", "done"]

[tools.quiet]
command = ["{helper}", "sleep", "700", "outln", "done"]
"#,
    ));
    let mut s = f.serve().started();
    let id = json!(s.fresh_id());
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "work", "arguments": {}, "_meta": {"progressToken": 7}}}));
    let (before, response) = until_response(&mut s, &id);
    assert_eq!(response["result"]["content"][0]["text"], "done\n");
    let progress: Vec<&Value> = before
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(progress.len() >= 3, "{before:?}");
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["params"]["progress"].as_f64().expect("progress"))
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "strictly increasing: {values:?}"
    );
    assert!(
        values.windows(2).all(|w| w[1] - w[0] <= 1.0),
        "at least once a second: {values:?}"
    );
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == 7));
    assert_eq!(progress[0]["params"]["message"], "step one");
    assert_eq!(
        progress.last().expect("last")["params"]["message"],
        "step two"
    );

    let id = json!(s.fresh_id());
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "quiet", "arguments": {}}}));
    let (before, _) = until_response(&mut s, &id);
    assert!(
        before.is_empty(),
        "no progressToken, no progress: {before:?}"
    );
}

#[test]
fn stdin_eof_with_a_running_tool_exits_within_one_second_and_kills_it() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.slow]
command = ["{helper}", "pid", "tool.pid", "err", "started", "sleep", "100000"]
"#,
    ));
    let mut s = f.serve_process().started();
    s.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": "eof"}}}));
    s.wait_for(|m| m["method"] == "notifications/progress");
    let pid = read_pid(&f, "tool.pid");
    assert!(alive(pid));
    s.close_stdin();
    let took = s.wait_exit(Duration::from_secs(5));
    assert!(took < Duration::from_secs(1), "took {took:?}");
    wait_gone(pid, "the running tool");
}

#[test]
fn cli_call_types_arguments_by_the_schema_and_exits_1_on_error() {
    let f = Fixture::new();
    f.manifest(&with_helper(
        r#"
[tools.add]
command = ["{helper}", "sum", "{a}", "{b}"]
params.a = { type = "integer" }
params.b = { type = "integer", default = 1 }

[tools.args]
command = ["{helper}", "args", "{flag}", "{words}"]
params.flag = { type = "boolean" }
params.words = { type = "array" }

[tools.fail]
command = ["{helper}", "err", "broken", "exit", "4"]
"#,
    ));
    let out = f.run(&["call", "add", "a=40", "b=2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "42\n");

    let out = f.run(&["call", "add", "--json", r#"{"a": 1, "b": 2}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "3\n");

    let out = f.run(&["call", "args", "flag=yes", "words=a b", "words=$(id)"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "true\0a b\0$(id)\0\n");

    let out = f.run(&["call", "add", "a=forty"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("`a` must be an integer"),
        "{}",
        stderr(&out)
    );

    let out = f.run(&["call", "add", "--json", r#"{"a": "x"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("argument `a` must be an integer"),
        "{}",
        stdout(&out)
    );

    let out = f.run(&["call", "fail"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("exit code 4") && text.contains("broken"),
        "{text}"
    );

    let out = f.run(&["call", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown tool `nope`"),
        "{}",
        stderr(&out)
    );
}

/// Runs `check` on `text` written as bad.toml and returns the diagnostic lines.
fn diagnose(text: &str) -> Vec<String> {
    Fixture::new().diagnose(text)
}

#[test]
fn placeholder_and_process_mistakes_are_manifest_errors_with_a_place() {
    assert_eq!(
        diagnose(
            "[tools.t]\ncommand = [\"ls\", \"--\", \"{pth}\"]\nparams.path = { type = \"string\" }\n"
        ),
        [
            "bad.toml:2:24: tool `t`: `{pth}` names no declared parameter, did you mean `{path}`? (write `{{` and `}}` for literal braces)"
        ]
    );
    assert_eq!(
        // `shell` named: Windows has no default shell (its own error otherwise).
        diagnose(
            "[tools.t]\nrun = 'git log -n {count}'\nshell = \"sh\"\nparams.count = { type = \"integer\" }\n"
        ),
        [
            "bad.toml:2:7: tool `t`: `{count}` in `run`: parameters are never spliced into the script; they arrive as environment variables: write \"$count\" (or \"$${count}\" for the braced form)"
        ]
    );
    assert_eq!(
        diagnose("[tools.t]\ncommand = [\"ls\"]\nshell = \"sh\"\n"),
        [
            "bad.toml:3:9: tool `t`: `shell` is for `run` scripts; `command` runs its program without a shell"
        ]
    );
    assert_eq!(
        diagnose(
            "[tools.t]\nrun = 'echo %Name% !name!'\nshell = \"cmd\"\nparams.name = { type = \"string\" }\n"
        ),
        [
            "bad.toml:2:7: tool `t`: `%name%` in a `cmd` script is expanded before the line is parsed (a value's `&` or `|` would run); write `!name!`"
        ]
    );
    // `cmd /c` runs one line: a second would be ignored (Windows) or echoed as text (Wine). The
    // line break TOML's `'''` strings end with is not a second line.
    assert_eq!(
        diagnose("[tools.t]\nrun = '''\necho one\necho two\n'''\nshell = \"cmd\"\n"),
        [
            "bad.toml:2:7: tool `t`: a `cmd` script is one line (`cmd /c` runs up to the first line break and ignores the rest); join its commands with `&` (or `&&` to stop at a failure)"
        ]
    );
    let lines = Fixture::new()
        .check_lines("[tools.t]\nrun = '''\necho one & echo two\n'''\nshell = \"cmd\"\n");
    assert!(!lines.iter().any(|l| l.contains("one line")), "{lines:?}");
    let lines = diagnose("[tools.t]\nrun = 'x'\nshell = \"bash\"\n");
    assert!(
        lines.len() == 1 && lines[0].starts_with("bad.toml:3:9:") && lines[0].contains("pwsh"),
        "{lines:?}"
    );
    assert_eq!(
        diagnose("[tools.t]\ncommand = [[\"ls\"], \"x\"]\n"),
        [
            "bad.toml:2:12: tool `t`: the first element of `command` is the program, a string, not a group"
        ]
    );
    assert_eq!(
        diagnose("[tools.t]\ncommand = [\"{prog}\"]\nparams.prog = {}\n"),
        [
            "bad.toml:2:12: tool `t`: the program (the first element of `command`) cannot hold a `{parameter}`; name the program and pass values as arguments"
        ]
    );
    assert_eq!(
        diagnose("[tools.t]\ncommand = [\"ls\", []]\n"),
        ["bad.toml:2:18: tool `t`: an empty group in `command`"]
    );
    assert_eq!(
        diagnose("[tools.t]\ncommand = [\"ls\", 5]\n"),
        ["bad.toml:2:18: `tools.t.command[1]` must be a string or an array, found an integer"]
    );
    let lines = diagnose("[tools.t]\ncommand = [\"ls\"]\ncwd = \"nowhere\"\n");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("bad.toml:3:7: tool `t`: working directory `")
            && lines[0].ends_with(&format!(
                "{}nowhere` does not exist or is not a folder",
                std::path::MAIN_SEPARATOR
            )),
        "{lines:?}"
    );
    let lines = diagnose(
        "[tools.t]\nrun = 'echo {}'\noutput = \"json\"\noutput_schema = { type = \"object\", properties = 5 }\nshell = \"sh\"\n",
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("bad.toml:4:17: tool `t`: `output_schema` is not a valid JSON Schema"),
        "{lines:?}"
    );
    assert_eq!(
        diagnose(
            "[tools.t]\nrun = 'echo'\noutput = \"json\"\noutput_schema = { type = \"array\" }\nshell = \"sh\"\n"
        ),
        [
            "bad.toml:4:17: `output_schema` of tool `t` must describe an object (`type = \"object\"`): structured content is always a JSON object"
        ]
    );
}

/// Values a `cmd` script gets through `!v!`, each meant to run something if it were spliced
/// into the script: cmd's separators, pipes, redirections, quotes that would end a quoted
/// part, its escape (`^`) and `%` (`/c` would start a command of its own on a `cmd` line).
#[cfg(windows)]
fn cmd_hostile_values() -> Vec<String> {
    let mut values: Vec<String> = [
        "a & echo PWNED> pwned1.txt",
        "a | echo PWNED> pwned2.txt",
        "a && echo PWNED> pwned3.txt || echo PWNED> pwned3.txt",
        "\" & echo PWNED> pwned4.txt & \"",
        "/c echo PWNED> pwned5.txt",
        ") & echo PWNED> pwned6.txt & (",
        "^& ^^ ^",
        "ends with a caret^",
        "ends with a backslash\\",
        "(a) <in >out 2>&1",
        "100% & 50%",
        "x\"y",
        "",
        "-rf /s /?",
    ]
    .map(str::to_owned)
    .into();
    // Windows' cmd expands `!v!` once; Wine's goes on expanding in what the value put there
    // (`%PATH%` and `!PATH!` in a value come back as PATH's value, a lone `!` pairs with the
    // next `!w!` of the script, `!v!` makes it recurse): text only, never a command, but not
    // the value; these are checked on Windows only (the release workflow's runner).
    if std::env::var_os("MCP_MANIFEST_TEST_WINE").is_none() {
        values.push("%PATH% !PATH! %v% !v! %%".into());
        values.push("a!b".into());
    }
    values
}

#[test]
#[cfg(windows)]
fn cmd_scripts_print_values_from_the_environment_literally_and_run_none() {
    let f = Fixture::new();
    f.manifest(
        r#"
[tools.echo]
run = 'echo [!v!] [!w!]'
shell = "cmd"
params.v = { type = "string" }
params.w = { type = "string", required = false }

[tools.write]
run = 'echo made> made.txt'
shell = "cmd"
"#,
    );
    let mut s = f.serve().started();
    // The second value travels as its own variable, whatever the first holds.
    for v in &cmd_hostile_values() {
        let r = call(&mut s, "echo", json!({ "v": v, "w": "second" }));
        assert!(!is_error(&r), "{r}");
        assert_eq!(text(&r), format!("[{v}] [second]\r\n"), "value {v:?}");
    }
    // A parameter left out is an empty variable, not an inherited one of its name.
    let r = call(&mut s, "echo", json!({ "v": "only" }));
    assert_eq!(text(&r), "[only] []\r\n", "{r}");
    for i in 1..=6 {
        assert!(
            !f.path(&format!("pwned{i}.txt")).exists(),
            "a value ran as cmd code (pwned{i}.txt)"
        );
    }
    // The check above can fail: the script's own redirection writes in the tool's folder.
    let r = call(&mut s, "write", json!({}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        std::fs::read_to_string(f.path("made.txt")).unwrap(),
        "made\r\n"
    );
}

#[test]
#[cfg(windows)]
fn cmd_script_exit_codes_are_error_results_with_the_code_and_stderr() {
    let f = Fixture::new();
    f.manifest(
        r#"
[tools.fail]
run = 'echo partial& echo oops 1>&2& exit /b 3'
shell = "cmd"

[tools.soft]
run = 'echo differs& exit /b 1'
shell = "cmd"
ok_exit_codes = [0, 1]
"#,
    );
    let mut s = f.serve().started();
    let r = call(&mut s, "fail", json!({}));
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(t.starts_with("tool `fail` failed: exit code 3"), "{t}");
    assert!(t.contains("oops"), "the end of stderr: {t}");
    assert!(t.contains("stdout:\npartial"), "{t}");
    let r = call(&mut s, "soft", json!({}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(text(&r), "differs\r\n");
}

/// The shell program is looked up in the tool's `PATH` like any program: one that is missing
/// (here `pwsh`, which Windows does not ship, with a `PATH` of an empty folder) is an error
/// result naming it.
#[test]
#[cfg(windows)]
fn a_missing_shell_program_is_an_error_result_naming_it() {
    let f = Fixture::new();
    f.mkdir("empty");
    f.manifest(
        r#"
[tools.ps]
run = 'Write-Output hi'
shell = "pwsh"
env.PATH = '{empty}'
"#
        .replace("{empty}", &f.path("empty").display().to_string())
        .as_str(),
    );
    let mut s = f.serve().started();
    let r = call(&mut s, "ps", json!({}));
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(
        t.starts_with("tool `ps` could not start: program `pwsh` not found in PATH"),
        "{t}"
    );
}

/// Windows PowerShell gets the script as `-EncodedCommand` and values as `$env:NAME`. Not run
/// under Wine (scripts/windows-tests.sh WINE_SKIPS): its `powershell.exe` is a stub that runs
/// nothing.
#[test]
#[cfg(windows)]
fn powershell_scripts_print_values_from_the_environment_literally_and_run_none() {
    let f = Fixture::new();
    f.manifest(
        r#"
[tools.echo]
run = '[Console]::Out.Write("[" + $env:v + "]")'
shell = "powershell"
params.v = { type = "string" }
"#,
    );
    let mut s = f.serve().started();
    for v in [
        "$(New-Item pwned1.txt)",
        "'; New-Item pwned2.txt; '",
        "\"; New-Item pwned3.txt; \"",
        "`n & calc",
        "$env:PATH ${v} @(1)",
        "-Command New-Item pwned4.txt",
        "",
    ] {
        let r = call(&mut s, "echo", json!({ "v": v }));
        assert!(!is_error(&r), "{r}");
        assert_eq!(text(&r), format!("[{v}]"), "value {v:?}");
    }
    for i in 1..=4 {
        assert!(
            !f.path(&format!("pwned{i}.txt")).exists(),
            "a value ran as PowerShell code"
        );
    }
}

/// A batch file as a `command` program would have cmd.exe parse its arguments again (a value's
/// `&` runs a command): refused before anything starts, also by the names Windows still opens it
/// under (found through `PATH` and `PATHEXT`, trailing dots and spaces, its `::$DATA` stream).
/// `run` with `shell = "cmd"` is the way to run one.
#[test]
#[cfg(windows)]
fn batch_files_are_refused_as_command_programs_and_never_run() {
    let f = Fixture::new();
    f.write("bin/job.bat", "@echo ran> ran.txt\r\n");
    f.write("bin/other.CMD", "@echo ran> ran.txt\r\n");
    f.manifest(
        r#"
[tools.bat]
command = ["./bin/job.bat", "{v}"]
params.v = { type = "string" }

[tools.upper]
command = ['bin\other.CMD']

[tools.looked_up]
command = ["other"]
env.PATH = '{bin}'

[tools.dot]
command = ["./bin/job.bat."]

[tools.space]
command = ["./bin/job.bat "]

[tools.stream]
command = ["./bin/job.bat::$DATA"]

[tools.script]
run = 'bin\job.bat'
shell = "cmd"
"#
        .replace("{bin}", &f.path("bin").display().to_string())
        .as_str(),
    );
    let mut s = f.serve().started();
    for (tool, args) in [
        ("bat", json!({"v": "x & echo PWNED> pwned.txt"})),
        ("upper", json!({})),
        ("looked_up", json!({})),
        ("dot", json!({})),
        ("space", json!({})),
        ("stream", json!({})),
    ] {
        let r = call(&mut s, tool, args);
        assert!(is_error(&r), "{tool}: {r}");
        let t = text(&r);
        assert!(
            t.starts_with(&format!("tool `{tool}` could not start: "))
                && t.contains("is a batch file, which cmd.exe runs by parsing its arguments again")
                && t.contains("use `run` with `shell = \"cmd\"`"),
            "{tool}: {t}"
        );
        assert!(!f.path("ran.txt").exists(), "{tool}: the batch file ran");
        assert!(!f.path("pwned.txt").exists(), "{tool}: a value ran");
    }
    // The check above can fail: run as a `cmd` script, the batch file runs.
    let r = call(&mut s, "script", json!({}));
    assert!(!is_error(&r), "{r}");
    assert!(f.path("ran.txt").exists(), "the batch file did not run");
}
