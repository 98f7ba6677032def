#!/usr/bin/env python3
"""A real skills folder served by `mcp-manifest` and read by the official MCP Python SDK.

    skills_real.py BINARY SKILLS_DIR

Writes a manifest `[skills.real] root = SKILLS_DIR` in a temp folder, runs `check` (the skills
left out are its warnings), then for stdio and Streamable HTTP, each in the handshake era
(2025-11-25) and the 2026-07-28 era: checks the extension is declared, pages `skills/list`,
checks each entry's shape (SEP-2640), its every digest and size against the file's bytes on
disk, `skills/get` of every skill (same entry) and of a left-out one (-32602), that
`resources/list` lists exactly the entries' files, and reads every file with `resources/read`,
checking the bytes received against the entry's digest and size. Prints a line per run and a
Markdown table; exit 1 at the first failure.
"""

import asyncio
import base64
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

from pydantic import TypeAdapter

from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError

warnings.filterwarnings("ignore")
EXT = "io.modelcontextprotocol/skills"
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class Raw(types.Request):
    """Any method, any params: the SDK has no helper for the Skills extension."""

    method: str
    params: dict | None = None


def fail(what):
    print(f"FAIL: {what}", file=sys.stderr)
    sys.exit(1)


def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


async def raw(client, method, params):
    return await client.session.send_request(Raw(method=method, params=params), TypeAdapter(dict))


async def run(target, mode, root, left_out):
    era = "2025-11-25" if mode == "legacy" else "2026-07-28"
    row = {"era": era, "reads": 0, "digests": 0}
    t0 = time.perf_counter()
    async with Client(target, mode=mode, cache=None) as client:
        if client.protocol_version != era:
            fail(f"negotiated {client.protocol_version}, wanted {era}")
        caps = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)
        if EXT not in (caps.get("extensions") or {}) or "resources" not in caps:
            fail(f"{era}: no {EXT} extension or no resources capability: {caps}")
        row["connect_ms"] = (time.perf_counter() - t0) * 1000

        # skills/list, every page.
        t = time.perf_counter()
        skills, cursor, pages = [], None, 0
        while True:
            page = await raw(client, "skills/list", {"cursor": cursor} if cursor else {})
            pages += 1
            if era == "2026-07-28" and page.get("resultType") != "complete":
                fail(f"{era}: skills/list resultType {page.get('resultType')!r}")
            if not isinstance(page.get("ttlMs"), int) or page.get("cacheScope") not in ("public", "private"):
                fail(f"{era}: skills/list without ttlMs/cacheScope: {list(page)}")
            skills += page["skills"]
            cursor = page.get("nextCursor")
            if not cursor:
                break
        row["list_ms"] = (time.perf_counter() - t) * 1000
        row["skills"], row["pages"] = len(skills), pages

        # Each entry: shape, and every digest and size against the bytes on disk.
        expected = {}
        for s in skills:
            uri, fm, res = s["uri"], s["frontmatter"], s["resources"]
            m = re.fullmatch(r"skill://(.+)/SKILL\.md", uri)
            if not m or m.group(1).split("/")[-1] != fm.get("name") or not fm.get("description"):
                fail(f"{era}: entry {uri}: uri, name and description do not fit: {fm}")
            if not isinstance(res, list) or not res or res[0]["uri"] != uri:
                fail(f"{era}: entry {uri}: resources must start with the SKILL.md")
            skill_dir = m.group(1)
            for r in res:
                if not r["uri"].startswith(f"skill://{skill_dir}/") or not DIGEST.match(r["digest"]):
                    fail(f"{era}: entry {uri}: bad resource {r}")
                path = os.path.join(root, r["uri"][len("skill://"):])
                with open(path, "rb") as f:
                    data = f.read()
                if sha(data) != r["digest"] or len(data) != r["size"]:
                    fail(f"{era}: {r['uri']}: digest/size {r['digest']}/{r['size']} but the file is {sha(data)}/{len(data)}")
                row["digests"] += 1
                expected[r["uri"]] = r

        # skills/get: every skill gives its list entry; a left-out one is -32602.
        t = time.perf_counter()
        for s in skills:
            got = await raw(client, "skills/get", {"uri": s["uri"]})
            if got.get("skill") != s:
                fail(f"{era}: skills/get {s['uri']} differs from its skills/list entry")
        row["get_ms"] = (time.perf_counter() - t) * 1000 / max(len(skills), 1)
        for name in left_out:
            try:
                await raw(client, "skills/get", {"uri": f"skill://{name}/SKILL.md"})
                fail(f"{era}: skills/get of the left-out {name} answered")
            except MCPError as e:
                if e.error.code != -32602:
                    fail(f"{era}: skills/get of the left-out {name}: {e.error}")

        # resources/list: exactly the entries' files; SKILL.md with name, description, markdown.
        listed = {}
        cursor = None
        while True:
            page = await client.list_resources(cursor=cursor) if cursor else await client.list_resources()
            for r in page.resources:
                if str(r.uri).startswith("skill://"):
                    listed[str(r.uri)] = r
            cursor = page.next_cursor
            if not cursor:
                break
        if set(listed) != set(expected):
            fail(f"{era}: resources/list and skills/list differ: {sorted(set(listed) ^ set(expected))[:5]}")
        for s in skills:
            r = listed[s["uri"]]
            if r.name != s["frontmatter"]["name"] or r.mime_type != "text/markdown":
                fail(f"{era}: resource {s['uri']}: name {r.name!r}, mimeType {r.mime_type!r}")
        row["resources"] = len(listed)

        # resources/read of every file, its bytes against the entry's digest and size.
        t = time.perf_counter()
        for uri, r in expected.items():
            content = (await client.read_resource(uri)).contents[0]
            blob = getattr(content, "blob", None)
            data = base64.b64decode(blob) if blob is not None else content.text.encode()
            if sha(data) != r["digest"] or len(data) != r["size"]:
                fail(f"{era}: resources/read {uri}: {len(data)} bytes {sha(data)}, entry says {r['size']} {r['digest']}")
            row["reads"] += 1
        row["read_ms"] = (time.perf_counter() - t) * 1000
    return row


def start_http(binary, manifest, log):
    proc = subprocess.Popen(
        [binary, "serve", "--http", "127.0.0.1:0", manifest], stdin=subprocess.DEVNULL, stderr=open(log, "w")
    )
    for _ in range(400):
        m = re.search(r"at (http://[0-9.:]+/mcp)", open(log).read())
        if m:
            return proc, m.group(1)
        time.sleep(0.05)
    proc.kill()
    fail(f"serve --http did not start: {open(log).read()}")


def main():
    binary, root = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    work = tempfile.mkdtemp()
    manifest = os.path.join(work, "mcp-server.toml")
    with open(manifest, "w") as f:
        f.write(f'[skills.real]\nroot = "{root}"\n')
    found = sorted(os.path.relpath(d, root) for d, _, files in os.walk(root) if "SKILL.md" in files)
    check = subprocess.run([binary, "check", manifest], capture_output=True, text=True)
    if check.returncode != 0:
        fail(f"check failed:\n{check.stderr}")
    warnings_ = [l for l in check.stderr.splitlines() if "warning:" in l]
    left_out = re.findall(r"`([^`]+)/SKILL\.md` is left out", check.stderr)
    print(f"folder {root}: {len(found)} SKILL.md; check: {len(warnings_)} warnings")
    for w in warnings_:
        print(f"  {w}")

    rows = []
    for transport in ("stdio", "http"):
        proc = None
        if transport == "stdio":
            target = StdioServerParameters(command=binary, args=["serve", manifest])
        else:
            proc, target = start_http(binary, manifest, os.path.join(work, "http.log"))
        try:
            for mode in ("legacy", "auto"):
                row = asyncio.run(run(target, mode, root, left_out))
                row["transport"] = transport
                if row["skills"] + len(left_out) != len(found):
                    fail(f"{row['skills']} skills listed + {len(left_out)} left out != {len(found)} SKILL.md")
                print(
                    f"ok: {transport} {row['era']}: {row['skills']} skills ({row['pages']} pages, "
                    f"{row['list_ms']:.0f} ms), skills/get {row['get_ms']:.1f} ms each, "
                    f"{row['resources']} skill:// resources, {row['reads']} files read in "
                    f"{row['read_ms']:.0f} ms, {row['digests']} + {row['reads']} digests checked"
                )
                rows.append(row)
        finally:
            if proc:
                proc.kill()
                proc.wait()
    print("\n| client | era | transport | skills listed | files read | digests checked |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| Python SDK | {r['era']} | {r['transport']} | {r['skills']} | {r['reads']} | {r['digests'] + r['reads']} |")


if __name__ == "__main__":
    main()
