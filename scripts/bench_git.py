#!/usr/bin/env python3
"""Git source benchmark for mcp-manifest (a benchmark, not a test).

Builds a repository of 10 000 commits (git fast-import, one pack, checked out), then measures in
the same run, interleaved in rounds so both sides see the same machine load:

  * `resources/read git://bench/log` (50 commits) and `git://bench/blob/REV/PATH`: the
    round-trip of one request through a running release server's stdio;
  * `git log -n 50 --oneline` and `git show REV:PATH`: the whole CLI process (spawn to exit,
    stdout read), since that is what a client without this server would run.

Prints p50 / p90 of each and the ratio server p50 / CLI p50 (the target is at most 2), and the
p50 of the first read of a fresh server, which opens the repository.

Usage: cargo build --release && python3 scripts/bench_git.py [--bin target/release/mcp-manifest]
       [--commits 10000] [--rounds 10] [--per-round 30]
"""

import argparse
import os
import subprocess
import tempfile
import time

from mcp_bench import Server, pct

ENV = dict(
    os.environ,
    GIT_CONFIG_NOSYSTEM="1",
    GIT_CONFIG_GLOBAL="/dev/null",
    GIT_AUTHOR_NAME="Bench",
    GIT_AUTHOR_EMAIL="bench@example.com",
    GIT_COMMITTER_NAME="Bench",
    GIT_COMMITTER_EMAIL="bench@example.com",
)

def git(repo, *args):
    return subprocess.run(
        ["git", *args], cwd=repo, env=ENV, check=True, capture_output=True
    ).stdout.decode()


def build_repo(d, commits):
    """A history of `commits` commits over 200 files in 10 folders, made by fast-import."""
    repo = os.path.join(d, "repo")
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    chunks = []
    t = 1_700_000_000
    for i in range(commits):
        path = f"src/m{i % 10}/file{i % 200:03}.txt"
        body = "".join(f"line {k} of commit {i}\n" for k in range(40)).encode()
        msg = f"commit {i}: touch {path}\n".encode()
        parts = [
            b"commit refs/heads/main\n",
            f"committer Bench <bench@example.com> {t + 60 * i} +0000\n".encode(),
            b"data %d\n" % len(msg),
            msg,
        ]
        if i == 0:
            readme = b"# Bench\n" + b"Some documentation text.\n" * 300
            parts += [b"M 100644 inline docs/README.md\n", b"data %d\n" % len(readme), readme]
        parts += [f"M 100644 inline {path}\n".encode(), b"data %d\n" % len(body), body, b"\n"]
        chunks.append(b"".join(parts))
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=repo,
        env=ENV,
        input=b"".join(chunks),
        check=True,
    )
    git(repo, "checkout", "-q", "-f", "main")
    return repo


def read(server, uri):
    return server.request("resources/read", {"uri": uri})["result"]["contents"][0]["text"]


def server_reads(server, uri, n):
    times = []
    for _ in range(n):
        took, resp = server.timed("resources/read", {"uri": uri})
        times.append(took)
        assert b'"text"' in resp, resp[:300]
    return times


def cli_runs(repo, argv, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=repo, env=ENV, check=True, stdout=subprocess.PIPE)
        times.append(time.perf_counter() - t0)
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/mcp-manifest")
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-round", type=int, default=30)
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)

    d = tempfile.mkdtemp(prefix="mcp-bench-git-")
    t0 = time.perf_counter()
    repo = build_repo(d, args.commits)
    count = git(repo, "rev-list", "--count", "HEAD").strip()
    print(f"repository: {count} commits, built in {time.perf_counter() - t0:.1f} s ({repo})")
    manifest = os.path.join(d, "mcp-server.toml")
    with open(manifest, "w") as f:
        f.write('[git.bench]\npath = "repo"\n')

    rev = git(repo, "rev-parse", "HEAD~1234").strip()
    path = "docs/README.md"
    log_uri = "git://bench/log"
    blob_uri = f"git://bench/blob/{rev}/{path}"

    p = Server(binary, manifest)
    # Same answers first: the server's log starts with the CLI's short hashes; the blob matches.
    text = read(p, log_uri)
    ours = [l.split("\t")[0] for l in text.splitlines()]
    theirs = [l.split(" ")[0] for l in git(repo, "log", "-n", "50", "--oneline").splitlines()]
    assert ours == theirs, (ours[:3], theirs[:3])
    assert read(p, blob_uri) == git(repo, "show", f"{rev}:{path}")

    series = {k: [] for k in ("log", "blob", "git log", "git show")}
    for _ in range(args.rounds):
        series["log"] += server_reads(p, log_uri, args.per_round)
        series["git log"] += cli_runs(repo, ["git", "log", "-n", "50", "--oneline"], args.per_round)
        series["blob"] += server_reads(p, blob_uri, args.per_round)
        series["git show"] += cli_runs(repo, ["git", "show", f"{rev}:{path}"], args.per_round)
    p.close()

    # The first read of a fresh server opens the repository (nothing is opened at start-up).
    first = {"log": [], "blob": []}
    for _ in range(20):
        for what, uri in (("log", log_uri), ("blob", blob_uri)):
            q = Server(binary, manifest)
            first[what].append(q.timed("resources/read", {"uri": uri})[0])
            q.close()

    n = args.rounds * args.per_round
    print(f"{n} samples each, interleaved in {args.rounds} rounds; times in ms")
    for ours, theirs, what in (("log", "git log", "log, 50 commits"), ("blob", "git show", "blob")):
        a, b = series[ours], series[theirs]
        print(
            f"{what:16} server p50 {pct(a, .5) * 1e3:6.2f}  p90 {pct(a, .9) * 1e3:6.2f} | "
            f"{theirs:8} p50 {pct(b, .5) * 1e3:6.2f}  p90 {pct(b, .9) * 1e3:6.2f} | "
            f"ratio p50 {pct(a, .5) / pct(b, .5):.2f}"
        )
    for what in ("log", "blob"):
        print(f"first {what} read of a fresh server (opens the repository): "
              f"p50 {pct(first[what], .5) * 1e3:.2f} ms (20 servers)")


if __name__ == "__main__":
    main()
