package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/channels"
)

// sender is the HTTP client of the sending bot: every call gets a deadline
// so a hung connection cannot hold a chat's dispatcher forever.
type sender struct{ c *Channel }

// Deadlines of one Bot API call; uploads of up to 50 MB get longer.
const (
	callTimeout   = 60 * time.Second
	uploadTimeout = 5 * time.Minute
)

func (s *sender) Do(req *http.Request) (*http.Response, error) {
	timeout := callTimeout
	if strings.HasSuffix(req.URL.Path, "/sendPhoto") || strings.HasSuffix(req.URL.Path, "/sendDocument") {
		timeout = uploadTimeout
	}
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	resp, err := s.c.http.Do(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	// The library reads the body after Do returns; read it here so the
	// deadline can be released.
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	cancel()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// poller is the HTTP client of one Run's polling bot. It sits between the
// library and the network to do what the library does not:
//
//   - acknowledge only handled updates: Telegram takes the offset of the
//     next getUpdates as confirmation of everything before it, so that
//     request waits until every update of the previous batch went through
//     handle (the library fetches ahead otherwise), and is never sent once
//     an update was not taken (handle ends the session instead);
//   - skip malformed updates: an update that does not decode would fail the
//     whole batch again and again, so it is logged and replaced by an empty
//     update with the same id, which handle skips;
//   - end the session at the first failed poll (instead of the library's
//     short fixed retry), so that the channel's Loop reports it and backs
//     off with jitter; a rejected token or a lasting conflict end it with
//     a channels.FatalError.
type poller struct {
	c    *Channel
	stop context.CancelCauseFunc

	mu      sync.Mutex
	pending int           // updates of the last batch not yet handled
	idle    chan struct{} // closed while pending == 0
}

func (p *poller) Do(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/getUpdates") {
		return (&sender{c: p.c}).Do(req)
	}
	ctx := req.Context()
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if ctx.Err() != nil {
		// The session ended while its last update was handled (it was not
		// taken, or Run is stopping): this poll would confirm it.
		return nil, ctx.Err()
	}
	// The poll's deadline: the long-poll timeout plus room for the network.
	pctx, cancel := context.WithTimeout(ctx, p.c.pollTimeout+15*time.Second)
	defer cancel()
	resp, err := p.c.http.Do(req.WithContext(pctx))
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err = fmt.Errorf("getUpdates: %w", err)
		p.stop(err)
		return nil, err
	}
	body, err = p.check(resp.StatusCode, body)
	if err != nil {
		p.stop(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// check inspects a getUpdates response: an API error is returned (marked
// fatal for a rejected token or a lasting conflict), malformed updates are
// replaced, and the batch is counted as pending. It returns the body to
// hand the library.
func (p *poller) check(status int, body []byte) ([]byte, error) {
	var r struct {
		OK          bool              `json:"ok"`
		Result      []json.RawMessage `json:"result"`
		ErrorCode   int               `json:"error_code"`
		Description string            `json:"description"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return body, fmt.Errorf("getUpdates: HTTP %d with an unreadable body", status)
	}
	if !r.OK {
		err := fmt.Errorf("getUpdates: %d %s", r.ErrorCode, r.Description)
		switch r.ErrorCode {
		case http.StatusUnauthorized:
			err = channels.Fatal(ErrUnauthorized)
		case http.StatusConflict:
			if p.c.conflict(time.Now()) {
				err = channels.Fatal(fmt.Errorf("%w (for %s)", ErrConflict, p.c.conflictGrace()))
			}
		}
		return body, err
	}
	changed := false
	kept := r.Result[:0]
	for _, raw := range r.Result {
		var u models.Update
		err := json.Unmarshal(raw, &u)
		if err == nil {
			kept = append(kept, raw)
			continue
		}
		changed = true
		var id struct {
			UpdateID int64 `json:"update_id"`
		}
		_ = json.Unmarshal(raw, &id)
		p.c.log.Warn("telegram: malformed update skipped", "update_id", id.UpdateID, "err", err)
		if id.UpdateID > 0 {
			// Keep the id so the offset moves past it.
			kept = append(kept, json.RawMessage(fmt.Sprintf(`{"update_id":%d}`, id.UpdateID)))
		}
	}
	r.Result = kept
	p.mu.Lock()
	if len(r.Result) > 0 && p.pending == 0 {
		p.idle = make(chan struct{})
	}
	p.pending += len(r.Result)
	p.mu.Unlock()
	if !changed {
		return body, nil
	}
	out, err := json.Marshal(map[string]any{"ok": true, "result": r.Result})
	if err != nil {
		return body, err
	}
	return out, nil
}

// handle is the library's handler for every update of this session. An
// update the gateway did not take ends the session before the next poll
// could confirm it; the updates after it in the batch are left alone, and
// the next session fetches them all again from that update on.
func (p *poller) handle(ctx context.Context, _ *bot.Bot, u *models.Update) {
	defer p.done()
	if ctx.Err() != nil {
		return // the session is over: this update is fetched again
	}
	if err := p.c.handleUpdate(ctx, u, true); err != nil {
		if ctx.Err() == nil {
			p.stop(fmt.Errorf("update %d not taken; fetching it again: %w", u.ID, err))
		}
		return
	}
	p.c.mu.Lock()
	p.c.offset = u.ID + 1
	p.c.mu.Unlock()
}

func (p *poller) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending > 0 {
		p.pending--
		if p.pending == 0 {
			close(p.idle)
		}
	}
}
