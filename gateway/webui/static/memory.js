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
    text.append(el("strong", "", s.name), el("span", "muted", ` · ${s.source}${s.always ? " · always on" : ""}`), el("br"), el("span", "small", s.description));
    if (s.requires.length) {
      const req = el("span", "reqs");
      for (const r of s.requires) req.append(el("span", "req " + (s.missing.includes(r) ? "missing" : "met"), r));
      text.append(el("br"), req);
    }
    li.append(text, el("span", "badge " + (s.available ? "ok" : "bad"), s.available ? "ready" : "missing " + s.missing.length));
    ul.append(li);
  }
  const probs = $("skill-problems");
  probs.replaceChildren();
  for (const p of sk.problems) probs.append(el("li", "row field-error", `${p.path}: ${p.error}`));
}
