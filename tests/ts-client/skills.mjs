// The official MCP TypeScript client (@modelcontextprotocol/client) reading
// the skills the Switchboard gateway serves on its servers' behalf (the
// Skills extension, io.modelcontextprotocol/skills):
//
//   node skills.mjs URL SKILL_URI
//
// The SDK has no skills methods, so `skills/list` and `skills/get` go
// through its generic `request` with a schema that takes the result as it
// is. It checks the gateway declares the extension, finds SKILL_URI among
// the listed skills, gets the same entry with `skills/get`, then reads every
// file of the entry with `resources/read` and checks each one's SHA-256
// digest and size against the entry (the gateway passes the servers'
// digests and bytes through unchanged). Prints one JSON line saying what
// happened; exits 0 when every step went as expected, 1 otherwise.
import { createHash } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const EXTENSION = 'io.modelcontextprotocol/skills';
const [url, skillUri] = process.argv.slice(2);
if (!url || !skillUri) {
  console.error('usage: node skills.mjs URL SKILL_URI');
  process.exit(2);
}

// A Standard Schema that accepts any result unchanged.
const passthrough = { '~standard': { version: 1, vendor: 'switchboard-check', validate: (value) => ({ value }) } };

const client = new Client(
  { name: 'switchboard-ts-skills-check', version: '0.1.0' },
  { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
);
const report = { ok: false };
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  report.negotiated = client.getNegotiatedProtocolVersion();
  report.declared = client.getServerCapabilities()?.extensions?.[EXTENSION] ?? null;

  const skills = [];
  let cursor;
  do {
    const page = await client.request(
      { method: 'skills/list', params: cursor ? { cursor } : {} },
      passthrough,
    );
    skills.push(...(page.skills ?? []));
    cursor = page.nextCursor;
  } while (cursor);
  report.skills = skills.map((s) => s.uri);
  const listed = skills.find((s) => s.uri === skillUri);
  if (!listed) throw new Error(`${skillUri} is not listed`);

  const got = await client.request({ method: 'skills/get', params: { uri: skillUri } }, passthrough);
  report.sameEntry = JSON.stringify(got.skill) === JSON.stringify(listed);

  report.files = [];
  for (const file of listed.resources) {
    const read = await client.readResource({ uri: file.uri });
    const item = read.contents.find((c) => c.uri === file.uri) ?? read.contents[0];
    const bytes = item.blob !== undefined ? Buffer.from(item.blob, 'base64') : Buffer.from(item.text, 'utf8');
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    report.files.push({
      uri: file.uri,
      verified: digest === file.digest && bytes.length === file.size,
      text: bytes.toString('utf8').slice(0, 200),
    });
  }
  report.ok = report.declared !== null && report.sameEntry && report.files.length > 0 &&
    report.files.every((f) => f.verified);
} catch (e) {
  report.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(report));
await client.close().catch(() => {});
process.exit(report.ok ? 0 : 1);
