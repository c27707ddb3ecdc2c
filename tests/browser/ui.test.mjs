// The web UI in a real browser (Debian's chromium, driven by playwright-core): three tesserad
// processes on free loopback ports (the one under test, a peer it is told about with --peers, and
// one wanting a bearer token), the page loaded from the first, and what a person would do:
// classify an image picked and one dropped, a camera frame (chromium's fake camera), a file that
// is no image, one too large, an unknown model; watch the live charts fill from the event
// stream; see the peer on the fleet tab; enter a token. Screenshots (desktop and 390 px phone
// width) go to $TESSERA_SCREENSHOT_DIR. Exit 0 when every step passed, 77 (skipped) when the
// machine has no chromium, 1 otherwise.
//
// Environment: TESSERAD (the binary), TESSERA_MODELS_DIR, TESSERA_WEB_ROOT, TESSERA_FMNIST_DIR
// (the make_fmnist_images fixture's folder), TESSERA_SCREENSHOT_DIR.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createServer } from "node:net";
import { createInterface } from "node:readline";

const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "browser-test-token-4711";
const MAX_IMAGE_BYTES = 256 * 1024;
const WAIT_MS = 20000;         // any single wait in the page
const TOTAL_MS = 240000;       // the whole test, whatever happens

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (CTest sets it; see tests/browser/CMakeLists.txt)`);
  return value;
}

if (!existsSync(CHROMIUM)) {
  console.log(`SKIP: ${CHROMIUM} is missing (tools/setup.sh installs Debian's chromium)`);
  process.exit(77);
}
const { chromium } = await import("playwright-core");

const tesserad = env("TESSERAD");
const modelsDir = env("TESSERA_MODELS_DIR");
const webRoot = env("TESSERA_WEB_ROOT");
const fmnistDir = env("TESSERA_FMNIST_DIR");
const shotDir = env("TESSERA_SCREENSHOT_DIR");
mkdirSync(shotDir, { recursive: true });
const scratch = mkdtempSync(path.join(tmpdir(), "tessera-browser-"));

const daemons = [];
let browser = null;
let passed = 0;
const shots = [];

// ---- tesserad processes -------------------------------------------------------------------

// Starts tesserad on free loopback ports (port 0) and waits (bounded) for its startup line.
function startDaemon(name, extra = [], httpPort = 0) {
  const args = ["--listen", "127.0.0.1", "--grpc-port", "0", "--http-port", String(httpPort), "--models", modelsDir,
                "--web-root", webRoot, "--max-image-bytes", String(MAX_IMAGE_BYTES), "--plan-cache", "", ...extra];
  const child = spawn(tesserad, args, { stdio: ["ignore", "pipe", "pipe"] });
  const daemon = { name, child, log: "", http: 0 };
  daemons.push(daemon);
  child.stderr.on("data", (d) => { daemon.log += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: no startup line within 60 s\n${daemon.log}`)), 60000);
    child.on("exit", (code) => { clearTimeout(timer); reject(new Error(`${name} exited (${code}) before listening\n${daemon.log}`)); });
    createInterface({ input: child.stdout }).on("line", (line) => {
      const m = /^tesserad: listening grpc=\S+:(\d+) http=\S+:(\d+) models=/.exec(line);
      if (!m) return;
      clearTimeout(timer);
      daemon.http = Number(m[2]);
      daemon.base = `http://127.0.0.1:${daemon.http}`;
      resolve(daemon);
    });
  });
}

// SIGTERM, then SIGKILL when the daemon is still there after 10 s.
function stopDaemon({ child }) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill("SIGKILL"), 10000);
    child.on("exit", () => { clearTimeout(kill); resolve(); });
    child.kill("SIGTERM");
  });
}

async function stopDaemons() {
  await Promise.all(daemons.map(stopDaemon));
}

// A loopback port nothing listens on (bound, read, closed).
function deadPort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// ---- helpers --------------------------------------------------------------------------------

function assert(condition, message) {
  if (!condition) throw new Error("assertion failed: " + message);
}

async function step(name, body) {
  const started = Date.now();
  await body();
  passed += 1;
  console.log(`ok ${passed} - ${name} (${Date.now() - started} ms)`);
}

async function shoot(page, file) {
  const where = path.join(shotDir, file);
  await page.screenshot({ path: where, fullPage: true });
  shots.push(where);
}

// The fixture's images with their true labels (labels.csv: file,label_index,label_name).
function fmnistImages() {
  const lines = readFileSync(path.join(fmnistDir, "labels.csv"), "utf8").trim().split(/\r?\n/).slice(1);
  return lines.map((line) => {
    const [file, , label] = line.split(",");
    return { file: path.join(fmnistDir, file), name: file, label };
  }).filter((image) => image.name.endsWith(".png"));
}

// What the daemon itself answers for an image (its own /v1/classify), top-1 label.
async function daemonTop1(base, file, headers = {}) {
  const res = await fetch(`${base}/v1/classify?top_k=1`, {
    method: "POST", body: readFileSync(file), headers: { "Content-Type": "image/png", ...headers },
  });
  assert(res.ok, `daemon answered ${res.status} for ${file}`);
  return (await res.json()).classes[0].label;
}

// Images (PNG and JPEG) that the model classifies as their true label, by the daemon's answer.
async function correctlyClassified(base, count) {
  const picked = [];
  for (const image of fmnistImages()) {
    if (await daemonTop1(base, image.file) === image.label) picked.push(image);
    if (picked.length === count) return picked;
  }
  throw new Error(`fewer than ${count} images in ${fmnistDir} are classified right`);
}

async function waitForResult(page) {
  await page.waitForSelector("#output:not([hidden])", { timeout: WAIT_MS });
  return page.$eval("#output", (el) => el.dataset.top1);
}

// Waits for an error message matching `pattern` (an earlier message does not count).
async function waitForError(page, pattern) {
  try {
    await page.waitForFunction(({ source, flags }) => {
      const el = document.getElementById("error");
      return !el.hidden && new RegExp(source, flags).test(el.textContent);
    }, { source: pattern.source, flags: pattern.flags }, { timeout: WAIT_MS });
  } catch (e) {
    const shown = await page.evaluate(() => [document.getElementById("error").hidden, document.getElementById("error").textContent,
                                             document.getElementById("message").textContent]);
    throw new Error(`no error message matching ${pattern}; error hidden=${shown[0]} "${shown[1]}", message "${shown[2]}"`);
  }
  const text = await page.textContent("#error");
  assert(await page.isHidden("#output"), "no stale result is shown next to the error");
  return text;
}

async function chartPoints(page, id) {
  return page.$eval(`#${id}`, (el) => ({ points: Number(el.dataset.points), last: el.dataset.last,
                                         canvas: Boolean(el.querySelector("canvas")) }));
}

async function waitForPoints(page, min) {
  await page.waitForFunction((n) => ["chart-power", "chart-rate", "chart-busy", "chart-queue", "chart-batch"]
    .every((id) => Number(document.getElementById(id).dataset.points) >= n), min, { timeout: WAIT_MS });
}

async function openPage(context, base, hash = "") {
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  // The error answers this test provokes are logged by chromium as "Failed to load resource".
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) problems.push("console: " + m.text());
  });
  page.problems = problems;
  await page.goto(`${base}/${hash}`);
  await page.waitForSelector("body[data-ready=true]", { timeout: WAIT_MS });
  return page;
}

// ---- the test -------------------------------------------------------------------------------

async function main() {
  const peer = await startDaemon("peer");
  const dead = await deadPort();
  const daemon = await startDaemon("daemon", ["--peers", `127.0.0.1:${peer.http},127.0.0.1:${dead}`,
                                              "--peer-timeout-ms", "1500"]);
  const tokens = path.join(scratch, "tokens");
  writeFileSync(tokens, TOKEN + "\n");
  const locked = await startDaemon("locked", ["--auth-tokens", tokens]);
  const [pngImage, jpgSource] = await correctlyClassified(daemon.base, 2);
  const jpgImage = { ...jpgSource, file: jpgSource.file.replace(/\.png$/, ".jpg"), name: jpgSource.name.replace(/\.png$/, ".jpg") };
  assert(existsSync(jpgImage.file), `${jpgImage.file} exists`);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync",
           "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"],
  });
  const desktop = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await desktop.grantPermissions(["camera"], { origin: daemon.base });
  const page = await openPage(desktop, daemon.base);

  await step("the page lists the daemon's models", async () => {
    await page.waitForSelector("#model:not([disabled])", { timeout: WAIT_MS });
    const models = await page.$$eval("#model option", (opts) => opts.map((o) => o.value));
    assert(models.includes("fashion-mnist"), `models ${models} include fashion-mnist`);
    const rows = await page.$$eval("#repository-table tbody tr", (trs) => trs.map((tr) => tr.textContent));
    assert(rows.some((r) => r.startsWith("fashion-mnist1READY")), `the models table lists version 1 ready: ${rows}`);
    // The int8 model's share of multiply-adds on the fabric, its segments and hand-overs; the load
    // line's words as the cell's title.
    const share = await page.$eval("#repository-table tbody tr[data-model=fashion-mnist] td.fabric-share",
      (td) => ({ text: td.textContent, title: td.title }));
    assert(/^\d+\.\d % \(\d+ segments?, \d+ hand-overs?\)$/.test(share.text), `the fabric share is shown: ${share.text}`);
    assert(share.title.startsWith("fabric "), `its title is the load line's placement: ${share.title}`);
  });

  await step(`a picked image (${pngImage.name}) is classified as its true label, ${pngImage.label}`, async () => {
    await page.setInputFiles("#file", pngImage.file);
    const top1 = await waitForResult(page);
    assert(top1 === pngImage.label, `top-1 ${top1} is ${pngImage.label}`);
    const rows = await page.$$eval("#classes li", (lis) => lis.map((li) => li.textContent));
    assert(rows.length === 5, `5 classes shown, not ${rows.length}`);
    assert(rows[0].startsWith(pngImage.label), `first row ${rows[0]} is the label`);
    const stages = await page.$$eval("#timing-legend li", (lis) => lis.map((li) => li.dataset.stage));
    for (const s of ["queue", "decode", "fabric", "host"]) assert(stages.includes(s), `timing shows ${s}`);
    assert(await page.$$eval("#timing-bar span", (s) => s.length) >= 4, "the stacked bar has its segments");
    const batch = Number(await page.textContent("[data-fact=batch-size]"));
    assert(batch >= 1, `batch size ${batch} >= 1`);
    assert(/[µm]J$/.test(await page.textContent("[data-fact=energy]")), "modeled energy shown");
    const model = await page.textContent("[data-fact=model]");
    assert(model === "fashion-mnist · version 1", `the answer's model and the version that served it: ${model}`);
    const natural = await page.$eval("#preview", (img) => img.naturalWidth);
    assert(natural === 28, `the preview shows the 28 px image (${natural})`);
  });
  await shoot(page, "desktop-classify.png");

  await step(`a dropped JPEG (${jpgImage.name}) is classified as ${jpgImage.label}`, async () => {
    const bytes = readFileSync(jpgImage.file).toString("base64");
    await page.evaluate(async ({ bytes, name }) => {
      const data = Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0));
      const transfer = new DataTransfer();
      transfer.items.add(new File([data], name, { type: "image/jpeg" }));
      document.getElementById("drop").dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }, { bytes, name: jpgImage.name });
    await page.waitForFunction((name) => document.getElementById("message").textContent.startsWith(name + ":") &&
                                         !document.getElementById("output").hidden, jpgImage.name, { timeout: WAIT_MS });
    const top1 = await page.$eval("#output", (el) => el.dataset.top1);
    assert(top1 === jpgImage.label, `top-1 ${top1} is ${jpgImage.label}`);
  });

  await step("a file that is no image gets a plain error, and the page stays usable", async () => {
    await page.setInputFiles("#file", { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("this is not an image\n") });
    await waitForError(page, /could not use this file: not a JPEG or PNG image/);
    await shoot(page, "desktop-error.png");
    await page.setInputFiles("#file", pngImage.file);
    assert(await waitForResult(page) === pngImage.label, "classifies again after the error");
  });

  await step("an image over --max-image-bytes is refused as too large", async () => {
    const big = Buffer.alloc(MAX_IMAGE_BYTES * 2, 7);
    await page.setInputFiles("#file", { name: "huge.png", mimeType: "image/png", buffer: big });
    await waitForError(page, /too large|larger than/);
    await page.setInputFiles("#file", pngImage.file);
    assert(await waitForResult(page) === pngImage.label, "classifies again after the error");
  });

  await step("an unknown model is a plain 404 message", async () => {
    await page.evaluate(() => {
      const select = document.getElementById("model");
      select.appendChild(new Option("no-such-model", "no-such-model"));
      select.value = "no-such-model";
      select.dispatchEvent(new Event("change"));
    });
    await waitForError(page, /Not found.*no-such-model/);
    await page.selectOption("#model", "fashion-mnist");  // re-sends the last image
    await waitForResult(page);
  });

  await step("a camera frame (chromium's fake camera) is captured and classified", async () => {
    await page.click("#camera-start");
    await page.waitForFunction(() => document.getElementById("camera-video").videoWidth > 0, null, { timeout: WAIT_MS });
    await page.click("#camera-capture");
    await page.waitForFunction(() => document.getElementById("message").textContent.startsWith("camera frame:") &&
                                     !document.getElementById("output").hidden, null, { timeout: WAIT_MS });
    assert(await page.$$eval("#classes li", (lis) => lis.length) === 5, "5 classes for the frame");
    await page.click("#camera-stop");
  });

  await step("the live charts fill from the event stream", async () => {
    await page.click("nav a[data-tab=live]");
    await waitForPoints(page, 3);
    const power = await chartPoints(page, "chart-power");
    const rate = await chartPoints(page, "chart-rate");
    assert(power.canvas && rate.canvas, "the charts are drawn");
    assert(Number(power.last) > 0, `the emulator's power model gives watts (${power.last})`);
    assert(Number(rate.last) > 0, `images/s after the classifications above (${rate.last})`);
    const status = await page.textContent("#live-status");
    assert(status === "live", `stream status ${status}`);
    const sizes = await page.$$eval("#batch-hist li", (lis) => lis.map((li) => li.textContent));
    assert(sizes.some((s) => s.startsWith("size 1")), `batch sizes listed: ${sizes}`);
    const devices = await page.$$eval("#device-table tbody tr", (trs) => trs.map((tr) => tr.dataset.state));
    assert(devices.length === 1 && devices[0] === "serving", `one device row, serving: ${devices}`);
  });
  await shoot(page, "desktop-live.png");

  await step("with two device instances the power, images/s and fabric busy charts have a line per device", async () => {
    const pair = await startDaemon("two instances", ["--device", "emu", "--devices", "0,1"]);
    assert(Number(await chartPoints(page, "chart-power").then((c) => c.last)) > 0, "the one-device page still draws");
    assert(await page.$eval("#chart-power", (el) => el.dataset.deviceLines) === undefined, "one device: no device lines");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await openPage(context, pair.base, "#live");
    for (const image of fmnistImages().slice(0, 16)) await daemonTop1(pair.base, image.file);
    const charts = ["chart-power", "chart-rate", "chart-busy"];
    await p.waitForFunction((ids) => ids.every((id) => document.getElementById(id).dataset.deviceLines === "2"), charts,
                            { timeout: WAIT_MS });
    // Both devices served (least outstanding work, ties in turn) and each has its own power model.
    await p.waitForFunction(() => (document.getElementById("chart-rate").dataset.lastDevices || "").split(",")
      .filter((v) => Number(v) > 0).length === 2, null, { timeout: WAIT_MS });
    const power = (await p.$eval("#chart-power", (el) => el.dataset.lastDevices)).split(",").map(Number);
    assert(power.length === 2 && power.every((w) => w > 0), `a power line per device: ${power}`);
    const legend = await p.$$eval("#chart-power .u-legend .u-series", (rows) => rows.map((r) => r.textContent.trim()));
    assert(legend.some((t) => t.startsWith("device 1")), `the legend names the devices: ${legend}`);
    const rows = await p.$$eval("#device-table tbody tr", (trs) => trs.length);
    assert(rows === 2, `two device rows, not ${rows}`);
    await shoot(p, "desktop-live-two-devices.png");
    assert(p.problems.length === 0, "no script errors: " + p.problems.join("; "));
    await context.close();
    await stopDaemon(pair);
  });

  await step("the fleet tab lists this daemon, its peer (ready) and a dead peer (unreachable, with the reason)", async () => {
    await page.click("nav a[data-tab=fleet]");
    const target = `127.0.0.1:${peer.http}`;
    await page.waitForSelector(`article[data-target="${target}"]`, { timeout: WAIT_MS });
    const cards = await page.$$eval("article.board", (as) => as.map((a) => ({
      target: a.dataset.target, reachable: a.dataset.reachable, state: a.querySelector(".pill").textContent,
      reason: a.querySelector(".reason") ? a.querySelector(".reason").textContent : "" })));
    assert(cards.length === 3, `three boards, not ${JSON.stringify(cards)}`);
    assert(cards[0].target === `127.0.0.1:${daemon.http}`, `first is this daemon: ${JSON.stringify(cards)}`);
    const peerCard = cards.find((c) => c.target === target);
    assert(peerCard.reachable === "true" && peerCard.state === "ready", `peer ready: ${JSON.stringify(peerCard)}`);
    const deadCard = cards.find((c) => c.target === `127.0.0.1:${dead}`);
    assert(deadCard && deadCard.reachable === "false" && deadCard.state === "unreachable" && /refused/.test(deadCard.reason),
           `dead peer unreachable with the reason: ${JSON.stringify(deadCard)}`);
  });
  await shoot(page, "desktop-fleet.png");
  assert(page.problems.length === 0, "no script errors: " + page.problems.join("; "));

  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  await step("at phone width (390 px) the page classifies and nothing overflows sideways", async () => {
    const small = await openPage(phone, daemon.base);
    await small.waitForSelector("#model:not([disabled])", { timeout: WAIT_MS });
    await small.setInputFiles("#file", pngImage.file);
    assert(await waitForResult(small) === pngImage.label, "classified at phone width");
    for (const view of ["classify", "live", "fleet"]) {
      await small.click(`nav a[data-tab=${view}]`);
      if (view === "live") await waitForPoints(small, 2);
      if (view === "fleet") await small.waitForSelector("article.board", { timeout: WAIT_MS });
      const width = await small.evaluate(() => document.documentElement.scrollWidth);
      assert(width <= 390, `${view}: the page is ${width} px wide`);
      await shoot(small, `phone-${view}.png`);
    }
    assert(small.problems.length === 0, "no script errors: " + small.problems.join("; "));
  });

  await step("a daemon wanting a bearer token: the page asks for it and then works (telemetry by polling)", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await openPage(context, locked.base);
    await p.waitForSelector("#token-form:not([hidden])", { timeout: WAIT_MS });
    await waitForError(p, /bearer token/);
    await shoot(p, "desktop-token.png");
    await p.fill("#token-input", "wrong-token");
    await p.click("#token-form button[type=submit]");
    await p.waitForSelector("#token-form:not([hidden])", { timeout: WAIT_MS });
    await p.fill("#token-input", TOKEN);
    await p.click("#token-form button[type=submit]");
    await p.waitForSelector("#model:not([disabled])", { timeout: WAIT_MS });
    await p.setInputFiles("#file", pngImage.file);
    const expected = await daemonTop1(locked.base, pngImage.file, { Authorization: "Bearer " + TOKEN });
    assert(await waitForResult(p) === expected, "classified with the token");
    await p.click("nav a[data-tab=live]");
    await waitForPoints(p, 2);
    const status = await p.textContent("#live-status");
    assert(status.startsWith("live (polling"), `status ${status}`);
    assert(await p.evaluate(() => sessionStorage.getItem("tessera.token")) === TOKEN, "the token is in sessionStorage");
    await context.close();
  });

  await step("when the daemon goes away and comes back, the live stream reconnects by itself", async () => {
    const first = await startDaemon("restarted");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await openPage(context, first.base, "#live");
    await waitForPoints(p, 2);
    await stopDaemon(first);
    await p.waitForFunction(() => document.getElementById("live-status").textContent !== "live", null, { timeout: WAIT_MS });
    const before = Number(await p.$eval("#chart-rate", (el) => el.dataset.points));
    await startDaemon("restarted again", [], first.http);
    await p.waitForFunction(() => document.getElementById("live-status").textContent === "live", null, { timeout: 30000 });
    await p.waitForFunction((n) => Number(document.getElementById("chart-rate").dataset.points) >= n + 2, before,
                            { timeout: WAIT_MS });
    await context.close();
  });
}

const deadline = setTimeout(() => {
  console.error(`FAIL: the browser test took over ${TOTAL_MS / 1000} s`);
  for (const d of daemons) d.child.kill("SIGKILL");
  process.exit(1);
}, TOTAL_MS);

let failed = 0;
try {
  await main();
} catch (e) {
  failed = 1;
  console.error("FAIL:", e.stack || e.message);
  for (const d of daemons) console.error(`---- ${d.name} log ----\n${d.log}`);
} finally {
  if (browser) await browser.close().catch(() => {});
  await stopDaemons();
  rmSync(scratch, { recursive: true, force: true });
  clearTimeout(deadline);
}
for (const s of shots) console.log("screenshot: " + s);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
