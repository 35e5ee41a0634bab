// Headless Chromium through the Switchboard web console, as a person
// would use it: sign in with a token, watch the servers (one stopped
// mid-test turns down without a reload), look at the tools as a
// restricted principal sees them, and check that a <script> in a tool
// description neither runs nor makes a request. Run by
// crates/cli/tests/console.rs with a gateway it started.
//
// Usage: node browse.mjs BASE_URL TOKEN RESTRICTED DENIED_TOOL PIDFILE VICTIM SHOTS_DIR TOOLS_FILE
// (TOOLS_FILE: the mock server's tool listing, rewritten here so that its
// `lister` tool changes, then accepted in the browser.)
// The browser is $CHROMIUM (default /usr/bin/chromium). The last line
// printed is a JSON report: {"ok": true, "screenshots": [...]} or
// {"ok": false, "error": "..."}.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import puppeteer from "puppeteer-core";

const [base, token, restricted, deniedTool, pidFile, victim, shots, toolsFile] = process.argv.slice(2);
const report = { ok: false, screenshots: [], dialogs: [], foreignRequests: [] };

function check(condition, what) {
  if (!condition) {
    throw new Error(what);
  }
}

async function shot(page, name) {
  const path = join(shots, name);
  await page.screenshot({ path, fullPage: true });
  report.screenshots.push(path);
}

async function main() {
  mkdirSync(shots, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    // Root in a container has no user namespace for Chromium's sandbox.
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1280,900"],
    defaultViewport: { width: 1280, height: 900 },
  });
  try {
    const page = await browser.newPage();
    page.on("dialog", async (d) => {
      report.dialogs.push(d.message());
      await d.dismiss();
    });
    page.on("request", (r) => {
      if (!r.url().startsWith(base)) {
        report.foreignRequests.push(r.url());
      }
    });
    const violations = [];
    page.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) {
        violations.push(m.text());
      }
    });

    // Sign in.
    await page.goto(`${base}/console`, { waitUntil: "load" });
    check((await page.title()).startsWith("Sign in"), `not the sign-in page: ${await page.title()}`);
    await shot(page, "login.png");
    await page.type("input[name=token]", token);
    await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("button[type=submit]")]);
    check(page.url().endsWith("/console/servers"), `not on the servers page: ${page.url()}`);

    // The servers, live: archive down with its reason.
    await page.waitForSelector("#live[data-state=live]", { timeout: 30000 });
    const archive = await page.$eval("tr[data-server=archive]", (row) => ({
      status: row.querySelector("[data-field=statusText]").textContent,
      reason: row.querySelector("[data-field=reason]").textContent,
    }));
    check(archive.status === "down", `archive is ${archive.status}`);
    check(archive.reason.length > 0, "archive has no reason");
    report.archive = archive;
    await page.waitForFunction(
      (v) => document.querySelector(`tr[data-server=${v}]`)?.dataset.status === "up" ||
        document.querySelector(`tr[data-server=${v}] [data-field=statusText]`)?.textContent === "up",
      { timeout: 30000 },
      victim,
    );
    await shot(page, "servers.png");

    // A server stopped now turns down on this page, without a reload.
    await page.evaluate(() => {
      window.consoleCheckMarker = "same page";
    });
    process.kill(Number(readFileSync(pidFile, "utf8").trim()), "SIGKILL");
    await page.waitForFunction(
      (v) => document.querySelector(`tr[data-server=${v}]`)?.dataset.status === "down",
      { timeout: 60000 },
      victim,
    );
    check(
      (await page.evaluate(() => window.consoleCheckMarker)) === "same page",
      "the page was reloaded",
    );
    report.victim = await page.$eval(
      `tr[data-server=${victim}] [data-field=reason]`,
      (cell) => cell.textContent,
    );
    await shot(page, "servers-after-stop.png");

    // The tools as the restricted principal sees them.
    await page.goto(`${base}/console/tools?principal=${encodeURIComponent(restricted)}`, { waitUntil: "load" });
    const seen = await page.$$eval("tr[data-tool]", (rows) => rows.map((r) => r.dataset.tool));
    check(seen.length > 0, "no tools listed");
    check(!seen.includes(deniedTool), `${deniedTool} is shown to ${restricted}`);
    report.restrictedTools = seen;
    await shot(page, "tools-restricted.png");

    // Every tool: the hostile description is shown as text and never runs.
    await page.goto(`${base}/console/tools`, { waitUntil: "load" });
    const all = await page.$$eval("tr[data-tool]", (rows) => rows.map((r) => r.dataset.tool));
    check(all.includes(deniedTool), `${deniedTool} missing from the full table`);
    const hostile = await page.$$eval("td.description", (cells) =>
      cells.map((c) => c.textContent).find((t) => t.includes("<script>")),
    );
    check(hostile !== undefined, "the hostile description is not shown as text");
    check((await page.$$("td.description script, td.description img")).length === 0, "markup became elements");
    await shot(page, "tools.png");

    // The server changes the tool: its diff shows, and Accept takes it.
    const listing = JSON.parse(readFileSync(toolsFile, "utf8"));
    listing[0].description = "Lists things, and now also deletes them.";
    writeFileSync(toolsFile, JSON.stringify(listing));
    const pin = "section[data-pin='mcp__mock__lister']";
    for (let i = 0; ; i++) {
      await page.goto(`${base}/console/tools`, { waitUntil: "load" });
      if (await page.$(pin)) {
        break;
      }
      check(i < 120, "the changed tool never showed");
      await new Promise((r) => setTimeout(r, 250));
    }
    const diff = await page.$eval(`${pin} table.diff`, (t) => t.textContent);
    check(diff.includes("now also deletes them"), `no diff: ${diff}`);
    await shot(page, "tools-changed.png");
    await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(`${pin} button[type=submit]`)]);
    check((await page.$(pin)) === null, "the accepted tool is still shown as changed");
    report.accepted = true;

    await page.goto(`${base}/console/calls`, { waitUntil: "load" });
    await shot(page, "calls.png");
    await page.goto(`${base}/console/approvals`, { waitUntil: "load" });
    await shot(page, "approvals.png");
    await page.goto(`${base}/console/evals`, { waitUntil: "load" });
    await shot(page, "evals.png");

    // Give a script that did run a moment to show itself.
    await new Promise((r) => setTimeout(r, 500));
    check(report.dialogs.length === 0, `a dialog opened: ${report.dialogs}`);
    check(report.foreignRequests.length === 0, `requests left the console: ${report.foreignRequests}`);
    check(violations.length === 0, `CSP violations: ${violations}`);
    report.ok = true;
  } finally {
    await browser.close();
  }
}

main()
  .catch((e) => {
    report.error = String(e && e.stack ? e.stack : e);
  })
  .finally(() => {
    console.log(JSON.stringify(report));
  });
