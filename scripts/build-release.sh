#!/usr/bin/env bash
# Builds one release binary and its archive, as the release workflow does on each runner
# (.github/workflows/release.yml runs this very script). On Linux x86_64 it reproduces the
# release's x86_64-unknown-linux-gnu build exactly:
#
#   scripts/build-release.sh [--from BINARY] [--dist DIR] [TARGET]   (default: this machine's target)
#
# Writes dist/mcp-manifest-VERSION-TARGET.tar.gz (.zip for Windows) holding the binary and
# README.md, plus a .sha256 file beside it, and prints the archive's path. A TARGET other than
# the host's is built with `--target` (its Rust standard library must be installed:
# `rustup target add TARGET`). Needs the Rust toolchain, a C compiler and python3.
# --from archives BINARY, already built for TARGET, instead of building (CI checks the release
# steps with its debug binaries: scripts/check-release.sh); --dist writes to DIR, not dist/.
set -euo pipefail
cd "$(dirname "$0")/.."

from=
dist=dist
target=
while [ $# -gt 0 ]; do
  case "$1" in
    --from) from=$2; shift 2 ;;
    --dist) dist=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "build-release: unexpected option '$1' (see --help)" >&2; exit 2 ;;
    *) target=$1; shift ;;
  esac
done
host=$(rustc -vV | sed -n 's/^host: //p')
target=${target:-$host}
py=$(command -v python3 || command -v python)
version=$("$py" -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["package"]["version"])')

if [ -n "$from" ]; then
  out=$(dirname "$from")
elif [ "$target" = "$host" ]; then
  cargo build --release --locked >&2
  out=target/release
else
  cargo build --release --locked --target "$target" >&2
  out=target/$target/release
fi
exe=mcp-manifest
case "$target" in *windows*) exe=mcp-manifest.exe ;; esac
if [ -n "$from" ]; then
  [ "$(basename "$from")" = "$exe" ] || { echo "build-release: --from must name a file called $exe" >&2; exit 2; }
else
  "$out/$exe" --version >&2
fi

mkdir -p "$dist"
name="mcp-manifest-$version-$target"
case "$target" in
  *windows*) archive="$dist/$name.zip" ;;
  *) archive="$dist/$name.tar.gz" ;;
esac
"$py" - "$archive" "$name" "$out/$exe" README.md <<'PY'
import os, sys, tarfile, zipfile
archive, name, *files = sys.argv[1:]
if archive.endswith(".zip"):
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            z.write(f, f"{name}/{os.path.basename(f)}")
else:
    with tarfile.open(archive, "w:gz") as t:
        for f in files:
            info = t.gettarinfo(f, f"{name}/{os.path.basename(f)}")
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with open(f, "rb") as fh:
                t.addfile(info, fh)
PY
"$py" - "$archive" <<'PY'
import hashlib, os, sys
path = sys.argv[1]
digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
open(path + ".sha256", "w").write(f"{digest}  {os.path.basename(path)}\n")
PY
echo "$archive"
