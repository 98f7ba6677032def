//! `[mysql.NAME]` answers within `max_size` without fetching what they cannot hold: a value larger
//! than `max_size` is measured on the server and never sent (table reads, named queries), and the
//! wrapping that measures it leaves every ordinary statement's rows and order as the server gives
//! them.

use serde_json::{Value, json};

use super::server::shared;
use super::{manifest, read_error, read_json};

/// The server's `Bytes_sent` so far (every connection's).
fn bytes_sent() -> u64 {
    let rows = shared().query("mysql", "SHOW GLOBAL STATUS LIKE 'Bytes_sent'");
    rows[0][1]
        .as_deref()
        .and_then(|v| v.parse().ok())
        .expect("Bytes_sent")
}

/// A 60 MB text and a 30 MB binary value, `max_size` 1 MiB: four concurrent reads (a table read
/// and named queries) end with the clear "larger than" error (or `truncated` before the large
/// row) while the MariaDB server sends a small part of one value in all, our server's peak memory
/// stays far below one copy of it (before: every read held the value, its text and its JSON), and
/// the source keeps serving.
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn a_value_larger_than_max_size_never_leaves_the_server() {
    let my = shared();
    // MyISAM: a 60 MB value does not pass through the test server's small redo log.
    my.database(
        "huge",
        "CREATE TABLE huge (id INT PRIMARY KEY, body LONGTEXT, bin LONGBLOB) ENGINE = MyISAM;
         INSERT INTO huge VALUES (1, 'small', 'x'), (2, REPEAT('h', 60000000), NULL),
                                 (3, NULL, UNHEX(REPEAT('ab', 30000000)));",
    );
    let f = manifest(
        &my.url("huge"),
        "max_size = \"1MiB\"",
        "[mysql.shop.queries.one]\nsql = \"SELECT body, bin FROM huge WHERE id = :id\"\n\
         params.id = { type = \"integer\" }\n",
    );
    let mut s = f.serve_process().started();
    let pid = s.child.as_ref().expect("a process").id();
    // Connections open and statements prepared before measuring.
    assert_eq!(
        read_json(&mut s, "mysql://shop/queries/one?id=1")["rows"],
        json!([{"body": "small", "bin": "eA=="}])
    );
    let base = crate::support::memory(pid, "VmRSS");
    let sent = bytes_sent();
    let uris: Vec<String> = (0..4)
        .map(|i| match i {
            0 => "mysql://shop/tables/huge".to_owned(),
            _ => format!("mysql://shop/queries/one?id={}", 2 + i % 2),
        })
        .collect();
    for (i, r) in s.read_all(&uris).into_iter().enumerate() {
        if i == 0 {
            // The table: the first row, then `truncated` at the large one.
            let text = r["result"]["contents"][0]["text"].as_str().expect("rows");
            let v: Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(
                v["rows"],
                json!([{"id": 1, "body": "small", "bin": "eA=="}])
            );
            assert_eq!(v["truncated"], true);
        } else {
            assert_eq!(
                r["error"]["message"],
                "[mysql.shop] the answer would hold a row larger than 1 MiB (`max_size` of the source); select fewer or smaller columns (e.g. `LEFT`, `LENGTH`)",
                "{r}"
            );
        }
    }
    let peak = crate::support::memory(pid, "VmHWM");
    let sent = bytes_sent() - sent;
    assert!(
        sent < 1 << 20,
        "MariaDB sent {sent} bytes for reads of a 60 MB row"
    );
    if let (Some(base), Some(peak)) = (base, peak) {
        eprintln!(
            "four reads of a 60 MB row: peak RSS {} MiB (from {} MiB), {sent} bytes sent by MariaDB",
            peak >> 20,
            base >> 20
        );
        assert!(
            peak < base + 24 * 1024 * 1024,
            "peak RSS {} MiB (from {} MiB) for reads of a 60 MB row",
            peak / (1024 * 1024),
            base / (1024 * 1024)
        );
    }
    // The source keeps serving.
    let (code, _) = read_error(&mut s, "mysql://shop/queries/one?id=2");
    assert_eq!(code, -32602);
    assert_eq!(
        read_json(&mut s, "mysql://shop/queries/one?id=1")["rows"][0]["body"],
        "small"
    );
}

/// A JSON value as the text the `mysql` client shows.
fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Statements the measuring wraps (ordered without a `LIMIT`, grouped, unions, repeated column
/// names, their own `WITH`, `VALUES`) and one it cannot (`SHOW`) answer the rows, in the order,
/// that MariaDB gives the statement run as it is, cut at `row_limit`.
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a MariaDB server: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn measured_statements_keep_their_rows_and_order() {
    let my = shared();
    my.database(
        "ordered",
        "CREATE TABLE n (id INT PRIMARY KEY, grp INT, label MEDIUMTEXT);
         INSERT INTO n SELECT seq, seq % 3, CONCAT('l', LPAD(13 - seq, 2, '0'))
         FROM seq_1_to_12;",
    );
    let f = manifest(
        &my.url("ordered"),
        "row_limit = 5\nsql_tool = true",
        "[mysql.shop.queries.desc]\nsql = \"SELECT id, label FROM n WHERE id > :min ORDER BY id DESC\"\n\
         params.min = { type = \"integer\" }\n",
    );
    let mut s = f.serve().started();
    let statements = [
        "SELECT id, label FROM n ORDER BY id DESC",
        "SELECT id, label FROM n ORDER BY label",
        "SELECT grp, COUNT(*) AS c, GROUP_CONCAT(label ORDER BY id) AS l FROM n GROUP BY grp ORDER BY grp DESC",
        "(SELECT label FROM n WHERE id < 3) UNION ALL (SELECT label FROM n WHERE id > 9) ORDER BY label DESC",
        "SELECT label, label, id FROM n ORDER BY id DESC LIMIT 3",
        "WITH x AS (SELECT * FROM n ORDER BY id DESC LIMIT 4) SELECT label FROM x ORDER BY id",
        "SELECT label FROM (SELECT label, id FROM n ORDER BY id DESC LIMIT 7) AS t ORDER BY label DESC",
        "SELECT id, label FROM n",
        "VALUES ('b', 2), ('a', 1)",
        "SHOW TABLES",
    ];
    for sql in statements {
        let r = s.ok(
            "tools/call",
            json!({"name": "shop_sql", "arguments": {"sql": sql}}),
        );
        assert_eq!(r["isError"], false, "{sql}: {r}");
        let answer = &r["structuredContent"];
        let got: Vec<Vec<Option<String>>> = answer["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|row| {
                let columns = answer["columns"].as_array().expect("columns");
                columns
                    .iter()
                    .map(|c| as_text(&row[c.as_str().expect("a name")]))
                    .collect()
            })
            .collect();
        let mut want = my.query("ordered", sql);
        let truncated = want.len() > 5;
        want.truncate(5);
        assert_eq!(got, want, "{sql}");
        assert_eq!(answer["truncated"], truncated, "{sql}");
    }
    // A named query with its value bound, ordered without a `LIMIT`.
    let v = read_json(&mut s, "mysql://shop/queries/desc?min=2");
    let ids: Vec<i64> = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["id"].as_i64().expect("id"))
        .collect();
    assert_eq!(ids, [12, 11, 10, 9, 8]);
    assert_eq!(v["truncated"], true);
}
