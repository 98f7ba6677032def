// A minimal MCP Apps host (SEP-1865, spec 2026-01-26) for scripts/views-browser.sh: it renders
// one view in a sandboxed iframe of another origin and speaks the host side of the messages —
// answers `ui/initialize` with the host context (theme, style variables, container), waits for
// `ui/notifications/initialized`, then sends `…/tool-input` and the real `…/tool-result` the
// test got from the server; follows `…/size-changed`. Everything it sees is in `window.host`.
'use strict';
(async () => {
  const name = new URLSearchParams(location.search).get('case');
  const spec = await (await fetch('/case/' + encodeURIComponent(name))).json();
  const host = { log: [], initialized: false, sentResultAt: 0, sizes: [], spec: { view: spec.view } };
  window.host = host;
  if (spec.theme === 'dark') document.body.classList.add('dark');

  const frame = document.createElement('iframe');
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.title = 'view';
  frame.style.width = spec.width + 'px';
  frame.style.height = (spec.height || 160) + 'px';
  frame.src = spec.viewUrl;
  document.getElementById('host').append(frame);

  const send = (message) => frame.contentWindow.postMessage(message, '*');
  host.send = send;
  const summary = (m) => ({
    id: m.id, method: m.method, params: m.method === 'ui/notifications/tool-result' ? '…' : m.params,
    result: m.result, error: m.error,
  });

  window.addEventListener('message', (event) => {
    if (event.source !== frame.contentWindow) return;
    const m = event.data;
    host.log.push({ from: 'view', message: summary(m) });
    if (!m || m.jsonrpc !== '2.0') return;
    if (m.method === 'ui/initialize' && m.id !== undefined) {
      const context = {
        theme: spec.theme,
        displayMode: 'inline',
        availableDisplayModes: ['inline'],
        containerDimensions: spec.height ? { width: spec.width, height: spec.height } : { width: spec.width, maxHeight: 640 },
        locale: 'en-US',
        platform: 'web',
        toolInfo: { id: 1, tool: spec.tool },
      };
      if (spec.variables) context.styles = { variables: spec.variables };
      send({
        jsonrpc: '2.0', id: m.id,
        result: {
          protocolVersion: '2026-01-26',
          hostInfo: { name: 'mcp-manifest-views-test-host', version: '1.0.0' },
          hostCapabilities: {},
          hostContext: context,
        },
      });
    } else if (m.method === 'ui/notifications/initialized') {
      host.initialized = true;
      send({ jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: { arguments: spec.arguments } });
      host.sentResultAt = performance.now();
      send({ jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: spec.result });
    } else if (m.method === 'ui/notifications/size-changed') {
      host.sizes.push(m.params);
      if (!spec.height && typeof m.params.height === 'number') frame.style.height = m.params.height + 'px';
    } else if (m.method !== undefined && m.id !== undefined) {
      send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
    }
  });
})();
