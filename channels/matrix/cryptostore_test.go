//go:build goolm

package matrix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/olm"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

const testUser = id.UserID("@bot:example.org")

func testKey() []byte { return bytes.Repeat([]byte{7}, 32) }

func openTestStore(t *testing.T, path string, key []byte) *cryptoStore {
	t.Helper()
	s := newCryptoStore(path, key, testUser, slog.New(slog.DiscardHandler))
	if err := s.load(); err != nil {
		t.Fatalf("load: %v", err)
	}
	return s
}

// reopen closes s (writing what is pending) and loads its file into a new
// store, as a restarted process would.
func reopen(t *testing.T, s *cryptoStore) *cryptoStore {
	t.Helper()
	if err := s.close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return openTestStore(t, s.path, s.key)
}

// olmPair is the store's account with an Olm session to a peer account,
// after one message each way.
type olmPair struct {
	account   *crypto.OlmAccount
	session   *crypto.OlmSession
	peer      olm.Session
	peerCurve id.Curve25519
}

func newOlmPair(t *testing.T) olmPair {
	t.Helper()
	acc := crypto.NewOlmAccount()
	peer, err := olm.NewAccount()
	if err != nil {
		t.Fatal(err)
	}
	if err := peer.GenOneTimeKeys(1); err != nil {
		t.Fatal(err)
	}
	otks, _ := peer.OneTimeKeys()
	_, peerCurve, _ := peer.IdentityKeys()
	var otk id.Curve25519
	for _, k := range otks {
		otk = k
	}
	out, err := acc.Internal.NewOutboundSession(peerCurve, otk)
	if err != nil {
		t.Fatal(err)
	}
	typ, msg, _ := out.Encrypt([]byte("first"))
	if typ != id.OlmMsgTypePreKey {
		t.Fatalf("first olm message has type %d", typ)
	}
	in, err := peer.NewInboundSession(string(msg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Decrypt(string(msg), typ); err != nil {
		t.Fatal(err)
	}
	return olmPair{account: acc, session: &crypto.OlmSession{Internal: out}, peer: in, peerCurve: peerCurve}
}

// TestCryptoStoreReopen: what the machine needs after a restart comes back
// from the file, and the ratchets continue where they stopped.
func TestCryptoStoreReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "matrix-crypto.json")
	s := openTestStore(t, path, testKey())
	s.setDevice("BOTDEVICE")
	p := newOlmPair(t)
	p.account.Shared = true
	must(t, s.PutAccount(ctx, p.account))
	must(t, s.AddSession(ctx, p.peerCurve, p.session))

	room := id.RoomID("!room:example.org")
	ogs, err := crypto.NewOutboundGroupSession(room, nil)
	must(t, err)
	ogs.Shared = true
	igs, err := crypto.NewInboundGroupSession("sender", "signer", room, ogs.Internal.Key(), time.Hour, 100, false)
	must(t, err)
	must(t, s.AddOutboundGroupSession(ctx, ogs))
	must(t, s.PutGroupSession(ctx, igs))
	for range 3 {
		_, err := ogs.Encrypt([]byte("megolm"))
		must(t, err)
		must(t, s.UpdateOutboundGroupSession(ctx, ogs))
	}
	if ok, _ := s.ValidateMessageIndex(ctx, igs.ID(), "$first", 0, 1000); !ok {
		t.Fatal("first use of index 0 refused")
	}
	must(t, s.PutSecret(ctx, id.SecretXSMaster, "master secret value"))
	must(t, s.PutDevices(ctx, "@ann:example.org", map[id.DeviceID]*id.Device{"PHONE": {UserID: "@ann:example.org", DeviceID: "PHONE", Trust: id.TrustStateVerified}}))
	must(t, s.PutCrossSigningKey(ctx, "@ann:example.org", id.XSUsageMaster, "annmaster"))
	must(t, s.PutSignature(ctx, "@ann:example.org", "phonekey", "@ann:example.org", "annself", "sig"))
	must(t, s.MarkOutboundGroupSessionShared(ctx, "@ann:example.org", "phonecurve", ogs.ID()))
	must(t, s.PutWithheldGroupSession(ctx, event.RoomKeyWithheldEventContent{RoomID: room, SessionID: "gone", Code: event.RoomKeyWithheldUnverified}))
	must(t, s.PutOlmHash(ctx, [32]byte{1, 2, 3}, time.Now()))
	must(t, s.rooms.SetEncryptionEvent(ctx, room, &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}))
	must(t, s.rooms.SetMembership(ctx, room, "@ann:example.org", event.MembershipJoin))
	wantSigning := p.account.SigningKey()

	r := reopen(t, s)
	if r.storedDevice() != "BOTDEVICE" {
		t.Errorf("device %q after reopen, want BOTDEVICE", r.storedDevice())
	}
	acc, _ := r.GetAccount(ctx)
	if acc == nil || !acc.Shared || acc.SigningKey() != wantSigning {
		t.Fatalf("account after reopen: %+v", acc)
	}
	// The Olm session goes on: the peer decrypts the next message.
	sess, _ := r.GetLatestSession(ctx, p.peerCurve)
	if sess == nil {
		t.Fatal("olm session lost")
	}
	typ, msg, err := sess.Internal.Encrypt([]byte("after restart"))
	must(t, err)
	if got, err := p.peer.Decrypt(string(msg), typ); err != nil || string(got) != "after restart" {
		t.Errorf("peer decrypts %q, %v", got, err)
	}
	// The outbound Megolm ratchet continues at index 3 (no index reused).
	ogs2, _ := r.GetOutboundGroupSession(ctx, room)
	if ogs2 == nil || ogs2.MessageCount != 3 || ogs2.ID() != ogs.ID() {
		t.Fatalf("outbound session after reopen: %+v", ogs2)
	}
	ct, err := ogs2.Encrypt([]byte("fourth"))
	must(t, err)
	igs2, err := r.GetGroupSession(ctx, room, igs.ID())
	if err != nil || igs2 == nil {
		t.Fatalf("inbound session after reopen: %v, %v", igs2, err)
	}
	if plain, idx, err := igs2.Internal.Decrypt(ct); err != nil || idx != 3 || string(plain) != "fourth" {
		t.Errorf("decrypt after reopen: %q at index %d, %v; want \"fourth\" at 3", plain, idx, err)
	}
	// A different event at a used index is a replay.
	if ok, _ := r.ValidateMessageIndex(ctx, igs.ID(), "$other", 0, 2000); ok {
		t.Error("replayed index accepted after reopen")
	}
	if ok, _ := r.ValidateMessageIndex(ctx, igs.ID(), "$first", 0, 1000); !ok {
		t.Error("the same event at its own index refused after reopen")
	}
	checkReopenedKeys(t, r, room, ogs.ID())
}

func checkReopenedKeys(t *testing.T, r *cryptoStore, room id.RoomID, ogsID id.SessionID) {
	t.Helper()
	ctx := context.Background()
	if v, _ := r.GetSecret(ctx, id.SecretXSMaster); v != "master secret value" {
		t.Errorf("secret after reopen %q", v)
	}
	if d, _ := r.GetDevice(ctx, "@ann:example.org", "PHONE"); d == nil || d.Trust != id.TrustStateVerified {
		t.Errorf("device after reopen: %+v", d)
	}
	if k, _ := r.GetCrossSigningKeys(ctx, "@ann:example.org"); k[id.XSUsageMaster].Key != "annmaster" {
		t.Errorf("cross-signing keys after reopen: %+v", k)
	}
	if ok, _ := r.IsKeySignedBy(ctx, "@ann:example.org", "phonekey", "@ann:example.org", "annself"); !ok {
		t.Error("signature lost")
	}
	if ok, _ := r.IsOutboundGroupSessionShared(ctx, "@ann:example.org", "phonecurve", ogsID); !ok {
		t.Error("shared marker lost")
	}
	if _, err := r.GetGroupSession(ctx, room, "gone"); !errors.Is(err, crypto.ErrGroupSessionWithheld) {
		t.Errorf("withheld session: %v, want ErrGroupSessionWithheld", err)
	}
	if at, _ := r.GetOlmHash(ctx, [32]byte{1, 2, 3}); at.IsZero() {
		t.Error("olm hash lost")
	}
	if enc, _ := r.rooms.IsEncrypted(ctx, room); !enc {
		t.Error("room encryption state lost")
	}
	if m, _ := r.rooms.GetRoomJoinedOrInvitedMembers(ctx, room); len(m) != 1 || m[0] != "@ann:example.org" {
		t.Errorf("members after reopen: %v", m)
	}
}

// TestCryptoStoreFileHoldsNoClearSecrets: the file is 0600 and holds the
// secret material only pickled.
func TestCryptoStoreFileHoldsNoClearSecrets(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "matrix-crypto.json")
	s := openTestStore(t, path, testKey())
	p := newOlmPair(t)
	must(t, s.PutAccount(ctx, p.account))
	ogs, err := crypto.NewOutboundGroupSession("!r:x", nil)
	must(t, err)
	must(t, s.AddOutboundGroupSession(ctx, ogs))
	must(t, s.PutSecret(ctx, id.SecretXSSelfSigning, "clear-secret-value"))
	must(t, s.close())
	b, err := os.ReadFile(path)
	must(t, err)
	for name, secret := range map[string]string{"secret": "clear-secret-value", "megolm key": ogs.Internal.Key()} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the %s is in the file in clear", name)
		}
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if err := newCryptoStore(path, bytes.Repeat([]byte{8}, 32), testUser, slog.New(slog.DiscardHandler)).load(); !errors.Is(err, errCryptoFile) || !strings.Contains(err.Error(), "matrix-crypto.key") {
		t.Errorf("load with another key: %v, want errCryptoFile naming the key", err)
	}
}

func TestCryptoStoreBadFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	s := openTestStore(t, good, testKey())
	must(t, s.PutAccount(ctx, crypto.NewOlmAccount()))
	must(t, s.close())
	full, _ := os.ReadFile(good)
	for name, content := range map[string][]byte{
		"truncated":     full[:len(full)/2],
		"empty":         {},
		"not json":      []byte("SQLite format 3\x00"),
		"wrong version": []byte(`{"version":99}`),
		"bad hash":      []byte(`{"version":1,"olmHashes":{"zz":"2026-01-01T00:00:00Z"}}`),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
			must(t, os.WriteFile(path, content, 0o600))
			err := newCryptoStore(path, testKey(), testUser, slog.New(slog.DiscardHandler)).load()
			if !errors.Is(err, errCryptoFile) || !strings.Contains(err.Error(), path) {
				t.Errorf("load: %v, want errCryptoFile naming %s", err, path)
			}
		})
	}
	t.Run("another user", func(t *testing.T) {
		err := newCryptoStore(good, testKey(), "@other:example.org", slog.New(slog.DiscardHandler)).load()
		if err == nil || !strings.Contains(err.Error(), string(testUser)) {
			t.Errorf("load as another user: %v", err)
		}
	})
}

// TestCryptoStoreDelayedSave: changes that may wait reach the file by
// themselves, without a Flush.
func TestCryptoStoreDelayedSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "matrix-crypto.json")
	s := openTestStore(t, path, testKey())
	t.Cleanup(func() { _ = s.close() })
	must(t, s.PutDevice(context.Background(), "@ann:example.org", &id.Device{UserID: "@ann:example.org", DeviceID: "TABLET"}))
	deadline := time.Now().Add(3 * saveDelay)
	for {
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte("TABLET")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the device list was not saved within %v", 3*saveDelay)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCryptoStoreConcurrentUse: the machine's goroutines, the sync loop
// and the delayed save use the store at once (run with -race); nothing is
// lost.
func TestCryptoStoreConcurrentUse(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "matrix-crypto.json")
	s := openTestStore(t, path, testKey())
	room := id.RoomID("!busy:example.org")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := id.UserID(fmt.Sprintf("@u%d:example.org", g))
			for i := range 20 {
				dev := id.DeviceID(fmt.Sprintf("D%d", i))
				if err := s.PutDevice(ctx, user, &id.Device{UserID: user, DeviceID: dev}); err != nil {
					t.Error(err)
				}
				if d, _ := s.GetDevices(ctx, user); d[dev] == nil {
					t.Errorf("device %s/%s not found right after PutDevice", user, dev)
				}
				_, _ = s.ValidateMessageIndex(ctx, id.SessionID(user), id.EventID(fmt.Sprintf("$%d", i)), uint(i), int64(i))
				if err := s.rooms.SetMembership(ctx, room, user, event.MembershipJoin); err != nil {
					t.Error(err)
				}
				_, _ = s.rooms.GetRoomJoinedOrInvitedMembers(ctx, room)
				if i%5 == 0 {
					if err := s.Flush(ctx); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	r := reopen(t, s)
	members, _ := r.rooms.GetRoomJoinedOrInvitedMembers(ctx, room)
	if len(members) != 8 {
		t.Errorf("%d members after reopen, want 8", len(members))
	}
	for g := range 8 {
		user := id.UserID(fmt.Sprintf("@u%d:example.org", g))
		if d, _ := r.GetDevices(ctx, user); len(d) != 20 {
			t.Errorf("%s has %d devices after reopen, want 20", user, len(d))
		}
		if ok, _ := r.ValidateMessageIndex(ctx, id.SessionID(user), "$replay", 19, 1); ok {
			t.Errorf("index 19 of %s forgotten", user)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCryptoStoreMessage is the store's cost of one decrypted
// message (its index is on disk before it returns) with n messages seen
// before: one journal line, whatever n.
func BenchmarkCryptoStoreMessage(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			s := newCryptoStore(filepath.Join(b.TempDir(), "matrix-crypto.json"), testKey(), testUser, slog.New(slog.DiscardHandler))
			if err := s.load(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.close() })
			for i := range n {
				s.indices[indexKey{"old", uint(i)}] = indexValue{id.EventID(fmt.Sprintf("$old%d", i)), int64(i)}
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.ValidateMessageIndex(ctx, "new", "$new", uint(i), int64(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCryptoStoreIndexJournal: a line a crash cut short is dropped and the
// journal goes on; a bad line inside it is an error naming the file.
func TestCryptoStoreIndexJournal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "matrix-crypto.json")
	s := openTestStore(t, path, testKey())
	if ok, err := s.ValidateMessageIndex(ctx, "sess", "$one", 1, 1); !ok || err != nil {
		t.Fatalf("first index: %v %v", ok, err)
	}
	must(t, s.close())
	journal := indexJournalPath(path)
	f, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString(`{"Session":"sess","Ind`)
	must(t, err)
	must(t, f.Close())

	r := openTestStore(t, path, testKey())
	if ok, _ := r.ValidateMessageIndex(ctx, "sess", "$replay", 1, 9); ok {
		t.Error("index 1 forgotten after a torn line")
	}
	if ok, err := r.ValidateMessageIndex(ctx, "sess", "$two", 2, 2); !ok || err != nil {
		t.Fatalf("index after the torn line: %v %v", ok, err)
	}
	r2 := reopen(t, r)
	if ok, _ := r2.ValidateMessageIndex(ctx, "sess", "$replay", 2, 9); ok {
		t.Error("index 2, written after the torn line, forgotten")
	}
	must(t, r2.close())
	if st, _ := os.Stat(journal); st.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", st.Mode().Perm())
	}

	must(t, os.WriteFile(journal, []byte("{\"Session\":\"sess\"}\n{\"Index\":\"two\"}\n{}\n"), 0o600))
	if err := newCryptoStore(path, testKey(), testUser, slog.New(slog.DiscardHandler)).load(); !errors.Is(err, errCryptoFile) || !strings.Contains(err.Error(), journal+" line 2") {
		t.Errorf("load with a bad journal line: %v", err)
	}
}
