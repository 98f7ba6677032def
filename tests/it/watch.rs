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
