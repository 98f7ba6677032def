// The official TypeScript SDK client (@modelcontextprotocol/client, npm) against
// `mcp-manifest serve --http`, through the cutting proxy of http_interop.py:
//
//   node http_interop_ts.mjs PYTHON URL FIXTURES ERA CUT
//
// ERA is `legacy` (the initialize handshake, a session) or `modern` (2026-07-28); CUT is what
// the proxy cuts mid-call: `none`, `tool` (a POST stream after a progress notification), `read`
// (a POST stream halfway through a resources/read answer), `get` (the GET stream after a
// resources/updated) or `random:N` (N cuts of streams at random points). Prints one JSON line:
// whether every answer and notification arrived, and how many messages arrived twice.
// scripts/http-interop.sh installs the pinned SDK and runs this with its Node, MCP_TS_CLIENT
// naming the SDK's entry file.

import { spawn } from 'node:child_process';
import { appendFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

// The SDK from where scripts/http-interop.sh installed it (a script outside node_modules cannot
// import it by name).
const { Client, StreamableHTTPClientTransport } = await import(process.env.MCP_TS_CLIENT);

const TIMEOUT = 20_000;
const [python, url, fixtures, era, cut] = process.argv.slice(2);
const here = new URL('.', import.meta.url).pathname;

// The proxy, in its own process: `port N`, then `plan CUT` / `cuts`.
const proxy = spawn(python, [process.env.PROXY_SCRIPT ?? join(here, 'http_interop.py'), 'proxy', url], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const lines = createInterface({ input: proxy.stdout });
const waiting = [];
lines.on('line', (l) => waiting.shift()?.(l));
const nextLine = () => new Promise((resolve) => waiting.push(resolve));
const port = Number((await nextLine()).split(' ')[1]);
const ask = async (line) => {
  proxy.stdin.write(line + '\n');
};

// Every message the transport hands the client, counted by what it says.
const seen = new Map();
function count(m) {
  let key;
  if (m.method === 'notifications/progress') {
    key = `progress ${m.params.progressToken} ${m.params.progress}`;
  } else if (m.method === 'notifications/resources/updated') {
    key = `updated ${m.params.uri}`;
  } else if ('id' in m && ('result' in m || 'error' in m)) {
    key = `answer ${JSON.stringify(m.id)}`;
  } else {
    key = `other ${JSON.stringify(m)}`;
  }
  seen.set(key, (seen.get(key) ?? 0) + 1);
}

const uri = (name) => 'file://' + realpathSync(join(fixtures, name));
const big = Array.from({ length: 30_000 }, (_, i) => `${String(i).padStart(7, '0')} resumable bytes\n`).join('');
writeFileSync(join(fixtures, 'big.txt'), big);

// The files to change, made now (well before they are watched: their creation is not a change
// the checks wait for), five a round.
const roundNames = (round) => Array.from({ length: 5 }, (_, i) => `ts-watched-${round}-${i}.txt`);
for (let r = 0; r <= 40; r++) for (const n of roundNames(r)) writeFileSync(join(fixtures, n), '0\n');
await new Promise((r) => setTimeout(r, 1500));

const outcome = { client: 'typescript', era, cut, received: false };
const updates = [];
let wake = null;
try {
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`));
  const client = new Client({ name: 'http-interop-ts', version: '1' }, { capabilities: {} });
  client.setNotificationHandler('notifications/resources/updated', (n) => {
    updates.push(n.params.uri);
    wake?.();
  });
  await client.connect(transport, era === 'legacy' ? { prior: { kind: 'legacy' } } : {});
  const onmessage = transport.onmessage;
  transport.onmessage = (m, extra) => {
    count(m);
    if (process.env.DEBUG_MSGS) console.error('MSG', JSON.stringify(m).slice(0, 150));
    onmessage?.(m, extra);
  };

  async function oneTool() {
    const progress = [];
    const r = await client.callTool(
      { name: 'slow', arguments: { secs: '3' } },
      { onprogress: (p) => progress.push(p.progress), timeout: 60_000 },
    );
    const gaps = progress.slice(1).filter((p, i) => p - progress[i] > 0.9);
    if (gaps.length || progress.length < 4) outcome.progress = progress;
    return !r.isError && r.content.some((c) => c.text?.includes('done')) && !gaps.length && progress.length >= 4;
  }
  async function read() {
    const r = await client.readResource({ uri: uri('big.txt') }, { timeout: 60_000, cacheMode: 'bypass' });
    return r.contents[0].text === big;
  }
  async function changes(round) {
    if (era !== 'legacy') return true; // 2026-07-28 has no GET stream
    const names = roundNames(Math.min(round, 40));
    for (const n of names) await client.subscribeResource({ uri: uri(n) });
    for (const n of names) {
      appendFileSync(join(fixtures, n), `${Date.now()}\n`);
      await new Promise((r) => setTimeout(r, 400));
    }
    const want = new Set(names.map(uri));
    const deadline = Date.now() + TIMEOUT;
    while ([...want].some((u) => !updates.includes(u)) && Date.now() < deadline) {
      await new Promise((r) => {
        wake = r;
        setTimeout(r, 200);
      });
    }
    const missing = [...want].filter((u) => !updates.includes(u));
    if (missing.length) outcome.missing = missing;
    for (const n of names) await client.unsubscribeResource({ uri: uri(n) });
    return missing.length === 0;
  }

  await ask(`plan ${cut}`);
  if (cut === 'tool') outcome.received = await oneTool();
  else if (cut === 'read') outcome.received = await read();
  else if (cut === 'get') outcome.received = await changes(0);
  else if (cut.startsWith('random:')) {
    const budget = Number(cut.split(':')[1]);
    let ok = true;
    let round = 0;
    const deadline = Date.now() + 120_000;
    while (ok && Date.now() < deadline) {
      await ask('cuts');
      const cuts = Number((await nextLine()).split(' ')[1]);
      if (cuts >= budget) break;
      round += 1;
      const r = await Promise.allSettled([oneTool(), read(), changes(round)]);
      ok = r.every((x) => x.status === 'fulfilled' && x.value === true);
      if (!ok) outcome.error = JSON.stringify(r.map((x) => x.status === 'fulfilled' ? x.value : String(x.reason))).slice(0, 400);
    }
    outcome.received = ok;
  }
  await client.close();
} catch (e) {
  outcome.error = String(e).slice(0, 400);
}
await ask('cuts');
outcome.cuts = Number((await nextLine()).split(' ')[1]);
outcome.duplicates = [...seen.values()].reduce((a, n) => a + n - 1, 0);
const repeated = [...seen].filter(([, n]) => n > 1).map(([k]) => k.slice(0, 80)).slice(0, 5);
if (repeated.length) outcome.repeated = repeated;
console.log(JSON.stringify(outcome));
proxy.kill();
process.exit(0);
