// A real Socket.IO server (the npm socket.io package) in front of the Go
// fake Mochat: it accepts a client whose auth token is right, answers
// Mochat's subscribe calls (reading the sessions' events from the fake's
// HTTP API), and emits what the Go test writes on stdin, one JSON object a
// line: {"room": "...", "event": "...", "payload": {...}} or
// {"cmd": "disconnect"}. It prints "listening PORT" when ready and one
// line per client action ("connect", "subscribe-sessions [...]", ...).
const path = require("path");
const http = require("http");
const readline = require("readline");
const { Server } = require(path.join(process.env.NODE_MODULES, "socket.io"));

const [token, fakeBase, sioPath] = process.argv.slice(2);
const httpServer = http.createServer();
const io = new Server(httpServer, { path: sioPath, transports: ["websocket"], pingInterval: 500, pingTimeout: 1000 });
const say = (...a) => process.stdout.write(a.join(" ") + "\n");

io.use((socket, next) => {
  if (socket.handshake.auth && socket.handshake.auth.token === token) return next();
  say("refused");
  next(new Error("invalid claw token"));
});

io.on("connection", (socket) => {
  say("connect");
  socket.on("com.claw.im.subscribeSessions", async (p, ack) => {
    try {
      const data = [];
      for (const id of p.sessionIds || []) {
        const cursor = (p.cursors && p.cursors[id]) || 0;
        const res = await fetch(fakeBase + "/api/claw/sessions/watch", {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-Claw-Token": token },
          body: JSON.stringify({ sessionId: id, cursor, timeoutMs: 0, limit: p.limit || 100 }),
        });
        const env = await res.json();
        if (env.code !== 200) return ack({ result: false, message: env.message });
        data.push(env.data);
        socket.join("session:" + id);
      }
      say("subscribe-sessions", JSON.stringify(p.sessionIds || []));
      ack({ result: true, data });
    } catch (e) {
      ack({ result: false, message: String(e) });
    }
  });
  socket.on("com.claw.im.subscribePanels", (p, ack) => {
    for (const id of p.panelIds || []) socket.join("panel:" + id);
    say("subscribe-panels", JSON.stringify(p.panelIds || []));
    ack({ result: true });
  });
  socket.on("disconnect", () => say("disconnect"));
});

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.cmd === "disconnect") io.disconnectSockets(true);
  else io.to(m.room).emit(m.event, m.payload);
});
process.stdin.on("end", () => process.exit(0));

httpServer.listen(0, "127.0.0.1", () => say("listening", httpServer.address().port));
