// The setup page: a first run's model provider, one chat channel and the
// workbench password, each checked live before it is saved, then what
// waits for a restart. Saves go through PATCH /api/settings (the password
// through POST /api/setup/password): the same checks as the settings page,
// the same write-only keys.
import * as API from "./api.js";

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

const STEPS = [["model", "Model"], ["channel", "Channel"], ["password", "Password"], ["done", "Done"]];

// The chat platforms the setup walks through, with what each asks.
const PLATFORMS = {
  telegram: {
    label: "Telegram", checked: "token",
    secrets: [["token", "Bot token", "From @BotFather: /newbot, then the token it gives (123456:ABC…)."]],
    allow: "Your Telegram user id or username (others get a pairing code)",
  },
  slack: {
    label: "Slack", checked: "botToken",
    secrets: [["botToken", "Bot token", "OAuth & Permissions › Bot User OAuth Token (xoxb-…)."],
      ["appToken", "App-level token", "Basic Information › App-Level Tokens, with connections:write (xapp-…): Socket Mode."]],
    allow: "Slack member ids (U…)",
  },
  discord: {
    label: "Discord", checked: "token",
    secrets: [["token", "Bot token", "Developer portal › your app › Bot › Reset Token (without “Bot ”)."]],
    allow: "Discord user ids",
  },
};

const state = { step: "model", data: null, platform: "telegram", passed: "" };

// field is one labelled input; name is what a check calls it, path the
// config path a save writes (either may be named by an error).
function field(label, name, path, { type = "text", value = "", placeholder = "", hint = "", list = "" } = {}) {
  const wrap = el("div", "field");
  const input = el("input");
  input.id = "setup-" + name;
  input.name = name;
  input.type = type;
  input.value = value;
  input.dataset.field = name;
  if (path) input.dataset.path = path;
  if (placeholder) input.placeholder = placeholder;
  if (type === "password") input.autocomplete = "off";
  if (list) input.setAttribute("list", list);
  const lab = el("label", "", label);
  lab.htmlFor = input.id;
  wrap.append(lab, input);
  if (hint) {
    const h = el("span", "muted small", hint);
    h.id = input.id + "-hint";
    input.setAttribute("aria-describedby", h.id);
    wrap.append(h);
  }
  const err = el("p", "field-error");
  err.dataset.error = name;
  wrap.append(err);
  return wrap;
}

function keyPlaceholder(k) {
  if (!k.set) return "not set";
  return k.ref ? "set from an environment variable (empty keeps it)" : "set (empty keeps it)";
}

// asRef turns $VAR into the ${VAR} the config file expands.
const asRef = (v) => /^\$[A-Za-z_][A-Za-z0-9_]*$/.test(v) ? "${" + v.slice(1) + "}" : v;

function clearErrors(form) {
  for (const p of form.querySelectorAll(".field-error")) p.textContent = "";
  for (const i of form.querySelectorAll("[aria-invalid]")) i.removeAttribute("aria-invalid");
}

// showError puts an API error under the field it names (by check name or
// config path), else at the foot of the form.
function showError(form, err) {
  const problems = err.body?.problems || [{ path: err.path, error: err.message }];
  for (const p of problems) {
    const input = p.path && form.querySelector(`[data-field="${CSS.escape(p.path)}"], [data-path="${CSS.escape(p.path)}"]`);
    const slot = input ? input.closest(".field").querySelector(".field-error") : form.querySelector(".form-error");
    if (input) input.setAttribute("aria-invalid", "true");
    slot.textContent = p.error;
  }
}

function fieldError(form, name, msg) {
  showError(form, { path: name, message: msg });
  form.querySelector(`[data-field="${name}"]`)?.focus();
}

function result(form, text, kind) {
  const out = form.querySelector(".check-result");
  out.className = "check-result" + (kind ? " " + kind : "");
  out.textContent = text;
}

// check runs one live check and shows its answer; it remembers what
// passed, so a save right after does not ask again.
async function check(form, body) {
  result(form, "Checking…");
  try {
    const r = await API.setupCheck(body);
    result(form, (r.ok ? "✓ " : r.checked ? "✗ " : "") + r.detail, r.ok ? "ok" : r.checked ? "bad" : "");
    state.passed = r.ok ? JSON.stringify(body) : "";
    if (r.ok) form.querySelector(".anyway").hidden = true;
    return r;
  } catch (err) {
    result(form, "");
    showError(form, err);
    return null;
  }
}

// save writes changes and says what waits for a restart.
async function save(form, changes) {
  try {
    const r = await API.saveSettings(changes);
    await refresh();
    const parts = ["Saved."];
    if (r.restartNeeded.length) parts.push("Takes effect after a restart of the gateway.");
    result(form, parts.join(" "), "ok");
    form.querySelector(".next").focus();
    return true;
  } catch (err) {
    result(form, "");
    showError(form, err);
    return false;
  }
}

function actions(form, onCheck, onSave, skip) {
  const row = el("div", "actions");
  if (onCheck) {
    const checkB = el("button", "secondary", "Check");
    checkB.type = "button";
    checkB.addEventListener("click", () => { clearErrors(form); onCheck(); });
    row.append(checkB);
  }
  const saveB = el("button", "", "Save");
  saveB.type = "submit";
  const anyway = el("button", "secondary anyway", "Save anyway");
  anyway.type = "button";
  anyway.hidden = true;
  anyway.addEventListener("click", () => { clearErrors(form); onSave(true); });
  const next = el("button", "next secondary", skip ? "Skip →" : "Next →");
  next.type = "button";
  next.addEventListener("click", () => go(STEPS[STEPS.findIndex(([id]) => id === state.step) + 1][0]));
  row.append(saveB, anyway, next);
  form.addEventListener("submit", (e) => { e.preventDefault(); clearErrors(form); onSave(false); });
  const out = el("p", "check-result");
  out.setAttribute("role", "status");
  const formError = el("p", "field-error form-error");
  formError.setAttribute("role", "alert");
  form.append(formError, row, out);
}

function heading(text, intro) {
  const h = el("h2", "", text);
  h.tabIndex = -1;
  h.className = "step-heading";
  const frag = document.createDocumentFragment();
  frag.append(h);
  if (intro) frag.append(el("p", "muted step-intro", intro));
  return frag;
}

// ---- step 1: the model and its provider ------------------------------------
// modelIntro says what the config file sets up for the model, and whether
// the running gateway has it yet.
function modelIntro(d) {
  const m = d.model;
  if (!m.ready) return `Now: no provider with a key is set up for ${m.model || "the model"}. Pick one, paste its key, and name the model.`;
  const now = `Now: ${m.model} through ${m.resolved} (${m.reason}).`;
  return (d.waiting || []).includes("model") ? now + " Saved: the running gateway uses it after a restart (see Done)." : now;
}

function modelStep() {
  const d = state.data;
  const form = el("form", "form setup-step");
  form.noValidate = true;
  const m = d.model;
  form.append(heading("Model and provider", modelIntro(d)));
  form.intro = () => modelIntro(state.data);

  const sel = el("select");
  sel.id = "setup-provider";
  sel.name = "provider";
  sel.dataset.field = "name";
  sel.dataset.path = "agents.defaults.provider";
  for (const p of d.providers) {
    const o = el("option", "", p.displayName + (p.local ? " (on your machine)" : ""));
    o.value = p.name;
    sel.append(o);
  }
  sel.value = m.resolved && d.providers.some((p) => p.name === m.resolved) ? m.resolved : "anthropic";
  const selWrap = el("div", "field");
  const selLab = el("label", "", "Provider");
  selLab.htmlFor = sel.id;
  selWrap.append(selLab, sel, el("p", "field-error"));

  const models = el("datalist");
  models.id = "setup-models";
  form.append(selWrap,
    field("API key", "key", "", { type: "password" }),
    field("API base URL", "apiBase", ""),
    field("Model", "model", "agents.defaults.model", { value: m.model, list: models.id, hint: "A check lists the provider's models here." }),
    models);
  // After a check, the models the provider listed, to pick from.
  const picks = el("select", "model-picks");
  picks.id = "setup-model-picks";
  picks.setAttribute("aria-label", "Models the provider listed");
  picks.hidden = true;
  picks.addEventListener("change", () => {
    if (!picks.value) return;
    form.elements.model.value = picks.value;
    form.elements.model.removeAttribute("aria-invalid");
    modelHint(models.dataset.provider, Array.from(models.options, (o) => o.value));
  });
  form.elements.model.closest(".field").querySelector("#setup-model-hint").after(picks);
  const modelHint = (provider, listed) => {
    const hint = form.querySelector("#setup-model-hint");
    if (!listed.length) { hint.textContent = "A check lists the provider's models here."; return; }
    const v = form.elements.model.value.trim();
    const known = !v || listed.includes(v) || listed.includes(v.split("/").slice(1).join("/"));
    hint.textContent = `${provider} listed ${listed.length} model${listed.length === 1 ? "" : "s"}` +
      (listed.length <= 5 ? ": " + listed.join(", ") + "." : "; pick one below or type to see them.") +
      (known ? "" : ` It did not list ${v}.`);
  };
  form.elements.model.addEventListener("input", () => { if (models.options.length) modelHint(models.dataset.provider, Array.from(models.options, (o) => o.value)); });

  const choice = () => state.data.providers.find((p) => p.name === sel.value);
  const fill = () => {
    const p = choice();
    const key = form.elements.key, base = form.elements.apiBase;
    key.dataset.path = `providers.${p.configName}.apiKey`;
    base.dataset.path = `providers.${p.configName}.apiBase`;
    key.value = "";
    key.placeholder = p.keyOptional && !p.apiKey.set ? "none needed" : keyPlaceholder(p.apiKey);
    form.querySelector("#setup-key-hint")?.remove();
    const hint = el("span", "muted small", p.envKey ? `Paste the key, or $${p.envKey} to keep it in the gateway's environment.` : "Paste the key, or $VARIABLE to keep it in the gateway's environment.");
    hint.id = "setup-key-hint";
    key.setAttribute("aria-describedby", hint.id);
    key.after(hint);
    base.value = p.apiBase;
    base.placeholder = p.defaultApiBase || "required: the server's address, e.g. http://127.0.0.1:8000/v1";
    models.replaceChildren();
    picks.replaceChildren();
    picks.hidden = true;
    modelHint(p.displayName, []);
    result(form, "");
  };
  sel.addEventListener("change", fill);
  const body = () => {
    const p = choice();
    const b = { kind: "provider", name: p.name, key: form.elements.key.value.trim(), apiBase: form.elements.apiBase.value.trim() };
    if (b.apiBase === p.apiBase) b.apiBase = "";
    return b;
  };
  const runCheck = async () => {
    const r = await check(form, body());
    if (r?.models) {
      const name = choice().displayName;
      models.dataset.provider = name;
      models.replaceChildren(...r.models.map((id) => { const o = el("option"); o.value = id; return o; }));
      const head = el("option", "", `Pick one of the ${r.models.length} models ${name} listed`);
      head.value = "";
      picks.replaceChildren(head, ...r.models.map((id) => el("option", "", id)));
      picks.hidden = !r.models.length;
      modelHint(name, r.models);
    }
    return r;
  };
  actions(form, runCheck, async (force) => {
    const p = choice();
    const key = form.elements.key.value.trim(), base = form.elements.apiBase.value.trim(), model = form.elements.model.value.trim();
    if (!model) return fieldError(form, "model", "Name the model (a check lists the provider's).");
    if (!key && !p.apiKey.set && !p.keyOptional) return fieldError(form, "key", "Paste the key (or $VARIABLE).");
    form.querySelector(".anyway").hidden = true;
    if (!force && p.checkable && (key || p.keyOptional) && state.passed !== JSON.stringify(body())) {
      const r = await runCheck();
      if (!r) return;
      if (!r.ok && r.checked) {
        form.querySelector(".anyway").hidden = false;
        return;
      }
    }
    const changes = [{ path: "agents.defaults.provider", value: p.name }, { path: "agents.defaults.model", value: model }];
    if (key) changes.push({ path: `providers.${p.configName}.apiKey`, value: asRef(key) });
    if (base !== p.apiBase) changes.push({ path: `providers.${p.configName}.apiBase`, value: base });
    if (await save(form, changes)) {
      form.elements.key.value = "";
      const now = choice();
      form.elements.key.placeholder = now.keyOptional && !now.apiKey.set ? "none needed" : keyPlaceholder(now.apiKey);
    }
  }, !m.ready);
  fill();
  return form;
}

// ---- step 2: a chat channel ---------------------------------------------------
function channelStep() {
  const d = state.data;
  const form = el("form", "form setup-step");
  form.noValidate = true;
  const ready = d.channels.filter((c) => c.ready).map((c) => c.name);
  form.append(heading("A chat channel", (ready.length ? `Set up: ${ready.join(", ")}. ` : "") +
    "The web chat is always on; add a platform to talk to the bot from your phone."));

  const pick = el("fieldset", "platforms");
  pick.append(el("legend", "", "Platform"));
  for (const [id, p] of Object.entries(PLATFORMS)) {
    const lab = el("label", "radio");
    const r = el("input");
    r.type = "radio";
    r.name = "platform";
    r.value = id;
    r.checked = id === state.platform;
    r.addEventListener("change", () => { state.platform = id; state.passed = ""; render(); document.querySelector('#setup input[name="platform"]:checked')?.focus(); });
    lab.append(r, " " + p.label);
    pick.append(lab);
  }
  form.append(pick);

  const id = state.platform, p = PLATFORMS[id];
  const ch = d.channels.find((c) => c.name === id) || { secrets: [], allowFrom: [], enabled: false };
  for (const [key, label, hint] of p.secrets) {
    const st = ch.secrets.find((s) => s.key === key) || { set: false };
    form.append(field(label, key, `channels.${id}.${key}`, { type: "password", placeholder: keyPlaceholder(st), hint }));
  }
  form.append(field("Who may talk to it", "allowFrom", `channels.${id}.allowFrom`,
    { value: ch.allowFrom.join(", "), hint: p.allow + "; comma-separated, * for everyone." }));
  if (ch.state) form.append(el("p", "muted small", `${p.label} is ${ch.state} in the running gateway.`));

  const body = () => ({ kind: id, key: form.elements[p.checked].value.trim() });
  actions(form, () => check(form, body()), async (force) => {
    const typed = Object.fromEntries(p.secrets.map(([k]) => [k, form.elements[k].value.trim()]));
    for (const [k] of p.secrets) {
      const st = ch.secrets.find((s) => s.key === k);
      if (!typed[k] && !st?.set) return fieldError(form, k, "Required.");
    }
    form.querySelector(".anyway").hidden = true;
    if (!force && state.passed !== JSON.stringify(body())) {
      const r = await check(form, body());
      if (!r) return;
      if (!r.ok) { form.querySelector(".anyway").hidden = false; return; }
    }
    const allow = form.elements.allowFrom.value.split(/[,\n]/).map((s) => s.trim()).filter(Boolean);
    const changes = [{ path: `channels.${id}.enabled`, value: true }, { path: `channels.${id}.allowFrom`, value: allow }];
    for (const [k, v] of Object.entries(typed)) if (v) changes.push({ path: `channels.${id}.${k}`, value: asRef(v) });
    if (await save(form, changes)) for (const [k] of p.secrets) form.elements[k].value = "";
  }, !ready.length);
  return form;
}

// ---- step 3: the workbench password ------------------------------------------
function passwordStep() {
  const pw = state.data.password;
  const form = el("form", "form setup-step");
  form.noValidate = true;
  if (pw.set) {
    form.append(heading("Workbench password", "A workbench password is set" + (pw.active ? "." : "; it takes effect after a restart.") +
      " Change it with nanobot webui set-password on the gateway's machine."));
    const row = el("div", "actions");
    const next = el("button", "next", "Next →");
    next.type = "button";
    next.addEventListener("click", () => go("done"));
    row.append(next);
    form.append(row);
    return form;
  }
  form.append(heading("Workbench password", pw.needed
    ? "The gateway listens beyond this machine: without a password the workbench stays off there."
    : "Needed to sign in from other machines; on this one, the link the gateway prints signs you in. Stored as a bcrypt hash, from the next start."),
  field("Password", "password", "gateway.webui.password", { type: "password", hint: "10 to 72 characters." }),
  field("Again", "again", "", { type: "password" }));
  form.elements.password.autocomplete = form.elements.again.autocomplete = "new-password";
  actions(form, null, async () => {
    const a = form.elements.password.value, b = form.elements.again.value;
    if (a !== b) return fieldError(form, "again", "The two differ.");
    try {
      await API.setPassword(a);
      form.elements.password.value = form.elements.again.value = "";
      await refresh();
      result(form, "Saved. Takes effect after a restart of the gateway.", "ok");
      form.querySelector(".next").focus();
    } catch (err) { showError(form, err); }
  }, true);
  return form;
}

// ---- step 4: done ----------------------------------------------------------------
function doneStep() {
  const d = state.data;
  const sec = el("section", "setup-step");
  const waiting = d.waiting || [];
  sec.append(heading("Done", d.missing.length ? "Something essential is still missing (marked ✗)."
    : waiting.length ? "Saved. The running gateway has it after a restart (below): until then a chat gets no answer from the new settings."
      : "The gateway has what it needs."));
  const list = el("ul", "rows summary");
  const row = (ok, text) => { const li = el("li", "row"); li.append(el("span", "badge " + (ok ? "ok" : "bad"), ok ? "✓" : "✗"), el("span", "row-text", text)); list.append(li); };
  const m = d.model;
  row(m.ready, m.ready ? `Model ${m.model} through ${m.resolved}` : `Model ${m.model || ""}: no provider with a key is set up for it`);
  const chans = d.channels.filter((c) => c.enabled);
  row(chans.some((c) => c.ready), chans.length
    ? "Channels: " + chans.map((c) => `${c.name}${c.ready ? "" : " (incomplete)"}${c.state ? " — " + c.state : ""}`).join(", ")
    : "Channels: only the web chat");
  row(d.password.set || !d.password.needed, d.password.set ? "Workbench password set" : "No workbench password (this machine signs in with the link)");
  sec.append(list);

  if (d.restartNeeded.length) {
    sec.append(el("h3", "", "Waiting for a restart"),
      el("p", "", "Saved, and taking effect when the gateway starts again: " + d.restartNeeded.join(", ") + "."));
    const how = el("ul", "how");
    for (const [cmd, what] of [
      ["nanobot gateway restart", "on the gateway's machine, for a gateway started in a terminal or with --background"],
      ["sudo systemctl restart nanobot", "under systemd (docker compose restart under Docker)"],
      ["/restart", "in a chat with the bot, from an admin (a sender allowFrom names)"],
    ]) {
      const li = el("li");
      li.append(el("code", "", cmd), " — " + what);
      how.append(li);
    }
    sec.append(el("p", "muted", "The workbench does not restart the gateway itself. Any of these does:"), how);
  } else {
    sec.append(el("p", "muted", "Nothing waits for a restart."));
  }
  const back = el("button", "secondary", "Back to the chats");
  back.type = "button";
  back.addEventListener("click", () => document.querySelector('#nav [data-view="app"]').click());
  sec.append(back);
  return sec;
}

// ---- the page --------------------------------------------------------------------
function stepDone(id) {
  const d = state.data;
  return { model: d.model.ready, channel: d.channels.some((c) => c.ready), password: d.password.set, done: !d.missing.length }[id];
}

function render() {
  const root = $("setup");
  const steps = el("ol", "steps");
  steps.setAttribute("aria-label", "Setup steps");
  STEPS.forEach(([id, label], i) => {
    const li = el("li");
    const b = el("button", "step" + (stepDone(id) ? " complete" : ""), `${i + 1}. ${label}${stepDone(id) ? " ✓" : ""}`);
    b.type = "button";
    b.dataset.step = id;
    if (id === state.step) b.setAttribute("aria-current", "step");
    b.addEventListener("click", () => go(id));
    li.append(b);
    steps.append(li);
  });
  const body = { model: modelStep, channel: channelStep, password: passwordStep, done: doneStep }[state.step]();
  root.replaceChildren(steps, body);
}

// refresh reloads what is set up and redraws the steps' marks, keeping the
// form shown (with what it says).
async function refresh() {
  state.data = await API.setup();
  for (const b of $("setup").querySelectorAll(".steps .step")) {
    const label = STEPS.find(([id]) => id === b.dataset.step);
    const ok = stepDone(b.dataset.step);
    b.classList.toggle("complete", ok);
    b.textContent = `${STEPS.indexOf(label) + 1}. ${label[1]}${ok ? " ✓" : ""}`;
  }
  const next = $("setup").querySelector(".setup-step .next");
  if (next && stepDone(state.step)) next.textContent = "Next →";
  const form = $("setup").querySelector(".setup-step");
  const intro = form?.querySelector(".step-intro");
  if (form?.intro && intro) intro.textContent = form.intro();
  await updateBanner(state.data);
}

// go opens a step with what is set up now.
async function go(step) {
  state.data = await API.setup();
  state.step = step;
  state.passed = "";
  render();
  $("setup").querySelector(".step-heading").focus();
}

export async function showSetup() {
  state.data = await API.setup();
  render();
}

// setupStep opens the setup page at step the next time it is shown.
export function setupStep(step) { state.step = step; }

// updateBanner shows "Finish setting up" on the chats page while
// something essential is missing, or saved but not yet in the running
// gateway (it waits for a restart: until then chats get no answer from it).
export async function updateBanner(data) {
  const banner = $("setup-banner");
  try { data = data || await API.setup(); } catch { banner.hidden = true; return; }
  const what = { model: "no model provider with a key", channel: "no chat channel besides the web chat" };
  const saved = { model: "the model provider", channel: "the chat channel" };
  const waiting = data.waiting || [];
  const parts = data.missing.map((m) => what[m] || m);
  if (waiting.length) {
    parts.push(waiting.map((w) => saved[w] || w).join(" and ") + " saved, waiting for a restart of the gateway " +
      "(nanobot gateway restart on its machine, or /restart in a chat with the bot)");
  }
  banner.hidden = !parts.length || $("app").hidden;
  banner.dataset.waiting = String(!data.missing.length && waiting.length > 0);
  $("setup-banner-go").textContent = data.missing.length ? "Set up" : "How to restart";
  $("setup-banner-text").textContent = parts.join("; ") + ".";
}
