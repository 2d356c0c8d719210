// SPDX-License-Identifier: Zlib
// browser_test.js -- make test-web: the demos page in headless Chromium.
//
//   node web/browser_test.js BUILD_DIR [--frames N] [--screenshot FILE.png] [--chromium PATH]
//
// Serves BUILD_DIR (build/web) with `python3 -m http.server` on 127.0.0.1 and a free port, opens
// index.html?test=N in headless Chromium and drives it over the DevTools protocol through a pipe
// (--remote-debugging-pipe: no npm package, no WebSocket, works with Debian's node 18 and newer).
// Checks that every demo ran N frames with no console error or exception, that the pooled sides
// made no allocator call in steady state while spawn-and-destroy did, that the keys pressed on
// the way worked, and that every canvas shows a picture; saves a screenshot of the whole page and
// checks it is not blank. Then opens the page as a person would (the demos run from
// requestAnimationFrame; a button click and a real key press must work), and once more from
// disk (file://, the wasm is embedded).
// Exits 0 when everything holds, 1 with the reasons otherwise. The server and the browser are
// ended before exiting, whatever happens.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');
const zlib = require('zlib');

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------
const argv = process.argv.slice(2);
const opt = { dir: null, frames: 300, screenshot: null, chromium: process.env.CHROMIUM || 'chromium' };
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--frames') opt.frames = parseInt(argv[++i], 10);
  else if (argv[i] === '--screenshot') opt.screenshot = argv[++i];
  else if (argv[i] === '--chromium') opt.chromium = argv[++i];
  else if (!opt.dir) opt.dir = argv[i];
  else { console.error('browser_test: unknown argument ' + argv[i]); process.exit(2); }
}
if (!opt.dir || !fs.existsSync(path.join(opt.dir, 'index.html'))) {
  console.error('usage: node web/browser_test.js BUILD_DIR (with index.html: make web first) ' +
    '[--frames N] [--screenshot FILE.png] [--chromium PATH]');
  process.exit(2);
}
opt.dir = path.resolve(opt.dir);
opt.screenshot = path.resolve(opt.screenshot || path.join(opt.dir, 'screenshot.png'));

const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); return ok; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (s) => console.log('browser_test: ' + s);

// ---------------------------------------------------------------------------------------------
// The HTTP server: python3 -m http.server, on a port the OS says is free
// ---------------------------------------------------------------------------------------------
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

function get(url) {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => { res.resume(); resolve(res.statusCode); });
    req.on('error', () => resolve(0));
    req.setTimeout(2000, () => { req.destroy(); resolve(0); });
  });
}

async function startServer() {
  const port = await freePort();
  const server = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1'],
    { cwd: opt.dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  server.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  const url = 'http://127.0.0.1:' + port + '/';
  for (let i = 0; i < 100; i++) {
    if (server.exitCode !== null) throw new Error('python3 -m http.server ended: ' + stderr);
    if (await get(url + 'index.html') === 200) return { server, url };
    await sleep(100);
  }
  server.kill();
  throw new Error('python3 -m http.server did not answer on ' + url);
}

// ---------------------------------------------------------------------------------------------
// Chromium over the DevTools protocol: JSON messages separated by NUL on fds 3 (to the browser)
// and 4 (from it)
// ---------------------------------------------------------------------------------------------
function startBrowser(profile) {
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', '--user-data-dir=' + profile, '--remote-debugging-pipe',
    '--window-size=1000,900', 'about:blank'];
  const child = spawn(opt.chromium, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-8000); });
  const pending = new Map(), listeners = [];
  let nextId = 1, buf = '';
  child.stdio[4].on('data', (chunk) => {
    buf += chunk.toString('utf8');
    let end;
    while ((end = buf.indexOf('\0')) >= 0) {
      const msg = JSON.parse(buf.slice(0, end));
      buf = buf.slice(end + 1);
      if (msg.id && pending.has(msg.id)) {
        const { resolve, reject, method } = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.error) reject(new Error(method + ': ' + msg.error.message));
        else resolve(msg.result);
      } else if (msg.method) {
        for (const l of listeners) l(msg);
      }
    }
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  exited.then(() => {
    for (const { reject, method } of pending.values())
      reject(new Error(method + ': the browser ended\n' + stderr));
    pending.clear();
  });
  const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
    if (child.exitCode !== null) { reject(new Error(method + ': the browser ended\n' + stderr)); return; }
    const id = nextId++;
    pending.set(id, { resolve, reject, method });
    const msg = { id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    child.stdio[3].write(JSON.stringify(msg) + '\0');
  });
  return { child, send, on: (f) => listeners.push(f), exited, stderr: () => stderr };
}

// One page in its own session; collects every console error and uncaught exception.
async function openPage(browser) {
  const { targetId } = await browser.send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await browser.send('Target.attachToTarget', { targetId, flatten: true });
  const page = { sessionId, errors: [] };
  browser.on((msg) => {
    if (msg.sessionId !== sessionId) return;
    const p = msg.params;
    if (msg.method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'assert'))
      page.errors.push('console.' + p.type + ': ' + p.args.map((a) => a.value ?? a.description).join(' '));
    else if (msg.method === 'Runtime.exceptionThrown')
      page.errors.push('exception: ' + (p.exceptionDetails.exception?.description || p.exceptionDetails.text));
    else if (msg.method === 'Log.entryAdded' && p.entry.level === 'error')
      page.errors.push('log: ' + p.entry.text + (p.entry.url ? ' (' + p.entry.url + ')' : ''));
  });
  page.send = (method, params) => browser.send(method, params, sessionId);
  await page.send('Runtime.enable');
  await page.send('Log.enable');
  await page.send('Page.enable');
  await page.send('Emulation.setDeviceMetricsOverride',
    { width: 1000, height: 900, deviceScaleFactor: 1, mobile: false });
  page.eval = async (expr) => (await page.send('Runtime.evaluate',
    { expression: expr, returnByValue: true })).result.value;
  return page;
}

// Navigates and waits for the test mode to end. @return the page's results, or null.
async function runPage(page, url, timeoutMs) {
  const t0 = Date.now();
  await page.send('Page.navigate', { url });
  let title = '';
  while (Date.now() - t0 < timeoutMs) {
    await sleep(200);
    title = await page.eval('document.title').catch(() => '');
    if (/test (done|failed)/.test(title)) break;
  }
  const elapsed = ((Date.now() - t0) / 1000).toFixed(1);
  if (!check(/test (done|failed)/.test(title), url + ': the test mode did not end within ' +
      timeoutMs / 1000 + ' s (title "' + title + '", status "' +
      await page.eval("document.getElementById('status').textContent").catch(() => '?') + '")'))
    return null;
  log(url + ': ' + title + ' in ' + elapsed + ' s');
  return JSON.parse(await page.eval("document.getElementById('results').textContent"));
}

// ---------------------------------------------------------------------------------------------
// What must hold
// ---------------------------------------------------------------------------------------------
function checkResults(where, r, page, frames) {
  const errs = r.errors.concat(page.errors);
  page.errors.length = 0;
  check(errs.length === 0, where + ': console errors or exceptions:\n    ' + errs.join('\n    '));
  const f = r.fountain, t = r.turret, p = r.particles;
  const expect = (demo, cond, what) => check(cond, where + ': ' + demo + ': ' + what);
  // Fountain: warm after 2 s of the run; from then on, no allocator call on the pooled side.
  expect('fountain', f.frames === frames, 'ran ' + f.frames + ' frames, not ' + frames);
  expect('fountain', f.warm === 1 || frames < 130, 'not warm after ' + frames + ' frames');
  expect('fountain', f.pooled_steady_calls === 0,
    'the pooled side called the allocator ' + f.pooled_steady_calls + ' times in steady state');
  expect('fountain', frames < 130 || f.malloc_steady_calls > 0,
    'spawn-and-destroy made no allocator call in steady state: the counters are not counting');
  expect('fountain', frames < 190 || (f.calls_per_s_pooled === 0 && f.calls_per_s_malloc > 1000),
    'the page shows ' + f.calls_per_s_pooled + ' allocator calls/s pooled and ' +
    f.calls_per_s_malloc + ' malloc/free in the last second (expected 0 and thousands)');
  expect('fountain', f.pooled_live > 1000 && f.pooled_live === f.malloc_live,
    'live sparks: pooled ' + f.pooled_live + ', malloc ' + f.malloc_live + ' (same seed: the same)');
  expect('fountain', f.pooled_dropped === 0, f.pooled_dropped + ' sparks dropped under the default cap');
  // Turret: one buffer, never the allocator, even across the pool rebuild the '+' key made.
  expect('turret', t.alloc_calls === 0 && t.calls_per_s_pool === 0,
    'the pool called its allocator ' + t.alloc_calls + ' times');
  expect('turret', t.fired > 0, 'fired nothing');
  if (frames >= 4) {
    expect('turret', t.policy === 1, "the 'r' key did not switch to reclaim");
    expect('turret', t.slots === 21 && t.rebuilds === 1,
      "the '+' key did not rebuild the pool with 21 slots (slots " + t.slots + ', rebuilds ' + t.rebuilds + ')');
  }
  // Particles: the dense pool never calls the allocator after it is built; every spark is
  // accounted for and every handle finds its own spark.
  expect('particles', p.alloc_calls_after_create === 0 && p.calls_per_s_pool === 0,
    'the dense pool called its allocator ' + p.alloc_calls_after_create + ' times after creation');
  expect('particles', p.unaccounted === 0 && p.handle_wrong === 0,
    'unaccounted ' + p.unaccounted + ', handles resolving to the wrong spark ' + p.handle_wrong);
  expect('particles', frames < 120 || p.count > 50000, 'only ' + p.count + ' sparks alive');
  expect('particles', p.paused === 0, 'space twice did not pause and resume');
  // Every canvas shows a picture.
  for (const [demo, min] of [['fountain', 3000], ['turret', 1500], ['particles', 10000]])
    expect(demo, r[demo].lit_pixels >= min, 'the canvas looks blank (' + r[demo].lit_pixels +
      ' lit pixels, at least ' + min + ' expected)');
}

// A PNG's pixels (8-bit RGB or RGBA, not interlaced: what Chromium writes).
function decodePng(file) {
  const png = fs.readFileSync(file);
  if (png.readUInt32BE(0) !== 0x89504e47) throw new Error(file + ' is not a PNG');
  let pos = 8, w = 0, h = 0, channels = 0;
  const idat = [];
  while (pos < png.length) {
    const len = png.readUInt32BE(pos), type = png.toString('ascii', pos + 4, pos + 8);
    const data = png.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      w = data.readUInt32BE(0);
      h = data.readUInt32BE(4);
      if (data[8] !== 8 || data[12] !== 0) throw new Error(file + ': not 8-bit non-interlaced');
      channels = { 2: 3, 6: 4 }[data[9]];
      if (!channels) throw new Error(file + ': colour type ' + data[9] + ' not handled');
    } else if (type === 'IDAT') idat.push(data);
    pos += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat)), stride = w * channels;
  const out = Buffer.alloc(h * stride);
  for (let y = 0; y < h; y++) {
    const filter = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      let v = line[x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const pa = Math.abs(b - c), pb = Math.abs(a - c), pc = Math.abs(a + b - 2 * c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + x] = v & 255;
    }
  }
  return { w, h, channels, pixels: out };
}

// Not blank: many colours, and a good share of pixels away from the most common colour.
function checkScreenshot(file) {
  const { w, h, channels, pixels } = decodePng(file);
  const counts = new Map();
  for (let i = 0; i < w * h; i++) {
    const o = i * channels, key = (pixels[o] << 16) | (pixels[o + 1] << 8) | pixels[o + 2];
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  const top = Math.max(...counts.values()), other = 1 - top / (w * h);
  log('screenshot ' + file + ': ' + w + 'x' + h + ', ' + counts.size + ' colours, ' +
    (other * 100).toFixed(1) + '% of pixels away from the most common colour');
  check(w >= 900 && h >= 1500, 'screenshot: ' + w + 'x' + h + ', expected the whole page');
  check(counts.size >= 500, 'screenshot: only ' + counts.size + ' colours: blank?');
  check(other >= 0.25, 'screenshot: ' + (other * 100).toFixed(1) + '% of pixels differ from the background: blank?');
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------
async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'spawnpool-chromium-'));
  let server = null, browser = null;
  try {
    const s = await startServer();
    server = s.server;
    browser = startBrowser(profile);
    const page = await openPage(browser);
    const r = await runPage(page, s.url + 'index.html?test=' + opt.frames, 120000);
    if (r) {
      checkResults('http', r, page, opt.frames);
      log('fountain: allocator calls in steady state: pooled ' + r.fountain.pooled_steady_calls +
        ', malloc/free ' + r.fountain.malloc_steady_calls + ' (' + r.fountain.calls_per_s_malloc +
        ' a second); turret: ' + r.turret.alloc_calls +
        '; particles: ' + r.particles.alloc_calls_after_create + ' (' + r.particles.count + ' sparks)');
      // The whole page, as a person would see it after the run.
      const m = await page.send('Page.getLayoutMetrics');
      const size = m.cssContentSize || m.contentSize;
      const shot = await page.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true,
        clip: { x: 0, y: 0, width: size.width, height: size.height, scale: 1 } });
      fs.writeFileSync(opt.screenshot, Buffer.from(shot.data, 'base64'));
      checkScreenshot(opt.screenshot);
    }
    // As a person opens it: the live page steps the demos at 60 Hz from requestAnimationFrame
    // and fills the counter tables.
    await page.send('Page.navigate', { url: s.url + 'index.html' });
    await sleep(2500);
    const live = await page.eval('[demos.fountain.c.frames, demos.turret.c.fired, ' +
      'demos.particles.c.count, document.getElementById("fountain-counters").textContent]');
    log('live page after 2.5 s: fountain frame ' + live[0] + ', turret shots ' + live[1] +
      ', ' + live[2] + ' particles');
    check(live[0] >= 30 && live[1] > 0 && live[2] > 0, 'live page: the demos do not run (fountain ' +
      'frame ' + live[0] + ', turret shots ' + live[1] + ', particles ' + live[2] + ')');
    check(!/NaN|undefined/.test(live[3]) && /allocator calls/.test(live[3]),
      'live page: the fountain counters read "' + live[3].slice(0, 200) + '"');
    // A button and a real key press (through the browser's input pipeline, to the focused canvas).
    await page.eval("document.getElementById('fountain-policy').click()");
    await page.eval("document.getElementById('turret-canvas').focus()");
    for (const type of ['keyDown', 'keyUp'])
      await page.send('Input.dispatchKeyEvent', { type, key: 'ArrowUp', code: 'ArrowUp',
        windowsVirtualKeyCode: 38 });
    await sleep(400);
    const after = await page.eval("[demos.fountain.c.policy, demos.turret.c.rate, " +
      "document.getElementById('fountain-policy').textContent]");
    check(after[0] === 1 && after[2] === 'policy: reclaim', 'live page: the fountain policy button ' +
      'did not switch to reclaim (policy ' + after[0] + ', button "' + after[2] + '")');
    check(after[1] === 11, 'live page: ArrowUp on the turret did not raise its rate to 11 (' + after[1] + ')');
    // Every button but pause, three times over (policies around the cycle, caps and slots up
    // and down, particle pools restarted): nothing throws and every demo keeps running.
    const before = await page.eval('[demos.fountain.c.frames, demos.turret.c.fired, demos.particles.c.spawned]');
    await page.eval("for (let i = 0; i < 3; i++) for (const b of document.querySelectorAll('button[data-demo]:not(#particles-pause)')) b.click()");
    await sleep(600);
    const later = await page.eval('[demos.fountain.c.frames, demos.turret.c.fired, demos.particles.c.spawned, ' +
      'demos.turret.c.alloc_calls]');
    check(later[0] > before[0] && later[1] > 0 && later[2] > 0, 'live page: a demo stopped after the buttons (' +
      JSON.stringify(before) + ' then ' + JSON.stringify(later) + ')');
    check(later[3] === 0, 'live page: the turret pool called its allocator after the buttons rebuilt it');
    check(page.errors.length === 0, 'live page: console errors or exceptions:\n    ' + page.errors.join('\n    '));
    page.errors.length = 0;
    // Opened from disk: no server, the wasm embedded in spawnpool_web.js.
    const fileUrl = 'file://' + path.join(opt.dir, 'index.html') + '?test=60';
    const rf = await runPage(page, fileUrl, 60000);
    if (rf) checkResults('file', rf, page, 60);
  } catch (e) {
    failures.push(String(e && e.stack || e));
  } finally {
    if (browser) {
      await Promise.race([browser.send('Browser.close').catch(() => {}), sleep(3000)]);
      if (browser.child.exitCode === null) browser.child.kill('SIGKILL');
      await Promise.race([browser.exited, sleep(3000)]);
    }
    if (server) server.kill();
    // The browser's helper processes may still write its profile for a moment after it ends.
    for (let attempt = 1; ; attempt++) {
      try {
        fs.rmSync(profile, { recursive: true, force: true });
        break;
      } catch (e) {
        if (attempt === 10) { log('could not remove ' + profile + ': ' + e.message); break; }
        await sleep(300);
      }
    }
  }
  if (failures.length) {
    console.error('browser_test: FAILED\n  ' + failures.join('\n  '));
    process.exit(1);
  }
  log('passed');
}

main();
