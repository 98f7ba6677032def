#!/usr/bin/env python3
"""The official MCP Python SDK (`mcp` on PyPI) against `mcp-manifest serve --http`.

    http_interop.py legacy URL FIXTURES     handshake era (initialize, session, GET stream)
    http_interop.py modern URL FIXTURES     2026-07-28 (server/discover, no session, listen)
    http_interop.py roundrobin URL N        N 2026-07-28 requests through a proxy; every answer
                                            checked, and more than one instance must answer
    http_interop.py resume URL FIXTURES ERA CUT
                                            the SDK through a loopback proxy that cuts a
                                            connection mid-call (CUT: tool, read, get, or
                                            random:N); prints one JSON line: was everything
                                            received, and how many duplicates (ERA: legacy or
                                            modern)
    http_interop.py proxy URL               the cutting proxy alone, for another client: prints
                                            `port N`, then takes `plan CUT` lines on stdin and
                                            answers each with `cuts N` (the cuts of the last plan)

FIXTURES is the folder served by the conformance manifest (scripts/http-interop.sh writes it):
the checks list, read, read templates, call a tool, and subscribe then change a file and wait
for `notifications/resources/updated`. Exit 0 when every check passed; the first failure is
printed and exits 1.
"""

import asyncio
import json
import os
import random
import sys
import time
import urllib.error
import urllib.request
import warnings

from mcp import Client

TIMEOUT = 20
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*removed as of 2026-07-28.*")


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def common(client, fixtures, era):
    """list, read, templates, call — the same answers in both eras."""
    watched = os.path.join(fixtures, "watched.txt")
    resources = (await client.list_resources()).resources
    uris = [str(r.uri) for r in resources]
    check(f"file://{watched}" in uris, f"{era}: resources/list names the fixture files")
    static = await client.read_resource("test://static-text")
    check(
        static.contents[0].text == "This is the content of the static text resource.",
        f"{era}: resources/read of a text resource",
    )
    binary = await client.read_resource("test://static-binary")
    check(
        getattr(binary.contents[0], "blob", None) and binary.contents[0].mime_type == "image/png",
        f"{era}: resources/read of a binary resource (blob)",
    )
    templates = (await client.list_resource_templates()).resource_templates
    check(
        any(t.uri_template == "test://template/{id}/data" for t in templates),
        f"{era}: resources/templates/list",
    )
    data = await client.read_resource("test://template/42/data")
    check(
        json.loads(data.contents[0].text) == {"id": "42", "templateTest": True, "data": "Data for ID: 42"},
        f"{era}: resources/read through a template",
    )
    tools = [t.name for t in (await client.list_tools()).tools]
    check("test_simple_text" in tools, f"{era}: tools/list")
    called = await client.call_tool("test_simple_text", {})
    check(
        not called.is_error and text_of(called) == "This is a simple text response for testing.",
        f"{era}: tools/call",
    )
    failed = await client.call_tool("test_error_handling", {})
    check(failed.is_error, f"{era}: a failing tool is an isError result")
    prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
    check("arg1='a', arg2='b'" in prompt.messages[0].content.text, f"{era}: prompts/get")


def watched_uri(fixtures):
    """The fixture file the checks change (served by the manifest's files source)."""
    return "file://" + os.path.realpath(os.path.join(fixtures, "watched.txt"))


async def legacy(url, fixtures):
    updates = asyncio.Queue()

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            await updates.put(str(root.params.uri))

    async with Client(url, mode="legacy", message_handler=on_message, cache=None) as client:
        check(client.protocol_version == "2025-11-25", "legacy: initialize negotiates 2025-11-25")
        await common(client, fixtures, "legacy")
        watched = watched_uri(fixtures)
        await client.subscribe_resource(watched)
        with open(os.path.join(fixtures, "watched.txt"), "a") as f:
            f.write(f"changed {time.time()}\n")
        uri = await asyncio.wait_for(updates.get(), TIMEOUT)
        check(uri == watched, "legacy: subscribe → notifications/resources/updated")


async def modern(url, fixtures):
    async with Client(url, cache=None) as client:
        check(client.protocol_version == "2026-07-28", "modern: server/discover negotiates 2026-07-28")
        await common(client, fixtures, "modern")
        watched = watched_uri(fixtures)
        async with client.listen(resource_subscriptions=[watched]) as sub:
            with open(os.path.join(fixtures, "watched.txt"), "a") as f:
                f.write(f"changed {time.time()}\n")
            event = await asyncio.wait_for(sub.__anext__(), TIMEOUT)
            check(getattr(event, "uri", None) == watched, "modern: subscriptions/listen → resources/updated")


async def roundrobin(url, n):
    """Each request on its own connection through the proxy; the proxy adds X-Upstream."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "roundrobin", "version": "1"},
    }
    upstreams = set()
    for i in range(n):
        arg = f"{i}"
        uri = f"test://template/{arg}/data"
        body = {"jsonrpc": "2.0", "id": i, "method": "resources/read", "params": {"uri": uri, "_meta": meta}}
        req = urllib.request.Request(
            url,
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "resources/read",
                "mcp-name": uri,
            },
        )
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
                answer = json.loads(r.read())
                upstreams.add(r.headers.get("x-upstream"))
        except urllib.error.HTTPError as e:
            check(False, f"round robin: request {i} answered {e.code}: {e.read()!r}")
        content = json.loads(answer["result"]["contents"][0]["text"])
        if answer["id"] != i or content["id"] != arg:
            check(False, f"round robin: request {i} got a wrong answer: {answer}")
    check(True, f"round robin: {n} answers correct")
    check(len(upstreams) > 1, f"round robin: answered by {len(upstreams)} instances {sorted(upstreams)}")
    # A whole SDK client (discover, list, call) through the proxy too.
    async with Client(url, cache=None) as client:
        for _ in range(5):
            called = await client.call_tool("test_simple_text", {})
            check(not called.is_error, "round robin: the SDK's calls through the proxy")


# ---- the cutting proxy ---------------------------------------------------------------------------


class Proxy:
    """A loopback TCP proxy in front of the server that cuts connections while they carry an
    SSE response, as a plan says:

    - `tool`: the first POST stream, right after it forwarded a progress notification;
    - `read`: the first POST stream carrying `"contents"`, halfway through that piece;
    - `get`: the first GET stream, right after it forwarded a `resources/updated`;
    - `random:N`: N cuts, each of a stream (POST or GET) after a random 1..3000 bytes once it
      has forwarded an event id (a client can only resume from one); each stream (the `s` of
      its event ids `s.n`) is cut once at most: both SDKs give up a stream after two failed
      reconnections in a row, and the Python SDK gives up its GET stream after two cuts in all;
    - `none`: never.

    A cut closes both sides at once (no FIN of the body: the client sees the stream break)."""

    def __init__(self, upstream):
        host, port = upstream.split("//", 1)[-1].split("/", 1)[0].rsplit(":", 1)
        self.upstream = (host, int(port))
        self.plan = "none"
        self.cuts = 0
        self.budget = 0
        self.rng = random.Random(20260728)
        self.cut_streams = set()

    def set_plan(self, plan):
        self.plan = plan
        self.cuts = 0
        self.budget = int(plan.split(":")[1]) if plan.startswith("random:") else 1

    async def start(self):
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def serve(self, c_reader, c_writer):
        try:
            s_reader, s_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            c_writer.close()
            return
        state = {"request": b"", "sse": False, "sent": 0, "ids": False, "at": None, "stream": None}

        def cut():
            for w in (c_writer, s_writer):
                t = w.transport
                if t is not None:
                    t.abort()

        async def up():
            try:
                while data := await c_reader.read(65536):
                    head = data.split(b"\r\n", 1)[0]
                    if head.startswith((b"GET ", b"POST ", b"DELETE ")):
                        state.update(request=head, sse=False, sent=0, ids=False, at=None,
                                     stream=stream_of(data, b"\r\nlast-event-id:"))
                    s_writer.write(data)
                    await s_writer.drain()
            except (OSError, ConnectionError):
                pass
            finally:
                try:
                    s_writer.close()
                except OSError:
                    pass

        async def down():
            try:
                while data := await s_reader.read(65536):
                    if b"HTTP/1.1 " in data[:16] and b"text/event-stream" in data.lower():
                        state.update(sse=True, sent=0, ids=False, at=None)
                    n = self.cut_at(state, data) if state["sse"] and self.cuts < self.budget else None
                    if n is not None:
                        c_writer.write(data[:n])
                        await c_writer.drain()
                        self.cuts += 1
                        cut()
                        return
                    c_writer.write(data)
                    await c_writer.drain()
                    state["sent"] += len(data)
                    state["ids"] = state["ids"] or b"\nid:" in data or data.startswith(b"id:")
                    if state["stream"] is None:
                        state["stream"] = stream_of(data, b"\nid:")
            except (OSError, ConnectionError):
                pass
            finally:
                try:
                    c_writer.close()
                except OSError:
                    pass

        await asyncio.gather(up(), down())

    def cut_at(self, state, data):
        """Where to cut this piece of an SSE response (None: not here)."""
        plan, request = self.plan, state["request"]
        if plan == "tool" and request.startswith(b"POST") and b"notifications/progress" in data:
            return len(data)
        if plan == "read" and request.startswith(b"POST") and b'"contents"' in data:
            return len(data) // 2
        if plan == "get" and request.startswith(b"GET") and b"resources/updated" in data:
            return len(data)
        if plan.startswith("random:"):
            if not state["ids"] or state["stream"] in self.cut_streams:
                return None
            if state["at"] is None:
                state["at"] = state["sent"] + self.rng.randint(1, 3000)
            if state["sent"] + len(data) >= state["at"]:
                self.cut_streams.add(state["stream"])
                return max(0, state["at"] - state["sent"])
        return None


def stream_of(data, field):
    """The stream number `s` of the first event id `s.n` after `field` in `data`."""
    at = data.lower().find(field)
    if at < 0:
        return None
    value = data[at + len(field):].split(b"\n", 1)[0].strip()
    return value.split(b".", 1)[0] or None


async def proxy_alone(url):
    """`proxy URL`: the proxy for a client in another process (see the module doc)."""
    proxy = Proxy(url)
    port = await proxy.start()
    print(f"port {port}", flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    last = None
    while line := await reader.readline():
        word, _, arg = line.decode().strip().partition(" ")
        if word == "plan":
            proxy.set_plan(arg)
            last = arg
        elif word == "cuts":
            print(f"cuts {proxy.cuts} {last}", flush=True)


# ---- resumption through the proxy ----------------------------------------------------------------


class Seen:
    """Every SSE event the SDK's transport handles, counted by what it says (an event id can be
    on a replay; what must not repeat is the message)."""

    def __init__(self):
        self.keys = {}

    def add(self, data):
        try:
            m = json.loads(data)
        except ValueError:
            return
        if m.get("method") == "notifications/progress":
            p = m["params"]
            key = ("progress", str(p["progressToken"]), p["progress"])
        elif m.get("method") == "notifications/resources/updated":
            key = ("updated", m["params"]["uri"])
        elif "id" in m and ("result" in m or "error" in m):
            key = ("answer", json.dumps(m["id"]))
        else:
            key = ("other", data)
        self.keys[key] = self.keys.get(key, 0) + 1

    def duplicates(self):
        return sum(n - 1 for n in self.keys.values())

    def repeated(self):
        return [repr(k)[:80] for k, n in self.keys.items() if n > 1][:5]


def watch_events(seen):
    """Counts what the SDK's transport receives (the events it hands on, replays included)."""
    from mcp.client import streamable_http as sh

    original = sh.StreamableHTTPTransport._handle_sse_event

    async def counting(self, sse, *args, **kwargs):
        if sse.event == "message" and sse.data:
            seen.add(sse.data)
        return await original(self, sse, *args, **kwargs)

    sh.StreamableHTTPTransport._handle_sse_event = counting


async def resume(url, fixtures, era, cut):
    seen = Seen()
    watch_events(seen)
    proxy = Proxy(url)
    port = await proxy.start()
    proxied = f"http://127.0.0.1:{port}/mcp"
    outcome = {"client": "python", "era": era, "cut": cut, "received": False}
    updates = asyncio.Queue()

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            await updates.put(str(root.params.uri))

    mode = "legacy" if era == "legacy" else "2026-07-28"
    big = "".join(f"{i:07d} resumable bytes\n" for i in range(30_000))
    with open(os.path.join(fixtures, "big.txt"), "w") as f:
        f.write(big)
    # The files to change, made now (well before they are watched: their creation is not a
    # change the checks wait for), five a round.
    round_names = lambda r: [f"py-watched-{r}-{i}.txt" for i in range(5)]  # noqa: E731
    for r in range(41):
        for n in round_names(r):
            with open(os.path.join(fixtures, n), "w") as f:
                f.write("0\n")
    names = round_names(0)
    await asyncio.sleep(1.5)
    uri = lambda n: "file://" + os.path.realpath(os.path.join(fixtures, n))  # noqa: E731
    try:
        async with Client(proxied, mode=mode, message_handler=on_message, cache=None,
                          read_timeout_seconds=TIMEOUT) as client:
            proxy.set_plan(cut)
            if cut == "tool":
                outcome["received"] = await one_tool(client, outcome)
            elif cut == "read":
                got = await client.read_resource(uri("big.txt"))
                outcome["received"] = got.contents[0].text == big
            elif cut == "get":
                outcome["received"] = await changes(client, fixtures, names, uri, updates, era)
            elif cut.startswith("random:"):
                ok = True
                deadline = time.monotonic() + 120
                rounds = 0
                while proxy.cuts < proxy.budget and time.monotonic() < deadline and ok:
                    rounds += 1
                    # Files of their own each round: an `updated` is told apart by its file.
                    names = round_names(min(rounds, 40))
                    results = await asyncio.gather(
                        one_tool(client, outcome),
                        client.read_resource(uri("big.txt")),
                        changes(client, fixtures, names, uri, updates, era, outcome),
                        return_exceptions=True,
                    )
                    read_ok = (not isinstance(results[1], BaseException)
                               and results[1].contents[0].text == big)
                    ok = results[0] is True and read_ok and results[2] is True
                    if not ok:
                        outcome["error"] = repr({"tool": results[0], "read": read_ok or results[1],
                                                 "changes": results[2]})[:400]
                outcome["received"] = ok
    except BaseException as e:  # the SDK's failure is the outcome
        outcome["error"] = repr(e)[:300]
    outcome["cuts"] = proxy.cuts
    outcome["duplicates"] = seen.duplicates()
    if outcome["duplicates"]:
        outcome["repeated"] = seen.repeated()
    print(json.dumps(outcome), flush=True)


async def one_tool(client, outcome):
    """A 3-second tool with progress: its answer, and its progress every half second with no gap
    (a lost event leaves one) and none twice."""
    seen = []

    async def on_progress(progress, total, message):
        seen.append(progress)

    result = await client.call_tool("slow", {"secs": "3"}, progress_callback=on_progress)
    gaps = [b - a for a, b in zip(seen, seen[1:]) if b - a > 0.9]
    if gaps or len(seen) < 4:
        outcome["progress"] = seen
    return not result.is_error and "done" in text_of(result) and not gaps and len(seen) >= 4


async def changes(client, fixtures, names, uri, updates, era, outcome=None):
    """Each of five files changed once: one `updated` for each."""
    if era != "legacy":
        return True  # 2026-07-28 has no GET stream (subscriptions/listen instead)
    for n in names:
        await client.subscribe_resource(uri(n))
    while not updates.empty():
        updates.get_nowait()
    for n in names:
        with open(os.path.join(fixtures, n), "a") as f:
            f.write(f"{time.time()}\n")
        await asyncio.sleep(0.4)
    got = set()
    try:
        while len(got) < len(names):
            got.add(await asyncio.wait_for(updates.get(), TIMEOUT))
    except asyncio.TimeoutError:
        if outcome is not None:
            outcome["missing"] = sorted({uri(n) for n in names} - got)
        return False
    for n in names:
        await client.unsubscribe_resource(uri(n))
    return got == {uri(n) for n in names}


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "resume":
        asyncio.run(resume(*sys.argv[2:]))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "proxy":
        asyncio.run(proxy_alone(sys.argv[2]))
        return
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    what, url, arg = sys.argv[1:]
    if what == "legacy":
        asyncio.run(legacy(url, arg))
    elif what == "modern":
        asyncio.run(modern(url, arg))
    elif what == "roundrobin":
        asyncio.run(roundrobin(url, int(arg)))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
