//! Tool processes (issue 9): nothing outlives the server (kill -9, `setsid` escapes, a script that
//! starts several), `[server] max_processes` (bounded, FIFO, a cancelled waiting call leaves the
//! queue), `[server] path`, honest annotations and `ok_exit_codes`. Processes are observed
//! through /proc, waiting with deadlines (never a fixed sleep where a state can be polled).

// Most tests here watch processes through /proc (Linux); the helpers are unused elsewhere.
#![cfg_attr(not(target_os = "linux"), allow(dead_code, unused_imports))]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::Fixture;

/// True while `pid` runs (a zombie has already ended: it only waits for its parent).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z') | Some('X') | None)
        }
        Err(_) => false,
    }
}

/// The pids in `/proc/PID/task/*/children`: the processes `pid` started (all its threads').
fn children_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let text = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    out
}

/// Every process below `pid`, depth first.
fn descendants(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for child in children_of(pid) {
        out.push(child);
        out.extend(descendants(child.unsigned_abs()));
    }
    out
}

/// The server's one child, its supervisor (which forks a supervisor for each call), once it is
/// the only one.
fn supervisor_of(server: u32) -> u32 {
    let mut only = Vec::new();
    until(Duration::from_secs(20), "the server's supervisor", || {
        only = children_of(server);
        only.len() == 1
    });
    only[0].unsigned_abs()
}

/// Idle per-call supervisors the supervisor keeps (`KEEP_IDLE` in src/process/supervisor.rs).
const KEEP_IDLE: usize = 4;

/// True when nothing runs below the server's supervisor but idle per-call supervisors (which
/// wait for the next call; at most `KEEP_IDLE`), and no process that ended waits to be reaped.
fn idle(supervisor: u32) -> bool {
    let below = children_of(supervisor);
    below.len() <= KEEP_IDLE
        && below
            .iter()
            .all(|&p| running(p) && children_of(p.unsigned_abs()).is_empty())
}

/// Polls until `pred` holds, failing after `limit`; returns how long it took.
fn until(limit: Duration, what: &str, mut pred: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !pred() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    start.elapsed()
}

/// Waits until each file exists and holds a pid, and returns them.
fn pids(dir: &Path, files: &[&str]) -> Vec<i32> {
    let mut out = Vec::new();
    for name in files {
        let path = dir.join(name);
        let mut pid = None;
        until(Duration::from_secs(20), &format!("{name} written"), || {
            pid = std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok());
            pid.is_some()
        });
        out.extend(pid);
    }
    out
}

const SPAWNER: &str = r#"
[tools.spawner]
description = "Starts several processes, one of which escapes its group with setsid"
run = '''
echo $$ > sh.pid
sleep 300 & echo $! > a.pid
sleep 300 & echo $! > b.pid
( sleep 300 & echo $! > deep.pid; wait ) &
setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' &
setsid sh -c 'sleep 300 & echo $! > orphan.pid' &
wait
'''

[tools.sleeper]
command = ["sleep", "300"]
"#;

const SPAWNED: [&str; 6] = [
    "sh.pid",
    "a.pid",
    "b.pid",
    "deep.pid",
    "escaped.pid",
    "orphan.pid",
];

#[test]
#[cfg(target_os = "linux")] // processes observed through /proc; sh scripts, setsid
fn after_kill_9_of_the_server_no_tool_process_is_left() {
    let f = Fixture::new();
    f.manifest(SPAWNER);
    let mut s = f.serve_process().started();
    let server = s.child.as_ref().expect("a process").id();
    for (id, tool) in [(100, "spawner"), (101, "sleeper"), (102, "sleeper")] {
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {}}}));
    }
    let mut tracked = pids(&f.root(), &SPAWNED);
    // The server's supervisor forks one for each call: three, each with its program below (and
    // a spare for the next call).
    let supervisor = supervisor_of(server);
    until(Duration::from_secs(20), "three calls running", || {
        children_of(supervisor)
            .into_iter()
            .filter(|&p| !children_of(p.unsigned_abs()).is_empty())
            .count()
            == 3
    });
    tracked.push(supervisor as i32);
    tracked.extend(descendants(supervisor));
    assert!(tracked.iter().all(|&p| running(p)), "{tracked:?}");

    // SIGKILL: the server cannot clean anything up itself.
    s.child
        .as_mut()
        .expect("a process")
        .kill()
        .expect("kill -9");
    let took = until(Duration::from_secs(1), "every tool process gone", || {
        tracked.iter().all(|&p| !running(p))
    });
    eprintln!(
        "{} processes gone {took:?} after kill -9 of the server",
        tracked.len()
    );
}

#[test]
#[cfg(target_os = "linux")] // processes observed through /proc; sh scripts, setsid
fn a_setsid_escapee_does_not_outlive_a_normal_exit() {
    let f = Fixture::new();
    f.manifest(
        r#"
[tools.escape]
run = '''
setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' &
setsid sh -c 'sleep 300 & echo $! > orphan.pid' &
while [ ! -s escaped.pid ] || [ ! -s orphan.pid ]; do sleep 0.01; done
echo done
'''
"#,
    );
    let mut s = f.serve().started();
    let r = s.ok("tools/call", json!({"name": "escape", "arguments": {}}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["content"][0]["text"], "done\n");
    let left = pids(&f.root(), &["escaped.pid", "orphan.pid"]);
    until(Duration::from_secs(1), "the escaped processes gone", || {
        left.iter().all(|&p| !running(p))
    });
}

#[test]
#[cfg(target_os = "linux")] // processes observed through /proc; sh scripts, setsid
fn cancellation_and_timeout_reach_escaped_processes() {
    let f = Fixture::new();
    f.manifest(
        r#"
[tools.stuck]
run = '''
setsid sh -c 'echo $$ > "escaped.$tag"; exec sleep 300' &
wait
'''
timeout = "1s"
params.tag = { type = "string" }
"#,
    );
    let mut s = f.serve().started();
    let r = s.ok(
        "tools/call",
        json!({"name": "stuck", "arguments": {"tag": "t"}}),
    );
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("timed out after 1s"), "{text}");
    let timed_out = pids(&f.root(), &["escaped.t"]);
    until(
        Duration::from_secs(1),
        "the timed-out call's escapee gone",
        || !running(timed_out[0]),
    );

    s.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "stuck", "arguments": {"tag": "c"}}}));
    let cancelled = pids(&f.root(), &["escaped.c"]);
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7}}),
    );
    until(
        Duration::from_secs(1),
        "the cancelled call's escapee gone",
        || !running(cancelled[0]),
    );
}

#[test]
#[cfg(target_os = "linux")] // processes observed through /proc; sh scripts, setsid
fn max_processes_bounds_running_tools_and_queues_in_order() {
    let f = Fixture::new();
    f.manifest(
        r#"
[server]
max_processes = 2

[tools.hold]
run = '''
echo "$id" >> order.log
while [ ! -e "release.$id" ]; do sleep 0.01; done
echo "released $id"
'''
params.id = { type = "string" }
"#,
    );
    let mut s = f.serve_process().started();
    let server = s.child.as_ref().expect("a process").id();
    for id in 1..=5 {
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "hold", "arguments": {"id": id.to_string()},
                       "_meta": {"progressToken": format!("p{id}")}}}));
    }
    let order = || std::fs::read_to_string(f.path("order.log")).unwrap_or_default();
    until(Duration::from_secs(20), "two calls started", || {
        order().lines().count() == 2
    });
    // The third waits: it reports so, and no third program starts (a negative: watched for a
    // while, counting the programs below the server's supervisor all along: a per-call
    // supervisor with a child).
    let waiting = s.wait_for(|m| {
        m["method"] == "notifications/progress" && m["params"]["progressToken"] == "p3"
    });
    let message = waiting["params"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("max_processes = 2"), "{message}");
    let supervisor = supervisor_of(server);
    let programs = || {
        children_of(supervisor)
            .into_iter()
            .filter(|&p| !children_of(p.unsigned_abs()).is_empty())
            .count()
    };
    let watch = Instant::now();
    while watch.elapsed() < Duration::from_millis(300) {
        assert!(programs() <= 2, "{} programs running", programs());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(order().lines().count(), 2, "{}", order());

    // A waiting call cancelled leaves the queue: 4 runs next, not 3.
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 3}}),
    );
    // The cancellation reaches the call asynchronously; it has when the call's "waiting"
    // progress (every 500 ms while it waits) stops: no new one for three ticks.
    let p3 = |s: &crate::support::Server| {
        s.pending()
            .iter()
            .filter(|m| m["params"]["progressToken"] == "p3")
            .count()
    };
    let (mut seen, mut since) = (p3(&s), Instant::now());
    until(
        Duration::from_secs(20),
        "the cancelled call stops waiting",
        || {
            s.ok("ping", json!({}));
            if p3(&s) != seen {
                (seen, since) = (p3(&s), Instant::now());
            }
            since.elapsed() > Duration::from_millis(1500)
        },
    );
    f.write("release.1", "");
    let done = s.response(&json!(1));
    assert_eq!(done["result"]["content"][0]["text"], "released 1\n");
    until(Duration::from_secs(20), "the fourth call started", || {
        order().lines().count() == 3
    });
    assert_eq!(order().lines().nth(2), Some("4"), "{}", order());
    f.write("release.2", "");
    until(Duration::from_secs(20), "the fifth call started", || {
        order().lines().count() == 4
    });
    // 1 and 2 started together (either may write first); then 4, then 5.
    let lines: Vec<String> = order().lines().map(str::to_owned).collect();
    let mut first = lines[..2].to_vec();
    first.sort();
    assert_eq!(first, ["1", "2"], "{lines:?}");
    assert_eq!(lines[2..], ["4", "5"], "{lines:?}");
    f.write("release.4", "");
    f.write("release.5", "");
    for id in [2, 4, 5] {
        let r = s.response(&json!(id));
        assert_eq!(
            r["result"]["content"][0]["text"],
            format!("released {id}\n")
        );
    }
    // 3 was cancelled: never run, never answered.
    let answered: Vec<&Value> = s.pending().iter().filter(|m| m["id"] == 3).collect();
    assert!(answered.is_empty(), "{answered:?}");
    assert!(!order().contains('3'));
}

#[test]
#[cfg(unix)] // sh scripts, execute bits, signals
fn server_path_comes_first_and_errors_name_the_path_searched() {
    let f = Fixture::new();
    let tool = f.write("bin/hello-tool", "#!/bin/sh\necho \"hello from $0\"\n");
    let mut perms = std::fs::metadata(&tool).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&tool, perms).expect("chmod");
    f.write("bin/not-executable", "#!/bin/sh\n");
    f.manifest(
        r#"
[server]
path = ["bin"]

[tools.hello]
command = ["hello-tool"]

[tools.script]
run = 'hello-tool; echo "$PATH"'

[tools.own_path]
command = ["hello-tool"]
env = { PATH = "/nowhere/at/all" }

[tools.missing]
command = ["no-such-program-anywhere"]
env = { PATH = "/nowhere/at/all" }

[tools.noexec]
command = ["not-executable"]
"#,
    );
    let bin = f.path("bin").display().to_string();
    let mut s = f.serve().started();
    let call = |s: &mut crate::support::Server, name: &str| {
        s.ok("tools/call", json!({"name": name, "arguments": {}}))
    };
    let r = call(&mut s, "hello");
    assert_eq!(r["isError"], false, "{r}");
    // A script's interpreter gets the path found, as `execvp` would give it.
    assert_eq!(
        r["content"][0]["text"],
        format!("hello from {bin}/hello-tool\n")
    );
    let r = call(&mut s, "script");
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    let path_line = text.lines().nth(1).unwrap_or_default();
    assert!(path_line.starts_with(&format!("{bin}:")), "{text}");
    let r = call(&mut s, "own_path");
    assert_eq!(r["isError"], false, "{r}");
    let r = call(&mut s, "missing");
    assert_eq!(r["isError"], true);
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(&format!(
            "program `no-such-program-anywhere` not found in PATH (`{bin}:/nowhere/at/all`)"
        )),
        "{text}"
    );
    let r = call(&mut s, "noexec");
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("permission denied"), "{text}");
}

#[test]
fn annotations_default_to_mcp_and_read_only_is_not_destructive() {
    let f = Fixture::new();
    f.manifest(
        r#"
[tools.bare]
run = 'true'
shell = "sh"

[tools.reader]
command = ["cat", "x"]
read_only = true

[tools.closed]
command = ["true"]
open_world = false
idempotent = true
destructive = false
"#,
    );
    let mut s = f.serve().started();
    let list = s.ok("tools/list", json!({}));
    let hints = |name: &str| {
        list["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .map(|t| t["annotations"].clone())
            .unwrap_or_default()
    };
    assert_eq!(
        hints("bare"),
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
    );
    assert_eq!(
        hints("reader"),
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true})
    );
    assert_eq!(
        hints("closed"),
        json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
}

#[test]
fn ok_exit_codes_make_no_match_a_success_with_empty_text() {
    let f = Fixture::new();
    f.write("notes.txt", "alpha\nbeta\n");
    f.manifest(
        &r#"
[tools.find]
command = ["{helper}", "grep", "{pattern}", "notes.txt"]
ok_exit_codes = [0, 1]
params.pattern = { type = "string" }

[tools.strict]
command = ["{helper}", "grep", "{pattern}", "notes.txt"]
params.pattern = { type = "string" }

[tools.broken]
command = ["{helper}", "grep", "{pattern}", "missing.txt"]
ok_exit_codes = [0, 1]
params.pattern = { type = "string" }
"#
        .replace("{helper}", &crate::support::helper_path()),
    );
    let mut s = f.serve().started();
    let mut call = |name: &str, pattern: &str| {
        s.ok(
            "tools/call",
            json!({"name": name, "arguments": {"pattern": pattern}}),
        )
    };
    let r = call("find", "beta");
    assert_eq!(r["isError"], false);
    assert_eq!(r["content"], json!([{"type": "text", "text": "beta\n"}]));
    let r = call("find", "gamma");
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["content"], json!([{"type": "text", "text": ""}]));
    let r = call("strict", "gamma");
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("exit code 1")),
        "{r}"
    );
    // grep's 2 (an error; the helper's `grep` exits as grep does) is not in the list.
    let r = call("broken", "x");
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("exit code 2") && t.contains("missing.txt")),
        "{r}"
    );
}

#[test]
fn bad_process_settings_are_manifest_errors_with_their_place() {
    let f = Fixture::new();
    assert_eq!(
        f.diagnose(
            r#"[server]
path = ["/usr/bin", "a:b", ""]

[tools.a]
command = ["true"]
ok_exit_codes = []

[tools.b]
command = ["true"]
ok_exit_codes = [0, 256]
read_only = true
destructive = true

[tools.c]
command = ["true"]
ok_exit_codes = [-1]
"#
        ),
        [
            "bad.toml:2:21: `path` entry `a:b` cannot be used in PATH: it is empty or holds `:` or a NUL",
            "bad.toml:2:28: `path` entry `` cannot be used in PATH: it is empty or holds `:` or a NUL",
            "bad.toml:6:17: `ok_exit_codes` of tool `a` is empty; list the exit codes that mean success (e.g. [0])",
            "bad.toml:10:21: `ok_exit_codes` of tool `b`: an exit code is 0 to 255, found 256",
            "bad.toml:12:15: tool `b` cannot be both `read_only` and `destructive`; a tool that only reads changes nothing",
            "bad.toml:16:18: `tools.c.ok_exit_codes[0]` must be at least 0, found -1",
        ]
    );
    assert_eq!(
        f.diagnose("[server]\nmax_processes = 0\n"),
        ["bad.toml:2:17: `server.max_processes` must be at least 1, found 0"]
    );
    assert_eq!(
        f.diagnose("[server]\nmax_processes = 5000\n"),
        ["bad.toml:2:17: `max_processes` must be at most 4096, found 5000"]
    );
}

#[test]
#[cfg(target_os = "linux")] // processes observed through /proc; sh scripts, setsid
fn a_tool_that_kills_its_supervisor_still_has_its_whole_tree_killed() {
    // Issue 35: the supervisor is killed by the tool itself (`kill -9 $PPID`), so it cannot
    // clean up. The server sees its report end without an ending, kills the tool's group and (as
    // a child subreaper, Linux) every process that came back to it, escapees included.
    let f = Fixture::new();
    f.manifest(
        r#"
[tools.rogue]
run = '''
echo $$ > sh.pid
sleep 300 & echo $! > child.pid
setsid sh -c 'sleep 300 & echo $! > escaped.pid; wait' &
while [ ! -s escaped.pid ]; do sleep 0.01; done
kill -9 $PPID
wait
'''
"#,
    );
    let mut s = f.serve_process().started();
    let server = s.child.as_ref().expect("a process").id();
    let r = s.ok("tools/call", json!({"name": "rogue", "arguments": {}}));
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    // (Killed before it reported the program's pid, the call cannot start; either way the
    // tree goes.)
    assert!(
        text.contains("killed by signal 9") || text.contains("ended before starting it"),
        "{text}"
    );
    let tracked = pids(&f.root(), &["sh.pid", "child.pid", "escaped.pid"]);
    until(Duration::from_secs(2), "the rogue tool's tree gone", || {
        tracked.iter().all(|&p| !running(p))
    });
    // Reaped too: nothing of it is left below the server's supervisor (not even a zombie).
    let supervisor = supervisor_of(server);
    until(
        Duration::from_secs(2),
        "nothing left below the supervisor but an idle one",
        || idle(supervisor),
    );
    // And the server goes on.
    let r = s.ok("tools/call", json!({"name": "rogue", "arguments": {}}));
    assert_eq!(r["isError"], true, "{r}");
}

/// A server whose supervisor a tool (`freeze`) has stopped with SIGSTOP, with a tool `hello`
/// (`echo hello`) of that `timeout` and `more` manifest text; and the stopped supervisor's pid.
#[cfg(target_os = "linux")]
fn with_stopped_supervisor(
    f: &Fixture,
    timeout: &str,
    more: &str,
) -> (crate::support::Server, u32) {
    f.manifest(&format!(
        r#"
[tools.freeze]
run = "kill -STOP $(awk '{{print $4}}' /proc/$PPID/stat)"

[tools.hello]
command = ["echo", "hello"]
timeout = "{timeout}"
{more}"#
    ));
    let mut s = f.serve_process().started();
    let server = s.child.as_ref().expect("a process").id();
    let r = s.ok("tools/call", json!({"name": "freeze", "arguments": {}}));
    assert_eq!(r["isError"], false, "{r}");
    let stopped = supervisor_of(server);
    (s, stopped)
}

/// A supervisor that stops answering (here stopped by a tool with SIGSTOP) cannot hold calls
/// past their `timeout`: starting a program counts in it, so each later call ends "timed out"
/// (or runs, on the per-call supervisor kept idle) within its timeout, and the server answers.
#[test]
#[cfg(target_os = "linux")] // the supervisor found through /proc; an sh script
fn calls_end_at_their_timeout_when_the_supervisor_does_not_answer() {
    let f = Fixture::new();
    let mut s = with_stopped_supervisor(&f, "1s", "").0;
    for _ in 0..3 {
        let start = Instant::now();
        let r = s.ok("tools/call", json!({"name": "hello", "arguments": {}}));
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert!(r["isError"] == false || text.contains("timed out"), "{r}");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
    }
    s.ok("ping", json!({}));
}

/// A supervisor paused for a moment (stopped, then continued) while its socket fills: calls
/// queued there before it was full are not lost (a full socket alone is not a supervisor that
/// takes no calls; it is killed only after `UNRESPONSIVE`), and run once it goes on.
#[test]
#[cfg(target_os = "linux")] // the supervisor and descriptors found through /proc; an sh script
fn calls_queued_to_a_supervisor_paused_for_a_moment_all_run() {
    const HELD: usize = 10;
    let f = Fixture::new();
    let more = "\n[tools.quick]\ncommand = [\"true\"]\ntimeout = \"100ms\"\n\n[server]\nmax_processes = 64\n";
    let (mut s, stopped) = with_stopped_supervisor(&f, "60s", more);
    let server = s.child.as_ref().expect("a process").id();
    let fds = || {
        std::fs::read_dir(format!("/proc/{server}/fd"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    // Calls that will wait for it, queued first (four descriptors each once handed over).
    let before = fds();
    let held = s.start_calls("hello", HELD);
    until(
        Duration::from_secs(20),
        "the held calls handed over",
        || fds() >= before + 4 * HELD,
    );
    // Then more calls than its socket holds (~270 with the default buffer of 208 KiB), each
    // timing out: the socket fills, and the last ones find it full.
    let quick = s.start_calls("quick", 320);
    for id in &quick {
        let r = s.response(&json!(id));
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("timed out"), "{r}");
    }
    let pid = rustix::process::Pid::from_raw(stopped.cast_signed()).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).expect("SIGCONT");
    for id in &held {
        let r = s.response(&json!(id));
        assert_eq!(r["result"]["content"][0]["text"], "hello\n", "{r}");
    }
}

/// A supervisor stopped for good: each call handed to it times out, and once its socket has
/// stayed full (hundreds of calls) for `UNRESPONSIVE` (5 s), the server kills it and starts
/// another, never blocking on it meanwhile (which would hold the runtime, and every request
/// with it).
#[test]
#[cfg(target_os = "linux")] // the supervisor found through /proc; an sh script
fn a_supervisor_that_takes_no_calls_is_replaced_and_never_waited_on() {
    let f = Fixture::new();
    let prompt = r#"
[prompts.p]
description = "answered by rmcp, on the runtime"
messages = [{ role = "user", text = "hi" }]
"#;
    let (mut s, stopped) = with_stopped_supervisor(&f, "100ms", prompt);
    // More calls than its socket holds (~200 with the default buffer of 208 KiB) and than
    // time out in the 5 s it stays full (16 at a time, 100 ms each: ~800).
    let ids = s.start_calls("hello", 2500);
    let mut ran = 0;
    for id in &ids {
        let r = s.response(&json!(id));
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        // Handed to the stopped one: timed out, or ended with it when it was killed.
        if text == "hello\n" {
            ran += 1;
        } else {
            assert!(
                text.contains("timed out") || text.contains("ended before starting it"),
                "{r}"
            );
        }
    }
    assert!(ran > 0, "no call ran on a new supervisor");
    let r = s.ok("prompts/get", json!({"name": "p"}));
    assert_eq!(r["messages"][0]["content"]["text"], "hi", "{r}");
    let r = s.ok("tools/call", json!({"name": "hello", "arguments": {}}));
    assert_eq!(r["content"][0]["text"], "hello\n", "{r}");
    until(
        Duration::from_secs(10),
        "the stopped supervisor gone",
        || !running(stopped.cast_signed()),
    );
}

#[test]
#[cfg(target_os = "linux")] // processes observed through /proc; sh scripts, setsid
fn a_tool_that_kills_the_servers_supervisor_is_killed_with_its_tree_and_calls_go_on() {
    // The supervisor that forks one for each call is killed by a tool (its grandparent). The
    // calls' supervisors come back to the server (a child subreaper), which kills them and
    // everything below them, and starts another supervisor at the next call.
    let f = Fixture::new();
    f.manifest(
        r#"
[tools.rogue]
run = '''
echo $$ > sh.pid
sleep 300 & echo $! > child.pid
setsid sh -c 'sleep 300 & echo $! > escaped.pid; wait' &
while [ ! -s escaped.pid ]; do sleep 0.01; done
kill -9 $(awk '{print $4}' /proc/$PPID/stat)
wait
'''

[tools.hello]
command = ["echo", "hello"]
"#,
    );
    let mut s = f.serve_process().started();
    let server = s.child.as_ref().expect("a process").id();
    let r = s.ok("tools/call", json!({"name": "rogue", "arguments": {}}));
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("killed by signal 9"), "{text}");
    let tracked = pids(&f.root(), &["sh.pid", "child.pid", "escaped.pid"]);
    until(Duration::from_secs(2), "the rogue tool's tree gone", || {
        tracked.iter().all(|&p| !running(p))
    });
    until(
        Duration::from_secs(2),
        "the dead supervisor reaped, nothing left",
        || children_of(server).is_empty(),
    );
    let r = s.ok("tools/call", json!({"name": "hello", "arguments": {}}));
    assert_eq!(r["content"][0]["text"], "hello\n", "{r}");
    let supervisor = supervisor_of(server);
    until(
        Duration::from_secs(2),
        "a new supervisor and one idle below it",
        || idle(supervisor) && descendants(server).len() == 2,
    );
}

#[test]
#[cfg(target_os = "linux")] // processes observed through /proc
fn a_per_call_supervisor_takes_the_next_call_and_keeps_nothing_of_the_last() {
    // A per-call supervisor left idle takes the next call (no fork on the way of a call); what a
    // call set (its folder, its environment, its descriptors) is not the next call's. Each
    // program says first which per-call supervisor ran it (its parent, `$PPID`).
    let f = Fixture::new();
    f.write("sub/marker", "x");
    let helper = crate::support::helper().display().to_string();
    f.manifest(&format!(
        r#"
[tools.setter]
run = 'pwd; echo "$ONLY_HERE"'
cwd = "sub"
env = {{ ONLY_HERE = "set" }}

[tools.getter]
run = 'echo $PPID; pwd; echo "[$ONLY_HERE]"; ls /proc/self/fd | wc -l'

[tools.stdin]
run = 'echo $PPID; exec "{helper}" stdin'
"#
    ));
    let mut s = f.serve_process().started();
    let server = s.child.as_ref().expect("a process").id();
    let mut text = |name: &str| {
        let r = s.ok("tools/call", json!({"name": name, "arguments": {}}));
        assert_eq!(r["isError"], false, "{r}");
        r["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let root = std::fs::canonicalize(f.root()).expect("root");
    assert_eq!(
        text("setter"),
        format!("{}\nset\n", root.join("sub").display())
    );
    let supervisor = supervisor_of(server);
    until(
        Duration::from_secs(10),
        "one idle per-call supervisor",
        || idle(supervisor) && children_of(supervisor).len() == 1,
    );
    let first = children_of(supervisor)[0];
    // What `name` printed after its parent's pid, once the first per-call supervisor ran it.
    // An answer can reach the client before its per-call supervisor has told the supervisor it
    // waits again; a call sent in that moment is given a new one (which `KEEP_IDLE` keeps). So
    // a call run elsewhere is sent again, once everything is idle.
    let mut on_first = |name: &str| {
        for _ in 0..20 {
            until(Duration::from_secs(10), "idle again", || idle(supervisor));
            let out = text(name);
            let (parent, rest) = out.split_once('\n').expect("the parent's pid, a line");
            if parent.trim().parse::<i32>().ok() == Some(first) {
                return rest.to_owned();
            }
        }
        panic!("`{name}` never ran in the per-call supervisor that ran `setter`")
    };
    // `ls`'s own listing is a fourth descriptor (0, 1, 2, 3), as in a fresh process.
    assert_eq!(on_first("getter"), format!("{}\n[]\n4\n", root.display()));
    assert_eq!(on_first("stdin"), "0");
}

#[test]
#[cfg(target_os = "linux")] // processes observed through /proc
fn calls_started_together_leave_a_few_per_call_supervisors_waiting_for_the_next_ones() {
    // Eight calls run at once (each reads a FIFO the test holds open, until the test closes
    // it): eight per-call supervisors. Once they are done, `KEEP_IDLE` of them wait for calls
    // and the rest end; the next calls started together are taken by those (no fork).
    let f = Fixture::new();
    let gate = f.path("gate");
    let made = std::process::Command::new("mkfifo")
        .arg(&gate)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    f.manifest(
        r#"
[tools.wait]
run = 'cat gate; echo done'

[tools.hi]
run = 'echo hi'
"#,
    );
    let mut s = f.serve_process().started();
    let server = s.child.as_ref().expect("a process").id();
    // Processes below the server reading the FIFO.
    let readers = || {
        descendants(server)
            .iter()
            .filter(|p| {
                std::fs::read_dir(format!("/proc/{}/fd", p.unsigned_abs()))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == gate))
            })
            .count()
    };
    let round = |s: &mut crate::support::Server, n: usize, running: &dyn Fn() -> bool| {
        // Open for reading and writing: the programs' opens do not wait, their reads do,
        // until this (the only writer) closes.
        let held = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&gate)
            .expect("open the FIFO");
        let ids = s.start_calls("wait", n);
        until(Duration::from_secs(20), "every program reading", || {
            readers() == n && running()
        });
        drop(held);
        for id in &ids {
            let r = s.response(&json!(id));
            assert_eq!(r["result"]["content"][0]["text"], "done\n", "{r}");
        }
    };
    // The supervisor starts with the first call.
    let r = s.ok("tools/call", json!({"name": "hi", "arguments": {}}));
    assert_eq!(r["content"][0]["text"], "hi\n", "{r}");
    let supervisor = supervisor_of(server);
    round(&mut s, 8, &|| children_of(supervisor).len() == 8);
    until(
        Duration::from_secs(5),
        "four per-call supervisors waiting",
        || idle(supervisor) && children_of(supervisor).len() == KEEP_IDLE,
    );
    let kept = children_of(supervisor);
    round(&mut s, KEEP_IDLE, &|| children_of(supervisor) == kept);
    until(
        Duration::from_secs(5),
        "the same four waiting again",
        || idle(supervisor) && children_of(supervisor) == kept,
    );
}

#[test]
#[cfg(unix)] // sh scripts, execute bits, signals
fn the_programs_own_ending_is_reported_and_scripts_without_interpreter_run_in_sh() {
    let f = Fixture::new();
    let script = |name: &str, text: &str| {
        let file = f.write(name, text);
        let mut perms = std::fs::metadata(&file).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&file, perms).expect("chmod");
        file.display().to_string()
    };
    let plain = script("plain", "echo \"ran by sh: $0 $1\"\n");
    let broken = script("broken", "#!/no/such/interpreter\n");
    f.manifest(&format!(
        r#"
[tools.segv]
run = 'kill -SEGV $$'

[tools.max]
run = 'exit 255'

[tools.plain]
command = ["{plain}", "one"]

[tools.broken]
command = ["{broken}"]
"#
    ));
    let mut s = f.serve().started();
    let mut text = |name: &str| {
        let r = s.ok("tools/call", json!({"name": name, "arguments": {}}));
        r["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let t = text("segv");
    assert!(t.contains("failed: killed by signal 11 (SIGSEGV)"), "{t}");
    let t = text("max");
    assert!(t.contains("failed: exit code 255"), "{t}");
    // ENOEXEC: the shell runs it, with the arguments (as `execvp` does).
    assert_eq!(text("plain"), format!("ran by sh: {plain} one\n"));
    // The kernel's own ENOENT (the interpreter is missing) names the program.
    let t = text("broken");
    assert!(
        t.contains(&format!("program `{broken}` does not exist")),
        "{t}"
    );
}

#[test]
#[cfg(target_os = "linux")] // processes observed through /proc; sh scripts, setsid
fn a_program_starts_clean_stdin_at_eof_no_extra_descriptors_no_signal_ignored_or_blocked() {
    // Each checked by the program itself (a shell would hold descriptors of its own).
    let f = Fixture::new();
    let helper = crate::support::helper().display().to_string();
    f.manifest(&format!(
        r#"
[tools.stdin]
command = ["{helper}", "stdin"]

[tools.fds]
command = ["ls", "/proc/self/fd"]

[tools.signals]
command = ["grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"]
"#
    ));
    let mut s = f.serve().started();
    let mut text = |name: &str| {
        let r = s.ok("tools/call", json!({"name": name, "arguments": {}}));
        assert_eq!(r["isError"], false, "{r}");
        r["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // stdin is the null device: at EOF at once.
    assert_eq!(text("stdin"), "0");
    // Only 0, 1 and 2 (3 is `ls`'s own listing): not the server's, not the supervisor's
    // socket, not what the server inherited without close-on-exec.
    assert_eq!(text("fds"), "0\n1\n2\n3\n");
    // SIGPIPE back to its default action (Rust ignores it), no signal blocked.
    let status = text("signals");
    let mask = |name: &str| {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {status}"));
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap_or_default(), 16)
            .unwrap_or(u64::MAX)
    };
    assert_eq!(mask("SigBlk:"), 0, "{status}");
    assert_eq!(mask("SigIgn:") & (1 << (libc::SIGPIPE - 1)), 0, "{status}");
}

#[test]
fn output_over_the_cap_is_cut_even_when_the_program_exits_first() {
    // The helper writes everything into the pipe and exits before the reader reaches the cap.
    let f = Fixture::new();
    let helper = crate::support::helper_path();
    f.manifest(&format!(
        r#"
[tools.over]
command = ["{helper}", "bytes", "5000"]
max_output = "1KiB"

[tools.exact]
command = ["{helper}", "bytes", "1024"]
max_output = "1KiB"
"#
    ));
    let mut s = f.serve().started();
    for _ in 0..10 {
        let r = s.ok("tools/call", json!({"name": "over", "arguments": {}}));
        assert_eq!(r["isError"], true, "{r}");
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(&"x".repeat(1024)), "{text}");
        assert!(text.contains("[output cut"), "{text}");
    }
    let r = s.ok("tools/call", json!({"name": "exact", "arguments": {}}));
    assert_eq!(r["isError"], false, "exactly max_output is not cut: {r}");
    assert_eq!(r["content"][0]["text"], "x".repeat(1024));
}

#[test]
fn timeout_cancel_and_exit_kill_the_grandchildren_on_every_platform() {
    // The helper starts a grandchild and then sleeps (or exits at once): its whole tree goes on
    // timeout, on cancellation and when it exits (Unix: its supervisor; Windows: its job).
    use crate::tools::{alive, read_pid, wait_gone};
    let f = Fixture::new();
    let helper = crate::support::helper_path();
    f.manifest(&format!(
        r#"
[tools.slow]
command = ["{helper}", "spawn", "{{tag}}.gc", "wait", "{{tag}}.gc", "pid", "{{tag}}.tool", "sleep", "100000"]
timeout = "3s"
params.tag = {{ type = "string" }}

[tools.quick]
command = ["{helper}", "spawn", "quick.gc", "wait", "quick.gc", "outln", "done"]
"#
    ));
    let mut s = f.serve().started();
    let r = s.ok(
        "tools/call",
        json!({"name": "slow", "arguments": {"tag": "t"}}),
    );
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("timed out after 3s"), "{r}");
    wait_gone(read_pid(&f, "t.tool"), "the timed-out tool");
    wait_gone(read_pid(&f, "t.gc"), "the timed-out tool's grandchild");

    s.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"tag": "c"}}}));
    let started = pids(&f.root(), &["c.tool", "c.gc"]);
    assert!(started.iter().all(|&p| alive(p)), "{started:?}");
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7}}),
    );
    for p in started {
        wait_gone(p, "a cancelled call's process");
    }

    let r = s.ok("tools/call", json!({"name": "quick", "arguments": {}}));
    assert_eq!(r["content"][0]["text"], "done\n", "{r}");
    wait_gone(
        read_pid(&f, "quick.gc"),
        "what the tool left running when it exited",
    );
}

/// A server killed outright (SIGKILL; Windows: `TerminateProcess`, no event of any kind) leaves
/// none of its tools' processes running, grandchildren included: Unix's supervisor sees its
/// parent go, Windows closes the server's handle of each tool's Job Object
/// (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`).
#[test]
fn a_killed_server_leaves_no_tool_process_on_every_platform() {
    use crate::tools::{alive, wait_gone};
    let f = Fixture::new();
    let helper = crate::support::helper_path();
    f.manifest(&format!(
        r#"
[tools.slow]
command = ["{helper}", "spawn", "k.gc", "wait", "k.gc", "pid", "k.tool", "sleep", "100000"]
"#
    ));
    let mut s = f.serve_process().started();
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}}}));
    let started = pids(&f.root(), &["k.tool", "k.gc"]);
    assert!(started.iter().all(|&p| alive(p)), "{started:?}");
    let mut server = s.child.take().expect("a server process");
    server.kill().expect("kill the server");
    server.wait().expect("reaped");
    for p in started {
        wait_gone(p, "a killed server's tool process");
    }
}
