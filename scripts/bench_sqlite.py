#!/usr/bin/env python3
"""SQLite read latency of mcp-manifest (a benchmark, not a test).

Measures, against a release build, 2 000 sequential requests each (one in flight at a time, over
the server's stdin/stdout pipes, time from writing the request line to reading the answer line):
  1. `resources/read sqlite://bench/tables/items` — a 100-row table (row_limit 100);
  2. `resources/read sqlite://bench/queries/by_id?id=N` — a named query with one bound parameter.

In the same run, the same two queries through the `sqlite3` CLI (one long-lived process fed on a
pipe, `.mode json`, the parameter set with `.parameter set`; a sentinel query marks the end of
each answer), and, for scale, through Python's in-process `sqlite3` module (no IPC at all).

Usage: cargo build --release && python3 scripts/bench_sqlite.py [--bin target/release/mcp-manifest] [-n 2000]
Needs: python3; the `sqlite3` CLI for its column (skipped with a note when missing).
"""

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time

from mcp_bench import Server, pct

TABLE_SQL = "SELECT * FROM items LIMIT 101"
QUERY_SQL = "SELECT id, name, price, qty FROM items WHERE id = :id"


def fixture():
    d = tempfile.mkdtemp(prefix="mcp-bench-sqlite-")
    db = os.path.join(d, "bench.db")
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, qty INTEGER, note TEXT)")
    con.executemany(
        "INSERT INTO items VALUES (?, ?, ?, ?, ?)",
        [(i, f"item {i}", i * 1.25, i % 7, None if i % 3 else "sale") for i in range(1, 101)],
    )
    con.commit()
    con.close()
    with open(os.path.join(d, "mcp-server.toml"), "w") as f:
        f.write(
            '[sqlite.bench]\npath = "bench.db"\nrow_limit = 100\n\n'
            "[sqlite.bench.queries.by_id]\n"
            f'sql = "{QUERY_SQL}"\n'
            'params.id = { type = "integer" }\n'
        )
    return d, db


def send(p, data):
    """Writes and flushes: stdin is buffered, stdout is read through a buffer (readline on an
    unbuffered pipe would cost one system call per byte)."""
    p.stdin.write(data)
    p.stdin.flush()


def server_reads(binary, manifest, uris):
    server = Server(binary, manifest)
    times = []
    for uri in uris:
        took, resp = server.timed("resources/read", {"uri": uri})
        times.append(took)
        if b'"result"' not in resp or b'rows' not in resp:
            raise SystemExit(f"unexpected answer for {uri}: {resp[:300]!r}")
    server.close()
    return times


def cli_reads(cli, db, scripts):
    """One sqlite3 process; each script ends with a sentinel query whose answer ends the read."""
    p = subprocess.Popen(
        ["stdbuf", "-oL", cli, "-readonly", db],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    send(p, b".mode json\n")
    times = []
    for script in scripts:
        t0 = time.perf_counter()
        send(p, (script + "\nSELECT 'END-OF-ANSWER' AS s;\n").encode())
        got = b""
        while True:
            row = p.stdout.readline()
            if not row:
                raise SystemExit("sqlite3 exited")
            if b"END-OF-ANSWER" in row:
                break
            got += row
        times.append(time.perf_counter() - t0)
        if b'"id"' not in got:
            raise SystemExit(f"unexpected sqlite3 answer: {got[:300]!r}")
    p.stdin.close()
    p.wait()
    return times


def python_reads(db, n):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    table, query = [], []
    for i in range(n):
        t0 = time.perf_counter()
        json.dumps(con.execute(TABLE_SQL).fetchall())
        table.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        json.dumps(con.execute(QUERY_SQL, {"id": i % 100 + 1}).fetchall())
        query.append(time.perf_counter() - t0)
    con.close()
    return table, query


def report(label, xs):
    print(
        f"{label:<48} p50 {pct(xs, 0.5) * 1e6:7.0f} µs   p90 {pct(xs, 0.9) * 1e6:7.0f} µs   "
        f"p99 {pct(xs, 0.99) * 1e6:7.0f} µs   mean {statistics.mean(xs) * 1e6:7.0f} µs"
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/mcp-manifest")
    ap.add_argument("-n", type=int, default=2000)
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    d, db = fixture()
    manifest = os.path.join(d, "mcp-server.toml")
    n = args.n
    ids = [i % 100 + 1 for i in range(n)]

    print(f"{n} sequential requests each; SQLite via sqlx in mcp-manifest ({binary})")
    report("mcp-manifest: table read (100 rows)", server_reads(binary, manifest, ["sqlite://bench/tables/items"] * n))
    report(
        "mcp-manifest: named query, 1 bound param",
        server_reads(binary, manifest, [f"sqlite://bench/queries/by_id?id={i}" for i in ids]),
    )
    cli = shutil.which("sqlite3")
    if cli and shutil.which("stdbuf"):
        version = subprocess.run([cli, "--version"], capture_output=True, text=True).stdout.split()[0]
        report(f"sqlite3 CLI {version}: same table query", cli_reads(cli, db, [TABLE_SQL + ";"] * n))
        report(
            f"sqlite3 CLI {version}: same query, .parameter set",
            cli_reads(cli, db, [f".parameter set :id {i}\n{QUERY_SQL};" for i in ids]),
        )
    else:
        print("sqlite3 CLI (or stdbuf) not found: its column is skipped")
    table, query = python_reads(db, n)
    report(f"python sqlite3 {sqlite3.sqlite_version} in-process: table", table)
    report(f"python sqlite3 {sqlite3.sqlite_version} in-process: query", query)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
