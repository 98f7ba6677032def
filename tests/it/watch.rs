//! Change notifications: subscriptions in both eras, list_changed, and manifest hot reload.

use serde_json::{Value, json};

use crate::support::{Fixture, Server, list_all};

fn is_method(v: &Value, method: &str) -> bool {
    v.get("method").and_then(Value::as_str) == Some(method)
}

fn updated_for(uri: String) -> impl Fn(&Value) -> bool {
    move |v: &Value| {
        is_method(v, "notifications/resources/updated") && v["params"]["uri"] == uri.as_str()
    }
}

/// Fails if an update for `uri` was sent for any change made before this call. Signals, not a
/// timer: the sentinel file (subscribed by `watching`) is changed twice, each change waited for;
/// the second is announced in a later batch than anything changed before the call, and one
/// session's messages arrive in order.
fn assert_no_update(s: &mut Server, f: &Fixture, uri: &str) {
    let sentinel = f.uri("sentinel/s.md");
    for round in 0..2 {
        f.write("sentinel/s.md", format!("round {round}"));
        s.wait_for(updated_for(sentinel.clone()));
    }
    let stray = s.pending().iter().find(|v| updated_for(uri.to_owned())(v));
    assert!(stray.is_none(), "unexpected {stray:?}");
}

/// Subscribes to the sentinel file: answered once the watcher watches what the manifest needs,
/// so it is also the signal that changes from now on are seen.
fn watching(s: &mut Server, f: &Fixture) {
    s.ok(
        "resources/subscribe",
        json!({"uri": f.uri("sentinel/s.md")}),
    );
}

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("docs/a.md", "one");
    f.write("sentinel/s.md", "s");
    f.manifest("[files.docs]\nroot = \"docs\"\n\n[files.sentinel]\nroot = \"sentinel\"\n");
    f
}

#[test]
fn a_subscribed_file_that_changes_is_reported_and_unsubscribe_stops_it() {
    let f = fixture();
    let mut s = f.serve().started();
    let uri = f.uri("docs/a.md");
    s.ok("resources/subscribe", json!({"uri": uri}));
    watching(&mut s, &f);
    f.write("docs/a.md", "two");
    s.wait_for(updated_for(uri.clone()));
    let r = s.ok("resources/read", json!({"uri": uri}));
    assert_eq!(r["contents"][0]["text"], "two");

    // An editor-style save: write a temp file, rename it over the original.
    f.write("docs/.a.md.swp", "three");
    std::fs::rename(f.path("docs/.a.md.swp"), f.path("docs/a.md")).unwrap();
    s.wait_for(updated_for(uri.clone()));

    s.ok("resources/unsubscribe", json!({"uri": uri}));
    f.write("docs/a.md", "four");
    assert_no_update(&mut s, &f, &uri);
}

#[test]
fn adding_and_removing_files_sends_list_changed() {
    let f = fixture();
    let mut s = f.serve();
    let r = s.initialize("2025-11-25");
    assert_eq!(r["capabilities"]["resources"]["listChanged"], true);
    assert_eq!(r["capabilities"]["resources"]["subscribe"], true);
    watching(&mut s, &f);
    f.write("docs/b.md", "new");
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(all.len(), 3);
    std::fs::remove_file(f.path("docs/b.md")).unwrap();
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(all.len(), 2);
}

#[test]
fn files_in_a_brand_new_folder_are_listed_and_then_watched() {
    let f = fixture();
    let mut s = f.serve().started();
    watching(&mut s, &f);
    f.write("docs/new/deeper/x.md", "x");
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    let names: Vec<&str> = all.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["a.md", "new/deeper/x.md", "s.md"]);
    // Answered once the new folders are watched: the next change is seen.
    let uri = f.uri("docs/new/deeper/x.md");
    s.ok("resources/subscribe", json!({"uri": uri}));
    f.write("docs/new/deeper/x.md", "changed");
    s.wait_for(updated_for(uri));
}

#[test]
fn stateless_listen_streams_acknowledge_and_tag_notifications() {
    let f = fixture();
    let mut s = f.serve();
    let uri = f.uri("docs/a.md");
    let mut params =
        json!({"notifications": {"resourceSubscriptions": [uri], "resourcesListChanged": true}});
    params["_meta"] = crate::support::modern_meta();
    s.send(&json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": params}));
    let ack = s.wait_for(|v| is_method(v, "notifications/subscriptions/acknowledged"));
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!([uri])
    );
    // Acknowledged only once the watch is in place: the next change is seen.
    f.write("docs/a.md", "changed");
    let n = s.wait_for(updated_for(uri.clone()));
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    f.write("docs/c.md", "added");
    let n = s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    // Cancelling the listen ends the stream: a second stream (on the sentinel) still hears its
    // changes, the first nothing.
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen-1"}}));
    let mut params = json!({"notifications": {"resourceSubscriptions": [f.uri("sentinel/s.md")]}});
    params["_meta"] = crate::support::modern_meta();
    s.send(&json!({"jsonrpc": "2.0", "id": "listen-2", "method": "subscriptions/listen", "params": params}));
    s.wait_for(|v| {
        is_method(v, "notifications/subscriptions/acknowledged")
            && v["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-2"
    });
    f.write("docs/a.md", "again");
    assert_no_update(&mut s, &f, &uri);
}

#[test]
fn a_valid_manifest_edit_is_applied_and_announced() {
    let f = fixture();
    f.write("more/z.md", "z");
    let mut s = f.serve().started();
    watching(&mut s, &f);
    f.manifest("[server]\nresource_tools = false\n\n[files.docs]\nroot = \"docs\"\n\n[files.more]\nroot = \"more\"\n");
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    s.wait_for(|v| is_method(v, "notifications/tools/list_changed"));
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(all.len(), 2);
    // The new source is watched too (before the list_changed went out).
    let uri = f.uri("more/z.md");
    s.ok("resources/subscribe", json!({"uri": uri}));
    f.write("more/z.md", "zz");
    s.wait_for(updated_for(uri));
}

#[test]
fn an_invalid_manifest_edit_is_logged_and_the_old_one_keeps_serving() {
    let f = fixture();
    let mut s = f.serve().started();
    watching(&mut s, &f);
    f.manifest("[files.docs]\nroot = \"docs\"\ninlcude = []\n");
    let msg = s.wait_for(|v| is_method(v, "notifications/message"));
    assert_eq!(msg["params"]["level"], "error");
    let text = msg["params"]["data"].as_str().unwrap_or_default();
    assert!(
        text.contains("mcp-server.toml:3:1: unknown key `inlcude`, did you mean `include`?"),
        "{text}"
    );
    let r = s.ok("resources/read", json!({"uri": f.uri("docs/a.md")}));
    assert_eq!(r["contents"][0]["text"], "one");
}

#[test]
fn editing_an_ignore_file_changes_the_list() {
    let f = fixture();
    f.write("docs/b.log", "log");
    let mut s = f.serve().started();
    watching(&mut s, &f);
    assert_eq!(list_all(&mut s, "resources/list", "resources").0.len(), 3);
    f.write("docs/.gitignore", "*.log\n");
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    assert_eq!(list_all(&mut s, "resources/list", "resources").0.len(), 2);
    let e = s.err("resources/read", json!({"uri": f.uri("docs/b.log")}));
    assert_eq!(e["code"], -32002);
}

/// A subscription is answered only once its change can be seen: on a fresh server watching 200
/// folders, a write made right after the answer is always announced.
#[test]
fn a_write_right_after_subscribing_is_announced() {
    for round in 0..10 {
        let f = fixture();
        for i in 0..200 {
            f.write(&format!("docs/d{i:03}/x.md"), "x");
        }
        let mut s = f.serve().started();
        let uri = f.uri("docs/d199/x.md");
        s.ok("resources/subscribe", json!({"uri": uri}));
        f.write("docs/d199/x.md", format!("round {round}"));
        s.wait_for(updated_for(uri));
    }
}

/// Counts `updated` notifications for `uri` among everything received so far (the sentinel makes
/// sure every notification of earlier changes has arrived).
fn updates_so_far(s: &mut Server, f: &Fixture, uri: &str) -> usize {
    let sentinel = f.uri("sentinel/s.md");
    for round in 0..2 {
        f.write("sentinel/s.md", format!("count {round}"));
        s.wait_for(updated_for(sentinel.clone()));
    }
    s.pending()
        .iter()
        .filter(|v| updated_for(uri.to_owned())(v))
        .count()
}

/// Writes `docs/a.md` 500 times over about a second; returns how long that took.
fn burst(f: &Fixture) -> std::time::Duration {
    let start = std::time::Instant::now();
    for i in 0..500 {
        f.write("docs/a.md", format!("write {i}"));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    start.elapsed()
}

/// One URI gets at most one `updated` per window, and the last change of a burst is announced.
#[test]
fn a_burst_of_writes_gives_at_most_one_update_per_window() {
    for (manifest_extra, window_ms) in [("", 50), ("[server]\ndebounce = \"200ms\"\n\n", 200)] {
        let f = fixture();
        f.manifest(&format!(
            "{manifest_extra}[files.docs]\nroot = \"docs\"\n\n[files.sentinel]\nroot = \"sentinel\"\n"
        ));
        let mut s = f.serve().started();
        let uri = f.uri("docs/a.md");
        s.ok("resources/subscribe", json!({"uri": uri}));
        watching(&mut s, &f);
        let took = burst(&f);
        let n = updates_so_far(&mut s, &f, &uri);
        let windows = took.as_millis().div_ceil(window_ms) as usize;
        assert!(
            n >= 1 && n <= windows,
            "{n} updates in {took:?} ({window_ms} ms windows)"
        );
        // The last one came after the last write: what it announces is the final text.
        let r = s.ok("resources/read", json!({"uri": uri}));
        assert_eq!(r["contents"][0]["text"], "write 499");
    }
}

/// Listing a big tree causes no events of its own, so a file created right after is announced
/// and listed (a flood of the walk's own events used to overflow the kernel queue).
#[test]
fn a_file_created_after_listing_a_big_tree_is_announced() {
    let f = fixture();
    for i in 0..10_000 {
        f.mkdir(&format!("docs/t{:02}/d{i:05}", i % 50));
    }
    let mut s = f.serve().started();
    watching(&mut s, &f);
    let (before, _) = list_all(&mut s, "resources/list", "resources");
    f.write("docs/t07/d00007/new.md", "new");
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    let (after, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(after.len(), before.len() + 1);
}

/// A source's root folder going away (deleted or moved) empties its list: clients hear of it.
// Unix only: Windows holds a watched root open without FILE_SHARE_DELETE (`platform::windows`),
// so it cannot be deleted or moved while served.
#[cfg(unix)]
#[test]
fn a_deleted_or_moved_root_sends_list_changed() {
    for how in ["delete", "move"] {
        let f = fixture();
        let mut s = f.serve().started();
        watching(&mut s, &f);
        assert_eq!(list_all(&mut s, "resources/list", "resources").0.len(), 2);
        // Reads of a watched source start from its root folder, kept open: it must follow the
        // root, not the folder that was there.
        let read = |s: &mut crate::support::Server, rel: &str| {
            s.call("resources/read", json!({"uri": f.uri(rel)}))
        };
        assert_eq!(
            read(&mut s, "docs/a.md")["result"]["contents"][0]["text"],
            "one"
        );
        match how {
            "delete" => std::fs::remove_dir_all(f.path("docs")).unwrap(),
            _ => std::fs::rename(f.path("docs"), f.path("elsewhere")).unwrap(),
        }
        s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
        assert_eq!(
            list_all(&mut s, "resources/list", "resources").0.len(),
            1,
            "{how}"
        );
        assert_eq!(read(&mut s, "docs/a.md")["error"]["code"], -32002, "{how}");
        // It coming back is seen too.
        f.write("docs/back.md", "back");
        s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
        assert_eq!(list_all(&mut s, "resources/list", "resources").0.len(), 2);
        let back = read(&mut s, "docs/back.md");
        assert_eq!(
            back["result"]["contents"][0]["text"], "back",
            "{how}: {back}"
        );
    }
}

/// Only what the server would read can be subscribed to: a hidden or ignored file, a missing
/// table, or a URI of no source is "not found", in both eras.
#[test]
fn subscriptions_to_what_is_not_served_are_not_found() {
    let f = fixture();
    f.write("docs/.env", "SECRET=1");
    f.write("docs/.gitignore", "*.log\n");
    f.write("docs/x.log", "log");
    let mut s = f.serve().started();
    for uri in [
        f.uri("docs/.env"),
        f.uri("docs/x.log"),
        f.uri("docs/missing.md"),
        f.uri("docs/../mcp-server.toml"),
        "nope://x".to_owned(),
    ] {
        let e = s.err("resources/subscribe", json!({"uri": uri}));
        assert_eq!(e["code"], -32002, "{uri}: {e}");
    }
    watching(&mut s, &f);
    // A hidden file's changes are never announced (nothing subscribed it).
    f.write("docs/.env", "SECRET=2");
    assert_no_update(&mut s, &f, &f.uri("docs/.env"));
    let mut params = json!({"notifications": {"resourceSubscriptions": [f.uri("docs/.env")]}});
    params["_meta"] = crate::support::modern_meta();
    let r = s.call("subscriptions/listen", params);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not found"),
        "{r}"
    );
}

/// A manifest replaced by something that is not a regular file (a FIFO nobody writes) is an
/// invalid edit: logged, and the previous manifest keeps serving; nothing hangs.
// Unix only: FIFOs (Windows has none in its file system).
#[cfg(unix)]
#[test]
fn a_manifest_replaced_by_a_fifo_is_an_invalid_edit() {
    let f = fixture();
    let mut s = f.serve().started();
    watching(&mut s, &f);
    let path = f.path("mcp-server.toml");
    std::fs::remove_file(&path).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let msg = s.wait_for(|v| is_method(v, "notifications/message"));
    let text = msg["params"]["data"].as_str().unwrap_or_default();
    assert!(text.contains("not a regular file"), "{text}");
    assert_eq!(s.ok("ping", json!({})), json!({}));
    let r = s.ok("resources/read", json!({"uri": f.uri("docs/a.md")}));
    assert_eq!(r["contents"][0]["text"], "one");
}

#[test]
fn a_polled_root_reports_changes_without_the_systems_watcher() {
    let f = Fixture::new();
    f.write("docs/a.md", "one");
    f.write("sentinel/s.md", "s");
    // Only the manifest's folder is watched by the system (not recursively): what happens in
    // `docs` is seen by polling alone.
    f.manifest(
        "[files.docs]\nroot = \"docs\"\nwatch = \"poll\"\npoll_interval = \"100ms\"\n\n\
         [files.sentinel]\nroot = \"sentinel\"\n",
    );
    let mut s = f.serve().started();
    watching(&mut s, &f);
    let uri = f.uri("docs/a.md");
    s.ok("resources/subscribe", json!({"uri": uri}));
    f.write("docs/a.md", "two, longer");
    s.wait_for(updated_for(uri.clone()));
    // The same size, written again: the times say it changed.
    f.write("docs/a.md", "two, LONGER");
    s.wait_for(updated_for(uri.clone()));
    f.write("docs/new/deeper/x.md", "x");
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    let names: Vec<&str> = all.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["a.md", "new/deeper/x.md", "s.md"]);
    // Answered once the new folders are polled: the next change is seen.
    let deeper = f.uri("docs/new/deeper/x.md");
    s.ok("resources/subscribe", json!({"uri": deeper}));
    f.write("docs/new/deeper/x.md", "changed");
    s.wait_for(updated_for(deeper));
    std::fs::remove_file(f.path("docs/a.md")).unwrap();
    s.wait_for(updated_for(uri.clone()));
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    // Unsubscribed, nothing more is said of it.
    s.ok("resources/unsubscribe", json!({"uri": uri}));
    f.write("docs/a.md", "back");
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    assert_no_update(&mut s, &f, &uri);
}

fn list_changes_so_far(s: &mut Server, f: &Fixture) -> usize {
    let sentinel = f.uri("sentinel/s.md");
    for round in 0..2 {
        f.write("sentinel/s.md", format!("count {round}"));
        s.wait_for(updated_for(sentinel.clone()));
    }
    s.pending()
        .iter()
        .filter(|v| is_method(v, "notifications/resources/list_changed"))
        .count()
}

/// Creating, removing and renaming hidden files (an editor's swap file, an ignored log, a
/// dot-folder) sends no `list_changed`, with or without a listing kept; a visible file removed
/// does.
#[test]
fn changes_to_hidden_files_send_no_list_changed() {
    for listed in [false, true] {
        let f = fixture();
        f.write("docs/.gitignore", "*.log\n");
        f.write("docs/.a.md.swp", "swap");
        f.write("docs/x.log", "log");
        f.write("docs/.cache/c.bin", "c");
        f.write("docs/notes.txt", "not included");
        f.manifest(
            "[files.docs]\nroot = \"docs\"\ninclude = [\"**/*.md\"]\n\n\
             [files.sentinel]\nroot = \"sentinel\"\n",
        );
        let mut s = f.serve().started();
        watching(&mut s, &f);
        if listed {
            list_all(&mut s, "resources/list", "resources");
        }
        std::fs::remove_file(f.path("docs/.a.md.swp")).unwrap();
        std::fs::rename(f.path("docs/x.log"), f.path("docs/y.log")).unwrap();
        std::fs::remove_file(f.path("docs/y.log")).unwrap();
        std::fs::remove_dir_all(f.path("docs/.cache")).unwrap();
        f.write("docs/.new.swp", "new swap");
        std::fs::rename(f.path("docs/.new.swp"), f.path("docs/.other.swp")).unwrap();
        std::fs::remove_file(f.path("docs/notes.txt")).unwrap();
        assert_eq!(list_changes_so_far(&mut s, &f), 0, "listed first: {listed}");
        std::fs::remove_file(f.path("docs/a.md")).unwrap();
        s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    }
}

/// A change made right after start-up, while the watches are being set up, is never lost: on
/// fresh servers over a tree of 2 000 folders, a file created in the root and one in a new
/// folder right after the first listing are both listed once the watcher is ready, and a
/// change to the new one is announced.
#[test]
fn a_change_right_after_start_up_is_never_lost() {
    let f = fixture();
    for i in 0..2000 {
        f.mkdir(&format!("docs/t{:02}/d{i:04}", i % 20));
    }
    for round in 0..6 {
        let mut s = f.serve().started();
        let (first, _) = list_all(&mut s, "resources/list", "resources");
        let new_top = format!("docs/new{round}.md");
        let new_deep = format!("docs/n{round}/deeper/x.md");
        f.write(&new_top, "top");
        f.write(&new_deep, "deep");
        watching(&mut s, &f);
        let (all, _) = list_all(&mut s, "resources/list", "resources");
        let names: Vec<&str> = all.iter().filter_map(|r| r["uri"].as_str()).collect();
        for rel in [&new_top, &new_deep] {
            assert!(
                names.contains(&f.uri(rel).as_str()),
                "round {round}: {rel} lost ({} listed first, {} now)",
                first.len(),
                all.len()
            );
        }
        let uri = f.uri(&new_deep);
        s.ok("resources/subscribe", json!({"uri": uri}));
        f.write(&new_deep, "changed");
        s.wait_for(updated_for(uri));
    }
}

/// A valid reload says what changed in one line at the default log level (no `MCP_MANIFEST_LOG`):
/// resources counted, templates, tools and prompts named; an invalid edit logs no such line.
#[test]
fn a_valid_reload_logs_what_changed_at_the_default_level() {
    let f = fixture();
    f.write("docs/b.md", "b");
    f.write("docs/c.md", "c");
    let helper = crate::support::helper_path();
    let tools = |names: &[&str]| -> String {
        names
            .iter()
            .map(|n| format!("[tools.{n}]\ncommand = [\"{helper}\", \"echo\", \"{n}\"]\n\n"))
            .collect()
    };
    let prompt = "[prompts.review]\nmessages = [{ role = \"user\", text = \"Review\" }]\n";
    let sources = |docs: &str| {
        format!("[files.docs]\nroot = \"docs\"\n{docs}\n[files.sentinel]\nroot = \"sentinel\"\n\n")
    };
    let only_a = sources("include = [\"a.md\"]\n");
    let manifest = f.manifest(&format!("{only_a}{}{prompt}", tools(&["hi", "bye"])));
    let log = f.path("serve.log");
    let file = std::fs::File::create(&log).expect("log file");
    let mut s = Server::start_logging(&manifest, &f.root(), file).started();
    watching(&mut s, &f);

    // An invalid edit first: refused, logged as an error, and no `reloaded:` line.
    f.manifest(&format!("{only_a}{}{prompt}inlcude = []\n", tools(&["hi"])));
    s.wait_for(|v| is_method(v, "notifications/message"));
    f.manifest(&format!("{}{}{prompt}", sources(""), tools(&["hi"])));
    s.wait_for(|v| is_method(v, "notifications/tools/list_changed"));
    s.close_stdin();
    s.wait_exit(crate::support::TIMEOUT);
    let text = std::fs::read_to_string(&log).expect("read the log");
    let reloads: Vec<&str> = text.lines().filter(|l| l.contains("reloaded:")).collect();
    assert_eq!(reloads.len(), 1, "{text}");
    assert!(
        reloads[0].ends_with(
            "reloaded: +2 resources, templates unchanged, -1 tool (bye), prompts unchanged"
        ),
        "{text}"
    );
    assert!(reloads[0].contains("INFO"), "{text}");
}

/// A listing the reader answers as it kept it (`Snapshot::resource_page`) gives way to the
/// change once the watcher has seen it: a file added, a file's size changed.
#[test]
fn a_kept_listing_shows_each_change_once_it_is_seen() {
    let f = fixture();
    let mut s = f.serve().started();
    watching(&mut s, &f);
    let sizes = |s: &mut Server| {
        let (all, _) = list_all(s, "resources/list", "resources");
        all.iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap_or_default().to_owned(),
                    r["size"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    let first = sizes(&mut s);
    assert_eq!(
        first,
        [("a.md".to_owned(), json!(3)), ("s.md".to_owned(), json!(1))]
    );
    // Listed again and again: the same answer, the kept one from the third on.
    for _ in 0..3 {
        assert_eq!(sizes(&mut s), first);
    }
    f.write("docs/b.md", "new");
    s.wait_for(|v| is_method(v, "notifications/resources/list_changed"));
    let names: Vec<String> = sizes(&mut s).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a.md", "b.md", "s.md"]);
    assert_eq!(sizes(&mut s).len(), 3);
    let uri = f.uri("docs/a.md");
    s.ok("resources/subscribe", json!({"uri": uri}));
    f.write("docs/a.md", "three");
    s.wait_for(updated_for(uri));
    assert_eq!(sizes(&mut s)[0], ("a.md".to_owned(), json!(5)));
}
