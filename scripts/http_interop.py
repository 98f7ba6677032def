#!/usr/bin/env python3
"""The official MCP Python SDK (`mcp` on PyPI) against `mcp-manifest serve --http`.

    http_interop.py legacy URL FIXTURES     handshake era (initialize, session, GET stream)
    http_interop.py modern URL FIXTURES     2026-07-28 (server/discover, no session, listen)
    http_interop.py roundrobin URL N        N 2026-07-28 requests through a proxy; every answer
                                            checked, and more than one instance must answer

FIXTURES is the folder served by the conformance manifest (scripts/http-interop.sh writes it):
the checks list, read, read templates, call a tool, and subscribe then change a file and wait
for `notifications/resources/updated`. Exit 0 when every check passed; the first failure is
printed and exits 1.
"""

import asyncio
import json
import os
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


def main():
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
