// The MCP Apps views in a real browser (scripts/views-browser.sh runs this): the real server
// over stdio hands real tool results and the real `ui://` views to a minimal host page
// (host.html / host.js), which renders each view in headless Chromium; the test asserts on the
// view's DOM and saves screenshots.
//
//   node scripts/views/browser-test.mjs --bin BIN --playwright NODE_MODULES --chromium PATH \
//        --shots DIR [--docs DIR]
//
// Prints each check, the measurements, and `N passed, M failed`; exits 1 on a failure.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const { chromium } = createRequire(path.join(args.playwright, 'x.js'))('playwright-core');
const MIME = 'text/html;profile=mcp-app';
const EXTENSION = 'io.modelcontextprotocol/ui';

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) {
    passed++;
    console.log('  ok   ' + name);
  } else {
    failed++;
    console.log('  FAIL ' + name + (detail === undefined ? '' : ': ' + (typeof detail === 'string' ? detail : JSON.stringify(detail))));
  }
}
const equal = (a, b) => JSON.stringify(a) === JSON.stringify(b);
function checkEqual(name, got, want) {
  check(name, equal(got, want), { got, want });
}

// ---- the fixture and the server over stdio ----------------------------------------------------
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-manifest-views-'));
execFileSync('python3', [path.join(here, 'fixture.py'), work], { stdio: 'inherit' });
const manifest = path.join(work, 'mcp-server.toml');
execFileSync(args.bin, ['check', manifest], { stdio: 'inherit' });

const server = spawn(args.bin, ['serve', manifest], { cwd: work, stdio: ['pipe', 'pipe', 'inherit'] });
const waiting = new Map();
let nextId = 1;
readline.createInterface({ input: server.stdout }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id !== undefined && waiting.has(m.id)) {
    waiting.get(m.id)(m);
    waiting.delete(m.id);
  }
});
function rpc(method, params) {
  const id = nextId++;
  server.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(method + ' timed out')), 30000);
    waiting.set(id, (m) => {
      clearTimeout(timer);
      if (m.error) reject(new Error(method + ': ' + JSON.stringify(m.error)));
      else resolve(m.result);
    });
  });
}

console.log('== the server (stdio)');
const init = await rpc('initialize', {
  protocolVersion: '2025-11-25',
  capabilities: { extensions: { [EXTENSION]: { mimeTypes: [MIME] } } },
  clientInfo: { name: 'views-browser-test', version: '1.0.0' },
});
server.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
checkEqual('initialize declares the extension', init.capabilities.extensions?.[EXTENSION], { mimeTypes: [MIME] });

const tools = Object.fromEntries((await rpc('tools/list', {})).tools.map((t) => [t.name, t]));
const expectViews = {
  db_table: 'ui://mcp-manifest/table',
  capped_table: 'ui://mcp-manifest/table',
  people: 'ui://mcp-manifest/table',
  monthly_line: 'ui://mcp-manifest/chart/monthly_line',
  monthly_bar: 'ui://mcp-manifest/chart/monthly_bar',
  daily: 'ui://mcp-manifest/chart/daily',
  not_numeric: 'ui://mcp-manifest/chart/not_numeric',
  missing: 'ui://mcp-manifest/chart/missing',
};
for (const [tool, uri] of Object.entries(expectViews)) {
  checkEqual(`tool ${tool} names its view in _meta.ui.resourceUri (and ui/resourceUri)`,
    [tools[tool]?._meta?.ui?.resourceUri, tools[tool]?._meta?.['ui/resourceUri']], [uri, uri]);
}
check('tools without a view have no _meta', tools.list_resources && tools.list_resources._meta === undefined);

const listed = (await rpc('resources/list', {})).resources.filter((r) => r.uri.startsWith('ui://'));
checkEqual('resources/list lists the views', listed.map((r) => [r.uri, r.mimeType]).sort(),
  [...new Set(Object.values(expectViews))].map((u) => [u, MIME]).sort());

const views = {};
for (const uri of new Set(Object.values(expectViews))) {
  const read = await rpc('resources/read', { uri });
  const c = read.contents[0];
  views[uri] = c;
  checkEqual(`${uri}: mime type and _meta.ui.csp`, [c.mimeType, c._meta?.ui?.csp],
    [MIME, { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] }]);
}
const tableBytes = Buffer.byteLength(views['ui://mcp-manifest/table'].text);

const calls = {
  table: ['db_table', { table: 'events' }],
  capped: ['capped_table', { table: 'events' }],
  people: ['people', {}],
  line: ['monthly_line', {}],
  bar: ['monthly_bar', {}],
  daily: ['daily', {}],
  not_numeric: ['not_numeric', {}],
  missing: ['missing', {}],
};
const results = {};
for (const [key, [tool, a]] of Object.entries(calls)) {
  results[key] = await rpc('tools/call', { name: tool, arguments: a });
  const r = results[key];
  check(`${tool}: a result with text content (the fallback) and structured rows`,
    !r.isError && r.content?.[0]?.type === 'text' && r.content[0].text.length > 0 && r.structuredContent !== undefined,
    r.isError ? r.content : undefined);
}
const events = results.table.structuredContent;
checkEqual('db_table answers 10 000 rows, not truncated', [events.rows.length, events.truncated], [10000, false]);

// ---- the host page ---------------------------------------------------------------------------
const THEMES = {
  light: { '--color-background-primary': 'light-dark(#fafaf7, #0d1117)', '--color-text-primary': 'light-dark(#1f2328, #e6edf3)' },
  dark: { '--color-background-primary': 'light-dark(#fafaf7, #0d1117)', '--color-text-primary': 'light-dark(#1f2328, #e6edf3)' },
};
const cases = new Map();
let pings = 0;
const files = { '/host.html': 'text/html', '/host.js': 'text/javascript', '/host.css': 'text/css' };
const web = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (files[url.pathname]) {
    res.writeHead(200, { 'content-type': files[url.pathname] });
    res.end(fs.readFileSync(path.join(here, url.pathname.slice(1))));
  } else if (url.pathname.startsWith('/case/')) {
    const c = cases.get(decodeURIComponent(url.pathname.slice(6)));
    res.writeHead(c ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(c || {}));
  } else if (url.pathname === '/view') {
    // As a host builds it from the resource's `_meta.ui.csp` (the spec's construction); the
    // document's own policy applies as well.
    const c = views[url.searchParams.get('uri')];
    const csp = c._meta.ui.csp;
    const list = (xs) => xs.join(' ');
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': [
        "default-src 'none'",
        `script-src 'self' 'unsafe-inline' ${list(csp.resourceDomains)}`,
        `style-src 'self' 'unsafe-inline' ${list(csp.resourceDomains)}`,
        `connect-src 'self' ${list(csp.connectDomains)}`,
        `img-src 'self' data: ${list(csp.resourceDomains)}`,
        `font-src 'self' ${list(csp.resourceDomains)}`,
        `media-src 'self' data: ${list(csp.resourceDomains)}`,
        `frame-src ${csp.frameDomains.length ? list(csp.frameDomains) : "'none'"}`,
        "object-src 'none'",
        `base-uri ${csp.baseUriDomains.length ? list(csp.baseUriDomains) : "'self'"}`,
      ].join('; '),
    });
    res.end(c.text);
  } else if (url.pathname === '/ping') {
    pings++;
    res.writeHead(200, { 'access-control-allow-origin': '*' });
    res.end('pong');
  } else if (url.pathname === '/favicon.ico') {
    res.writeHead(204);
    res.end();
  } else {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((resolve) => web.listen(0, '127.0.0.1', resolve));
const port = web.address().port;
// The view is served from another origin than the host page, as hosts do.
const viewOrigin = `http://localhost:${port}`;

const browser = await chromium.launch({
  executablePath: args.chromium,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
fs.mkdirSync(args.shots, { recursive: true });
const shots = [];
const figures = {};

// Opens the host page on one case; returns the page, the view's frame and the console errors.
async function open(name, { key, viewUri, theme = 'light', width = 720, height, variables = true }) {
  const [tool, a] = calls[key];
  cases.set(name, {
    view: viewUri,
    viewUrl: `${viewOrigin}/view?uri=${encodeURIComponent(viewUri)}`,
    tool: tools[tool],
    arguments: a,
    result: results[key],
    theme,
    variables: variables ? THEMES[theme] : undefined,
    width,
    height,
  });
  const page = await browser.newPage({ viewport: { width: width + 48, height: 900 }, deviceScaleFactor: 1 });
  const errors = [];
  const dialogs = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await page.goto(`http://127.0.0.1:${port}/host.html?case=${encodeURIComponent(name)}`);
  await page.waitForFunction(() => window.host && window.host.initialized, null, { timeout: 20000 });
  const frame = await (await page.$('iframe')).contentFrame();
  await frame.waitForFunction(() => document.documentElement.dataset.paintMs !== undefined, null, { timeout: 20000 });
  // The host follows the view's size: wait until it has.
  await page.waitForFunction(() => {
    const s = window.host.sizes[window.host.sizes.length - 1];
    return s && Math.abs(document.querySelector('iframe').clientHeight - s.height) < 1.5;
  }, null, { timeout: 10000 }).catch(() => {});
  return { page, frame, errors, dialogs };
}

// A screenshot of the view; those the README shows are copied to --docs too.
async function shoot(page, name, { readme = true } = {}) {
  const file = path.join(args.shots, name + '.png');
  await (await page.$('iframe')).screenshot({ path: file });
  shots.push([file, fs.statSync(file).size]);
  if (args.docs && readme) fs.copyFileSync(file, path.join(args.docs, name + '.png'));
}

const texts = (frame, selector) => frame.$$eval(selector, (els) => els.map((e) => e.textContent));
const columnOf = (frame, col) => frame.$$eval('#body tr', (trs, c) => trs.map((tr) => tr.children[c].textContent), col);
const shown = (frame, selector) => frame.$eval(selector, (e) => !e.hidden && e.getBoundingClientRect().height > 0);

async function typeFilter(frame, text) {
  return frame.evaluate(async (value) => {
    const input = document.getElementById('filter');
    const before = performance.now();
    input.value = value;
    input.dispatchEvent(new Event('input'));
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    return performance.now() - before;
  }, text);
}

// ---- the table: 10 000 rows --------------------------------------------------------------------
console.log('== table view: 10 000 rows of db_table');
{
  const { page, frame, errors, dialogs } = await open('table-light', { key: 'table', viewUri: expectViews.db_table });
  const log = await page.evaluate(() => window.host.log.map((l) => l.message));
  check('the view starts with ui/initialize (protocol 2026-01-26, appInfo, appCapabilities)',
    log[0]?.method === 'ui/initialize' && log[0].params.protocolVersion === '2026-01-26' &&
    typeof log[0].params.appInfo?.name === 'string' && typeof log[0].params.appCapabilities === 'object', log[0]);
  check('then ui/notifications/initialized', log[1]?.method === 'ui/notifications/initialized', log[1]);
  const sizes = await page.evaluate(() => window.host.sizes);
  check('the view reports ui/notifications/size-changed and the host follows it',
    sizes.length > 0 && sizes[sizes.length - 1].height > 100 &&
    Math.abs((await page.$eval('iframe', (f) => f.clientHeight)) - sizes[sizes.length - 1].height) < 1.5, sizes);

  checkEqual('row count', await frame.textContent('#count'), '10,000 rows');
  checkEqual('one page of 500 rows in the DOM', (await frame.$$('#body tr')).length, 500);
  checkEqual('the pager', await frame.textContent('#page'), '1–500 of 10,000');
  check('no truncated notice', !(await shown(frame, '#truncated')));
  checkEqual('headers are the result\'s columns', await texts(frame, '#head th button span:first-child'), events.columns);
  const first = events.columns.map((c) => (events.rows[0][c] === null ? 'NULL' : String(events.rows[0][c])));
  checkEqual('the first row as the server sent it', await frame.$$eval('#body tr:first-child td', (tds) => tds.map((t) => t.textContent)), first);
  checkEqual('a NULL shows as NULL, marked', await frame.$eval('#body tr:nth-child(7) td:nth-child(3)', (t) => [t.textContent, t.className]), ['NULL', 'null']);

  await frame.click('#next');
  checkEqual('next page', [await frame.textContent('#page'), (await columnOf(frame, 0))[0]], ['501–1,000 of 10,000', '501']);

  const amount = events.columns.indexOf('amount');
  const byAmount = events.rows.map((r, i) => [r.amount, i]).filter(([v]) => v !== null);
  const asc = [...byAmount].sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, i]) => String(events.rows[i].id));
  const desc = [...byAmount].sort((a, b) => b[0] - a[0] || a[1] - b[1]).map(([, i]) => String(events.rows[i].id));
  const sortMs = await frame.evaluate((c) => {
    const t = performance.now();
    document.querySelectorAll('#head button')[c].click();
    return performance.now() - t;
  }, amount);
  figures.sortMs = sortMs;
  checkEqual('sorted by amount, ascending (ids of the first 20 rows)', (await columnOf(frame, 0)).slice(0, 20), asc.slice(0, 20));
  checkEqual('aria-sort says ascending', await frame.$eval(`#head th:nth-child(${amount + 1})`, (t) => t.getAttribute('aria-sort')), 'ascending');
  checkEqual('the pager went back to the first page', await frame.textContent('#page'), '1–500 of 10,000');
  await frame.click(`#head th:nth-child(${amount + 1}) button`);
  checkEqual('sorted by amount, descending', (await columnOf(frame, 0)).slice(0, 20), desc.slice(0, 20));
  for (let i = 0; i < 19; i++) await frame.click('#next');
  const last = await columnOf(frame, amount);
  check('NULLs come last, descending too', last[last.length - 1] === 'NULL' && (await frame.$eval('#next', (b) => b.disabled)), last.slice(-3));

  figures.filterMs = await typeFilter(frame, '東京');
  const tokyo = events.rows.filter((r) => Object.values(r).some((v) => v !== null && String(v).toLowerCase().includes('東京'))).length;
  checkEqual('filter 東京: the count', await frame.textContent('#count'), `${tokyo.toLocaleString('en-US')} of 10,000 rows`);
  const cities = await columnOf(frame, events.columns.indexOf('city'));
  check('filter 東京: every row shown holds it', cities.length === Math.min(500, tokyo) && cities.every((c) => c === '東京'), cities.slice(0, 3));

  await typeFilter(frame, 'onerror=alert(1)');
  checkEqual('filter finds the hostile cell', await frame.textContent('#count'), '1 of 10,000 rows');
  checkEqual('the hostile cell shows its characters', await frame.$eval('#body td:last-child', (t) => t.textContent), '<img src=x onerror=alert(1)>');
  checkEqual('… and made no element', await frame.evaluate(() => document.querySelectorAll('img, #body script, #body b').length), 0);
  await typeFilter(frame, '</script>');
  checkEqual('a cell holding </script><script> is text', await frame.$eval('#body td:last-child', (t) => t.textContent), '</script><script>alert(2)</script>');
  await typeFilter(frame, 'onmouseover');
  checkEqual('a cell holding a quoted attribute is text', await frame.$eval('#body td:last-child', (t) => t.textContent), '" onmouseover="alert(3)');
  await frame.hover('#body td:last-child');
  await typeFilter(frame, 'no such text at all');
  checkEqual('no match: a message says so', [await shown(frame, '#empty'), await frame.textContent('#empty')], [true, 'No row holds “no such text at all”.']);
  await typeFilter(frame, '');

  check('no script ran from a cell (no dialog)', dialogs.length === 0, dialogs);
  check('no CSP violation or script error', errors.length === 0, errors);
  const fetched = await frame.evaluate((u) => fetch(u).then(() => 'loaded', () => 'blocked'), `http://127.0.0.1:${port}/ping`);
  check('the view cannot reach the network: its own CSP blocks it',
    fetched === 'blocked' && pings === 0 && errors.some((e) => e.includes("default-src 'none'")), { fetched, pings, errors });
  figures.renderMs = Number(await frame.evaluate(() => document.documentElement.dataset.renderMs));
  figures.paintMs = Number(await frame.evaluate(() => document.documentElement.dataset.paintMs));
  checkEqual('light theme: the host\'s background variable', await frame.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(250, 250, 247)');
  await frame.evaluate(() => { document.getElementById('scroll').scrollTop = 0; });
  await shoot(page, 'table-light');
  await page.close();
}

console.log('== table view: dark theme, 320 px, timings');
{
  const { page, frame, errors } = await open('table-dark', { key: 'table', viewUri: expectViews.db_table, theme: 'dark' });
  checkEqual('dark theme: the host\'s background variable', await frame.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(13, 17, 23)');
  checkEqual('dark theme: the host\'s text variable', await frame.evaluate(() => getComputedStyle(document.body).color), 'rgb(230, 237, 243)');
  const header = await frame.evaluate(() => getComputedStyle(document.querySelector('th')).backgroundColor);
  check('dark theme: the view\'s own dark colours elsewhere', header === 'rgb(38, 38, 42)', header);
  check('no errors', errors.length === 0, errors);
  await shoot(page, 'table-dark');
  await page.close();
}
{
  const { page, frame, errors } = await open('table-changes', { key: 'table', viewUri: expectViews.db_table, variables: false });
  const background = () => frame.evaluate(() => getComputedStyle(document.body).backgroundColor);
  checkEqual('no host variables, light: the view\'s own light background', await background(), 'rgb(255, 255, 255)');
  await page.evaluate(() => window.host.send({ jsonrpc: '2.0', method: 'ui/notifications/host-context-changed', params: { theme: 'dark' } }));
  await frame.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  checkEqual('host-context-changed to dark: the view\'s own dark background', await background(), 'rgb(27, 27, 29)');
  await page.evaluate(() => window.host.send({ jsonrpc: '2.0', method: 'ui/notifications/host-context-changed',
    params: { styles: { variables: { '--color-background-primary': 'rgb(1, 2, 3)' } } } }));
  await frame.waitForFunction(() => getComputedStyle(document.body).backgroundColor === 'rgb(1, 2, 3)', null, { timeout: 5000 }).catch(() => {});
  checkEqual('host-context-changed with a variable: applied', await background(), 'rgb(1, 2, 3)');
  await page.evaluate(() => {
    window.host.send({ jsonrpc: '2.0', id: 'p1', method: 'ping', params: {} });
    window.host.send({ jsonrpc: '2.0', id: 't1', method: 'ui/resource-teardown', params: { reason: 'test' } });
    window.host.send({ jsonrpc: '2.0', id: 'u1', method: 'ui/unknown-request', params: {} });
  });
  await page.waitForFunction(() => window.host.log.filter((l) => ['p1', 't1', 'u1'].includes(l.message.id)).length === 3);
  const answers = await page.evaluate(() => window.host.log.filter((l) => ['p1', 't1', 'u1'].includes(l.message.id))
    .map((l) => [l.message.id, l.message.result, l.message.error && l.message.error.code]));
  checkEqual('ping and ui/resource-teardown answered, an unknown request refused', answers,
    [['p1', {}, undefined], ['t1', {}, undefined], ['u1', undefined, -32601]].map((a) => JSON.parse(JSON.stringify(a))));
  check('no errors', errors.length === 0, errors);
  await page.close();
}
{
  const { page, frame, errors } = await open('table-fixed', { key: 'table', viewUri: expectViews.db_table, height: 360 });
  const fit = await frame.evaluate(() => [document.documentElement.scrollHeight, window.innerHeight,
    document.getElementById('next').getBoundingClientRect().bottom]);
  check('a fixed-height container: the view fills it, the table scrolls inside', fit[0] <= fit[1] && fit[2] <= fit[1] && fit[1] === 360, fit);
  check('no errors', errors.length === 0, errors);
  await page.close();
}
{
  const { page, frame, errors } = await open('table-320', { key: 'table', viewUri: expectViews.db_table, width: 320, variables: false });
  const fit = await frame.evaluate(() => ({
    page: document.documentElement.scrollWidth,
    view: window.innerWidth,
    filter: document.getElementById('filter').getBoundingClientRect().right,
    pager: document.getElementById('next').getBoundingClientRect().right,
  }));
  check('320 px: nothing wider than the view but the table, which scrolls', fit.page <= fit.view && fit.filter <= fit.view && fit.pager <= fit.view, fit);
  check('320 px: the table scrolls sideways', await frame.evaluate(() => {
    const s = document.getElementById('scroll');
    return s.scrollWidth > s.clientWidth;
  }));
  check('no errors', errors.length === 0, errors);
  await shoot(page, 'table-320');
  await page.close();
}
{
  const renders = [];
  for (let i = 0; i < 5; i++) {
    const { page, frame } = await open('table-timing-' + i, { key: 'table', viewUri: expectViews.db_table });
    renders.push([Number(await frame.evaluate(() => document.documentElement.dataset.renderMs)),
      Number(await frame.evaluate(() => document.documentElement.dataset.paintMs))]);
    await page.close();
  }
  renders.sort((a, b) => a[1] - b[1]);
  figures.renders = renders;
}

console.log('== table view: truncated, and a JSON tool');
{
  const { page, frame, errors } = await open('capped', { key: 'capped', viewUri: expectViews.capped_table });
  check('truncated: the notice shows', await shown(frame, '#truncated'));
  checkEqual('truncated: the notice says so', await frame.textContent('#truncated'),
    'Truncated: the server sent only the first 250 rows of the answer (the source\'s row limit or size cap).');
  checkEqual('truncated: 250 rows, no pager', [(await frame.$$('#body tr')).length, await shown(frame, '#pager')], [250, false]);
  check('no errors', errors.length === 0, errors);
  await page.close();
}
{
  const { page, frame, errors } = await open('people', { key: 'people', viewUri: expectViews.people });
  checkEqual('a JSON array of objects: its keys are the columns', await texts(frame, '#head th button span:first-child'), ['name', 'langs', 'active']);
  checkEqual('… and its objects the rows', await frame.$$eval('#body tr', (trs) => trs.map((tr) => Array.from(tr.children, (td) => td.textContent))),
    [['Ada', '3', 'true'], ['Grace', '5', 'false'], ['<b>bold</b>', 'NULL', 'true']]);
  checkEqual('markup in a value is text', await frame.evaluate(() => document.querySelectorAll('#body b').length), 0);
  await frame.click('#head th:nth-child(2) button');
  checkEqual('sorting numbers as numbers, NULL last', await columnOf(frame, 1), ['3', '5', 'NULL']);
  check('no errors', errors.length === 0, errors);
  await page.close();
}

// ---- charts -----------------------------------------------------------------------------------
const sales = results.line.structuredContent.rows;
for (const theme of ['light', 'dark']) {
  console.log(`== line chart (${theme})`);
  const { page, frame, errors } = await open('line-' + theme, { key: 'line', viewUri: expectViews.monthly_line, theme });
  check('the chart shows, the rows do not', (await shown(frame, '#chart')) && !(await shown(frame, '#rows')));
  checkEqual('legend: one entry a series', await texts(frame, '#legend li'), ['revenue', 'cost']);
  checkEqual('axis titles', await texts(frame, 'svg .title'), ['month', 'revenue, cost']);
  const paths = await frame.$$eval('svg path.line', (ps) => ps.map((p) => (p.getAttribute('d').match(/[ML]/g) || []).length));
  checkEqual('one line a series, a point a row', paths, [12, 12]);
  for (const [si, col] of [[0, 'revenue'], [1, 'cost']]) {
    const dots = await frame.$$eval(`svg g[data-series="${col}"] circle`, (cs) => cs.map((c) => [c.dataset.x, Number(c.dataset.value), Number(c.getAttribute('cy'))]));
    checkEqual(`${col}: a point a month, with its value`, dots.map(([x, v]) => [x, v]), sales.map((r) => [r.month, r[col]]));
    const top = dots.reduce((a, b) => (b[1] > a[1] ? b : a));
    const low = dots.reduce((a, b) => (b[1] < a[1] ? b : a));
    check(`${col}: higher values are drawn higher`, dots.every(([, v, cy]) => (v === top[1] ? cy === top[2] : cy > top[2]) && (v === low[1] || cy < low[2])), { si });
  }
  const ticks = await texts(frame, 'svg .tick');
  check('x axis labels are the months, y axis labels numbers', ticks.includes('2026-01') && ticks.some((t) => /^\d[\d,]*$/.test(t)), ticks);
  await frame.hover('svg g[data-series="revenue"] circle:nth-of-type(5)', { force: true });
  const tip = await frame.$eval('#tip', (t) => [!t.hidden, Array.from(t.children, (c) => c.textContent)]);
  checkEqual('hover: the values of that month', tip, [true, [`month: ${sales[4].month}`, `revenue: ${sales[4].revenue.toLocaleString('en-US')}`, `cost: ${sales[4].cost.toLocaleString('en-US')}`]]);
  checkEqual('hover: its points are marked', await frame.$$eval('circle.on', (cs) => cs.map((c) => c.dataset.x)), [sales[4].month, sales[4].month]);
  check('no errors', errors.length === 0, errors);
  await shoot(page, 'line-' + theme);
  await page.mouse.move(0, 0);
  await frame.click('#toggle');
  checkEqual('"Show rows": the rows as a table', [(await shown(frame, '#rows')), (await frame.$$('#body tr')).length], [true, 12]);
  await page.close();
}
for (const theme of ['light', 'dark']) {
  console.log(`== bar chart (${theme})`);
  const { page, frame, errors } = await open('bar-' + theme, { key: 'bar', viewUri: expectViews.monthly_bar, theme });
  const bars = await frame.$$eval('svg rect.col', (rs) => rs.map((r) => [r.parentNode.dataset.series, r.dataset.x, Number(r.dataset.value), Number(r.getAttribute('height')), Number(r.getAttribute('y')) + Number(r.getAttribute('height'))]));
  checkEqual('a bar a row and series, with its value', bars.map(([s, x, v]) => [s, x, v]),
    ['revenue', 'cost'].flatMap((c) => sales.map((r) => [c, r.month, r[c]])));
  const scale = bars[0][3] / bars[0][2];
  check('bar heights are proportional to the values, from one baseline',
    bars.every(([, , v, h, bottom]) => Math.abs(h - v * scale) < 1 && Math.abs(bottom - bars[0][4]) < 0.5), bars.slice(0, 3));
  checkEqual('legend', await texts(frame, '#legend li'), ['revenue', 'cost']);
  await frame.hover('svg g[data-series="cost"] rect:nth-of-type(3)', { force: true });
  checkEqual('hover: the values of that month', await frame.$eval('#tip', (t) => Array.from(t.children, (c) => c.textContent)),
    [`month: ${sales[2].month}`, `revenue: ${sales[2].revenue.toLocaleString('en-US')}`, `cost: ${sales[2].cost.toLocaleString('en-US')}`]);
  check('no errors', errors.length === 0, errors);
  await shoot(page, 'bar-' + theme);
  await page.close();
}
{
  console.log('== line chart over dates (365 points)');
  const { page, frame, errors } = await open('daily', { key: 'daily', viewUri: expectViews.daily });
  const svgData = await frame.$eval('svg', (s) => [s.dataset.scale, s.dataset.points]);
  checkEqual('dates are a time axis', svgData, ['time', '365']);
  checkEqual('one path of 365 points, no markers past 200', [await frame.$eval('svg path.line', (p) => p.getAttribute('d').match(/[ML]/g).length), (await frame.$$('svg circle')).length], [365, 0]);
  const daily = results.daily.structuredContent.rows;
  const at = daily.map((r) => Date.parse(r.day));
  const mid = (at[0] + at[at.length - 1]) / 2;
  const middle = at.reduce((best, t, k) => (Math.abs(t - mid) < Math.abs(at[best] - mid) ? k : best), 0);
  const box = await frame.$eval('svg rect.hit', (r) => { const b = r.getBoundingClientRect(); return [b.width, b.height]; });
  await frame.hover('svg rect.hit', { position: { x: box[0] / 2, y: box[1] / 2 }, force: true });
  // The pointer lands on a whole pixel, and days are under 2 px apart: the day shown is the
  // middle one or its neighbour, with that day's own total.
  const tip = await frame.$eval('#tip', (t) => Array.from(t.children, (c) => c.textContent));
  const shownDay = daily.findIndex((r) => tip[0] === `day: ${r.day}`);
  check('hover in the middle: the middle day and its total',
    Math.abs(shownDay - middle) <= 1 && tip[1] === `total: ${daily[shownDay].total.toLocaleString('en-US')}`, { tip, middle: daily[middle] });
  await frame.focus('svg');
  await frame.press('svg', 'End');
  checkEqual('keyboard: End shows the last day', await frame.$eval('#tip .head', (t) => t.textContent), `day: ${daily[daily.length - 1].day}`);
  const ends = await frame.$$eval('svg .tick', (ts) => {
    const svgBox = ts[0].ownerSVGElement.getBoundingClientRect();
    return ts.map((t) => t.getBoundingClientRect()).filter((b) => b.right > svgBox.right + 0.5 || b.left < svgBox.left - 0.5).length;
  });
  checkEqual('every axis label inside the chart', ends, 0);
  await shoot(page, 'daily', { readme: false });
  check('no errors', errors.length === 0, errors);
  await page.close();
}
for (const [key, column, why] of [['not_numeric', 'region', 'is not numeric'], ['missing', 'profit', 'the result has no column']]) {
  console.log(`== chart fallback: ${key}`);
  const { page, frame, errors } = await open(key, { key, viewUri: expectViews[key] });
  check('the table instead of the chart', !(await shown(frame, '#chart')) && (await shown(frame, '#rows')) && (await frame.$$('#body tr')).length === 12);
  const note = await frame.textContent('#fallback');
  check('a note says why, naming the column', note.includes(column) && note.includes(why), note);
  await shoot(page, 'fallback-' + key, { readme: false });
  check('no errors', errors.length === 0, errors);
  await page.close();
}

await browser.close();
web.close();
const exited = new Promise((resolve) => server.on('exit', resolve));
server.stdin.end();
await exited;
fs.rmSync(work, { recursive: true, force: true });

// ---- figures ----------------------------------------------------------------------------------
const median = (xs) => xs[Math.floor(xs.length / 2)];
console.log('== figures');
console.log(`view document: ${tableBytes} bytes (ui://mcp-manifest/table)`);
console.log(`10 000 rows in headless Chromium, from the tool-result message: ${figures.renders.map(([r, p]) => `${r.toFixed(0)}/${p.toFixed(0)}`).join(', ')} ms (rendered/next frame, 5 loads; median next frame ${median(figures.renders)[1].toFixed(0)} ms)`);
console.log(`sort 10 000 rows by a number column: ${figures.sortMs.toFixed(0)} ms; filter 10 000 rows: ${figures.filterMs.toFixed(0)} ms (to the next frame)`);
console.log('screenshots:');
for (const [file, size] of shots) console.log(`  ${file} (${size} bytes)`);
console.log(`views browser test: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
