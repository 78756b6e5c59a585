"""Watches a rodlab view page in headless Chromium (Playwright driving
Debian's /usr/bin/chromium) and prints what it saw as JSON: console and
page errors, and samples of the page's state (updates received, each
device's state, the camera's markers) every 0.2 s.

  view_probe.py URL --seconds S [--screenshot PNG] [--wait-ready]

--wait-ready waits for a replay page's first state (body[data-ready]).
URL "-" reads the URL from standard input once the browser is up, so that
a test can start the browser before the server it is to watch.
"""
import argparse
import json
import sys
import time

from playwright.sync_api import sync_playwright

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

SAMPLE_JS = """() => {
  const b = document.body;
  const devices = {};
  for (const tr of document.querySelectorAll('#devices tbody tr')) devices[tr.dataset.device] = tr.dataset.state;
  const cameras = [...document.querySelectorAll('section.camera')].map(s => ({
    name: s.dataset.camera,
    device_ms: s.dataset.deviceMs === '' ? null : Number(s.dataset.deviceMs),
    frame: s.dataset.frame === '' ? null : Number(s.dataset.frame),
    t: s.dataset.t === '' ? null : Number(s.dataset.t),
    warnings: [...s.querySelectorAll('.warning')].map(w => w.textContent),
    img: (() => { const i = s.querySelector('img'); return i ? {complete: i.complete, width: i.naturalWidth, height: i.naturalHeight} : null; })(),
    markers: [...s.querySelectorAll('table.markers tr[data-marker]')].map(tr => {
      const m = {index: Number(tr.dataset.marker)};
      for (const td of tr.querySelectorAll('td[data-k]')) m[td.dataset.k] = td.textContent === '-' ? null : Number(td.textContent);
      return m;
    }),
  }));
  const nodes = [...document.querySelectorAll('table.nodes tr[data-node]')].map(tr => {
    const n = {};
    for (const td of tr.querySelectorAll('td[data-k]')) n[td.dataset.k] = td.textContent === '-' ? null : Number(td.textContent);
    return n;
  });
  const status = document.querySelector('#strain p');
  const nodesTable = document.querySelector('table.nodes');
  const strainT = nodesTable && nodesTable.dataset.t !== '' ? Number(nodesTable.dataset.t) : null;
  return {strain_status: status ? status.textContent : null, strain_t: strainT, updates: Number(b.dataset.updates), script_errors: Number(b.dataset.errors), t: b.dataset.t === undefined ? null : Number(b.dataset.t),
          devices, cameras, nodes, plots: document.querySelectorAll('#plots svg').length, ready: b.dataset.ready === '1'};
}"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--screenshot")
    ap.add_argument("--wait-ready", action="store_true")
    a = ap.parse_args()
    out = {"console_errors": [], "page_errors": [], "samples": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: out["console_errors"].append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: out["page_errors"].append(str(e)))
        url = sys.stdin.readline().strip() if a.url == "-" else a.url
        page.goto(url)
        if a.wait_ready:
            page.wait_for_selector("body[data-ready='1']", timeout=30000)
            page.wait_for_timeout(500)
        start = time.monotonic()
        while time.monotonic() - start < a.seconds:
            s = page.evaluate(SAMPLE_JS)
            s["wall_s"] = time.monotonic() - start
            out["samples"].append(s)
            page.wait_for_timeout(200)
        if a.screenshot:
            page.screenshot(path=a.screenshot, full_page=True)
        browser.close()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
