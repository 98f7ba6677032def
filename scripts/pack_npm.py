#!/usr/bin/env python3
"""Packs the npm packages: `mcp-manifest` (the launcher, npm/mcp-manifest) and one package per
platform holding the native binary (`@mcp-manifest/linux-x64`, ...), each an `npm pack` tarball.

    scripts/pack_npm.py [--out DIR] [--repo OWNER/NAME] [PLATFORM=BINARY ...]

PLATFORM is one of linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64; BINARY the
release binary built for it. The launcher package is always packed; its optionalDependencies
name every platform (npm installs only the one whose `os`/`cpu` fit). Versions come from
Cargo.toml. Writes DIR/*.tgz (default dist/npm) and prints each tarball's path. Needs npm.
"""
import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCOPE = "@mcp-manifest"
# npm's process.platform / process.arch names, and what `os`/`cpu` (and `libc`) say.
PLATFORMS = {
    "linux-x64": ("linux", "x64"),
    "linux-arm64": ("linux", "arm64"),
    "darwin-x64": ("darwin", "x64"),
    "darwin-arm64": ("darwin", "arm64"),
    "win32-x64": ("win32", "x64"),
}


def npm_pack(folder, out):
    npm = shutil.which("npm") or sys.exit("pack-npm: npm is not installed")
    result = subprocess.run(
        [npm, "pack", "--json", "--pack-destination", out],
        cwd=folder,
        check=True,
        stdout=subprocess.PIPE,
    )
    name = json.loads(result.stdout)[0]["filename"]
    return os.path.join(out, name)


def common(version, repo):
    base = json.load(open(os.path.join(ROOT, "npm", "mcp-manifest", "package.json")))
    doc = {
        "version": version,
        "description": base["description"],
        "license": base["license"],
    }
    if repo:
        doc["repository"] = {"type": "git", "url": f"git+https://github.com/{repo}.git"}
    return doc


def pack_platform(platform, binary, version, repo, out):
    os_name, cpu = PLATFORMS[platform]
    exe = "mcp-manifest.exe" if os_name == "win32" else "mcp-manifest"
    with tempfile.TemporaryDirectory() as stage:
        doc = {"name": f"{SCOPE}/{platform}", **common(version, repo)}
        doc["description"] = f"The {platform} binary of mcp-manifest (installed by the mcp-manifest package)"
        doc["os"] = [os_name]
        doc["cpu"] = [cpu]
        if os_name == "linux":
            # The Linux binaries link glibc: on musl (Alpine) npm installs none, and the launcher says so.
            doc["libc"] = ["glibc"]
        doc["files"] = [f"bin/{exe}"]
        doc["preferUnplugged"] = True
        os.makedirs(os.path.join(stage, "bin"))
        dest = os.path.join(stage, "bin", exe)
        shutil.copyfile(binary, dest)
        os.chmod(dest, 0o755)
        with open(os.path.join(stage, "package.json"), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        with open(os.path.join(stage, "README.md"), "w") as f:
            f.write(
                f"# {SCOPE}/{platform}\n\nThe `{platform}` binary of "
                "[mcp-manifest](https://www.npmjs.com/package/mcp-manifest). Install "
                "`mcp-manifest` instead: npm picks this package on this platform.\n"
            )
        return npm_pack(stage, out)


def pack_launcher(version, repo, out):
    src = os.path.join(ROOT, "npm", "mcp-manifest")
    with tempfile.TemporaryDirectory() as stage:
        shutil.copytree(src, stage, dirs_exist_ok=True)
        doc = json.load(open(os.path.join(src, "package.json")))
        doc.update(common(version, repo))
        doc["optionalDependencies"] = {f"{SCOPE}/{p}": version for p in PLATFORMS}
        if repo:
            # The MCP Registry checks that the npm package names the server it lists (server.json).
            doc["mcpName"] = f"io.github.{repo}"
        with open(os.path.join(stage, "package.json"), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        launcher = os.path.join(stage, "bin", "mcp-manifest.js")
        os.chmod(launcher, os.stat(launcher).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        shutil.copyfile(os.path.join(ROOT, "README.md"), os.path.join(stage, "README.md"))
        return npm_pack(stage, out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(ROOT, "dist", "npm"))
    p.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY"), help="OWNER/NAME on GitHub")
    p.add_argument("pairs", nargs="*", metavar="PLATFORM=BINARY")
    a = p.parse_args()
    version = tomllib.load(open(os.path.join(ROOT, "Cargo.toml"), "rb"))["package"]["version"]
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    for pair in a.pairs:
        platform, _, binary = pair.partition("=")
        if platform not in PLATFORMS or not binary:
            sys.exit(f"pack-npm: {pair!r}: want PLATFORM=BINARY, PLATFORM one of {', '.join(PLATFORMS)}")
        if not os.path.isfile(binary):
            sys.exit(f"pack-npm: no binary at {binary} (cargo build --release --locked first)")
        print(pack_platform(platform, binary, version, a.repo, out))
    print(pack_launcher(version, a.repo, out))


if __name__ == "__main__":
    main()
