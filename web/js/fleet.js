// The Fleet view: GET /v1/fleet (this daemon asks its --peers), one card per board, refreshed
// every few seconds while the view is open.
import { apiFetch, fillFacts, fmt, fmtMicros } from "./api.js";

const $ = (id) => document.getElementById(id);
const REFRESH_MS = 5000;

// One row per device instance of a board: its state, throughput, power, temperature, load.
function deviceTable(devices) {
  const table = document.createElement("table");
  table.className = "devices";
  const head = table.createTHead().insertRow();
  for (const h of ["device", "state", "images/s", "power", "temp", "busy"]) {
    const th = document.createElement("th");
    th.textContent = h;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const d of devices) {
    const tr = body.insertRow();
    tr.dataset.device = String(d.index);
    tr.dataset.state = d.state || "";
    for (const text of [
      String(d.index),
      d.state || "–",
      fmt(d.images_per_second, 1),
      d.power_watts === null ? "–" : fmt(d.power_watts, 2) + " W",
      d.temperature_c === null ? "–" : fmt(d.temperature_c, 1) + " °C",
      d.fabric_utilization === null ? "–" : fmt(100 * d.fabric_utilization, 0) + " %",
    ]) {
      tr.insertCell().textContent = text;
    }
  }
  return table;
}

function boardCard(row) {
  const card = document.createElement("article");
  card.className = "card board" + (row.reachable ? "" : " down");
  card.dataset.target = row.target;
  card.dataset.reachable = String(row.reachable);
  const title = document.createElement("h2");
  const name = document.createElement("span");
  name.textContent = row.target + (row.self ? " (this daemon)" : "");
  const pill = document.createElement("span");
  pill.className = "pill " + (!row.reachable ? "bad" : row.ready ? "ok" : "bad");
  pill.textContent = !row.reachable ? "unreachable" : row.ready ? "ready" : "not ready";
  title.append(name, pill);
  card.appendChild(title);
  if (row.reachable) {
    const facts = document.createElement("dl");
    facts.className = "facts";
    fillFacts(facts, [
      ["device", row.device_kind || "–"],
      ["board", row.board || "–"],
      ["models", row.models.length ? row.models.join(", ") : "–"],
      ["images/s", fmt(row.images_per_second, 1)],
      ["power", row.power_watts === null ? "–" : fmt(row.power_watts, 2) + " W"],
      ["temperature", row.temperature_c === null ? "–" : fmt(row.temperature_c, 1) + " °C"],
      ["p99 latency", row.p99_us === null ? "no requests" : fmtMicros(row.p99_us)],
      ["queue depth", fmt(row.queue_depth)],
    ]);
    card.appendChild(facts);
    if ((row.devices || []).length) card.appendChild(deviceTable(row.devices));
  }
  if (row.error) {
    const reason = document.createElement("p");
    reason.className = "reason";
    reason.textContent = row.error;
    card.appendChild(reason);
  }
  return card;
}

export class FleetView {
  constructor() {
    this.timer = null;
    this.visible = false;
    this.loading = false;
    $("fleet-refresh").addEventListener("click", () => this.refresh());
    document.addEventListener("tessera:token-changed", () => this.visible && this.refresh());
  }

  show() {
    this.visible = true;
    this.refresh();
  }

  hide() {
    this.visible = false;
    clearTimeout(this.timer);
  }

  async refresh() {
    clearTimeout(this.timer);
    if (this.loading) return;
    this.loading = true;
    $("fleet-refresh").disabled = true;
    try {
      const body = await apiFetch("/v1/fleet");
      const rows = $("fleet-rows");
      rows.textContent = "";
      for (const row of body.rows) rows.appendChild(boardCard(row));
      rows.dataset.rows = String(body.rows.length);
      $("fleet-error").hidden = true;
      $("fleet-updated").textContent = "updated " + new Date().toLocaleTimeString();
    } catch (e) {
      $("fleet-error").textContent = "Cannot list the fleet: " + e.message;
      $("fleet-error").hidden = false;
    } finally {
      this.loading = false;
      $("fleet-refresh").disabled = false;
      if (this.visible) this.timer = setTimeout(() => this.refresh(), REFRESH_MS);
    }
  }
}
