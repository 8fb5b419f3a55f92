// Opens the web bundle's ?selftest in Debian's chromium and checks the result:
//   node selftest.mjs URL webgpu|cpu SCREENSHOT.png [zh]
// `webgpu`: WebGPU through SwiftShader: the GPU lesson's whole default race
// and a learner-kernel check must run on WebGPU.
// `cpu`: --disable-gpu, WebGL2 only: the kernels must take the CPU path.
// Both: every lesson's main action (through its button's code), no page
// error and no panic.
// `zh`: the browser's language is zh-CN: the page must end in Chinese (a
// lesson heading and an exercise prompt), with the Chinese font fetched.
// Then the progress round trip: the page offers its progress as a download
// when the self-test ends; that file is handed back through the page's file
// input and must read as the same progress, and a copy cut short must be
// refused by name.
import fs from "node:fs";
import { launch } from "./browser.mjs";

const [url, mode, shot, lang] = process.argv.slice(2);
const browser = await launch(mode);
const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, locale: lang === "zh" ? "zh-CN" : "en-US" });
const fonts = [];
page.on("response", (r) => { if (r.url().endsWith(".otf")) fonts.push(`${r.status()} ${r.url()}`); });
const logs = [];
page.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
page.on("pageerror", (e) => logs.push(`pageerror: ${e}`));
const downloads = [];
page.on("download", (d) => downloads.push(d));

// Hands `file` to the page's import and returns what the page read.
async function handBack(file) {
  await page.$eval("#selftest", (e) => e.removeAttribute("data-import"));
  await page.setInputFiles("#dlsys-import", file);
  await page.waitForFunction(() => document.getElementById("selftest").dataset.import, null, { timeout: 30_000 });
  return page.$eval("#selftest", (e) => e.dataset.import);
}

// The export → import round trip; a failure's reason, or null.
async function roundTrip() {
  const until = Date.now() + 30_000;
  while (downloads.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  if (downloads.length === 0) return "the progress was not offered as a download";
  const text = fs.readFileSync(await downloads[0].path(), "utf8");
  const file = JSON.parse(text);
  if (file.format !== "dlsys-lab-progress" || file.version !== 2) return `not a progress file: ${text.slice(0, 80)}`;
  const pages = Object.keys(file.state.lesson_states).length;
  const solved = Object.values(file.state.progress.exercises).filter((e) => e.solved).length;
  if (pages < 3) return `the export holds only ${pages} pages' state`;
  const read = await handBack({ name: downloads[0].suggestedFilename(), mimeType: "application/json", buffer: Buffer.from(text) });
  const want = `pages=${pages} solved=${solved}`;
  if (read !== want) return `the file handed back read as "${read}", not ${want}`;
  const cut = await handBack({ name: "cut.json", mimeType: "application/json", buffer: Buffer.from(text.slice(0, text.length >> 1)) });
  if (!cut.startsWith("refused: ") || !cut.includes("JSON")) return `a file cut short read as "${cut}"`;
  console.log(JSON.stringify({ round_trip: { file: downloads[0].suggestedFilename(), pages, cut } }));
  return null;
}
let failure = null;
try {
  await page.goto(`${url}?selftest`);
  await page.waitForFunction(() => document.title.startsWith("selftest:"), null, { timeout: 420_000 });
  const report = JSON.parse((await page.$eval("#selftest", (e) => e.textContent)) || "{}");
  const tripped = report.ok ? await roundTrip() : null;
  await page.screenshot({ path: shot });
  const size = fs.statSync(shot).size;
  console.log(JSON.stringify({ mode, lang, title: await page.title(), report, fonts, screenshot_bytes: size }, null, 2));
  const cjk = (text) => /[\u4e00-\u9fff]/.test(text || "");
  if (!report.ok) failure = "the self-test reported a failure";
  else if (tripped) failure = `progress round trip: ${tripped}`;
  else if (lang === "zh" && (report.lang !== "zh" || !cjk(report.heading) || !cjk(report.prompt)))
    failure = `expected the page in Chinese: lang ${report.lang}, heading "${report.heading}", prompt "${report.prompt}"`;
  else if (lang === "zh" && !fonts.some((f) => f.startsWith("200 ")))
    failure = `the Chinese font was not fetched: ${JSON.stringify(fonts)}`;
  else if (lang !== "zh" && (fonts.length > 0 || report.lang !== "en"))
    failure = `an English page fetched the Chinese font or was not English: ${report.lang} ${JSON.stringify(fonts)}`;
  else if (mode === "webgpu" && report.backend !== "webgpu") failure = `expected the kernel on WebGPU, got ${report.backend}`;
  else if (mode === "cpu" && report.backend !== "cpu") failure = `expected the CPU fallback, got ${report.backend}`;
  // Every lesson's main action ran through its button's path: the GPU
  // lesson's whole default race and a learner-kernel check on WebGPU (naga
  // and the CPU path without it), an MNIST epoch, a mixed-precision scenario.
  else if ((() => {
    const check = (name) => (report.checks || []).find((c) => c.name === name);
    const race = check("lesson:gpu_kernels"), kernel = check("lesson:write_kernels");
    for (const name of ["lesson:autograd_mlp", "lesson:mixed_precision"]) if (!check(name)?.ok) return true;
    if (!race?.ok || !kernel?.ok) return true;
    if (mode === "webgpu") return !race.detail.includes("rungs ran on the GPU") || !kernel.detail.includes("passes all");
    return !race.detail.startsWith("CPU path") || !kernel.detail.includes("naga validation only");
  })())
    failure = `a lesson's main action did not run as expected for ${mode}: ${JSON.stringify(report.checks)}`;
  // No panic and no page error, even if the report came back.
  else if (logs.some((l) => l.startsWith("pageerror") || l.includes("panicked at")))
    failure = "the page logged an error or a panic";
  // A blank page compresses to almost nothing; the rendered UI does not.
  else if (size < 20_000) failure = `the screenshot looks blank (${size} bytes)`;
} catch (err) {
  failure = `${err}`;
}
await browser.close();
if (failure) {
  console.error(`browser self-test (${mode}) FAILED: ${failure}`);
  console.error(logs.slice(-40).join("\n"));
  process.exit(1);
}
console.log(`browser self-test (${mode}) ok`);
