#!/usr/bin/env python3
"""Memory and liveness under hostile loads (a benchmark, not a test): the loads of issue 9 item 3.

  pipelined  N `resources/read` of a 1 MiB file written at once, answers read as they come:
             peak RSS (VmHWM) and time;
  stalled    the same reads, but the client reads nothing for a while: RSS over that time,
             then it reads everything and a `ping` written last must be answered;
  cancel     260 slow `tools/call`, then `notifications/cancelled` for each, then `ping`:
             how long the ping takes, and how many tool processes are left;
  same-id    2 000 slow `tools/call` with the same id: the most tool processes at once;
  listens    300 `subscriptions/listen` (2026-07-28), then a `resources/list`: its latency.

Usage: cargo build --release && python3 scripts/bench_memory.py [--bin B] [--reads N]
       [--only pipelined,stalled,...]
"""

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time

from mcp_bench import INIT_PARAMS, line

MIB = 1024 * 1024
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


def fixture():
    d = tempfile.mkdtemp(prefix="mcp-bench-mem-")
    os.makedirs(os.path.join(d, "docs"))
    with open(os.path.join(d, "docs", "big.bin"), "wb") as f:
        f.write(os.urandom(MIB))
    with open(os.path.join(d, "mcp-server.toml"), "w") as f:
        f.write(
            '[files.docs]\nroot = "docs"\n\n'
            '[tools.slow]\ndescription = "sleeps"\ncommand = ["sleep", "60"]\n'
        )
    return d


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            if ln.startswith(key + ":"):
                return int(ln.split()[1]) * 1024
    return 0


def children(pid):
    n = 0
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        n += 1
            except (OSError, ValueError, IndexError):
                pass
    return n


class Raw:
    """The server on raw pipes: writes from a thread, reads whole chunks and counts lines."""

    def __init__(self, binary, d):
        self.p = subprocess.Popen(
            [binary, "serve", os.path.join(d, "mcp-server.toml")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        self.buf = b""

    def write(self, data):
        self.p.stdin.write(data)

    def write_async(self, data):
        t = threading.Thread(target=self._write_quietly, args=(data,), daemon=True)
        t.start()
        return t

    def _write_quietly(self, data):
        try:
            self.p.stdin.write(data)
        except (BrokenPipeError, ValueError):
            pass

    def lines_until(self, pred, limit=None):
        """Reads lines until `pred(line)` holds; returns (lines read, that line)."""
        n = 0
        fd = self.p.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                ln, self.buf = self.buf.split(b"\n", 1)
                n += 1
                if pred(ln):
                    return n, ln
            chunk = os.read(fd, 4 * MIB)
            if not chunk:
                raise SystemExit(f"the server closed stdout after {n} lines")
            self.buf += chunk

    def count_lines(self, want):
        """Reads until `want` lines have been read (fast: counts newlines in big chunks)."""
        n = self.buf.count(b"\n")
        self.buf = b""
        fd = self.p.stdout.fileno()
        while n < want:
            chunk = os.read(fd, 4 * MIB)
            if not chunk:
                raise SystemExit(f"the server closed stdout after {n} lines")
            n += chunk.count(b"\n")
        return n

    def hwm(self):
        return status(self.p.pid, "VmHWM")

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def init(s):
    s.write(line({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INIT_PARAMS}))
    s.lines_until(lambda ln: b'"init"' in ln)
    s.write(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))


def reads(d, n, first_id=1):
    uri = "file://" + os.path.realpath(os.path.join(d, "docs", "big.bin"))
    return b"".join(
        line({"jsonrpc": "2.0", "id": first_id + i, "method": "resources/read", "params": {"uri": uri}})
        for i in range(n)
    )


def watch_rss(pid, stop, out):
    peak = 0
    while not stop.is_set():
        try:
            peak = max(peak, status(pid, "VmRSS"))
        except OSError:
            break
        time.sleep(0.05)
    out.append(peak)


def pipelined(binary, d, n):
    s = Raw(binary, d)
    try:
        init(s)
        t0 = time.perf_counter()
        s.write_async(reads(d, n))
        got = s.count_lines(n)
        took = time.perf_counter() - t0
        print(f"pipelined {n} reads of 1 MiB: {got} answers in {took:.1f} s, peak RSS {s.hwm() / MIB:.0f} MiB")
    except SystemExit as e:
        print(f"pipelined {n} reads of 1 MiB: FAILED ({e}); peak RSS before that: see dmesg")
    finally:
        s.close()


def stalled(binary, d, n, seconds):
    s = Raw(binary, d)
    try:
        init(s)
        s.write_async(reads(d, n) + line({"jsonrpc": "2.0", "id": "last-ping", "method": "ping"}))
        samples = []
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            time.sleep(0.5)
            samples.append(status(s.p.pid, "VmRSS") / MIB)
        rate = (samples[-1] - samples[0]) / (seconds - 0.5)
        t1 = time.perf_counter()
        got, _ = s.lines_until(lambda ln: b'"last-ping"' in ln)
        print(
            f"stalled client ({n} reads, {seconds} s without reading): RSS "
            f"{' '.join(f'{x:.0f}' for x in samples)} MiB (growth {rate:.1f} MiB/s); once it reads, "
            f"the ping comes after {got} lines in {time.perf_counter() - t1:.1f} s; peak RSS {s.hwm() / MIB:.0f} MiB"
        )
    finally:
        s.close()


def cancel(binary, d, n=260):
    s = Raw(binary, d)
    try:
        init(s)
        calls = b"".join(
            line({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call", "params": {"name": "slow", "arguments": {}}})
            for i in range(n)
        )
        s.write(calls)
        deadline = time.time() + 10
        while children(s.p.pid) < min(n, 16) and time.time() < deadline:
            time.sleep(0.05)
        cancels = b"".join(
            line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1000 + i}})
            for i in range(n)
        )
        t0 = time.perf_counter()
        s.write(cancels + line({"jsonrpc": "2.0", "id": "after", "method": "ping"}))
        got, _ = s.lines_until(lambda ln: b'"after"' in ln)
        took = time.perf_counter() - t0
        time.sleep(0.5)
        print(
            f"{n} slow tools/call, then {n} cancellations and a ping: ping answered in {took:.2f} s "
            f"({got - 1} other lines), tool processes left 0.5 s later: {children(s.p.pid)}"
        )
    finally:
        s.close()


def same_id(binary, d, n=2000):
    s = Raw(binary, d)
    try:
        init(s)
        call = line({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow", "arguments": {}}})
        s.write_async(call * n)
        peak = 0
        t0 = time.time()
        while time.time() - t0 < 3:
            peak = max(peak, children(s.p.pid))
            time.sleep(0.1)
        print(f"{n} slow tools/call with the same id: at most {peak} tool processes at once (3 s)")
        s.write(line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}))
    finally:
        s.close()


def listens(binary, d, n=300):
    s = Raw(binary, d)
    try:
        subs = b"".join(
            line({"jsonrpc": "2.0", "id": 5000 + i, "method": "subscriptions/listen",
                  "params": {"_meta": META, "notifications": {"toolsListChanged": True}}})
            for i in range(n)
        )
        s.write(subs)
        t0 = time.perf_counter()
        s.write(line({"jsonrpc": "2.0", "id": "list", "method": "resources/list", "params": {"_meta": META}}))
        result = {}

        def wait():
            try:
                result["got"] = s.lines_until(lambda ln: b'"list"' in ln and b'"method"' not in ln)
            except SystemExit:
                pass

        t = threading.Thread(target=wait, daemon=True)
        t.start()
        t.join(20)
        if "got" in result:
            print(f"{n} subscriptions/listen, then resources/list: answered in {time.perf_counter() - t0:.2f} s")
        else:
            print(f"{n} subscriptions/listen, then resources/list: NOT answered within 20 s")
    finally:
        s.p.kill()
        s.p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/mcp-manifest")
    ap.add_argument("--reads", type=int, default=3000)
    ap.add_argument("--stalled-reads", type=int, default=3000)
    ap.add_argument("--stall", type=float, default=4.0)
    ap.add_argument("--only", default="pipelined,stalled,cancel,same-id,listens")
    a = ap.parse_args()
    d = fixture()
    only = a.only.split(",")
    if "pipelined" in only:
        pipelined(a.bin, d, a.reads)
    if "stalled" in only:
        stalled(a.bin, d, a.stalled_reads, a.stall)
    if "cancel" in only:
        cancel(a.bin, d)
    if "same-id" in only:
        same_id(a.bin, d)
    if "listens" in only:
        listens(a.bin, d)


if __name__ == "__main__":
    main()
