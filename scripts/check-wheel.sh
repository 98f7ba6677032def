#!/usr/bin/env bash
# The PyPI wheel installed as a user installs it (issue 32): writes the wheel around BINARY
# (scripts/pack_wheel.py), then
#   - `pip install WHEEL` in a fresh venv: `mcp-manifest --version` on the venv's PATH;
#   - `uvx --from WHEEL mcp-manifest --version` and `uvx --from WHEEL mcp-manifest init` in a
#     fresh HOME with an empty uv cache, offline (the wheel needs nothing else), timed; the
#     manifest init wrote passes `check`.
#
#   scripts/check-wheel.sh [BINARY]        (default target/release/mcp-manifest)
#
# uv comes from PyPI (pinned) into a cache outside the clone (MCP_MANIFEST_CI_CACHE, default
# ~/.cache/mcp-manifest-ci). Exit 3 when PyPI cannot be reached (nothing checked).
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION=0.13.8  # uv (PyPI)

bin=$(realpath "${1:-target/release/mcp-manifest}")
[ -x "$bin" ] || { echo "check-wheel: no binary at $bin (cargo build --release first)" >&2; exit 1; }
cache="${MCP_MANIFEST_CI_CACHE:-$HOME/.cache/mcp-manifest-ci}"
py=$(command -v python3)

fail() {
  echo "check-wheel: FAILED: $*" >&2
  exit 1
}

uv_dir="$cache/uv-$UV_VERSION"
uv="$uv_dir/bin/uv"
if [ ! -x "$uv" ]; then
  rm -rf "$uv_dir.part"
  if ! PIP_ROOT_USER_ACTION=ignore "$py" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target "$uv_dir.part" "uv==$UV_VERSION" >&2; then
    echo "check-wheel: SKIPPED: PyPI cannot be reached (or uv==$UV_VERSION is missing)" >&2
    exit 3
  fi
  mv "$uv_dir.part" "$uv_dir"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
packed="$work/bin/mcp-manifest"
mkdir -p "$work/bin"
cp "$bin" "$packed"
# CI packs its debug build: without debug information, as a release binary has none.
if command -v objcopy >/dev/null && objcopy --strip-debug "$packed" 2>/dev/null; then :; fi
wheel=$("$py" scripts/pack_wheel.py --out "$work/dist" "$packed")
echo "-- $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
want=$("$bin" --version)

# pip in a fresh venv.
"$py" -m venv "$work/venv" || fail "python3 -m venv (apt-get install python3-venv)"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel" || fail "pip install the wheel"
got=$("$work/venv/bin/mcp-manifest" --version) || fail "mcp-manifest --version from the venv"
[ "$got" = "$want" ] || fail "the venv's mcp-manifest --version printed '$got', not '$want'"
echo "ok: pip install WHEEL in a fresh venv: mcp-manifest --version → $got"

# uvx, as a user: a fresh HOME, an empty cache, offline.
user_env() {
  env -i PATH="$(dirname "$py"):/usr/bin:/bin" HOME="$1" UV_OFFLINE=1 UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON="$py" "${@:2}"
}
home="$work/home"
mkdir -p "$home"
t0=$(date +%s.%N)
got=$(cd "$home" && user_env "$home" "$uv" tool run --from "$wheel" mcp-manifest --version) ||
  fail "uvx --from WHEEL mcp-manifest --version"
t1=$(date +%s.%N)
[ "$got" = "$want" ] || fail "uvx ... --version printed '$got', not '$want'"
echo "ok: uvx --from WHEEL mcp-manifest --version → $got ($("$py" -c "print(f'{$t1 - $t0:.1f}')") s from a fresh HOME)"

home2="$work/home2"
mkdir -p "$home2/project/docs"
printf '# Notes\n' >"$home2/project/docs/notes.md"
t0=$(date +%s.%N)
(cd "$home2/project" && user_env "$home2" "$uv" tool run --from "$wheel" mcp-manifest init >/dev/null) ||
  fail "uvx --from WHEEL mcp-manifest init"
t1=$(date +%s.%N)
[ -f "$home2/project/mcp-server.toml" ] || fail "uvx ... init wrote no mcp-server.toml"
(cd "$home2/project" && "$bin" check >/dev/null) || fail "the manifest init wrote does not pass check"
echo "ok: uvx --from WHEEL mcp-manifest init → mcp-server.toml that check accepts ($("$py" -c "print(f'{$t1 - $t0:.1f}')") s from a fresh HOME to init done)"
echo "check-wheel: every check passed"
