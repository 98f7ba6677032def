//! `[mysql.NAME]` against a real MariaDB (a throwaway server, `server.rs`): every common type
//! mapped to JSON, the `CREATE` statements, `check`'s warnings (an account that may write server
//! files, a database that cannot be reached, SQL the server rejects), a database that is down,
//! lazy connections, and manifest errors. What every engine shares is in `engines.rs`.

pub mod server;
mod sizes;

use serde_json::{Value, json};

use crate::support::{Fixture, Server, list_all, stderr, stdout};
use server::{APP_PASSWORD, shared};

fn read_json(s: &mut Server, uri: &str) -> Value {
    let r = s.ok("resources/read", json!({"uri": uri}));
    let c = &r["contents"][0];
    assert_eq!(c["mimeType"], "application/json", "{c}");
    serde_json::from_str(c["text"].as_str().expect("text content")).expect("JSON content")
}

fn read_error(s: &mut Server, uri: &str) -> (i64, String) {
    let e = s.err("resources/read", json!({"uri": uri}));
    (
        e["code"].as_i64().expect("an error code"),
        e["message"].as_str().expect("a message").to_owned(),
    )
}

fn manifest(url: &str, options: &str, extra: &str) -> Fixture {
    let f = Fixture::new();
    f.manifest(&format!(
        "[mysql.shop]\nurl = \"{url}\"\n{options}\n\n{extra}"
    ));
    f
}

const TYPES: &str = r#"
    CREATE TABLE types (
        id INT PRIMARY KEY, tiny TINYINT, flag TINYINT(1), small SMALLINT UNSIGNED,
        medium MEDIUMINT, big BIGINT, ubig BIGINT UNSIGNED, num DECIMAL(30, 10), f FLOAT, d DOUBLE,
        v VARCHAR(20), bin_coll VARCHAR(20) COLLATE utf8mb4_bin, c CHAR(3), t TEXT,
        vb VARBINARY(8), b BLOB, bits BIT(4), j JSON, e ENUM('a', 'b'), st SET('x', 'y'),
        dt DATE, dtm DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2), y YEAR, g POINT, nothing INT
    );
    INSERT INTO types VALUES (
        1, -128, 5, 65535, -8388608, -9223372036854775808, 18446744073709551615,
        12345678901234567890.1234567890, 0.1, 0.1, 'héllo "w"', 'Bin', 'ab', 'long text',
        0x00FF10, 0xDEADBEEF, b'1010', '{"a": [1, 2.50, null], "big": 123456789012345678901234567890}',
        'b', 'x,y', '2024-02-29', '2024-01-02 03:04:05.678901', '2024-01-02 03:04:05.678',
        '-838:59:59.99', 2024, POINT(1, 2), NULL
    );
"#;

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn every_common_type_maps_to_json() {
    let my = shared();
    my.database("types", TYPES);
    let f = manifest(&my.url("types"), "", "");
    let mut s = f.serve().started();
    let v = read_json(&mut s, "mysql://shop/tables/types");
    let row = &v["rows"][0];
    let expected = json!({
        "id": 1,
        "tiny": -128,
        "flag": 5,
        "small": 65535,
        "medium": -8388608,
        "big": -9223372036854775808i64,
        "ubig": 18446744073709551615u64,
        "num": "12345678901234567890.1234567890",
        "f": 0.1,
        "d": 0.1,
        "v": "héllo \"w\"",
        "bin_coll": "Bin",
        "c": "ab",
        "t": "long text",
        "vb": "AP8Q",
        "b": "3q2+7w==",
        "bits": "1010",
        "j": {"a": [1, 2.50, null], "big": 123456789012345678901234567890u128 as f64},
        "e": "b",
        "st": "x,y",
        "dt": "2024-02-29",
        "dtm": "2024-01-02T03:04:05.678901",
        "ts": "2024-01-02T03:04:05.678Z",
        "tm": "-838:59:59.99",
        "y": 2024,
        "nothing": null,
    });
    for (k, want) in expected.as_object().expect("object") {
        assert_eq!(&row[k], want, "column {k}: {row}");
    }
    // A POINT is its WKB (with the SRID first), base64.
    assert!(
        row["g"].as_str().is_some_and(|g| g.starts_with("AAAAAAEB")),
        "{row}"
    );
    // JSON keeps the digits the server stored, and unsigned 64-bit values stay whole.
    let text = s.ok(
        "resources/read",
        json!({"uri": "mysql://shop/tables/types"}),
    );
    let text = text["contents"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("\"ubig\":18446744073709551615"), "{text}");
    assert!(text.contains("123456789012345678901234567890"), "{text}");
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn the_schema_is_the_create_statements() {
    let my = shared();
    my.database(
        "ddl",
        "CREATE TABLE b (id INT PRIMARY KEY, note VARCHAR(10) COMMENT 'a note');
         CREATE TABLE a (id INT PRIMARY KEY, b_id INT, FOREIGN KEY (b_id) REFERENCES b (id));
         CREATE VIEW v AS SELECT id FROM a;",
    );
    let f = manifest(&my.url("ddl"), "", "");
    let mut s = f.serve().started();
    let r = s.ok("resources/read", json!({"uri": "mysql://shop/schema"}));
    let text = r["contents"][0]["text"].as_str().unwrap_or("");
    let (a, b, v) = (
        text.find("CREATE TABLE `a`"),
        text.find("CREATE TABLE `b`"),
        text.find("VIEW `v`"),
    );
    assert!(a < b && b < v && a.is_some(), "{text}");
    assert!(
        text.contains("FOREIGN KEY") && text.contains("COMMENT 'a note'"),
        "{text}"
    );
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let kinds: Vec<&str> = resources
        .iter()
        .filter_map(|r| r["description"].as_str())
        .collect();
    assert!(kinds.iter().any(|d| d.starts_with("View `v`")), "{kinds:?}");
}

/// An account that may read and write server files (FILE, SUPER, all privileges) is what a
/// read-only transaction does not contain: `check` warns, the SQL tool refuses unless the
/// manifest accepts it.
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn accounts_that_can_write_server_files_are_warned_about_and_refused_the_sql_tool() {
    let my = shared();
    my.database("risky", "CREATE TABLE t (v INT); INSERT INTO t VALUES (1);");
    my.admin_sql(
        "mysql",
        "DROP USER IF EXISTS 'filer'@'%'; CREATE USER 'filer'@'%' IDENTIFIED BY 'filer-pw';
         GRANT FILE ON *.* TO 'filer'@'%'; GRANT SELECT ON risky.* TO 'filer'@'%';
         DROP USER IF EXISTS 'boss'@'%'; CREATE USER 'boss'@'%' IDENTIFIED BY 'boss-pw';
         GRANT SUPER ON *.* TO 'boss'@'%'; GRANT SELECT ON risky.* TO 'boss'@'%';",
    );
    let filer = format!("mysql://filer:filer-pw@127.0.0.1:{}/risky", my.port);
    let boss = format!("mysql://boss:boss-pw@127.0.0.1:{}/risky", my.port);
    for (url, holds) in [
        (my.root_url("risky"), "holds all privileges"),
        (filer.clone(), "holds FILE"),
        (boss, "holds SUPER"),
    ] {
        let f = manifest(&url, "sql_tool = true", "");
        let out = f.run(&["check"]);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{e}");
        assert!(
            e.contains("mcp-server.toml:2:7: warning: [mysql.shop] connects to database `risky`")
                && e.contains(holds)
                && e.contains("accept_writes_outside_transaction"),
            "{e}"
        );
        let mut s = f.serve().started();
        let r = s.ok(
            "tools/call",
            json!({"name": "shop_sql", "arguments": {"sql": "SELECT v FROM t"}}),
        );
        assert_eq!(r["isError"], true, "{r}");
        let text = r["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.contains("refused") && text.contains(holds), "{text}");
    }
    // Accepted in the manifest: the tool runs (and `check` still warns).
    let f = manifest(
        &filer,
        "sql_tool = true\naccept_writes_outside_transaction = true",
        "",
    );
    let mut s = f.serve().started();
    let r = s.ok(
        "tools/call",
        json!({"name": "shop_sql", "arguments": {"sql": "SELECT v FROM t"}}),
    );
    assert_eq!(r["structuredContent"]["rows"], json!([{"v": 1}]), "{r}");
    // The reading account of the other tests: nothing to say.
    let f = manifest(&my.url("risky"), "sql_tool = true", "");
    let out = f.run(&["check"]);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn check_warns_about_unreachable_databases_and_rejected_sql() {
    let my = shared();
    my.database("checked", "CREATE TABLE t (v INT);");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a port");
    let f = Fixture::new();
    f.manifest(&format!(
        r#"[mysql.down]
url = "mysql://app:{APP_PASSWORD}@127.0.0.1:{closed}/shop"

[mysql.up]
url = "{}"

[mysql.up.queries.good]
sql = "SELECT v FROM t WHERE v = :v"
params.v = {{ type = "integer" }}

[mysql.up.queries.bad]
sql = "SELECT nope FROM t"

[templates.broken]
uri = "x://{{id}}"
mysql = "up"
sql = "SELECT * FROM missing WHERE id = :id"
"#,
        my.url("checked")
    ));
    let out = f.run(&["check"]);
    let (o, e) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    assert!(
        !o.contains(APP_PASSWORD) && !e.contains(APP_PASSWORD),
        "{o}{e}"
    );
    let warnings: Vec<&str> = e.lines().collect();
    assert_eq!(warnings.len(), 3, "{e}");
    assert!(
        warnings[0].starts_with(&format!(
            "mcp-server.toml:2:7: warning: [mysql.down] cannot connect to database `shop` on 127.0.0.1:{closed} as `app`:"
        )),
        "{e}"
    );
    assert!(
        warnings[1].starts_with(
            "mcp-server.toml:12:7: warning: [mysql.up.queries.bad] MySQL/MariaDB rejects the SQL: Unknown column 'nope'"
        ),
        "{e}"
    );
    assert!(
        warnings[2].starts_with(
            "mcp-server.toml:17:7: warning: [templates.broken] MySQL/MariaDB rejects the SQL: Table 'checked.missing' doesn't exist"
        ),
        "{e}"
    );
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn a_database_that_is_down_is_each_requests_error_and_nothing_connects_early() {
    let my = shared();
    my.database("lazy", "CREATE TABLE t (v INT); INSERT INTO t VALUES (1);");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a port");
    let f = Fixture::new();
    f.manifest(&format!(
        "[mysql.down]\nurl = \"mysql://app:{APP_PASSWORD}@127.0.0.1:{closed}/lazy\"\n\n\
         [mysql.up]\nurl = \"{}\"\nmax_connections = 2\n",
        my.url("lazy")
    ));
    let mut s = f.serve().started();
    s.ok("ping", json!({}));
    assert_eq!(my.connections("lazy"), 0, "connected before a request");
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let listed: Vec<&str> = resources.iter().filter_map(|r| r["uri"].as_str()).collect();
    assert!(listed.contains(&"mysql://down/schema"), "{listed:?}");
    assert!(listed.contains(&"mysql://up/tables/t"), "{listed:?}");
    let (code, message) = read_error(&mut s, "mysql://down/tables/t");
    assert_eq!(code, -32602, "{message}");
    assert!(
        message.contains("[mysql.down] cannot connect to database `lazy` on 127.0.0.1:")
            && !message.contains(APP_PASSWORD),
        "{message}"
    );
    // Concurrent reads share at most `max_connections`.
    let ids: Vec<i64> = (0..10)
        .map(|_| {
            let id = s.fresh_id();
            s.send(
                &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                           "params": {"uri": "mysql://up/tables/t"}}),
            );
            id
        })
        .collect();
    for id in ids {
        let r = s.response(&json!(id));
        assert!(r.get("result").is_some(), "{r}");
    }
    let open = my.connections("lazy");
    assert!((1..=2).contains(&open), "{open} connections");
}

/// A server that goes away while serving: each request that needs it is its own error (a
/// resource read fails with the connection error, the SQL tool is an `isError`), everything
/// else keeps serving, and once the server is back on the same port and data the same session
/// reads again, also after a restart that left the pool's idle connections dead.
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn a_server_that_goes_away_is_each_requests_error_and_comes_back() {
    // A server of its own: the shared one serves the other tests meanwhile.
    let my = server::Server::start();
    my.database("shop", "CREATE TABLE t (v INT); INSERT INTO t VALUES (1);");
    let f = Fixture::new();
    f.write("docs/a.md", "# A\n");
    f.manifest(&format!(
        "[files.docs]\nroot = \"docs\"\n\n[mysql.shop]\nurl = \"{}\"\nsql_tool = true\n",
        my.url("shop")
    ));
    let mut s = f.serve().started();
    let rows = |s: &mut Server| read_json(s, "mysql://shop/tables/t")["rows"].clone();
    let sql = |s: &mut Server| {
        s.ok(
            "tools/call",
            json!({"name": "shop_sql", "arguments": {"sql": "SELECT v FROM t"}}),
        )
    };
    assert_eq!(rows(&mut s), json!([{"v": 1}]));
    assert_eq!(sql(&mut s)["isError"], false);
    // The pool now holds an idle connection to a server that goes away.
    my.stop();
    let down = format!(
        "[mysql.shop] cannot connect to database `shop` on 127.0.0.1:{} as `app`: ",
        my.port
    );
    for uri in ["mysql://shop/tables/t", "mysql://shop/schema"] {
        let (code, message) = read_error(&mut s, uri);
        assert_eq!(code, -32602, "{uri}: {message}");
        assert!(
            message.starts_with(&down) && !message.contains(APP_PASSWORD),
            "{uri}: {message}"
        );
    }
    let r = sql(&mut s);
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains(&down) && !text.contains(APP_PASSWORD), "{r}");
    // Everything else keeps serving.
    s.ok("ping", json!({}));
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let listed: Vec<&str> = resources.iter().filter_map(|r| r["uri"].as_str()).collect();
    assert!(listed.contains(&f.uri("docs/a.md").as_str()), "{listed:?}");
    assert!(listed.contains(&"mysql://shop/schema"), "{listed:?}");
    let docs = s.ok("resources/read", json!({"uri": f.uri("docs/a.md")}));
    assert_eq!(docs["contents"][0]["text"], "# A\n");
    // Back on the same port: the same session reads again.
    my.resume();
    assert_eq!(rows(&mut s), json!([{"v": 1}]));
    assert_eq!(sql(&mut s)["isError"], false);
    // A restart between two requests: the idle connection it left is dead, the next read opens
    // a fresh one instead of failing.
    my.stop();
    my.resume();
    assert_eq!(rows(&mut s), json!([{"v": 1}]));
    assert_eq!(sql(&mut s)["structuredContent"]["rows"], json!([{"v": 1}]));
}

#[test]
fn manifest_errors_name_the_place() {
    let f = Fixture::new();
    let lines = f.diagnose(
        r#"[mysql.a]
url = "postgres://u:secret-pw@h/db"

[mysql.b]
url = "mysql://u@h/db"
max_connections = 0
schemas = ["x"]

[mysql.d]
url = "mysql://u@h/db"
poll_interval = "10ms"

[mysql.c]
url = "mysql://u@h/db"

[mysql.c.queries.w]
sql = "SELECT * FROM t INTO OUTFILE '/tmp/x'"

[mysql.c.queries.x]
sql = "SELECT /*! 1 */ 2"

[templates.t]
uri = "t://{id}"
mysql = "nope"
sql = "SELECT :id"
"#,
    );
    let joined = lines.join("\n");
    assert!(!joined.contains("secret-pw"), "{joined}");
    for want in [
        "bad.toml:2:7: [mysql.a] `url`: the scheme is `postgres`, not mysql://",
        "bad.toml:6:19: `mysql.b.max_connections` must be at least 1, found 0",
        "bad.toml:7:1: unknown key `schemas` in `mysql.b`",
        "bad.toml:11:17: [mysql.d] `poll_interval` must be at least 100ms",
        "bad.toml:17:7: [mysql.c.queries.w] `sql` holds `INTO`",
        "bad.toml:20:7: [mysql.c.queries.x] `sql` holds a `/*! … */` comment",
        "bad.toml:24:9: template `t` names mysql source `nope`, which does not exist",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(want)),
            "{want}\n{joined}"
        );
    }
}

/// The statement time limit is the server's too: each connection's session carries `timeout` as
/// `max_statement_time` (MariaDB), so a statement is stopped by the server even when nothing of
/// ours is left to stop it.
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn the_timeout_is_the_servers_statement_time_limit() {
    let my = shared();
    my.database("limits", "CREATE TABLE t (v INT);");
    let f = manifest(
        &my.url("limits"),
        "sql_tool = true\ntimeout = \"1500ms\"",
        "",
    );
    let mut s = f.serve().started();
    let r = s.ok(
        "tools/call",
        json!({"name": "shop_sql", "arguments": {"sql": "SELECT @@SESSION.max_statement_time AS limit_s"}}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        r["structuredContent"]["rows"][0]["limit_s"].as_f64(),
        Some(1.5),
        "{r}"
    );
}

/// A table read names exactly what the listing shows, in the one statement that reads it: a name
/// of another case, a table the account has no privilege on, a sequence, a name longer than
/// MariaDB allows or holding NUL is not found; an empty table is an empty answer; a table the
/// account may read only some columns of is listed and fails with the server's clear error.
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn table_reads_name_exactly_what_is_listed() {
    let my = shared();
    my.database(
        "exact",
        "CREATE TABLE shown (id INT PRIMARY KEY, v VARCHAR(10));
         INSERT INTO shown VALUES (1, 'a');
         CREATE TABLE empty (id INT PRIMARY KEY, v TEXT);
         CREATE TABLE secret (id INT PRIMARY KEY, pin VARCHAR(10));
         INSERT INTO secret VALUES (1, '1234');
         CREATE TABLE hidden (id INT);
         CREATE SEQUENCE seq;
         CREATE VIEW seen AS SELECT v FROM shown;",
    );
    my.admin_sql(
        "mysql",
        "REVOKE SELECT, SHOW VIEW ON `exact`.* FROM 'app'@'%';
         GRANT SELECT ON `exact`.shown TO 'app'@'%';
         GRANT SELECT ON `exact`.empty TO 'app'@'%';
         GRANT SELECT ON `exact`.seen TO 'app'@'%';
         GRANT SELECT ON `exact`.seq TO 'app'@'%';
         GRANT SELECT (id) ON `exact`.secret TO 'app'@'%';",
    );
    let f = manifest(&my.url("exact"), "", "");
    let mut s = f.serve().started();
    assert_eq!(
        read_json(&mut s, "mysql://shop/tables/shown")["rows"],
        json!([{"id": 1, "v": "a"}])
    );
    assert_eq!(
        read_json(&mut s, "mysql://shop/tables/seen")["rows"],
        json!([{"v": "a"}])
    );
    let empty = read_json(&mut s, "mysql://shop/tables/empty");
    assert_eq!(empty["columns"], json!(["id", "v"]));
    assert_eq!(empty["rows"], json!([]));
    let long = format!("mysql://shop/tables/{}", "s".repeat(65));
    for missing in [
        "mysql://shop/tables/Shown",
        "mysql://shop/tables/SHOWN",
        "mysql://shop/tables/hidden",
        "mysql://shop/tables/seq",
        "mysql://shop/tables/nope",
        "mysql://shop/tables/shown%00",
        long.as_str(),
    ] {
        let (code, message) = read_error(&mut s, missing);
        assert_eq!(code, -32002, "{missing}: {message}");
    }
    let (code, message) = read_error(&mut s, "mysql://shop/tables/secret");
    assert_eq!(code, -32602, "{message}");
    assert!(
        message.starts_with("[mysql.shop] ") && message.contains("denied"),
        "{message}"
    );
    // The source goes on.
    assert_eq!(
        read_json(&mut s, "mysql://shop/tables/shown")["rows"][0]["v"],
        "a"
    );
}
