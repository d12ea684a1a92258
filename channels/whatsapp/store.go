package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.mau.fi/whatsmeow"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/whatsapp/devstore"
)

// StoreFile is the device store's file in the state folder.
const StoreFile = "whatsapp-device.gob"

// LegacyStoreFile is the SQLite device store of versions before devstore.
const LegacyStoreFile = "whatsapp.db"

// ErrLegacyStore ends Run (as a channels.FatalError) when only the SQLite
// device store of an earlier version exists: this build cannot read it,
// so the bot has to be linked again.
var ErrLegacyStore = errors.New("whatsapp: the device store format changed: this version keeps the device keys in " + StoreFile +
	" and cannot read the old SQLite whatsapp.db (left untouched); link the bot again with `nanobot channels login whatsapp`, " +
	"then remove the old linked device on the phone (Settings → Linked devices) and delete whatsapp.db")

// legacyOnly reports whether the old SQLite store exists and the new one
// does not.
func (c *Channel) legacyOnly() bool {
	if c.legacyPath == "" {
		return false
	}
	if _, err := os.Stat(c.storePath); err == nil {
		return false
	}
	_, err := os.Stat(c.legacyPath)
	return err == nil
}

// openStore opens the device store and a client for its device.
func (c *Channel) openStore(context.Context) (client, func(), error) {
	if c.storePath == "" {
		return nil, nil, errors.New("whatsapp: no state folder for the device store")
	}
	st, err := devstore.Open(c.storePath, devstore.Options{Log: c.log})
	if errors.Is(err, devstore.ErrCorrupt) {
		// It will not mend itself: stop, and say how to get going again.
		return nil, nil, channels.Fatal(fmt.Errorf("whatsapp: %w; delete it and link again with `nanobot channels login whatsapp`", err))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("whatsapp: %w", err)
	}
	device, err := st.Device()
	if err != nil {
		return nil, nil, fmt.Errorf("whatsapp: %w", err)
	}
	cli := whatsmeow.NewClient(device, nil)
	cli.EnableAutoReconnect = true
	return realClient{cli}, func() {
		cli.Disconnect()
		if err := st.Close(); err != nil {
			c.log.Error("whatsapp: saving the device store failed", "error", err)
		}
	}, nil
}
