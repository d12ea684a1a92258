package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// ErrUnauthorized is returned by Run (as a channels.FatalError) when the
// homeserver rejects the access token or the password.
var ErrUnauthorized = errors.New("matrix: the homeserver rejected the credentials; check channels.matrix.accessToken (or password)")

// Run implements channels.Channel: log in, then /sync until ctx ends.
// Failures are retried by a channels.Loop with backoff and jitter (health:
// reconnecting); credentials the homeserver no longer accepts
// (M_UNKNOWN_TOKEN, M_FORBIDDEN at login) end Run with a
// channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	started := time.Now()
	defer c.cli.Client.CloseIdleConnections()
	if err := c.openEncryption(); err != nil {
		return err
	}
	if eng := c.engine(); eng != nil {
		defer func() {
			c.mu.Lock()
			c.crypto = nil
			c.mu.Unlock()
			if err := eng.close(); err != nil {
				c.log.Warn("matrix: closing the crypto store failed", "err", err)
			}
		}()
	}
	// Decryptions waiting for a key end with ctx; wait for them before
	// the crypto store closes.
	defer c.pending.Wait()
	since, err := c.loadSince()
	if err != nil {
		c.log.Warn("matrix: sync state unreadable; starting from now", "err", err)
	}
	first := since == ""
	loop := &channels.Loop{
		Name: "matrix", Log: c.log, Health: &c.health, Min: c.backoffMin, Max: c.backoffMax,
		Redact: c.redact.Error,
	}
	return loop.Run(ctx, func(ctx context.Context, up func()) error {
		if err := c.login(ctx); err != nil {
			return err
		}
		if eng := c.engine(); eng != nil {
			if err := eng.start(ctx, in); err != nil {
				return err
			}
		}
		up()
		// The first sync of a session does not wait: it shows at once
		// whether the homeserver answers.
		timeout := time.Duration(0)
		for {
			resp, err := c.cli.FullSyncRequest(ctx, mautrix.ReqSync{Timeout: int(timeout / time.Millisecond), Since: since})
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return credentialError("sync", err)
			}
			timeout = c.pollTimeout
			backlog := time.Time{}
			if first {
				backlog = started
			}
			if eng := c.engine(); eng != nil {
				eng.sync(ctx, resp, since)
			}
			c.process(ctx, in, resp, backlog)
			if ctx.Err() != nil {
				return nil // the batch may be half delivered: sync it again next time
			}
			since, first = resp.NextBatch, false
			if err := c.saveSince(since); err != nil {
				c.log.Warn("matrix: saving the sync token failed", "err", err)
			}
		}
	})
}

// credentialError wraps err from a call named what, marked fatal when the
// homeserver refused the credentials.
func credentialError(what string, err error) error {
	if errors.Is(err, mautrix.MUnknownToken) || errors.Is(err, mautrix.MForbidden) || errors.Is(err, mautrix.MUserDeactivated) {
		return channels.Fatal(fmt.Errorf("%w (%s: %w)", ErrUnauthorized, what, err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// login logs in with the password when there is no access token (once per
// Run), then checks who the token belongs to: the homeserver has accepted
// the credentials once it returns nil.
func (c *Channel) login(ctx context.Context) error {
	if c.cli.AccessToken == "" {
		device := id.DeviceID(c.cfg.DeviceID)
		if eng := c.engine(); device == "" && eng != nil {
			// The device whose keys the crypto store holds.
			stored, err := eng.storedDevice(ctx)
			if err != nil {
				return channels.Fatal(fmt.Errorf("matrix: crypto store: %w", err))
			}
			device = stored
		}
		resp, err := c.cli.Login(ctx, &mautrix.ReqLogin{
			Type:       mautrix.AuthTypePassword,
			Identifier: mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: c.cfg.UserID},
			Password:   c.cfg.Password, DeviceID: device,
			InitialDeviceDisplayName: "nanobot", StoreCredentials: true,
		})
		if err != nil {
			return credentialError("password login as "+c.cfg.UserID, err)
		}
		c.redact.Add(resp.AccessToken)
		c.log.Info("matrix: logged in with the password; put an accessToken in the config to avoid a new device per start", "device", resp.DeviceID)
	}
	who, err := c.cli.Whoami(ctx)
	if err != nil {
		return credentialError("whoami", err)
	}
	if who.UserID != c.me {
		return channels.Fatal(fmt.Errorf("matrix: the access token belongs to %s, not userId %s", who.UserID, c.me))
	}
	c.cli.DeviceID = who.DeviceID
	c.log.Info("matrix: connected", "user", who.UserID, "device", who.DeviceID)
	return nil
}

// process handles one sync batch: invites, then the new events of every
// joined room in order. Messages sent before backlog (the start of a bot
// with no saved sync token) are skipped: answering a room's history would
// surprise everyone.
func (c *Channel) process(ctx context.Context, in channels.Inbox, resp *mautrix.RespSync, backlog time.Time) {
	for roomID, inv := range resp.Rooms.Invite {
		c.invited(ctx, in, roomID, inv)
	}
	for roomID, room := range resp.Rooms.Join {
		events := room.Timeline.Events
		for _, evt := range append(room.State.Events, events...) {
			if evt.Type == event.StateMember {
				c.forgetMembers(roomID)
			}
		}
		// A room just joined shows some history before the bot's own join:
		// that is not addressed to it.
		start := 0
		for i, evt := range events {
			if evt.Type == event.StateMember && evt.StateKey != nil && id.UserID(*evt.StateKey) == c.me && memberOf(evt) == event.MembershipJoin && !wasJoined(evt) {
				start = i + 1
			}
		}
		for _, evt := range events[start:] {
			if ctx.Err() != nil {
				return
			}
			evt.RoomID = roomID
			if !backlog.IsZero() && time.UnixMilli(evt.Timestamp).Before(backlog) {
				continue
			}
			if evt.Sender == c.me {
				continue
			}
			switch evt.Type {
			case event.EventMessage:
				if c.markSeen(evt.ID) {
					c.handle(ctx, in, evt)
				}
			case event.EventEncrypted:
				if c.markSeen(evt.ID) {
					c.handleEncrypted(ctx, in, evt)
				}
			default:
				if strings.HasPrefix(evt.Type.Type, "m.key.verification.") && c.markSeen(evt.ID) {
					c.verificationEvent(ctx, evt)
				}
			}
		}
	}
}

// invited joins a room the bot was invited to by an allowed sender.
func (c *Channel) invited(ctx context.Context, in channels.Inbox, roomID id.RoomID, inv *mautrix.SyncInvitedRoom) {
	var inviter id.UserID
	for _, evt := range inv.State.Events {
		if evt.Type == event.StateMember && evt.StateKey != nil && id.UserID(*evt.StateKey) == c.me && memberOf(evt) == event.MembershipInvite {
			inviter = evt.Sender
		}
	}
	if inviter == "" {
		return
	}
	log := c.log.With("room", roomID, "inviter", inviter)
	if !c.cfg.autoJoin() || !channels.Admits(in, c.Name(), string(inviter)) {
		log.Info("matrix: invite not accepted (autoJoin off or inviter not on allowFrom)")
		return
	}
	if _, err := c.cli.JoinRoomByID(ctx, roomID); err != nil {
		log.Warn("matrix: joining an invited room failed", "err", c.redact.Error(err))
		return
	}
	log.Info("matrix: joined a room on invitation")
}

func memberOf(evt *event.Event) event.Membership {
	var m struct {
		Membership event.Membership `json:"membership"`
	}
	_ = json.Unmarshal(evt.Content.VeryRaw, &m)
	return m.Membership
}

// wasJoined reports whether a member event's previous state was already a
// join (a profile change, not a new join).
func wasJoined(evt *event.Event) bool {
	if evt.Unsigned.PrevContent == nil {
		return false
	}
	var m struct {
		Membership event.Membership `json:"membership"`
	}
	_ = json.Unmarshal(evt.Unsigned.PrevContent.VeryRaw, &m)
	return m.Membership == event.MembershipJoin
}

// markSeen records an event id and reports whether it was new. The set is
// bounded: the journal's dedup covers restarts.
func (c *Channel) markSeen(eid id.EventID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[eid] {
		return false
	}
	c.seen[eid] = true
	c.seenQ = append(c.seenQ, eid)
	if len(c.seenQ) > 4096 {
		delete(c.seen, c.seenQ[0])
		c.seenQ = c.seenQ[1:]
	}
	return true
}

// syncState is what the state file holds.
type syncState struct {
	User      string `json:"user"`
	NextBatch string `json:"nextBatch"`
}

func (c *Channel) loadSince() (string, error) {
	if c.state == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.state)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var s syncState
	if err := json.Unmarshal(b, &s); err != nil {
		return "", err
	}
	if s.User != string(c.me) {
		return "", nil // another account's token means nothing here
	}
	return s.NextBatch, nil
}

func (c *Channel) saveSince(since string) error {
	if c.state == "" {
		return nil
	}
	b, _ := json.Marshal(syncState{User: string(c.me), NextBatch: since})
	if err := os.MkdirAll(filepath.Dir(c.state), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(c.state, b, 0o600)
}
