// Lighthouse on many pages in one Node process and one Chromium (tests/browser/test_lighthouse.py:
// start_audit). Each page goes through the CLI's own steps (cli/bin.js, cli/run.js: its flags
// parsed from the same arguments, the preset's config, lighthouse(), saveResults), one after the
// other in one tab of one browser context, as a Lighthouse user flow navigates one tab: each run
// begins with Lighthouse's own reset of the origin's storage and of the browser's cache. One CLI
// run per page cost a Node start and a Chromium launch each, about half of its CPU; a fresh
// context per page then cost renderer processes each (test_lighthouse's 4 pages: 13 renderers
// -> 6; the kinds' views' 9: the renderers' CPU 12.5 -> 8.2 s, the browser process's 5.3 -> 3.0).
//
// node lighthouse_pages.mjs < SPEC.json; SPEC: {modules: lighthouse/node_modules, chromeFlags:
// [...], pages: [{url, args: [the CLI's arguments after the URL]}]}. Prints a JSON line per page:
// {url, error} (error null when the report was written to the page's --output-path).
import path from 'node:path';
import {pathToFileURL} from 'node:url';
import {cacheMessageFormat} from '../../src/seojobs/kinds/web_vitals/lighthouse_i18n.mjs';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const spec = JSON.parse(input);
const load = (file) => import(pathToFileURL(path.join(spec.modules, file)).href);
const {default: lighthouse} = await load('lighthouse/core/index.js');
const {getFlags} = await load('lighthouse/cli/cli-flags.js');
const {saveResults} = await load('lighthouse/cli/run.js');
const ChromeLauncher = await load('chrome-launcher/dist/index.js');
// Lighthouse times a busy loop in every page it audits (BenchmarkIndex: about 1 s of CPU) for
// the report's environment and a slow-host warning that only the mobile preset's throttling
// gives; no score depends on it (the tests use the desktop preset): not run, -1. (Two worker
// threads auditing half the pages each in the same Chromium took 50% more CPU for no less wall
// time on a loaded machine: each loads Lighthouse, and Lighthouse keeps per-module state.)
const {pageFunctions} = await load('lighthouse/core/lib/page-functions.js');
pageFunctions.computeBenchmarkIndex = function computeBenchmarkIndex() {
  return -1;
};
// Lighthouse's i18n cached, as in the product's warm slots (7 pages: 17-20 CPU-s -> 15.6-15.8;
// the reports the same but for timings).
await cacheMessageFormat(load);
const {default: puppeteer} = await load('puppeteer-core/lib/cjs/puppeteer/puppeteer-core.js');

const chrome = await ChromeLauncher.launch({chromeFlags: spec.chromeFlags, logLevel: 'silent'});
try {
  const browser = await puppeteer.connect({
    browserURL: `http://127.0.0.1:${chrome.port}`,
    defaultViewport: null,
  });
  // One context and one tab for every page, as a Lighthouse user flow navigates one tab: each
  // run still starts with Lighthouse's own reset of the origin's storage and the browser's
  // cache (the CLI's fresh profile, as far as a page can tell), and Chromium starts fewer
  // renderer processes than for a context per page.
  const context = await browser.createBrowserContext();
  let page = await context.newPage();
  for (const {url, args} of spec.pages) {
    let error = null;
    try {
      // As cli/bin.js does with these arguments.
      const flags = getFlags([url, ...args]);
      const config = flags.preset ?
        (await load(`lighthouse/core/config/${flags.preset}-config.js`)).default :
        undefined;
      flags.logLevel = flags.quiet ? 'silent' : 'info';
      flags.channel = 'cli';
      flags.port = chrome.port;
      // The tab leaves the last page first (Lighthouse's Audits.enable would replay that
      // page's DevTools issues into this one's inspector-issues), and its console is cleared
      // (the Log.enable would replay what earlier pages logged into errors-in-console).
      // (The page itself goes: a browser-initiated about:blank would start a renderer.)
      if (page.url() !== 'about:blank') {
        await Promise.all([
          page.waitForNavigation(),
          page.evaluate(() => {
            location.href = 'about:blank';
          }),
        ]);
      }
      const session = await page.createCDPSession();
      await session.send('Log.clear');
      await session.send('Runtime.discardConsoleEntries');
      await session.detach();
      const result = await lighthouse(url, flags, config, page);
      if (!result) throw new Error('Lighthouse returned no result');
      await saveResults(result, flags);
    } catch (err) {
      error = String(err?.stack ?? err);
      // A failed run may leave its tab unusable: the next page gets a new one.
      await page.close().catch(() => {});
      page = await context.newPage();
    }
    process.stdout.write(JSON.stringify({url, error}) + '\n');
  }
  await context.close();
  await browser.disconnect();
} finally {
  chrome.kill();
}
