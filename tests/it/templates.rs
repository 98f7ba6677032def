//! `[templates.NAME]`: file and sql backends, every way out of a file template's root, static and
//! file-name completion, read order (fixed URIs before templates, templates in manifest order) and
//! build-time errors with their places.

use serde_json::{Value, json};

use crate::sqlite::{make_db, read_json};
use crate::support::{Fixture, Server, list_all, stderr, stdout};

fn complete(s: &mut Server, uri: &str, name: &str, value: &str, context: Value) -> Value {
    s.ok(
        "completion/complete",
        json!({
            "ref": {"type": "ref/resource", "uri": uri},
            "argument": {"name": name, "value": value},
            "context": {"arguments": context}
        }),
    )["completion"]
        .clone()
}

fn notes() -> Fixture {
    let f = Fixture::new();
    f.write("notes/hello.md", "# Hello\n");
    f.write("notes/world.md", "# World\n");
    f.write("notes/.draft.md", "draft");
    f.write("notes/work/plan.md", "# Plan\n");
    f.write("notes/work/ideas.md", "# Ideas\n");
    f.write("notes/work/other.txt", "not md");
    f.write("notes/bin.dat", [0u8, 1, 2, 255]);
    f.write("secret.txt", "outside the notes");
    f.manifest(
        r#"
[templates.note]
uri = "notes://{topic}"
description = "A note by topic"
mime_type = "text/markdown"
file = "notes/{topic}.md"
completions.topic = ["hello", "world", "help"]

[templates.area]
uri = "notes://{area}/{topic}"
file = "{area}/{topic}.md"
root = "notes"

[templates.tree]
uri = "tree://{+path}"
file = "{path}"
root = "notes"

[templates.any]
uri = "any://{+path}"
file = "{path}"
"#,
    );
    f
}

#[test]
fn file_templates_are_listed_and_read() {
    let f = notes();
    let mut s = f.serve().started();
    let (templates, _) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    let uris: Vec<&str> = templates
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert_eq!(
        uris,
        [
            "notes://{topic}",
            "notes://{area}/{topic}",
            "tree://{+path}",
            "any://{+path}"
        ]
    );
    assert_eq!(templates[0]["name"], "note");
    assert_eq!(templates[0]["description"], "A note by topic");
    assert_eq!(templates[0]["mimeType"], "text/markdown");
    assert_eq!(
        templates[1]["mimeType"], "text/markdown",
        "from the `.md` in `file`"
    );
    assert!(templates[2].get("mimeType").is_none());

    let r = s.ok("resources/read", json!({"uri": "notes://hello"}));
    assert_eq!(
        r["contents"],
        json!([{"uri": "notes://hello", "mimeType": "text/markdown", "text": "# Hello\n"}])
    );
    let r = s.ok("resources/read", json!({"uri": "notes://work/plan"}));
    assert_eq!(r["contents"][0]["text"], "# Plan\n");
    let r = s.ok("resources/read", json!({"uri": "tree://work/other.txt"}));
    assert_eq!(r["contents"][0]["text"], "not md");
    assert_eq!(r["contents"][0]["mimeType"], "text/plain");
    let r = s.ok("resources/read", json!({"uri": "tree://bin.dat"}));
    assert_eq!(r["contents"][0]["blob"], "AAEC/w==");
    let r = s.ok("resources/read", json!({"uri": "any://secret.txt"}));
    assert_eq!(
        r["contents"][0]["text"], "outside the notes",
        "root defaults to the manifest folder"
    );
}

#[test]
fn every_way_out_of_a_file_template_root_is_not_found() {
    let f = notes();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(f.path("secret.txt"), f.path("notes/leak.md")).unwrap();
        std::os::unix::fs::symlink(f.path("notes/hello.md"), f.path("notes/alias.md")).unwrap();
        std::os::unix::fs::symlink(f.path("."), f.path("notes/up")).unwrap();
    }
    let mut s = f.serve().started();
    for uri in [
        "notes://..%2Fsecret",
        "notes://..%2fsecret",
        "notes://%2e%2e%2fsecret",
        "notes://%2E%2E",
        "notes://..",
        "notes://missing",
        "notes://work",
        "notes://..%5Csecret",
        "notes://hello%00",
        "notes://work/..",
        "notes://../secret",
        "tree://../secret.txt",
        "tree://%2e%2e/secret.txt",
        "tree://work/../../secret.txt",
        "tree://work/%2e%2e/%2e%2e/secret.txt",
        "tree://work%2f..%2f..%2fsecret.txt",
        "tree:///etc/passwd",
        "tree://./hello.md",
        "tree://work//plan.md",
        "tree://work",
        "tree://",
        "tree://up/secret.txt",
        "tree://leak.md",
        "any:///etc/passwd",
        "any://%2Fetc%2Fpasswd",
        "any://notes/../secret.txt",
    ] {
        let e = s.err("resources/read", json!({"uri": uri}));
        assert_eq!(e["code"], -32002, "{uri} must be not found: {e}");
    }
    #[cfg(unix)]
    {
        let r = s.ok("resources/read", json!({"uri": "notes://alias"}));
        assert_eq!(
            r["contents"][0]["text"], "# Hello\n",
            "a symlink inside the root is fine"
        );
    }
}

#[test]
fn completion_gives_static_lists_and_file_names() {
    let f = notes();
    let mut s = f.serve().started();
    let c = complete(&mut s, "notes://{topic}", "topic", "he", json!({}));
    assert_eq!(c["values"], json!(["hello", "help"]));
    assert_eq!(c["hasMore"], false);
    // The last path segment holds only the variable: names from that folder.
    let c = complete(
        &mut s,
        "notes://{area}/{topic}",
        "topic",
        "",
        json!({"area": "work"}),
    );
    assert_eq!(c["values"], json!(["ideas", "plan"]));
    let c = complete(
        &mut s,
        "notes://{area}/{topic}",
        "topic",
        "p",
        json!({"area": "work"}),
    );
    assert_eq!(c["values"], json!(["plan"]));
    let c = complete(&mut s, "notes://{area}/{topic}", "topic", "", json!({}));
    assert_eq!(c["values"], json!([]), "no area, no folder");
    let c = complete(
        &mut s,
        "notes://{area}/{topic}",
        "topic",
        "",
        json!({"area": ".."}),
    );
    assert_eq!(c["values"], json!([]), "no completion outside the root");
    let c = complete(&mut s, "tree://{+path}", "path", "", json!({}));
    assert_eq!(
        c["values"],
        json!(["bin.dat", "hello.md", "world.md"]),
        "files only, no dotfiles"
    );
    let e = s.err(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "notes://{topic}"}, "argument": {"name": "nope", "value": ""}}),
    );
    assert_eq!(e["code"], -32602);
    let many: Vec<String> = (0..130).map(|i| format!("\"v{i:03}\"")).collect();
    let g = Fixture::new();
    g.write("x/a.md", "a");
    g.manifest(&format!(
        "[templates.t]\nuri = \"t://{{v}}\"\nfile = \"x/{{v}}.md\"\ncompletions.v = [{}]\n",
        many.join(", ")
    ));
    let mut s = g.serve().started();
    let c = complete(&mut s, "t://{v}", "v", "v", json!({}));
    assert_eq!(c["values"].as_array().unwrap().len(), 100);
    assert_eq!(c["total"], 130);
    assert_eq!(c["hasMore"], true);
}

fn shop_templates() -> Fixture {
    let f = Fixture::new();
    make_db(
        &f.path("shop.db"),
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
         INSERT INTO customers VALUES (1, 'alice', 'Paris'), (2, 'bob', NULL), (3, ''' OR 1=1 --', 'Oslo');",
    );
    f.manifest(
        r#"
[sqlite.shop]
path = "shop.db"
row_limit = 2

[templates.customer]
uri = "shop://customers/{id}"
description = "One customer"
sqlite = "shop"
sql = "SELECT id, name FROM customers WHERE id = :id"

[templates.search]
uri = "shop://search{?name,city}"
sqlite = "shop"
sql = "SELECT id FROM customers WHERE (:name IS NULL OR name = :name) AND (:city IS NULL OR city = :city) ORDER BY id"

[templates.everyone]
uri = "shop://everyone"
sqlite = "shop"
sql = "SELECT name FROM customers ORDER BY id"
mime_type = "application/vnd.shop+json"

[templates.shadow]
uri = "sqlite://shop/{what}"
sqlite = "shop"
sql = "SELECT :what AS what"

[templates.second]
uri = "shop://customers/{id}"
sqlite = "shop"
sql = "SELECT 'never' AS reached WHERE :id IS NOT NULL"
"#,
    );
    f
}

#[test]
fn sql_templates_bind_variables_to_parameters() {
    let f = shop_templates();
    let mut s = f.serve().started();
    assert_eq!(
        read_json(&mut s, "shop://customers/2"),
        json!({"columns": ["id", "name"], "rows": [{"id": 2, "name": "bob"}], "truncated": false})
    );
    // Absent variables bind NULL; present ones bind their text.
    assert_eq!(
        read_json(&mut s, "shop://search")["rows"],
        json!([{"id": 1}, {"id": 2}])
    );
    assert_eq!(read_json(&mut s, "shop://search")["truncated"], true);
    assert_eq!(
        read_json(&mut s, "shop://search?city=Oslo")["rows"],
        json!([{"id": 3}])
    );
    assert_eq!(
        read_json(&mut s, "shop://search?city=Paris&name=alice")["rows"],
        json!([{"id": 1}])
    );
    // Injection values are data.
    assert_eq!(
        read_json(&mut s, "shop://search?name=%27%20OR%201%3D1%20--")["rows"],
        json!([{"id": 3}])
    );
    assert_eq!(
        read_json(&mut s, "shop://customers/1%20OR%201%3D1")["rows"],
        json!([])
    );
    assert_eq!(
        read_json(&mut s, "shop://customers/1%3B%20DROP%20TABLE%20customers")["rows"],
        json!([])
    );
    // A template without variables is a resource.
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let everyone = resources
        .iter()
        .find(|r| r["uri"] == "shop://everyone")
        .expect("listed");
    assert_eq!(everyone["name"], "everyone");
    assert_eq!(everyone["mimeType"], "application/vnd.shop+json");
    let r = s.ok("resources/read", json!({"uri": "shop://everyone"}));
    assert_eq!(r["contents"][0]["mimeType"], "application/vnd.shop+json");
    let (templates, _) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    let t = templates
        .iter()
        .find(|t| t["uriTemplate"] == "shop://customers/{id}")
        .expect("listed");
    assert_eq!(t["mimeType"], "application/json");
    assert_eq!(t["description"], "One customer");
    assert!(
        !templates
            .iter()
            .any(|t| t["uriTemplate"] == "shop://everyone")
    );
}

#[test]
fn fixed_uris_come_before_templates_and_templates_keep_manifest_order() {
    let f = shop_templates();
    let mut s = f.serve().started();
    let schema = s.ok("resources/read", json!({"uri": "sqlite://shop/schema"}));
    assert!(
        schema["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("CREATE TABLE customers")
    );
    assert_eq!(
        read_json(&mut s, "sqlite://shop/other")["rows"],
        json!([{"what": "other"}]),
        "what the sqlite source does not serve falls through to the template"
    );
    assert_eq!(
        read_json(&mut s, "shop://customers/1")["rows"],
        json!([{"id": 1, "name": "alice"}]),
        "the first matching template answers"
    );
    let e = s.err("resources/read", json!({"uri": "shop://nothing/here"}));
    assert_eq!(e["code"], -32002);
}

#[test]
fn template_errors_are_reported_at_their_place() {
    let f = Fixture::new();
    make_db(&f.path("shop.db"), "CREATE TABLE t (id INTEGER, v TEXT);");
    f.write(
        "bad.toml",
        r#"[sqlite.shop]
path = "shop.db"

[templates.unclosed]
uri = "x://{id"
file = "x/{id}.md"

[templates.unknown_completion]
uri = "x://{topic}"
file = "x/{topic}.md"
completions.topik = ["a"]

[templates.file_vars]
uri = "x://{a}/{b}"
file = "x/{a}/{c}.md"

[templates.escape]
uri = "y://{p}"
file = "../{p}"

[templates.sql_vars]
uri = "z://{id}{?limit}"
sqlite = "shop"
sql = "SELECT * FROM t WHERE id = :ident"

[templates.sql_bad]
uri = "z://bad/{id}"
sqlite = "shop"
sql = "SELECT * FROM nope WHERE id = :id"

[templates.run]
uri = "cmd://{x}{?y}"
command = ["find", "{x}", "{z}"]
cwd = "nowhere"
"#,
    );
    let out = f.run(&["check", "bad.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "bad.toml:5:7: [templates.unclosed] invalid URI template `x://{id`: unclosed `{` at column 5",
            "bad.toml:11:13: [templates.unknown_completion] `completions.topik` names no variable of `x://{topic}` (did you mean `topic`?); its variables are: topic",
            "bad.toml:15:8: [templates.file_vars] `{c}` in `file` names no variable of `x://{a}/{b}`; its variables are: a, b",
            "bad.toml:15:8: [templates.file_vars] variable `b` of `x://{a}/{b}` is not used in `file` (write `{b}` where its value goes)",
            "bad.toml:19:8: [templates.escape] `file` is a path inside `root` (default: the manifest's folder): it cannot be absolute or use `..`; set `root` to the folder to serve",
            "bad.toml:24:7: [templates.sql_vars] SQL parameter `:ident` is not a variable of `z://{id}{?limit}`, did you mean `:id`?",
            "bad.toml:24:7: [templates.sql_vars] variable `id` of `z://{id}{?limit}` is not used by the SQL (write `:id` where its value goes)",
            "bad.toml:24:7: [templates.sql_vars] variable `limit` of `z://{id}{?limit}` is not used by the SQL (write `:limit` where its value goes)",
            "bad.toml:29:7: [templates.sql_bad] the SQL does not compile: no such table: nope",
            "bad.toml:33:12: [templates.run] variable `y` of `cmd://{x}{?y}` is not used in `command` (write `{y}` where its value goes)",
            "bad.toml:33:27: [templates.run] `{z}` names no declared variable; the variables are: `x`, `y` (write `{{` and `}}` for literal braces)",
            &format!(
                "bad.toml:34:7: [templates.run] working directory `{}` does not exist or is not a folder",
                f.path("nowhere").display()
            ),
            "bad.toml: 12 errors found",
        ]
    );
}

/// Template roots and command working folders are looked up together, once each: a missing root
/// and a root or working folder that is a file are reported at each template that names them,
/// and templates sharing a good root or working folder serve from it.
#[test]
fn file_template_roots_are_checked_at_each_template() {
    let f = Fixture::new();
    f.mkdir("notes");
    f.write("notes/a.md", "# A\n");
    f.write("notes/b.md", "# B\n");
    f.write("afile.txt", "not a folder\n");
    let templates = r#"
[templates.gone]
uri = "gone://{p}"
root = "missing"
file = "{p}.md"

[templates.plain]
uri = "plain://{p}"
root = "afile.txt"
file = "{p}.md"

[templates.first]
uri = "first://{p}"
root = "notes"
file = "{p}.md"

[templates.second]
uri = "second://{p}"
root = "notes"
file = "{p}.md"

[templates.gone_again]
uri = "again://{p}"
root = "missing"
file = "{p}.md"

[templates.run_here]
uri = "here://{p}"
command = ["{helper}", "cat", "{p}.md"]
cwd = "notes"

[templates.run_plain]
uri = "run-plain://{p}"
command = ["{helper}", "cat", "{p}"]
cwd = "afile.txt"

[templates.run_there]
uri = "there://{p}"
command = ["{helper}", "cat", "{p}.md"]
cwd = "notes"
"#
    .replace("{helper}", &crate::support::helper_path());
    f.write("bad.toml", &templates);
    let out = f.run(&["check", "bad.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    let missing = f.path("missing");
    // The system's own words for "no such file" (os error 2).
    let enoent = std::io::Error::from_raw_os_error(2).to_string();
    assert_eq!(
        lines,
        [
            format!(
                "bad.toml:5:8: [templates.gone] root `{}` cannot be opened: {enoent}",
                missing.display()
            )
            .as_str(),
            &format!(
                "bad.toml:10:8: [templates.plain] root `{}` is not a folder",
                f.path("afile.txt").display()
            ),
            &format!(
                "bad.toml:25:8: [templates.gone_again] root `{}` cannot be opened: {enoent}",
                missing.display()
            ),
            &format!(
                "bad.toml:35:7: [templates.run_plain] working directory `{}` does not exist or is not a folder",
                f.path("afile.txt").display()
            ),
            "bad.toml: 4 errors found",
        ]
    );
    // The two sharing a root serve it, and the two commands sharing a working folder run there.
    let good: String = templates
        .split("\n\n")
        .filter(|t| t.contains("root = \"notes\"") || t.contains("cwd = \"notes\""))
        .collect::<Vec<_>>()
        .join("\n\n");
    f.manifest(&good);
    let mut s = f.serve().started();
    for (uri, text) in [
        ("first://a", "# A\n"),
        ("second://b", "# B\n"),
        ("here://a", "# A\n"),
        ("there://b", "# B\n"),
    ] {
        let r = s.ok("resources/read", json!({ "uri": uri }));
        assert_eq!(r["contents"][0]["text"], text, "{uri}: {r}");
    }
}

// Unix only: `printf`, `sh`, `sleep`, `head` and /dev/zero (the portable argv, timeout and
// output-cap tests with the helper program: tools::hostile_values_reach_the_program_as_one_literal_argv_element,
// procs::).
#[cfg(unix)]
#[test]
fn command_templates_run_argv_without_a_shell() {
    let f = Fixture::new();
    f.mkdir("sub");
    f.manifest(
        r#"
[templates.echo]
uri = "echo://{word}{?flag}"
command = ["printf", "%s|", "{word}", ["--flag", "{flag}"]]

[templates.parts]
uri = "parts://x{/parts*}"
command = ["printf", "[%s]", "{parts}"]

[templates.fail]
uri = "fail://{code}"
command = ["sh", "-c", "echo oops >&2; exit \"$1\"", "fail", "{code}"]

[templates.slow]
uri = "slow://{seconds}"
command = ["sleep", "{seconds}"]
timeout = "300ms"

[templates.flood]
uri = "flood://{n}"
command = ["head", "-c", "{n}", "/dev/zero"]
max_output = "1KiB"

[templates.where]
uri = "where://{x}"
command = ["sh", "-c", "pwd; echo \"$GREETING $1\"", "where", "{x}"]
cwd = "sub"
env = { GREETING = "hi" }
mime_type = "text/x-report"
"#,
    );
    let mut s = f.serve().started();
    let text = |s: &mut Server, uri: &str| {
        let r = s.ok("resources/read", json!({"uri": uri}));
        r["contents"][0]["text"].as_str().expect("text").to_owned()
    };
    assert_eq!(text(&mut s, "echo://hello"), "hello|");
    assert_eq!(text(&mut s, "echo://hello?flag=on"), "hello|--flag|on|");
    assert_eq!(text(&mut s, "echo://a%20b?flag="), "a b|--flag||");
    // An exploded list repeats its element once per item; none drops it.
    assert_eq!(text(&mut s, "parts://x/a/b%20c"), "[a][b c]");
    assert_eq!(text(&mut s, "parts://x"), "[]");
    // Values are argv elements: nothing reaches a shell.
    let hostile = "$(touch pwned); rm -rf x `touch pwned2` | tee pwned3";
    let uri = format!("echo://{}", crate::support::encode_component(hostile));
    assert_eq!(text(&mut s, &uri), format!("{hostile}|"));
    for made in ["pwned", "pwned2", "pwned3", "sub/pwned"] {
        assert!(!f.path(made).exists(), "{made}");
    }
    let r = s.ok("resources/read", json!({"uri": "where://x"}));
    assert_eq!(
        r["contents"][0]["text"],
        format!("{}\nhi x\n", f.path("sub").display())
    );
    assert_eq!(r["contents"][0]["mimeType"], "text/x-report");

    let e = s.err("resources/read", json!({"uri": "fail://3"}));
    assert_eq!(e["code"], -32602);
    assert_eq!(
        e["message"],
        "[templates.fail] `sh` failed: exit code 3\n\nstderr (last lines):\noops"
    );
    let started = std::time::Instant::now();
    let e = s.err("resources/read", json!({"uri": "slow://5"}));
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    assert_eq!(
        e["message"],
        "[templates.slow] `sleep` timed out after 300ms; its processes were killed"
    );
    let e = s.err("resources/read", json!({"uri": "flood://5000"}));
    assert_eq!(
        e["message"],
        "[templates.flood] `head` wrote more than 1 KiB (`max_output`); its processes were stopped"
    );
    let r = s.ok("resources/read", json!({"uri": "flood://10"}));
    assert_eq!(r["contents"][0]["blob"], "AAAAAAAAAAAAAA==");
    assert_eq!(r["contents"][0]["mimeType"], "application/octet-stream");

    let (templates, _) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    assert_eq!(templates[0]["uriTemplate"], "echo://{word}{?flag}");
    assert_eq!(templates[0]["mimeType"], "text/plain");
}

#[test]
fn a_cancelled_command_template_read_kills_its_process() {
    use crate::tools::{alive, read_pid, wait_gone};
    let f = Fixture::new();
    f.manifest(&format!(
        "[templates.slow]\nuri = \"slow://{{n}}\"\ncommand = [\"{}\", \"out\", \"{{n}}\", \"pid\", \"pid.txt\", \"sleep\", \"100000\"]\ntimeout = \"60s\"\n",
        crate::support::helper_path()
    ));
    let mut s = f.serve().started();
    s.send(&json!({"jsonrpc": "2.0", "id": "r", "method": "resources/read", "params": {"uri": "slow://x"}}));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !f.path("pid.txt").exists()
        || std::fs::read_to_string(f.path("pid.txt"))
            .unwrap_or_default()
            .trim()
            .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = read_pid(&f, "pid.txt");
    assert!(alive(pid));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "r"}}));
    wait_gone(pid, "the cancelled template's process");
    assert_eq!(s.ok("ping", json!({})), json!({}));
}

#[test]
fn listing_follows_the_file_across_sections_and_fixed_uris_still_win_reads() {
    let f = Fixture::new();
    make_db(&f.path("shop.db"), "CREATE TABLE t (x INTEGER);");
    f.write("docs/a.md", "a");
    f.write("plain.txt", "plain");
    f.manifest(
        r#"
[templates.shadow]
uri = "sqlite://shop/{what}"
sqlite = "shop"
sql = "SELECT :what AS what"

[templates.plain]
uri = "plain://it"
file = "plain.txt"

[files.docs]
root = "docs"

[sqlite.shop]
path = "shop.db"
"#,
    );
    let mut s = f.serve().started();
    let (all, _) = list_all(&mut s, "resources/list", "resources");
    let uris: Vec<&str> = all.iter().filter_map(|r| r["uri"].as_str()).collect();
    assert_eq!(
        uris,
        [
            "plain://it".to_owned(),
            f.uri("docs/a.md"),
            "sqlite://shop/schema".to_owned(),
            "sqlite://shop/tables/t".to_owned()
        ]
    );
    // The template comes first in the file, but a URI the sqlite source serves is its own.
    let schema = s.ok("resources/read", json!({"uri": "sqlite://shop/schema"}));
    assert!(
        schema["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("CREATE TABLE t")
    );
    assert_eq!(
        read_json(&mut s, "sqlite://shop/other")["rows"],
        json!([{"what": "other"}])
    );
}
