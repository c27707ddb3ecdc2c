// The page's start: the three views behind tabs (#classify, #live, #fleet) and the bearer-token
// form, shown when the server answers 401.
import { setToken, token } from "./api.js";
import { initClassify, loadModels } from "./classify.js";
import { FleetView } from "./fleet.js";
import { LiveView } from "./live.js";

const $ = (id) => document.getElementById(id);
const VIEWS = ["classify", "live", "fleet"];

function initToken() {
  const form = $("token-form");
  const open = () => {
    form.hidden = false;
    $("token-input").value = token();
    $("token-input").focus();
  };
  document.addEventListener("tessera:token-required", open);
  $("token-button").addEventListener("click", () => (form.hidden ? open() : (form.hidden = true)));
  $("token-close").addEventListener("click", () => (form.hidden = true));
  $("token-forget").addEventListener("click", () => {
    $("token-input").value = "";
    setToken("");
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const value = $("token-input").value.trim();
    if (!value) return;
    form.hidden = true;
    setToken(value);
  });
  document.addEventListener("tessera:token-changed", () => loadModels());
}

function initTabs(fleet) {
  const show = () => {
    const name = VIEWS.includes(location.hash.slice(1)) ? location.hash.slice(1) : "classify";
    for (const v of VIEWS) $("view-" + v).hidden = v !== name;
    for (const a of document.querySelectorAll("nav a[data-tab]")) {
      if (a.dataset.tab === name) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    if (name === "fleet") fleet.show(); else fleet.hide();
  };
  window.addEventListener("hashchange", show);
  show();
}

initToken();
initClassify();
loadModels();
new LiveView().start();
initTabs(new FleetView());
document.body.dataset.ready = "true";
