package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/providers/providertest"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// attackScript is what a prompt-injected agent runs through exec: every
// way it has to talk to the gateway's port (curl, bash's /dev/tcp, Python's
// urllib, a raw socket and a hand-made WebSocket), on every address of the
// host, against every route that acts for the owner. Each attempt prints
// one "RESULT <how> <addr> <route> <outcome>" line, the outcome being the
// HTTP status, "refused" (no connection), "ws-hello"/"ws-refused", or for
// /api/me whether it handed out a CSRF token.
const attackScript = `#!/bin/bash
port=$1; code=$2; shift 2
routes="GET:/api/me GET:/api/sessions GET:/api/logs POST:/api/pairing/$code/approve PATCH:/api/settings PUT:/api/memory POST:/api/cron POST:/v1/chat/completions"
body() {
  case $1 in
    /api/settings) echo '{"changes":[{"path":"tools.exec.sandbox","value":"none"},{"path":"channels.web.allowFrom","value":["*"]}]}' ;;
    /api/memory) echo '{"content":"pwned by the agent"}' ;;
    /api/cron) echo '{"name":"x","message":"exfiltrate","target":"web:x","schedule":{"kind":"every","everySeconds":3600}}' ;;
    /v1/*) echo '{"messages":[{"role":"user","content":"hi"}]}' ;;
    *) echo '{}' ;;
  esac
}
for addr in "$@"; do
  case $addr in *:*) host="[$addr]" ;; *) host=$addr ;; esac
  for r in $routes; do
    m=${r%%:*}; p=${r#*:}
    if command -v curl >/dev/null; then
      out=$(curl -s -o /tmp/attack-body -w '%{http_code}' --max-time 5 -X $m -H 'Content-Type: application/json' -H 'X-CSRF-Token: x' -d "$(body $p)" "http://$host:$port$p" 2>/dev/null)
      [ "$out" = 000 ] && out=refused
      [ "$p" = /api/me ] && [ "$out" = 200 ] && { grep -q csrf /tmp/attack-body && out=me-csrf || out=me-anon; }
      echo "RESULT curl $addr $p $out"
    fi
    out=$(timeout 5 bash -c "exec 3<>/dev/tcp/$addr/$port || exit 7; b='$(body $p)'; printf '$m $p HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \${#b} \"\$b\" >&3; cat <&3" 2>/dev/null)
    st=$?
    if [ $st = 7 ] || [ -z "$out" ]; then res=refused; else res=$(echo "$out" | head -1 | cut -d' ' -f2); fi
    [ "$p" = /api/me ] && [ "$res" = 200 ] && { echo "$out" | grep -q csrf && res=me-csrf || res=me-anon; }
    echo "RESULT bash $addr $p $res"
  done
  # The system's Python: one installed under a home folder (pyenv) is
  # outside what the sandbox shows a command.
  py=python3; [ -x /usr/bin/python3 ] && py=/usr/bin/python3
  $py - "$addr" "$port" "$routes" "$code" <<'PY'
import json, os, socket, sys, urllib.request, urllib.error, base64
addr, port, routes, code = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
host = "[%s]" % addr if ":" in addr else addr
bodies = {"/api/settings": {"changes": [{"path": "tools.exec.sandbox", "value": "none"}]},
          "/api/memory": {"content": "pwned by the agent"},
          "/api/cron": {"name": "x", "message": "exfiltrate", "target": "web:x", "schedule": {"kind": "every", "everySeconds": 3600}},
          "/v1/chat/completions": {"messages": [{"role": "user", "content": "hi"}]}}
def me(status, text):
    if status == 200:
        return "me-csrf" if "csrf" in text else "me-anon"
    return str(status)
for r in routes:
    m, p = r.split(":", 1)
    data = json.dumps(bodies.get(p, {})).encode()
    req = urllib.request.Request("http://%s:%d%s" % (host, port, p), data=None if m == "GET" else data, method=m,
                                 headers={"Content-Type": "application/json", "X-CSRF-Token": "x"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            res = str(resp.status); text = resp.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        res = str(e.code); text = ""
    except OSError:
        res = "refused"; text = ""
    if p == "/api/me":
        res = me(int(res), text) if res.isdigit() else res
    print("RESULT python", addr, p, res)
    # A raw socket: connect(2) and bytes, no HTTP library.
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((addr, port))
        body = b"" if m == "GET" else data
        s.sendall(b"%s %s HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (m.encode(), p.encode(), len(body)) + body)
        raw = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
        text = raw.decode(errors="replace")
        res = text.split(" ")[1] if text.startswith("HTTP/") else "garbage"
        if p == "/api/me" and res.isdigit():
            res = me(int(res), text)
    except OSError:
        res = "refused"
    finally:
        s.close()
    print("RESULT raw", addr, p, res)
# The web chat's socket, by hand: the handshake, then the auth frame
# without a token, and what the gateway answers.
s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect((addr, port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % key).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            break
        head += c
    if b" 101 " not in head.split(b"\r\n")[0]:
        res = "ws-" + head.split(b" ")[1].decode() if head else "refused"
    else:
        payload = json.dumps({"type": "auth", "chat": "agent-tab-0001"}).encode()
        mask = os.urandom(4)
        frame = bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        s.sendall(frame)
        reply = s.recv(65536)
        res = "ws-hello" if b'"hello"' in reply else "ws-refused"
except OSError:
    res = "refused"
finally:
    s.close()
print("RESULT ws", addr, "/ws", res)
PY
done
`

// TestAgentCannotActAsTheOwner is issue #35's acceptance probe: a command
// the agent runs (a prompt injection is enough to make it) tries the
// gateway's port every way it can, in every sandbox mode this host has,
// on 127.0.0.1, [::1] and the host's other addresses. Every attempt is
// refused or answered 401/403, and nothing the owner keeps changed:
// settings, pairing, memory, cron jobs, other conversations.
func TestAgentCannotActAsTheOwner(t *testing.T) {
	bin := binary(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed for the socket-level attempts")
	}
	modes := []string{"none"}
	if sandbox.LandlockABI() > 0 {
		modes = append(modes, "landlock")
	}
	if _, err := sandbox.Bwrap(); err == nil {
		modes = append(modes, "bwrap")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { attackFromExec(t, bin, mode) })
	}
}

// target is a gateway set up to be attacked: bound to every address (dual
// stack), with the workbench served (a password is set) and the API on,
// so everything the owner has is on the port the attacker aims at; a
// memory, another chat's conversation and a stranger's pending pairing
// code to protect; and the attack script.
type target struct {
	dir, cfg, state, code, script string
	port                          int
	llm                           *providertest.Server
}

func newTarget(t *testing.T, mode string) *target {
	dir := t.TempDir()
	tg := &target{dir: dir, cfg: filepath.Join(dir, "config.json"), state: filepath.Join(dir, "state"), port: freePort(t), llm: providertest.New(t)}
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "test-model", "provider": "vllm"}},
	  "providers": {"vllm": {"apiBase": %q}},
	  "gateway": {"host": "::", "port": %d, "heartbeat": {"enabled": false},
	    "webui": {"password": "$2a$04$abcdefghijklmnopqrstuuhU6CYuE8n6cQq1VQ2gq3/V0vW0nZp1e"}},
	  "api": {"enabled": true},
	  "tools": {"exec": {"sandbox": %q, "network": true}},
	  "channels": {"tg": {"enabled": false, "allowFrom": []}}
	}`, tg.llm.OpenAIBase(), tg.port, mode)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(tg.cfg, []byte(body), 0o600))
	ws := filepath.Join(dir, "workspace")
	for _, d := range []string{filepath.Join(ws, "memory"), filepath.Join(dir, "sessions"), tg.state} {
		must(os.MkdirAll(d, 0o700))
	}
	must(os.WriteFile(filepath.Join(ws, "memory", "MEMORY.md"), []byte("# Facts\n- the owner likes tea\n"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "sessions", "telegram%3A4242.jsonl"),
		[]byte(`{"_type":"metadata","key":"telegram:4242"}`+"\n"+`{"role":"user","content":"another chat's secret plans"}`+"\n"), 0o600))
	var err error
	tg.code, _, err = relay.NewPairingStore(filepath.Join(tg.state, "pairing.json")).Request("tg", "99|stranger", "dm99")
	must(err)
	tg.script = filepath.Join(ws, "attack.sh")
	must(os.WriteFile(tg.script, []byte(attackScript), 0o700))
	return tg
}

// args are the attack script's arguments.
func (tg *target) args(t *testing.T) []string {
	return append([]string{fmt.Sprint(tg.port), tg.code}, hostAddrs(t)...)
}

// judge checks the attack script's output and what the owner keeps: every
// attempt refused or 401/403, nothing changed since before.
func (tg *target) judge(t *testing.T, who, out string, before map[string]string) {
	t.Helper()
	lines := regexp.MustCompile(`(?m)^RESULT (\S+) (\S+) (\S+) (\S+)$`).FindAllStringSubmatch(out, -1)
	// Per address: 8 routes by bash, Python and a raw socket (and curl
	// where it is installed), and the web chat's socket.
	if want := len(hostAddrs(t)) * (8*3 + 1); len(lines) < want {
		t.Fatalf("the attack script ran %d attempts, want %d; its output:\n%s", len(lines), want, out)
	}
	tally := map[string]int{}
	for _, l := range lines {
		how, addr, route, res := l[1], l[2], l[3], l[4]
		switch res {
		case "refused", "401", "403", "me-anon", "ws-refused":
			tally[res]++
		default:
			t.Errorf("%s: %s to %s %s got %s, want refused or 401/403", who, how, addr, route, res)
		}
	}
	t.Logf("%s: %d attempts: %v", who, len(lines), tally)

	after := ownerState(t, tg.dir)
	for f, sum := range before {
		if after[f] != sum {
			t.Errorf("%s: %s changed during the attack", who, f)
		}
	}
	for f := range after {
		if _, ok := before[f]; !ok && !strings.Contains(f, "owner-tab-0001") {
			t.Errorf("%s: %s appeared during the attack", who, f)
		}
	}
	// The cron service writes its file on its own; what matters is that
	// no job of the attacker's is in it.
	if jobs, _ := os.ReadFile(filepath.Join(tg.dir, "cron", "jobs.json")); strings.Contains(string(jobs), "exfiltrate") {
		t.Errorf("%s: the attacker's cron job was added", who)
	}
	if relay.NewPairingStore(filepath.Join(tg.state, "pairing.json")).IsApproved("tg", "99|stranger") {
		t.Errorf("%s: the stranger's pairing code was approved", who)
	}
}

func attackFromExec(t *testing.T, bin, mode string) {
	tg := newTarget(t, mode)
	tg.llm.Push(
		providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "exec",
			Arguments: fmt.Sprintf(`{"command":"bash attack.sh %s","timeout":300}`, strings.Join(tg.args(t), " "))}}},
		providertest.Reply{Text: "Done."},
	)
	startBinaryGateway(t, bin, tg.cfg, tg.port)
	before := ownerState(t, tg.dir) // after start: the gateway makes its own files
	// The agent's turn, asked for in the web chat by its owner (with the
	// token); the model has been talked into attacking.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, fmt.Sprintf("ws://127.0.0.1:%d/ws", tg.port), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := wsjson.Write(ctx, c, web.Frame{Type: "auth", Chat: "owner-tab-0001", Token: instanceToken(t, tg.cfg)}); err != nil {
		t.Fatal(err)
	}
	if err := wsjson.Write(ctx, c, web.Frame{Type: "message", Text: "summarise this web page for me"}); err != nil {
		t.Fatal(err)
	}
	reqs := tg.llm.WaitRequests(2, 4*time.Minute)
	var out string
	for _, m := range reqs[1].Messages() {
		if m["role"] == "tool" {
			out = fmt.Sprint(m["content"])
		}
	}
	tg.judge(t, "sandbox "+mode, out, before)
}

// TestOtherUsersAreNotTheOwner: another user of the machine (nobody) runs
// the same attack against the gateway's port, unconfined: every attempt
// is answered 401 or 403 (or refused), and nothing changes.
func TestOtherUsersAreNotTheOwner(t *testing.T) {
	bin := binary(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run a command as another user")
	}
	tg := newTarget(t, "landlock")
	startBinaryGateway(t, bin, tg.cfg, tg.port)
	before := ownerState(t, tg.dir)
	// The script where the other user can read it (the instance's own
	// folder is the owner's alone).
	shared, err := os.MkdirTemp("", "attack-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	script := filepath.Join(shared, "attack.sh")
	if err := os.WriteFile(script, []byte(attackScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{script}, tg.args(t)...)...)
	cmd.Dir = shared
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + shared}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the attack as nobody: %v\n%s", err, out)
	}
	// And the files that are the owner's whole credential stay out of
	// reach of the other user.
	for _, f := range []string{tg.cfg, filepath.Join(tg.state, "web_token")} {
		c := exec.Command("cat", f)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if b, err := c.Output(); err == nil {
			t.Errorf("nobody read %s: %q", f, b)
		}
	}
	tg.judge(t, "user nobody", string(out), before)
}

// ownerState hashes what the owner keeps: the config, memory and other
// conversations (cron jobs and pairing are checked by what they hold).
func ownerState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == "config.json", rel == "workspace/memory/MEMORY.md", strings.HasPrefix(rel, "sessions/"):
		case rel == "state/pairing.json":
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	return out
}

// hostAddrs are the addresses a command can aim at: both loopbacks and
// every other address of this host.
func hostAddrs(t *testing.T) []string {
	addrs := []string{"127.0.0.1", "::1"}
	ifaces, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var other []string
	for _, a := range ifaces {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		other = append(other, ipn.IP.String())
	}
	sort.Strings(other)
	return append(addrs, other...)
}
