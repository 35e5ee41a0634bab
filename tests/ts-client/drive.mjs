// The official MCP TypeScript client (@modelcontextprotocol/client) driving
// the Switchboard gateway, as a team's agents would:
//
//   node drive.mjs http URL ALLOWED ASKED
//   node drive.mjs stdio ALLOWED ASKED -- COMMAND [ARGS...]
//
// Pinned to the 2026-07-28 wire and declaring form elicitation, it lists the
// tools, calls ALLOWED (a tool the gateway's rules allow), then calls ASKED
// (a tool the gate asks about): the gateway puts the approval question to
// this client as an `input_required` elicitation, which the handler below
// accepts, and the call completes. The stdio child inherits this process's
// environment. Prints one JSON line saying what happened; exits 0 when every
// step went as expected, 1 otherwise.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [mode, ...rest] = process.argv.slice(2);
let transport, allowed, asked;
if (mode === 'http' && rest.length === 3) {
  let url;
  [url, allowed, asked] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url));
} else if (mode === 'stdio' && rest.length >= 4 && rest[2] === '--') {
  [allowed, asked] = rest;
  const [command, ...args] = rest.slice(3);
  transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: 'inherit' });
} else {
  console.error('usage: node drive.mjs http URL ALLOWED ASKED | node drive.mjs stdio ALLOWED ASKED -- COMMAND [ARGS...]');
  process.exit(2);
}

const client = new Client(
  { name: 'switchboard-ts-check', version: '0.1.0' },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
);
const questions = [];
client.setRequestHandler('elicitation/create', async (request) => {
  questions.push(request.params.message);
  return { action: 'accept', content: { approve: true } };
});

const report = { mode, ok: false };
const text = (result) => (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
try {
  await client.connect(transport);
  report.negotiated = client.getNegotiatedProtocolVersion();
  report.server = client.getServerVersion()?.name;
  const { tools } = await client.listTools();
  report.tools = tools.map((t) => t.name);
  const first = await client.callTool({ name: allowed, arguments: {} });
  report.allowed = { isError: !!first.isError, text: text(first).slice(0, 200) };
  const second = await client.callTool({ name: asked, arguments: { query: 'handbook' } });
  report.asked = { isError: !!second.isError, text: text(second).slice(0, 200) };
  report.questions = questions.length;
  report.ok = report.tools.includes(allowed) && report.tools.includes(asked) &&
    !first.isError && !second.isError && questions.length === 1 &&
    questions[0].includes(asked);
} catch (e) {
  report.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(report));
await client.close().catch(() => {});
process.exit(report.ok ? 0 : 1);
