#!/usr/bin/env python3
"""Writes the server.json of a release for the MCP Registry, from the committed template.

    scripts/server_json.py --repo OWNER/NAME --bundle dist/mcp-manifest-VERSION.mcpb --out FILE

The template's `OWNER/mcp-manifest` becomes the repository given, every version the crate's
(Cargo.toml), and the mcpb package gets the release asset URL and the bundle's SHA-256 (the
registry requires both for MCPB packages). The npm, PyPI and cargo packages keep their names; the
registry checks that each names this server: the npm package's `mcpName` and the PyPI
description's `mcp-name:` line (scripts/pack_npm.py and scripts/pack_wheel.py write both from
the same --repo). The release workflow runs this on a tag.
"""
import argparse
import hashlib
import json
import re
import sys
import tomllib


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", required=True, help="OWNER/NAME on GitHub")
    p.add_argument("--bundle", required=True, help="the packed .mcpb")
    p.add_argument("--out", required=True)
    p.add_argument("--template", default="server.json")
    a = p.parse_args()
    if not re.fullmatch(r"[A-Za-z0-9-]+/[A-Za-z0-9._-]+", a.repo):
        print(f"server-json: --repo {a.repo!r} is not OWNER/NAME", file=sys.stderr)
        return 2
    owner, name = a.repo.split("/")
    version = tomllib.load(open("Cargo.toml", "rb"))["package"]["version"]
    with open(a.bundle, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    doc = json.load(open(a.template))
    doc["name"] = f"io.github.{owner}/{name}"
    doc["version"] = version
    doc["repository"]["url"] = f"https://github.com/{owner}/{name}"
    for pkg in doc["packages"]:
        pkg["version"] = version
        if pkg["registryType"] == "mcpb":
            pkg["identifier"] = (
                f"https://github.com/{owner}/{name}/releases/download/"
                f"v{version}/mcp-manifest-{version}.mcpb"
            )
            pkg["fileSha256"] = sha
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
