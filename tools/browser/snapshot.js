// The browser tool's snapshot: what a reader of the page sees, in reading
// order, as short lines. Every interactive element gets a reference (e1,
// e2, ...) in the attribute data-nanobot-ref, which click and type look
// up; a new snapshot renumbers. max caps the text in characters.
(max) => {
  const ATTR = "data-nanobot-ref";
  for (const el of document.querySelectorAll("[" + ATTR + "]")) el.removeAttribute(ATTR);
  const ROLES = new Set(["button", "link", "checkbox", "radio", "tab", "menuitem", "menuitemcheckbox",
    "menuitemradio", "option", "switch", "textbox", "searchbox", "combobox", "slider", "treeitem"]);
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "svg"]);
  const out = [];
  let n = 0, size = 0, truncated = false, buf = "";

  const clean = (s, limit) => {
    s = (s || "").replace(/\s+/g, " ").trim();
    return s.length > limit ? s.slice(0, limit) + "…" : s;
  };
  const push = (line) => {
    if (!line || truncated) return;
    if (size + line.length + 1 > max) { truncated = true; return; }
    out.push(line);
    size += line.length + 1;
  };
  const flush = () => {
    const line = clean(buf, 4000);
    buf = "";
    if (line && line !== "-" && !/^#+$/.test(line)) push(line);
  };
  const role = (el) => {
    const tag = el.tagName;
    const type = (el.getAttribute("type") || "").toLowerCase();
    if (tag === "A" && el.hasAttribute("href")) return "link";
    if (tag === "BUTTON" || tag === "SUMMARY") return "button";
    if (tag === "INPUT") {
      if (type === "hidden") return null;
      if (["button", "submit", "reset", "image"].includes(type)) return "button";
      if (type === "checkbox" || type === "radio") return type;
      if (type === "range") return "slider";
      if (type === "file") return "file";
      return "textbox";
    }
    if (tag === "TEXTAREA") return "textbox";
    if (tag === "SELECT") return "combobox";
    const r = (el.getAttribute("role") || "").toLowerCase();
    if (ROLES.has(r)) return r;
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return "textbox";
    if (el.hasAttribute("onclick")) return "clickable";
    return null;
  };
  const nameOf = (el) => {
    let s = el.getAttribute("aria-label");
    const by = el.getAttribute("aria-labelledby");
    if (!s && by) s = by.split(/\s+/).map((id) => (document.getElementById(id) || {}).innerText || "").join(" ");
    if (!s && el.labels && el.labels.length) s = Array.from(el.labels).map((l) => l.innerText).join(" ");
    if (!s && el.tagName === "INPUT" && ["button", "submit", "reset"].includes(el.type)) s = el.value || el.type;
    if (!s && !["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName)) s = el.innerText;
    if (!s) { const img = el.querySelector("img[alt]"); if (img) s = img.alt; }
    if (!s) s = el.getAttribute("title") || el.getAttribute("placeholder") || el.getAttribute("name") || "";
    return clean(s, 80);
  };
  const describe = (el, r, ref) => {
    let d = "[" + ref + " " + r;
    const name = nameOf(el);
    if (name) d += " " + JSON.stringify(name);
    if (r === "link") d += " -> " + clean(el.getAttribute("href"), 100);
    if (r === "textbox" || r === "searchbox") {
      const v = el.isContentEditable ? el.innerText : el.value;
      if (el.type === "password") d += v ? " value=(hidden)" : "";
      else if (v) d += " value=" + JSON.stringify(clean(v, 80));
      const ph = el.getAttribute("placeholder");
      if (!v && ph && ph !== name) d += " placeholder=" + JSON.stringify(clean(ph, 60));
    }
    if ((r === "checkbox" || r === "radio" || r === "switch") && (el.checked || el.getAttribute("aria-checked") === "true")) d += " checked";
    if (r === "combobox" && el.tagName === "SELECT") {
      const sel = el.selectedOptions && el.selectedOptions[0];
      if (sel) d += " selected=" + JSON.stringify(clean(sel.text, 60));
      d += " options=" + JSON.stringify(Array.from(el.options).slice(0, 12).map((o) => clean(o.text, 30)).join(" | "));
    }
    if (el.disabled || el.getAttribute("aria-disabled") === "true") d += " disabled";
    return d + "]";
  };
  const walk = (node) => {
    if (truncated) return;
    if (node.nodeType === Node.TEXT_NODE) { buf += node.nodeValue; return; }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const el = node;
    if (SKIP.has(el.tagName) || el.getAttribute("aria-hidden") === "true") return;
    const st = getComputedStyle(el);
    const contents = st.display === "contents";
    if (!contents && el.checkVisibility && !el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return;
    const block = !contents && !st.display.startsWith("inline");
    const r = role(el);
    if (r) {
      const box = el.getBoundingClientRect();
      if (!contents && box.width === 0 && box.height === 0) return;
      const ref = "e" + (++n);
      el.setAttribute(ATTR, ref);
      if (block) { flush(); push(describe(el, r, ref)); } else buf += " " + describe(el, r, ref) + " ";
      return;
    }
    if (el.tagName === "IFRAME") { flush(); push("[frame " + clean(el.getAttribute("src") || "", 100) + " (not included)]"); return; }
    if (el.tagName === "IMG") { const alt = clean(el.getAttribute("alt"), 80); if (alt) buf += " [image " + JSON.stringify(alt) + "] "; return; }
    const h = /^H([1-6])$/.exec(el.tagName);
    const level = h ? +h[1] : (el.getAttribute("role") === "heading" ? +(el.getAttribute("aria-level") || 2) : 0);
    if (level || el.tagName === "LI" || block) {
      flush();
      if (level) buf = "#".repeat(level) + " ";
      else if (el.tagName === "LI") buf = "- ";
      for (const c of el.childNodes) walk(c);
      if (el.shadowRoot) for (const c of el.shadowRoot.childNodes) walk(c);
      flush();
      return;
    }
    for (const c of el.childNodes) walk(c);
    if (el.shadowRoot) for (const c of el.shadowRoot.childNodes) walk(c);
  };
  if (document.body) walk(document.body);
  flush();
  const doc = document.documentElement;
  return {
    title: document.title, url: location.href, text: out.join("\n"), truncated, refs: n,
    scrollY: Math.round(window.scrollY), height: Math.round(doc ? doc.scrollHeight : 0), viewport: window.innerHeight,
  };
}
