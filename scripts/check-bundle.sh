#!/usr/bin/env bash
# Checks the desktop extension (.mcpb) and the MCP Registry entry (server.json) end to end:
#   1. mcpb/manifest.json passes the official `mcpb validate` (@anthropic-ai/mcpb, pinned in
#      scripts/npm-tools.sh) and carries the crate's version;
#   2. scripts/pack-mcpb.sh packs BINARY; `mcpb info` reads the bundle, `mcpb unpack` unpacks it;
#   3. the unpacked server starts as a host starts it (command and args from the bundle's
#      manifest for this OS, ${__dirname} and ${user_config.manifest} filled in, working
#      directory /) on a manifest that the unpacked binary's own `init` wrote, answers
#      `initialize` over stdio, and exits when stdin closes;
#   4. server.json, as committed and as filled in for a release by scripts/server_json.py,
#      validates against the MCP Registry's published schema (2025-12-11). Its URL is not
#      reachable from CI, so the schema comes from the PyPI package skillsaw (pinned), which
#      ships the released schema files byte for byte.
#
#   scripts/check-bundle.sh [BINARY]      (default: target/release/mcp-manifest)
#
# Exits 0 when every check passes, 3 (saying so) when npm's or PyPI's registry cannot be
# reached, 1 on a failed check.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-target/release/mcp-manifest}
[ -x "$bin" ] || { echo "check-bundle: no binary at $bin (cargo build --release --locked)" >&2; exit 1; }
SKILLSAW_VERSION=0.22.0
SCHEMA_VERSION=2025-12-11

if ! tools=$(scripts/npm-tools.sh); then
  echo "check-bundle: SKIPPED: the pinned npm tools could not be installed (is npm's registry reachable?)" >&2
  exit 3
fi
mcpb="$tools/node_modules/.bin/mcpb"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

version=$(python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["package"]["version"])')

echo "-- 1. mcpb validate mcpb/manifest.json"
"$mcpb" validate mcpb/manifest.json
python3 - "$version" <<'PY'
import json, sys
for f in ("mcpb/manifest.json", "server.json"):
    v = json.load(open(f))["version"]
    if v != sys.argv[1]:
        sys.exit(f"check-bundle: {f} says version {v}, Cargo.toml {sys.argv[1]}")
PY

echo "-- 2. pack, info, unpack"
bundle=$(scripts/pack-mcpb.sh --out "$work/dist" "linux=$bin" 2>"$work/pack.log") || { cat "$work/pack.log" >&2; exit 1; }
"$mcpb" info "$bundle"
"$mcpb" unpack "$bundle" "$work/unpacked" >/dev/null
test -x "$work/unpacked/server/linux/mcp-manifest"

echo "-- 3. the packed server answers initialize over stdio"
mkdir -p "$work/notes"
printf '# Hello\n' >"$work/notes/hello.md"
"$work/unpacked/server/linux/mcp-manifest" init "$work/notes" >/dev/null
python3 - "$work/unpacked" "$work/notes/mcp-server.toml" <<'PY'
import json, select, subprocess, sys, time
root, manifest = sys.argv[1], sys.argv[2]
m = json.load(open(f"{root}/manifest.json"))
cfg = m["server"]["mcp_config"]
over = cfg.get("platform_overrides", {}).get("linux", {})
command, args = over.get("command", cfg["command"]), over.get("args", cfg["args"])
fill = lambda s: s.replace("${__dirname}", root).replace("${user_config.manifest}", manifest)
argv = [fill(command)] + [fill(a) for a in args]
p = subprocess.Popen(argv, cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
req = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
       "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                  "clientInfo": {"name": "check-bundle", "version": "1"}}}
p.stdin.write(json.dumps(req) + "\n")
p.stdin.flush()
ready, _, _ = select.select([p.stdout], [], [], 20)
if not ready:
    p.kill()
    sys.exit(f"check-bundle: no answer to initialize within 20 s from {argv}")
resp = json.loads(p.stdout.readline())
info = resp.get("result", {}).get("serverInfo", {})
if resp.get("id") != 1 or info.get("name") != "notes":
    sys.exit(f"check-bundle: unexpected answer {resp}; stderr: {p.stderr.read()}")
start = time.monotonic()
p.stdin.close()
p.wait(timeout=5)
print(f"initialize: {info['name']} {info.get('version')}, protocol "
      f"{resp['result']['protocolVersion']}; exit {p.returncode} "
      f"{time.monotonic() - start:.2f} s after stdin closed")
PY

echo "-- 4. server.json against the registry's schema $SCHEMA_VERSION"
wheels="$tools/wheels"
mkdir -p "$wheels"
if ! ls "$wheels"/skillsaw-$SKILLSAW_VERSION-*.whl >/dev/null 2>&1; then
  if ! python3 -m pip download --quiet --no-deps --only-binary=:all: "skillsaw==$SKILLSAW_VERSION" -d "$wheels" >&2; then
    echo "check-bundle: SKIPPED step 4: skillsaw==$SKILLSAW_VERSION could not be downloaded from PyPI" >&2
    exit 3
  fi
fi
python3 - "$wheels"/skillsaw-$SKILLSAW_VERSION-*.whl "$SCHEMA_VERSION" "$work/server.schema.json" <<'PY'
import json, sys, zipfile
wheel, version, dest = sys.argv[1:]
member = f"skillsaw/schemas/mcp_registry/v{version.replace('-', '_')}/server.schema.json"
schema = json.loads(zipfile.ZipFile(wheel).read(member))
want = f"https://static.modelcontextprotocol.io/schemas/{version}/server.schema.json"
if schema.get("$id") != want:
    sys.exit(f"check-bundle: the schema in {wheel} is {schema.get('$id')}, not {want}")
json.dump(schema, open(dest, "w"))
PY
python3 scripts/server_json.py --repo example/mcp-manifest --bundle "$bundle" --out "$work/server.release.json"
NODE_PATH="$tools/node_modules" node - "$work/server.schema.json" server.json "$work/server.release.json" <<'JS'
const fs = require("fs");
const Ajv = require("ajv");
const addFormats = require("ajv-formats");
const [schemaFile, ...docs] = process.argv.slice(2);
const schema = JSON.parse(fs.readFileSync(schemaFile, "utf8"));
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const validate = ajv.compile(schema);
let failed = false;
for (const file of docs) {
  const doc = JSON.parse(fs.readFileSync(file, "utf8"));
  if (doc.$schema !== schema.$id) {
    console.error(`${file}: $schema is ${doc.$schema}, the schema checked is ${schema.$id}`);
    failed = true;
  }
  if (validate(doc)) {
    console.log(`${file}: valid against ${schema.$id}`);
  } else {
    failed = true;
    for (const e of validate.errors) console.error(`${file}: ${e.instancePath || "/"} ${e.message}`);
  }
}
process.exit(failed ? 1 : 0);
JS
echo "check-bundle: all checks passed ($(du -h "$bundle" | cut -f1) bundle)"
