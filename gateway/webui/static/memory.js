// The memory page: MEMORY.md against its cap, and the skills with their
// requirements.
import * as API from "./api.js";

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function showSize(m) {
  $("mem-size").textContent = `About ${m.tokens} of ${m.capTokens} tokens.` +
    (m.overCap ? " Over the cap: the next consolidation moves the oldest sections to HISTORY.md." : "");
  $("mem-size").classList.toggle("field-error", m.overCap);
}

$("mem-save").addEventListener("click", async () => {
  $("mem-error").textContent = "";
  $("mem-saved").textContent = "";
  try {
    showSize(await API.saveMemory($("mem-content").value));
    $("mem-saved").textContent = "saved";
  } catch (e) {
    $("mem-error").textContent = (e.path ? e.path + ": " : "") + e.message;
  }
});

function skillButton(text, cls, fn) {
  const b = el("button", cls, text);
  b.type = "button";
  b.addEventListener("click", async () => {
    b.disabled = true;
    $("skill-error").textContent = "";
    try { await fn(); } catch (e) { $("skill-error").textContent = e.message; b.disabled = false; return; }
    await showMemory();
  });
  return b;
}

$("skill-search").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("skill-error").textContent = "";
  const ul = $("skill-results");
  ul.replaceChildren();
  try {
    const data = await API.searchSkills($("skill-search").elements.q.value);
    for (const r of data.results) {
      const li = el("li", "row result");
      li.dataset.skill = r.name;
      const text = el("span", "row-text");
      text.append(el("strong", "", r.title || r.name), el("span", "muted", ` · ${r.name} ${r.version} · ${r.registry}`), el("br"), el("span", "small", r.summary));
      li.append(text, skillButton("Install", "install", async () => {
        const res = await API.installSkill(r.name, r.version);
        li.remove();
        $("skill-error").textContent = res.suspicious
          ? `${r.name} is installed, but ${r.registry} flags it as suspicious: read its files before you rely on it.` : "";
        return res;
      }));
      ul.append(li);
    }
    if (!data.results.length) ul.append(el("li", "muted", "Nothing found."));
  } catch (e) {
    $("skill-error").textContent = e.message;
  }
});

export async function showMemory() {
  const [m, sk] = await Promise.all([API.memory(), API.skills()]);
  $("mem-content").value = m.content;
  showSize(m);
  const ul = $("skill-list");
  ul.replaceChildren();
  for (const s of sk.skills) {
    const li = el("li", "row skill" + (s.available ? "" : " unavailable"));
    li.dataset.skill = s.name;
    const text = el("span", "row-text");
    text.append(el("strong", "", s.name), el("span", "muted", ` · ${s.source}${s.version ? " " + s.version : ""}${s.always ? " · always on" : ""}`), el("br"), el("span", "small", s.description));
    if (s.requires.length) {
      const req = el("span", "reqs");
      for (const r of s.requires) req.append(el("span", "req " + (s.missing.includes(r) ? "missing" : "met"), r));
      text.append(el("br"), req);
    }
    li.append(text, el("span", "badge " + (s.available ? "ok" : "bad"), s.available ? "ready" : "missing " + s.missing.length));
    if (s.source === "registry") li.append(skillButton("Remove", "danger remove", () => API.removeSkill(s.name)));
    ul.append(li);
  }
  const probs = $("skill-problems");
  probs.replaceChildren();
  for (const p of sk.problems) probs.append(el("li", "row field-error", `${p.path}: ${p.error}`));
}
