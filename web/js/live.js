// The Live view: power, images/s, fabric busy, queue depth and batch size as charts (uPlot), fed
// by the server-sent events of /v1/telemetry/stream. With more than one device instance
// (--devices), the power, images/s and fabric busy charts get a line per device beside the total.
// The stream reconnects when it ends or fails.
// EventSource cannot send an Authorization header, so with a bearer token the view polls
// GET /v1/telemetry (with the header) at the same interval instead.
import uPlot from "../node_modules/uplot/dist/uPlot.esm.js";
import { apiFetch, ApiError, fillFacts, fmt, fmtMicros, token } from "./api.js";

const $ = (id) => document.getElementById(id);
const INTERVAL_MS = 1000;
const MAX_POINTS = 300;  // five minutes at one sample a second
const MAX_RETRY_MS = 10000;

// floor: the y axis reaches at least this far (an idle server's zeros stay readable).
// perDevice: a device's own figure (telemetry `devices[]`), for the charts with a line per device.
const CHARTS = [
  { id: "chart-power", label: "power", color: "#d1495b", floor: 1, pick: (s) => s.power_watts,
    perDevice: (d) => d.power_watts },
  { id: "chart-rate", label: "images/s", color: "#2f6fde", floor: 1, pick: (s) => s.images_per_second,
    perDevice: (d) => d.images_per_second },
  { id: "chart-busy", label: "fabric busy %", color: "#e08a1e", floor: 10, pick: (s) => percent(s.fabric_utilization),
    perDevice: (d) => percent(d.fabric_utilization) },
  { id: "chart-queue", label: "queue depth", color: "#8f6bd6", floor: 4, pick: (s) => s.queue_depth },
  { id: "chart-batch", label: "mean batch size", color: "#25a18e", floor: 1, pick: (s, prev) => meanBatch(s, prev) },
];
// The device lines' colours, device i taking DEVICE_COLORS[i % length]; the total stays in its own.
const DEVICE_COLORS = ["#1b998b", "#f46036", "#5b5f97", "#c5283d", "#2e86ab", "#8c6a5d", "#7a9e0b", "#b05ec4"];

function percent(fraction) {
  return fraction === null || fraction === undefined ? null : 100 * fraction;
}
const WINDOW_S = 120;  // the charts show the last two minutes

// Batches formed since start, per size, over every model: {size: batches}.
function batchCounts(snapshot) {
  const counts = {};
  for (const m of snapshot.models || []) {
    for (const b of m.batch_sizes || []) counts[b.size] = (counts[b.size] || 0) + b.batches;
  }
  return counts;
}

// The mean size of the batches formed between two snapshots; null when none were.
function meanBatch(snapshot, previous) {
  if (!previous) return null;
  const now = batchCounts(snapshot);
  const before = batchCounts(previous);
  let batches = 0, images = 0;
  for (const [size, count] of Object.entries(now)) {
    const delta = count - (before[size] || 0);
    if (delta > 0) { batches += delta; images += delta * Number(size); }
  }
  return batches ? images / batches : null;
}

// `devices`: how many device lines the chart has beside the total (0: the total only).
function chartOptions(spec, width, devices) {
  const axis = { stroke: "#5d6779", grid: { stroke: "#eef0f4" }, ticks: { stroke: "#d8dde6" } };
  return {
    width,
    height: 170,
    legend: { show: devices > 0, live: false },
    cursor: { drag: { x: false, y: false } },
    scales: {
      // The last two minutes; a young page shows at least its last 30 s, not a sliver.
      x: { time: true, range: (u, min, max) => [Math.max(max - WINDOW_S, Math.min(min, max - 30)), max] },
      y: { range: (u, min, max) => [0, Math.max((max || 0) * 1.15, spec.floor)] },
    },
    axes: [
      axis,
      { ...axis, size: 44,
        values: (u, ticks) => {
          const fractional = ticks.some((v) => !Number.isInteger(v));
          return ticks.map((v) => fmt(v, fractional ? 1 : 0));
        } },
    ],
    series: [
      {},
      { label: devices ? "total" : spec.label, stroke: spec.color, width: 2, fill: spec.color + "22",
        points: { show: false } },
      ...Array.from({ length: devices }, (_, i) => ({
        label: `device ${i}`, stroke: DEVICE_COLORS[i % DEVICE_COLORS.length], width: 1.5, dash: [6, 3],
        points: { show: false } })),
    ],
  };
}

export class LiveView {
  constructor() {
    this.times = [];
    this.values = CHARTS.map(() => []);
    // Per chart with perDevice, per device index: its values, aligned with this.times.
    this.deviceValues = CHARTS.map(() => []);
    this.deviceLines = 0;  // device lines drawn per chart (0 with one device)
    this.previous = null;
    this.events = 0;
    this.source = null;
    this.timer = null;
    this.retryMs = 1000;
    this.plots = CHARTS.map((spec) => this.makePlot(spec, 0));
    for (const [i, spec] of CHARTS.entries()) {
      const el = $(spec.id);
      new ResizeObserver(() => {
        if (el.clientWidth > 0) this.plots[i].setSize({ width: el.clientWidth, height: 170 });
      }).observe(el);
    }
    document.addEventListener("tessera:token-changed", () => this.start());
  }

  makePlot(spec, devices) {
    const el = $(spec.id);
    const empty = Array.from({ length: devices + 2 }, () => []);
    return new uPlot(chartOptions(spec, Math.max(el.clientWidth, 280), devices), empty, el);
  }

  // Redraws the per-device charts with `lines` device lines (uPlot's series are fixed per plot).
  setDeviceLines(lines) {
    this.deviceLines = lines;
    CHARTS.forEach((spec, i) => {
      if (!spec.perDevice) return;
      this.plots[i].destroy();
      this.plots[i] = this.makePlot(spec, lines);
      const values = this.deviceValues[i];
      // A device new to the chart has no figure for the snapshots before this one.
      while (values.length < lines) values.push(new Array(Math.max(0, this.times.length - 1)).fill(null));
      $(spec.id).dataset.deviceLines = String(lines);
    });
  }

  // Appends this snapshot's per-device figures (null for a device it does not list).
  ingestDevices(s) {
    const devices = s.devices || [];
    const lines = devices.length > 1 ? devices.length : 0;
    if (lines !== this.deviceLines) this.setDeviceLines(lines);
    CHARTS.forEach((spec, i) => {
      if (!spec.perDevice) return;
      this.deviceValues[i].forEach((values, d) => {
        const v = d < devices.length ? spec.perDevice(devices[d]) : null;
        values.push(v === undefined ? null : v);
      });
    });
  }

  chartData(i) {
    const lines = CHARTS[i].perDevice ? this.deviceValues[i].slice(0, this.deviceLines) : [];
    return [this.times, this.values[i], ...lines];
  }

  setStatus(text, kind = "") {
    const pill = $("live-status");
    pill.textContent = text;
    pill.className = "pill " + kind;
  }

  stop() {
    if (this.source) { this.source.close(); this.source = null; }
    clearTimeout(this.timer);
    this.timer = null;
  }

  // (Re)starts the feed: the event stream, or polling when a token must be sent.
  start() {
    this.stop();
    this.retryMs = 1000;
    if (token()) this.poll(); else this.openStream();
  }

  openStream() {
    this.setStatus("connecting…");
    const source = new EventSource(`/v1/telemetry/stream?interval_ms=${INTERVAL_MS}`);
    this.source = source;
    source.onopen = () => { this.retryMs = 1000; this.setStatus("live", "ok"); };
    source.onmessage = (e) => {
      try { this.ingest(JSON.parse(e.data)); } catch (err) { console.warn("bad telemetry event", err); }
    };
    source.onerror = () => {
      if (source !== this.source) return;
      if (source.readyState === EventSource.CONNECTING) {
        this.setStatus("stream ended; reconnecting…", "bad");
        return;
      }
      // The browser gave up (an error status, a refused connection): find out why, then retry.
      source.close();
      this.source = null;
      this.diagnose();
    };
  }

  async diagnose() {
    try {
      await apiFetch("/v1/telemetry");
      this.retryLater("the stream failed");
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        this.setStatus("needs a bearer token", "bad");  // the token form is open; saving it restarts
        return;
      }
      this.retryLater(e.message);
    }
  }

  retryLater(why) {
    const seconds = Math.round(this.retryMs / 1000);
    this.setStatus(`${why}; retrying in ${seconds} s`, "bad");
    this.timer = setTimeout(() => (token() ? this.poll() : this.openStream()), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }

  async poll() {
    this.timer = null;
    try {
      this.ingest(await apiFetch("/v1/telemetry"));
      this.retryMs = 1000;
      this.setStatus("live (polling: a token is in use)", "ok");
      this.timer = setTimeout(() => this.poll(), INTERVAL_MS);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        this.setStatus("the token is not accepted", "bad");
        return;
      }
      this.retryLater(e.message);
    }
  }

  ingest(s) {
    this.events += 1;
    $("view-live").dataset.events = String(this.events);
    this.times.push((s.time_unix_ms || Date.now()) / 1000);
    CHARTS.forEach((spec, i) => {
      const v = spec.pick(s, this.previous);
      this.values[i].push(v === undefined ? null : v);
    });
    this.ingestDevices(s);
    if (this.times.length > MAX_POINTS) {
      this.times.shift();
      for (const v of this.values) v.shift();
      for (const chart of this.deviceValues) for (const v of chart) v.shift();
    }
    this.previous = s;
    CHARTS.forEach((spec, i) => {
      const data = this.chartData(i);
      this.plots[i].setData(data);
      const el = $(spec.id);
      el.dataset.points = String(this.times.length);
      el.dataset.last = String(this.values[i][this.values[i].length - 1]);
      // The device lines' last values, for the browser test: "0.61,0.58".
      if (spec.perDevice) el.dataset.lastDevices = data.slice(2).map((v) => String(v[v.length - 1])).join(",");
    });
    this.renderNow(s);
    this.renderDevices(s);
  }

  // One row per device instance (--devices): state, throughput, power, energy, load, errors.
  renderDevices(s) {
    const tbody = $("device-table").tBodies[0];
    tbody.textContent = "";
    for (const d of s.devices || []) {
      const tr = tbody.insertRow();
      tr.dataset.device = String(d.index);
      tr.dataset.state = d.state;
      for (const text of [
        `${d.index} · ${d.kind}`,
        d.state,
        fmt(d.images_per_second, 1),
        d.power_watts === null ? "no sensor" : fmt(d.power_watts, 2) + " W",
        fmt(d.energy_joules, 1) + " J",
        d.temperature_c === null ? "no sensor" : fmt(d.temperature_c, 1) + " °C",
        fmt(100 * d.fabric_utilization, 1) + " %",
        fmt(d.errors),
      ]) {
        tr.insertCell().textContent = text;
      }
    }
  }

  renderNow(s) {
    const power = s.power_watts === null ? "no sensor" : fmt(s.power_watts, 2) + " W";
    fillFacts($("live-now"), [
      ["device", `${s.device_kind} · ${s.board}`, "device"],
      ["power", power + (s.power_source ? ` (${s.power_source})` : ""), "power"],
      ["energy since start", fmt(s.energy_joules, 1) + " J", "energy"],
      ["temperature", s.temperature_c === null ? "no sensor" : fmt(s.temperature_c, 1) + " °C", "temperature"],
      ["images/s", fmt(s.images_per_second, 1), "rate"],
      ["queue depth", fmt(s.queue_depth), "queue"],
      ["fabric busy", fmt(100 * s.fabric_utilization, 1) + " %", "fabric"],
      ["ready", s.ready ? "yes" : "no", "ready"],
    ]);
    $("device-line").textContent = `${s.device_name || s.device_kind} · board ${s.board} · ${s.ready ? "ready" : "not ready"}`;

    const counts = batchCounts(s);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    const hist = $("batch-hist");
    hist.textContent = "";
    if (!total) {
      const li = document.createElement("li");
      li.textContent = "no batches yet";
      hist.appendChild(li);
    }
    for (const [size, count] of Object.entries(counts).sort((a, b) => a[0] - b[0])) {
      const li = document.createElement("li");
      const label = document.createElement("span");
      label.textContent = `size ${size}`;
      const bar = document.createElement("div");
      bar.className = "bar";
      const fill = document.createElement("span");
      fill.style.width = (100 * count / total) + "%";
      bar.appendChild(fill);
      const num = document.createElement("span");
      num.className = "num";
      num.textContent = fmt(count);
      li.append(label, bar, num);
      hist.appendChild(li);
    }

    const tbody = $("latency-table").tBodies[0];
    tbody.textContent = "";
    for (const m of s.models || []) {
      for (const l of m.latency || []) {
        const tr = document.createElement("tr");
        for (const text of [m.name, l.stage, fmtMicros(l.p50_us), fmtMicros(l.p99_us), fmtMicros(l.max_us), fmt(l.count)]) {
          const td = document.createElement("td");
          td.textContent = text;
          tr.appendChild(td);
        }
        tbody.appendChild(tr);
      }
    }
  }
}
