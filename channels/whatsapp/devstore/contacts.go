package devstore

import (
	"bytes"
	"context"
	"time"

	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"
)

// updateContact applies change to user's contact; it reports whether
// anything changed. The caller holds s.mu.
func (s *Store) updateContact(t *txn, user types.JID, change func(*contact)) bool {
	return upsert(t, s.st.Contacts, user.String(), change)
}

// putName sets one name field and returns whether it changed and its
// previous value, as PutPushName and PutBusinessName do.
func (s *Store) putName(ctx context.Context, user types.JID, name string, field func(*contact) *string) (changed bool, previous string, err error) {
	err = s.mutate(ctx, false, func(t *txn) bool {
		c := s.st.Contacts[user.String()]
		if previous = *field(&c); previous == name {
			return false
		}
		changed = s.updateContact(t, user, func(c *contact) { *field(c) = name })
		return changed
	})
	if err != nil || !changed {
		return false, "", err
	}
	return true, previous, nil
}

// PutPushName implements store.ContactStore.
func (s *Store) PutPushName(ctx context.Context, user types.JID, pushName string) (bool, string, error) {
	return s.putName(ctx, user, pushName, func(c *contact) *string { return &c.PushName })
}

// PutBusinessName implements store.ContactStore.
func (s *Store) PutBusinessName(ctx context.Context, user types.JID, businessName string) (bool, string, error) {
	return s.putName(ctx, user, businessName, func(c *contact) *string { return &c.BusinessName })
}

// PutContactName implements store.ContactStore. whatsmeow (appstate.go)
// passes the first name before the full name, whatever the interface's
// parameter names say; sqlstore stores them in that order too.
func (s *Store) PutContactName(ctx context.Context, user types.JID, firstName, fullName string) error {
	return s.PutAllContactNames(ctx, []store.ContactEntry{{JID: user, FirstName: firstName, FullName: fullName}})
}

// PutAllContactNames implements store.ContactStore (later entries for the
// same JID win).
func (s *Store) PutAllContactNames(ctx context.Context, contacts []store.ContactEntry) error {
	return s.mutate(ctx, false, func(t *txn) bool {
		changed := false
		for _, e := range contacts {
			if s.updateContact(t, e.JID, func(c *contact) { c.FirstName, c.FullName = e.FirstName, e.FullName }) {
				changed = true
			}
		}
		return changed
	})
}

// PutManyRedactedPhones implements store.ContactStore.
func (s *Store) PutManyRedactedPhones(ctx context.Context, entries []store.RedactedPhoneEntry) error {
	return s.mutate(ctx, false, func(t *txn) bool {
		changed := false
		for _, e := range entries {
			if s.updateContact(t, e.JID, func(c *contact) { c.RedactedPhone = e.RedactedPhone }) {
				changed = true
			}
		}
		return changed
	})
}

func (c contact) info(found bool) types.ContactInfo {
	return types.ContactInfo{Found: found, FirstName: c.FirstName, FullName: c.FullName, PushName: c.PushName, BusinessName: c.BusinessName, RedactedPhone: c.RedactedPhone}
}

// GetContact implements store.ContactStore; Found is false for a stranger.
func (s *Store) GetContact(_ context.Context, user types.JID) (info types.ContactInfo, err error) {
	s.read(func() {
		c, ok := s.st.Contacts[user.String()]
		info = c.info(ok)
	})
	return info, nil
}

// GetAllContacts implements store.ContactStore.
func (s *Store) GetAllContacts(context.Context) (map[types.JID]types.ContactInfo, error) {
	out := make(map[types.JID]types.ContactInfo)
	var err error
	s.read(func() {
		for k, c := range s.st.Contacts {
			jid, perr := types.ParseJID(k)
			if perr != nil {
				err = perr
				return
			}
			out[jid] = c.info(true)
		}
	})
	return out, err
}

// putChatSetting applies change to chat's settings.
func (s *Store) putChatSetting(ctx context.Context, chat types.JID, change func(*chatSettings)) error {
	return s.mutate(ctx, false, func(t *txn) bool { return upsert(t, s.st.ChatSettings, chat.String(), change) })
}

// PutMutedUntil implements store.ChatSettingsStore.
func (s *Store) PutMutedUntil(ctx context.Context, chat types.JID, mutedUntil time.Time) error {
	var v int64
	switch {
	case mutedUntil.Equal(store.MutedForever):
		v = -1
	case !mutedUntil.IsZero():
		v = mutedUntil.Unix()
	}
	return s.putChatSetting(ctx, chat, func(c *chatSettings) { c.MutedUntil = v })
}

// PutPinned implements store.ChatSettingsStore.
func (s *Store) PutPinned(ctx context.Context, chat types.JID, pinned bool) error {
	return s.putChatSetting(ctx, chat, func(c *chatSettings) { c.Pinned = pinned })
}

// PutArchived implements store.ChatSettingsStore.
func (s *Store) PutArchived(ctx context.Context, chat types.JID, archived bool) error {
	return s.putChatSetting(ctx, chat, func(c *chatSettings) { c.Archived = archived })
}

// GetChatSettings implements store.ChatSettingsStore.
func (s *Store) GetChatSettings(_ context.Context, chat types.JID) (out types.LocalChatSettings, err error) {
	s.read(func() {
		c, ok := s.st.ChatSettings[chat.String()]
		out = types.LocalChatSettings{Found: ok, Pinned: c.Pinned, Archived: c.Archived}
		switch {
		case c.MutedUntil < 0:
			out.MutedUntil = store.MutedForever
		case c.MutedUntil > 0:
			out.MutedUntil = time.Unix(c.MutedUntil, 0)
		}
	})
	return out, nil
}

// msgSecretID keys MsgSecrets; JIDs and message ids contain no NUL.
func msgSecretID(chat, sender types.JID, id types.MessageID) string {
	return chat.ToNonAD().String() + "\x00" + sender.ToNonAD().String() + "\x00" + id
}

// PutMessageSecrets implements store.MsgSecretStore; a secret already
// stored is kept.
func (s *Store) PutMessageSecrets(ctx context.Context, inserts []store.MessageSecretInsert) error {
	return s.mutate(ctx, false, func(t *txn) bool {
		changed := false
		for _, in := range inserts {
			k := msgSecretID(in.Chat, in.Sender, in.ID)
			if _, ok := s.st.MsgSecrets[k]; !ok {
				set(t, s.st.MsgSecrets, k, bytes.Clone(in.Secret))
				changed = true
			}
		}
		return changed
	})
}

// PutMessageSecret implements store.MsgSecretStore.
func (s *Store) PutMessageSecret(ctx context.Context, chat, sender types.JID, id types.MessageID, secret []byte) error {
	return s.PutMessageSecrets(ctx, []store.MessageSecretInsert{{Chat: chat, Sender: sender, ID: id, Secret: secret}})
}

// GetMessageSecret implements store.MsgSecretStore: chat and sender match
// by phone number or by LID, and the sender it was stored under is
// returned with it.
func (s *Store) GetMessageSecret(_ context.Context, chat, sender types.JID, id types.MessageID) (secret []byte, realSender types.JID, err error) {
	s.read(func() {
		for _, c := range s.bothForms(chat.ToNonAD()) {
			for _, snd := range s.bothForms(sender.ToNonAD()) {
				if v, ok := s.st.MsgSecrets[msgSecretID(c, snd, id)]; ok {
					secret, realSender = bytes.Clone(v), snd
					return
				}
			}
		}
	})
	return secret, realSender, nil
}

// PutPrivacyTokens implements store.PrivacyTokenStore.
func (s *Store) PutPrivacyTokens(ctx context.Context, tokens ...store.PrivacyToken) error {
	return s.mutate(ctx, false, func(t *txn) bool {
		for _, tok := range tokens {
			set(t, s.st.PrivacyTokens, tok.User.ToNonAD().String(), privacyToken{Token: bytes.Clone(tok.Token), Timestamp: tok.Timestamp.Unix()})
		}
		return len(tokens) > 0
	})
}

// GetPrivacyToken implements store.PrivacyTokenStore: the newest token
// stored under the user's phone number or LID; nil when there is none.
func (s *Store) GetPrivacyToken(_ context.Context, user types.JID) (out *store.PrivacyToken, err error) {
	user = user.ToNonAD()
	s.read(func() {
		for _, u := range s.bothForms(user) {
			if v, ok := s.st.PrivacyTokens[u.String()]; ok && (out == nil || v.Timestamp > out.Timestamp.Unix()) {
				out = &store.PrivacyToken{User: user, Token: bytes.Clone(v.Token), Timestamp: time.Unix(v.Timestamp, 0)}
			}
		}
	})
	return out, nil
}
