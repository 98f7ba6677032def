"""What every benchmark script needs: a release server on stdio pipes, timed requests, percentiles.

Imported by scripts/bench_*.py (run them as `python3 scripts/bench_x.py`; their folder is on the
import path).
"""

import json
import subprocess
import time

INIT_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"},
}


def line(msg):
    return (json.dumps(msg) + "\n").encode()


class Server:
    """`mcp-manifest serve MANIFEST` with buffered pipes: readline() on an unbuffered pipe makes
    one system call per byte, which on a few KiB of answer costs the client more than the server
    spends on the request."""

    def __init__(self, binary, manifest, initialize=True):
        self.proc = subprocess.Popen(
            [binary, "serve", manifest],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0
        if initialize:
            self.request("initialize", INIT_PARAMS)
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.write(line(msg))

    def write(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def readline(self):
        got = self.proc.stdout.readline()
        if not got:
            raise SystemExit("the server closed stdout")
        return got

    def timed(self, method, params):
        """One request → (seconds from writing it to reading its answer line, the raw answer).
        Anything that is not the answer (a notification) is skipped but counted in the time."""
        self.next_id += 1
        req = line({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        t0 = time.perf_counter()
        self.write(req)
        while True:
            raw = self.readline()
            took = time.perf_counter() - t0  # before parsing: the client's JSON is not ours
            if json.loads(raw).get("id") == self.next_id:
                return took, raw

    def request(self, method, params):
        return json.loads(self.timed(method, params)[1])

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=5)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]
