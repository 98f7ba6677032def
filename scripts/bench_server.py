#!/usr/bin/env python3
"""Foundation benchmarks for mcp-manifest (a benchmark, not a test).

Measures, against a release build:
  1. cold start: spawn → `initialize` answer, median of 20 runs;
  2. p50 / p90 / p99 of `resources/read` on a 1 KiB file, 2 000 sequential requests;
  3. requests/s of 20 000 pipelined `ping`s, and the server's peak RSS (VmHWM) after them.

Usage: cargo build --release && python3 scripts/bench_server.py [--bin target/release/mcp-manifest]
"""

import argparse
import os
import statistics
import tempfile
import time

from mcp_bench import INIT_PARAMS, Server, line, pct

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}


def fixture():
    d = tempfile.mkdtemp(prefix="mcp-bench-")
    os.makedirs(os.path.join(d, "docs"))
    with open(os.path.join(d, "docs", "one-kib.txt"), "w") as f:
        f.write(("0123456789abcdef" * 64))
    for i in range(200):
        with open(os.path.join(d, "docs", f"f{i:03}.md"), "w") as f:
            f.write(f"# file {i}\n")
    with open(os.path.join(d, "mcp-server.toml"), "w") as f:
        f.write('[files.docs]\nroot = "docs"\n')
    return d


def cold_start(binary, manifest, runs=20):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        server = Server(binary, manifest, initialize=False)
        server.send(INIT)
        server.readline()
        times.append(time.perf_counter() - t0)
        server.close()
    return times


def sequential(binary, manifest, method, params, n=2000):
    server = Server(binary, manifest)
    times = []
    for _ in range(n):
        took, resp = server.timed(method, params)
        times.append(took)
        assert b'"error"' not in resp, resp
    server.close()
    return times


def sequential_reads(binary, manifest, uri, n=2000):
    return sequential(binary, manifest, "resources/read", {"uri": uri}, n)


def pipelined_pings(binary, manifest, n=20000):
    server = Server(binary, manifest)
    payload = b"".join(line({"jsonrpc": "2.0", "id": i + 1, "method": "ping"}) for i in range(n))
    import threading

    t0 = time.perf_counter()
    writer = threading.Thread(target=lambda: server.write(payload))
    writer.start()
    got = 0
    while got < n:
        server.readline()
        got += 1
    elapsed = time.perf_counter() - t0
    writer.join()
    with open(f"/proc/{server.proc.pid}/status") as f:
        hwm = next(l for l in f if l.startswith("VmHWM")).split()[1]
    server.close()
    return got, elapsed, int(hwm)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/mcp-manifest")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    d = fixture()
    manifest = os.path.join(d, "mcp-server.toml")
    uri = "file://" + os.path.realpath(os.path.join(d, "docs", "one-kib.txt"))

    cs = cold_start(binary, manifest)
    print(f"cold start to initialize answer: median {statistics.median(cs) * 1e3:.2f} ms "
          f"(min {min(cs) * 1e3:.2f}, max {max(cs) * 1e3:.2f}, 20 runs)")
    rd = sequential_reads(binary, manifest, uri)
    print(f"resources/read 1 KiB, 2000 sequential: p50 {pct(rd, 0.5) * 1e6:.0f} µs, "
          f"p90 {pct(rd, 0.9) * 1e6:.0f} µs, p99 {pct(rd, 0.99) * 1e6:.0f} µs")
    pg = sequential(binary, manifest, "ping", {})
    print(f"ping, 2000 sequential (transport floor): p50 {pct(pg, 0.5) * 1e6:.0f} µs, "
          f"p90 {pct(pg, 0.9) * 1e6:.0f} µs")
    got, elapsed, hwm = pipelined_pings(binary, manifest)
    print(f"pipelined ping: {got} answers in {elapsed:.3f} s = {got / elapsed:,.0f} requests/s; "
          f"peak RSS {hwm / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
