package main

import (
	"encoding/json"
	"fmt"
	"log"
	"regexp"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// tb lets the tests' fakes run in this program: they only register
// cleanups and report unexpected requests. Embedding testing.TB satisfies
// the interface; the methods the fakes call are overridden below.
type tb struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (t *tb) Helper() {}
func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}
func (t *tb) Errorf(format string, args ...any) { log.Printf("fake: "+format, args...) }
func (t *tb) Logf(format string, args ...any)   { log.Printf("fake: "+format, args...) }
func (t *tb) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (t *tb) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}

// fakes are the platforms and the LLM the gateway talks to.
type fakes struct {
	t        *tb
	llm      *providertest.Server
	telegram *telegramtest.Server
	slack    *slacktest.Server
	discord  *discordtest.Server
}

// tokenRe finds the marker the driver puts in every user message; the
// scripted LLM answers "ok [<marker>]" so the driver can match replies.
var tokenRe = regexp.MustCompile(`m-\d+-\d+`)

func startFakes() *fakes {
	t := &tb{}
	f := &fakes{t: t, llm: providertest.New(t), telegram: telegramtest.New(t), slack: slacktest.New(t), discord: discordtest.New(t)}
	f.llm.Handle(func(r providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "ok [" + lastUserToken(r.Body) + "]"}
	})
	return f
}

func (f *fakes) close() { f.t.close() }

// lastUserToken is the marker in the request's last user message.
func lastUserToken(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		raw, _ := json.Marshal(m["content"])
		found := tokenRe.FindAllString(string(raw), -1)
		if len(found) > 0 {
			return found[len(found)-1]
		}
		return "none"
	}
	return "none"
}
