#!/usr/bin/env python3
"""Tool-call overhead: p50 of `tools/call` of a tool that runs `true`, through the server over
stdio, against spawning `true` directly from this Python loop (output captured the same way), in
the same run.

Usage:
    cargo build --release
    python3 scripts/bench_tools.py [--binary target/release/mcp-manifest] [--calls 1000]

The two loops alternate in rounds so that machine load affects both alike. Target: the server's
p50 at most 1.5x the direct spawn's p50.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from mcp_bench import Server, pct

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BINARY = os.path.join(HERE, "..", "target", "release", "mcp-manifest")

MANIFEST = """
[server]
resource_tools = false

[tools.nothing]
description = "Runs true"
command = ["true"]
"""


def time_server_call(server):
    took, raw = server.timed("tools/call", {"name": "nothing", "arguments": {}})
    answer = json.loads(raw)
    if answer.get("result", {}).get("isError") is not False:
        sys.exit(f"the tool call failed: {answer}")
    return took


def time_direct_spawn():
    start = time.perf_counter()
    subprocess.run(
        ["true"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True
    )
    return time.perf_counter() - start


def time_posix_spawn(devnull):
    """The cheapest direct spawn Python has: posix_spawn, output to /dev/null, no pipes."""
    start = time.perf_counter()
    pid = os.posix_spawnp(
        "true",
        ["true"],
        os.environ,
        file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)],
    )
    os.waitpid(pid, 0)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=DEFAULT_BINARY)
    ap.add_argument("--calls", type=int, default=1000, help="calls of each kind")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    if not os.path.exists(args.binary):
        sys.exit(f"{args.binary} does not exist: run `cargo build --release` first")

    with tempfile.TemporaryDirectory() as tmp:
        manifest = os.path.join(tmp, "mcp-server.toml")
        with open(manifest, "w") as f:
            f.write(MANIFEST)
        server = Server(args.binary, manifest)

        devnull = os.open(os.devnull, os.O_RDWR)
        for _ in range(50):  # warm-up
            time_server_call(server)
            time_direct_spawn()
            time_posix_spawn(devnull)

        via_server, direct, bare = [], [], []
        per_round = max(1, args.calls // args.rounds)
        for _ in range(args.rounds):
            via_server += [time_server_call(server) for _ in range(per_round)]
            direct += [time_direct_spawn() for _ in range(per_round)]
            bare += [time_posix_spawn(devnull) for _ in range(per_round)]
        server.close()

    ms = lambda s: f"{s * 1000:.3f} ms"
    print(f"calls of each kind: {len(direct)} ({args.rounds} alternating rounds)")
    print(f"{'':40} {'p50':>10} {'p90':>10} {'mean':>10}")
    rows = (
        ("direct: subprocess.run, output captured", direct),
        ("direct: posix_spawn, output to /dev/null", bare),
        ("tools/call via the server (stdio)", via_server),
    )
    for name, v in rows:
        print(f"{name:40} {ms(pct(v, 0.5)):>10} {ms(pct(v, 0.9)):>10} {ms(statistics.mean(v)):>10}")
    print(
        f"p50 ratio, server / subprocess.run: {pct(via_server, 0.5) / pct(direct, 0.5):.2f}x (target <= 1.5x)"
    )
    print(f"p50 ratio, server / posix_spawn:    {pct(via_server, 0.5) / pct(bare, 0.5):.2f}x")


if __name__ == "__main__":
    main()
