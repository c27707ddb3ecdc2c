// Talking to tesserad: fetches with the bearer token (when the user gave one), and error
// answers ({"error": {"code", "message"}}) turned into sentences a person can act on.

const TOKEN_KEY = "tessera.token";

// The token for this tab (sessionStorage: gone when the tab closes), or "".
export function token() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ""; } catch { return ""; }
}

export function setToken(value) {
  try {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token lasts until reload */ }
  document.dispatchEvent(new CustomEvent("tessera:token-changed"));
}

// Asked when an answer is 401: the page shows the token form.
function tokenRequired() {
  document.dispatchEvent(new CustomEvent("tessera:token-required"));
}

// An error the page can show as it is: `message` is meant for people.
export class ApiError extends Error {
  constructor(message, status = 0, code = "") {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// Turns an HTTP error answer into a sentence.
export function explain(status, body) {
  const detail = body && body.error && typeof body.error === "object" ? body.error.message || "" : "";
  const tail = detail ? ": " + detail.replace(/\.$/, "") : "";
  switch (status) {
    case 400: return "The server could not use this file" + (tail || " (is it a JPEG or PNG image?)") + ".";
    case 401: return "This server wants a bearer token (enter it in the bar at the top)" + tail + ".";
    case 404: return "Not found" + tail + ".";
    case 405: return "The server does not allow this request" + tail + ".";
    case 413: return "The image is too large for the server" + tail + ".";
    case 503: return "The server is busy (its queue is full) or shutting down; try again in a moment" + tail + ".";
    case 504: return "The server took too long to answer" + tail + ".";
    default: return `The server answered HTTP ${status}` + tail + ".";
  }
}

// fetch() with the token; resolves to the parsed JSON body of a 2xx answer, else throws ApiError.
export async function apiFetch(path, options = {}) {
  const headers = new Headers(options.headers || {});
  const t = token();
  if (t) headers.set("Authorization", "Bearer " + t);
  let res;
  try {
    res = await fetch(path, { ...options, headers });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError("Could not reach the server (" + e.message + ").", 0, "NETWORK");
  }
  let body = null;
  const text = await res.text().catch(() => "");
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!res.ok) {
    if (res.status === 401) tokenRequired();
    const code = body && body.error && typeof body.error === "object" ? body.error.code || "" : "";
    throw new ApiError(explain(res.status, body), res.status, code);
  }
  return body;
}

// Numbers as people read them: 1234.5 -> "1,234.5".
export function fmt(value, digits = 0) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  return Number(value).toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

// Microseconds as "850 µs" or "12.3 ms".
export function fmtMicros(us) {
  if (us === null || us === undefined) return "–";
  return us >= 10000 ? fmt(us / 1000, 1) + " ms" : fmt(us) + " µs";
}

// A <dl> of label/value pairs (values are text).
export function fillFacts(dl, pairs) {
  dl.textContent = "";
  for (const [label, value, id] of pairs) {
    const div = document.createElement("div");
    const dt = document.createElement("dt");
    dt.textContent = label;
    const dd = document.createElement("dd");
    dd.textContent = value;
    if (id) dd.dataset.fact = id;
    div.append(dt, dd);
    dl.appendChild(div);
  }
}
