package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/channels/matrix/matrixtest"
)

// matrixPlatform is Matrix on a real Dendrite for TestPlatformsEndToEnd:
// a bot account and a user with a direct room, or nil (logged) where
// Dendrite is not installed outside CI.
func matrixPlatform(t *testing.T) *platform {
	t.Helper()
	srv, stop, err := matrixtest.Launch()
	if errors.Is(err, matrixtest.ErrNotInstalled) && os.Getenv("CI") == "" {
		t.Logf("matrix left out: %v", err)
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx := context.Background()
	bot, ann := srv.Register(t, "bot"), srv.Register(t, "ann")
	room, err := ann.CreateRoom(ctx, &mautrix.ReqCreateRoom{Preset: "trusted_private_chat", IsDirect: true, Invite: []id.UserID{bot.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bot.JoinRoomByID(ctx, room.RoomID); err != nil {
		t.Fatal(err)
	}
	return &platform{
		name: "matrix",
		config: func() map[string]any {
			return map[string]any{"enabled": true, "homeserver": srv.URL, "userId": string(bot.ID), "accessToken": bot.Token}
		},
		send: func(text string) {
			if _, err := ann.SendText(ctx, room.RoomID, text); err != nil {
				t.Errorf("matrix send: %v", err)
			}
		},
		shown: func() ([]string, int) {
			resp, err := ann.Messages(ctx, room.RoomID, "", "", mautrix.DirectionBackward, nil, 500)
			if err != nil {
				return nil, 0
			}
			evs := resp.Chunk
			slices.Reverse(evs)
			latest := map[id.EventID]string{}
			var order []id.EventID
			edits := 0
			for _, evt := range evs {
				if evt.Sender != bot.ID || evt.Type != event.EventMessage {
					continue
				}
				var c event.MessageEventContent
				if json.Unmarshal(evt.Content.VeryRaw, &c) != nil {
					continue
				}
				if c.RelatesTo != nil && c.RelatesTo.Type == event.RelReplace && c.NewContent != nil {
					edits++
					latest[c.RelatesTo.EventID] = c.NewContent.Body
					continue
				}
				order = append(order, evt.ID)
				latest[evt.ID] = c.Body
			}
			var out []string
			for _, eid := range order {
				out = append(out, latest[eid])
			}
			return out, edits
		},
	}
}
