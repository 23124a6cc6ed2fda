"""Screenshots of every page type of a built site, at 1440x900 and 390x844, light and dark.

For looking at what readers see (the house rule for any page change), not a visual diff. The
site is served on 127.0.0.1 and driven with Debian's Chromium through Playwright. Usage:

    PYTHONPATH=. python scripts/screenshots.py SITE_DIR OUT_DIR [--pages reports/ reports/x/ ...]

Without --pages, every page type is found in SITE_DIR: home, reports list, each experiment's
overview, one candidate write-up (a failed one when there is one), rollback, provenance, and one
text-only documentation page.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.render.conftest import CHROMIUM, CHROMIUM_ARGS, Server  # noqa: E402

SIZES = {"wide": (1440, 900), "phone": (390, 844)}


def page_types(site: Path) -> dict[str, str]:
    """Name -> URL path of one page of each type found in the built site."""
    out = {"home": "", "reports": "reports/"}
    reports = site / "reports"
    for exp in sorted(p for p in reports.iterdir() if (p / "index.html").is_file() and p.is_dir()):
        out[f"experiment-{exp.name}"] = f"reports/{exp.name}/"
        cands = sorted(p.name for p in exp.iterdir() if (p / "index.html").is_file())
        for fixed in ("rollback", "provenance"):
            if fixed in cands:
                out[f"{fixed}-{exp.name}"] = f"reports/{exp.name}/{fixed}/"
        for c in cands:
            if c not in ("rollback", "provenance"):
                out[f"candidate-{exp.name}-{c}"] = f"reports/{exp.name}/{c}/"
    if (site / "site" / "index.html").is_file():
        out["doc-site"] = "site/"
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("site", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--pages", nargs="*", help="URL paths to shoot (default: one of each page type)")
    ap.add_argument("--full", action="store_true", help="full-page screenshots (default: the first screen)")
    ap.add_argument("--only", choices=sorted(SIZES), help="one viewport size only")
    ap.add_argument("--scheme", choices=("light", "dark"), help="one colour scheme only")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    pages = {p.strip("/").replace("/", "-") or "home": p for p in args.pages} if args.pages else page_types(args.site)
    args.out.mkdir(parents=True, exist_ok=True)
    schemes: list[Literal["light", "dark"]] = [args.scheme] if args.scheme else ["light", "dark"]
    sizes = {args.only: SIZES[args.only]} if args.only else SIZES
    with Server(args.site) as srv, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for scheme in schemes:
            for size, (w, h) in sizes.items():
                ctx = browser.new_context(viewport={"width": w, "height": h}, color_scheme=scheme)
                # Material keeps the reader's palette choice in localStorage; pick the scheme's entry.
                index, name = (0, "default") if scheme == "light" else (1, "slate")
                ctx.add_init_script(
                    f"localStorage.setItem('/.__palette', JSON.stringify({{index: {index}, color: {{media: '',"
                    f" scheme: '{name}', primary: 'indigo', accent: 'indigo'}}}}))"
                )
                page = ctx.new_page()
                for name, path in pages.items():
                    page.goto(f"{srv.url}/{path}")
                    page.wait_for_timeout(200)
                    out = args.out / f"{name}-{size}-{scheme}.png"
                    page.screenshot(path=str(out), full_page=args.full)
                    print(out)
                ctx.close()
        browser.close()


if __name__ == "__main__":
    main()
