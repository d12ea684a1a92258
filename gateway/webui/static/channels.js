// The channels page: commands waiting for the owner's approval, health of
// each channel, pairing requests, approved senders.
import * as API from "./api.js";

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function button(text, cls, onClick) {
  const b = el("button", cls, text);
  b.type = "button";
  b.addEventListener("click", async () => {
    b.disabled = true;
    $("channels-error").textContent = "";
    try { await onClick(); } catch (e) { $("channels-error").textContent = e.message; b.disabled = false; return; }
    await showChannels();
  });
  return b;
}

const STATE_TEXT = { connected: "connected", connecting: "connecting", starting: "starting", reconnecting: "reconnecting", failed: "failed", stopped: "stopped" };

function showApprovals(data) {
  $("approvals").hidden = !data.enabled;
  const list = $("approval-list");
  list.replaceChildren();
  for (const r of data.pending) {
    const li = el("li", "row approval");
    li.dataset.id = r.id;
    const text = el("span", "row-text");
    const where = [r.tool, r.sessionKey, r.reasons && r.reasons.join(", ")].filter(Boolean).join(" · ");
    text.append(el("code", "", r.action), el("span", "muted", " " + where));
    li.append(text,
      button("Allow once", "approve once", () => API.answerApproval(r.id, "once")),
      button("Always allow", "always", () => API.answerApproval(r.id, "always")),
      button("Deny", "danger deny", () => API.answerApproval(r.id, "deny")));
    list.append(li);
  }
  $("approvals-empty").hidden = data.pending.length > 0;
  const log = $("approval-log-list");
  log.replaceChildren();
  for (const e of data.recent) {
    if (e.outcome === "asked") continue;
    const li = el("li", "row");
    const when = new Date(e.time).toLocaleString();
    li.append(el("span", "row-text", `${when} · ${e.outcome}${e.by ? " by " + e.by : ""} · ${e.action}`));
    log.append(li);
  }
}

function showPlugins(st) {
  const list = $("plugin-list");
  list.replaceChildren();
  for (const m of st.mcpServers || []) {
    const li = el("li", "row plugin");
    li.dataset.plugin = "mcp:" + m.name;
    li.append(el("span", "dot " + (m.state === "connected" ? "connected" : "reconnecting")),
      el("span", "row-text", `MCP ${m.name} · ${m.state} · ${m.transport}, ${m.tools} tools${m.lastError ? " · " + m.lastError : ""}`));
    list.append(li);
  }
  for (const h of st.hooks || []) {
    const li = el("li", "row plugin");
    li.dataset.plugin = "hook:" + h.name;
    li.append(el("span", "row-text", `hook ${h.name} · ${h.kind} at ${(h.points || []).join(", ")} · on failure ${h.onFailure} · ${h.calls} calls, ${h.failures} failures`));
    list.append(li);
  }
  $("plugins").hidden = list.children.length === 0;
}

export async function showChannels() {
  const [data, approvals, st] = await Promise.all([API.channels(), API.approvals(), API.status().catch(() => ({}))]);
  showApprovals(approvals);
  showPlugins(st);
  keepApprovalsFresh();
  const list = $("channel-list");
  list.replaceChildren();
  for (const c of data.channels) {
    const li = el("li", "card");
    li.dataset.channel = c.name;
    const head = el("div", "card-head");
    head.append(el("span", "dot " + c.state), el("strong", "", c.name), el("span", "state", STATE_TEXT[c.state] || c.state));
    li.append(head);
    if (c.lastError) li.append(el("p", "last-error", c.lastError));
    if (c.restarts) li.append(el("p", "muted", `${c.restarts} restart${c.restarts === 1 ? "" : "s"}`));
    list.append(li);
  }
  if (!data.channels.length) list.append(el("li", "muted", "No channels run in this process."));

  const pending = $("pending-list");
  pending.replaceChildren();
  for (const p of data.pending) {
    const li = el("li", "row");
    li.dataset.code = p.code;
    const text = el("span", "row-text");
    text.append(el("strong", "", p.code), el("span", "muted", ` ${p.channel} · sender ${p.senderId}`));
    li.append(text,
      button("Approve", "approve", () => API.decidePairing(p.code, "approve")),
      button("Deny", "danger deny", () => API.decidePairing(p.code, "deny")));
    pending.append(li);
  }
  $("pending-empty").hidden = data.pending.length > 0;

  const approved = $("approved-list");
  approved.replaceChildren();
  for (const a of data.approved) {
    const li = el("li", "row");
    li.dataset.sender = a.channel + ":" + a.senderId;
    li.append(el("span", "row-text", `${a.channel} · ${a.senderId}`), button("Revoke", "danger revoke", () => API.revokePairing(a.channel, a.senderId)));
    approved.append(li);
  }
  $("approved-empty").hidden = data.approved.length > 0;
}

// While the channels page is shown, the approvals refresh every few
// seconds: a request is only useful if the owner sees it in time.
let approvalsTimer = 0;
function keepApprovalsFresh() {
  clearTimeout(approvalsTimer);
  approvalsTimer = setTimeout(async () => {
    if ($("channels-view").hidden) return; // showChannels starts it again
    if (!document.hidden) {
      try { showApprovals(await API.approvals()); } catch { /* shown at the next full refresh */ }
    }
    keepApprovalsFresh();
  }, 3000);
}
