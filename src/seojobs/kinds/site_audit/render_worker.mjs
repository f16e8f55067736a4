// One warm renderer for the site audit's `render: "js"`: a long-lived Node process driving a
// Chromium it launched (puppeteer-core, from the pinned Lighthouse's node_modules) and keeps
// between pages (relaunched after RECYCLE pages, or when a page needs other Chromium flags:
// the host rules that hold it to the address the audit's policy checked). Started by
// seojobs/browsers/slots.py's Slot under its reaper, so it and its Chromium die with the worker.
//
//   node render_worker.mjs NODE_MODULES CHROME_PATH RECYCLE
//
// stdin: one JSON request a line {"id", "url", "chrome_flags", "timeout_ms", "max_bytes", "out",
// "home"} ("home", optional: Chromium's HOME, whose NSS database holds the CAs to trust);
// stdout: one JSON answer a line {"id", "ok": true, "status", "final_url", "errors", "blocked",
// "truncated"} (the rendered HTML written to "out") or {"id", "ok": false, "error": "..."}.
// Each page gets a browser context of its own (no cookies or storage carried between pages).
import {writeFile} from 'node:fs/promises';
import {join} from 'node:path';
import {createInterface} from 'node:readline';
import {pathToFileURL} from 'node:url';

const [nodeModules, chromePath, recycleArg] = process.argv.slice(2);
const recycle = Number(recycleArg) || 1;
const load = (path) => import(pathToFileURL(join(nodeModules, path)).href);
const {default: puppeteer} = await load('puppeteer-core/lib/esm/puppeteer/puppeteer-core.js');

const MAX_ERRORS = 20;
const MAX_BLOCKED = 50;
const MAX_TEXT = 300;

let browser = null;
let browserKey = '';
let pages = 0;

async function closeBrowser() {
  if (browser) {
    const old = browser;
    browser = null;
    await old.close().catch(() => {});
  }
}

async function browserFor(chromeFlags, home) {
  const key = JSON.stringify([chromeFlags, home || null]);
  if (browser && (key !== browserKey || pages >= recycle || !browser.connected)) {
    await closeBrowser();
  }
  if (!browser) {
    browser = await puppeteer.launch({
      executablePath: chromePath,
      headless: true,
      args: chromeFlags,
      ...(home ? {env: {...process.env, HOME: home}} : {}),
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
    browserKey = key;
    pages = 0;
  }
  pages += 1;
  return browser;
}

const clip = (text) => String(text).slice(0, MAX_TEXT);

async function render(request) {
  const chrome = await browserFor(request.chrome_flags, request.home);
  const context = await chrome.createBrowserContext();
  const errors = [];
  const blocked = [];
  try {
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      if (errors.length < MAX_ERRORS) errors.push(clip(error?.message || error));
    });
    page.on('requestfailed', (failed) => {
      if (blocked.length < MAX_BLOCKED) {
        blocked.push({url: clip(failed.url()), reason: clip(failed.failure()?.errorText || '')});
      }
    });
    const timeout = request.timeout_ms;
    const started = Date.now();
    const response = await page.goto(request.url, {waitUntil: 'load', timeout});
    // Scripts that fetch after load: wait for the network to settle, within what is left of
    // the page's time (the slot's own limit is only a margin over it).
    const left = Math.max(1, timeout - (Date.now() - started));
    await page.waitForNetworkIdle({idleTime: 250, timeout: left}).catch(() => {});
    let html = await page.content();
    const truncated = Buffer.byteLength(html) > request.max_bytes;
    if (truncated) html = Buffer.from(html).subarray(0, request.max_bytes).toString();
    await writeFile(request.out, html);
    return {
      ok: true,
      status: response ? response.status() : null,
      final_url: page.url(),
      errors,
      blocked,
      truncated,
    };
  } finally {
    await context.close().catch(() => {});
  }
}

const answer = (message) => process.stdout.write(JSON.stringify(message) + '\n');
for await (const line of createInterface({input: process.stdin})) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  try {
    answer({id: request.id, ...(await render(request))});
  } catch (error) {
    if (!browser?.connected) await closeBrowser();
    answer({id: request.id, ok: false, error: clip(error?.message || error)});
  }
}
await closeBrowser();
process.exit(0);
