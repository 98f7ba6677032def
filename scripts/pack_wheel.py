#!/usr/bin/env python3
"""Writes the PyPI wheel of one platform around its release binary (issue 32): the binary is the
wheel's script `mcp-manifest` (in `mcp_manifest-VERSION.data/scripts/`, as maturin's `bindings =
"bin"` lays it out), so `pip install mcp-manifest`, `pipx install mcp-manifest` and `uvx
mcp-manifest` put the native binary on the PATH with no Python code in between.

    scripts/pack_wheel.py [--out DIR] [--target TRIPLE] BINARY

TRIPLE (default: this machine's, from `rustc -vV`) picks the platform tag: manylinux_2_N (N the
newest glibc symbol version BINARY needs) for Linux, macosx_11_0_arm64 / macosx_10_12_x86_64,
win_amd64. Versions come from Cargo.toml, the description from README.md. The wheel is
reproducible (entries sorted, timestamps from SOURCE_DATE_EPOCH or 1980). Writes DIR/NAME.whl
(default dist/wheels) and prints its path. Needs only python3.
"""
import argparse
import base64
import hashlib
import os
import re
import subprocess
import sys
import time
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def platform_tag(target, binary):
    if target.endswith("-unknown-linux-gnu"):
        arch = target.split("-")[0]
        data = open(binary, "rb").read()
        # The version needs name the glibc releases the binary links against (GLIBC_2.34, ...).
        minor = max((int(m) for m in re.findall(rb"GLIBC_2\.(\d+)", data)), default=17)
        return f"manylinux_2_{max(minor, 17)}_{arch}"
    tags = {
        "aarch64-apple-darwin": "macosx_11_0_arm64",
        "x86_64-apple-darwin": "macosx_10_12_x86_64",
        "x86_64-pc-windows-msvc": "win_amd64",
        "x86_64-pc-windows-gnu": "win_amd64",
        "aarch64-pc-windows-msvc": "win_arm64",
    }
    if target not in tags:
        sys.exit(f"pack-wheel: no wheel platform tag for {target}")
    return tags[target]


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(ROOT, "dist", "wheels"))
    p.add_argument("--target")
    p.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY"), help="OWNER/NAME on GitHub")
    p.add_argument("binary")
    a = p.parse_args()
    target = a.target or re.search(
        r"^host: (\S+)$", subprocess.run(["rustc", "-vV"], capture_output=True, text=True).stdout, re.M
    ).group(1)
    package = tomllib.load(open(os.path.join(ROOT, "Cargo.toml"), "rb"))["package"]
    version = package["version"]
    tag = f"py3-none-{platform_tag(target, a.binary)}"
    exe = "mcp-manifest.exe" if "windows" in target else "mcp-manifest"
    dist = f"mcp_manifest-{version}"
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    if a.repo:
        # The MCP Registry checks that the PyPI package names the server it lists (server.json).
        readme += f"\n<!-- mcp-name: io.github.{a.repo} -->\n"

    metadata = "".join(
        [
            "Metadata-Version: 2.1\n",
            "Name: mcp-manifest\n",
            f"Version: {version}\n",
            f"Summary: {package['description']}\n",
            f"License: {package['license']}\n",
            "Keywords: mcp,model-context-protocol,mcp-server\n",
            "Classifier: Programming Language :: Rust\n",
            "Classifier: Environment :: Console\n",
            "Requires-Python: >=3.8\n",
            "Description-Content-Type: text/markdown\n",
            "\n",
            readme,
        ]
    )
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: mcp-manifest scripts/pack_wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    )
    files = [
        (f"{dist}.data/scripts/{exe}", open(a.binary, "rb").read(), 0o755),
        (f"{dist}.dist-info/METADATA", metadata.encode(), 0o644),
        (f"{dist}.dist-info/WHEEL", wheel.encode(), 0o644),
    ]
    record_name = f"{dist}.dist-info/RECORD"
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data, _ in files)
    record += f"{record_name},,\n"
    files.append((record_name, record.encode(), 0o644))

    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"{dist}-{tag}.whl")
    with zipfile.ZipFile(path + ".part", "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in files:
            info = zipfile.ZipInfo(name, stamp)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(path + ".part", path)
    print(path)


if __name__ == "__main__":
    main()
