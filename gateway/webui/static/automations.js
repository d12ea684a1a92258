// The automations page: goals, cron jobs and HEARTBEAT.md.
import * as API from "./api.js";

const $ = (id) => document.getElementById(id);
const form = $("job-form");

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmt(iso) {
  return iso ? new Date(iso).toLocaleString() : "—";
}

function action(text, cls, fn) {
  const b = el("button", cls, text);
  b.type = "button";
  b.addEventListener("click", async () => {
    b.disabled = true;
    $("jobs-error").textContent = "";
    try { await fn(); } catch (e) { $("jobs-error").textContent = e.message; }
    await loadJobs();
  });
  return b;
}

async function loadJobs() {
  const data = await API.jobs();
  const ul = $("job-list");
  ul.replaceChildren();
  for (const j of data.jobs) {
    const li = el("li", "row job" + (j.enabled ? "" : " paused"));
    li.dataset.job = j.id;
    const text = el("span", "row-text");
    text.append(el("strong", "", j.name), el("span", "muted", " · " + j.describe), el("br"),
      el("span", "muted small", `next: ${j.enabled ? fmt(j.nextRun) : "paused"} · last: ${fmt(j.lastRun)}${j.lastStatus ? " (" + j.lastStatus + ")" : ""} · to ${j.target || "—"}`));
    if (j.lastError) text.append(el("span", "field-error small", " " + j.lastError));
    li.append(text,
      action("Run now", "run", () => API.runJob(j.id)),
      action(j.enabled ? "Pause" : "Resume", "toggle", () => API.setJobEnabled(j.id, !j.enabled)),
      action("Delete", "danger delete", () => API.deleteJob(j.id)));
    ul.append(li);
  }
  $("jobs-empty").hidden = data.jobs.length > 0;
}

async function loadGoals() {
  const data = await API.goals();
  const ul = $("goal-list");
  ul.replaceChildren();
  for (const g of data.goals) {
    const li = el("li", "row goal" + (g.status === "active" ? "" : " paused"));
    li.dataset.goal = g.id;
    const text = el("span", "row-text");
    const last = g.notes && g.notes.length ? g.notes[g.notes.length - 1] : null;
    text.append(el("strong", "", g.summary || g.objective), el("span", "muted", ` · ${g.status} · ${g.sessionKey}`), el("br"),
      el("span", "muted small", `since ${fmt(g.created)} · ${last ? "latest: " + fmt(last.time) + " — " + last.text : "no progress yet"}`));
    li.append(text);
    if (g.status === "active") {
      const b = el("button", "danger cancel", "Cancel");
      b.type = "button";
      b.addEventListener("click", async () => {
        b.disabled = true;
        try { await API.cancelGoal(g.id); } catch (e) { $("jobs-error").textContent = e.message; }
        await loadGoals();
      });
      li.append(b);
    }
    ul.append(li);
  }
  $("goals-empty").hidden = data.goals.length > 0;
}

function showKind() {
  const kind = form.elements.kind.value;
  for (const s of form.querySelectorAll("[data-kind]")) s.hidden = s.dataset.kind !== kind;
}
form.elements.kind.addEventListener("change", showKind);

function clearErrors() {
  for (const p of form.querySelectorAll("[data-error]")) p.textContent = "";
  for (const i of form.querySelectorAll("[aria-invalid]")) i.removeAttribute("aria-invalid");
}

form.addEventListener("submit", async (e) => {
  e.preventDefault();
  clearErrors();
  const f = form.elements;
  const schedule = { kind: f.kind.value };
  if (schedule.kind === "every") schedule.everySeconds = Math.round(Number(f.every.value) * 60);
  if (schedule.kind === "cron") { schedule.expr = f.expr.value; schedule.tz = f.tz.value; }
  if (schedule.kind === "at") { const t = new Date(f.at.value); schedule.at = isNaN(t) ? f.at.value : t.toISOString(); }
  try {
    await API.addJob({ name: f.name.value, message: f.message.value, target: f.target.value, schedule });
    form.reset();
    f.tz.value = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
    showKind();
    await loadJobs();
  } catch (err) {
    // The error shows on the field its JSON path names.
    const input = form.querySelector(`[data-path="${err.path}"]`);
    if (input) input.setAttribute("aria-invalid", "true");
    const slot = form.querySelector(`[data-error="${err.path}"]`) || form.querySelector(`[data-error="${(err.path || "").split(".")[0]}"]`) || $("jobs-error");
    slot.textContent = (err.path ? err.path + ": " : "") + err.message;
  }
});

async function loadHeartbeat() {
  const hb = await API.heartbeat();
  $("hb-content").value = hb.content;
  $("hb-state").textContent = hb.enabled
    ? `The heartbeat reads this file every ${Math.round(hb.intervalS / 60)} minutes and acts on what it asks.`
    : "The heartbeat is off (gateway.heartbeat.enabled); the file is kept for when it is on.";
}

$("hb-save").addEventListener("click", async () => {
  $("hb-error").textContent = "";
  $("hb-saved").textContent = "";
  try {
    await API.saveHeartbeat($("hb-content").value);
    $("hb-saved").textContent = "saved";
  } catch (e) {
    $("hb-error").textContent = (e.path ? e.path + ": " : "") + e.message;
  }
});

async function loadTargets() {
  const data = await API.listSessions("");
  const dl = $("targets");
  dl.replaceChildren();
  for (const s of data.sessions) {
    const o = el("option");
    o.value = s.key;
    o.label = `${s.title} (${s.channel})`;
    dl.append(o);
  }
}

export async function showAutomations() {
  if (!form.elements.tz.value) form.elements.tz.value = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  showKind();
  await Promise.all([loadGoals(), loadJobs(), loadHeartbeat(), loadTargets()]);
}
