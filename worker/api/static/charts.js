// A line chart in plain SVG: a few series over time, an axis with the largest value, a legend.
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

window.drawLineChart = drawLineChart;
