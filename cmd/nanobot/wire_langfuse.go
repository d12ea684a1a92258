package main

import (
	"context"
	"os"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/langfuse"
)

// langfuseFlushWait bounds the last flush at exit.
const langfuseFlushWait = 5 * time.Second

// startLangfuse turns Langfuse tracing on when LANGFUSE_PUBLIC_KEY and
// LANGFUSE_SECRET_KEY are set (LANGFUSE_BASE_URL or LANGFUSE_HOST pick the
// server). It returns the observer (nil when off) and stop, which sends
// what is queued (at most langfuseFlushWait) and ends the sender.
func (a *app) startLangfuse() (agent.RunObserver, func()) {
	o, ok, missing := langfuse.FromEnv(os.Getenv)
	if !ok {
		if missing != "" {
			a.log.Warn("langfuse tracing is off: " + missing + " is not set")
		}
		return nil, func() {}
	}
	a.redact.Add(o.SecretKey)
	o.Log = a.log
	c, err := langfuse.New(o)
	if err != nil {
		a.log.Warn("langfuse tracing is off", "err", err)
		return nil, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	go c.Run(ctx)
	a.log.Info("langfuse tracing on", "host", o.Host)
	return c, func() {
		fctx, done := context.WithTimeout(context.Background(), langfuseFlushWait)
		c.Close(fctx)
		done()
		cancel()
	}
}
