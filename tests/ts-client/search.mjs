// The official MCP TypeScript client (@modelcontextprotocol/client) driving
// a gateway started with --tool-search:
//
//   node search.mjs http URL QUERY TOOL ARGS_JSON
//   node search.mjs stdio QUERY TOOL ARGS_JSON -- COMMAND [ARGS...]
//
// It opens a subscriptions/listen stream for tools/list_changed, lists the
// tools (only the always-loaded ones and mcp__switchboard__search_tools are
// expected), calls search_tools with QUERY, waits for the list_changed the
// gateway sends this caller, lists again (TOOL is expected now), calls TOOL
// with ARGS_JSON, and, when its result was over the budget, reads the rest
// with mcp__switchboard__read_result by the handle in the note, to the end.
// Prints one JSON line saying what happened; exits 0 when every step went
// as expected, 1 otherwise.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const SEARCH = 'mcp__switchboard__search_tools';
const READ = 'mcp__switchboard__read_result';

const [mode, ...rest] = process.argv.slice(2);
let transport, query, tool, args;
if (mode === 'http' && rest.length === 4) {
  let url;
  [url, query, tool, args] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url));
} else if (mode === 'stdio' && rest.length >= 5 && rest[3] === '--') {
  [query, tool, args] = rest;
  const [command, ...cmdArgs] = rest.slice(4);
  transport = new StdioClientTransport({ command, args: cmdArgs, env: { ...process.env }, stderr: 'inherit' });
} else {
  console.error('usage: node search.mjs http URL QUERY TOOL ARGS_JSON | node search.mjs stdio QUERY TOOL ARGS_JSON -- COMMAND [ARGS...]');
  process.exit(2);
}

const client = new Client(
  { name: 'switchboard-ts-search', version: '0.1.0' },
  { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
);
let changed;
const listChanged = new Promise((resolve) => { changed = resolve; });
client.setNotificationHandler('notifications/tools/list_changed', () => changed(true));

const report = { mode, ok: false };
const text = (result) => (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const within = (promise, ms, what) => Promise.race([
  promise,
  new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms)),
]);
try {
  await client.connect(transport);
  const subscription = await client.listen({ toolsListChanged: true });
  report.before = (await client.listTools()).tools.map((t) => t.name);
  const found = await client.callTool({ name: SEARCH, arguments: { query } });
  report.search = text(found).slice(0, 400);
  report.notified = await within(listChanged, 20000, 'tools/list_changed');
  report.after = (await client.listTools()).tools.map((t) => t.name);
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
  const first = text(result);
  report.called = { isError: !!result.isError, chars: first.length };
  const handle = /"handle": "([^"]+)"/.exec(first)?.[1];
  const offset = Number(/"offset": (\d+)/.exec(first)?.[1]);
  report.pages = 0;
  if (handle) {
    let next = offset;
    let last = '';
    for (let i = 0; i < 100; i++) {
      const page = await client.callTool({ name: READ, arguments: { handle, offset: next } });
      const body = text(page);
      report.pages += 1;
      if (page.isError) { report.readError = body; break; }
      last = body;
      if (body.includes('that is the end')) break;
      next = Number(/to read on, offset (\d+)/.exec(body)?.[1]);
    }
    report.end = last.slice(-200);
  }
  await subscription.close?.();
  report.ok = !report.before.includes(tool) && report.before.includes(SEARCH) &&
    report.search.includes(tool) && report.notified === true && report.after.includes(tool) &&
    !result.isError && (!handle || report.end.includes('that is the end') || report.end.length > 0);
} catch (e) {
  report.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(report));
await client.close().catch(() => {});
process.exit(report.ok ? 0 : 1);
