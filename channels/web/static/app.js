"use strict";
// nanobot web chat: one WebSocket, replies streamed as in-place edits.
(() => {
  const log = document.getElementById("log");
  const form = document.getElementById("form");
  const input = document.getElementById("input");
  const status = document.getElementById("status");
  const auth = document.getElementById("auth");
  const tokenInput = document.getElementById("token");

  let chat = localStorage.getItem("nanobot.chat");
  if (!chat) {
    const raw = new Uint8Array(12);
    crypto.getRandomValues(raw);
    chat = Array.from(raw, (b) => b.toString(16).padStart(2, "0")).join("");
    localStorage.setItem("nanobot.chat", chat);
  }
  let ws = null;
  let retry = 500;
  const bubbles = new Map(); // server message id -> element
  let typing = null;

  function escapeHTML(s) {
    return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  }

  // A small Markdown subset: fenced code, inline code, bold, italic, links.
  function render(md) {
    const parts = md.split(/```/);
    return parts.map((part, i) => {
      if (i % 2 === 1) {
        const nl = part.indexOf("\n");
        const body = nl >= 0 ? part.slice(nl + 1) : part;
        return "<pre><code>" + escapeHTML(body.replace(/\n$/, "")) + "</code></pre>";
      }
      let h = escapeHTML(part);
      h = h.replace(/`([^`\n]+)`/g, "<code>$1</code>");
      h = h.replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>");
      h = h.replace(/(^|[^*\w])\*([^*\n]+)\*/g, "$1<em>$2</em>");
      h = h.replace(/\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)/g, '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
      return h;
    }).join("");
  }

  function add(cls, text, asHTML) {
    const el = document.createElement("div");
    el.className = "msg " + cls;
    if (asHTML) el.innerHTML = render(text); else el.textContent = text;
    log.appendChild(el);
    log.scrollTop = log.scrollHeight;
    return el;
  }

  function clearTyping() {
    if (typing) { typing.remove(); typing = null; }
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    ws = new WebSocket(proto + "//" + location.host + location.pathname.replace(/[^/]*$/, "") + "ws");
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: "auth", chat, token: localStorage.getItem("nanobot.token") || "" }));
    };
    ws.onmessage = (ev) => {
      const f = JSON.parse(ev.data);
      switch (f.type) {
        case "hello":
          status.textContent = "connected";
          retry = 500;
          break;
        case "typing":
          if (!typing) { typing = add("bot typing", ""); }
          break;
        case "message": {
          clearTyping();
          const cls = f.text.startsWith("🔧 ") ? "hint" : "bot";
          bubbles.set(f.id, add(cls, f.text, cls === "bot"));
          break;
        }
        case "edit": {
          clearTyping();
          const el = bubbles.get(f.id) || add("bot", "", true);
          bubbles.set(f.id, el);
          el.innerHTML = render(f.text);
          log.scrollTop = log.scrollHeight;
          break;
        }
        case "error":
          clearTyping();
          add("error", f.text);
          if (/token/.test(f.text)) { auth.showModal(); }
          break;
      }
    };
    ws.onclose = () => {
      status.textContent = "disconnected — reconnecting…";
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 10000);
    };
  }

  function send(text) {
    if (!ws || ws.readyState !== WebSocket.OPEN) { add("error", "not connected yet"); return; }
    add("me", text);
    ws.send(JSON.stringify({ type: "message", text }));
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    input.style.height = "";
    send(text);
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
  input.addEventListener("input", () => {
    input.style.height = "";
    input.style.height = Math.min(input.scrollHeight, 200) + "px";
  });
  document.getElementById("new").addEventListener("click", () => send("/new"));
  document.getElementById("authform").addEventListener("submit", () => {
    localStorage.setItem("nanobot.token", tokenInput.value.trim());
    if (ws) ws.close();
  });
  connect();
})();
