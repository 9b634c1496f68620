// first_paint.js URL TOKEN SPKI RUNS: cold loads of the dashboard's fleet page in headless
// Chromium (Debian's /usr/bin/chromium via playwright-core); prints one line per load:
//   <first_paint_ms> <first_contentful_paint_ms> <rows>
// first_paint_ms is what the page records (web/app.js markPainted): performance.now() two
// animation frames after the fleet table's rows went into the DOM, i.e. from the start of the
// navigation through TLS, HTML, CSS, scripts (app.js, uPlot), GET /api/v1/hosts and the render
// of every row, to the frame that shows them. Each load is a new browser context (empty cache,
// new connection). Sparklines load afterwards, lazily, and are not part of it.
'use strict';
const path = require('path');
const { chromium } = require(path.join(__dirname, '../../web/node_modules/playwright-core'));
const [URL, TOKEN, SPKI, RUNS] = process.argv.slice(2);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--ignore-certificate-errors-spki-list=${SPKI}`],
  });
  for (let i = 0; i < Number(RUNS || 5) + 1; i++) { // the first load warms the browser up
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    await page.goto(`${URL}/#token=${encodeURIComponent(TOKEN)}`);
    for (let t = 0; t < 600; t++) {
      if (await page.evaluate(() => window.poolwatchFirstPaintMs !== undefined)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const r = await page.evaluate(() => ({
      fp: window.poolwatchFirstPaintMs,
      fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
      rows: document.querySelectorAll('#hosts tbody tr').length,
      marks: Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name.replace('poolwatch-', ''), Math.round(m.startTime)])),
      dcl: Math.round(performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd),
    }));
    if (i > 0) {
      console.log(`${r.fp} ${r.fcp ?? -1} ${r.rows}`);
      console.error(`# load: DOMContentLoaded ${r.dcl} ms, ${JSON.stringify(r.marks)}`);
    }
    await ctx.close();
  }
  await browser.close();
})().catch((e) => { console.error(e); process.exit(1); });
