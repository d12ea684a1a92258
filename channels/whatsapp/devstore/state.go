package devstore

import "go.mau.fi/whatsmeow/store"

// state is everything the file holds. Map keys that are byte strings in
// whatsmeow (app-state key ids, index MACs) are kept as Go strings of those
// bytes; JIDs as their String form.
type state struct {
	Device *deviceRecord // nil until paired

	Identities   map[string][32]byte // Signal address → identity key
	Sessions     map[string][]byte   // Signal address → session record
	PreKeys      map[uint32]preKeyRecord
	NextPreKeyID uint32            // never reused, even after removals
	SenderKeys   map[string][]byte // senderKeyID(group, user) → record

	AppStateSyncKeys map[string]store.AppStateSyncKey // key id bytes →
	AppStateVersions map[string]appStateVersion       // collection name →
	AppStateMACs     map[string]map[string]mutationMAC

	Contacts      map[string]contact
	ChatSettings  map[string]chatSettings
	MsgSecrets    map[string][]byte // msgSecretID(chat, sender, id) → secret
	PrivacyTokens map[string]privacyToken
	Events        map[[32]byte]bufferedEvent // ciphertext hash →

	LIDToPN map[string]string // LID user → phone-number user; global
}

type preKeyRecord struct {
	Priv     [32]byte
	Uploaded bool
}

type appStateVersion struct {
	Version uint64
	Hash    [128]byte
}

type mutationMAC struct {
	Version  uint64
	ValueMAC []byte
}

type contact struct {
	FirstName, FullName, PushName, BusinessName, RedactedPhone string
}

type chatSettings struct {
	MutedUntil int64 // unix seconds; -1 forever; 0 not muted
	Pinned     bool
	Archived   bool
}

type privacyToken struct {
	Token     []byte
	Timestamp int64 // unix seconds
}

type bufferedEvent struct {
	Plaintext  []byte
	Cleared    bool  // plaintext dropped after handling (gob cannot tell nil from empty)
	ServerTime int64 // unix seconds
	InsertTime int64 // unix milliseconds
}

// init makes every map non-nil (gob leaves empty maps out).
func (st *state) init() {
	initMap(&st.Identities)
	initMap(&st.Sessions)
	initMap(&st.PreKeys)
	initMap(&st.SenderKeys)
	initMap(&st.AppStateSyncKeys)
	initMap(&st.AppStateVersions)
	initMap(&st.AppStateMACs)
	initMap(&st.Contacts)
	initMap(&st.ChatSettings)
	initMap(&st.MsgSecrets)
	initMap(&st.PrivacyTokens)
	initMap(&st.Events)
	initMap(&st.LIDToPN)
	if st.NextPreKeyID == 0 {
		st.NextPreKeyID = 1
	}
}

func initMap[K comparable, V any](m *map[K]V) {
	if *m == nil {
		*m = make(map[K]V)
	}
}

// resetDevice drops everything that belongs to the paired device, as
// sqlstore's ON DELETE CASCADE does; the LID map is global and stays.
func (st *state) resetDevice() {
	*st = state{LIDToPN: st.LIDToPN}
	st.init()
}
