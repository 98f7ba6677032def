#!/usr/bin/env bash
# Installs the pinned npm tools the bundle scripts use, once, into a cache folder outside the
# repository, and prints that folder (its node_modules/.bin holds `mcpb`; node_modules holds
# ajv for scripts/check-bundle.sh). Nothing is installed into the repository.
#
#   tools=$(scripts/npm-tools.sh) && "$tools/node_modules/.bin/mcpb" --version
#
# MCP_MANIFEST_TOOLS=DIR puts the cache elsewhere. Exit 3 when npm cannot reach its registry.
set -euo pipefail

MCPB_VERSION=2.1.2        # @anthropic-ai/mcpb, the official MCP Bundle CLI
AJV_VERSION=8.20.0        # JSON Schema validator for server.json
AJV_FORMATS_VERSION=3.0.1

pins="@anthropic-ai/mcpb@$MCPB_VERSION ajv@$AJV_VERSION ajv-formats@$AJV_FORMATS_VERSION"
key=$(printf '%s' "$pins" | sha256sum | cut -c1-12)
dir="${MCP_MANIFEST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-manifest/npm-tools-$key}"

if [ -x "$dir/node_modules/.bin/mcpb" ] && [ -f "$dir/node_modules/ajv-formats/package.json" ]; then
  echo "$dir"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm-tools: npm is not installed" >&2
  exit 3
fi
if ! npm view "@anthropic-ai/mcpb@$MCPB_VERSION" version >/dev/null 2>&1; then
  echo "npm-tools: the npm registry cannot be reached" >&2
  exit 3
fi
mkdir -p "$dir"
# shellcheck disable=SC2086 # $pins is a list of package specs
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $pins >&2
echo "$dir"
