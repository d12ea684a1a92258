// Finds the element with a snapshot reference, in the page or in an open
// shadow root, and readies it for an action: "click" scrolls it to the
// middle of the viewport and returns the point to click, and what is on
// top there when it is covered; "type" focuses it and selects its text, so
// typed keys replace it; "select" picks the option of a <select> whose
// text or value is text; "scroll" brings it into view.
(ref, action, text) => {
  const sel = '[data-nanobot-ref="' + ref + '"]';
  const find = (root) => {
    const el = root.querySelector(sel);
    if (el) return el;
    for (const host of root.querySelectorAll("*")) {
      if (host.shadowRoot) { const f = find(host.shadowRoot); if (f) return f; }
    }
    return null;
  };
  const el = find(document);
  if (!el) return { found: false };
  el.scrollIntoView({ block: "center", inline: "center" });
  const box = el.getBoundingClientRect();
  const res = { found: true, tag: el.tagName.toLowerCase(), x: box.left + box.width / 2, y: box.top + box.height / 2 };
  if (action === "click") {
    const top = document.elementFromPoint(res.x, res.y);
    if (top && top !== el && !el.contains(top) && !(top.shadowRoot && top.shadowRoot.contains(el))) {
      res.covered = (top.tagName.toLowerCase() + " " + (top.innerText || "").replace(/\s+/g, " ").trim()).slice(0, 80);
    }
  } else if (action === "type") {
    if (el.tagName === "SELECT") { res.select = true; return res; }
    el.focus();
    if (typeof el.select === "function") el.select();
    else if (el.isContentEditable) document.execCommand("selectAll");
    res.editable = el.isContentEditable || ["INPUT", "TEXTAREA"].includes(el.tagName);
  } else if (action === "select") {
    const want = (text || "").trim().toLowerCase();
    const opt = Array.from(el.options || []).find((o) => o.text.trim().toLowerCase() === want || o.value.toLowerCase() === want);
    if (!opt) return { found: true, tag: res.tag, noOption: true };
    el.value = opt.value;
    el.dispatchEvent(new Event("input", { bubbles: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    res.selected = opt.text.trim();
  }
  return res;
}
