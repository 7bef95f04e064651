#!/usr/bin/env python3
"""Check a rocattach-mpi timeline against its report (test_messages.sh).

usage: svg_check.py TIMELINE.svg REPORT.json TARGETS

- The scale comes from the axis' tick labels, not from the drawing code.
- Each attached target's bar in each window is the tools' window of the
  report (windows[].nodes[].targets[].window.duration_ns), within 1.5 px:
  class "tools" where it is measured, "tools bound" where it is ROCm's lower
  bound. Bars start at the hand-over (attach.tool_ns).
- Each such target has its armed calls drawn as thin lines.
- No text sits on a window line (its box is estimated as the code does:
  6.6 px a character at 11 px, 6 px at 10 px).
Prints what is wrong and exits 1; exits 0 when all holds.
"""
import json
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print("svg_check: " + msg)
    sys.exit(1)


def scale(root):
    """px per ms, and the x of 0 ms (window 1's start), from the tick labels."""
    ticks, unit = [], 1.0
    for t in root.iter(NS + "text"):
        cls = t.get("class", "")
        text = "".join(t.itertext())
        if cls == "tick" and "since window 1 start" in text:
            unit = 1000.0 if text.startswith("s ") else 1.0
        elif "tick" in cls.split() and "halo" in cls.split():
            ticks.append((float(t.get("x")), float(text) * unit))
    if len(ticks) < 2:
        fail("fewer than 2 tick labels")
    (x1, v1), (x2, v2) = ticks[0], ticks[-1]
    px_per_ms = (x2 - x1) / (v2 - v1)
    return px_per_ms, x1 - v1 * px_per_ms


def text_boxes(root):
    for t in root.iter(NS + "text"):
        if t.get("x") is None:
            continue
        text = "".join(t.itertext())
        small = "tick" in t.get("class", "").split()
        w = len(text) * (6.0 if small else 6.6)
        x, y = float(t.get("x")), float(t.get("y"))
        anchor = t.get("text-anchor", "start")
        x0 = x - w / 2 if anchor == "middle" else x - w if anchor == "end" else x
        yield text, x0, x0 + w, y - 11, y + 3


def main():
    svg, report, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    root = ET.parse(svg).getroot()
    rep = json.load(open(report))
    px_per_ms, x0 = scale(root)
    t0 = rep["windows"][0]["start_ns"]
    bars = {}
    for r in root.iter(NS + "rect"):
        if r.get("data-pid"):
            bars[(int(r.get("data-window")), int(r.get("data-pid")))] = r
    armed = {}
    for ln in root.iter(NS + "line"):
        if ln.get("class") == "armed":
            armed[ln.get("y1")] = armed.get(ln.get("y1"), 0) + 1
    checked = 0
    for w in rep["windows"]:
        for node in w["nodes"]:
            for t in node["targets"]:
                win = t.get("window")
                if not win:
                    continue
                bar = bars.get((w["index"], t["pid"]))
                if bar is None:
                    continue  # an earlier window's record, drawn there
                want_cls = "tools" if win["kind"] == "measured" else "tools bound"
                if bar.get("class") != want_cls:
                    fail("pid %d window %d: bar class %r, the report says %s"
                         % (t["pid"], w["index"], bar.get("class"), win["kind"]))
                want_w = win["duration_ns"] / 1e6 * px_per_ms
                got_w = float(bar.get("width"))
                if abs(got_w - max(want_w, 6)) > 1.5:
                    fail("pid %d window %d: bar %.1f px wide, the tools' window %.3f ms is %.1f px"
                         % (t["pid"], w["index"], got_w, win["duration_ns"] / 1e6, want_w))
                want_x = x0 + (t["attach"]["tool_ns"] - t0) / 1e6 * px_per_ms
                if abs(float(bar.get("x")) - want_x) > 1.5:
                    fail("pid %d window %d: bar starts at %.1f px, the hand-over is at %.1f px"
                         % (t["pid"], w["index"], float(bar.get("x")), want_x))
                lane = str(int(float(bar.get("y"))) + 5)
                if armed.get(lane, 0) < 1:
                    fail("pid %d: no armed call drawn thin on its lane" % t["pid"])
                checked += 1
    if checked < n:
        fail("%d bars checked, %d expected" % (checked, n))
    for ln in root.iter(NS + "line"):
        if ln.get("class") != "wline":
            continue
        x, y1, y2 = float(ln.get("x1")), float(ln.get("y1")), float(ln.get("y2"))
        for text, a, b, top, bottom in text_boxes(root):
            if a < x < b and top < y2 and y1 < bottom:
                fail("the text %r (x %.1f..%.1f, y %.1f..%.1f) sits on a window line at x %.1f"
                     % (text, a, b, top, bottom, x))
    print("svg_check: %d bars match the report, no label on a window line" % checked)


main()
