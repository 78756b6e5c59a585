// The view page: one render of a state (JSON from the server), fed live by
// server-sent events or, for a recorded session, by the time slider.
"use strict";
const body = document.body;
window.addEventListener("error", () => { body.dataset.errors = String(Number(body.dataset.errors) + 1); });
window.addEventListener("unhandledrejection", () => { body.dataset.errors = String(Number(body.dataset.errors) + 1); });

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmt(v, digits) {
  if (v === null || v === undefined || Number.isNaN(v)) return "-";
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(3);
  return v.toFixed(digits === undefined ? 4 : digits);
}

function renderDevices(devices) {
  const tbody = document.querySelector("#devices tbody");
  tbody.replaceChildren();
  for (const d of devices) {
    const tr = el("tr", { "data-device": d.name, "data-state": d.state });
    tr.append(el("td", {}, d.name));
    const st = el("td"); st.append(el("span", { class: "state " + d.state }, d.state)); tr.append(st);
    tr.append(el("td", { class: "num" }, fmt(d.rate_hz, 1)));
    tr.append(el("td", { class: "num" }, String(d.rows)));
    tr.append(el("td", { class: "num" }, String(d.gaps)));
    tr.append(el("td", { class: "num" }, String(d.reconnects)));
    const values = el("td", { class: "values" });
    for (const [k, v] of d.values) values.append(el("span", {}, k + " = " + (Number.isInteger(v) ? String(v) : fmt(v))));
    tr.append(values);
    tbody.append(tr);
  }
}

// A camera's preview stays on the last image that loaded until a newer one
// has loaded (off-screen), so that a slow fetch never blanks it; a newer
// image is shown whenever it loads, even if a still newer one is on its way.
const previews = new Map(); // camera name -> { slot, shown, shownSeq, wanted, seq }
function preview(c) {
  let p = previews.get(c.name);
  if (!p) { p = { slot: null, shown: null, shownSeq: 0, wanted: null, seq: 0 }; previews.set(c.name, p); }
  p.slot = el("div", { class: "preview" });
  if (p.shown) p.slot.append(p.shown);
  if (!c.frame_url || c.frame_url === p.wanted) return null;
  p.wanted = c.frame_url;
  const seq = ++p.seq;
  const next = el("img", { alt: "camera " + c.name, "data-frame": String(c.frame) });
  const loaded = new Promise(resolve => {
    next.onload = () => {
      if (seq > p.shownSeq) { p.shown = next; p.shownSeq = seq; p.slot.replaceChildren(next); }
      resolve();
    };
    next.onerror = () => resolve();
  });
  next.src = c.frame_url;
  return loaded;
}

// Renders the cameras; returns a promise of their new previews having loaded.
function renderCameras(cameras) {
  const box = document.getElementById("cameras");
  box.replaceChildren();
  const loading = [];
  for (const c of cameras) {
    const s = el("section", { class: "camera", "data-camera": c.name, "data-device-ms": String(c.device_ms ?? ""), "data-frame": String(c.frame ?? ""), "data-t": String(c.t_s ?? "") });
    s.append(el("h2", {}, "Camera " + c.name + (c.frame !== null ? " (frame " + c.frame + ")" : "")));
    const loaded = preview(c);
    if (loaded) loading.push(loaded);
    s.append(previews.get(c.name).slot);
    for (const w of c.warnings) s.append(el("div", { class: "warning" }, w));
    const t = el("table", { class: "markers" });
    t.append(el("tr", {}, ""));
    t.rows[0].innerHTML = "<th>marker</th><th>u [px]</th><th>v [px]</th><th>x [m]</th><th>y [m]</th><th>z [m]</th>";
    for (const m of c.markers) {
      const tr = el("tr", { "data-marker": String(m.index) });
      tr.append(el("td", {}, String(m.index)));
      for (const k of ["u_px", "v_px"]) tr.append(el("td", { class: "num", "data-k": k }, fmt(m[k], 2)));
      for (const k of ["x_m", "y_m", "z_m"]) tr.append(el("td", { class: "num", "data-k": k }, fmt(m[k], 6)));
      t.append(tr);
    }
    s.append(t);
    box.append(s);
  }
  return Promise.all(loading);
}

// What the page serves: "live" (a recording) or a recorded session.
let viewMode = "";

function renderStrain(strain) {
  const box = document.getElementById("strain");
  box.replaceChildren();
  if (!strain) {
    // Each view's own way to strain: record's --rod, or the session's strain table.
    const how = viewMode === "live"
      ? "give record --rod (and a calibrated camera) to observe it"
      : "the session has no strain.parquet: make it with rodlab observe SESSION --rod ROD --out SESSION/strain.parquet";
    box.append(el("p", {}, "no strain: " + how));
    return;
  }
  const plots = el("div"); plots.innerHTML = strain.svg + strain.shape_svg; box.append(plots);
  box.append(el("p", {}, "residual " + fmt(strain.residual_m * 1e3, 3) + " mm, " + strain.status));
  // The strain's own frame time: it may lag the camera's newest frame.
  const t = el("table", { class: "nodes", "data-t": String(strain.t_s ?? "") });
  t.innerHTML = "<tr><th>node</th><th>s [m]</th><th>kappa_x [1/m]</th><th>kappa_y [1/m]</th><th>kappa_z [1/m]</th></tr>";
  strain.nodes.forEach((n, i) => {
    const tr = el("tr", { "data-node": String(i) });
    tr.append(el("td", {}, String(i)));
    for (const k of ["arc_m", "kappa_x", "kappa_y", "kappa_z"]) tr.append(el("td", { class: "num", "data-k": k }, fmt(n[k], 6)));
    t.append(tr);
  });
  box.append(t);
}

function render(s) {
  document.getElementById("clock").textContent = "t = " + fmt(s.t_s, 2) + " s";
  body.dataset.t = String(s.t_s);
  renderDevices(s.devices);
  const previewsLoaded = renderCameras(s.cameras);
  renderStrain(s.strain);
  document.getElementById("plots").innerHTML = s.plots.join("");
  const notes = document.getElementById("notes");
  notes.replaceChildren(...s.notes.map(n => el("li", {}, n)));
  document.getElementById("notes-box").hidden = s.notes.length === 0;
  body.dataset.updates = String(Number(body.dataset.updates) + 1);
  return previewsLoaded;
}

async function start() {
  const info = await (await fetch("/api/info")).json();
  viewMode = info.mode;
  document.getElementById("title").textContent = info.title;
  document.title = info.title;
  const link = document.getElementById("link");
  if (info.mode === "live") {
    const events = new EventSource("/events");
    events.onopen = () => { link.textContent = "live"; };
    events.onerror = () => { link.textContent = "recording ended or server gone"; };
    events.onmessage = (e) => render(JSON.parse(e.data));
    return;
  }
  link.textContent = "recorded session";
  const slider = document.getElementById("slider");
  document.getElementById("replay").hidden = false;
  slider.min = String(info.start_s); slider.max = String(info.end_s); slider.step = "any";
  let pending = null, busy = false;
  async function show(t) {
    if (busy) { pending = t; return; }
    busy = true;
    document.getElementById("slider-t").textContent = fmt(t, 3) + " s";
    const s = await (await fetch("/api/at?t=" + t)).json();
    // Ready once the chosen time's frame is on the page, not just asked for.
    await render(s);
    body.dataset.ready = "1";
    busy = false;
    if (pending !== null) { const p = pending; pending = null; show(p); }
  }
  const asked = new URLSearchParams(location.search).get("t");
  const t0 = asked !== null ? Number(asked) : info.start_s;
  slider.value = String(t0);
  slider.addEventListener("input", () => show(Number(slider.value)));
  await show(t0);
}
start();
