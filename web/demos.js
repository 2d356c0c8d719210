// SPDX-License-Identifier: Zlib
// demos.js -- the page's glue: starts the three demos compiled into spawnpool_web.js, steps them
// at a fixed 60 Hz, puts each one's framebuffer on its canvas and its counters in a table, and
// turns keys and buttons into the desktop demos' keys (web/web_demos.c).
//
// index.html?test=N is the browser test's mode (make test-web): every demo runs N frames as fast
// as it can, a few keys are pressed on the way, and the results go into <pre id="results"> as
// JSON and the title becomes "spawnpool: test done" (or "... test failed").
'use strict';

const W = 960, H = 540;
const POLICIES = ['drop', 'reclaim', 'grow'];
const errors = [];
window.addEventListener('error', (e) => errors.push(String(e.message || e)));
window.addEventListener('unhandledrejection', (e) => errors.push('unhandled rejection: ' + e.reason));

// The counters each demo's C side fills (same order as the enums in web_demos.c).
const FOUNTAIN_SIDE = ['live', 'free', 'size', 'peak', 'max', 'created', 'alloc_calls', 'dropped',
  'reclaimed', 'grown', 'update_ms', 'p99_ms', 'steady_calls'];
const FOUNTAIN_ALL = ['rate', 'cap', 'policy', 'warm', 'frames', 'log_lines'];
const TURRET = ['slots', 'policy', 'rate', 'leased', 'free', 'peak', 'fired', 'dropped',
  'reclaimed', 'built', 'buffer_bytes', 'alloc_calls', 'rebuilds'];
const PARTICLES = ['count', 'size', 'max', 'peak', 'spawned', 'removed', 'moves', 'dropped',
  'reclaimed', 'alloc_calls_after_create', 'handle_checks', 'handle_wrong', 'handle_expired',
  'rate', 'paused', 'policy', 'unaccounted'];

const fmt = (v) => Math.round(v).toLocaleString('en-US');
const ms = (v) => v.toFixed(3) + ' ms';

function makeDemo(name, names, start) {
  const canvas = document.getElementById(name + '-canvas');
  return {
    name, names, start, canvas,
    ctx: canvas.getContext('2d'),
    table: document.getElementById(name + '-counters'),
    c: {},            // the last counters, by name
    hist: [],         // allocator call counters of the last 61 steps, oldest first
    rates: {},        // allocator calls per second of simulated time (the last 60 steps)
    stepMs: 0,        // wall time of the last step + draw, in the browser
  };
}

function readCounters(d, ptr) {
  const f64 = Module.HEAPF64, base = ptr >> 3;
  d.c = {};
  d.names.forEach((n, i) => { d.c[n] = f64[base + i]; });
  return d.c;
}

function fountainCounters(d, ptr) {
  const f64 = Module.HEAPF64, base = ptr >> 3, n = FOUNTAIN_SIDE.length;
  d.c = {};
  ['pooled', 'malloc'].forEach((side, s) =>
    FOUNTAIN_SIDE.forEach((k, i) => { d.c[side + '_' + k] = f64[base + s * n + i]; }));
  FOUNTAIN_ALL.forEach((k, i) => { d.c[k] = f64[base + 2 * n + i]; });
  return d.c;
}

const demos = {
  fountain: makeDemo('fountain', null, () => Module._web_fountain_start(2000, 0)),
  turret: makeDemo('turret', TURRET, () => Module._web_turret_start(20, 10, 0)),
  particles: makeDemo('particles', PARTICLES, () => Module._web_particles_start(60000, 0, 0)),
};

// One 1/60 s step of a demo, drawn. @return false when the demo is not running.
function step(d, draw) {
  const t0 = performance.now();
  const px = Module['_web_' + d.name + '_frame']();
  if (!px) return false;
  const cptr = Module['_web_' + d.name + '_counters']();
  if (d.name === 'fountain') fountainCounters(d, cptr);
  else readCounters(d, cptr);
  perSecond(d);
  if (draw) {
    const bytes = new Uint8ClampedArray(Module.HEAPU8.buffer, px, W * H * 4);
    d.ctx.putImageData(new ImageData(bytes, W, H), 0, 0);
  }
  d.stepMs = performance.now() - t0;
  return true;
}

function key(name, k) {
  const ok = Module['_web_' + name + '_key'](k.charCodeAt(0));
  if (name === 'particles' && 'p+-'.includes(k)) demos.particles.hist = []; // a new pool
  refresh(demos[name]);
  return ok;
}

// ---------------------------------------------------------------------------------------------
// Counters on the page
// ---------------------------------------------------------------------------------------------
function row(label, cells, cls) {
  return '<tr><th>' + label + '</th>' + cells.map((c, i) =>
    '<td' + (cls && cls[i] ? ' class="' + cls[i] + '"' : '') + '>' + c + '</td>').join('') + '</tr>';
}

const zeroOrBusy = (v) => (v === 0 ? 'zero' : 'busy');

// The fountain's per-side update times are not shown: a browser's clock is coarsened to 0.1 ms
// or so, about one side's whole update, so they would be noise (the desktop demo shows them).
function refresh(d) {
  const c = d.c;
  if (d.name === 'fountain') {
    const r = d.rates;
    document.getElementById('fountain-policy').textContent = 'policy: ' + POLICIES[c.policy];
    d.table.innerHTML =
      row('', ['pooled (sp_pool)', 'malloc/free'], ['pooled', 'malloc']) +
      row('allocator calls / s', [fmt(r.pooled || 0), fmt(r.malloc || 0)],
        [zeroOrBusy(r.pooled || 0), zeroOrBusy(r.malloc || 0)]) +
      row('allocator calls since warm-up', [fmt(c.pooled_steady_calls), fmt(c.malloc_steady_calls)],
        c.warm ? [zeroOrBusy(c.pooled_steady_calls), zeroOrBusy(c.malloc_steady_calls)] : null) +
      row('allocator calls in all', [fmt(c.pooled_alloc_calls), fmt(c.malloc_alloc_calls)]) +
      row('live / free / size', [fmt(c.pooled_live) + ' / ' + fmt(c.pooled_free) + ' / ' +
        fmt(c.pooled_size), fmt(c.malloc_live) + ' / 0 / ' + fmt(c.malloc_size)]) +
      row('peak live, created', [fmt(c.pooled_peak) + ', ' + fmt(c.pooled_created),
        fmt(c.malloc_peak) + ', ' + fmt(c.malloc_created)]) +
      row('dropped / reclaimed / grown', [fmt(c.pooled_dropped) + ' / ' + fmt(c.pooled_reclaimed) +
        ' / ' + fmt(c.pooled_grown), '-']) +
      row('rate, cap, policy', [fmt(c.rate) + ' sparks/s, cap ' + fmt(c.cap) + ', ' +
        POLICIES[c.policy] + (c.warm ? '' : ' (warming up)'), '']);
  } else if (d.name === 'turret') {
    document.getElementById('turret-policy').textContent = 'policy: ' + (c.policy ? 'reclaim' : 'drop');
    d.table.innerHTML =
      row('allocator calls since start', [fmt(c.alloc_calls)], [zeroOrBusy(c.alloc_calls)]) +
      row('allocator calls / s', [fmt(d.rates.pool || 0)], [zeroOrBusy(d.rates.pool || 0)]) +
      row('slots, buffer', [fmt(c.slots) + ' members in one buffer of ' + fmt(c.buffer_bytes) + ' bytes']) +
      row('leased / free / peak', [fmt(c.leased) + ' / ' + fmt(c.free) + ' / ' + fmt(c.peak)]) +
      row('fired / dropped / reclaimed', [fmt(c.fired) + ' / ' + fmt(c.dropped) + ' / ' + fmt(c.reclaimed)]) +
      row('rate, policy', [c.rate.toFixed(0) + ' shots/s, ' + (c.policy ? 'reclaim' : 'drop')]) +
      row('members built, pool rebuilds', [fmt(c.built) + ', ' + fmt(c.rebuilds)]);
  } else {
    document.getElementById('particles-policy').textContent = 'policy: ' + POLICIES[c.policy];
    document.getElementById('particles-pause').textContent = c.paused ? 'resume' : 'pause';
    d.table.innerHTML =
      row('allocator calls since the pool was built', [fmt(c.alloc_calls_after_create)],
        [zeroOrBusy(c.alloc_calls_after_create)]) +
      row('allocator calls / s', [fmt(d.rates.pool || 0)], [zeroOrBusy(d.rates.pool || 0)]) +
      row('live / capacity / max', [fmt(c.count) + ' / ' + fmt(c.size) + ' / ' + fmt(c.max)]) +
      row('spawned / removed / moved', [fmt(c.spawned) + ' / ' + fmt(c.removed) + ' / ' + fmt(c.moves)]) +
      row('dropped / reclaimed', [fmt(c.dropped) + ' / ' + fmt(c.reclaimed)]) +
      row('handles: checks / wrong / expired', [fmt(c.handle_checks) + ' / ' + fmt(c.handle_wrong) +
        ' / ' + fmt(c.handle_expired)]) +
      row('rate, policy', [fmt(c.rate) + ' sparks/s, ' + POLICIES[c.policy] + (c.paused ? ' (paused)' : '')]) +
      row('step + draw in the browser', [ms(d.stepMs)]);
  }
}

// Allocator calls per second: over the last 60 steps, one second of simulated time (so the test
// mode, which runs faster than real time, shows the same numbers as a live page).
function perSecond(d) {
  const c = d.c;
  const now = d.name === 'fountain' ? { pooled: c.pooled_alloc_calls, malloc: c.malloc_alloc_calls }
    : { pool: d.name === 'turret' ? c.alloc_calls : c.alloc_calls_after_create };
  d.hist.push(now);
  if (d.hist.length > 61) d.hist.shift();
  const old = d.hist[0], span = d.hist.length - 1;
  for (const k of Object.keys(now)) d.rates[k] = span ? Math.max(0, now[k] - old[k]) * 60 / span : 0;
}

// ---------------------------------------------------------------------------------------------
// Keys and buttons
// ---------------------------------------------------------------------------------------------
const KEYS = { ArrowUp: 'u', ArrowDown: 'd', '+': '+', '=': '+', '-': '-', p: 'p', P: 'p',
  r: 'r', R: 'r', c: 'c', C: 'c', ' ': ' ' };

function wireControls() {
  for (const d of Object.values(demos)) {
    d.canvas.addEventListener('keydown', (e) => {
      const k = KEYS[e.key];
      if (!k) return;
      e.preventDefault();
      key(d.name, k);
    });
    d.canvas.addEventListener('click', () => d.canvas.focus());
  }
  for (const b of document.querySelectorAll('button[data-demo]'))
    b.addEventListener('click', () => key(b.dataset.demo, b.dataset.key));
}

// ---------------------------------------------------------------------------------------------
// Running: rAF at a fixed 60 Hz step, or the test mode
// ---------------------------------------------------------------------------------------------
function runLive() {
  let last = performance.now(), acc = 0, lastTable = 0;
  function frame(now) {
    acc = Math.min(acc + (now - last) / 1000, 4 / 60); // a background tab does not catch up
    last = now;
    let steps = 0;
    while (acc >= 1 / 60) {
      acc -= 1 / 60;
      steps++;
    }
    for (const d of Object.values(demos))
      for (let i = 0; i < steps; i++) step(d, i === steps - 1);
    if (now - lastTable >= 250 && demos.fountain.hist.length) {
      for (const d of Object.values(demos)) refresh(d);
      lastTable = now;
    }
    requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);
}

// Lit pixels of a canvas: what the test checks so that a blank canvas cannot pass.
function litPixels(canvas) {
  const data = canvas.getContext('2d').getImageData(0, 0, W, H).data;
  let lit = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i] + data[i + 1] + data[i + 2] > 200) lit++;
  return lit;
}

function runTest(frames) {
  const status = document.getElementById('status');
  const results = { frames, errors };
  let f = 0;
  // The keys a player would press, on the turret (its pool is rebuilt in a new buffer: still
  // no allocator call) and on the particles (pause, resume).
  const script = { [Math.floor(frames / 2)]: () => {
    const k = (name, key) => demos[name].canvas.dispatchEvent(
      new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true }));
    k('turret', 'r');
    k('turret', '+');
    k('particles', ' ');
    k('particles', ' ');
  } };
  function chunk() {
    try {
      for (let i = 0; i < 10 && f < frames; i++, f++) {
        if (script[f]) script[f]();
        for (const d of Object.values(demos))
          if (!step(d, f === frames - 1)) throw new Error(d.name + ' is not running');
      }
    } catch (e) {
      errors.push(String(e && e.stack || e));
      f = frames;
    }
    status.textContent = 'test: frame ' + f + ' of ' + frames;
    if (f < frames) { setTimeout(chunk, 0); return; }
    for (const d of Object.values(demos)) {
      refresh(d);
      results[d.name] = Object.assign({ lit_pixels: litPixels(d.canvas) }, d.c);
      for (const [k, v] of Object.entries(d.rates)) results[d.name]['calls_per_s_' + k] = v;
    }
    document.getElementById('results').textContent = JSON.stringify(results, null, 1);
    document.title = 'spawnpool: test ' + (errors.length ? 'failed' : 'done');
    status.textContent = 'test: ' + frames + ' frames done';
  }
  chunk();
}

var Module = {
  onRuntimeInitialized() {
    const status = document.getElementById('status');
    for (const d of Object.values(demos))
      if (!d.start()) {
        errors.push('cannot start the ' + d.name + ' demo');
        status.textContent = 'Cannot start the ' + d.name + ' demo.';
      }
    wireControls();
    const test = new URLSearchParams(location.search).get('test');
    if (test) {
      runTest(Math.max(1, parseInt(test, 10) || 300));
    } else {
      status.textContent = '';
      runLive();
    }
  },
  print: (s) => console.log(s),
  printErr: (s) => console.warn(s), // the library's log lines (GROW warns past its cap)
};
