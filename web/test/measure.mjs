// Measures the web build as a learner meets it, in Debian's chromium:
//   node measure.mjs URL webgpu|cpu [WIDTHxHEIGHT]
// - first draw: from navigation to the app's first frame (the loading text
//   is removed when eframe has started and drawn);
// - transfer: bytes that crossed the wire for the page, its script and wasm
//   (as served: compressed if the server compresses);
// - while `?selftest` runs every lesson's main action: the gaps between
//   animation frames during each action (p50, p95, max; frames/s), and the
//   MNIST epoch's time from the report.
// Numbers for the README, not a test: it prints JSON and always exits 0
// unless the page fails to load.
import { launch } from "./browser.mjs";

const [url, mode = "cpu", size = "1400x900"] = process.argv.slice(2);
const [width, height] = size.split("x").map(Number);
const browser = await launch(mode);
const page = await browser.newPage({ viewport: { width, height } });

// Frame timestamps with the self-test stage they fall in.
await page.addInitScript(() => {
  window.__frames = [];
  const tick = (t) => {
    const stage = document.getElementById("selftest")?.dataset.stage || "start";
    window.__frames.push([t, stage]);
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
});

// THROTTLE_MBIT=10: a 10 Mbit/s link (20 ms latency), to see what the
// wasm's transfer size means for the first draw.
const mbit = Number(process.env.THROTTLE_MBIT || 0);
if (mbit > 0) {
  const client = await page.context().newCDPSession(page);
  await client.send("Network.enable");
  await client.send("Network.emulateNetworkConditions", {
    offline: false, latency: 20, downloadThroughput: (mbit * 1e6) / 8, uploadThroughput: (mbit * 1e6) / 8,
  });
}
const started = Date.now();
await page.goto(`${url}?selftest`);
await page.waitForFunction(() => !document.getElementById("loading"), null, { timeout: 120_000 });
const firstDrawMs = await page.evaluate(() => performance.now());
const transfer = await page.evaluate(() => {
  const entries = [performance.getEntriesByType("navigation")[0], ...performance.getEntriesByType("resource")];
  return entries
    .filter((e) => e && /(\.html|\.js|\.wasm|\/)(\?.*)?$/.test(e.name))
    .map((e) => ({ name: e.name.split("/").pop() || "index.html", transfer_bytes: e.transferSize, body_bytes: e.decodedBodySize }));
});
await page.waitForFunction(() => document.title.startsWith("selftest:"), null, { timeout: 900_000 });
const report = JSON.parse((await page.$eval("#selftest", (e) => e.textContent)) || "{}");
const frames = await page.evaluate(() => window.__frames);
await browser.close();

const stats = {};
for (let i = 1; i < frames.length; i++) {
  const [t, stage] = frames[i];
  (stats[stage] ||= []).push(t - frames[i - 1][0]);
}
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const gaps = Object.fromEntries(Object.entries(stats).map(([stage, g]) => {
  const sorted = [...g].sort((a, b) => a - b);
  const total = g.reduce((a, b) => a + b, 0);
  return [stage, {
    frames: g.length,
    fps: +(1000 * g.length / total).toFixed(1),
    p50_ms: +quantile(sorted, 0.5).toFixed(1),
    p95_ms: +quantile(sorted, 0.95).toFixed(1),
    max_ms: +sorted[sorted.length - 1].toFixed(1),
  }];
}));
const check = (name) => (report.checks || []).find((c) => c.name === name);
console.log(JSON.stringify({
  mode, viewport: size, throttle_mbit: mbit || null, wall_s: (Date.now() - started) / 1000,
  first_draw_ms: Math.round(firstDrawMs), transfer,
  mnist_epoch: check("lesson:autograd_mlp"),
  frame_gaps: gaps, selftest_ok: report.ok,
}, null, 2));
