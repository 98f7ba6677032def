//! What every SQL engine does the same way, each test run against SQLite (a file), PostgreSQL (the
//! throwaway cluster of `postgres/cluster.rs`) and MariaDB (the throwaway server of
//! `mysql/server.rs`): listing and reading tables, views and named queries, values only ever
//! data, completion, `sql` templates, subscriptions, the SQL tool (rows within the source's
//! limits; every write refused or stopped by the engine, the database unchanged), statement time
//! limits, statements stopped on the server when their request goes away or the server exits, and
//! what `check` says.
//!
//! Each test is a function of the engine; `for_each_engine!` makes one `#[test]` per engine
//! (`engines::mysql::sql_tool_refuses_writes_and_leaves_the_database_unchanged`, …).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Fixture, Server, stderr, stdout};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
    Mysql,
}

/// The tables every engine's database holds (SQL all three read alike).
fn fixture_sql() -> String {
    let mut sql = String::from(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL, city VARCHAR(40));
         INSERT INTO customers VALUES (1, 'ada', 'paris'), (2, 'bob', NULL), (3, 'cy', 'oslo');
         CREATE TABLE items (id INTEGER PRIMARY KEY, customer INTEGER NOT NULL, label VARCHAR(100) NOT NULL);
         INSERT INTO items VALUES ",
    );
    let rows: Vec<String> = (1..=30)
        .map(|i| format!("({i}, {}, 'item {i}')", i % 3 + 1))
        .collect();
    sql.push_str(&rows.join(", "));
    sql.push_str(";\nCREATE VIEW paris AS SELECT id, name FROM customers WHERE city = 'paris';\n");
    sql
}

/// One engine's database for one test, and the fixture folder whose manifest serves it as
/// `[ENGINE.shop]`.
pub struct Db {
    pub kind: Kind,
    /// The database's name (PostgreSQL and MariaDB keep one per test; also the PostgreSQL role).
    name: String,
    pub f: Fixture,
}

const PG_PASSWORD: &str = "engines-pw-d0nt-print";

impl Db {
    /// The test's database: the shared tables and `extra` (SQL of that engine).
    pub fn new(kind: Kind, test: &str, extra: &str) -> Db {
        let name = format!("e_{test}");
        let f = Fixture::new();
        let sql = format!("{}\n{extra}", fixture_sql());
        match kind {
            Kind::Sqlite => crate::sqlite::make_db(&f.path("shop.db"), &sql),
            Kind::Postgres => {
                // A role of the test's own that may read (a superuser would be refused the SQL
                // tool: `check` warns about it).
                crate::postgres::cluster::shared().database(
                    &name,
                    &format!(
                        "{sql}
                        DO $$ BEGIN
                            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{name}') THEN
                                CREATE ROLE {name} LOGIN PASSWORD '{PG_PASSWORD}';
                            END IF;
                        END $$;
                        GRANT SELECT ON ALL TABLES IN SCHEMA public TO {name};
                        GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {name};"
                    ),
                );
            }
            Kind::Mysql => crate::mysql::server::shared().database(&name, &sql),
        }
        Db { kind, name, f }
    }

    /// `sqlite`, `postgres` or `mysql`.
    pub fn section(&self) -> &'static str {
        match self.kind {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
            Kind::Mysql => "mysql",
        }
    }

    /// `ENGINE://shop/` + `rest`.
    pub fn uri(&self, rest: &str) -> String {
        format!("{}://shop/{rest}", self.section())
    }

    /// Writes the manifest: `[ENGINE.shop]` with `options`, then `extra` (`ENGINE` in it is the
    /// section's name).
    pub fn manifest(&self, options: &str, extra: &str) {
        let connect = match self.kind {
            Kind::Sqlite => "path = \"shop.db\"".to_owned(),
            Kind::Postgres => format!(
                "url = \"postgres://{}:{PG_PASSWORD}@127.0.0.1:{}/{}\"",
                self.name,
                crate::postgres::cluster::shared().port,
                self.name
            ),
            Kind::Mysql => format!(
                "url = \"{}\"",
                crate::mysql::server::shared().url(&self.name)
            ),
        };
        self.f.manifest(&format!(
            "[{0}.shop]\n{connect}\n{options}\n\n{1}",
            self.section(),
            extra.replace("ENGINE", self.section())
        ));
    }

    /// Runs SQL that writes, as the database's owner.
    pub fn exec(&self, sql: &str) {
        match self.kind {
            Kind::Sqlite => {
                let conn = rusqlite::Connection::open(self.f.path("shop.db")).expect("open");
                conn.execute_batch(sql).expect("write");
            }
            Kind::Postgres => {
                // Statistics reach the server when the backend next idles: flushed at once.
                crate::postgres::cluster::shared().query(
                    &self.name,
                    &format!("{sql}; SELECT pg_stat_force_next_flush()"),
                );
            }
            Kind::Mysql => crate::mysql::server::shared().admin_sql(&self.name, sql),
        }
    }

    /// Everything a write could change: the rows of every table and the definitions (and, for
    /// SQLite, the file's bytes and the files beside it).
    pub fn fingerprint(&self) -> String {
        match self.kind {
            Kind::Sqlite => {
                let bytes = std::fs::read(self.f.path("shop.db")).expect("the database");
                let mut files: Vec<String> = std::fs::read_dir(self.f.root())
                    .expect("the folder")
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect();
                files.sort();
                format!("{bytes:?}\n{files:?}")
            }
            Kind::Postgres => {
                let pg = crate::postgres::cluster::shared();
                let mut out = String::new();
                for sql in [
                    "SELECT md5(string_agg(c::text, ',' ORDER BY c.id)) FROM customers c",
                    "SELECT md5(string_agg(i::text, ',' ORDER BY i.id)) FROM items i",
                    "SELECT string_agg(relname || ':' || relkind::text, ',' ORDER BY relname) \
                     FROM pg_class WHERE relnamespace = 'public'::regnamespace",
                    "SELECT count(*) FROM pg_largeobject_metadata",
                ] {
                    out.push_str(&pg.value(&self.name, sql));
                    out.push('\n');
                }
                out
            }
            Kind::Mysql => {
                let my = crate::mysql::server::shared();
                let mut out = String::new();
                for sql in [
                    "CHECKSUM TABLE customers, items EXTENDED",
                    "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES \
                     WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME",
                    "SHOW CREATE TABLE items",
                ] {
                    out.push_str(&format!("{:?}\n", my.query(&self.name, sql)));
                }
                out
            }
        }
    }

    /// A statement that runs far longer than the tests' timeouts (named after the test, so the
    /// server's list of running statements tells the tests apart).
    pub fn endless(&self) -> String {
        match self.kind {
            Kind::Sqlite => {
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c".to_owned()
            }
            Kind::Postgres => format!("SELECT pg_sleep(60) AS {}", self.name),
            Kind::Mysql => format!("SELECT SLEEP(60) AS {}", self.name),
        }
    }

    /// `endless`, but busy: MariaDB notices a closed connection in `SLEEP` (and stops it), not
    /// in a statement that computes; PostgreSQL notices in neither.
    pub fn busy(&self) -> String {
        match self.kind {
            Kind::Mysql => format!("SELECT BENCHMARK(1000000000000, MD5('x')) AS {}", self.name),
            _ => self.endless(),
        }
    }

    /// How many of the source's statements run now: on the server (PostgreSQL, MariaDB), or the
    /// connections process `pid` holds open on the file (SQLite, whose statements run in-process
    /// and close their connection when stopped).
    pub fn running(&self, pid: u32) -> usize {
        match self.kind {
            Kind::Sqlite => {
                let db = std::fs::canonicalize(self.f.path("shop.db")).expect("the database");
                open_on(pid, &db)
            }
            Kind::Postgres => crate::postgres::cluster::shared()
                .value(
                    "postgres",
                    &format!(
                        "SELECT count(*) FROM pg_stat_activity WHERE usename = '{}' \
                         AND state = 'active' AND query LIKE '%pg_sleep%'",
                        self.name
                    ),
                )
                .parse()
                .unwrap_or(0),
            Kind::Mysql => {
                crate::mysql::server::shared().running(&self.name, &format!("AS {}", self.name))
            }
        }
    }
}

/// Descriptors of process `pid` open on `path`.
fn open_on(pid: u32, path: &Path) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(Result::ok)
                .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == path))
                .count()
        })
        .unwrap_or(0)
}

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

/// Calls `NAME_sql`: the result, and its text.
fn sql_tool(s: &mut Server, sql: &str) -> (Value, String) {
    let r = s.ok(
        "tools/call",
        json!({"name": "shop_sql", "arguments": {"sql": sql}}),
    );
    let text = r["content"][0]["text"].as_str().unwrap_or("").to_owned();
    (r, text)
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

const QUERIES: &str = r#"
[ENGINE.shop.queries.by_city]
description = "Customers of one city"
sql = "SELECT id, name FROM customers WHERE city = :city ORDER BY id"
params.city = { type = "string", default = "paris" }

[ENGINE.shop.queries.by_id]
sql = "SELECT name FROM customers WHERE id = :id"
params.id = { type = "integer" }

[ENGINE.shop.queries.twice]
sql = "SELECT id FROM customers WHERE id = :id OR id = :id + 1 ORDER BY id DESC"
params.id = { type = "integer" }
"#;

fn lists_reads_and_completes(kind: Kind) {
    let db = Db::new(kind, "lists", "");
    db.manifest("row_limit = 10", QUERIES);
    let mut s = db.f.serve().started();
    let (resources, _) = crate::support::list_all(&mut s, "resources/list", "resources");
    let uris: Vec<&str> = resources.iter().filter_map(|r| r["uri"].as_str()).collect();
    for want in [
        "schema",
        "tables/customers",
        "tables/items",
        "tables/paris",
        "queries/by_city",
    ] {
        assert!(uris.contains(&db.uri(want).as_str()), "{want}: {uris:?}");
    }
    assert!(!uris.contains(&db.uri("queries/by_id").as_str()));
    // The SQL tool is off unless the section asks for it.
    let (tools, _) = crate::support::list_all(&mut s, "tools/list", "tools");
    assert!(
        tools.iter().all(|t| t["name"] != "shop_sql"),
        "{kind:?}: an SQL tool without `sql_tool = true`"
    );
    let customers = read_json(&mut s, &db.uri("tables/customers"));
    assert_eq!(customers["columns"], json!(["id", "name", "city"]));
    assert_eq!(
        customers["rows"][0],
        json!({"id": 1, "name": "ada", "city": "paris"})
    );
    assert_eq!(customers["rows"][1]["city"], Value::Null);
    assert_eq!(customers["truncated"], false);
    let items = read_json(&mut s, &db.uri("tables/items"));
    assert_eq!(items["rows"].as_array().map(Vec::len), Some(10));
    assert_eq!(items["truncated"], true);
    assert_eq!(
        read_json(&mut s, &db.uri("tables/paris"))["rows"],
        json!([{"id": 1, "name": "ada"}])
    );
    // Named queries: defaults, typed values, a value bound twice.
    assert_eq!(
        read_json(&mut s, &db.uri("queries/by_city"))["rows"],
        json!([{"id": 1, "name": "ada"}])
    );
    assert_eq!(
        read_json(&mut s, &db.uri("queries/by_city?city=oslo"))["rows"],
        json!([{"id": 3, "name": "cy"}])
    );
    assert_eq!(
        read_json(&mut s, &db.uri("queries/twice?id=2"))["rows"],
        json!([{"id": 3}, {"id": 2}])
    );
    let (code, message) = read_error(&mut s, &db.uri("queries/by_id?id=two"));
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("id"), "{message}");
    // Not listed: not found, and nothing else read.
    for missing in ["tables/nope", "tables/customers%3B%20DROP%20TABLE%20items"] {
        let (code, _) = read_error(&mut s, &db.uri(missing));
        assert_eq!(code, -32002, "{missing}");
    }
    let schema = s.ok("resources/read", json!({"uri": db.uri("schema")}));
    let schema = schema["contents"][0]["text"].as_str().unwrap_or("");
    assert!(
        schema.contains("customers") && schema.contains("items") && schema.contains("paris"),
        "{schema}"
    );
    let done = s.ok(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": db.uri("tables/{table}")},
               "argument": {"name": "table", "value": "c"}}),
    );
    assert_eq!(done["completion"]["values"], json!(["customers"]));
}

fn values_are_only_ever_data(kind: Kind) {
    let db = Db::new(kind, "data", "");
    db.manifest(
        "",
        r#"
[ENGINE.shop.queries.echo]
sql = "SELECT :v AS v, (SELECT COUNT(*) FROM items) AS n"
params.v = { type = "string" }

[ENGINE.shop.queries.named]
sql = "SELECT id FROM customers WHERE name = :v"
params.v = { type = "string" }
"#,
    );
    let before = db.fingerprint();
    let mut s = db.f.serve().started();
    for v in [
        "'; DROP TABLE items; --",
        "' OR '1'='1",
        "\\'; DELETE FROM items; --",
        "1); DELETE FROM items; --",
        "$1",
        ":v",
        "?",
        "`",
        "\"",
        "/*! DELETE FROM items */",
        "🦀 ünïcödé",
        "",
    ] {
        let echo = read_json(
            &mut s,
            &db.uri(&format!(
                "queries/echo?v={}",
                crate::support::encode_component(v)
            )),
        );
        assert_eq!(echo["rows"], json!([{"v": v, "n": 30}]), "{v:?}");
        let named = read_json(
            &mut s,
            &db.uri(&format!(
                "queries/named?v={}",
                crate::support::encode_component(v)
            )),
        );
        assert_eq!(named["rows"], json!([]), "{v:?}");
    }
    assert_eq!(db.fingerprint(), before);
}

fn sql_templates_bind_their_variables(kind: Kind) {
    let db = Db::new(kind, "templates", "");
    db.manifest(
        "",
        r#"
[templates.customer]
uri = "shop://customers/{id}"
ENGINE = "shop"
sql = "SELECT name, city FROM customers WHERE id = :id"
vars.id = { type = "integer" }
"#,
    );
    let mut s = db.f.serve().started();
    assert_eq!(
        read_json(&mut s, "shop://customers/1")["rows"],
        json!([{"name": "ada", "city": "paris"}])
    );
    assert_eq!(read_json(&mut s, "shop://customers/9")["rows"], json!([]));
    let (code, _) = read_error(&mut s, "shop://customers/x");
    assert_eq!(code, -32602);
}

fn sql_tool_answers_rows_within_limits(kind: Kind) {
    let db = Db::new(kind, "tool_rows", "");
    db.manifest("row_limit = 5\nsql_tool = true\nmax_size = \"2KiB\"", "");
    let mut s = db.f.serve().started();
    let tools = s.ok("tools/list", json!({}));
    let tool = tools["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "shop_sql"))
        .expect("shop_sql listed")
        .clone();
    assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
    assert_eq!(tool["annotations"]["destructiveHint"], false, "{tool}");
    assert_eq!(tool["inputSchema"]["required"], json!(["sql"]), "{tool}");
    assert!(tool["outputSchema"]["properties"]["truncated"].is_object());
    let (r, _) = sql_tool(
        &mut s,
        "SELECT c.name, COUNT(*) AS n FROM customers c JOIN items i ON i.customer = c.id \
         GROUP BY c.name ORDER BY c.name",
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        r["structuredContent"]["rows"],
        json!([{"name": "ada", "n": 10}, {"name": "bob", "n": 10}, {"name": "cy", "n": 10}])
    );
    let (r, _) = sql_tool(&mut s, "SELECT id, label FROM items ORDER BY id");
    assert_eq!(
        r["structuredContent"]["rows"].as_array().map(Vec::len),
        Some(5)
    );
    assert_eq!(r["structuredContent"]["truncated"], true);
    // max_size: rows stop before 2 KiB of JSON; a first row larger is refused.
    let (r, text) = sql_tool(
        &mut s,
        "SELECT id, label AS a, label AS b FROM items ORDER BY id",
    );
    assert!(text.len() <= 2048, "{} bytes", text.len());
    let big = match kind {
        Kind::Sqlite => "SELECT hex(zeroblob(2500)) AS big",
        Kind::Postgres => "SELECT repeat('x', 5000) AS big",
        Kind::Mysql => "SELECT REPEAT('x', 5000) AS big",
    };
    let (r2, text) = sql_tool(&mut s, big);
    assert_eq!(r2["isError"], true, "{r2}");
    assert!(
        text.contains("max_size") || text.contains("larger than"),
        "{text}"
    );
    let _ = r;
    let (r, text) = sql_tool(&mut s, "SELECT :x");
    assert_eq!(r["isError"], true);
    assert!(text.contains("parameter"), "{text}");
}

/// What a statement the SQL tool is given must come to.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// An error whose text holds this.
    Refused(&'static str),
    /// Runs or fails, as the engine decides: either way the database is unchanged (checked).
    Unchanged,
}

/// Statements that write or escape, for every engine and for each.
fn attempts(kind: Kind) -> Vec<(&'static str, Outcome)> {
    use Outcome::{Refused, Unchanged};
    let mut out = vec![
        ("DELETE FROM items", Refused("only statements that read")),
        (
            "INSERT INTO items VALUES (99, 1, 'x')",
            Refused("only statements that read"),
        ),
        (
            "UPDATE items SET label = 'changed'",
            Refused("only statements that read"),
        ),
        ("DROP TABLE items", Refused("only statements that read")),
        (
            "CREATE TABLE made (v INTEGER)",
            Refused("only statements that read"),
        ),
        (
            "ALTER TABLE items ADD COLUMN w INTEGER",
            Refused("only statements that read"),
        ),
        (
            "SELECT 1; DELETE FROM items",
            Refused("more than one statement"),
        ),
        (
            "/* SELECT */ DELETE FROM items",
            Refused("only statements that read"),
        ),
        (
            "WITH d AS (DELETE FROM items RETURNING id) SELECT * FROM d",
            Refused(""),
        ),
    ];
    match kind {
        Kind::Sqlite => out.extend([
            (
                "ATTACH DATABASE 'other.db' AS o",
                Refused("only statements that read"),
            ),
            ("VACUUM INTO 'copy.db'", Refused("only statements that read")),
            ("PRAGMA user_version = 7", Refused("PRAGMA")),
            ("PRAGMA journal_mode = WAL", Refused("PRAGMA")),
            ("PRAGMA incremental_vacuum", Refused("writes")),
            ("PRAGMA query_only = 0", Refused("PRAGMA")),
            ("SELECT load_extension('/tmp/x')", Refused("")),
            ("SELECT writefile('/tmp/x', 'y')", Refused("")),
            (
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
                Refused("ran longer than 1s"),
            ),
        ]),
        Kind::Postgres => out.extend([
            ("COPY items TO STDOUT", Refused("only statements that read")),
            (
                "COPY items FROM '/etc/passwd'",
                Refused("only statements that read"),
            ),
            ("SELECT * INTO stolen FROM items", Refused("")),
            ("EXPLAIN ANALYZE DELETE FROM items", Refused("read-only")),
            ("SELECT nextval('counter')", Refused("read-only")),
            (
                "SELECT set_config('transaction_read_only', 'off', false)",
                Refused(""),
            ),
            (
                "SELECT set_config('statement_timeout', '0', false), pg_sleep(30)",
                Refused("ran longer than 1s"),
            ),
            ("SELECT pg_sleep(30)", Refused("ran longer than 1s")),
            ("SELECT lo_from_bytea(0, 'payload')", Unchanged),
            ("SELECT pg_advisory_lock(4242)", Unchanged),
            (
                "SET default_transaction_read_only = off",
                Refused("only statements that read"),
            ),
            (
                "DO $$ BEGIN DELETE FROM items; END $$",
                Refused("only statements that read"),
            ),
            ("CALL p()", Refused("only statements that read")),
            ("COMMIT", Refused("only statements that read")),
        ]),
        Kind::Mysql => out.extend([
            (
                "SELECT * FROM items INTO OUTFILE '/tmp/mcp-manifest-outfile'",
                Refused("INTO"),
            ),
            (
                "SELECT * FROM items INTO DUMPFILE '/tmp/mcp-manifest-outfile'",
                Refused("INTO"),
            ),
            ("SELECT 1 INTO @x", Refused("INTO")),
            (
                "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE items",
                Refused("only statements that read"),
            ),
            (
                "LOAD DATA INFILE '/etc/passwd' INTO TABLE items",
                Refused("only statements that read"),
            ),
            ("SELECT /*! 1; DELETE FROM items */ 2", Refused("/*!")),
            ("SELECT SLEEP(30)", Refused("ran longer than 1s")),
            ("SELECT * FROM items FOR UPDATE", Unchanged),
            ("SELECT GET_LOCK('mcp-lock', 0)", Unchanged),
            (
                "SET SESSION max_statement_time = 0",
                Refused("only statements that read"),
            ),
            ("LOCK TABLES items WRITE", Refused("only statements that read")),
            ("HANDLER items OPEN", Refused("only statements that read")),
            ("DO SLEEP(30)", Refused("only statements that read")),
            ("CALL p()", Refused("only statements that read")),
            ("COMMIT", Refused("only statements that read")),
            ("EXPLAIN DELETE FROM items", Unchanged),
            ("SELECT bump()", Refused("READ ONLY")),
        ]),
    }
    out
}

// Each refusal is printed for the record (`cargo test -- --nocapture`).
#[allow(clippy::print_stderr)]
fn sql_tool_refuses_writes_and_leaves_the_database_unchanged(kind: Kind) {
    let extra = match kind {
        Kind::Postgres => "CREATE SEQUENCE counter;",
        // A function that writes with its definer's (root's) rights, which the reading account
        // may execute: only the engine's read-only transaction stands in its way.
        Kind::Mysql => {
            "CREATE FUNCTION bump() RETURNS INT MODIFIES SQL DATA SQL SECURITY DEFINER \
             BEGIN INSERT INTO items VALUES (98, 1, 'bumped'); RETURN 1; END;
             GRANT EXECUTE ON FUNCTION bump TO 'app'@'%';"
        }
        Kind::Sqlite => "",
    };
    let db = Db::new(kind, "tool_writes", extra);
    db.manifest("sql_tool = true\ntimeout = \"1s\"", "");
    let before = db.fingerprint();
    let mut s = db.f.serve().started();
    for (sql, outcome) in attempts(kind) {
        let started = Instant::now();
        let (r, text) = sql_tool(&mut s, sql);
        // Printed for the record (`cargo test -- --nocapture`).
        eprintln!(
            "{kind:?}: {sql}\n    -> {}",
            text.lines().next().unwrap_or("")
        );
        match outcome {
            Outcome::Refused(says) => {
                assert_eq!(r["isError"], true, "{kind:?} {sql}: {r}");
                assert!(text.contains(says), "{kind:?} {sql}: {text}");
            }
            Outcome::Unchanged => {}
        }
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{kind:?} {sql} took {:?}",
            started.elapsed()
        );
        // The source still serves.
        assert_eq!(
            read_json(&mut s, &db.uri("tables/paris"))["rows"],
            json!([{"id": 1, "name": "ada"}])
        );
    }
    assert_eq!(db.fingerprint(), before, "{kind:?}");
    assert!(!Path::new("/tmp/mcp-manifest-outfile").exists());
    // What outlives a rollback was let go with it.
    match kind {
        Kind::Postgres => wait_until(
            "the advisory lock released",
            Duration::from_secs(10),
            || {
                crate::postgres::cluster::shared().value(
                    "postgres",
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'",
                ) == "0"
            },
        ),
        Kind::Mysql => wait_until("the named lock released", Duration::from_secs(10), || {
            crate::mysql::server::shared().query("mysql", "SELECT IS_USED_LOCK('mcp-lock')")[0][0]
                .is_none()
        }),
        Kind::Sqlite => {}
    }
}

fn statements_past_their_timeout_are_stopped(kind: Kind) {
    let db = Db::new(kind, "timeout", "");
    db.manifest(
        "timeout = \"1s\"",
        &format!(
            "[ENGINE.shop.queries.slow]\nsql = \"{}\"\n",
            db.endless().replace('"', "\\\"")
        ),
    );
    let mut s = db.f.serve().started();
    let started = Instant::now();
    let (code, message) = read_error(&mut s, &db.uri("queries/slow"));
    assert_eq!(code, -32602, "{message}");
    assert!(
        message.contains("ran longer than 1s (`timeout`) and was stopped"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(6));
    // (A SQLite statement is stopped in-process by then; its connection may wait for the next.)
    if kind != Kind::Sqlite {
        wait_until("the statement stopped", Duration::from_secs(10), || {
            db.running(std::process::id()) == 0
        });
    }
    assert_eq!(
        read_json(&mut s, &db.uri("tables/paris"))["rows"],
        json!([{"id": 1, "name": "ada"}])
    );
}

/// A request that goes away mid-statement has its statement stopped on the server (not left to
/// run out), and its connection's place is not taken by another until it is: with
/// `max_connections = 1` a cancelled statement and the next read never run together.
fn cancelled_statements_stop_on_the_server(kind: Kind) {
    let db = Db::new(kind, "cancel", "");
    let options = match kind {
        Kind::Sqlite => "timeout = \"120s\"",
        _ => "timeout = \"120s\"\nmax_connections = 1",
    };
    db.manifest(
        options,
        &format!(
            "[ENGINE.shop.queries.slow]\nsql = \"{}\"\n",
            db.busy().replace('"', "\\\"")
        ),
    );
    let mut s = db.f.serve().started();
    let pid = std::process::id();
    for round in 0..3 {
        let id = json!(format!("slow-{round}"));
        s.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                       "params": {"uri": db.uri("queries/slow")}}),
        );
        wait_until("the statement runs", Duration::from_secs(30), || {
            db.running(pid) == 1
        });
        s.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": id}}),
        );
        wait_until(
            "the cancelled statement stops",
            Duration::from_secs(10),
            || db.running(pid) == 0,
        );
    }
    assert_eq!(
        read_json(&mut s, &db.uri("tables/paris"))["rows"],
        json!([{"id": 1, "name": "ada"}])
    );
}

/// The server stopping (stdin closed) stops the statements it runs and closes its connections.
fn the_server_stops_its_statements_when_it_exits(kind: Kind) {
    let db = Db::new(kind, "exit", "");
    db.manifest(
        "timeout = \"120s\"",
        &format!(
            "[ENGINE.shop.queries.slow]\nsql = \"{}\"\n",
            db.busy().replace('"', "\\\"")
        ),
    );
    let mut s = db.f.serve_process().started();
    let pid = s.child.as_ref().expect("a process").id();
    for i in 0..2 {
        s.send(
            &json!({"jsonrpc": "2.0", "id": format!("slow-{i}"), "method": "resources/read",
                       "params": {"uri": db.uri("queries/slow")}}),
        );
    }
    wait_until("the statements run", Duration::from_secs(30), || {
        db.running(pid) == 2
    });
    s.close_stdin();
    s.wait_exit(Duration::from_secs(10));
    wait_until(
        "the statements stop with the server",
        Duration::from_secs(5),
        || db.running(pid) == 0,
    );
    if kind == Kind::Mysql {
        wait_until("the connections close", Duration::from_secs(5), || {
            crate::mysql::server::shared().connections(&db.name) == 0
        });
    }
}

fn subscriptions_see_writes(kind: Kind) {
    let db = Db::new(kind, "watch", "");
    let options = match kind {
        Kind::Sqlite => "",
        _ => "poll_interval = \"200ms\"",
    };
    db.manifest(options, QUERIES);
    let mut s = db.f.serve().started();
    let table = db.uri("tables/customers");
    s.ok("resources/subscribe", json!({"uri": table}));
    let updated = |uri: String| {
        move |v: &Value| {
            v["method"] == "notifications/resources/updated" && v["params"]["uri"] == uri.as_str()
        }
    };
    db.exec("INSERT INTO customers VALUES (4, 'dee', 'rome')");
    s.wait_for(updated(table.clone()));
    // A second write right after the first is announced too.
    db.exec("UPDATE customers SET city = 'nice' WHERE id = 4");
    s.wait_for(updated(table.clone()));
    assert_eq!(
        read_json(&mut s, &table)["rows"][3],
        json!({"id": 4, "name": "dee", "city": "nice"})
    );
    let query = db.uri("queries/by_city");
    s.ok("resources/subscribe", json!({"uri": query}));
    db.exec("UPDATE customers SET city = 'paris' WHERE id = 4");
    s.wait_for(updated(query));
}

fn check_says_which_sources_have_an_sql_tool(kind: Kind) {
    let db = Db::new(kind, "check", "");
    db.manifest("sql_tool = true", "");
    let out = db.f.run(&["check"]);
    let (o, e) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    assert!(!e.contains("warning"), "{e}");
    assert!(
        o.contains(&format!("sql tools  `shop_sql` ([{}.shop])", db.section())),
        "{o}"
    );
    // A clash with another tool's name is an error naming both.
    db.manifest(
        "sql_tool = true",
        "[tools.shop_sql]\ncommand = [\"true\"]\n",
    );
    let out = db.f.run(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("tool `shop_sql`"), "{}", stderr(&out));
}

macro_rules! for_each_engine {
    ($($test:ident),* $(,)? ; seen_running: $($seen:ident),* $(,)?) => {
        mod sqlite {
            $( #[test] fn $test() { super::$test(super::Kind::Sqlite) } )*
            // A SQLite statement is seen running by the database's descriptors in
            // /proc/PID/fd (`Db::running`): Linux only.
            $(
                #[test]
                #[cfg_attr(
                    not(target_os = "linux"),
                    ignore = "SQLite statements are seen running through /proc/PID/fd: Linux only"
                )]
                fn $seen() { super::$seen(super::Kind::Sqlite) }
            )*
        }
        // The PostgreSQL cluster and MariaDB server are started from the system's binaries
        // (`postgres/cluster.rs`, `mysql/server.rs`) on Unix; under Wine by its harness.
        mod postgres {
            $(
                #[test]
                #[cfg_attr(not(unix), ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)")]
                fn $test() { super::$test(super::Kind::Postgres) }
            )*
            $(
                #[test]
                #[cfg_attr(not(unix), ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)")]
                fn $seen() { super::$seen(super::Kind::Postgres) }
            )*
        }
        mod mysql {
            $(
                #[test]
                #[cfg_attr(not(unix), ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)")]
                fn $test() { super::$test(super::Kind::Mysql) }
            )*
            $(
                #[test]
                #[cfg_attr(not(unix), ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)")]
                fn $seen() { super::$seen(super::Kind::Mysql) }
            )*
        }
    };
}

for_each_engine!(
    lists_reads_and_completes,
    values_are_only_ever_data,
    sql_templates_bind_their_variables,
    sql_tool_answers_rows_within_limits,
    sql_tool_refuses_writes_and_leaves_the_database_unchanged,
    statements_past_their_timeout_are_stopped,
    subscriptions_see_writes,
    check_says_which_sources_have_an_sql_tool;
    seen_running:
    cancelled_statements_stop_on_the_server,
    the_server_stops_its_statements_when_it_exits,
);
