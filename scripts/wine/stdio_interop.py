#!/usr/bin/env python3
"""The official MCP Python SDK (`mcp` on PyPI) driving the Windows binary under Wine over stdio.

    stdio_interop.py RUNNER EXE      RUNNER runs a Windows program under Wine
                                     (scripts/windows-tests.sh writes it); EXE is mcp-manifest.exe

The same scenarios as the Linux build's HTTP interop (scripts/http_interop.py), over stdio, in
both protocol eras: list (file URIs are `file:///C:/…`, RFC 8089, never `\\\\?\\` verbatim paths),
read text and binary, read through a template (a file template and a `command` template whose
value is one argument of a Windows program), call a `cmd` script tool and a failing one (an
`isError` result), get a prompt with arguments, subscribe then change a file and wait for
`notifications/resources/updated` (ReadDirectoryChangesW through Wine). The manifest and its
fixtures are written to a temp folder here; the tools use only programs every Windows has
(`cmd`) and the binary itself. Exit 0 when every check passed; the first failure exits 1.
"""

import asyncio
import os
import sys
import tempfile
import time
import warnings

from mcp import Client, StdioServerParameters

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from http_interop import check, text_of  # noqa: E402 (the same checks as the HTTP interop)

TIMEOUT = 60  # Wine starts a process in ~1 s; a loaded 2-core machine makes that several
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*removed as of 2026-07-28.*")

MANIFEST = """
[server]
name = "wine-stdio"
resource_tools = false

[files.fixtures]
root = "fixtures"
description = "Fixtures"
watch = true

[templates.static_text]
uri = "test://static-text"
mime_type = "text/plain"
file = "fixtures/static-text.txt"

[templates.static_binary]
uri = "test://static-binary"
mime_type = "image/png"
file = "fixtures/static-binary.png"

[templates.data]
uri = "test://data/{id}"
mime_type = "application/json"
file = "fixtures/data/{id}.json"

[templates.completions]
uri = "test://completions/{shell}"
description = "The binary's completion script for a shell (a command template on Windows)"
command = [EXE, "completions", "{shell}"]
vars.shell = { type = "string", enum = ["bash", "powershell"] }

[tools.test_simple_text]
description = "Returns simple text (a cmd script)"
shell = "cmd"
run = "echo This is a simple text response for testing."
read_only = true

[tools.test_error_handling]
description = "Always fails"
shell = "cmd"
run = "echo This tool intentionally fails 1>&2 & exit /b 3"

[tools.version]
description = "The binary's version (a command tool on Windows)"
command = [EXE, "--version"]

[prompts.test_prompt_with_arguments]
description = "A prompt with arguments"
args.arg1 = { description = "First", required = true }
args.arg2 = { description = "Second", required = true }
messages = [{ role = "user", text = "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'" }]
"""

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00"
    b"\x00\x00IEND\xaeB`\x82"
)


def windows_uri(path):
    """The file:// URI Windows gives a Unix path under Wine (drive Z: is /)."""
    return "file:///Z:" + os.path.realpath(path)


def write_site(site, exe):
    fixtures = os.path.join(site, "fixtures")
    os.makedirs(os.path.join(fixtures, "data"))
    with open(os.path.join(fixtures, "static-text.txt"), "w") as f:
        f.write("This is the content of the static text resource.")
    with open(os.path.join(fixtures, "static-binary.png"), "wb") as f:
        f.write(PNG)
    with open(os.path.join(fixtures, "data", "42.json"), "w") as f:
        f.write('{"id": "42"}')
    with open(os.path.join(fixtures, "watched.txt"), "w") as f:
        f.write("watched\n")
    win_exe = "Z:" + exe.replace("/", "\\")
    toml_exe = '"' + win_exe.replace("\\", "\\\\") + '"'
    with open(os.path.join(site, "mcp-server.toml"), "w") as f:
        f.write(MANIFEST.replace("EXE", toml_exe))
    return fixtures


async def common(client, fixtures, era):
    watched = os.path.join(fixtures, "watched.txt")
    uris = [str(r.uri) for r in (await client.list_resources()).resources]
    want = windows_uri(watched)
    check(
        any(u.lower() == want.lower() for u in uris),
        f"{era}: resources/list names the fixture files as {want} (got {uris[:3]})",
    )
    check(not any("%5C" in u for u in uris), f"{era}: no verbatim \\\\?\\ paths in file URIs")
    listed = next(u for u in uris if u.lower() == want.lower())
    read = await client.read_resource(listed)
    check(read.contents[0].text.startswith("watched"), f"{era}: resources/read of a file:///Z:/… URI")
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
    data = await client.read_resource("test://data/42")
    check(data.contents[0].text == '{"id": "42"}', f"{era}: resources/read through a file template")
    script = await client.read_resource("test://completions/powershell")
    check(
        "Register-ArgumentCompleter" in script.contents[0].text,
        f"{era}: resources/read through a command template (a Windows program, one argument)",
    )
    tools = [t.name for t in (await client.list_tools()).tools]
    check("test_simple_text" in tools and "version" in tools, f"{era}: tools/list")
    called = await client.call_tool("test_simple_text", {})
    check(
        not called.is_error
        and text_of(called).strip() == "This is a simple text response for testing.",
        f"{era}: tools/call of a cmd script",
    )
    version = await client.call_tool("version", {})
    check(
        not version.is_error and text_of(version).startswith("mcp-manifest "),
        f"{era}: tools/call of a command tool",
    )
    failed = await client.call_tool("test_error_handling", {})
    check(
        failed.is_error and "intentionally fails" in text_of(failed),
        f"{era}: a failing tool is an isError result with its stderr",
    )
    prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
    check("arg1='a', arg2='b'" in prompt.messages[0].content.text, f"{era}: prompts/get")
    return listed


async def legacy(server, fixtures):
    updates = asyncio.Queue()

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            await updates.put(str(root.params.uri))

    async with Client(server, mode="legacy", message_handler=on_message, cache=None) as client:
        check(client.protocol_version == "2025-11-25", "legacy: initialize negotiates 2025-11-25")
        watched = await common(client, fixtures, "legacy")
        await client.subscribe_resource(watched)
        with open(os.path.join(fixtures, "watched.txt"), "a") as f:
            f.write(f"changed {time.time()}\n")
        uri = await asyncio.wait_for(updates.get(), TIMEOUT)
        check(uri == watched, "legacy: subscribe → notifications/resources/updated")


async def modern(server, fixtures):
    async with Client(server, cache=None) as client:
        check(client.protocol_version == "2026-07-28", "modern: server/discover negotiates 2026-07-28")
        await common(client, fixtures, "modern")


def main():
    runner, exe = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as site:
        fixtures = write_site(site, exe)
        server = StdioServerParameters(
            command=runner,
            args=[exe, "serve", os.path.join(site, "mcp-server.toml")],
            env=dict(os.environ),
            cwd=site,
        )
        started = time.monotonic()
        asyncio.run(asyncio.wait_for(legacy(server, fixtures), 4 * TIMEOUT))
        asyncio.run(asyncio.wait_for(modern(server, fixtures), 4 * TIMEOUT))
        print(f"stdio interop under Wine: every check passed ({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
