// Opens the web bundle's ?selftest in Debian's chromium and checks the result:
//   node selftest.mjs URL webgpu|cpu SCREENSHOT.png [zh]
// `webgpu`: WebGPU through SwiftShader: the GPU lesson's whole default race
// and a learner-kernel check must run on WebGPU.
// `cpu`: --disable-gpu, WebGL2 only: the kernels must take the CPU path.
// Both: every lesson's main action (through its button's code), no page
// error and no panic.
// `zh`: the browser's language is zh-CN: the page must end in Chinese (a
// lesson heading and an exercise prompt), with the Chinese font fetched.
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
let failure = null;
try {
  await page.goto(`${url}?selftest`);
  await page.waitForFunction(() => document.title.startsWith("selftest:"), null, { timeout: 420_000 });
  const report = JSON.parse((await page.$eval("#selftest", (e) => e.textContent)) || "{}");
  await page.screenshot({ path: shot });
  const size = fs.statSync(shot).size;
  console.log(JSON.stringify({ mode, lang, title: await page.title(), report, fonts, screenshot_bytes: size }, null, 2));
  const cjk = (text) => /[\u4e00-\u9fff]/.test(text || "");
  if (!report.ok) failure = "the self-test reported a failure";
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
