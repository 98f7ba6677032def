#!/usr/bin/env bash
# The MCP Apps views (`view = …`, src/views/) in a real browser: headless Chromium (Debian's
# `chromium`) driven by playwright-core (npm, pinned below, installed once into a cache outside
# the clone) loads each view inside a minimal host page (scripts/views/host.*) that speaks the
# MCP Apps messages and hands it real tool results from the real server over stdio (a SQLite
# database of 10 000 rows built by scripts/views/fixture.py); scripts/views/browser-test.mjs
# asserts on the DOM (sorted order, filter, row count, truncated notice, the charts' points,
# hostile cells shown as text, no network, themes, 320 px) and saves screenshots.
#
#   scripts/views-browser.sh [BINARY]          (default target/debug/mcp-manifest)
#
# Screenshots go to $VIEWS_SHOTS (default: a folder in the cache, printed at the end); with
# VIEWS_DOCS=docs/views they are also copied there (how the README's pictures are made).
# Exit 3 when Chromium is missing and cannot be installed, or npm's registry cannot be reached
# (nothing was checked).
set -euo pipefail
cd "$(dirname "$0")/.."

PLAYWRIGHT_VERSION=1.65.1     # playwright-core (npm): drives Chromium over CDP; no browser download

bin=$(realpath "${1:-target/debug/mcp-manifest}")
[ -x "$bin" ] || { echo "views-browser: no binary at $bin (cargo build first)" >&2; exit 1; }
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "views-browser: no Chromium at $chromium (apt-get install chromium)" >&2; exit 3; }
command -v node >/dev/null 2>&1 || { echo "views-browser: node is not installed" >&2; exit 3; }
command -v python3 >/dev/null 2>&1 || { echo "views-browser: python3 is not installed" >&2; exit 3; }

cache="${MCP_MANIFEST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-manifest}"
pw="$cache/views-npm-playwright-core-$PLAYWRIGHT_VERSION"
if [ ! -f "$pw/node_modules/playwright-core/package.json" ]; then
  command -v npm >/dev/null 2>&1 || { echo "views-browser: npm is not installed" >&2; exit 3; }
  if ! npm view "playwright-core@$PLAYWRIGHT_VERSION" version >/dev/null 2>&1; then
    echo "views-browser: the npm registry cannot be reached" >&2
    exit 3
  fi
  mkdir -p "$pw"
  npm install --prefix "$pw" --no-audit --no-fund --loglevel=error "playwright-core@$PLAYWRIGHT_VERSION" >&2
fi
shots="${VIEWS_SHOTS:-$cache/views-screenshots}"
docs=()
if [ -n "${VIEWS_DOCS:-}" ]; then
  mkdir -p "$VIEWS_DOCS"
  docs=(--docs "$(realpath "$VIEWS_DOCS")")
fi
echo "== views in $("$chromium" --version 2>/dev/null | head -1), playwright-core $PLAYWRIGHT_VERSION"
exec node scripts/views/browser-test.mjs --bin "$bin" --playwright "$pw/node_modules" \
  --chromium "$chromium" --shots "$shots" "${docs[@]}"
