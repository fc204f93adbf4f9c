// Charts as inline SVG: a line chart, a grouped bar chart (and histograms,
// which are bar charts over bucket labels) and a small relation graph.
// Every chart is a <figure> whose data is also a <table> (its text
// alternative, in a <details> below it), and whose points and bars are
// focusable, each with a <title> naming its value, so a keyboard and a
// screen reader reach every number the picture shows. Points and bars
// carry data-series, data-x and data-y.

const SVG = "http://www.w3.org/2000/svg";
const W = 640, H = 220, PAD = { l: 48, r: 28, t: 12, b: 40 };

export const palette = {
  episodic: "#6b7fd7", working: "#d99a3b", semantic: "#3a9d78", competence: "#c2508a", plan_graph: "#5aa5c8",
};
const fallback = ["#3a6fb0", "#c4573a", "#4b9a5b", "#8a5ac2", "#b58a2a", "#2a9aa5", "#a53a6f", "#6a6a6a"];

let uid = 0;

function el(name, attrs = {}, text) {
  const n = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  if (text !== undefined) n.textContent = text;
  return n;
}

function h(name, attrs = {}, ...children) {
  const n = document.createElement(name);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    n.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return n;
}

export function color(name, i) {
  return palette[name] || fallback[i % fallback.length];
}

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p * 1.000001) return m * p;
  return 10 * p;
}

export function fmt(v, format) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (format === "percent") return (v * 100).toFixed(1) + "%";
  if (format === "fixed" || format === "rate") return v.toFixed(2);
  return Number.isInteger(v) ? String(v) : v.toFixed(3);
}

// scale is the y axis of values: its top and its tick step. Counts (every
// value a whole number) tick at whole numbers: a chart of 3 records has
// ticks 0, 1, 2, 3, never 0.75.
function scale(series, format) {
  if (format === "percent" || format === "rate") return { max: 1, step: 0.25 };
  const values = series.flatMap((s) => s.values.filter((v) => v != null));
  const top = Math.max(0, ...values);
  if (!values.every(Number.isInteger)) { const max = niceMax(top); return { max, step: max / 4 }; }
  const step = Math.max(1, niceMax(top / 4));
  return { max: Math.max(step, Math.ceil(top / step) * step), step };
}

// frame draws the axes and the y grid of a chart whose y runs from 0 to
// max, a line every step, and returns the svg and its y scale.
function frame(id, title, { max, step }, format) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "group", "aria-label": title, class: "plot" });
  const y = (v) => PAD.t + (H - PAD.t - PAD.b) * (1 - v / max);
  for (let i = 0; i * step <= max * 1.000001; i++) {
    const v = i * step;
    svg.append(el("line", { x1: PAD.l, x2: W - PAD.r, y1: y(v), y2: y(v), class: "grid" }));
    svg.append(el("text", { x: PAD.l - 6, y: y(v) + 4, class: "tick", "data-tick": "y", "text-anchor": "end" }, fmt(v, format === "percent" || format === "rate" ? format : undefined)));
  }
  return { svg, y };
}

function xLabels(svg, labels, x) {
  const step = Math.max(1, Math.ceil(labels.length / 8));
  labels.forEach((l, i) => {
    if (i % step) return;
    svg.append(el("text", { x: x(i), y: H - PAD.b + 16, class: "tick", "text-anchor": "middle" }, l));
  });
}

function legend(series) {
  return h("ul", { class: "legend" }, series.map((s, i) =>
    h("li", {}, swatch(color(s.name, i)), s.label || s.name)));
}

// swatch is a legend's colour key (an SVG square: the page's policy allows
// no inline styles).
function swatch(c) {
  const s = el("svg", { width: 10, height: 10, class: "swatch", "aria-hidden": "true" });
  s.append(el("rect", { width: 10, height: 10, rx: 2, fill: c }));
  return s;
}

// table is a chart's text alternative: one row per x, one column per
// series.
function table(id, xTitle, labels, series, format) {
  const t = h("table", { class: "data", id: `${id}-data` },
    h("caption", {}, "Data"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, xTitle), series.map((s) => h("th", { scope: "col" }, s.label || s.name)))),
    h("tbody", {}, labels.map((l, i) => h("tr", { "data-x": l }, h("th", { scope: "row" }, l),
      series.map((s) => h("td", { "data-series": s.name, "data-y": s.values[i] ?? "" }, fmt(s.values[i], format)))))));
  return h("details", { class: "alt" }, h("summary", {}, "Data table"), t);
}

function figure(id, title, note) {
  const cap = h("figcaption", { id: `${id}-title` }, title);
  const f = h("figure", { class: "chart", "data-chart": id, "aria-labelledby": `${id}-title` }, cap);
  if (note) f.append(h("p", { class: "note" }, note));
  return f;
}

function empty(series) {
  return !series.some((s) => s.values.some((v) => v !== null && v !== undefined && v !== 0));
}

// lineChart: series [{name, label, values}] over labels; null values are
// gaps. format: "percent" (values in [0, 1]), "rate" (a success rate in
// [0, 1], as 0.80) or undefined.
export function lineChart({ id = `chart-${++uid}`, title, labels, series, format, xTitle = "Time", note }) {
  const f = figure(id, title, note);
  if (empty(series)) {
    f.append(h("p", { class: "empty" }, "No data in this range."));
    f.append(table(id, xTitle, labels, series, format));
    return f;
  }
  const sc = scale(series, format);
  const { svg, y } = frame(id, title, sc, format);
  const x = (i) => PAD.l + (labels.length < 2 ? (W - PAD.l - PAD.r) / 2 : ((W - PAD.l - PAD.r) * i) / (labels.length - 1));
  series.forEach((s, si) => {
    const c = color(s.name, si);
    let d = "";
    s.values.forEach((v, i) => {
      if (v === null || v === undefined) return;
      const prev = i > 0 ? s.values[i - 1] : null;
      d += `${prev === null || prev === undefined || d === "" ? "M" : "L"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    });
    svg.append(el("path", { d, class: "line", stroke: c }));
    s.values.forEach((v, i) => {
      if (v === null || v === undefined) return;
      const p = el("circle", { cx: x(i), cy: y(v), r: 3.5, fill: c, tabindex: 0, class: "point",
        "data-series": s.name, "data-x": labels[i], "data-y": v, "aria-label": `${s.label || s.name}, ${labels[i]}: ${fmt(v, format)}` });
      p.append(el("title", {}, `${s.label || s.name}, ${labels[i]}: ${fmt(v, format)}`));
      svg.append(p);
    });
  });
  xLabels(svg, labels, x);
  f.append(svg, legend(series), table(id, xTitle, labels, series, format));
  return f;
}

// barChart: grouped bars, one group per label, one bar per series.
export function barChart({ id = `chart-${++uid}`, title, labels, series, format, xTitle = "", note }) {
  const f = figure(id, title, note);
  if (empty(series)) {
    f.append(h("p", { class: "empty" }, "No data in this range."));
    f.append(table(id, xTitle, labels, series, format));
    return f;
  }
  const sc = scale(series, format);
  const { svg, y } = frame(id, title, sc, format);
  const band = (W - PAD.l - PAD.r) / Math.max(1, labels.length);
  const bw = Math.max(1, (band * 0.8) / series.length);
  const x = (i) => PAD.l + band * i + band / 2;
  series.forEach((s, si) => {
    const c = color(s.name, si);
    s.values.forEach((v, i) => {
      if (v === null || v === undefined) return;
      const top = y(v);
      const r = el("rect", { x: PAD.l + band * i + band * 0.1 + bw * si, y: top, width: bw, height: Math.max(0, y(0) - top),
        fill: c, tabindex: 0, class: "bar", "data-series": s.name, "data-x": labels[i], "data-y": v,
        "aria-label": `${s.label || s.name}, ${labels[i]}: ${fmt(v, format)}` });
      r.append(el("title", {}, `${s.label || s.name}, ${labels[i]}: ${fmt(v, format)}`));
      svg.append(r);
    });
  });
  xLabels(svg, labels, x);
  f.append(svg, legend(series), table(id, xTitle, labels, series, format));
  return f;
}

// histogramLabels names salience buckets from their upper bounds.
export function histogramLabels(bounds) {
  return [...bounds.map((b, i) => `${i ? bounds[i - 1] : 0}–${b}`), `>${bounds[bounds.length - 1]}`];
}

// relationGraph draws a record (centre) and the records related to it on a
// circle, an arrow from source to target labelled with the predicate. Each
// node is a link to its record's page.
export function relationGraph({ id = `graph-${++uid}`, center, edges, label = (x) => x.slice(-8), href }) {
  const f = figure(id, "Relations");
  if (!edges.length) {
    f.append(h("p", { class: "empty" }, "No relations."));
    return f;
  }
  const others = [...new Set(edges.map((e) => (e.source_id === center ? e.target_id : e.source_id)))];
  const size = 360, cx = size / 2, cy = size / 2, R = 130;
  const svg = el("svg", { viewBox: `0 0 ${size} ${size}`, role: "group", "aria-label": "Relations", class: "graph" });
  const defs = el("defs");
  const marker = el("marker", { id: `${id}-arrow`, viewBox: "0 0 10 10", refX: 28, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" });
  marker.append(el("path", { d: "M0,0L10,5L0,10z", class: "arrow" }));
  defs.append(marker);
  svg.append(defs);
  const pos = { [center]: [cx, cy] };
  others.forEach((o, i) => {
    const a = (2 * Math.PI * i) / others.length - Math.PI / 2;
    pos[o] = [cx + R * Math.cos(a), cy + R * Math.sin(a)];
  });
  for (const e of edges) {
    const [x1, y1] = pos[e.source_id], [x2, y2] = pos[e.target_id];
    svg.append(el("line", { x1, y1, x2, y2, class: `edge ${e.predicate}`, "marker-end": `url(#${id}-arrow)`,
      "data-predicate": e.predicate, "data-source": e.source_id, "data-target": e.target_id }));
    svg.append(el("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, class: "edge-label", "text-anchor": "middle" }, e.predicate));
  }
  for (const [n, [x, y]] of Object.entries(pos)) {
    const g = el("a", { href: href(n), class: n === center ? "node center" : "node", "data-id": n });
    g.append(el("circle", { cx: x, cy: y, r: 22 }), el("text", { x, y: y + 4, "text-anchor": "middle" }, label(n)));
    g.append(el("title", {}, n));
    svg.append(g);
  }
  f.append(svg);
  const t = h("table", { class: "data" }, h("caption", {}, "Relations"),
    h("thead", {}, h("tr", {}, h("th", {}, "Source"), h("th", {}, "Predicate"), h("th", {}, "Target"))),
    h("tbody", {}, edges.map((e) => h("tr", { "data-predicate": e.predicate },
      h("td", {}, h("a", { href: href(e.source_id) }, e.source_id)), h("td", {}, e.predicate),
      h("td", {}, h("a", { href: href(e.target_id) }, e.target_id))))));
  f.append(h("details", { class: "alt" }, h("summary", {}, "Data table"), t));
  return f;
}

export { h };
