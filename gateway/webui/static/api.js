// The workbench's JSON API: every state change carries the CSRF token.
let csrf = "";

export class APIError extends Error {
  constructor(status, body) {
    super(body.error || `HTTP ${status}`);
    this.status = status;
    this.path = body.path || "";
    this.body = body;
  }
}

export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET") headers["X-CSRF-Token"] = csrf;
  const res = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new APIError(res.status, data);
  if (data.csrf) csrf = data.csrf;
  return data;
}

export const me = () => api("GET", "/api/me");
export const login = (password) => api("POST", "/api/login", { password });
export const loginWithCode = (code) => api("POST", "/api/login", { code });
export const logout = () => api("POST", "/api/logout");
export const listSessions = (q) => api("GET", "/api/sessions" + (q ? "?q=" + encodeURIComponent(q) : ""));
export const getSession = (key) => api("GET", "/api/sessions/" + encodeURIComponent(key));
export const renameSession = (key, title) => api("PATCH", "/api/sessions/" + encodeURIComponent(key), { title });
export const deleteSession = (key) => api("DELETE", "/api/sessions/" + encodeURIComponent(key));
export const channels = () => api("GET", "/api/channels");
export const decidePairing = (code, verb) => api("POST", `/api/pairing/${encodeURIComponent(code)}/${verb}`);
export const revokePairing = (channel, sender) => api("DELETE", `/api/pairing/approved/${encodeURIComponent(channel)}/${encodeURIComponent(sender)}`);
export const status = () => api("GET", "/api/status");
export const approvals = () => api("GET", "/api/approvals");
export const answerApproval = (id, decision) => api("POST", `/api/approvals/${encodeURIComponent(id)}`, { decision });
export const goals = () => api("GET", "/api/goals");
export const cancelGoal = (id) => api("POST", `/api/goals/${encodeURIComponent(id)}/cancel`);
export const jobs = () => api("GET", "/api/cron");
export const addJob = (job) => api("POST", "/api/cron", job);
export const setJobEnabled = (id, enabled) => api("PATCH", `/api/cron/${encodeURIComponent(id)}`, { enabled });
export const runJob = (id) => api("POST", `/api/cron/${encodeURIComponent(id)}/run`);
export const deleteJob = (id) => api("DELETE", `/api/cron/${encodeURIComponent(id)}`);
export const heartbeat = () => api("GET", "/api/heartbeat");
export const saveHeartbeat = (content) => api("PUT", "/api/heartbeat", { content });
export const settings = () => api("GET", "/api/settings");
export const saveSettings = (changes) => api("PATCH", "/api/settings", { changes });
export const setup = () => api("GET", "/api/setup");
export const setupCheck = (body) => api("POST", "/api/setup/check", body);
export const setPassword = (password) => api("POST", "/api/setup/password", { password });
export const memory = () => api("GET", "/api/memory");
export const saveMemory = (content) => api("PUT", "/api/memory", { content });
export const skills = () => api("GET", "/api/skills");
export const searchSkills = (q) => api("GET", "/api/skills/registry?q=" + encodeURIComponent(q));
export const installSkill = (name, version) => api("POST", "/api/skills/install", { name, version });
export const removeSkill = (name) => api("DELETE", `/api/skills/${encodeURIComponent(name)}`);
export const render = (text) => api("POST", "/api/render", { text });
export const logs = (level) => api("GET", "/api/logs?n=500&level=" + encodeURIComponent(level));
