"""The drill's report as one self-contained HTML page (``hotstandby drill --report DIR``).

For each part of the drill (Kafka, Pulsar, Spark): records consumed per second on each
cluster, the flips (with their latency to the first record on the new cluster), the brokers
and drivers killed and restarted, marked on the same time axis; and the lost, duplicated,
re-sent, filtered and redelivered counts. The data is embedded as JSON and a short script
draws it as SVG when the page is opened: nothing is fetched from the network, the file can be
mailed or archived as it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hotstandby.drill.report import DrillReport

__all__ = ["PAGE_NAME", "page_data", "write_report"]

PAGE_NAME = "drill.html"
_COUNTS = ("produced", "consumed", "lost", "duplicated", "resent", "replicated", "filtered", "redelivered")


def _parts(reports: list[DrillReport]) -> list[DrillReport]:
    return [part for report in reports for part in (report.phases or [report])]


def page_data(reports: list[DrillReport]) -> list[dict[str, Any]]:
    """What the page draws, one entry per part of the drill."""
    out = []
    for part in _parts(reports):
        clusters: dict[str, list[list[int]]] = {}
        for (second, cluster), count in sorted(part.timeline.per_second.items()):
            clusters.setdefault(cluster, []).append([second, count])
        out.append({
            "title": f"{part.system} drill" + (f" ({part.phase})" if part.phase else ""),
            "ok": part.ok,
            "seconds": part.seconds,
            "counts": {name: getattr(part, name) for name in _COUNTS},
            "switches": [s.to_dict() for s in part.switches],
            "events": [{"at_s": e.at, "kind": e.kind, "what": e.what} for e in part.timeline.events],
            "per_second": clusters,
        })  # fmt: skip
    return out


def write_report(reports: list[DrillReport], directory: str | Path) -> Path:
    """Write the page into ``directory`` (made if missing); its path."""
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    path = target / PAGE_NAME
    data = json.dumps(page_data(reports)).replace("</", "<\\/")  # never ends the script element
    path.write_text(_PAGE.replace("__DATA__", data), encoding="utf-8")
    return path


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>hotstandby drill</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
h2 { margin-top: 2em; } .pass { color: #1a7f37; } .fail { color: #cf222e; }
table.counts td { padding: 0 1.5em 0 0; } table.counts td.n { text-align: right; font-variant-numeric: tabular-nums; }
svg { border: 1px solid #ddd; background: #fff; } .axis { font-size: 11px; fill: #555; }
.legend span { display: inline-block; margin-right: 1.5em; } .swatch { display: inline-block; width: 12px; height: 12px;
  margin-right: 4px; vertical-align: middle; }
</style></head>
<body>
<h1>hotstandby drill</h1>
<p>Records consumed per second on each cluster; route flips (blue lines, with the time to the first
record on the new cluster), kills (red) and restarts (green) on the same axis.</p>
<div id="parts"></div>
<script id="drill-data" type="application/json">__DATA__</script>
<script>
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e"];
  const W = 900, H = 260, L = 50, R = 20, T = 20, B = 40;
  const parts = JSON.parse(document.getElementById("drill-data").textContent);
  const root = document.getElementById("parts");
  function el(name, attrs, parent, text) {
    const node = document.createElementNS(NS, name);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    parent.appendChild(node);
    return node;
  }
  function html(tag, parent, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (cls) node.className = cls;
    parent.appendChild(node);
    return node;
  }
  parts.forEach(function (part, index) {
    const section = html("section", root);
    section.id = "part-" + index;
    html("h2", section, (part.ok ? "PASS " : "FAIL ") + part.title, part.ok ? "pass" : "fail");
    const table = html("table", section, undefined, "counts");
    Object.keys(part.counts).forEach(function (name) {
      const row = html("tr", table);
      html("td", row, name);
      html("td", row, String(part.counts[name]), "n").dataset.count = name;
    });
    const clusters = Object.keys(part.per_second).sort();
    let top = 1, end = Math.max(1, Math.ceil(part.seconds));
    clusters.forEach(function (c) { part.per_second[c].forEach(function (p) {
      top = Math.max(top, p[1]); end = Math.max(end, p[0] + 1); }); });
    const x = function (s) { return L + (W - L - R) * s / end; };
    const y = function (n) { return H - B - (H - T - B) * n / top; };
    const svg = el("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H, "class": "chart"}, section);
    el("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#888"}, svg);
    el("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#888"}, svg);
    el("text", {x: L - 6, y: T + 4, "text-anchor": "end", "class": "axis"}, svg, String(top));
    el("text", {x: L - 6, y: H - B, "text-anchor": "end", "class": "axis"}, svg, "0");
    el("text", {x: W - R, y: H - B + 28, "text-anchor": "end", "class": "axis"}, svg, end + " s");
    el("text", {x: 12, y: T + (H - T - B) / 2, "class": "axis", transform: "rotate(-90 12 " +
       (T + (H - T - B) / 2) + ")", "text-anchor": "middle"}, svg, "records/s");
    const width = Math.max(1, (W - L - R) / end / Math.max(1, clusters.length));
    clusters.forEach(function (c, i) {
      part.per_second[c].forEach(function (p) {
        el("rect", {x: x(p[0]) + i * width, y: y(p[1]), width: width, height: H - B - y(p[1]),
                    fill: PALETTE[i % PALETTE.length], "class": "bar", "data-cluster": c}, svg);
      });
    });
    part.switches.forEach(function (s) {
      if (s.at_s === null) return;
      el("line", {x1: x(s.at_s), y1: T, x2: x(s.at_s), y2: H - B, stroke: "#0969da", "stroke-width": 2,
                  "class": "flip"}, svg);
      const latency = s.latency_ms === null ? "no record" : Math.round(s.latency_ms) + " ms";
      el("text", {x: x(s.at_s) + 3, y: T + 10, "class": "axis flip-label"}, svg,
         s.from + " \\u2192 " + s.to + ": " + latency);
    });
    part.events.forEach(function (e) {
      el("line", {x1: x(e.at_s), y1: T, x2: x(e.at_s), y2: H - B, stroke: e.kind === "kill" ? "#cf222e" : "#1a7f37",
                  "stroke-dasharray": "4 3", "stroke-width": 2, "class": e.kind}, svg);
      el("text", {x: x(e.at_s) + 3, y: H - B + 14, "class": "axis"}, svg, e.kind + " " + e.what);
    });
    const legend = html("p", section, undefined, "legend");
    clusters.forEach(function (c, i) {
      const item = html("span", legend);
      html("span", item, undefined, "swatch").style.background = PALETTE[i % PALETTE.length];
      item.appendChild(document.createTextNode(c));
    });
  });
  document.body.dataset.drawn = String(parts.length);
})();
</script>
</body></html>
"""
