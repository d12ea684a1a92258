// The settings page: config.json fields, saved through PATCH /api/settings.
// A refused change shows its error on the field its JSON path names.
import * as API from "./api.js";

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// field builds one labelled input for path. kind: text, secret, bool,
// number, lines (a list, one per line), or a list of options.
function field(label, path, kind, value, hint) {
  const wrap = el("div", "field");
  const id = "f-" + path.replace(/[^a-zA-Z0-9]/g, "-");
  let input;
  if (kind === "bool") {
    input = el("input");
    input.type = "checkbox";
    input.checked = !!value;
  } else if (kind === "lines") {
    input = el("textarea");
    input.rows = Math.max(2, (value || []).length + 1);
    input.value = (value || []).join("\n");
  } else if (Array.isArray(kind)) {
    input = el("select");
    for (const o of kind) { const opt = el("option", "", o); opt.value = o; input.append(opt); }
    input.value = value;
  } else {
    input = el("input");
    input.type = kind === "secret" ? "password" : kind === "number" ? "number" : "text";
    if (kind === "secret") { input.autocomplete = "new-password"; input.placeholder = value; } else input.value = value ?? "";
  }
  input.id = id;
  input.dataset.path = path;
  input.dataset.kind = Array.isArray(kind) ? "text" : kind;
  input.dataset.initial = kind === "bool" ? String(input.checked) : kind === "secret" ? "" : input.value;
  const lab = el("label", kind === "bool" ? "check" : "", label);
  lab.htmlFor = id;
  if (kind === "bool") wrap.append(input, lab); else wrap.append(lab, input);
  if (hint) wrap.append(el("span", "muted small", hint));
  const err = el("p", "field-error");
  err.dataset.error = path;
  wrap.append(err);
  return wrap;
}

function valueOf(input) {
  switch (input.dataset.kind) {
    case "bool": return input.checked;
    case "number": return Number(input.value);
    case "lines": return input.value.split("\n").map((s) => s.trim()).filter(Boolean);
    default: return input.value;
  }
}

function changed(input) {
  const now = input.dataset.kind === "bool" ? String(input.checked) : input.value;
  return input.dataset.kind === "secret" ? now !== "" : now !== input.dataset.initial;
}

function section(title, fields) {
  const form = el("form", "form settings-section");
  form.noValidate = true;
  form.append(el("h2", "", title), ...fields);
  const status = el("p", "muted small save-status");
  const save = el("button", "", "Save");
  save.type = "submit";
  form.append(save, status);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    for (const p of form.querySelectorAll("[data-error]")) p.textContent = "";
    for (const i of form.querySelectorAll("[aria-invalid]")) i.removeAttribute("aria-invalid");
    status.textContent = "";
    const inputs = Array.from(form.querySelectorAll("[data-path]")).filter(changed);
    if (!inputs.length) { status.textContent = "Nothing changed."; return; }
    try {
      const r = await API.saveSettings(inputs.map((i) => ({ path: i.dataset.path, value: valueOf(i) })));
      const parts = ["Saved."];
      if (r.applied.length) parts.push("Applied now: " + r.applied.join(", ") + ".");
      if (r.restartNeeded.length) parts.push("Restart needed for: " + r.restartNeeded.join(", ") + ".");
      status.textContent = parts.join(" ");
      for (const i of inputs) {
        i.dataset.initial = i.dataset.kind === "bool" ? String(i.checked) : i.dataset.kind === "secret" ? "" : i.value;
        if (i.dataset.kind === "secret") { i.placeholder = keyHint({ set: true, ref: i.value.trim().startsWith("$") }); i.value = ""; }
      }
    } catch (err) {
      const problems = err.body?.problems || [{ path: err.path, error: err.message }];
      let shown = false;
      for (const p of problems) {
        const slot = document.querySelector(`[data-error="${CSS.escape(p.path || "")}"]`);
        const input = document.querySelector(`[data-path="${CSS.escape(p.path || "")}"]`);
        if (input) input.setAttribute("aria-invalid", "true");
        if (slot) { slot.textContent = `${p.path}: ${p.error}`; shown = true; }
      }
      if (!shown) status.textContent = (err.path ? err.path + ": " : "") + err.message;
    }
  });
  return form;
}

// A secret typed as $NAME or ${NAME} is saved as the ${NAME} reference,
// once the gateway's environment has NAME (checked on the server).
const ENV_HINT = "Paste the value, or $VARIABLE to keep it in the gateway's environment.";

function keyHint(k) {
  if (!k.set) return "not set";
  return k.ref ? "set from an environment variable" : "set";
}

export async function showSettings() {
  const s = await API.settings();
  $("settings-file").textContent = s.file;
  const root = $("settings");
  root.replaceChildren();
  if (s.restartNeeded.length) {
    root.append(el("p", "notice", "Changed in the config and waiting for a restart of the gateway: " + s.restartNeeded.join(", ") + "."));
  }
  root.append(section("Agent", [
    field("Model", "agents.defaults.model", "text", s.agent.model),
    field("Provider", "agents.defaults.provider", "text", s.agent.provider, "auto: chosen from the model and the keys; or a provider's name"),
  ]));
  const prov = [];
  for (const p of s.providers) {
    prov.push(el("h3", "", p.name),
      field("API key", `providers.${p.name}.apiKey`, "secret", keyHint(p.apiKey), ENV_HINT),
      field("API base", `providers.${p.name}.apiBase`, "text", p.apiBase));
  }
  if (prov.length) root.append(section("Providers", prov));
  const ch = [];
  for (const c of s.channels) {
    ch.push(el("h3", "", c.name),
      field("Enabled", `channels.${c.name}.enabled`, "bool", c.enabled),
      field("Allowed senders (one per line; * for everyone)", `channels.${c.name}.allowFrom`, "lines", c.allowFrom, "applied at once"),
      ...c.secrets.map((k) => field(k.key, `channels.${c.name}.${k.key}`, "secret", keyHint(k), ENV_HINT)));
  }
  if (ch.length) root.append(section("Channels", ch));
  root.append(section("Heartbeat", [
    field("Enabled", "gateway.heartbeat.enabled", "bool", s.heartbeat.enabled),
    field("Interval (seconds)", "gateway.heartbeat.intervalS", "number", s.heartbeat.intervalS),
  ]));
  root.append(section("Tools", [
    field("Keep file and shell tools inside the workspace", "tools.restrictToWorkspace", "bool", s.tools.restrictToWorkspace),
    field("Sandbox", "tools.exec.sandbox", ["auto", "landlock", "bwrap", "none"], s.tools.sandbox),
  ]));
}
