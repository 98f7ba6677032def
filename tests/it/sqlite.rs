//! `[sqlite.NAME]`: schema, tables and views (odd names too), values by storage class, named
//! queries with typed parameters, injection values as data, writes that fail without touching the
//! file, a 1 000 000-row table, build-time SQL errors with their places, and completion.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Fixture, Server, list_all, stderr};

/// Creates (or extends) the database at `path` by running `sql` (any number of statements).
pub fn make_db(path: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).expect("create the database");
    conn.execute_batch(sql).expect("run the fixture SQL");
    conn.close()
        .map_err(|(_, e)| e)
        .expect("close the database");
}

/// Reads `uri` and parses its text as JSON.
pub fn read_json(s: &mut Server, uri: &str) -> Value {
    let r = s.ok("resources/read", json!({"uri": uri}));
    let c = &r["contents"][0];
    assert_eq!(c["uri"], uri);
    assert_eq!(c["mimeType"], "application/json", "{c}");
    serde_json::from_str(c["text"].as_str().expect("text content")).expect("JSON content")
}

fn read_text(s: &mut Server, uri: &str) -> String {
    let r = s.ok("resources/read", json!({"uri": uri}));
    r["contents"][0]["text"]
        .as_str()
        .expect("text content")
        .to_owned()
}

fn shop(f: &Fixture) {
    make_db(
        &f.path("shop.db"),
        r#"
        CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL);
        CREATE INDEX orders_by_customer ON orders (customer_id);
        CREATE VIEW "big orders" AS SELECT * FROM orders WHERE total >= 100;
        CREATE TABLE "say ""hi"" 'there'" (v TEXT);
        CREATE TABLE "café ünïcode" (v TEXT);
        CREATE TRIGGER no_negative BEFORE INSERT ON orders WHEN NEW.total < 0
            BEGIN SELECT RAISE(ABORT, 'negative'); END;
        INSERT INTO customers VALUES (1, 'alice'), (2, 'bob'), (3, 'carol');
        INSERT INTO orders VALUES (1, 1, 120.0), (2, 1, 30.5), (3, 2, 99.5), (4, 3, 250.0);
        INSERT INTO "say ""hi"" 'there'" VALUES ('quoted');
        INSERT INTO "café ünïcode" VALUES ('accented');
        "#,
    );
}

const SHOP: &str = r#"
[sqlite.shop]
path = "shop.db"
description = "Orders and customers"

[sqlite.shop.queries.top_customers]
description = "Best customers by revenue"
sql = "SELECT name, SUM(total) AS revenue FROM orders JOIN customers USING (customer_id) GROUP BY name ORDER BY revenue DESC LIMIT :limit"
params.limit = { type = "integer", default = 10, description = "How many customers" }

[sqlite.shop.queries.by_name]
sql = "SELECT customer_id, name FROM customers WHERE name = :name"
params.name = { type = "string", description = "Exact name" }

[sqlite.shop.queries.orders_over]
sql = """
SELECT id, total FROM orders
WHERE total > :min AND (:big = 0 OR total >= 100)
ORDER BY id"""
params.min = { type = "number", default = 0 }
params.big = { type = "boolean", default = false }

[sqlite.shop.queries.pick]
sql = "SELECT :kind AS kind"
params.kind = { type = "string", enum = ["a", "b"], default = "a" }
"#;

#[test]
fn lists_schema_tables_views_and_default_queries() {
    let f = Fixture::new();
    shop(&f);
    f.manifest(SHOP);
    let mut s = f.serve().started();
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let uris: Vec<&str> = resources.iter().filter_map(|r| r["uri"].as_str()).collect();
    assert_eq!(
        uris,
        [
            "sqlite://shop/schema",
            "sqlite://shop/tables/big%20orders",
            "sqlite://shop/tables/caf%C3%A9%20%C3%BCn%C3%AFcode",
            "sqlite://shop/tables/customers",
            "sqlite://shop/tables/orders",
            "sqlite://shop/tables/say%20%22hi%22%20%27there%27",
            "sqlite://shop/queries/top_customers",
            "sqlite://shop/queries/orders_over",
            "sqlite://shop/queries/pick",
        ]
    );
    assert_eq!(resources[0]["mimeType"], "text/plain");
    assert_eq!(resources[0]["description"], "Orders and customers");
    assert_eq!(resources[1]["name"], "shop/tables/big orders");
    assert_eq!(resources[3]["mimeType"], "application/json");
    assert_eq!(resources[6]["description"], "Best customers by revenue");

    let (templates, _) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    let uris: Vec<&str> = templates
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert_eq!(
        uris,
        [
            "sqlite://shop/tables/{table}",
            "sqlite://shop/queries/top_customers{?limit}",
            "sqlite://shop/queries/by_name{?name}",
            "sqlite://shop/queries/orders_over{?min,big}",
            "sqlite://shop/queries/pick{?kind}",
        ]
    );
    assert_eq!(templates[0]["mimeType"], "application/json");
}

#[test]
fn schema_holds_every_create_statement_in_order() {
    let f = Fixture::new();
    shop(&f);
    f.manifest(SHOP);
    let mut s = f.serve().started();
    let schema = read_text(&mut s, "sqlite://shop/schema");
    let lines: Vec<&str> = schema.lines().map(str::trim_start).collect();
    let starts = [
        "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL);",
        "CREATE INDEX orders_by_customer ON orders (customer_id);",
        "CREATE VIEW \"big orders\" AS SELECT * FROM orders WHERE total >= 100;",
        "CREATE TABLE \"say \"\"hi\"\" 'there'\" (v TEXT);",
        "CREATE TABLE \"café ünïcode\" (v TEXT);",
        "CREATE TRIGGER no_negative BEFORE INSERT ON orders WHEN NEW.total < 0",
    ];
    for (line, start) in lines.iter().zip(starts) {
        assert_eq!(*line, start);
    }
    assert!(schema.ends_with("END;\n"), "{schema}");
    assert!(
        !schema.contains("sqlite_"),
        "SQLite's own tables are left out"
    );
}

#[test]
fn tables_and_views_with_odd_names_read_as_json() {
    let f = Fixture::new();
    shop(&f);
    f.manifest(SHOP);
    let mut s = f.serve().started();
    let customers = read_json(&mut s, "sqlite://shop/tables/customers");
    assert_eq!(
        customers,
        json!({
            "columns": ["customer_id", "name"],
            "rows": [
                {"customer_id": 1, "name": "alice"},
                {"customer_id": 2, "name": "bob"},
                {"customer_id": 3, "name": "carol"}
            ],
            "truncated": false
        })
    );
    let big = read_json(&mut s, "sqlite://shop/tables/big%20orders");
    assert_eq!(
        big["rows"],
        json!([
            {"id": 1, "customer_id": 1, "total": 120.0},
            {"id": 4, "customer_id": 3, "total": 250.0}
        ])
    );
    let quoted = read_json(&mut s, "sqlite://shop/tables/say%20%22hi%22%20%27there%27");
    assert_eq!(quoted["rows"], json!([{"v": "quoted"}]));
    // Percent-encoded or raw (an IRI), the same table.
    let encoded = read_json(&mut s, "sqlite://shop/tables/caf%C3%A9%20%C3%BCn%C3%AFcode");
    assert_eq!(encoded["rows"], json!([{"v": "accented"}]));
    let raw = s.ok(
        "resources/read",
        json!({"uri": "sqlite://shop/tables/café%20ünïcode"}),
    );
    assert!(
        raw["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("accented")
    );
    // The table template expands to the listed URIs.
    let template =
        s.ok("resources/templates/list", json!({}))["resourceTemplates"][0]["uriTemplate"]
            .as_str()
            .unwrap()
            .to_owned();
    assert_eq!(template, "sqlite://shop/tables/{table}");
    // Column order is kept in every row object.
    let text = read_text(&mut s, "sqlite://shop/tables/orders");
    assert!(
        text.starts_with(r#"{"columns":["id","customer_id","total"],"rows":[{"id":1,"customer_id":1,"total":120.0}"#),
        "{text}"
    );
}

#[test]
fn empty_tables_still_name_their_columns() {
    let f = Fixture::new();
    make_db(&f.path("e.db"), "CREATE TABLE empty (a INTEGER, b TEXT);");
    f.manifest("[sqlite.e]\npath = \"e.db\"\n");
    let mut s = f.serve().started();
    assert_eq!(
        read_json(&mut s, "sqlite://e/tables/empty"),
        json!({"columns": ["a", "b"], "rows": [], "truncated": false})
    );
}

#[test]
fn values_follow_their_storage_class() {
    let f = Fixture::new();
    make_db(
        &f.path("v.db"),
        r#"
        CREATE TABLE mixed (id INTEGER PRIMARY KEY, anything, declared_int INTEGER, declared_text TEXT);
        INSERT INTO mixed VALUES
            (1, 42, 7, 'seven'),
            (2, 3.5, 'not a number', 8),
            (3, 'text', NULL, NULL),
            (4, x'00FF10', 9223372036854775807, ''),
            (5, NULL, -9223372036854775808, 'tab	and "quotes" and é'),
            (6, 1e999, -1e999, char(97, 0, 98));
        "#,
    );
    f.manifest("[sqlite.v]\npath = \"v.db\"\n");
    let mut s = f.serve().started();
    assert_eq!(
        read_json(&mut s, "sqlite://v/tables/mixed"),
        json!({
            "columns": ["id", "anything", "declared_int", "declared_text"],
            "rows": [
                {"id": 1, "anything": 42, "declared_int": 7, "declared_text": "seven"},
                {"id": 2, "anything": 3.5, "declared_int": "not a number", "declared_text": "8"},
                {"id": 3, "anything": "text", "declared_int": null, "declared_text": null},
                {"id": 4, "anything": "AP8Q", "declared_int": 9223372036854775807i64, "declared_text": ""},
                {"id": 5, "anything": null, "declared_int": -9223372036854775808i64, "declared_text": "tab\tand \"quotes\" and é"},
                {"id": 6, "anything": "Infinity", "declared_int": "-Infinity", "declared_text": "a\u{0}b"}
            ],
            "truncated": false
        })
    );
}

#[test]
fn a_million_rows_give_row_limit_rows_and_truncated_quickly() {
    let f = Fixture::new();
    make_db(
        &f.path("big.db"),
        "CREATE TABLE big (id INTEGER PRIMARY KEY, label TEXT);
         WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000000)
         INSERT INTO big SELECT x, 'row ' || x FROM n;",
    );
    f.manifest(
        "[sqlite.big]\npath = \"big.db\"\nrow_limit = 25\n\n\
         [sqlite.big.queries.all]\nsql = \"SELECT label FROM big ORDER BY id DESC\"\n",
    );
    let mut s = f.serve().started();
    let started = Instant::now();
    let table = read_json(&mut s, "sqlite://big/tables/big");
    let elapsed = started.elapsed();
    assert_eq!(table["rows"].as_array().unwrap().len(), 25);
    assert_eq!(table["rows"][24], json!({"id": 25, "label": "row 25"}));
    assert_eq!(table["truncated"], true);
    // A guard against reading the whole table, not a benchmark (that is
    // `cargo bench --bench suite -- sqlite`).
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    // A query without LIMIT streams: the first rows, then it stops.
    let started = Instant::now();
    let all = read_json(&mut s, "sqlite://big/queries/all");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(all["rows"][0], json!({"label": "row 1000000"}));
    assert_eq!(all["rows"].as_array().unwrap().len(), 25);
    assert_eq!(all["truncated"], true);
}

#[test]
fn named_queries_bind_converted_parameters_and_defaults() {
    let f = Fixture::new();
    shop(&f);
    f.manifest(SHOP);
    let mut s = f.serve().started();
    let top = read_json(&mut s, "sqlite://shop/queries/top_customers");
    assert_eq!(
        top,
        json!({
            "columns": ["name", "revenue"],
            "rows": [
                {"name": "carol", "revenue": 250.0},
                {"name": "alice", "revenue": 150.5},
                {"name": "bob", "revenue": 99.5}
            ],
            "truncated": false
        })
    );
    let one = read_json(&mut s, "sqlite://shop/queries/top_customers?limit=1");
    assert_eq!(one["rows"], json!([{"name": "carol", "revenue": 250.0}]));
    let bob = read_json(&mut s, "sqlite://shop/queries/by_name?name=bob");
    assert_eq!(bob["rows"], json!([{"customer_id": 2, "name": "bob"}]));
    // Order of query parameters does not matter; booleans and numbers convert.
    let over = read_json(
        &mut s,
        "sqlite://shop/queries/orders_over?big=true&min=100.5",
    );
    assert_eq!(
        over["rows"],
        json!([{"id": 1, "total": 120.0}, {"id": 4, "total": 250.0}])
    );
    let over = read_json(&mut s, "sqlite://shop/queries/orders_over?min=50");
    assert_eq!(over["rows"].as_array().unwrap().len(), 3);
    assert_eq!(
        read_json(&mut s, "sqlite://shop/queries/pick?kind=b")["rows"],
        json!([{"kind": "b"}])
    );
}

#[test]
fn bad_parameters_are_invalid_params_naming_the_parameter() {
    let f = Fixture::new();
    shop(&f);
    f.manifest(SHOP);
    let mut s = f.serve().started();
    for (uri, says) in [
        (
            "sqlite://shop/queries/top_customers?limit=ten",
            "query `top_customers`: parameter `limit` must be an integer, got \"ten\"",
        ),
        (
            "sqlite://shop/queries/top_customers?limit=1.5",
            "parameter `limit` must be an integer",
        ),
        (
            "sqlite://shop/queries/top_customers?limit=",
            "parameter `limit` must be an integer",
        ),
        (
            "sqlite://shop/queries/orders_over?min=lots",
            "parameter `min` must be a number",
        ),
        (
            "sqlite://shop/queries/orders_over?big=maybe",
            "parameter `big` must be a boolean",
        ),
        (
            "sqlite://shop/queries/pick?kind=c",
            "parameter `kind` must be one of \"a\", \"b\", got \"c\"",
        ),
        (
            "sqlite://shop/queries/by_name",
            "query `by_name`: missing required parameter `name` (a string)",
        ),
        (
            "sqlite://shop/queries/by_name?nam=bob",
            "query `by_name`: unknown parameter `nam`; the parameters are: `name`",
        ),
        (
            "sqlite://shop/queries/by_name?name=a&name=b",
            "parameter `name` is given more than once",
        ),
        (
            "sqlite://shop/queries/by_name?name=%zz",
            "not a valid percent-encoded parameter",
        ),
    ] {
        let e = s.err("resources/read", json!({"uri": uri}));
        assert_eq!(e["code"], -32602, "{uri}: {e}");
        let message = e["message"].as_str().unwrap();
        assert!(message.contains(says), "{uri}: {message}");
    }
    for uri in [
        "sqlite://shop/queries/nope",
        "sqlite://shop/tables/nope",
        "sqlite://shop/tables/",
        "sqlite://shop/tables/sqlite_schema",
        "sqlite://shop/tables/pragma_database_list",
        "sqlite://shop/other",
        "sqlite://nope/schema",
    ] {
        let e = s.err("resources/read", json!({"uri": uri}));
        assert_eq!(e["code"], -32002, "{uri}: {e}");
    }
    let e = s.modern(
        "resources/read",
        json!({"uri": "sqlite://shop/tables/nope"}),
    );
    assert_eq!(e["error"]["code"], -32602, "stateless era: {e}");
}

#[test]
fn injection_values_are_data() {
    let f = Fixture::new();
    let db = f.path("t.db");
    make_db(
        &db,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT);
         INSERT INTO t VALUES (1, 'alice'), (2, ''' OR 1=1 --');",
    );
    f.manifest(
        "[sqlite.t]\npath = \"t.db\"\n\n\
         [sqlite.t.queries.find]\n\
         sql = \"SELECT count(*) AS n, :name AS echo, length(:name) AS len FROM t WHERE name = :name\"\n\
         params.name = { type = \"string\" }\n\n\
         [sqlite.t.queries.by_id]\nsql = \"SELECT name FROM t WHERE id = :id\"\nparams.id = { type = \"integer\" }\n",
    );
    let before = std::fs::read(&db).unwrap();
    let mut s = f.serve().started();
    // 1 MiB: a SQL source takes URIs past the 64 KiB others do (it never matches a pattern).
    let big = "x".repeat(1024 * 1024);
    for (value, matches) in [
        ("' OR 1=1 --", 1),
        ("1; DROP TABLE t", 0),
        ("alice' --", 0),
        ("a\0b", 0),
        (big.as_str(), 0),
    ] {
        let uri = format!(
            "sqlite://t/queries/find?name={}",
            crate::support::encode_component(value)
        );
        let r = read_json(&mut s, &uri);
        assert_eq!(r["rows"][0]["n"], matches, "{:.40}", value);
        assert_eq!(
            r["rows"][0]["echo"], value,
            "the value comes back as it went in"
        );
        // SQLite's length() counts characters up to the first NUL.
        let len = value.split('\0').next().unwrap_or("").chars().count();
        assert_eq!(r["rows"][0]["len"], len, "{:.40}", value);
    }
    let e = s.err(
        "resources/read",
        json!({"uri": "sqlite://t/queries/by_id?id=1%3B%20DROP%20TABLE%20t"}),
    );
    assert_eq!(e["code"], -32602);
    // Past 4 MiB even a SQL source's URI is refused for its length, in a short message.
    let e = s.err(
        "resources/read",
        json!({"uri": format!("sqlite://t/queries/find?name={}", "x".repeat(5 << 20))}),
    );
    assert_eq!(e["code"], -32602);
    let message = e["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("at most 4 MiB") && message.len() < 1024,
        "{message:.300}"
    );
    // A table name is one quoted identifier, and only listed names are read.
    for name in [
        "t%22%3B%20DROP%20TABLE%20t%3B--",
        "t%20WHERE%201%3D1",
        "t%22%20--",
    ] {
        let e = s.err(
            "resources/read",
            json!({"uri": format!("sqlite://t/tables/{name}")}),
        );
        assert_eq!(e["code"], -32002, "{name}");
    }
    assert_eq!(
        read_json(&mut s, "sqlite://t/tables/t")["rows"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    drop(s);
    assert!(
        std::fs::read(&db).unwrap() == before,
        "the database file is unchanged"
    );
}

#[test]
fn writes_fail_and_leave_the_file_unchanged() {
    let f = Fixture::new();
    let db = f.path("w.db");
    make_db(
        &db,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'keep');",
    );
    f.manifest(
        r#"
[sqlite.w]
path = "w.db"

[sqlite.w.queries.insert]
sql = "WITH x(v) AS (SELECT 'new') INSERT INTO t (v) SELECT v FROM x"

[sqlite.w.queries.delete]
sql = "WITH x AS (SELECT 1) DELETE FROM t"

[sqlite.w.queries.user_version]
sql = "PRAGMA user_version = 7"

[sqlite.w.queries.unguard]
sql = "PRAGMA query_only = 0"

[sqlite.w.queries.temp]
sql = "WITH x AS (SELECT 1) UPDATE t SET v = 'changed'"

[templates.del]
uri = "del://{id}"
sqlite = "w"
sql = "WITH d(id) AS (SELECT :id) DELETE FROM t WHERE id IN (SELECT id FROM d)"
"#,
    );
    let before = std::fs::read(&db).unwrap();
    let mut s = f.serve().started();
    for uri in [
        "sqlite://w/queries/insert",
        "sqlite://w/queries/delete",
        "sqlite://w/queries/user_version",
        "sqlite://w/queries/temp",
        "del://1",
    ] {
        let e = s.err("resources/read", json!({"uri": uri}));
        assert_eq!(e["code"], -32602, "{uri}: {e}");
        let m = e["message"].as_str().unwrap();
        assert!(
            m.contains("readonly") || m.contains("read-only"),
            "{uri}: {m}"
        );
    }
    // Turning `query_only` off does not make the connection writable: it was opened read-only.
    read_json(&mut s, "sqlite://w/queries/unguard");
    let e = s.err(
        "resources/read",
        json!({"uri": "sqlite://w/queries/delete"}),
    );
    assert!(e["message"].as_str().unwrap().contains("readonly"), "{e}");
    assert_eq!(
        read_json(&mut s, "sqlite://w/tables/t")["rows"],
        json!([{"id": 1, "v": "keep"}])
    );
    drop(s);
    assert!(
        std::fs::read(&db).unwrap() == before,
        "the database file is unchanged"
    );

    // Statements that do not read (ATTACH, VACUUM INTO, DROP) never get past `check`.
    let g = Fixture::new();
    let db = g.path("w.db");
    make_db(&db, "CREATE TABLE t (v TEXT);");
    let before = std::fs::read(&db).unwrap();
    g.manifest(
        "[sqlite.w]\npath = \"w.db\"\n\n\
         [sqlite.w.queries.attach]\nsql = \"ATTACH DATABASE 'other.db' AS other\"\n\n\
         [sqlite.w.queries.vacuum]\nsql = \"VACUUM INTO 'copy.db'\"\n\n\
         [sqlite.w.queries.drop]\nsql = \"DROP TABLE t\"\n",
    );
    let out = g.run(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    for (line, word) in [(5, "ATTACH"), (8, "VACUUM"), (11, "DROP")] {
        assert!(
            err.contains(&format!("mcp-server.toml:{line}:7: [sqlite.w.queries."))
                && err.contains(&format!("(found `{word}`)")),
            "{err}"
        );
    }
    assert!(std::fs::read(&db).unwrap() == before);
    assert!(!g.path("other.db").exists() && !g.path("copy.db").exists());
}

#[test]
fn build_time_sql_errors_have_exact_places() {
    let f = Fixture::new();
    shop(&f);
    let lines = f.diagnose(
        r#"[sqlite.shop]
path = "shop.db"

[sqlite.shop.queries.typo]
sql = "SELECT nme FROM customers"

[sqlite.shop.queries.two]
description = "two statements"
sql = "SELECT 1; SELECT 2"

[sqlite.shop.queries.params]
sql = """
SELECT * FROM orders
WHERE total > :minimum AND id = ?"""
params.min = { type = "number" }

[sqlite.shop.queries.sneaky]
sql = "SELECT ':not_a_param' || :real"
params.real = { type = "string" }
params.extra = { type = "string", default = "x" }

[sqlite.shop.queries.mode]
sql = 'DELETE FROM orders'

[sqlite.missing]
path = "missing.db"

[sqlite.notdb]
path = "bad.toml"
"#,
    );
    assert_eq!(
        lines,
        [
            "bad.toml:5:7: [sqlite.shop.queries.typo] the SQL does not compile: no such column: nme",
            "bad.toml:9:7: [sqlite.shop.queries.two] `sql` holds more than one statement; write exactly one",
            "bad.toml:12:7: [sqlite.shop.queries.params] SQL parameter `:minimum` is not declared, did you mean `:min`?",
            "bad.toml:12:7: [sqlite.shop.queries.params] parameter `min` is declared but the SQL never uses `:min`",
            "bad.toml:12:7: [sqlite.shop.queries.params] positional parameter `?` cannot be bound; write a named parameter `:name` and declare it",
            "bad.toml:18:7: [sqlite.shop.queries.sneaky] parameter `extra` is declared but the SQL never uses `:extra`",
            "bad.toml:23:7: [sqlite.shop.queries.mode] `sql` must read: start it with SELECT, WITH, VALUES, PRAGMA, EXPLAIN (found `DELETE`); the database is opened read-only",
            &format!(
                "bad.toml:26:8: [sqlite.missing] database `{}` cannot be opened: no such file (it is opened read-only and never created)",
                f.path("missing.db").display()
            ),
            &format!(
                "bad.toml:29:8: [sqlite.notdb] `{}` cannot be opened as a SQLite database: file is not a database",
                f.path("bad.toml").display()
            ),
        ]
    );
    assert!(!f.path("missing.db").exists(), "never created");
    // `serve` refuses the same manifest before reading stdin.
    let out = f.run(&["serve", "bad.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("bad.toml:5:7: [sqlite.shop.queries.typo]"));
}

#[test]
fn tables_off_serves_schema_and_queries_only() {
    let f = Fixture::new();
    shop(&f);
    f.manifest(
        "[sqlite.shop]\npath = \"shop.db\"\ntables = false\n\n\
         [sqlite.shop.queries.n]\nsql = \"SELECT count(*) AS n FROM orders\"\n",
    );
    let mut s = f.serve().started();
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let uris: Vec<&str> = resources.iter().filter_map(|r| r["uri"].as_str()).collect();
    assert_eq!(uris, ["sqlite://shop/schema", "sqlite://shop/queries/n"]);
    let (templates, _) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    assert!(templates.is_empty(), "{templates:?}");
    let e = s.err(
        "resources/read",
        json!({"uri": "sqlite://shop/tables/orders"}),
    );
    assert_eq!(e["code"], -32002);
    assert_eq!(
        read_json(&mut s, "sqlite://shop/queries/n")["rows"],
        json!([{"n": 4}])
    );
}

#[test]
fn table_names_and_parameter_values_complete() {
    let f = Fixture::new();
    let mut sql = String::new();
    for i in 0..150 {
        sql.push_str(&format!("CREATE TABLE t{i:03} (x); "));
    }
    sql.push_str("CREATE TABLE other (x); CREATE VIEW tv AS SELECT 1;");
    make_db(&f.path("c.db"), &sql);
    f.manifest(
        "[sqlite.c]\npath = \"c.db\"\n\n\
         [sqlite.c.queries.q]\nsql = \"SELECT :kind, :flag, :n\"\n\
         params.kind = { enum = [\"red\", \"green\", \"blue\"] }\n\
         params.flag = { type = \"boolean\" }\nparams.n = { type = \"integer\" }\n",
    );
    let mut s = f.serve().started();
    let complete = |s: &mut Server, uri: &str, name: &str, value: &str| {
        s.ok(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": uri}, "argument": {"name": name, "value": value}}),
        )["completion"]
            .clone()
    };
    let all = complete(&mut s, "sqlite://c/tables/{table}", "table", "t");
    assert_eq!(all["values"].as_array().unwrap().len(), 100);
    assert_eq!(all["total"], 151);
    assert_eq!(all["hasMore"], true);
    assert_eq!(all["values"][0], "t000");
    let some = complete(&mut s, "sqlite://c/tables/{table}", "table", "t14");
    assert_eq!(
        some["values"],
        json!([
            "t140", "t141", "t142", "t143", "t144", "t145", "t146", "t147", "t148", "t149"
        ])
    );
    assert_eq!(some["hasMore"], false);
    assert_eq!(
        complete(&mut s, "sqlite://c/tables/{table}", "table", "o")["values"],
        json!(["other"])
    );
    let q = "sqlite://c/queries/q{?kind,flag,n}";
    assert_eq!(
        complete(&mut s, q, "kind", "")["values"],
        json!(["blue", "green", "red"])
    );
    assert_eq!(complete(&mut s, q, "flag", "t")["values"], json!(["true"]));
    assert_eq!(complete(&mut s, q, "n", "")["values"], json!([]));
    let e = s.err(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": q}, "argument": {"name": "nope", "value": ""}}),
    );
    assert_eq!(e["code"], -32602);
}

// Unix only: Windows refuses to replace a file another handle holds open without
// FILE_SHARE_DELETE, as SQLite's Windows VFS opens its databases (the pool keeps one open
// between reads).
#[cfg(unix)]
#[test]
fn a_replaced_database_file_is_reopened() {
    let f = Fixture::new();
    make_db(
        &f.path("live.db"),
        "CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('old');",
    );
    f.manifest("[sqlite.live]\npath = \"live.db\"\n");
    let mut s = f.serve().started();
    assert_eq!(
        read_json(&mut s, "sqlite://live/tables/t")["rows"],
        json!([{"v": "old"}])
    );
    make_db(
        &f.path("next.db"),
        "CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('new');",
    );
    std::fs::rename(f.path("next.db"), f.path("live.db")).unwrap();
    assert_eq!(
        read_json(&mut s, "sqlite://live/tables/t")["rows"],
        json!([{"v": "new"}])
    );
    std::fs::remove_file(f.path("live.db")).unwrap();
    let e = s.err("resources/read", json!({"uri": "sqlite://live/tables/t"}));
    assert_eq!(e["code"], -32602, "{e}");
}

#[test]
fn wal_databases_are_read_and_never_written() {
    let f = Fixture::new();
    let db = f.path("wal.db");
    make_db(
        &db,
        "PRAGMA journal_mode = WAL; CREATE TABLE t (v); INSERT INTO t VALUES (1);",
    );
    let before = std::fs::read(&db).unwrap();
    f.manifest("[sqlite.wal]\npath = \"wal.db\"\n");
    let mut s = f.serve().started();
    assert_eq!(
        read_json(&mut s, "sqlite://wal/tables/t")["rows"],
        json!([{"v": 1}])
    );
    drop(s);
    assert!(std::fs::read(&db).unwrap() == before);
}

#[test]
fn resource_tools_read_sqlite_resources() {
    let f = Fixture::new();
    shop(&f);
    f.manifest(SHOP);
    let mut s = f.serve().started();
    let r = s.ok(
        "tools/call",
        json!({"name": "read_resource", "arguments": {"uri": "sqlite://shop/queries/top_customers?limit=1"}}),
    );
    assert_eq!(r["isError"], false);
    let body: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["rows"], json!([{"name": "carol", "revenue": 250.0}]));
}

#[test]
fn a_subscribed_table_is_updated_when_the_database_changes() {
    let f = Fixture::new();
    let db = f.path("live.db");
    make_db(
        &db,
        "CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('one');",
    );
    f.manifest("[sqlite.live]\npath = \"live.db\"\n");
    let mut s = f.serve().started();
    let uri = "sqlite://live/tables/t";
    // Answered once the database's folder is watched.
    s.ok("resources/subscribe", json!({"uri": uri}));
    make_db(&db, "INSERT INTO t VALUES ('two');");
    s.wait_for(|v| v["method"] == "notifications/resources/updated" && v["params"]["uri"] == uri);
    assert_eq!(
        read_json(&mut s, uri)["rows"],
        json!([{"v": "one"}, {"v": "two"}])
    );
}

/// A statement that never ends (one row, counted after an endless recursion).
const ENDLESS: &str =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c";

#[test]
fn a_query_past_its_timeout_is_stopped_and_the_source_keeps_serving() {
    let f = Fixture::new();
    make_db(
        &f.path("s.db"),
        "CREATE TABLE t (v); INSERT INTO t VALUES (1);",
    );
    f.manifest(&format!(
        "[sqlite.slow]\npath = \"s.db\"\ntimeout = \"300ms\"\n\n\
         [sqlite.slow.queries.forever]\nsql = \"{ENDLESS}\"\n"
    ));
    let mut s = f.serve().started();
    for _ in 0..6 {
        let started = Instant::now();
        let e = s.err(
            "resources/read",
            json!({"uri": "sqlite://slow/queries/forever"}),
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(e["code"], -32602);
        assert_eq!(
            e["message"],
            "[sqlite.slow] the query ran longer than 300ms (`timeout`) and was stopped"
        );
    }
    // More timed-out queries than pooled connections, and the connections still work.
    assert_eq!(
        read_json(&mut s, "sqlite://slow/tables/t")["rows"],
        json!([{"v": 1}])
    );
}

/// The descriptors the process `pid` holds open on `path`.
#[cfg(target_os = "linux")]
fn open_on(pid: u32, path: &Path) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(Result::ok)
                .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == path))
                .count()
        })
        .unwrap_or(0)
}

// Linux only: connections are counted by the database's descriptors in /proc/PID/fd.
#[cfg(target_os = "linux")]
#[test]
fn cancelled_queries_are_interrupted_and_their_connections_closed() {
    let f = Fixture::new();
    make_db(
        &f.path("s.db"),
        "CREATE TABLE t (v); INSERT INTO t VALUES (1);",
    );
    f.manifest(&format!(
        "[sqlite.slow]\npath = \"s.db\"\ntimeout = \"120s\"\nwatch = false\n\n\
         [sqlite.slow.queries.forever]\nsql = \"{ENDLESS}\"\n"
    ));
    let mut s = f.serve_process().started();
    let pid = s.child.as_ref().expect("a process").id();
    let db = std::fs::canonicalize(f.path("s.db")).expect("the database's path");
    // As many endless queries as the source has connections: each holds one open.
    let ids: Vec<Value> = (0..4).map(|i| json!(format!("forever-{i}"))).collect();
    for id in &ids {
        s.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                       "params": {"uri": "sqlite://slow/queries/forever"}}),
        );
    }
    let waited = Instant::now();
    while open_on(pid, &db) < ids.len() {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the queries never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    for id in &ids {
        s.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": id}}),
        );
    }
    // Interrupted (not left to run out their 120 s) and closed (not kept for the next read).
    let cancelled = Instant::now();
    while open_on(pid, &db) > 0 {
        assert!(
            cancelled.elapsed() < Duration::from_secs(20),
            "{} connections still open after the cancellations",
            open_on(pid, &db)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        read_json(&mut s, "sqlite://slow/tables/t")["rows"],
        json!([{"v": 1}])
    );
    assert!(
        s.pending().iter().all(|m| !ids.contains(&m["id"])),
        "a cancelled request was answered: {:?}",
        s.pending()
    );
}

#[test]
fn a_table_read_past_its_timeout_says_so() {
    let f = Fixture::new();
    // A view that never ends, in a database whose listing takes many steps to search.
    let mut sql = format!("CREATE VIEW forever AS {ENDLESS};");
    for i in 0..300 {
        sql.push_str(&format!("CREATE TABLE t{i} (v);"));
    }
    make_db(&f.path("s.db"), &sql);
    f.manifest("[sqlite.slow]\npath = \"s.db\"\ntimeout = \"300ms\"\nwatch = false\n");
    let mut s = f.serve().started();
    let e = s.err(
        "resources/read",
        json!({"uri": "sqlite://slow/tables/forever"}),
    );
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(
        e["message"],
        "[sqlite.slow] the query ran longer than 300ms (`timeout`) and was stopped"
    );
}

#[test]
fn answers_stop_at_max_size_and_a_value_larger_is_refused_before_it_is_made() {
    let f = Fixture::new();
    make_db(
        &f.path("wide.db"),
        "CREATE TABLE wide (id INTEGER PRIMARY KEY, body TEXT);
         WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 100)
         INSERT INTO wide SELECT x, printf('%.*c', 20000, 'w') FROM n;
         INSERT INTO wide VALUES (101, printf('%.*c', 300000, 'h'));",
    );
    f.manifest(
        "[sqlite.wide]\npath = \"wide.db\"\nrow_limit = 200\nmax_size = \"256KiB\"\n\n\
         [sqlite.wide.queries.made]\nsql = \"SELECT randomblob(:n) AS v\"\n\
         params.n = { type = \"integer\" }\n\n\
         [sqlite.wide.queries.first]\nsql = \"SELECT id, length(body) AS n FROM wide WHERE id <= :id\"\n\
         params.id = { type = \"integer\" }\n\n\
         [sqlite.wide.queries.stored]\nsql = \"SELECT body FROM wide WHERE id = 101\"\n",
    );
    // A process of its own, to measure its memory.
    let mut s = f.serve_process().started();
    let pid = s.child.as_ref().expect("a server").id();
    // Rows of 20 000 bytes: as many as fit in 256 KiB, then `truncated`.
    let r = s.ok(
        "resources/read",
        json!({"uri": "sqlite://wide/tables/wide"}),
    );
    let text = r["contents"][0]["text"].as_str().expect("text");
    assert!(text.len() <= 256 * 1024, "{} bytes", text.len());
    let table: Value = serde_json::from_str(text).expect("JSON");
    let rows = table["rows"].as_array().expect("rows").len();
    assert!((10..=13).contains(&rows), "{rows} rows");
    assert_eq!(table["truncated"], true);
    assert_eq!(table["rows"][0]["id"], 1);
    // Small rows of the same table are not cut.
    let small = read_json(&mut s, "sqlite://wide/queries/first?id=100");
    assert_eq!(small["rows"].as_array().map(Vec::len), Some(100));
    assert_eq!(small["truncated"], false);
    // A value larger than `max_size`, made by the query or stored: refused, naming the limit.
    // The peak memory is read from /proc (Linux); elsewhere only the answers are checked.
    let peak = || cfg!(target_os = "linux").then(|| crate::support::proc_memory(pid, "VmHWM"));
    let before = peak();
    for uri in [
        "sqlite://wide/queries/made?n=900000000",
        "sqlite://wide/queries/made?n=300000",
    ] {
        let e = s.err("resources/read", json!({"uri": uri}));
        assert_eq!(e["code"], -32602, "{e}");
        assert_eq!(
            e["message"],
            "[sqlite.wide] a value or a row larger than 256 KiB (`max_size` of the source) was to be read or made, which SQLite is not let do (not even for `length()`): leave such values out, or raise `max_size` (at most 256 MiB)"
        );
    }
    if let (Some(before), Some(after)) = (before, peak()) {
        let grew = after.saturating_sub(before);
        assert!(
            grew < 64 << 20,
            "a 900 MB value grew the server by {} MiB",
            grew >> 20
        );
    }
    // A stored value larger than `max_size`, alone in its row.
    let e = s.err(
        "resources/read",
        json!({"uri": "sqlite://wide/queries/stored"}),
    );
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("`max_size`")),
        "{e}"
    );
    // The same through the query's tool: an `isError` result.
    let t = s.ok(
        "tools/call",
        json!({"name": "made", "arguments": {"n": 900000000}}),
    );
    assert_eq!(t["isError"], true, "{t}");
    assert!(
        t["content"][0]["text"]
            .as_str()
            .is_some_and(|m| m.contains("`max_size`")),
        "{t}"
    );
    // And the source goes on serving.
    let made = read_json(&mut s, "sqlite://wide/queries/made?n=3");
    assert_eq!(
        made["rows"][0]["v"].as_str().map(str::len),
        Some(4),
        "{made}"
    );
}
