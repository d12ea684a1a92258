// nanobot workbench: login, conversations of every channel, live web chat.
import * as API from "./api.js";
import { Chat, newChatId } from "./chat.js";
import { showChannels } from "./channels.js";
import { showAutomations } from "./automations.js";
import { showSettings } from "./settings.js";
import { showMemory } from "./memory.js";
import { showLogs } from "./logs.js";
import { showUsage } from "./usage.js";
import { showSetup, updateBanner, setupStep } from "./setup.js";

const $ = (id) => document.getElementById(id);
// Channel badges are letters, not emoji: they render on every system.
const BADGES = { web: "W", telegram: "TG", slack: "SL", discord: "DC", matrix: "MX", email: "@", whatsapp: "WA", feishu: "FS", dingtalk: "DT", qq: "QQ", wecom: "WC", weixin: "WX", mochat: "MC", api: "API", cli: "CLI", cron: "⏱" };
const state = { key: "", chat: null, info: null, streaming: new Map(), activity: null, reloadTimer: 0, temporary: false, signedIn: false, shown: null };

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function when(iso) {
  const t = new Date(iso);
  if (isNaN(t)) return "";
  const s = (Date.now() - t) / 1000;
  if (s < 60) return "just now";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return t.toLocaleDateString();
}

// ---- theme ----------------------------------------------------------------
function applyTheme(t) {
  if (t) document.documentElement.dataset.theme = t; else delete document.documentElement.dataset.theme;
}
applyTheme(localStorage.getItem("nanobot.theme") || "");
$("theme").addEventListener("click", () => {
  const next = { "": "dark", dark: "light", light: "" }[localStorage.getItem("nanobot.theme") || ""];
  localStorage.setItem("nanobot.theme", next);
  applyTheme(next);
});

// ---- login ----------------------------------------------------------------
// A sign-in link is the page's address with "#login=<one-time code>": the
// code is in the fragment, which the browser never sends to a server (so
// no log or proxy sees it), and it leaves the address bar at once.
async function redeemLink() {
  const m = /^#login=([A-Za-z0-9._-]+)$/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, "", location.pathname);
  try { await API.loginWithCode(m[1]); } catch (e) { $("login-error").textContent = e.message; }
}

// A sign-in link pasted into a tab that shows this page changes only the
// fragment, which loads nothing: redeem it here. Any other fragment names
// a page (see route).
window.addEventListener("hashchange", () => { if (location.hash.startsWith("#login=")) boot(); else route(); });
window.addEventListener("popstate", () => { if (!location.hash.startsWith("#login=")) route(); });

async function boot() {
  let who;
  await redeemLink();
  try { who = await API.me(); } catch (e) { $("login-error").textContent = e.message; $("login-view").hidden = false; return; }
  state.signedIn = who.authenticated;
  if (!who.authenticated) {
    state.shown = null;
    $("logout").hidden = true;
    $("back").hidden = true;
    $("app").hidden = true;
    $("channels-view").hidden = true;
    $("automations-view").hidden = true;
    $("settings-view").hidden = true;
    $("memory-view").hidden = true;
    $("logs-view").hidden = true;
    $("usage-view").hidden = true;
    $("setup-view").hidden = true;
    $("setup-banner").hidden = true;
    $("nav").hidden = true;
    $("login-view").hidden = false;
    $("password-login").hidden = !who.passwordSet;
    $("password").required = who.passwordSet;
    $("login-submit").hidden = !who.passwordSet;
    if (who.passwordSet) $("password").focus();
    return;
  }
  $("login-view").hidden = true;
  $("nav").hidden = false;
  $("logout").hidden = false;
  await route(true);
}

// ---- pages ----------------------------------------------------------------
// The address names what is shown, so Back, Forward, a bookmark and a
// typed address work: "#channels", "#memory"… a page; "#chat/<key>" a
// conversation (on a phone, the conversation instead of the list); "" or
// "#chats" the chats. Each page or conversation opened from the page is a
// history entry of its own.
const PAGES = { app: loadSessions, "channels-view": showChannels, "automations-view": showAutomations, "memory-view": showMemory, "settings-view": showSettings, "logs-view": showLogs, "usage-view": showUsage, "setup-view": showSetup };

function parseRoute(hash) {
  const h = hash.replace(/^#/, "");
  if (h.startsWith("chat/")) {
    let key = "";
    try { key = decodeURIComponent(h.slice(5)); } catch { /* a mangled address: the chats */ }
    return { view: "app", key };
  }
  const view = h + "-view";
  return view in PAGES && view !== "app" ? { view, key: "" } : { view: "app", key: "" };
}

const hashOf = (view, key) => view !== "app" ? "#" + view.replace("-view", "") : key ? "#chat/" + encodeURIComponent(key) : "#chats";

// navigate shows what hash names as a new history entry (replace: in
// place of the current one).
function navigate(hash, replace = false) {
  if (location.hash !== hash) {
    if (replace) history.replaceState(null, "", hash); else history.pushState({ workbench: true }, "", hash);
  }
  return route(true);
}

// route shows what the address names; again (a click on the page shown)
// reloads it, otherwise a route already shown is left as it is (Back
// fires both popstate and hashchange).
async function route(again = false) {
  if (!state.signedIn) return;
  const { view, key } = parseRoute(location.hash);
  const id = view + " " + key;
  if (!again && state.shown === id) return;
  state.shown = id;
  for (const p of Object.keys(PAGES)) $(p).hidden = p !== view;
  for (const b of $("nav").querySelectorAll("button")) b.classList.toggle("active", b.dataset.view === view);
  if (view === "app") updateBanner(); else $("setup-banner").hidden = true;
  if (view !== "app") { $("back").hidden = true; return PAGES[view](); }
  if (key === "temporary" && state.temporary) { showPane(); return loadSessions(); }
  if (!key || key === "temporary") hidePane();
  else if (key !== state.key || !$("app").classList.contains("show-pane")) openSession(key);
  else showPane();
  return loadSessions();
}

$("setup-banner-go").addEventListener("click", () => {
  if ($("setup-banner").dataset.waiting === "true") setupStep("done");
  navigate("#setup");
});
for (const b of $("nav").querySelectorAll("button")) {
  // Chats comes back to the conversation that was open.
  b.addEventListener("click", () => navigate(b.dataset.view === "app" && state.temporary ? "#chat/temporary" : hashOf(b.dataset.view, b.dataset.view === "app" ? state.key : "")));
}

$("login-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  $("login-error").textContent = "";
  try {
    await API.login($("password").value);
    $("password").value = "";
    await boot();
  } catch (err) {
    $("login-error").textContent = err.message;
    $("password").setAttribute("aria-invalid", "true");
  }
});
$("logout").addEventListener("click", async () => {
  $("logout").hidden = true;
  await API.logout().catch(() => {});
  closeChat();
  state.key = "";
  boot();
});

// ---- phone menu -----------------------------------------------------------
// Below 720 px the pages are a drop-down behind one button that names the
// page shown (the CSS hides it on wider screens and with the nav).
function setMenu(open) {
  $("nav").classList.toggle("open", open);
  $("menu").setAttribute("aria-expanded", String(open));
}
$("menu").addEventListener("click", () => setMenu(!$("nav").classList.contains("open")));
$("nav").addEventListener("click", (e) => { if (e.target.closest("button")) setMenu(false); });
document.addEventListener("keydown", (e) => { if (e.key === "Escape") setMenu(false); });
document.addEventListener("click", (e) => { if (!e.target.closest("#nav, #menu")) setMenu(false); });
const syncMenu = () => { $("menu-label").textContent = $("nav").querySelector("button.active")?.textContent || "Menu"; };
new MutationObserver(syncMenu).observe($("nav"), { subtree: true, attributes: true, attributeFilter: ["class"] });

// ---- conversations --------------------------------------------------------
let searchTimer = 0;
$("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(loadSessions, 250);
});

async function loadSessions() {
  let data;
  try { data = await API.listSessions($("search").value.trim()); } catch (e) { if (e.status === 401) return boot(); throw e; }
  const ul = $("sessions");
  ul.replaceChildren();
  for (const s of data.sessions) {
    const li = el("li");
    const b = el("button", "session" + (s.key === state.key ? " active" : ""));
    b.type = "button";
    b.dataset.key = s.key;
    const badge = el("span", "ch-icon", BADGES[s.channel] || s.channel.slice(0, 2).toUpperCase());
    badge.dataset.ch = s.channel;
    badge.title = s.channel;
    b.append(badge);
    const text = el("span", "session-text");
    text.append(el("span", "session-title", s.title), el("span", "session-meta", `${s.channel} · ${when(s.updatedAt)}`));
    b.append(text);
    b.addEventListener("click", () => navigate(hashOf("app", s.key)));
    li.append(b);
    ul.append(li);
  }
  $("sessions-empty").hidden = data.sessions.length > 0;
}

function closeChat() {
  if (state.chat) state.chat.close();
  state.chat = null;
  $("conn").textContent = "";
}

function showPane() {
  $("app").classList.add("show-pane");
  $("back").hidden = false;
}

// hidePane closes the conversation: the chats list alone (on a phone).
function hidePane() {
  closeChat();
  state.key = "";
  state.temporary = false;
  $("app").classList.remove("show-pane");
  $("back").hidden = true;
  $("pane").classList.remove("temporary");
  $("pane-title").textContent = "Pick a conversation";
  $("history").replaceChildren();
  $("composer").hidden = $("readonly").hidden = $("temp-toggle").hidden = $("rename-form").hidden = true;
  $("rename").hidden = $("delete").hidden = true;
  for (const b of document.querySelectorAll(".session")) b.classList.remove("active");
}

// ← on a phone: back to the list, as the browser's Back does when the
// conversation was opened from it.
$("back").addEventListener("click", () => {
  if (history.state?.workbench) history.back(); else navigate("#chats", true);
});

async function openSession(key, fresh = false) {
  if (state.key !== key) closeChat();
  state.key = key;
  state.temporary = false;
  $("pane").classList.remove("temporary");
  $("temp-toggle").hidden = !fresh;
  $("temporary").checked = false;
  $("rename-form").hidden = true;
  $("delete").textContent = "Delete";
  for (const b of document.querySelectorAll(".session")) b.classList.toggle("active", b.dataset.key === key);
  showPane();
  let data = { session: { key, channel: "web", chatId: key.slice(4), title: "New conversation", chatable: true }, messages: [] };
  if (!fresh) {
    // Not stored (yet): a new web conversation, as + New starts one.
    try { data = await API.getSession(key); } catch (e) { if (e.status !== 404) { $("history").replaceChildren(el("p", "field-error pad", e.message)); return; } fresh = key.startsWith("web:"); }
    if (state.key !== key) return; // another was opened meanwhile
    $("temp-toggle").hidden = !fresh;
  }
  state.info = data.session;
  $("pane-title").textContent = data.session.title;
  $("rename").hidden = fresh;
  $("delete").hidden = fresh;
  renderHistory(data.messages);
  const chatable = data.session.chatable;
  $("composer").hidden = !chatable;
  $("readonly").hidden = chatable;
  if (chatable && !state.chat) connectChat(data.session.chatId);
}

function connectChat(chatId) {
  state.chat = new Chat(chatId, { status: (s) => { $("conn").textContent = s; }, frame: onFrame }, state.temporary);
}

$("new-topic").addEventListener("click", () => {
  const key = "web:" + newChatId();
  history.pushState({ workbench: true }, "", hashOf("app", key));
  state.shown = "app " + key;
  for (const p of Object.keys(PAGES)) $(p).hidden = p !== "app";
  openSession(key, true);
});

// A new chat may be made temporary until its first message: the socket is
// opened again as a temporary chat under a new id.
$("temporary").addEventListener("change", () => {
  closeChat();
  state.temporary = $("temporary").checked;
  const chatId = newChatId();
  state.key = "web:" + chatId;
  // A temporary chat has no address of its own: reloaded, it is gone.
  const hash = state.temporary ? "#chat/temporary" : hashOf("app", state.key);
  history.replaceState(history.state, "", hash);
  state.shown = "app " + parseRoute(hash).key;
  $("pane-title").textContent = state.temporary ? "Temporary chat" : "New conversation";
  $("pane").classList.toggle("temporary", state.temporary);
  $("history").replaceChildren(el("p", "muted pad", state.temporary
    ? "Temporary chat: the agent answers with its tools as usual, but nothing of this chat is stored, and it is gone when you close or reload the page."
    : ""));
  connectChat(chatId);
});

// ---- history --------------------------------------------------------------
function bubble(role, html) {
  const b = el("div", "msg " + (role === "user" ? "user" : "bot"));
  b.innerHTML = html; // sanitised on the server (goldmark + bluemonday)
  return b;
}

function renderHistory(messages) {
  const h = $("history");
  h.replaceChildren();
  state.streaming.clear();
  state.activity = null;
  const calls = new Map();
  for (const m of messages) {
    if (m.role === "user" || m.role === "assistant") {
      if (m.html) h.append(bubble(m.role, m.html));
      for (const tc of m.toolCalls || []) {
        const d = el("details", "tool");
        d.dataset.call = tc.id;
        d.append(el("summary", "", "Tool call · " + tc.name), el("pre", "args", prettyJSON(tc.arguments)));
        h.append(d);
        calls.set(tc.id, d);
      }
    } else if (m.role === "tool") {
      const d = calls.get(m.toolCallId) || h.appendChild(el("details", "tool"));
      const out = el("pre", "result", m.text);
      d.append(out);
      if (m.truncated) {
        const more = el("button", "link", `show all (${m.length} characters)`);
        more.type = "button";
        more.addEventListener("click", async () => {
          const full = await API.api("GET", `/api/sessions/${encodeURIComponent(state.key)}?full=${encodeURIComponent(m.toolCallId)}`);
          const t = full.messages.find((x) => x.role === "tool" && x.toolCallId === m.toolCallId);
          if (t) out.textContent = t.text;
          more.remove();
        });
        d.append(more);
      }
    }
  }
  h.scrollTop = h.scrollHeight;
}

function prettyJSON(s) {
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch { return s || ""; }
}

// ---- live chat ------------------------------------------------------------
function onFrame(f) {
  const h = $("history");
  $("typing")?.remove();
  if (f.type === "typing") {
    const dots = el("div", "msg bot typing", "…");
    dots.id = "typing";
    h.append(dots);
  } else if (f.type === "message" || f.type === "edit") {
    if (f.text.startsWith("🔧 ")) {
      // A tool call as it happens: its line in the activity view.
      if (!state.activity) {
        state.activity = el("details", "tool live");
        state.activity.open = true;
        state.activity.append(el("summary", "", "Activity"));
        h.append(state.activity);
      }
      let line = state.streaming.get(f.id);
      if (!line) { line = el("pre", "args"); state.streaming.set(f.id, line); state.activity.append(line); }
      line.textContent = f.text.replace(/^🔧 /, "Tool call · ");
    } else {
      let b = state.streaming.get(f.id);
      if (!b) { b = el("div", "msg bot streaming"); state.streaming.set(f.id, b); h.append(b); }
      const approval = APPROVAL.exec(f.text);
      if (approval) showApproval(b, f.text, approval[1]); else b.textContent = f.text;
    }
    if (f.final && !state.temporary) scheduleReload();
  } else if (f.type === "error") {
    h.append(el("div", "msg error", f.text));
  }
  h.scrollTop = h.scrollHeight;
}

// An approval request the gateway posts to this chat (tools/approval): not
// stored with the conversation, so it is rendered here, with the buttons
// its text speaks of (the answer goes where the channels page sends it).
const APPROVAL = /^⚠️ Approval needed[\s\S]*`\/deny ([A-Za-z0-9_-]+)`/;
const DECISIONS = [["Allow once", "once", "once", "Allowed once."], ["Always allow", "always", "always", "Allowed, now and from now on."], ["Deny", "deny", "danger deny", "Denied."]];

function showApproval(b, text, id) {
  if (b.dataset.approval === id) return; // an edit repeating it
  b.dataset.approval = id;
  b.className = "msg bot approval";
  b.textContent = text;
  const row = el("div", "approval-actions");
  for (const [label, decision, cls, done] of DECISIONS) {
    const btn = el("button", cls, label);
    btn.type = "button";
    btn.addEventListener("click", async () => {
      for (const x of row.querySelectorAll("button")) x.disabled = true;
      try {
        await API.answerApproval(id, decision);
        row.replaceChildren(el("span", "muted", done));
      } catch (e) {
        row.replaceChildren(el("span", "field-error", e.message));
      }
    });
    row.append(btn);
  }
  API.render(text).then((r) => { b.innerHTML = r.html; }, () => {}).finally(() => b.append(row));
}

// Once an answer is complete, show the stored turn: Markdown rendered on
// the server, tool calls with their results. The gateway sends the answer
// before it saves the turn, so on a busy gateway or a slow disk the turn
// may not be stored yet: until the stored conversation holds every message
// this page sent, keep the live view and look again later (0.4 s, doubling,
// about 25 s in all).
function scheduleReload(attempt = 0) {
  clearTimeout(state.reloadTimer);
  const key = state.key;
  state.reloadTimer = setTimeout(async () => {
    if (!key || state.key !== key) return;
    const sent = document.querySelectorAll("#history .msg.user").length;
    let stored = -1;
    try {
      const data = await API.getSession(key);
      stored = data.messages.filter((m) => m.role === "user").length;
    } catch (e) {
      if (e.status !== 404) return;
    }
    if (state.key !== key) return;
    if (stored < sent && attempt < 6) return scheduleReload(attempt + 1);
    if (stored >= sent) await openSession(key);
    await loadSessions();
  }, 400 * 2 ** attempt);
}

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("input").value.trim();
  if (!text || !state.chat) return;
  if (!state.chat.send(text)) { $("history").append(el("div", "msg error", "not connected yet")); return; }
  const b = el("div", "msg user");
  b.textContent = text;
  $("history").append(b);
  $("input").value = "";
  $("temp-toggle").hidden = true; // the kind of chat is fixed once it started
  if (!state.temporary) { $("rename").hidden = false; $("delete").hidden = false; }
});
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit(); }
});
$("stop").addEventListener("click", () => state.chat && state.chat.send("/stop"));

// ---- rename / delete ------------------------------------------------------
$("rename").addEventListener("click", () => {
  $("rename-form").hidden = false;
  $("rename-input").value = state.info ? state.info.title : "";
  $("rename-input").focus();
});
$("rename-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  $("rename-error").textContent = "";
  try {
    const r = await API.renameSession(state.key, $("rename-input").value);
    state.info = r.session;
    $("pane-title").textContent = r.session.title;
    $("rename-form").hidden = true;
    await loadSessions();
  } catch (err) {
    $("rename-error").textContent = (err.path ? err.path + ": " : "") + err.message;
  }
});
$("delete").addEventListener("click", async () => {
  // Two steps instead of confirm(): the second click deletes.
  if ($("delete").textContent === "Delete") { $("delete").textContent = "Confirm delete"; return; }
  try {
    await API.deleteSession(state.key);
  } catch (err) {
    $("delete").textContent = "Delete";
    $("history").append(el("div", "msg error", err.message));
    return;
  }
  $("delete").textContent = "Delete";
  await navigate("#chats", true);
});

boot();
