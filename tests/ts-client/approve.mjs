// The official MCP TypeScript client (@modelcontextprotocol/client) calling
// a tool the gateway's gate asks about, declaring URL elicitation only
// (no forms): the gateway's question is a link to its console's approval
// page.
//
//   node approve.mjs URL TOKEN TOOL ARGUMENTS_JSON
//
// Connects to the gateway at URL with the bearer TOKEN and calls TOOL with
// ARGUMENTS_JSON.
// When asked, prints one JSON line {"url": LINK} and waits for a line on
// stdin (a person decided in the console), then accepts; the client's
// retry completes the call. Prints one JSON report line at the end; exits
// 0 when the call went on after exactly one URL question, 1 otherwise.
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, token, tool, args] = process.argv.slice(2);
if (!args) {
  console.error('usage: node approve.mjs URL TOKEN TOOL ARGUMENTS_JSON');
  process.exit(2);
}
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client(
  { name: 'switchboard-ts-approve', version: '0.1.0' },
  { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const questions = [];
client.setRequestHandler('elicitation/create', async (request) => {
  questions.push({ mode: request.params.mode, url: request.params.url });
  console.log(JSON.stringify({ url: request.params.url }));
  await lines.next();
  return { action: 'accept' };
});

const report = { ok: false };
const text = (result) => (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
try {
  await client.connect(transport);
  report.negotiated = client.getNegotiatedProtocolVersion();
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
  report.result = { isError: !!result.isError, text: text(result).slice(0, 300) };
  report.questions = questions;
  report.ok = questions.length === 1 && questions[0].mode === 'url' &&
    String(questions[0].url).includes('/console/approve/');
} catch (e) {
  report.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(report));
await client.close().catch(() => {});
process.exit(report.ok ? 0 : 1);
