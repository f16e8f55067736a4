// One warm pool slot: a long-lived Node process running Lighthouse's Node API against a
// Chromium it launched and keeps between runs (relaunched after RECYCLE runs, or when a run
// needs other Chromium flags). Started by runner.py under reaper.py, so it and its Chromium
// die with the worker.
//
//   node lighthouse_worker.mjs NODE_MODULES CHROME_PATH RECYCLE
//
// stdin: one JSON request a line {"id", "url", "form_factor", "chrome_flags", "flags", "out",
// "home"} ("home", optional: Chromium's HOME, whose NSS database holds the CAs to trust);
// stdout: one JSON answer a line {"id", "ok": true} (the report written to "out") or
// {"id", "ok": false, "error": "..."}. End of stdin: Chromium is killed and the process exits.
import {writeFile} from 'node:fs/promises';
import {join} from 'node:path';
import {createInterface} from 'node:readline';
import {pathToFileURL} from 'node:url';
import {cacheMessageFormat} from './lighthouse_i18n.mjs';

const [nodeModules, chromePath, recycleArg] = process.argv.slice(2);
const recycle = Number(recycleArg) || 1;
const load = (path) => import(pathToFileURL(join(nodeModules, path)).href);
const {default: lighthouse, desktopConfig} = await load('lighthouse/core/index.js');
const chromeLauncher = await load('chrome-launcher/dist/index.js');
// Each run's config check and report format the same messages again: cached (a job of one URL
// and both form factors: the slot's tree 19.0-19.3 CPU-s -> 17.8-18.4).
await cacheMessageFormat(load);

let chrome = null;
let chromeKey = '';
let runs = 0;

async function closeChrome() {
  if (chrome) {
    const old = chrome;
    chrome = null;
    await old.kill();
  }
}

async function browserFor(chromeFlags, home) {
  const key = JSON.stringify([chromeFlags, home || null]);
  if (chrome && (key !== chromeKey || runs >= recycle)) await closeChrome();
  if (!chrome) {
    chrome = await chromeLauncher.launch({
      chromePath,
      chromeFlags,
      logLevel: 'silent',
      ...(home ? {envVars: {...process.env, HOME: home}} : {}),
    });
    chromeKey = key;
    runs = 0;
  }
  runs += 1;
  return chrome;
}

async function measure(request) {
  const browser = await browserFor(request.chrome_flags, request.home);
  const flags = {...request.flags, port: browser.port, output: 'json', logLevel: 'error'};
  const config = request.form_factor === 'desktop' ? desktopConfig : undefined;
  const result = await lighthouse(request.url, flags, config);
  if (!result) throw new Error('Lighthouse returned no result');
  await writeFile(request.out, result.report);
}

const answer = (message) => process.stdout.write(JSON.stringify(message) + '\n');
for await (const line of createInterface({input: process.stdin})) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  try {
    await measure(request);
    answer({id: request.id, ok: true});
  } catch (error) {
    await closeChrome().catch(() => {}); // a failed run may have left Chromium unusable
    answer({id: request.id, ok: false, error: String(error?.stack || error).slice(0, 2000)});
  }
}
await closeChrome();
process.exit(0);
