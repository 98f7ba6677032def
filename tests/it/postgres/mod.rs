//! `[postgres.NAME]` against a real PostgreSQL (a throwaway cluster, `cluster.rs`): every common
//! type mapped to JSON, the schema DDL, tables of several schemas, named queries whose parameters
//! PostgreSQL types, `sql` templates, read-only proof (writes of every kind, large objects,
//! hostile values: the database is unchanged), a database that goes down and comes back, lazy
//! connections, and `check`'s warnings.

pub mod cluster;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Fixture, Server, list_all, stderr, stdout};
use cluster::{Cluster, PASSWORD, shared};

/// Reads `uri` and parses its text as JSON.
fn read_json(s: &mut Server, uri: &str) -> Value {
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

/// The error message of a read that must fail.
fn read_error(s: &mut Server, uri: &str) -> (i64, String) {
    let e = s.err("resources/read", json!({"uri": uri}));
    (
        e["code"].as_i64().expect("an error code"),
        e["message"].as_str().expect("a message").to_owned(),
    )
}

/// A fixture folder whose manifest serves `[postgres.crm]` on database `db` of `cluster`, plus
/// whatever `extra` holds.
fn manifest(cluster: &Cluster, db: &str, options: &str, extra: &str) -> Fixture {
    let f = Fixture::new();
    f.manifest(&format!(
        "[postgres.crm]\nurl = \"{}\"\n{options}\n{extra}",
        cluster.url(db)
    ));
    f
}

const TYPES: &str = r#"
    CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
    CREATE DOMAIN positive AS integer CHECK (VALUE > 0);
    CREATE TABLE types (
        id int4 PRIMARY KEY,
        small int2, big int8, exact numeric, huge numeric(40, 20), real4 float4, real8 float8,
        yes bool, t text, vc varchar(10), ch char(3), nm name, u uuid,
        d date, tm time, ttz timetz, ts timestamp, tstz timestamptz, iv interval,
        j json, jb jsonb, ints int4[], texts text[], grid int4[][], b bytea,
        m mood, p positive, ip inet, net cidr, mac macaddr,
        r int4range, pt point, money money, bits bit(4), xmlv xml, nothing text
    );
    INSERT INTO types VALUES (
        1, -32768, 9223372036854775807, 12.50, 12345678901234567890.12345678901234567890,
        1.5, 0.1, true, 'héllo "w"', 'short', 'ab', 'nm', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
        '2024-02-29', '12:34:56.789', '12:00:00+05:30', '2024-01-02 03:04:05.678901',
        '2024-01-02 03:04:05+02', '1 year 2 months 3 days 04:05:06.5',
        '{"a": [1, 2.50, null], "big": 123456789012345678901234567890}', '{"b": true, "a": 1}',
        '{1,NULL,3}', '{"x","y z"}', '{{1,2},{3,4}}', '\x00ff10',
        'happy', 7, '192.168.0.1', '10.0.0.0/8', '08:00:2b:01:02:03',
        '[1,5)', '(1.5,2)', 12.34, B'1010', '<a>x</a>', NULL
    );
    INSERT INTO types (id, exact, real8, ts, tstz, d, iv) VALUES
        (2, 'NaN', 'Infinity', 'infinity', '-infinity', '-infinity', '-1 day -00:01:30');
"#;

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn every_common_type_maps_to_json() {
    let pg = shared();
    pg.database("types", TYPES);
    let f = manifest(pg, "types", "", "");
    let mut s = f.serve().started();
    let v = read_json(&mut s, "postgres://crm/tables/types");
    assert_eq!(v["truncated"], false);
    let columns: Vec<&str> = v["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c.as_str().expect("name"))
        .collect();
    assert_eq!(columns[..4], ["id", "small", "big", "exact"]);
    let row = &v["rows"][0];
    let expected = json!({
        "id": 1,
        "small": -32768,
        "big": 9223372036854775807i64,
        "exact": 12.5,
        "huge": "12345678901234567890.12345678901234567890",
        "real4": 1.5,
        "real8": 0.1,
        "yes": true,
        "t": "héllo \"w\"",
        "vc": "short",
        "ch": "ab ",
        "nm": "nm",
        "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "d": "2024-02-29",
        "tm": "12:34:56.789",
        "ttz": "12:00:00+05:30",
        "ts": "2024-01-02T03:04:05.678901",
        "tstz": "2024-01-02T01:04:05Z",
        "iv": "P1Y2M3DT4H5M6.5S",
        "j": {"a": [1, 2.50, null], "big": 123456789012345678901234567890u128 as f64},
        "jb": {"a": 1, "b": true},
        "ints": [1, null, 3],
        "texts": ["x", "y z"],
        "grid": [[1, 2], [3, 4]],
        "b": "AP8Q",
        "m": "happy",
        "p": 7,
        "ip": "192.168.0.1",
        "net": "10.0.0.0/8",
        "mac": "08:00:2b:01:02:03",
        "r": "[1,5)",
        "pt": "(1.5,2)",
        "money": "$12.34",
        "bits": "1010",
        "xmlv": "<a>x</a>",
        "nothing": null,
    });
    for (k, want) in expected.as_object().expect("object") {
        assert_eq!(&row[k], want, "column {k}: {row}");
    }
    // JSON keeps the digits PostgreSQL stored (no trip through a double).
    let text = read_text(&mut s, "postgres://crm/tables/types");
    assert!(
        text.contains(r#""j":{"a": [1, 2.50, null], "big": 123456789012345678901234567890}"#),
        "{text}"
    );
    let special = &v["rows"][1];
    assert_eq!(special["exact"], "NaN");
    assert_eq!(special["real8"], "Infinity");
    assert_eq!(special["ts"], "infinity");
    assert_eq!(special["tstz"], "-infinity");
    assert_eq!(special["d"], "-infinity");
    assert_eq!(special["iv"], "P-1DT-1M-30S");
    assert_eq!(special["small"], Value::Null);
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn uris(items: &[Value], key: &str) -> Vec<String> {
    items
        .iter()
        .map(|r| r[key].as_str().expect("a string").to_owned())
        .collect()
}

const CRM: &str = r#"
    CREATE SCHEMA sales;
    CREATE SCHEMA hidden;
    CREATE TABLE owners (id int PRIMARY KEY, name text NOT NULL UNIQUE);
    INSERT INTO owners VALUES (1, 'ada'), (2, 'bob');
    CREATE TABLE deals (
        id uuid PRIMARY KEY,
        seq int GENERATED ALWAYS AS IDENTITY,
        owner text NOT NULL REFERENCES owners (name),
        title text NOT NULL,
        amount numeric(12, 2) CHECK (amount >= 0),
        created date NOT NULL DEFAULT '2024-01-01',
        closed_at timestamptz
    );
    COMMENT ON TABLE deals IS 'Deals in the pipeline';
    COMMENT ON COLUMN deals.amount IS 'In euros';
    CREATE INDEX deals_by_owner ON deals (owner);
    INSERT INTO deals (id, owner, title, amount, created, closed_at) VALUES
        ('00000000-0000-0000-0000-000000000001', 'ada', 'Anvils', 150.00, '2024-03-01', NULL),
        ('00000000-0000-0000-0000-000000000002', 'ada', 'Bolts', 20.50, '2023-12-01', NULL),
        ('00000000-0000-0000-0000-000000000003', 'bob', 'Cogs', 999.99, '2024-05-05', '2024-06-01');
    CREATE VIEW open_deals AS SELECT id, title FROM deals WHERE closed_at IS NULL;
    CREATE TABLE sales.targets (owner text, target int);
    INSERT INTO sales.targets VALUES ('ada', 1000);
    CREATE TABLE "Odd ""name""" (v int);
    CREATE TABLE hundred AS SELECT g AS id, 'row ' || g AS label FROM generate_series(1, 100) g;
    CREATE TABLE hidden.secret (v text);
    CREATE SEQUENCE counter;
    CREATE TABLE events (id int, at date) PARTITION BY RANGE (at);
    CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
"#;

/// A table of the first schema read by its bare name in one statement must still be exactly the
/// listed one: PostgreSQL cuts a longer identifier to 63 bytes, and the longer name must not
/// read the table it is cut to.
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn a_table_name_cut_by_postgres_reads_nothing() {
    let pg = shared();
    let long = "l".repeat(63);
    pg.database(
        "long_names",
        &format!("CREATE TABLE {long} (v int); INSERT INTO {long} VALUES (1);"),
    );
    let f = manifest(pg, "long_names", "", "");
    let mut s = f.serve().started();
    let v = read_json(&mut s, &format!("postgres://crm/tables/{long}"));
    assert_eq!(v["rows"], json!([{"v": 1}]));
    for longer in [
        format!("{long}l"),
        format!("{long}x"),
        format!("{long}{long}"),
    ] {
        let (code, message) = read_error(&mut s, &format!("postgres://crm/tables/{longer}"));
        assert_eq!(code, -32002, "{longer}: {message}");
    }
}

/// Megabyte table names that PostgreSQL would cut to an existing table's name are not found, and
/// none of them is kept: they never become the text of a statement (which the plan cache and the
/// connection's statement cache would each keep, one per name).
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn megabyte_table_names_are_not_found_and_not_kept() {
    let pg = shared();
    let long = "l".repeat(63);
    pg.database(
        "huge_names",
        &format!("CREATE TABLE {long} (v int); INSERT INTO {long} VALUES (1);"),
    );
    let f = manifest(pg, "huge_names", "", "");
    let mut s = f.serve_process().started();
    let pid = s.child.as_ref().expect("a process").id();
    let tail = "l".repeat(1 << 20);
    for i in 0..40 {
        let (code, message) = read_error(&mut s, &format!("postgres://crm/tables/{long}{i}{tail}"));
        assert_eq!(code, -32002, "{}", &message[..message.len().min(200)]);
    }
    if let Some(peak) = crate::support::memory(pid, "VmHWM") {
        assert!(peak < 64 << 20, "peak RSS {} MiB", peak >> 20);
    }
    let v = read_json(&mut s, &format!("postgres://crm/tables/{long}"));
    assert_eq!(v["rows"], json!([{"v": 1}]));
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn schema_tables_views_and_other_schemas() {
    let pg = shared();
    pg.database("crm_tables", CRM);
    let f = manifest(pg, "crm_tables", "schemas = [\"public\", \"sales\"]", "");
    let mut s = f.serve().started();
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    assert_eq!(
        uris(&resources, "uri"),
        [
            "postgres://crm/schema",
            "postgres://crm/tables/Odd%20%22name%22",
            "postgres://crm/tables/deals",
            "postgres://crm/tables/events",
            "postgres://crm/tables/hundred",
            "postgres://crm/tables/open_deals",
            "postgres://crm/tables/owners",
            "postgres://crm/tables/sales.targets",
        ],
        "partitions, sequences and unlisted schemas are not listed"
    );
    let (templates, _) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    assert_eq!(
        uris(&templates, "uriTemplate"),
        ["postgres://crm/tables/{table}"]
    );

    let v = read_json(&mut s, "postgres://crm/tables/sales.targets");
    assert_eq!(v["rows"], json!([{"owner": "ada", "target": 1000}]));
    // The first schema's tables answer to their qualified name too.
    let v = read_json(&mut s, "postgres://crm/tables/public.owners");
    assert_eq!(
        v["rows"],
        json!([{"id": 1, "name": "ada"}, {"id": 2, "name": "bob"}])
    );
    let v = read_json(&mut s, "postgres://crm/tables/open_deals");
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(2));
    let v = read_json(&mut s, "postgres://crm/tables/Odd%20%22name%22");
    assert_eq!(v, json!({"columns": ["v"], "rows": [], "truncated": false}));
    let v = read_json(&mut s, "postgres://crm/tables/hundred");
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(100));
    assert_eq!(v["truncated"], false);
    for hidden in [
        "postgres://crm/tables/hidden.secret",
        "postgres://crm/tables/counter",
        "postgres://crm/tables/events_2024",
        "postgres://crm/tables/pg_catalog.pg_authid",
        "postgres://crm/tables/nope",
        "postgres://crm/tables/deals%00",
        "postgres://crm/tables/",
        "postgres://crm/other",
    ] {
        let (code, _) = read_error(&mut s, hidden);
        assert_eq!(code, -32002, "{hidden}");
    }

    let ddl = read_text(&mut s, "postgres://crm/schema");
    for part in [
        "CREATE TABLE public.deals (\n    id uuid NOT NULL,\n    seq integer GENERATED ALWAYS AS IDENTITY NOT NULL,",
        "    created date DEFAULT '2024-01-01'::date NOT NULL,",
        "    CONSTRAINT deals_pkey PRIMARY KEY (id),",
        "    CONSTRAINT deals_owner_fkey FOREIGN KEY (owner) REFERENCES owners(name),",
        "    CONSTRAINT deals_amount_check CHECK (amount >= 0::numeric)",
        "CREATE INDEX deals_by_owner ON public.deals USING btree (owner);",
        "COMMENT ON TABLE public.deals IS 'Deals in the pipeline';",
        "COMMENT ON COLUMN public.deals.amount IS 'In euros';",
        "CREATE VIEW public.open_deals AS\n SELECT deals.id,",
        "CREATE TABLE public.events (\n    id integer,\n    at date\n) PARTITION BY RANGE (at);",
        "CREATE TABLE public.\"Odd \"\"name\"\"\" (",
        "CREATE TABLE sales.targets (",
    ] {
        assert!(ddl.contains(part), "missing {part:?} in:\n{ddl}");
    }
    assert!(
        !ddl.contains("secret") && !ddl.contains("events_2024"),
        "{ddl}"
    );

    let complete = |s: &mut Server, value: &str| {
        s.ok(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "postgres://crm/tables/{table}"},
                   "argument": {"name": "table", "value": value}}),
        )["completion"]["values"]
            .clone()
    };
    assert_eq!(complete(&mut s, "o"), json!(["open_deals", "owners"]));
    assert_eq!(complete(&mut s, "sales."), json!(["sales.targets"]));
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn named_queries_bind_values_as_psql_would() {
    let pg = shared();
    pg.database("crm_queries", CRM);
    let f = manifest(
        pg,
        "crm_queries",
        "row_limit = 10",
        r#"
[postgres.crm.queries.by_owner]
description = "Deals of one owner"
sql = "SELECT title, amount FROM deals WHERE owner = :owner ORDER BY title"
params.owner = { type = "string", enum = ["ada", "bob"] }

[postgres.crm.queries.deal]
sql = "SELECT title FROM deals WHERE id = :id"
params.id = { type = "string" }

[postgres.crm.queries.big]
sql = "SELECT title FROM deals WHERE amount >= :min ORDER BY amount"
params.min = { type = "number", default = 100 }

[postgres.crm.queries.since]
sql = "SELECT count(*) AS n FROM deals WHERE created >= :day AND (:open OR closed_at IS NOT NULL)"
params.day = { type = "string", default = "2024-01-01" }
params.open = { type = "boolean", default = true }

[postgres.crm.queries.echo]
sql = "SELECT :v AS v, :n AS n, :b AS b, :x AS x"
params.v = { type = "string" }
params.n = { type = "integer", default = 7 }
params.b = { type = "boolean", default = false }
params.x = { type = "number", default = 0.25 }

[postgres.crm.queries.nth]
sql = "SELECT id, label FROM hundred WHERE id = :id"
params.id = { type = "integer", minimum = 1 }

[postgres.crm.queries.top]
sql = "SELECT id FROM hundred ORDER BY id DESC LIMIT :n"
params.n = { type = "integer", default = 3 }

[postgres.crm.queries.repeat]
sql = "SELECT repeat('ab', :n) AS r, :n::text || 'x' AS cast_kept"
params.n = { type = "integer" }

[postgres.crm.queries.everything]
sql = "SELECT * FROM hundred ORDER BY id"

[postgres.crm.queries.plan]
sql = "EXPLAIN (COSTS OFF) SELECT * FROM hundred"

[templates.row]
uri = "crm://hundred/{id}"
postgres = "crm"
sql = "SELECT label FROM hundred WHERE id = :id"

[templates.owner_deals]
uri = "crm://owners/{name}/deals"
postgres = "crm"
sql = "SELECT title FROM deals WHERE owner = :name ORDER BY title"
"#,
    );
    let mut s = f.serve().started();
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let listed = uris(&resources, "uri");
    for q in ["big", "since", "top", "everything", "plan"] {
        assert!(
            listed.contains(&format!("postgres://crm/queries/{q}")),
            "{q} has defaults for every parameter: {listed:?}"
        );
    }
    assert!(!listed.iter().any(|u| u.contains("by_owner")));
    let (templates, _) = list_all(&mut s, "resources/templates/list", "resourceTemplates");
    let templates = uris(&templates, "uriTemplate");
    for t in [
        "postgres://crm/queries/by_owner{?owner}",
        "postgres://crm/queries/echo{?v,n,b,x}",
        "crm://hundred/{id}",
    ] {
        assert!(templates.contains(&t.to_owned()), "{t}: {templates:?}");
    }

    let rows = |s: &mut Server, uri: &str| read_json(s, uri)["rows"].clone();
    assert_eq!(
        rows(&mut s, "postgres://crm/queries/by_owner?owner=ada"),
        json!([{"title": "Anvils", "amount": 150}, {"title": "Bolts", "amount": 20.5}])
    );
    // A string compared with a uuid column is read as a uuid.
    assert_eq!(
        rows(
            &mut s,
            "postgres://crm/queries/deal?id=00000000-0000-0000-0000-000000000003"
        ),
        json!([{"title": "Cogs"}])
    );
    // A number compared with numeric, a string with a date, a boolean in an expression.
    assert_eq!(
        rows(&mut s, "postgres://crm/queries/big"),
        json!([{"title": "Anvils"}, {"title": "Cogs"}])
    );
    assert_eq!(
        rows(&mut s, "postgres://crm/queries/big?min=150.001"),
        json!([{"title": "Cogs"}])
    );
    assert_eq!(
        rows(&mut s, "postgres://crm/queries/since"),
        json!([{"n": 2}])
    );
    assert_eq!(
        rows(
            &mut s,
            "postgres://crm/queries/since?day=2023-01-01&open=false"
        ),
        json!([{"n": 1}])
    );
    // Parameters PostgreSQL cannot type from their context take their declared type.
    assert_eq!(
        rows(&mut s, "postgres://crm/queries/echo?v=hi"),
        json!([{"v": "hi", "n": 7, "b": false, "x": 0.25}])
    );
    // An integer where PostgreSQL wants int4, an int8 LIMIT, and a function argument.
    assert_eq!(
        rows(&mut s, "postgres://crm/queries/nth?id=42"),
        json!([{"id": 42, "label": "row 42"}])
    );
    assert_eq!(
        rows(&mut s, "postgres://crm/queries/top"),
        json!([{"id": 100}, {"id": 99}, {"id": 98}])
    );
    assert_eq!(
        rows(&mut s, "postgres://crm/queries/repeat?n=3"),
        json!([{"r": "ababab", "cast_kept": "3x"}])
    );
    let v = read_json(&mut s, "postgres://crm/queries/everything");
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(10));
    assert_eq!(v["truncated"], true);
    let plan = read_json(&mut s, "postgres://crm/queries/plan");
    assert_eq!(plan["columns"], json!(["QUERY PLAN"]));
    assert_eq!(plan["rows"][0]["QUERY PLAN"], "Seq Scan on hundred");

    // Templates: variables are strings, read as the type their context wants.
    assert_eq!(rows(&mut s, "crm://hundred/7"), json!([{"label": "row 7"}]));
    assert_eq!(
        rows(&mut s, "crm://owners/bob/deals"),
        json!([{"title": "Cogs"}])
    );

    // Bad values: invalid params naming what is wrong.
    for (uri, says) in [
        (
            "postgres://crm/queries/deal?id=not-a-uuid",
            "invalid input syntax for type uuid",
        ),
        ("postgres://crm/queries/nth?id=0", "at least 1"),
        ("postgres://crm/queries/nth?id=abc", "must be an integer"),
        ("postgres://crm/queries/nth?id=99999999999", "out of range"),
        (
            "postgres://crm/queries/by_owner?owner=eve",
            "must be one of \"ada\", \"bob\", got \"eve\"",
        ),
        (
            "postgres://crm/queries/by_owner",
            "missing required parameter `owner`",
        ),
        (
            "postgres://crm/queries/by_owner?owner=ada&evil=1",
            "unknown parameter `evil`",
        ),
        (
            "postgres://crm/queries/since?day=yesterday-ish",
            "invalid input syntax for type date",
        ),
        ("crm://hundred/x", "invalid input syntax for type integer"),
        ("postgres://crm/queries/echo?v=a%00b", "0x00"),
    ] {
        let (code, message) = read_error(&mut s, uri);
        assert_eq!(code, -32602, "{uri}: {message}");
        assert!(message.contains(says), "{uri}: {message}");
    }
    let (code, _) = read_error(&mut s, "postgres://crm/queries/nope");
    assert_eq!(code, -32002);

    let complete = s.ok(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "postgres://crm/queries/by_owner{?owner}"},
               "argument": {"name": "owner", "value": "a"}}),
    );
    assert_eq!(complete["completion"]["values"], json!(["ada"]));
}

const LEDGER: &str = r#"
    CREATE TABLE ledger (id int PRIMARY KEY, note text);
    INSERT INTO ledger VALUES (1, 'one'), (2, 'two');
    CREATE SEQUENCE counter;
    CREATE FUNCTION sneaky() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
        BEGIN INSERT INTO ledger VALUES (99, 'sneaky'); RETURN 1; END $$;
    CREATE FUNCTION copier() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
        BEGIN COPY ledger FROM '/etc/passwd'; RETURN 1; END $$;
    CREATE FUNCTION maker() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
        BEGIN CREATE TABLE made (v int); RETURN 1; END $$;
"#;

/// Everything a write could change: each user table's rows, the relations, functions and large
/// objects, and sequence positions.
fn fingerprint(pg: &Cluster, db: &str) -> String {
    let tables = pg.query(
        db,
        "SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables \
         WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
    );
    let mut out = String::new();
    for t in tables.iter().filter_map(|r| r[0].clone()) {
        let sum = pg.value(
            db,
            &format!(
                "SELECT md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM {t} x"
            ),
        );
        out.push_str(&format!("{t}={sum}\n"));
    }
    for sql in [
        "SELECT string_agg(relname || ':' || relkind::text, ',' ORDER BY relname) FROM pg_class \
         WHERE relnamespace = 'public'::regnamespace",
        "SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc \
         WHERE pronamespace = 'public'::regnamespace",
        "SELECT count(*) || ':' || coalesce(string_agg(oid::text, ','), '') FROM pg_largeobject_metadata",
        "SELECT last_value || ':' || is_called FROM counter",
    ] {
        out.push_str(&pg.value(db, sql));
        out.push('\n');
    }
    out
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn writes_fail_or_roll_back_and_leave_the_database_unchanged() {
    let pg = shared();
    pg.database("ledger", LEDGER);
    let before = fingerprint(pg, "ledger");
    let writes: &[(&str, &str, Option<&str>)] = &[
        (
            "with_insert",
            "WITH x AS (INSERT INTO ledger VALUES (9, 'x') RETURNING id) SELECT * FROM x",
            None,
        ),
        ("select_into", "SELECT * INTO stolen FROM ledger", None),
        ("volatile", "SELECT sneaky()", Some("read-only transaction")),
        (
            "copy_in_function",
            "SELECT copier()",
            Some("read-only transaction"),
        ),
        (
            "ddl_in_function",
            "SELECT maker()",
            Some("read-only transaction"),
        ),
        (
            "explain_analyze",
            "EXPLAIN ANALYZE SELECT sneaky()",
            Some("read-only transaction"),
        ),
        (
            "sequence",
            "SELECT nextval('counter')",
            Some("read-only transaction"),
        ),
        (
            "read_write",
            "SELECT set_config('transaction_read_only', 'off', true), sneaky()",
            None,
        ),
        (
            "lo_from_bytea",
            "SELECT lo_from_bytea(0, 'payload') AS oid",
            None,
        ),
        ("lo_import", "SELECT lo_import('/etc/passwd') AS oid", None),
        ("advisory", "SELECT pg_advisory_lock(4242)", None),
        (
            "sleep",
            "SELECT pg_sleep(30)",
            Some("ran longer than 1s (`timeout`)"),
        ),
    ];
    let mut extra = String::new();
    for (name, sql, _) in writes {
        extra.push_str(&format!(
            "[postgres.crm.queries.{name}]\nsql = \"{}\"\n",
            sql.replace('"', "\\\"")
        ));
    }
    let f = manifest(pg, "ledger", "timeout = \"1s\"", &extra);
    let mut s = f.serve().started();
    for (name, _, says) in writes {
        let uri = format!("postgres://crm/queries/{name}");
        let started = Instant::now();
        let r = s.call("resources/read", json!({"uri": uri}));
        match (r.get("error"), says) {
            (Some(e), Some(says)) => assert!(
                e["message"].as_str().is_some_and(|m| m.contains(says)),
                "{name}: {e}"
            ),
            (Some(_), None) => {}
            (None, Some(_)) => panic!("{name} should fail: {r}"),
            // Large objects are made inside the read-only transaction: the rollback undoes them.
            (None, None) => assert!(
                matches!(*name, "lo_from_bytea" | "lo_import" | "advisory"),
                "{name} should fail: {r}"
            ),
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{name} took {:?}",
            started.elapsed()
        );
    }
    // The rollback runs after the answer: wait for the advisory lock to go with it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while pg.value(
        "ledger",
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'",
    ) != "0"
    {
        assert!(Instant::now() < deadline, "the advisory lock stayed");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fingerprint(pg, "ledger"), before);
}

/// Statements that write are refused when the manifest loads, whatever hides them; what passes
/// that check and still writes fails in the read-only transaction (above).
#[test]
fn statements_that_write_are_refused_when_the_manifest_loads() {
    let f = Fixture::new();
    for sql in [
        "COPY ledger FROM '/etc/passwd'",
        "COPY ledger TO '/tmp/out'",
        "CREATE TABLE made AS SELECT 1 AS v",
        "INSERT INTO ledger VALUES (3, 'three')",
        "UPDATE ledger SET note = 'changed'",
        "DELETE FROM ledger",
        "MERGE INTO ledger USING ledger l2 ON true WHEN MATCHED THEN DELETE",
        "TRUNCATE ledger",
        "DROP TABLE ledger",
        "SET default_transaction_read_only = off",
        "RESET ALL",
        "COMMIT",
        "CALL nothing()",
        "DO $$ BEGIN INSERT INTO ledger VALUES (4, 'four'); END $$",
        "SELECT 1; INSERT INTO ledger VALUES (5, 'five')",
        "VACUUM ledger",
        "LOCK TABLE ledger",
        "PREPARE p AS SELECT 1",
        "LISTEN x",
        "/* SELECT */ GRANT ALL ON ledger TO PUBLIC",
    ] {
        let lines = f.diagnose(&format!(
            "[postgres.crm]\nurl = \"postgres://u@127.0.0.1:1/x\"\n\n[postgres.crm.queries.q]\nsql = \"{}\"\n",
            sql.replace('"', "\\\"")
        ));
        assert!(
            lines
                .iter()
                .any(|l| l.contains("[postgres.crm.queries.q] `sql`")),
            "{sql}: {lines:?}"
        );
    }
}

/// A role that may only read cannot write server files either, which a superuser could do from
/// a function even inside a read-only transaction (`check` warns about such roles).
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn a_reading_role_cannot_write_server_files() {
    let pg = shared();
    pg.database(
        "reader",
        &format!(
            "{LEDGER}
            CREATE FUNCTION copy_out() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
                BEGIN COPY ledger TO '/tmp/mcp-manifest-reader-out'; RETURN 1; END $$;
            DO $$ BEGIN
                IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'reader') THEN
                    CREATE ROLE reader LOGIN PASSWORD 'reader-pw';
                END IF;
            END $$;
            GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader;"
        ),
    );
    let _ = std::fs::remove_file("/tmp/mcp-manifest-reader-out");
    let before = fingerprint(pg, "reader");
    let f = Fixture::new();
    f.manifest(&format!(
        "[postgres.crm]\nurl = \"postgres://reader:reader-pw@127.0.0.1:{}/reader\"\n\n\
         [postgres.crm.queries.out]\nsql = \"SELECT copy_out()\"\n\n\
         [postgres.crm.queries.lo]\nsql = \"SELECT lo_import('/etc/passwd')\"\n",
        pg.port
    ));
    let mut s = f.serve().started();
    for q in ["out", "lo"] {
        let (_, message) = read_error(&mut s, &format!("postgres://crm/queries/{q}"));
        assert!(
            message.contains("permission denied") || message.contains("must be superuser"),
            "{q}: {message}"
        );
    }
    assert_eq!(
        read_json(&mut s, "postgres://crm/tables/ledger")["rows"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert!(!std::path::Path::new("/tmp/mcp-manifest-reader-out").exists());
    assert_eq!(fingerprint(pg, "reader"), before);
    // `check` has nothing to say about this role.
    let out = f.run(&["check"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

fn updated_for(uri: &str) -> impl Fn(&Value) -> bool + '_ {
    move |v: &Value| v["method"] == "notifications/resources/updated" && v["params"]["uri"] == uri
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn subscribed_tables_queries_and_schema_are_announced_after_writes() {
    let pg = shared();
    pg.database(
        "watched",
        "CREATE TABLE a (v int); CREATE TABLE b (v int); CREATE VIEW va AS SELECT * FROM a;",
    );
    let f = manifest(
        pg,
        "watched",
        "poll_interval = \"100ms\"",
        "[postgres.crm.queries.count]\nsql = \"SELECT count(*) AS n FROM a\"\n",
    );
    let mut s = f.serve().started();
    let (a, b, count, schema, view) = (
        "postgres://crm/tables/a",
        "postgres://crm/tables/b",
        "postgres://crm/queries/count",
        "postgres://crm/schema",
        "postgres://crm/tables/va",
    );
    for uri in [a, b, count, schema, view] {
        s.ok("resources/subscribe", json!({"uri": uri}));
    }
    let e = s.err(
        "resources/subscribe",
        json!({"uri": "postgres://crm/tables/nope"}),
    );
    assert_eq!(e["code"], -32002);
    // The writer reports its statistics at once (they are otherwise sent within a second or so).
    let write = |sql: &str| {
        pg.query(
            "watched",
            &format!("{sql}; SELECT pg_stat_force_next_flush()"),
        );
    };
    write("INSERT INTO b VALUES (1)");
    s.wait_for(updated_for(b));
    // Queries and views read tables nobody names: any write announces them.
    s.wait_for(updated_for(count));
    s.wait_for(updated_for(view));
    // A second round, so every notification of the first poll has arrived: none was for `a`.
    write("INSERT INTO b VALUES (2)");
    s.wait_for(updated_for(b));
    assert!(
        !s.pending().iter().any(updated_for(a)),
        "a write to b announced a: {:?}",
        s.pending()
    );
    write("INSERT INTO a VALUES (1)");
    s.wait_for(updated_for(a));
    // TRUNCATE counts no rows but gives the table a new file.
    write("TRUNCATE a");
    s.wait_for(updated_for(a));
    pg.query("watched", "ALTER TABLE a ADD COLUMN w int");
    s.wait_for(updated_for(schema));
    s.ok("resources/unsubscribe", json!({"uri": a}));
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn hostile_values_are_only_ever_data() {
    let pg = shared();
    pg.database("hostile", LEDGER);
    let before = fingerprint(pg, "hostile");
    let f = manifest(
        pg,
        "hostile",
        "",
        r#"
[postgres.crm.queries.echo]
sql = "SELECT :v AS v, (SELECT count(*) FROM ledger) AS n"
params.v = { type = "string" }

[postgres.crm.queries.note]
sql = "SELECT id FROM ledger WHERE note = :v"
params.v = { type = "string" }

[postgres.crm.queries.nth]
sql = "SELECT note FROM ledger WHERE id = :id"
params.id = { type = "integer" }

[templates.by_id]
uri = "crm://ledger/{id}"
postgres = "crm"
sql = "SELECT note FROM ledger WHERE id = :id"
"#,
    );
    // Past the 64 KiB of other sources' URIs: a SQL source takes long query values.
    let long = "x".repeat(100_000);
    let values: Vec<&str> = vec![
        "'; DROP TABLE ledger; --",
        "' OR '1'='1",
        "\\'; DELETE FROM ledger; --",
        "$$; DELETE FROM ledger; $$",
        "$1",
        ":v",
        "?",
        "%",
        "%00",
        "lo_import('/etc/passwd')",
        "1); COPY ledger TO '/tmp/x'; --",
        "E'\\x41'",
        "\\x00",
        "<script>alert(1)</script>",
        "{\"a\": 1}",
        "NULL",
        "",
        " \t\n",
        "🦀 ünïcödé",
        "-1",
        "1e309",
        "--",
        "/*",
        "*/ SELECT 1 /*",
        "\"",
        "`",
        "'||pg_sleep(10)||'",
        "${HOME}",
        "ROLLBACK; COMMIT",
        &long,
    ];
    assert_eq!(values.len(), 30);
    let mut s = f.serve().started();
    for v in &values {
        let echo = read_json(&mut s, &format!("postgres://crm/queries/echo?v={}", enc(v)));
        assert_eq!(echo["rows"], json!([{"v": v, "n": 2}]), "{v:?}");
        let note = read_json(&mut s, &format!("postgres://crm/queries/note?v={}", enc(v)));
        assert_eq!(note["rows"], json!([]), "{v:?}");
        if *v != "-1" {
            let (code, _) =
                read_error(&mut s, &format!("postgres://crm/queries/nth?id={}", enc(v)));
            assert_eq!(code, -32602, "{v:?}");
        }
        let t = s.call(
            "resources/read",
            json!({"uri": format!("crm://ledger/{}", enc(v))}),
        );
        if *v == "-1" {
            assert_eq!(
                t["result"]["contents"][0]["text"],
                r#"{"columns":["note"],"rows":[],"truncated":false}"#
            );
        } else {
            assert_eq!(t["error"]["code"], -32602, "{v:?}: {t}");
        }
    }
    assert_eq!(fingerprint(pg, "hostile"), before);
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn nothing_connects_until_a_request_needs_the_database() {
    let pg = shared();
    pg.database("lazy", "CREATE TABLE t (v int); INSERT INTO t VALUES (1);");
    let connections = || {
        pg.value(
            "postgres",
            "SELECT count(*) FROM pg_stat_activity WHERE datname = 'lazy' AND application_name = 'mcp-manifest'",
        )
    };
    let f = manifest(pg, "lazy", "max_connections = 2", "");
    let mut s = f.serve().started();
    s.ok("ping", json!({}));
    assert_eq!(connections(), "0");
    // Concurrent reads share at most `max_connections`; one stays open afterwards.
    let ids: Vec<i64> = (0..10)
        .map(|_| {
            let id = s.fresh_id();
            s.send(
                &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                           "params": {"uri": "postgres://crm/tables/t"}}),
            );
            id
        })
        .collect();
    for id in ids {
        let r = s.response(&json!(id));
        assert!(r.get("result").is_some(), "{r}");
    }
    let open: u32 = connections().parse().expect("a count");
    assert!((1..=2).contains(&open), "{open} connections");
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn a_database_that_is_down_is_each_requests_error_and_comes_back() {
    let pg = Cluster::start();
    pg.database("crm", "CREATE TABLE t (v int); INSERT INTO t VALUES (1);");
    let f = Fixture::new();
    f.write("docs/a.md", "# A\n");
    f.manifest(&format!(
        "[files.docs]\nroot = \"docs\"\n\n[postgres.crm]\nurl = \"{}\"\n",
        pg.url("crm")
    ));
    pg.stop();
    let mut s = f.serve().started();
    // The list still answers (the database's tables are left out), files still read.
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let listed = uris(&resources, "uri");
    assert!(listed.contains(&f.uri("docs/a.md")), "{listed:?}");
    assert!(
        listed.contains(&"postgres://crm/schema".to_owned()),
        "{listed:?}"
    );
    assert_eq!(read_text(&mut s, &f.uri("docs/a.md")), "# A\n");
    for uri in ["postgres://crm/tables/t", "postgres://crm/schema"] {
        let (code, message) = read_error(&mut s, uri);
        assert_eq!(code, -32602, "{message}");
        assert!(
            message.contains("[postgres.crm] cannot connect to database `crm` on 127.0.0.1:")
                && message.contains(&pg.port.to_string()),
            "{message}"
        );
        assert!(!message.contains(PASSWORD), "{message}");
    }
    // Nothing tells whether the table exists: the subscription is taken.
    s.ok(
        "resources/subscribe",
        json!({"uri": "postgres://crm/tables/t"}),
    );
    pg.resume();
    assert_eq!(
        read_json(&mut s, "postgres://crm/tables/t")["rows"],
        json!([{"v": 1}])
    );
    // A restart while the server holds idle connections: the next read opens a fresh one.
    pg.stop();
    pg.resume();
    assert_eq!(
        read_json(&mut s, "postgres://crm/tables/t")["rows"],
        json!([{"v": 1}])
    );
    // Down again while serving: a clear error, then back.
    pg.stop();
    let (_, message) = read_error(&mut s, "postgres://crm/tables/t");
    assert!(message.contains("cannot connect"), "{message}");
    pg.resume();
    assert_eq!(
        read_json(&mut s, "postgres://crm/tables/t")["rows"],
        json!([{"v": 1}])
    );
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn a_slow_query_times_out_without_holding_up_other_reads() {
    let pg = shared();
    pg.database("slow", "CREATE TABLE t (v int); INSERT INTO t VALUES (1);");
    let f = manifest(
        pg,
        "slow",
        "timeout = \"1500ms\"",
        "[postgres.crm.queries.slow]\nsql = \"SELECT pg_sleep(20)\"\n",
    );
    let mut s = f.serve().started();
    let started = Instant::now();
    let id = s.fresh_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                   "params": {"uri": "postgres://crm/queries/slow"}}),
    );
    assert_eq!(
        read_json(&mut s, "postgres://crm/tables/t")["rows"],
        json!([{"v": 1}])
    );
    assert!(started.elapsed() < Duration::from_millis(1400));
    let r = s.response(&json!(id));
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("ran longer than 1500ms"), "{r}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn check_warns_about_unreachable_databases_and_rejected_sql() {
    let pg = shared();
    pg.database("checked", "CREATE TABLE t (v int);");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a port");
    let f = Fixture::new();
    f.manifest(&format!(
        r#"[postgres.down]
url = "postgres://app:{PASSWORD}@127.0.0.1:{closed}/crm"

[postgres.up]
url = "{}"

[postgres.up.queries.good]
sql = "SELECT v FROM t WHERE v = :v"
params.v = {{ type = "integer" }}

[postgres.up.queries.bad]
sql = "SELECT nope FROM t"

[templates.broken]
uri = "x://{{id}}"
postgres = "up"
sql = "SELECT * FROM missing WHERE id = :id"
"#,
        pg.url("checked")
    ));
    let out = f.run(&["check"]);
    let (stdout, stderr) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        !stdout.contains(PASSWORD) && !stderr.contains(PASSWORD),
        "{stdout}{stderr}"
    );
    let warnings: Vec<&str> = stderr.lines().collect();
    assert_eq!(warnings.len(), 4, "{stderr}");
    assert!(
        warnings[0].starts_with(&format!(
            "mcp-server.toml:2:7: warning: [postgres.down] cannot connect to database `crm` on 127.0.0.1:{closed} as `app`:"
        )),
        "{stderr}"
    );
    assert!(
        warnings[1].starts_with("mcp-server.toml:5:7: warning: [postgres.up] connects to database `checked` on 127.0.0.1:")
            && warnings[1].contains("superuser"),
        "{stderr}"
    );
    assert!(
        warnings[2].starts_with("mcp-server.toml:12:7: warning: [postgres.up.queries.bad] PostgreSQL rejects the SQL: column \"nope\" does not exist"),
        "{stderr}"
    );
    assert!(
        warnings[3].starts_with("mcp-server.toml:17:7: warning: [templates.broken] PostgreSQL rejects the SQL: relation \"missing\" does not exist"),
        "{stderr}"
    );
    assert!(stdout.contains("ok"), "{stdout}");
}

#[test]
fn manifest_errors_name_the_place() {
    let f = Fixture::new();
    let lines = f.diagnose(
        r#"[postgres.a]
url = "${MCP_TEST_SURELY_UNSET_VAR}"

[postgres.b]
url = "mysql://u:hunter2@db/x"

[postgres.c]
url = "postgres://u:hunter2@db/x?connect_timeout=soon"
schemas = []

[postgres.d]
url = "postgres://u@db/x"
max_connections = 0

[templates.t]
uri = "x://{id}"
postgres = "nope"
sql = "SELECT :id"

[templates.both]
uri = "y://{id}"
postgres = "b"
sqlite = "b"
sql = "SELECT :id"
"#,
    );
    let all = lines.join("\n");
    for want in [
        "bad.toml:2:7: environment variable `MCP_TEST_SURELY_UNSET_VAR` is not set",
        "bad.toml:5:7: [postgres.b] `url`: the scheme is `mysql`, not postgres://",
        "bad.toml:8:7: [postgres.c] `url`: `connect_timeout` is a number of seconds, found `soon`",
        "bad.toml:9:11: [postgres.c] `schemas` is empty",
        "bad.toml:13:19: `postgres.d.max_connections` must be at least 1",
        "bad.toml:17:12: template `t` names postgres source `nope`, which does not exist",
        "template `both` names both a `sqlite` and a `postgres` source",
    ] {
        assert!(all.contains(want), "missing {want:?} in:\n{all}");
    }
    assert!(!all.contains("hunter2"), "{all}");

    // SQL is checked when the sources are built (after the manifest loaded).
    let lines = f.diagnose(
        r#"[postgres.c]
url = "postgres://u@db/x"

[postgres.c.queries.copy]
sql = "COPY t FROM STDIN"

[postgres.c.queries.two]
sql = "SELECT 1; SELECT 2"

[postgres.c.queries.pos]
sql = "SELECT $1"

[postgres.c.queries.undeclared]
sql = "SELECT :a::int, :b"
params.a = { type = "integer" }

[postgres.c.queries.arrays]
sql = "SELECT :a"
params.a = { type = "array" }

[templates.t]
uri = "x://{id}"
postgres = "c"
sql = "SELECT :idd"
"#,
    );
    let all = lines.join("\n");
    for want in [
        "bad.toml:5:7: [postgres.c.queries.copy] `sql` must read: start it with SELECT, WITH, VALUES, TABLE, EXPLAIN, SHOW (found `COPY`); every statement runs in a read-only transaction",
        "bad.toml:8:7: [postgres.c.queries.two] `sql` holds more than one statement",
        "bad.toml:11:7: [postgres.c.queries.pos] positional parameter `$1` cannot be bound",
        "bad.toml:14:7: [postgres.c.queries.undeclared] SQL parameter `:b` is not declared",
        "[postgres.c.queries.arrays] parameter `a` is an array",
        "bad.toml:24:7: [templates.t] SQL parameter `:idd` is not a variable of `x://{id}`, did you mean `:id`?",
    ] {
        assert!(all.contains(want), "missing {want:?} in:\n{all}");
    }
}

/// A named query and the table template are typed tools (`template_tools`) that answer the
/// same bytes as `resources/read`, with the rows as `structuredContent`.
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn named_queries_and_tables_are_typed_tools() {
    let pg = shared();
    pg.database("crm_tools", CRM);
    let f = manifest(
        pg,
        "crm_tools",
        "",
        r#"
[postgres.crm.queries.by_owner]
description = "Deals of one owner"
sql = "SELECT title, amount FROM deals WHERE owner = :owner ORDER BY title"
params.owner = { type = "string", enum = ["ada", "bob"], description = "Who owns the deals" }

[postgres.crm.queries.nth]
sql = "SELECT id, label FROM hundred WHERE id = :id"
params.id = { type = "integer", minimum = 1 }
tool = "nth_row"
"#,
    );
    let mut s = f.serve().started();
    let (tools, _) = list_all(&mut s, "tools/list", "tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "list_resources",
            "read_resource",
            "crm_table",
            "by_owner",
            "nth_row"
        ]
    );
    let by_owner = &tools[3];
    assert_eq!(
        by_owner["inputSchema"],
        json!({
            "type": "object",
            "properties": {"owner": {"type": "string", "description": "Who owns the deals", "enum": ["ada", "bob"]}},
            "required": ["owner"],
            "additionalProperties": false
        })
    );
    assert_eq!(by_owner["annotations"]["readOnlyHint"], true);
    assert_eq!(by_owner["annotations"]["openWorldHint"], false);
    assert!(by_owner["outputSchema"].is_object());
    for (name, args, uri) in [
        (
            "by_owner",
            json!({"owner": "ada"}),
            "postgres://crm/queries/by_owner?owner=ada",
        ),
        (
            "nth_row",
            json!({"id": 42}),
            "postgres://crm/queries/nth?id=42",
        ),
        (
            "crm_table",
            json!({"table": "owners"}),
            "postgres://crm/tables/owners",
        ),
    ] {
        let r = s.ok("tools/call", json!({"name": name, "arguments": args}));
        assert_eq!(r["isError"], false, "{r}");
        let text = r["content"][0]["text"].as_str().expect("text");
        assert_eq!(text, read_text(&mut s, uri), "{name}");
        assert_eq!(r["structuredContent"], read_json(&mut s, uri), "{name}");
    }
    let r = s.ok(
        "tools/call",
        json!({"name": "by_owner", "arguments": {"owner": "eve"}}),
    );
    assert_eq!(r["isError"], true);
    let text = r["content"][0]["text"].as_str().expect("text");
    assert!(
        text.contains("argument `owner` must be one of \"ada\", \"bob\", got \"eve\""),
        "{text}"
    );
    let r = s.ok(
        "tools/call",
        json!({"name": "crm_table", "arguments": {"table": "nope"}}),
    );
    assert_eq!(r["isError"], true, "{r}");
}

#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn answers_stop_at_max_size_and_a_larger_first_row_is_refused() {
    let pg = shared();
    pg.database(
        "wide",
        "CREATE TABLE wide (id int PRIMARY KEY, body text);
         INSERT INTO wide SELECT x, repeat('w', 20000) FROM generate_series(1, 100) AS x;",
    );
    let f = manifest(
        pg,
        "wide",
        "row_limit = 200\nmax_size = \"256KiB\"",
        "[postgres.crm.queries.made]\nsql = \"SELECT repeat('x', :n) AS v\"\n\
         params.n = { type = \"integer\" }\n",
    );
    let mut s = f.serve().started();
    // Rows of 20 000 bytes: as many as fit in 256 KiB, then `truncated`.
    let r = s.ok(
        "resources/read",
        json!({"uri": "postgres://crm/tables/wide"}),
    );
    let text = r["contents"][0]["text"].as_str().expect("text");
    assert!(text.len() <= 256 * 1024, "{} bytes", text.len());
    let table: Value = serde_json::from_str(text).expect("JSON");
    let rows = table["rows"].as_array().expect("rows").len();
    assert!((10..=13).contains(&rows), "{rows} rows");
    assert_eq!(table["truncated"], true);
    // A first row larger than `max_size`: refused, naming the limit; the source goes on.
    let (code, message) = read_error(&mut s, "postgres://crm/queries/made?n=300000");
    assert_eq!(code, -32602);
    assert_eq!(
        message,
        "[postgres.crm] the answer would hold a row larger than 256 KiB (`max_size` of the source); select fewer or smaller columns (e.g. `left`, `length`)"
    );
    assert_eq!(
        read_json(&mut s, "postgres://crm/queries/made?n=3")["rows"],
        json!([{"v": "xxx"}])
    );
}

/// A value larger than `max_size` is measured on the server and never sent: four concurrent reads
/// of a 60 MB row keep the server's peak memory far below one copy of it (without the check each
/// read held the row, its text and its JSON).
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn a_value_larger_than_max_size_never_leaves_the_server() {
    let pg = shared();
    pg.database(
        "huge",
        "CREATE TABLE huge (id int PRIMARY KEY, body text, blob bytea);
         INSERT INTO huge VALUES (1, 'small', 'x'), (2, repeat('h', 60000000), NULL),
                                 (3, NULL, decode(repeat('ab', 30000000), 'hex'));",
    );
    let f = manifest(
        pg,
        "huge",
        "max_size = \"1MiB\"",
        "[postgres.crm.queries.one]\nsql = \"SELECT body, blob FROM huge WHERE id = :id\"\n\
         params.id = { type = \"integer\" }\n",
    );
    let mut s = f.serve_process().started();
    let pid = s.child.as_ref().expect("a process").id();
    // What the server holds before the reads (its code and runtime; grows with the binary).
    let base = crate::support::memory(pid, "VmRSS");
    let uris: Vec<String> = (0..4)
        .map(|i| match i {
            0 => "postgres://crm/tables/huge".to_owned(),
            _ => format!("postgres://crm/queries/one?id={}", 2 + i % 2),
        })
        .collect();
    for (i, r) in s.read_all(&uris).into_iter().enumerate() {
        if i == 0 {
            // The table: the first row, then `truncated` at the large one.
            let text = r["result"]["contents"][0]["text"].as_str().expect("rows");
            let v: Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(
                v["rows"],
                json!([{"id": 1, "body": "small", "blob": "eA=="}])
            );
            assert_eq!(v["truncated"], true);
        } else {
            let message = r["error"]["message"].as_str().unwrap_or("");
            assert!(message.contains("larger than 1 MiB"), "{r}");
        }
    }
    if let (Some(base), Some(peak)) = (base, crate::support::memory(pid, "VmHWM")) {
        assert!(
            peak < base + 24 * 1024 * 1024,
            "peak RSS {} MiB (from {} MiB) for reads of a 60 MB row",
            peak / (1024 * 1024),
            base / (1024 * 1024)
        );
    }
}

/// The other ways out of a read-only transaction, each granted to a role of its own making:
/// membership of `pg_write_server_files`, `lo_export` (server files), adminpack's
/// `pg_file_write`, and a `postgres_fdw` foreign server. `check` names every one, the SQL tool
/// refuses naming them, and once they are revoked nothing is said.
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn every_kind_of_write_outside_the_transaction_is_named() {
    let pg = shared();
    pg.database(
        "exits",
        "CREATE EXTENSION IF NOT EXISTS adminpack;
         CREATE EXTENSION IF NOT EXISTS postgres_fdw;
         CREATE TABLE ledger (id int);
         DO $$ BEGIN
             IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'exiter') THEN
                 CREATE ROLE exiter LOGIN PASSWORD 'exiter-pw';
             END IF;
         END $$;
         GRANT SELECT ON ALL TABLES IN SCHEMA public TO exiter;
         GRANT pg_write_server_files TO exiter;
         GRANT EXECUTE ON FUNCTION lo_export(oid, text) TO exiter;
         GRANT EXECUTE ON FUNCTION pg_file_write(text, text, boolean) TO exiter;
         CREATE SERVER elsewhere FOREIGN DATA WRAPPER postgres_fdw OPTIONS (dbname 'exits');
         GRANT USAGE ON FOREIGN SERVER elsewhere TO exiter;",
    );
    let url = format!("postgres://exiter:exiter-pw@127.0.0.1:{}/exits", pg.port);
    let f = Fixture::new();
    f.manifest(&format!(
        "[postgres.crm]\nurl = \"{url}\"\nsql_tool = true\n"
    ));
    let named = [
        "is a member of pg_write_server_files",
        "lo_export(oid,text)",
        "pg_file_write(text,text,boolean)",
        "foreign server elsewhere (postgres_fdw)",
    ];
    let out = f.run(&["check"]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{e}");
    for what in named {
        assert!(e.contains(what), "check does not name {what}: {e}");
    }
    // adminpack's two-argument pg_file_rename (SQL, the caller's rights, executable by all)
    // only calls the three-argument one, which the role may not: not a way out.
    assert!(!e.contains("pg_file_rename(text,text)"), "{e}");
    let mut s = f.serve().started();
    let r = s.ok(
        "tools/call",
        json!({"name": "crm_sql", "arguments": {"sql": "SELECT count(*) AS n FROM ledger"}}),
    );
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap_or("");
    for what in named {
        assert!(
            text.contains(what),
            "the refusal does not name {what}: {text}"
        );
    }
    drop(s);
    pg.query(
        "exits",
        "REVOKE pg_write_server_files FROM exiter;
         REVOKE EXECUTE ON FUNCTION lo_export(oid, text) FROM exiter;
         REVOKE EXECUTE ON FUNCTION pg_file_write(text, text, boolean) FROM exiter;
         REVOKE USAGE ON FOREIGN SERVER elsewhere FROM exiter;",
    );
    let out = f.run(&["check"]);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

/// A role that can run functions that write outside the transaction (dblink opens a connection
/// of its own, whose writes stay): `check` names them, the SQL tool refuses until the manifest
/// accepts it; a role without them is told nothing.
#[test]
#[cfg_attr(
    not(unix),
    ignore = "needs a PostgreSQL cluster: the test starts one on Unix; under Wine scripts/windows-tests.sh does (--ignored)"
)]
fn roles_that_can_write_outside_the_transaction_are_named_and_refused_the_sql_tool() {
    let pg = shared();
    pg.database(
        "escape",
        "CREATE EXTENSION IF NOT EXISTS dblink;
         CREATE TABLE ledger (id int, note text);
         DO $$ BEGIN
             IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'escaper') THEN
                 CREATE ROLE escaper LOGIN PASSWORD 'escaper-pw';
             END IF;
         END $$;
         GRANT SELECT ON ALL TABLES IN SCHEMA public TO escaper;",
    );
    let url = format!("postgres://escaper:escaper-pw@127.0.0.1:{}/escape", pg.port);
    let f = Fixture::new();
    f.manifest(&format!(
        "[postgres.crm]\nurl = \"{url}\"\nsql_tool = true\n"
    ));
    let out = f.run(&["check"]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert!(
        e.contains("mcp-server.toml:2:7: warning: [postgres.crm] connects to database `escape`")
            && e.contains("dblink_exec(text,text)")
            && e.contains("accept_writes_outside_transaction"),
        "{e}"
    );
    let mut s = f.serve().started();
    let r = s.ok(
        "tools/call",
        json!({"name": "crm_sql", "arguments": {"sql": "SELECT count(*) AS n FROM ledger"}}),
    );
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        text.contains("refused") && text.contains("dblink"),
        "{text}"
    );
    drop(s);
    f.manifest(&format!(
        "[postgres.crm]\nurl = \"{url}\"\nsql_tool = true\naccept_writes_outside_transaction = true\n"
    ));
    let mut s = f.serve().started();
    let r = s.ok(
        "tools/call",
        json!({"name": "crm_sql", "arguments": {"sql": "SELECT count(*) AS n FROM ledger"}}),
    );
    assert_eq!(r["structuredContent"]["rows"], json!([{"n": 0}]), "{r}");
    // Without dblink the role has nothing to say about.
    pg.query("escape", "DROP EXTENSION dblink");
    let out = f.run(&["check"]);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}
