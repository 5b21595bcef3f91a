"""The HTML report of a real run, rendered by headless Chromium: the page draws (the
screenshot is not blank and shows the verdict's colour, the committed shares, the reset
rounds), and the DOM Chromium built holds one lane per stream.

Chromium is Debian's ``chromium`` package, which ``make setup`` (ci/setup.sh) installs: when
it is missing the test fails and says so (a skip would hide a broken set-up)."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import applier
from applier.config import ErrorPolicy, RunSettings, Workload, demo_config
from applier.report.html import render_run

pytestmark = pytest.mark.integration

STREAMS = 4
WIDTH, HEIGHT = 1280, 2400
CHROMIUM_SECONDS = 90  # one start is 1-5 s here; a loaded 2-core machine is slower


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(
        "chromium is not installed: `make setup` installs it (ci/setup.sh, Debian package chromium); "
        "this test renders the HTML report in headless Chromium"
    )


def run_chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",  # its own profile: no lock shared with another Chromium
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, timeout=CHROMIUM_SECONDS, check=False)
    assert done.returncode == 0, (cmd, done.stderr.decode(errors="replace")[-2000:])
    return done


def png_pixels(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """Width, height, bytes per pixel and the rows of an 8-bit RGB or RGBA PNG: the chunks
    read, IDAT inflated with zlib, each row's filter undone (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    assert ihdr is not None
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, ihdr
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    assert len(raw) == h * (stride + 1)
    up = bytes(stride)
    rows = []
    for y in range(h):
        at = y * (stride + 1)
        f, line = raw[at], raw[at + 1 : at + 1 + stride]
        if f == 0:
            out = bytes(line)
        elif f == 2:  # Up
            out = bytes((a + b) & 255 for a, b in zip(line, up, strict=True))
        else:
            cur = list(line)
            if f == 1:  # Sub
                for i in range(bpp, stride):
                    cur[i] = (cur[i] + cur[i - bpp]) & 255
            elif f == 3:  # Average
                for i in range(stride):
                    cur[i] = (cur[i] + (((cur[i - bpp] if i >= bpp else 0) + up[i]) >> 1)) & 255
            else:  # Paeth
                for i in range(bpp):
                    cur[i] = (cur[i] + up[i]) & 255
                for i in range(bpp, stride):
                    a, b, c = cur[i - bpp], up[i], up[i - bpp]
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - c - c)
                    cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            out = bytes(cur)
        rows.append(out)
        up = out
    return w, h, bpp, rows


def colours(rows: list[bytes], bpp: int, step: int = 2) -> Counter[tuple[int, int, int]]:
    """RGB colours of every ``step``-th pixel of every ``step``-th row."""
    c: Counter[tuple[int, int, int]] = Counter()
    for r in rows[::step]:
        c.update((r[i], r[i + 1], r[i + 2]) for i in range(0, len(r), bpp * step))
    return c


def near(counts: Counter[tuple[int, int, int]], hex_colour: str, tol: int = 8) -> int:
    want = tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return sum(n for c, n in counts.items() if all(abs(x - y) <= tol for x, y in zip(c, want, strict=True)))


class Lanes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.lanes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if "lane" in (a.get("class") or "").split():
            self.lanes.append(a.get("data-stream") or "")


@pytest.fixture(scope="module")
def real_report(spark, target, tmp_path_factory) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """A short run that resets now and then: the demo's key chains (k1 -> k2 -> k3) on
    key-hash partitions with the agent model, 200 transactions in rounds of 10."""
    out = tmp_path_factory.mktemp("html-run")
    cfg = demo_config().replace(
        workload=Workload(
            kind="key-chains", transactions=200, initial_rows=200, key_update_share=0.2, seed=42
        ),
        run=RunSettings(
            subscription="html_chromium",
            streams=STREAMS,
            commit_batch_size=10,
            partition="key-hash",
            model="agent",
            lock_timeout_ms=300,
            error_policy=ErrorPolicy.parse("strict"),
        ),
    )
    result = applier.run(cfg, target, spark=spark, report=out / "r.json", html=out / "r.html")
    report: dict[str, Any] = json.loads(Path(result.files["json"]).read_text(encoding="utf-8"))
    # what the run wrote is this module's page of its report
    assert Path(result.files["html"]).read_text(encoding="utf-8") == render_run(report)
    return report


def test_chromium_draws_the_report_of_a_real_run(real_report, tmp_path):  # type: ignore[no-untyped-def]
    report = real_report
    assert report["verdict"] == "converged", report["reason"]
    # both kinds of round to draw: some reset to one stream, some committed on N
    assert report["resets"] > 0 and report["rounds_parallel"] > 0, (report["resets"], report["rounds"])
    assert report["timeline"]["segments"], "the run recorded no timeline"
    page = tmp_path / "report.html"
    page.write_text(render_run(report), encoding="utf-8")
    url = page.absolute().as_uri()

    shot = tmp_path / "report.png"
    run_chromium(tmp_path / "profile", f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", url)
    w, h, bpp, rows = png_pixels(shot.read_bytes())
    assert (w, h) == (WIDTH, HEIGHT)
    counts = colours(rows, bpp)
    total = sum(counts.values())
    white = counts[(255, 255, 255)]
    assert 0.03 < 1 - white / total < 0.9, f"{1 - white / total:.1%} of the page is not white"
    assert len(counts) > 50, f"only {len(counts)} colours"
    # the verdict badge, the committed shares, the reset rounds' hatch, the conflicts drawn
    assert near(counts, "#1a7f37") > 500
    assert near(counts, "#2da44e") > 200
    assert near(counts, "#f7c99b") > 50
    assert near(counts, "#cf222e") > 10

    dom = run_chromium(tmp_path / "profile", "--dump-dom", url).stdout.decode("utf-8")
    lanes = Lanes()
    lanes.feed(dom)
    assert lanes.lanes == [str(i) for i in range(STREAMS)]
    assert "CONVERGED" in dom and "Reset log" in dom


class Polylines(HTMLParser):
    """The points of every polyline inside the lag charts, by the chart's class."""

    def __init__(self) -> None:
        super().__init__()
        self.chart: str | None = None
        self.lines: dict[str, list[list[tuple[float, float]]]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "svg" and (a.get("class") or "") in ("lag-over-time", "lag-percentile-curve"):
            self.chart = a.get("class")
        elif tag == "polyline" and self.chart is not None:
            pts = [tuple(float(v) for v in p.split(",")) for p in (a.get("points") or "").split()]
            self.lines.setdefault(self.chart, []).append(pts)  # type: ignore[arg-type]

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.chart = None


def test_chromium_draws_a_paced_run_s_lag_over_time_beside_its_percentile_curve(  # type: ignore[no-untyped-def]
    spark, target, tmp_path
):
    from applier.config import LoadSettings

    cfg = demo_config().replace(
        workload=Workload(kind="key-chains", transactions=400, initial_rows=200, seed=7),
        run=RunSettings(subscription="html_paced", streams=STREAMS),
        load=LoadSettings(rate=200.0, thresholds=("lag_p99<2s", "resets<=0")),
    )
    result = applier.run(cfg, target, spark=spark, report=tmp_path / "r.json", html=tmp_path / "r.html")
    report: dict[str, Any] = json.loads(Path(result.files["json"]).read_text(encoding="utf-8"))
    page = Path(result.files["html"])
    assert page.read_text(encoding="utf-8") == render_run(report)
    url = page.absolute().as_uri()
    dom = run_chromium(tmp_path / "profile", "--dump-dom", url).stdout.decode("utf-8")
    lines = Polylines()
    lines.feed(dom)
    rounds = len(report["load"]["lag"]["per_round"])
    # lag over time: p50, p99 and max, a point per round, left to right
    assert len(lines.lines["lag-over-time"]) == 3
    for pts in lines.lines["lag-over-time"]:
        assert len(pts) == rounds and [x for x, _ in pts] == sorted(x for x, _ in pts)
    # the percentile curve: never falls as the percentile rises (y grows downwards in SVG)
    (curve,) = lines.lines["lag-percentile-curve"]
    assert len(curve) > 10 and all(b[1] <= a[1] for a, b in zip(curve, curve[1:], strict=False))
    assert "lag_p99&lt;2s" in dom or "lag_p99<2s" in dom
    held = "held" if report["resets"] == 0 else "BROKEN"
    assert held in dom

    shot = tmp_path / "paced.png"
    run_chromium(tmp_path / "profile", f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", url)
    w, h, bpp, rows = png_pixels(shot.read_bytes())
    counts = colours(rows, bpp)
    # the curve's blue and the lag lines' green and red reach the screen
    assert near(counts, "#0969da") > 40
    assert near(counts, "#2da44e") > 40
    assert near(counts, "#cf222e") > 20
