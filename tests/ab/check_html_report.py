#!/usr/bin/env python3
"""The A/B HTML report, rendered by a real browser.

Runs `tessera ab` (bf16 vs fp8 cache on the tiny-a parity checkpoint), checks that the JSON
report parses and is consistent, then opens the HTML report in headless Chromium twice:
  --dump-dom:   the rendered DOM has the expected SVG elements: kHtmlPlotCount plots, each with
                its frame; one <polyline class="series"> per curve with one point per position
                of that curve in the JSON; one <rect class="bar"> per arm and speed panel;
  --screenshot: every plot is visible and drawn: its frame (a unique colour, crisp edges) is
                found in the PNG, and inside it there are pixels of each of its series' colours.
The PNG is decoded here with zlib (no imaging library). Standard library only.

usage: check_html_report.py TESSERA DATA_DIR WORK_DIR [PLUGIN_DIR]
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

PLOT_COUNT = 5  # ab/report_html.hpp kHtmlPlotCount
WINDOW = (1040, 1400)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


# ---------------------------------------------------------------- PNG (8-bit RGB/RGBA, no interlace)
def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace != 0:
        fail(f"unsupported PNG: depth {depth}, colour type {color}, interlace {interlace}")
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif f == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        elif f != 0:
            fail(f"bad PNG filter {f}")
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def hex_rgb(text):
    text = text.lstrip("#")
    return tuple(int(text[i:i + 2], 16) for i in (0, 2, 4))


def find_frame(png, rgb):
    """Bounding box of the pixels exactly of colour rgb, or None."""
    width, height, bpp, rows = png
    needle = bytes(rgb)
    xs, ys = [], []
    for y, row in enumerate(rows):
        # Compare pixel by pixel only on rows where the colour occurs at a pixel boundary.
        start = row.find(needle)
        while start != -1:
            if start % bpp == 0:
                xs.append(start // bpp)
                ys.append(y)
            start = row.find(needle, start + 1)
    if not xs:
        return None
    return min(xs), min(ys), max(xs), max(ys)


def count_colour(png, box, rgb, tolerance=24):
    width, height, bpp, rows = png
    x0, y0, x1, y1 = box
    n = 0
    for y in range(y0 + 1, y1):
        row = rows[y]
        for x in range(x0 + 1, x1):
            i = x * bpp
            if (abs(row[i] - rgb[0]) <= tolerance and abs(row[i + 1] - rgb[1]) <= tolerance
                    and abs(row[i + 2] - rgb[2]) <= tolerance):
                n += 1
    return n


# ---------------------------------------------------------------- browser
def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    fail("no chromium on PATH: tools/install-deps.sh installs Debian's `chromium`")


def run_browser(args, html, profile):
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-color-profile=srgb", "--force-device-scale-factor=1", "--no-first-run",
           f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}"] + args + [
               "file://" + os.path.abspath(html)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def main():
    if len(sys.argv) < 4:
        fail(__doc__)
    tessera, data, work = sys.argv[1:4]
    plugin_dir = sys.argv[4] if len(sys.argv) > 4 else None
    out = os.path.join(work, "ab_html_report")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [tessera, "ab", os.path.join(data, "tiny-a-bf16.toml"), os.path.join(data, "tiny-a-fp8.toml"),
           "--prompts", os.path.join(data, "tiny-a-prompts.jsonl"), "--max-tokens", "16",
           "--seeds", "2", "--out", out]
    if plugin_dir:
        cmd += ["--plugin-dir", plugin_dir]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(done.stdout)
    if done.returncode != 0:
        fail(f"tessera ab exited {done.returncode}: {done.stderr[-2000:]}")

    report = json.load(open(os.path.join(out, "ab_report.json")))
    if report["schema"] != "tessera.ab/1":
        fail("unexpected schema " + str(report["schema"]))
    tf, fr, curves = report["teacher_forced"], report["free_running"], report["curves"]
    if not (tf["kl"]["mean"] > 0 and tf["positions"] > 0):
        fail("fp8 vs bf16 must give a non-zero KL")
    if fr["pairs"] != 6 or len(report["runs"]) != 6:
        fail("expected 3 prompts x 2 seeds = 6 pairs")
    positions = sum(len(s["kl"]) for s in report["sequences"])
    if positions != tf["positions"]:
        fail(f"per-sequence positions {positions} != summary {tf['positions']}")
    print(f"json: KL mean {tf['kl']['mean']:.4e}, top-1 {tf['top1_agreement']:.4f}, "
          f"{fr['identical']}/{fr['pairs']} identical")

    html = os.path.join(out, "ab_report.html")
    with tempfile.TemporaryDirectory() as profile:
        dom = run_browser(["--dump-dom"], html, profile)
    if dom.returncode != 0 or "<svg" not in dom.stdout:
        fail(f"chromium --dump-dom failed ({dom.returncode}): {dom.stderr[-2000:]}")
    svgs = re.findall(r'<svg class="plot"[^>]*id="([^"]+)".*?</svg>', dom.stdout, re.S)
    blocks = re.findall(r'(<svg class="plot".*?</svg>)', dom.stdout, re.S)
    if len(blocks) != PLOT_COUNT:
        fail(f"{len(blocks)} plots in the rendered DOM, expected {PLOT_COUNT}")
    expected_points = {
        "plot-kl": [len(curves["kl_max_by_position"]), len(curves["kl_mean_by_position"])],
        "plot-agreement": [len(curves["top1_agreement_by_position"])],
        "plot-free-running": [len(curves["free_running_agreement_by_output_index"])],
        "plot-coupling": [len(curves["at_risk_by_output_index"])] * 2,
        "plot-speed": [],
    }
    plots = []
    for plot_id, block in zip(svgs, blocks):
        frames = re.findall(r'<rect class="frame" data-frame-color="(#[0-9a-f]{6})"', block)
        lines = re.findall(r'<polyline class="series"[^>]*stroke="(#[0-9a-f]{6})"[^>]*points="([^"]*)"',
                           block)
        bars = re.findall(r'<rect class="bar"[^>]*fill="(#[0-9a-f]{6})"', block)
        if len(frames) != 1:
            fail(f"{plot_id}: {len(frames)} frames")
        points = [p.count(",") for _, p in lines]
        if points != expected_points[plot_id]:
            fail(f"{plot_id}: polylines with {points} points, expected {expected_points[plot_id]}")
        if plot_id == "plot-speed" and len(bars) != 4:
            fail(f"plot-speed: {len(bars)} bars, expected 2 arms x 2 panels")
        colours = sorted({c for c, _ in lines} | set(bars))
        plots.append((plot_id, frames[0], colours))
        print(f"dom: {plot_id}: {len(lines)} polylines {points} points, {len(bars)} bars")

    shot = os.path.join(out, "screenshot.png")
    with tempfile.TemporaryDirectory() as profile:
        done = run_browser([f"--screenshot={shot}"], html, profile)
    if done.returncode != 0 or not os.path.exists(shot):
        fail(f"chromium --screenshot failed ({done.returncode}): {done.stderr[-2000:]}")
    png = read_png(shot)
    print(f"screenshot: {png[0]}x{png[1]}, {png[2]} bytes per pixel: {shot}")
    for plot_id, frame, colours in plots:
        box = find_frame(png, hex_rgb(frame))
        if box is None:
            fail(f"{plot_id}: frame colour {frame} not in the screenshot (plot not rendered or "
                 "outside the window)")
        x0, y0, x1, y1 = box
        if x1 - x0 < 100 or y1 - y0 < 100:
            fail(f"{plot_id}: frame only {x1 - x0}x{y1 - y0} px")
        for colour in colours:
            n = count_colour(png, box, hex_rgb(colour))
            print(f"screenshot: {plot_id} frame {box}: {n} px of {colour}")
            if n < 40:
                fail(f"{plot_id}: only {n} pixels of series colour {colour} inside the frame")
    print("PASS")


if __name__ == "__main__":
    main()
