// Line charts in plain SVG: a few series over time, an axis with the largest value, a legend;
// and a curve over capacities (the miss-ratio curve's hit ratios).
// Written here rather than vendored: the console needs lines and nothing else.
"use strict";

const SVG = "http://www.w3.org/2000/svg";

function svgNode(name, attributes) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  return node;
}

// series: [{name, color, points: [[epochSeconds, value], ...]}]; format(value) -> text.
function drawLineChart(container, series, format) {
  const width = 720, height = 170, left = 64, bottom = 20, top = 8;
  const all = series.flatMap((s) => s.points);
  container.replaceChildren();
  const svg = svgNode("svg", { viewBox: `0 0 ${width} ${height}`, role: "img" });
  container.append(svg);
  if (!series.some((s) => s.points.length >= 2)) {
    const note = svgNode("text", { x: left, y: height / 2, fill: "#637083" });
    note.textContent = "collecting samples (one every few seconds)";
    svg.append(note);
  } else {
    const t0 = Math.min(...all.map((p) => p[0])), t1 = Math.max(...all.map((p) => p[0]));
    const vmax = Math.max(...all.map((p) => p[1]), 1e-9);
    const x = (t) => left + ((t - t0) / Math.max(t1 - t0, 1)) * (width - left - 8);
    const y = (v) => top + (1 - v / vmax) * (height - top - bottom);
    svg.append(svgNode("line", { x1: left, y1: y(0), x2: width - 8, y2: y(0), stroke: "#d9dee5" }));
    const label = svgNode("text", { x: 4, y: top + 10, "font-size": 11, fill: "#637083" });
    label.textContent = format(vmax);
    svg.append(label);
    const span = svgNode("text", { x: left, y: height - 4, "font-size": 11, fill: "#637083" });
    const seconds = Math.round(t1 - t0);
    span.textContent = seconds < 120 ? `last ${seconds} s` : `last ${Math.round(seconds / 60)} min`;
    svg.append(span);
    for (const s of series) {
      const d = s.points.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`);
      svg.append(svgNode("path", { d: d.join(""), fill: "none", stroke: s.color, "stroke-width": 2 }));
    }
  }
  const legend = document.createElement("div");
  legend.className = "legend";
  for (const s of series) {
    const item = document.createElement("span");
    item.style.color = s.color;
    const last = s.points.length ? format(s.points[s.points.length - 1][1]) : "-";
    item.textContent = `${s.name}: ${last}`;
    legend.append(item);
  }
  container.append(legend);
}

// A curve of y in [0, 1] over x (capacities) from 0 to xmax: points [[x, y], ...] joined by
// straight lines; marks [{x, label, color}] drawn as vertical lines (the capacity now, the
// capacity a target needs) where they fall within the axis. formatX(x) -> text.
function drawCurveChart(container, points, marks, formatX, xmax) {
  const width = 720, height = 190, left = 44, bottom = 20, top = 8, right = 8;
  container.replaceChildren();
  const svg = svgNode("svg", { viewBox: `0 0 ${width} ${height}`, role: "img" });
  container.append(svg);
  if (points.length < 2) {
    const note = svgNode("text", { x: left, y: height / 2, fill: "#637083" });
    note.textContent = "no page read yet";
    svg.append(note);
    return;
  }
  const x = (v) => left + (v / xmax) * (width - left - right);
  const y = (v) => top + (1 - v) * (height - top - bottom);
  for (const level of [0, 0.5, 1]) {
    svg.append(svgNode("line", { x1: left, y1: y(level), x2: width - right, y2: y(level), stroke: "#d9dee5" }));
    const label = svgNode("text", { x: 4, y: y(level) + 4, "font-size": 11, fill: "#637083" });
    label.textContent = `${level * 100}%`;
    svg.append(label);
  }
  const end = svgNode("text", { x: width - right, y: height - 4, "font-size": 11, fill: "#637083", "text-anchor": "end" });
  end.textContent = formatX(xmax);
  svg.append(end);
  for (const m of marks.filter((mark) => mark.x <= xmax)) {
    svg.append(svgNode("line", { x1: x(m.x), y1: top, x2: x(m.x), y2: y(0), stroke: m.color, "stroke-dasharray": "4 3" }));
    const label = svgNode("text", { x: x(m.x) + 4, y: top + 12, "font-size": 11, fill: m.color });
    label.textContent = m.label;
    svg.append(label);
  }
  const d = points.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`);
  svg.append(svgNode("path", { d: d.join(""), fill: "none", stroke: "#2b5da8", "stroke-width": 2, class: "curve" }));
}

window.drawLineChart = drawLineChart;
window.drawCurveChart = drawCurveChart;
