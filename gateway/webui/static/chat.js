// The live chat: the web channel's WebSocket (/ws), one chat id per web
// conversation. Replies stream as "message" then "edit" frames; tool calls
// arrive as one-line hints ("🔧 name: args").
// A temporary chat is never stored: the gateway keeps its conversation in
// memory while the tab is open.
export class Chat {
  constructor(chatId, handlers, temporary = false) {
    this.chatId = chatId;
    this.h = handlers;
    this.temporary = temporary;
    this.retry = 500;
    this.closed = false;
    this.connect();
  }

  connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${proto}//${location.host}/ws`);
    this.ws = ws;
    ws.onopen = () => ws.send(JSON.stringify({ type: "auth", chat: this.chatId, token: localStorage.getItem("nanobot.token") || "", temporary: this.temporary }));
    ws.onmessage = (ev) => {
      let f;
      try { f = JSON.parse(ev.data); } catch { return; }
      if (f.type === "hello") { this.retry = 500; this.h.status("connected"); return; }
      this.h.frame(f);
    };
    ws.onclose = () => {
      if (this.closed) return;
      this.h.status("reconnecting…");
      setTimeout(() => { if (!this.closed) this.connect(); }, this.retry);
      this.retry = Math.min(this.retry * 2, 10000);
    };
  }

  send(text) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify({ type: "message", text }));
    return true;
  }

  close() {
    this.closed = true;
    if (this.ws) this.ws.close();
  }
}

export function newChatId() {
  const raw = new Uint8Array(12);
  crypto.getRandomValues(raw);
  return Array.from(raw, (b) => b.toString(16).padStart(2, "0")).join("");
}
