#!/usr/bin/env bash
# Checks the release's own steps (issue 32) with binaries CI already built, as the release
# workflow runs them on the real ones: scripts/build-release.sh --from archives each binary,
# scripts/release-artifacts.sh turns the archives into every asset, and each asset is checked:
# SHA256SUMS holds for every file it names, the .mcpb carries a binary per OS archived and the
# manifest chooses among them, the formula names the Linux archive's checksum, server.json
# names the version, a wheel and an npm package per target plus the launcher, the crate.
#
#   scripts/check-release.sh LINUX_X86_64_BINARY [WINDOWS_X86_64_GNU_EXE]
#
# Binaries are stripped copies (CI's are debug builds). Writes only under a temporary folder
# (and target/package, as `cargo package` does).
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 1 ] || { sed -n '2,12p' "$0"; exit 2; }
linux=$1
win=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS

mkdir -p "$work/bin/linux" "$work/bin/win"
strip -o "$work/bin/linux/mcp-manifest" "$linux" 2>/dev/null || cp "$linux" "$work/bin/linux/mcp-manifest"
scripts/build-release.sh --from "$work/bin/linux/mcp-manifest" --dist "$work/dist" x86_64-unknown-linux-gnu >/dev/null
if [ -n "$win" ]; then
  x86_64-w64-mingw32-strip -o "$work/bin/win/mcp-manifest.exe" "$win" 2>/dev/null ||
    cp "$win" "$work/bin/win/mcp-manifest.exe"
  scripts/build-release.sh --from "$work/bin/win/mcp-manifest.exe" --dist "$work/dist" x86_64-pc-windows-gnu >/dev/null
fi
out=$(scripts/release-artifacts.sh --repo example/mcp-manifest --out "$work/release" "$work/dist" 2>"$work/artifacts.log") || {
  cat "$work/artifacts.log" >&2
  exit 1
}

python3 - "$out" "${win:+win}" <<'PY'
import hashlib, json, os, sys, tarfile, tomllib, zipfile

out, win = sys.argv[1], sys.argv[2] == "win"
version = tomllib.load(open("Cargo.toml", "rb"))["package"]["version"]
problems = []

def need(cond, what):
    if not cond:
        problems.append(what)

# Every asset is in SHA256SUMS and its sum holds.
sums = {}
for line in open(os.path.join(out, "SHA256SUMS")):
    digest, name = line.split()
    sums[name] = digest
assets = sorted(f for f in os.listdir(out) if os.path.isfile(os.path.join(out, f)) and f != "SHA256SUMS")
need(sorted(sums) == assets, f"SHA256SUMS names {sorted(sums)}, the assets are {assets}")
for name, digest in sums.items():
    got = hashlib.sha256(open(os.path.join(out, name), "rb").read()).hexdigest()
    need(got == digest, f"{name}: sha256 {got}, SHA256SUMS says {digest}")

linux_tar = f"mcp-manifest-{version}-x86_64-unknown-linux-gnu.tar.gz"
need(linux_tar in assets, f"no {linux_tar}")
with tarfile.open(os.path.join(out, linux_tar)) as t:
    names = t.getnames()
    need(f"mcp-manifest-{version}-x86_64-unknown-linux-gnu/mcp-manifest" in names, f"{linux_tar} holds {names}")
    mode = t.getmember(f"mcp-manifest-{version}-x86_64-unknown-linux-gnu/mcp-manifest").mode
    need(mode & 0o111, f"the archived binary is not executable ({oct(mode)})")

# The bundle: a binary per OS, the manifest choosing among them.
bundle = f"mcp-manifest-{version}.mcpb"
need(bundle in assets, f"no {bundle}")
with zipfile.ZipFile(os.path.join(out, bundle)) as z:
    manifest = json.loads(z.read("manifest.json"))
    files = set(z.namelist())
    server = manifest["server"]
    overrides = server["mcp_config"].get("platform_overrides", {})
    oses = {"linux"} | ({"win32"} if win else set())
    need(set(manifest.get("compatibility", {}).get("platforms", [])) >= oses,
         f"bundle platforms {manifest.get('compatibility')}")
    for os_name in oses:
        cmd = overrides.get(os_name, server["mcp_config"])["command"]
        rel = cmd.replace("${__dirname}/", "")
        need(rel in files, f"the bundle's {os_name} command {cmd} is not in it ({sorted(files)})")

# The formula names the Linux archive and its checksum.
formula = open(os.path.join(out, "mcp-manifest.rb")).read()
need(linux_tar in formula and sums[linux_tar] in formula, "the formula lacks the Linux archive or its sha256")

# server.json names this version and its packages.
sj = json.load(open(os.path.join(out, "server.json")))
need(sj.get("version") == version, f"server.json version {sj.get('version')}")
kinds = {p.get("registryType") for p in sj.get("packages", [])}
need({"npm", "pypi", "mcpb"} <= kinds, f"server.json packages {kinds}")

# A wheel and an npm package per target, the launcher, the crate.
wheels = os.listdir(os.path.join(out, "wheels"))
need(any("manylinux" in w and "x86_64" in w for w in wheels), f"wheels {wheels}")
if win:
    need(any("win_amd64" in w for w in wheels), f"wheels {wheels}")
npm = sorted(os.listdir(os.path.join(out, "npm")))
want = [f"mcp-manifest-{version}.tgz", f"mcp-manifest-linux-x64-{version}.tgz"]
if win:
    want.append(f"mcp-manifest-win32-x64-{version}.tgz")
need(npm == sorted(want), f"npm packages {npm}, expected {sorted(want)}")
crate = os.listdir(os.path.join(out, "crate"))
need(crate == [f"mcp-manifest-{version}.crate"], f"crate {crate}")

if problems:
    print("check-release: " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"check-release: {len(assets)} assets, {len(wheels)} wheels, {len(npm)} npm packages, the crate: every check holds")
PY
echo "check-release: $((SECONDS - started)) s"
