// The Classify view: pick, drop or photograph an image; POST /v1/classify; show the top 5, the
// timing breakdown as a stacked bar, the batch size and the modeled energy.
import { apiFetch, ApiError, fillFacts, fmt, fmtMicros } from "./api.js";
import { Camera } from "./camera.js";

const $ = (id) => document.getElementById(id);

// The stages of the stacked bar, in the order a request passes them.
const STAGES = [
  { key: "queue_us", name: "queue", color: "var(--queue)" },
  { key: "decode_us", name: "decode", color: "var(--decode)" },
  { key: "fabric_us", name: "fabric", color: "var(--fabric)" },
  { key: "host_us", name: "host", color: "var(--host)" },
];

let lastImage = null;  // {blob, name}: re-sent when the model changes
let sequence = 0;      // only the newest request's answer is shown

function showMessage(text) {
  $("message").textContent = text;
  $("message").hidden = false;
  $("error").hidden = true;
  $("status").classList.remove("has-error");
}

function showError(text) {
  $("error").textContent = text;
  $("error").hidden = false;
  $("message").hidden = true;
  $("status").classList.add("has-error");
}

export async function loadModels() {
  const select = $("model");
  try {
    const body = await apiFetch("/v1/models");
    const previous = select.value;
    select.textContent = "";
    // One entry per model (requests go to its newest version); the versions served in its label.
    const versions = new Map();
    for (const m of body.models) versions.set(m.name, [...(versions.get(m.name) || []), m.version]);
    for (const m of body.models) {
      if (select.querySelector(`option[value="${CSS.escape(m.name)}"]`)) continue;
      const opt = document.createElement("option");
      opt.value = m.name;
      opt.textContent = `${m.name} v${versions.get(m.name).join(", v")} (${m.input.channels}×${m.input.height}×${m.input.width}, ${m.labels.length} classes, ${m.precision} on ${m.device})`;
      opt.selected = previous ? m.name === previous : m.name === body.default;
      select.appendChild(opt);
    }
    renderRepository(body.repository || [], body.models);
    select.disabled = false;
    if ($("error").textContent.startsWith("Cannot list the models")) showMessage("Choose an image to classify.");
  } catch (e) {
    select.textContent = "";
    select.appendChild(new Option("(unavailable)"));
    select.disabled = true;
    showError("Cannot list the models: " + e.message);
  }
}

// The repository's index: every model folder, its versions and load state (and why not ready).
// Where a served int8 version's multiply-adds run, e.g. "98.6 % (2 segments, 1 hand-over)"; its
// load line's words as the cell's title. "host" for fp32, "–" for a version that is not served.
function placementText(model) {
  if (!model) return ["–", ""];
  const p = model.placement;
  if (!p) return ["host (" + model.precision + ")", ""];
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  return [`${(100 * p.fabric_mac_share).toFixed(1)} % (${plural(p.fabric_segments, "segment")}, ${plural(p.handovers, "hand-over")})`,
    p.summary];
}

// The repository's rows (every model folder with its state), or the served models when the daemon
// serves one model folder without a repository; each with its fabric share.
function renderRepository(rows, models) {
  const served = new Map(models.map((m) => [`${m.name}/${m.version}`, m]));
  if (rows.length === 0) rows = models.map((m) => ({ name: m.name, version: String(m.version), state: "READY", reason: "" }));
  const tbody = $("repository-table").tBodies[0];
  tbody.textContent = "";
  for (const r of rows) {
    const tr = tbody.insertRow();
    tr.dataset.model = r.name;
    tr.dataset.state = r.state;
    const [share, summary] = placementText(served.get(`${r.name}/${r.version}`));
    for (const text of [r.name, r.version || "–", r.state, share, r.reason || ""]) tr.insertCell().textContent = text;
    tr.cells[3].title = summary;
    tr.cells[3].className = "fabric-share";
  }
  $("repository-card").hidden = rows.length === 0;
}

function renderClasses(classes) {
  const list = $("classes");
  list.textContent = "";
  for (const c of classes) {
    const li = document.createElement("li");
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = c.label;
    const bar = document.createElement("div");
    bar.className = "bar";
    const fill = document.createElement("span");
    fill.style.width = Math.max(0, Math.min(100, c.score * 100)) + "%";
    bar.appendChild(fill);
    const pct = document.createElement("span");
    pct.className = "num";
    pct.textContent = (c.score * 100).toFixed(2) + "%";
    li.append(label, bar, pct);
    list.appendChild(li);
  }
}

function renderTiming(t) {
  const bar = $("timing-bar");
  const legend = $("timing-legend");
  bar.textContent = "";
  legend.textContent = "";
  const parts = STAGES.map((s) => ({ ...s, us: Math.max(0, t[s.key] || 0) }));
  const staged = parts.reduce((sum, p) => sum + p.us, 0);
  const other = Math.max(0, (t.total_us || 0) - staged);
  if (other > 0) parts.push({ name: "other", color: "var(--other)", us: other });
  const whole = Math.max(1, staged + other);
  for (const p of parts) {
    const seg = document.createElement("span");
    seg.style.width = (100 * p.us / whole) + "%";
    seg.style.background = p.color;
    seg.title = `${p.name}: ${fmt(p.us)} µs`;
    bar.appendChild(seg);
    const li = document.createElement("li");
    li.style.setProperty("--c", p.color);
    li.textContent = `${p.name} ${fmtMicros(p.us)}`;
    li.dataset.stage = p.name;
    legend.appendChild(li);
  }
  bar.setAttribute("aria-label", parts.map((p) => `${p.name} ${p.us} µs`).join(", "));
}

function render(body, name) {
  renderClasses(body.classes);
  const t = body.timing;
  renderTiming(t);
  fillFacts($("facts"), [
    ["total", fmtMicros(t.total_us), "total"],
    ["inference (batch)", fmtMicros(t.inference_us), "inference"],
    ["modeled fabric time", fmtMicros(t.modeled_fabric_us), "modeled-fabric"],
    ["batch size", String(t.batch_size), "batch-size"],
    ["modeled energy", t.modeled_energy_uj >= 1000 ? fmt(t.modeled_energy_uj / 1000, 2) + " mJ" : fmt(t.modeled_energy_uj, 1) + " µJ", "energy"],
    // The version that served this image (a load may have replaced the one listed above).
    ["model", body.model_version ? `${body.model} · version ${body.model_version}` : body.model, "model"],
    ["request", body.request_id, "request"],
  ]);
  const top = body.classes.length ? body.classes[0] : null;
  showMessage(top ? `${name}: ${top.label} (${(top.score * 100).toFixed(1)}%)` : `${name}: no classes`);
  $("output").dataset.top1 = top ? top.label : "";
  $("output").hidden = false;
}

// Sends one image; the newest answer wins.
export async function classify(blob, name) {
  if (!blob) return;
  const mine = ++sequence;
  lastImage = { blob, name };
  const preview = $("preview");
  if (preview.src.startsWith("blob:")) URL.revokeObjectURL(preview.src);
  preview.src = URL.createObjectURL(blob);
  $("output").hidden = true;
  showMessage(`Classifying ${name}…`);
  const select = $("model");
  const params = new URLSearchParams({ top_k: "5" });
  if (!select.disabled && select.value) params.set("model", select.value);
  try {
    const body = await apiFetch("/v1/classify?" + params, {
      method: "POST",
      headers: { "Content-Type": blob.type || "application/octet-stream" },
      body: blob,
    });
    if (mine === sequence) render(body, name);
  } catch (e) {
    if (mine !== sequence) return;
    // A body over the limit may be cut off before the 413 can be read: say what is likely.
    const message = e instanceof ApiError && e.code === "NETWORK" && blob.size > 64 << 10
      ? `${e.message} A file this large (${fmt(blob.size / 1024)} KiB) is probably over the server's size limit.`
      : e.message;
    showError(`${name}: ${message}`);
  }
}

export function initClassify() {
  $("file").addEventListener("change", (e) => {
    const file = e.target.files[0];
    if (file) classify(file, file.name);
  });
  $("model").addEventListener("change", () => lastImage && classify(lastImage.blob, lastImage.name));
  // The form only submits without JavaScript; here the change handler does the work.
  $("upload").addEventListener("submit", (e) => e.preventDefault());

  const drop = $("drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    const file = e.dataTransfer.files[0];
    if (file) classify(file, file.name);
  });
  drop.addEventListener("click", () => $("file").click());
  drop.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") $("file").click(); });

  const camera = new Camera($("camera-video"));
  const startButton = $("camera-start");
  if (!Camera.available()) {
    startButton.disabled = true;
    startButton.title = "This browser gives no camera here (it needs https or localhost and a camera)";
  }
  startButton.addEventListener("click", async () => {
    try {
      await camera.start();
      $("camera").hidden = false;
      showMessage("Camera on: point it at an object and press “Capture and classify”.");
    } catch (e) {
      showError("The camera could not be opened: " + e.message);
    }
  });
  $("camera-capture").addEventListener("click", async () => {
    try {
      const blob = await camera.capture();
      classify(blob, "camera frame");
    } catch (e) {
      showError("No frame from the camera: " + e.message);
    }
  });
  $("camera-stop").addEventListener("click", () => {
    camera.stop();
    $("camera").hidden = true;
  });
}
