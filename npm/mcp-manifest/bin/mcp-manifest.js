#!/usr/bin/env node
// The `mcp-manifest` command of the npm package: runs the native binary that npm installed from
// this platform's package (one of the optionalDependencies, each with `os` and `cpu` set, so npm
// installs only the one that fits: the convention of esbuild, Biome and Codex). Arguments,
// stdin/stdout/stderr, the exit code and signals pass through unchanged: over stdio the binary
// talks MCP with the client directly. MCP_MANIFEST_BINARY=PATH runs that binary instead.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

const PLATFORMS = {
  "linux x64": "@mcp-manifest/linux-x64",
  "linux arm64": "@mcp-manifest/linux-arm64",
  "darwin x64": "@mcp-manifest/darwin-x64",
  "darwin arm64": "@mcp-manifest/darwin-arm64",
  "win32 x64": "@mcp-manifest/win32-x64",
};

function packageVersion() {
  return require(path.join(__dirname, "..", "package.json")).version;
}

function fail(message) {
  process.stderr.write(`mcp-manifest: ${message}\n`);
  process.exit(1);
}

function binary() {
  if (process.env.MCP_MANIFEST_BINARY) return process.env.MCP_MANIFEST_BINARY;
  const key = `${process.platform} ${process.arch}`;
  const pkg = PLATFORMS[key];
  const source =
    "build it from source instead (https://www.rust-lang.org/tools/install, then " +
    "`cargo install --locked mcp-manifest`), or set MCP_MANIFEST_BINARY to a binary you built";
  if (!pkg) {
    fail(
      `no prebuilt binary for ${process.platform}-${process.arch} (there are: ` +
        `${Object.keys(PLATFORMS).map((k) => k.replace(" ", "-")).join(", ")}); ${source}.`,
    );
  }
  const exe = process.platform === "win32" ? "mcp-manifest.exe" : "mcp-manifest";
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch {
    // Not installed beside this package: npm was told to omit optional dependencies
    // (--omit=optional, --no-optional), or the platform package failed to download.
  }
  const musl =
    process.platform === "linux" && !process.report?.getReport?.().header?.glibcVersionRuntime;
  fail(
    `the package ${pkg}, which holds the binary for this platform, is not installed.` +
      (musl
        ? " This looks like a musl-based Linux (Alpine): the Linux binaries need glibc."
        : " npm installs it as an optional dependency: reinstall without --omit=optional / " +
          "--no-optional, or install it yourself: `npm install " +
          `${pkg}@${packageVersion()}\`.`) +
      ` Or ${source}.`,
  );
}

// The binary is told it runs from npm's cache, through this package: a path into that cache
// makes a poor command for a client's configuration (`register`), `npx -y mcp-manifest@VERSION`
// a lasting one.
const env = { ...process.env, MCP_MANIFEST_LAUNCHER: `npm:mcp-manifest@${packageVersion()}` };
const child = spawn(binary(), process.argv.slice(2), { stdio: "inherit", windowsHide: true, env });
// Signals sent to this process (a client stopping the server, Ctrl-C) go on to the binary, which
// ends its tools' process trees; this process exits the way the binary did.
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK"].filter(
  (s) => process.platform === "win32" || s !== "SIGBREAK",
);
for (const signal of forwarded) {
  process.on(signal, () => {
    try {
      child.kill(signal);
    } catch {
      // The binary already exited.
    }
  });
}
child.on("error", (e) => fail(`could not start ${child.spawnfile}: ${e.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
