// Debian's chromium, headless, as the web tests use it: `webgpu` through
// SwiftShader (Vulkan), or `cpu`: --disable-gpu, WebGL2 only.
import { chromium } from "playwright-core";

export function launch(mode) {
  const common = [
    "--no-sandbox", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
  ];
  const webgpu = ["--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader", "--use-angle=vulkan"];
  const args = mode === "webgpu" ? [...common, ...webgpu] : [...common, "--disable-gpu"];
  return chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args, headless: true });
}
