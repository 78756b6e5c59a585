"""Screenshots of report pages in a real browser (Playwright driving
Debian's /usr/bin/chromium, as the tests do): each page from its first
figure down, 1100 x 1500 CSS pixels (the whole page when it is shorter).
Prints, per page, how many of its images and inline SVG figures the
browser drew (an image that did not load counts as not drawn).

  screenshots.py PAGE.html SHOT.png [PAGE.html SHOT.png ...]

docs/screenshots holds the identify and validate reports before and after
#81 (scripts/screenshots.sh makes them).
"""
import json
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

DRAWN_JS = """() => ({
  images: document.images.length,
  drawn: [...document.images].filter(i => i.complete && i.naturalWidth > 0).length,
  svgs: document.querySelectorAll('figure svg').length,
})"""


def main(args: list) -> int:
    if len(args) < 2 or len(args) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    pairs = list(zip(args[::2], args[1::2]))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        page = browser.new_page(viewport={"width": 1100, "height": 1500})
        for html, shot in pairs:
            page.goto(Path(html).resolve().as_uri())
            page.wait_for_load_state("load")
            # From just above the first figure (the page's top without one).
            top = page.evaluate("() => { const f = document.querySelector('figure, img'); return f ? f.getBoundingClientRect().top + window.scrollY - 40 : 0; }")
            height = page.evaluate("() => document.documentElement.scrollHeight")
            top = max(0.0, min(top, height - 1500.0))
            page.screenshot(path=shot, full_page=True, clip={"x": 0, "y": top, "width": 1100, "height": 1500})
            print(json.dumps({"page": html, "shot": shot, **page.evaluate(DRAWN_JS)}))
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
