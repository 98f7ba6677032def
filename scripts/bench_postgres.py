#!/usr/bin/env python3
"""PostgreSQL read latency and connection use of mcp-manifest (a benchmark, not a test).

Starts a throwaway cluster (initdb + postgres on a free 127.0.0.1 port, as `nobody` when run as
root), loads a 100-row table, and measures against a release build, N sequential requests each
(one in flight, over the server's stdin/stdout pipes, from writing the request line to reading
the answer line):
  1. `resources/read postgres://bench/tables/items` — the 100-row table (row_limit 100);
  2. `resources/read postgres://bench/queries/by_id?id=K` — a one-row named query.
In the same run, the same SQL through `psql -c` over the same connection type (TCP to
127.0.0.1, password authentication), which opens a connection per run as a script would, and
through one long-lived `psql` session fed on a pipe (the floor: one round trip, no transaction).

Then the connections the server holds (pg_stat_activity, application_name = 'mcp-manifest'):
before any request, after the sequential reads (idle), and while 10 reads are in flight (10
pipelined requests of a query that takes 300 ms; max_connections = 4).

Usage: cargo build --release && python3 scripts/bench_postgres.py [--bin target/release/mcp-manifest] [-n 2000]
Needs: python3, the PostgreSQL server binaries (initdb, postgres) and psql.
"""

import argparse
import glob
import os
import pwd
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

from mcp_bench import Server, line, pct

PASSWORD = "bench-pw"
TABLE_SQL = "SELECT * FROM items"
QUERY_SQL = "SELECT id, name, price, qty FROM items WHERE id = :id"


def find_bin():
    if os.environ.get("PG_BIN"):
        return os.environ["PG_BIN"]
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    for d in reversed(dirs):
        if os.path.exists(os.path.join(d, "initdb")):
            return d
    raise SystemExit("no PostgreSQL server binaries: install postgresql-15 or set PG_BIN")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Cluster:
    def __init__(self):
        self.bin = find_bin()
        # Under /tmp when run as root: `nobody` must reach it whatever TMPDIR says.
        self.dir = tempfile.mkdtemp(prefix="mcp-bench-pg-", dir="/tmp" if os.geteuid() == 0 else None)
        self.port = free_port()
        self.sock = os.path.join(self.dir, "sock")
        os.mkdir(self.sock)
        self.owner = None
        if os.geteuid() == 0:
            pw = pwd.getpwnam("nobody")
            self.owner = (pw.pw_uid, pw.pw_gid)
            for p in (self.dir, self.sock):
                os.chown(p, *self.owner)
        pwfile = os.path.join(self.dir, "pw")
        with open(pwfile, "w") as f:
            f.write(PASSWORD)
        os.chmod(pwfile, 0o644)
        self.run([os.path.join(self.bin, "initdb"), "-D", self.data(), "-U", "postgres",
                  "--pwfile", pwfile, "--auth-local=trust", "--auth-host=scram-sha-256",
                  "--encoding=UTF8", "--locale=C", "--no-sync"])
        log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(self.bin, "postgres"), "-D", self.data(), "-p", str(self.port),
             "-k", self.sock, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
            stdout=subprocess.DEVNULL, stderr=log, preexec_fn=self.demote)
        for _ in range(600):
            if subprocess.run(["psql", "-X", "-q", "-h", self.sock, "-p", str(self.port), "-U",
                               "postgres", "-c", "SELECT 1"], capture_output=True).returncode == 0:
                return
            time.sleep(0.05)
        raise SystemExit("postgres did not start")

    def data(self):
        return os.path.join(self.dir, "data")

    def demote(self):
        if self.owner:
            os.setgid(self.owner[1])
            os.setuid(self.owner[0])

    def run(self, argv):
        subprocess.run(argv, check=True, capture_output=True, preexec_fn=self.demote)

    def sql(self, db, sql):
        out = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-h", self.sock, "-p", str(self.port),
                              "-U", "postgres", "-d", db, "-c", sql],
                             check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def stop(self):
        self.proc.send_signal(2)
        self.proc.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


def psql_c(cluster, sql, n):
    env = dict(os.environ, PGPASSWORD=PASSWORD)
    argv = ["psql", "-X", "-q", "-A", "-h", "127.0.0.1", "-p", str(cluster.port), "-U", "postgres",
            "-d", "bench", "-c", sql]
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - t0)
    return times


def psql_session(cluster, sql, n):
    """One psql process on one connection, fed on a pipe; `\\echo` marks the end of each answer."""
    env = dict(os.environ, PGPASSWORD=PASSWORD)
    p = subprocess.Popen(["psql", "-X", "-q", "-A", "-h", "127.0.0.1", "-p", str(cluster.port), "-U",
                          "postgres", "-d", "bench"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)
    script = (sql + ";\n\\echo __end__\n").encode()
    times = []
    for _ in range(n + 1):
        t0 = time.perf_counter()
        p.stdin.write(script)
        p.stdin.flush()
        while p.stdout.readline().strip() != b"__end__":
            pass
        times.append(time.perf_counter() - t0)
    p.stdin.close()
    p.wait(timeout=10)
    return times[1:]  # the first one waited for the connection


def server_reads(server, uris):
    times = []
    for uri in uris:
        took, resp = server.timed("resources/read", {"uri": uri})
        if b'"result"' not in resp:
            raise SystemExit(f"unexpected answer for {uri}: {resp[:300]!r}")
        times.append(took)
    return times


def connections(cluster):
    return int(cluster.sql("postgres", "SELECT count(*) FROM pg_stat_activity "
                                       "WHERE application_name = 'mcp-manifest'"))


def row(label, xs):
    ms = [x * 1000 for x in xs]
    return f"{label:<44} p50 {pct(ms, 0.5):7.3f} ms   p90 {pct(ms, 0.9):7.3f} ms   mean {statistics.mean(ms):7.3f} ms   n={len(ms)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/mcp-manifest")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--psql-n", type=int, default=200)
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    cluster = Cluster()
    d = tempfile.mkdtemp(prefix="mcp-bench-pg-manifest-")
    try:
        cluster.sql("postgres", "CREATE DATABASE bench")
        cluster.sql("bench", "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2), "
                             "qty int, note text); INSERT INTO items SELECT g, 'item ' || g, g * 1.25, "
                             "g % 7, CASE WHEN g % 3 = 0 THEN 'sale' END FROM generate_series(1, 100) g")
        manifest = os.path.join(d, "mcp-server.toml")
        with open(manifest, "w") as f:
            f.write(
                f'[postgres.bench]\nurl = "postgres://postgres:{PASSWORD}@127.0.0.1:{cluster.port}/bench"\n'
                "row_limit = 100\nmax_connections = 4\n\n"
                f'[postgres.bench.queries.by_id]\nsql = "{QUERY_SQL}"\nparams.id = {{ type = "integer" }}\n\n'
                '[postgres.bench.queries.slow]\nsql = "SELECT pg_sleep(0.3), :id AS id"\n'
                'params.id = { type = "integer" }\n'
            )
        server = Server(binary, manifest)
        idle_before = connections(cluster)
        table = server_reads(server, ["postgres://bench/tables/items"] * args.n)
        query = server_reads(server, [f"postgres://bench/queries/by_id?id={i % 100 + 1}"
                                      for i in range(args.n)])
        idle_after = connections(cluster)
        # 10 reads in flight at once.
        for i in range(10):
            server.proc.stdin.write(line({"jsonrpc": "2.0", "id": 10_000 + i, "method": "resources/read",
                                          "params": {"uri": f"postgres://bench/queries/slow?id={i}"}}))
        server.proc.stdin.flush()
        time.sleep(0.15)
        busy = connections(cluster)
        for _ in range(10):
            server.readline()
        server.close()
        psql_table = psql_c(cluster, TABLE_SQL, args.psql_n)
        psql_query = psql_c(cluster, QUERY_SQL.replace(":id", "42"), args.psql_n)
        session_table = psql_session(cluster, TABLE_SQL, args.n)
        session_query = psql_session(cluster, QUERY_SQL.replace(":id", "42"), args.n)
        print(row("mcp-manifest: 100-row table read", table))
        print(row("psql -c: SELECT * FROM items (TCP, password)", psql_table))
        print(row("psql, one session: SELECT * FROM items", session_table))
        print(row("mcp-manifest: one-row named query", query))
        print(row("psql -c: one-row query (TCP, password)", psql_query))
        print(row("psql, one session: one-row query", session_query))
        print(f"connections held by the server: before any request {idle_before}, "
              f"idle after the reads {idle_after}, with 10 reads in flight {busy} (max_connections 4)")
    finally:
        cluster.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
