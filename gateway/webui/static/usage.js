// The usage page: the usage ledger as charts. The charts are inline SVG
// drawn here (no chart library): tokens and cost per day stacked by who
// spent them, so what the heartbeat and cron burn on their own stands
// apart, and the totals per model and per channel as bar lists.
import * as API from "./api.js";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
// The sources drawn apart; subagent, api and consolidation calls are "other".
const SERIES = [
  { name: "user", label: "Conversations" },
  { name: "heartbeat", label: "Heartbeat" },
  { name: "cron", label: "Cron" },
  { name: "other", label: "Other (sub-agents, API, memory)" },
];
const state = { since: "30d", data: null, resizeTimer: 0 };

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

export function tokens(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(1) + "B";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return String(Math.round(n));
}

// money shows a cost; null is a price nobody knows, never $0.
export function money(v) {
  if (v === null || v === undefined) return "?";
  if (v === 0) return "$0";
  if (v < 0.01) return "$" + v.toFixed(4);
  return "$" + v.toFixed(2);
}

const calls = (n) => n === 1 ? "1 call" : `${n} calls`;

function costText(t) {
  const c = money(t.costUsd);
  return t.unpriced > 0 && t.costUsd !== null ? c + " + ?" : c;
}

// bySeries splits a row's per-source totals into the drawn series.
function bySeries(row, pick) {
  const out = { user: 0, heartbeat: 0, cron: 0, other: 0 };
  for (const [src, t] of Object.entries(row.sources || {})) {
    out[src in out ? src : "other"] += pick(t) || 0;
  }
  return out;
}

function build(root) {
  if (!document.querySelector('link[href="/ui/usage.css"]')) {
    document.head.append(Object.assign(document.createElement("link"), { rel: "stylesheet", href: "/ui/usage.css" }));
  }
  root.innerHTML = `
  <div class="usage-head">
    <h2>Usage</h2>
    <select id="usage-since" aria-label="Period">
      <option value="7d">last 7 days</option>
      <option value="30d" selected>last 30 days</option>
      <option value="90d">last 90 days</option>
    </select>
  </div>
  <p id="usage-note" class="muted small"></p>
  <ul id="usage-cards" class="usage-cards" aria-label="Totals"></ul>
  <ul id="usage-legend" class="usage-legend" aria-label="Colours"></ul>
  <section><h2>Tokens per day</h2><div class="chart"><svg id="usage-tokens" role="img" aria-label="Tokens per day"></svg></div></section>
  <section><h2>Cost per day</h2><div class="chart"><svg id="usage-cost" role="img" aria-label="Cost per day"></svg></div></section>
  <section><h2>By model</h2><ul id="usage-models" class="usage-bars" aria-label="By model"></ul></section>
  <section><h2>By channel</h2><ul id="usage-channels" class="usage-bars" aria-label="By channel"></ul></section>
  <p id="usage-error" class="field-error" role="alert"></p>`;
  for (const s of SERIES) {
    const li = el("li");
    li.append(svg("svg", { width: 12, height: 12, "aria-hidden": "true" }), s.label);
    li.firstChild.append(svg("rect", { width: 12, height: 12, rx: 2, class: "seg-" + s.name }));
    $("usage-legend").append(li);
  }
  $("usage-since").addEventListener("change", () => { state.since = $("usage-since").value; showUsage(); });
  addEventListener("resize", () => {
    clearTimeout(state.resizeTimer);
    state.resizeTimer = setTimeout(() => { if (!root.hidden && state.data) draw(); }, 150);
  });
  root.dataset.built = "1";
}

export async function showUsage() {
  const root = $("usage-view");
  if (!root.dataset.built) build(root);
  $("usage-error").textContent = "";
  const q = (by) => API.api("GET", `/api/usage?since=${encodeURIComponent(state.since)}&by=${by}`);
  try {
    const [days, models, channels] = await Promise.all([q("day"), q("model"), q("channel")]);
    state.data = { days, models, channels };
  } catch (e) {
    $("usage-error").textContent = e.message;
    return;
  }
  draw();
}

function draw() {
  const { days, models, channels } = state.data;
  const t = days.total;
  $("usage-note").textContent = `Since ${days.rows.length ? days.rows[0].key : days.since.slice(0, 10)} (${days.timezone}). ` +
    `Prices as of ${days.pricesAsOf}; "?" is a model without a known price.` +
    (days.skipped ? ` ${days.skipped} unreadable ledger lines skipped.` : "");
  const cards = $("usage-cards");
  cards.replaceChildren();
  const card = (label, value, detail, id) => {
    const li = el("li", "card");
    li.append(el("span", "muted small", label), el("strong", "usage-figure", value));
    li.lastChild.id = id;
    if (detail) li.append(el("span", "muted small", detail));
    cards.append(li);
  };
  card("Tokens", tokens(t.input + t.output), `${tokens(t.input)} in (${tokens(t.cacheRead)} cached) · ${tokens(t.output)} out`, "usage-total-tokens");
  card("Cost", costText(t), `${calls(t.calls)}${t.errors ? `, ${t.errors} failed` : ""}`, "usage-total-cost");
  for (const src of ["heartbeat", "cron"]) {
    const b = days.background[src];
    const share = t.input + t.output ? Math.round(100 * (b.input + b.output) / (t.input + t.output)) : 0;
    card(src === "heartbeat" ? "Heartbeat (on its own)" : "Cron (on its own)", tokens(b.input + b.output),
      `${costText(b)} · ${calls(b.calls)} · ${share}% of tokens`, "usage-" + src);
  }
  stacked($("usage-tokens"), days.rows, (r) => bySeries(r, (x) => x.input + x.output), tokens, () => false);
  stacked($("usage-cost"), days.rows, (r) => bySeries(r, (x) => x.costUsd), money, (r) => r.unpriced > 0);
  barList($("usage-models"), models.rows);
  barList($("usage-channels"), channels.rows);
}

// stacked draws one bar per row (a day), its segments the series.
function stacked(chart, rows, split, fmt, unknown) {
  const width = Math.max(280, Math.floor(chart.parentElement.clientWidth));
  const height = width < 500 ? 180 : 220;
  const left = 48, right = 8, top = 14, bottom = 22;
  const plotW = width - left - right, plotH = height - top - bottom;
  chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
  chart.setAttribute("width", width);
  chart.setAttribute("height", height);
  chart.replaceChildren();
  const parts = rows.map(split);
  const sums = parts.map((p) => SERIES.reduce((a, s) => a + p[s.name], 0));
  const max = Math.max(...sums, 0) || 1;
  for (const f of [0, 0.5, 1]) {
    const y = top + plotH - f * plotH;
    chart.append(svg("line", { x1: left, x2: width - right, y1: y, y2: y, class: "grid" }));
    chart.append(svg("text", { x: left - 6, y: y + 4, class: "axis", "text-anchor": "end" }, fmt(max * f)));
  }
  const step = plotW / Math.max(rows.length, 1);
  const barW = Math.max(2, Math.min(28, step * 0.7));
  const labelEvery = Math.ceil(rows.length / Math.max(1, Math.floor(plotW / 56)));
  rows.forEach((row, i) => {
    const x = left + i * step + (step - barW) / 2;
    const g = svg("g", { class: "bar", "data-day": row.key });
    const tip = [row.key + ": " + fmt(sums[i])];
    let y = top + plotH;
    for (const s of SERIES) {
      const v = parts[i][s.name];
      if (v <= 0) continue;
      const h = (v / max) * plotH;
      y -= h;
      g.append(svg("rect", { x, y, width: barW, height: Math.max(h, 0.5), class: "seg-" + s.name }));
      tip.push(`${s.label}: ${fmt(v)}`);
    }
    if (unknown(row)) {
      g.append(svg("text", { x: x + barW / 2, y: y - 3, class: "axis unknown", "text-anchor": "middle" }, "?"));
      tip.push(`${row.unpriced} calls without a known price`);
    }
    g.append(svg("title", {}, tip.join("\n")));
    chart.append(g);
    if (i % labelEvery === 0) {
      chart.append(svg("text", { x: x + barW / 2, y: height - 6, class: "axis", "text-anchor": "middle" }, row.key.slice(5)));
    }
  });
}

// barList shows groups as rows with a bar proportional to their tokens.
function barList(ul, rows) {
  ul.replaceChildren();
  if (!rows.length) {
    ul.append(el("li", "muted", "No calls in this period."));
    return;
  }
  const max = Math.max(...rows.map((r) => r.input + r.output)) || 1;
  for (const r of rows) {
    const li = el("li", "usage-bar");
    const head = el("div", "usage-bar-head");
    head.append(el("span", "usage-key", r.key || "(none)"),
      el("span", "muted small", `${tokens(r.input + r.output)} tokens · ${costText(r)} · ${calls(r.calls)}`));
    const bar = svg("svg", { width: "100%", height: 8, "aria-hidden": "true", class: "usage-track" });
    bar.append(svg("rect", { width: "100%", height: 8, rx: 4, class: "track" }));
    bar.append(svg("rect", { width: Math.max(0.5, 100 * (r.input + r.output) / max) + "%", height: 8, rx: 4, class: "fill" }));
    li.append(head, bar);
    ul.append(li);
  }
}
