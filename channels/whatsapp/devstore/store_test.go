package devstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"

	"github.com/nanobot-go/nanobot/channels/whatsapp/devstore"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// reopened closes s and opens its file again, so each check below also
// holds after a restart.
func reopened(t *testing.T, s *devstore.Store) *devstore.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return open(t, s.Path())
}

func fresh(t *testing.T) *devstore.Store {
	return open(t, filepath.Join(t.TempDir(), "wa.gob"))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestIdentities(t *testing.T) {
	ctx, s := t.Context(), fresh(t)
	k1, k2 := [32]byte{1}, [32]byte{2}
	if ok, _ := s.IsTrustedIdentity(ctx, "bob:1", k1); !ok {
		t.Error("an unknown identity is not trusted on first use")
	}
	must(t, s.PutIdentity(ctx, "bob:1", k1))
	must(t, s.PutIdentity(ctx, "bob:2", k1))
	must(t, s.PutIdentity(ctx, "bobby:1", k1))
	s = reopened(t, s)
	if ok, _ := s.IsTrustedIdentity(ctx, "bob:1", k2); ok {
		t.Error("a changed identity key is trusted")
	}
	if ok, _ := s.IsTrustedIdentity(ctx, "bob:1", k1); !ok {
		t.Error("the stored identity key is not trusted")
	}
	must(t, s.DeleteIdentity(ctx, "bob:2"))
	if ok, _ := s.IsTrustedIdentity(ctx, "bob:2", k2); !ok {
		t.Error("bob:2 still pinned after DeleteIdentity")
	}
	must(t, s.DeleteAllIdentities(ctx, "bob"))
	s = reopened(t, s)
	if ok, _ := s.IsTrustedIdentity(ctx, "bob:1", k2); !ok {
		t.Error("bob:1 still pinned after DeleteAllIdentities")
	}
	if ok, _ := s.IsTrustedIdentity(ctx, "bobby:1", k2); ok {
		t.Error("DeleteAllIdentities(bob) also removed bobby")
	}
}

func TestSessions(t *testing.T) {
	ctx, s := t.Context(), fresh(t)
	must(t, s.PutSession(ctx, "bob:1", []byte("s1")))
	must(t, s.PutManySessions(ctx, map[string][]byte{"bob:2": []byte("s2"), "carol:1": []byte("c1")}))
	s = reopened(t, s)
	if got, _ := s.GetSession(ctx, "bob:2"); string(got) != "s2" {
		t.Errorf("GetSession = %q", got)
	}
	if got, err := s.GetSession(ctx, "nobody:1"); got != nil || err != nil {
		t.Errorf("missing session = %q, %v; want nil, nil", got, err)
	}
	if has, _ := s.HasSession(ctx, "carol:1"); !has {
		t.Error("HasSession(carol:1) = false")
	}
	many, _ := s.GetManySessions(ctx, []string{"bob:1", "nobody:1"})
	if len(many) != 2 || string(many["bob:1"]) != "s1" || many["nobody:1"] != nil {
		t.Errorf("GetManySessions = %q", many)
	}
	if many, _ := s.GetManySessions(ctx, nil); many != nil {
		t.Errorf("GetManySessions(nil) = %v", many)
	}
	must(t, s.DeleteSession(ctx, "carol:1"))
	must(t, s.DeleteAllSessions(ctx, "bob"))
	s = reopened(t, s)
	for _, a := range []string{"bob:1", "bob:2", "carol:1"} {
		if has, _ := s.HasSession(ctx, a); has {
			t.Errorf("%s survived its deletion", a)
		}
	}
}

func TestMigratePNToLID(t *testing.T) {
	ctx, s := t.Context(), fresh(t)
	pn := types.NewJID("491700000002", types.DefaultUserServer)
	lid := types.NewJID("777", types.HiddenUserServer)
	must(t, s.PutSession(ctx, "491700000002:1", []byte("pn-session")))
	must(t, s.PutSession(ctx, "777_1:1", []byte("old-lid-session")))
	must(t, s.PutIdentity(ctx, "491700000002:1", [32]byte{9}))
	must(t, s.PutSenderKey(ctx, "group@g.us", "491700000002:1", []byte("sk")))
	must(t, s.MigratePNToLID(ctx, pn, lid))
	s = reopened(t, s)
	lidUser := lid.SignalAddressUser()
	if got, _ := s.GetSession(ctx, lidUser+":1"); string(got) != "pn-session" {
		t.Errorf("session under the LID = %q", got)
	}
	if has, _ := s.HasSession(ctx, "491700000002:1"); has {
		t.Error("the phone-number session stayed")
	}
	if ok, _ := s.IsTrustedIdentity(ctx, lidUser+":1", [32]byte{8}); ok {
		t.Error("the identity did not move to the LID")
	}
	if got, _ := s.GetSenderKey(ctx, "group@g.us", lidUser+":1"); string(got) != "sk" {
		t.Errorf("sender key under the LID = %q", got)
	}
	if got, _ := s.GetSenderKey(ctx, "group@g.us", "491700000002:1"); got != nil {
		t.Error("the phone-number sender key stayed")
	}
}

func TestPreKeys(t *testing.T) {
	ctx, s := t.Context(), fresh(t)
	first, err := s.GetOrGenPreKeys(ctx, 5)
	must(t, err)
	again, _ := s.GetOrGenPreKeys(ctx, 3)
	for i := range again {
		if again[i].KeyID != first[i].KeyID || *again[i].Priv != *first[i].Priv {
			t.Fatalf("GetOrGenPreKeys did not hand out the same unuploaded keys: %d vs %d", again[i].KeyID, first[i].KeyID)
		}
	}
	if n, _ := s.UploadedPreKeyCount(ctx); n != 0 {
		t.Errorf("uploaded %d before marking", n)
	}
	must(t, s.MarkPreKeysAsUploaded(ctx, first[2].KeyID))
	s = reopened(t, s)
	if n, _ := s.UploadedPreKeyCount(ctx); n != 3 {
		t.Errorf("uploaded %d, want 3", n)
	}
	next, _ := s.GetOrGenPreKeys(ctx, 4) // 2 left unuploaded + 2 new
	if next[0].KeyID != first[3].KeyID || next[1].KeyID != first[4].KeyID || next[2].KeyID <= first[4].KeyID {
		t.Errorf("ids %d %d %d after %d", next[0].KeyID, next[1].KeyID, next[2].KeyID, first[4].KeyID)
	}
	one, _ := s.GenOnePreKey(ctx)
	if n, _ := s.UploadedPreKeyCount(ctx); n != 4 || one.KeyID <= next[3].KeyID {
		t.Errorf("GenOnePreKey: id %d, uploaded %d; want a new uploaded key", one.KeyID, n)
	}
	must(t, s.RemovePreKey(ctx, one.KeyID))
	s = reopened(t, s)
	if k, _ := s.GetPreKey(ctx, one.KeyID); k != nil {
		t.Error("removed prekey still there")
	}
	if k, _ := s.GetPreKey(ctx, first[0].KeyID); k == nil || *k.Pub != *first[0].Pub {
		t.Error("GetPreKey lost a key")
	}
	if fresh, _ := s.GenOnePreKey(ctx); fresh.KeyID <= one.KeyID {
		t.Errorf("a removed prekey id (%d) was reused: %d", one.KeyID, fresh.KeyID)
	}
}

func TestAppState(t *testing.T) {
	ctx, s := t.Context(), fresh(t)
	must(t, s.PutAppStateSyncKey(ctx, []byte("k1"), store.AppStateSyncKey{Data: []byte("d1"), Timestamp: 10}))
	must(t, s.PutAppStateSyncKey(ctx, []byte("k2"), store.AppStateSyncKey{Data: []byte("d2"), Timestamp: 20}))
	must(t, s.PutAppStateSyncKey(ctx, []byte("k1"), store.AppStateSyncKey{Data: []byte("older"), Timestamp: 5}))
	hash := [128]byte{3}
	must(t, s.PutAppStateVersion(ctx, "regular", 7, hash))
	must(t, s.PutAppStateMutationMACs(ctx, "regular", 6, []store.AppStateMutationMAC{{IndexMAC: []byte("i1"), ValueMAC: []byte("v6")}, {IndexMAC: []byte("i2"), ValueMAC: []byte("w6")}}))
	must(t, s.PutAppStateMutationMACs(ctx, "regular", 7, []store.AppStateMutationMAC{{IndexMAC: []byte("i1"), ValueMAC: []byte("v7")}}))
	s = reopened(t, s)
	if k, _ := s.GetAppStateSyncKey(ctx, []byte("k1")); k == nil || string(k.Data) != "d1" {
		t.Errorf("an older key replaced a newer one: %+v", k)
	}
	if id, _ := s.GetLatestAppStateSyncKeyID(ctx); string(id) != "k2" {
		t.Errorf("latest key %q", id)
	}
	if v, h, _ := s.GetAppStateVersion(ctx, "regular"); v != 7 || h != hash {
		t.Errorf("version %d", v)
	}
	if v, _ := s.GetAppStateMutationMAC(ctx, "regular", []byte("i1")); string(v) != "v7" {
		t.Errorf("MAC of the highest version = %q", v)
	}
	must(t, s.DeleteAppStateMutationMACs(ctx, "regular", [][]byte{[]byte("i1")}))
	if v, _ := s.GetAppStateMutationMAC(ctx, "regular", []byte("i1")); v != nil {
		t.Errorf("deleted MAC = %q", v)
	}
	must(t, s.DeleteAppStateVersion(ctx, "regular"))
	s = reopened(t, s)
	if v, h, _ := s.GetAppStateVersion(ctx, "regular"); v != 0 || h != [128]byte{} {
		t.Error("version survived its deletion")
	}
	if v, _ := s.GetAppStateMutationMAC(ctx, "regular", []byte("i2")); v != nil {
		t.Error("MACs survived the deletion of their version")
	}
	if k, _ := s.GetAppStateSyncKey(ctx, []byte("nope")); k != nil {
		t.Error("unknown key found")
	}
}

func TestContactsAndChats(t *testing.T) {
	ctx, s := t.Context(), fresh(t)
	bob := types.NewJID("491700000002", types.DefaultUserServer)
	carol := types.NewJID("491700000003", types.DefaultUserServer)
	if changed, prev, _ := s.PutPushName(ctx, bob, "Bob"); !changed || prev != "" {
		t.Errorf("first push name: %v %q", changed, prev)
	}
	if changed, _, _ := s.PutPushName(ctx, bob, "Bob"); changed {
		t.Error("same push name reported as changed")
	}
	if changed, prev, _ := s.PutPushName(ctx, bob, "Bobby"); !changed || prev != "Bob" {
		t.Errorf("renamed: %v %q", changed, prev)
	}
	if changed, _, _ := s.PutBusinessName(ctx, bob, "Bob's Bikes"); !changed {
		t.Error("business name not changed")
	}
	must(t, s.PutContactName(ctx, bob, "Robert", "Robert Smith"))
	must(t, s.PutAllContactNames(ctx, []store.ContactEntry{{JID: carol, FirstName: "C", FullName: "Carol"}, {JID: carol, FirstName: "Caro", FullName: "Carol B"}}))
	must(t, s.PutManyRedactedPhones(ctx, []store.RedactedPhoneEntry{{JID: carol, RedactedPhone: "+49∙∙∙03"}}))
	muted := time.Unix(2_000_000_000, 0)
	must(t, s.PutMutedUntil(ctx, bob, muted))
	must(t, s.PutPinned(ctx, bob, true))
	must(t, s.PutMutedUntil(ctx, carol, store.MutedForever))
	must(t, s.PutArchived(ctx, carol, true))
	s = reopened(t, s)
	want := types.ContactInfo{Found: true, FirstName: "Robert", FullName: "Robert Smith", PushName: "Bobby", BusinessName: "Bob's Bikes"}
	if got, _ := s.GetContact(ctx, bob); got != want {
		t.Errorf("bob = %+v, want %+v", got, want)
	}
	all, _ := s.GetAllContacts(ctx)
	if c := all[carol]; len(all) != 2 || c.FirstName != "Caro" || c.FullName != "Carol B" || c.RedactedPhone != "+49∙∙∙03" {
		t.Errorf("all contacts %+v", all)
	}
	if got, _ := s.GetContact(ctx, types.NewJID("1", types.DefaultUserServer)); got.Found {
		t.Error("stranger found")
	}
	if cs, _ := s.GetChatSettings(ctx, bob); !cs.Found || !cs.Pinned || !cs.MutedUntil.Equal(muted) || cs.Archived {
		t.Errorf("bob's chat %+v", cs)
	}
	if cs, _ := s.GetChatSettings(ctx, carol); cs.MutedUntil != store.MutedForever || !cs.Archived {
		t.Errorf("carol's chat %+v", cs)
	}
	if cs, _ := s.GetChatSettings(ctx, types.NewJID("1", types.DefaultUserServer)); cs.Found {
		t.Error("unknown chat found")
	}
}

func TestLIDMapAndLookupsThroughIt(t *testing.T) {
	ctx, s := t.Context(), fresh(t)
	pn := types.NewJID("491700000002", types.DefaultUserServer)
	lid := types.NewJID("777", types.HiddenUserServer)
	newLID := types.NewJID("888", types.HiddenUserServer)
	must(t, s.PutLIDMapping(ctx, lid, pn))
	if err := s.PutLIDMapping(ctx, pn, lid); err == nil {
		t.Error("swapped PutLIDMapping accepted")
	}
	if _, err := s.GetPNForLID(ctx, pn); err == nil {
		t.Error("GetPNForLID with a phone number accepted")
	}
	// message secret stored under the phone number, asked for by LID
	chat := types.NewJID("g", types.GroupServer)
	must(t, s.PutMessageSecret(ctx, chat, pn, "m1", []byte("secret")))
	must(t, s.PutMessageSecret(ctx, chat, pn, "m1", []byte("other"))) // kept: first wins
	must(t, s.PutPrivacyTokens(ctx, store.PrivacyToken{User: lid, Token: []byte("old"), Timestamp: time.Unix(100, 0)}, store.PrivacyToken{User: pn, Token: []byte("new"), Timestamp: time.Unix(200, 0)}))
	s = reopened(t, s)
	dev := types.NewADJID("777", 0, 3)
	dev.Server = types.HiddenUserServer
	if got, _ := s.GetPNForLID(ctx, dev); got.User != pn.User || got.Device != 3 {
		t.Errorf("GetPNForLID(%v) = %v", dev, got)
	}
	if got, _ := s.GetLIDForPN(ctx, pn); got != lid {
		t.Errorf("GetLIDForPN = %v", got)
	}
	secret, sender, _ := s.GetMessageSecret(ctx, chat, lid, "m1")
	if string(secret) != "secret" || sender != pn {
		t.Errorf("secret by LID = %q from %v", secret, sender)
	}
	if tok, _ := s.GetPrivacyToken(ctx, lid); tok == nil || string(tok.Token) != "new" || tok.User != lid {
		t.Errorf("newest privacy token by LID = %+v", tok)
	}
	if tok, _ := s.GetPrivacyToken(ctx, types.NewJID("1", types.DefaultUserServer)); tok != nil {
		t.Error("token for a stranger")
	}
	// The number gets a new LID: the old one no longer maps.
	must(t, s.PutManyLIDMappings(ctx, []store.LIDMapping{{LID: newLID, PN: pn}, {LID: pn, PN: lid}}))
	s = reopened(t, s)
	if got, _ := s.GetPNForLID(ctx, lid); !got.IsEmpty() {
		t.Errorf("old LID still maps to %v", got)
	}
	many, _ := s.GetManyLIDsForPNs(ctx, []types.JID{pn, types.NewJID("1", types.DefaultUserServer), lid})
	if len(many) != 1 || many[pn] != newLID {
		t.Errorf("GetManyLIDsForPNs = %v", many)
	}
}

func TestEventBuffer(t *testing.T) {
	ctx, s := t.Context(), fresh(t)
	h := [32]byte{1}
	if ev, err := s.GetBufferedEvent(ctx, h); ev != nil || err != nil {
		t.Fatalf("unknown event %+v %v", ev, err)
	}
	must(t, s.PutBufferedEvent(ctx, h, []byte("plain"), time.Unix(1000, 0)))
	if err := s.PutBufferedEvent(ctx, h, []byte("plain"), time.Unix(1000, 0)); !errors.Is(err, devstore.ErrDuplicateEvent) {
		t.Errorf("duplicate = %v", err)
	}
	s = reopened(t, s)
	ev, _ := s.GetBufferedEvent(ctx, h)
	if ev == nil || string(ev.Plaintext) != "plain" || !ev.ServerTime.Equal(time.Unix(1000, 0)) || time.Since(ev.InsertTime) > time.Minute {
		t.Fatalf("buffered %+v", ev)
	}
	must(t, s.ClearBufferedEventPlaintext(ctx, h))
	s = reopened(t, s)
	if ev, _ := s.GetBufferedEvent(ctx, h); ev == nil || ev.Plaintext != nil {
		t.Errorf("cleared event %+v: want the hash kept and no plaintext", ev)
	}
	must(t, s.DeleteOldBufferedHashes(ctx))
	if ev, _ := s.GetBufferedEvent(ctx, h); ev == nil {
		t.Error("a fresh hash was deleted as old")
	}
}

// A failed transaction undoes exactly its own mutations; a successful one
// is on disk when it returns.
func TestDecryptionTxn(t *testing.T) {
	ctx, s := t.Context(), fresh(t)
	must(t, s.PutSession(ctx, "bob:1", []byte("v1")))
	pk, _ := s.GenOnePreKey(ctx)
	boom := errors.New("boom")
	err := s.DoDecryptionTxn(ctx, func(ctx context.Context) error {
		must(t, s.PutSession(ctx, "bob:1", []byte("v2")))
		must(t, s.PutSession(ctx, "carol:1", []byte("c")))
		must(t, s.RemovePreKey(ctx, pk.KeyID))
		must(t, s.PutBufferedEvent(ctx, [32]byte{5}, []byte("p"), time.Now()))
		return s.DoDecryptionTxn(ctx, func(context.Context) error { return boom }) // nested joins
	})
	if !errors.Is(err, boom) {
		t.Fatalf("txn = %v", err)
	}
	s = open(t, crashCopy(t, s.Path()))
	if got, _ := s.GetSession(ctx, "bob:1"); string(got) != "v1" {
		t.Errorf("bob:1 = %q after rollback", got)
	}
	if has, _ := s.HasSession(ctx, "carol:1"); has {
		t.Error("carol:1 survived the rollback")
	}
	if k, _ := s.GetPreKey(ctx, pk.KeyID); k == nil {
		t.Error("prekey removal not undone")
	}
	if ev, _ := s.GetBufferedEvent(ctx, [32]byte{5}); ev != nil {
		t.Error("buffered event not undone")
	}
	must(t, s.DoDecryptionTxn(ctx, func(ctx context.Context) error {
		return s.PutSession(ctx, "bob:1", []byte("v3"))
	}))
	if got, _ := open(t, crashCopy(t, s.Path())).GetSession(ctx, "bob:1"); string(got) != "v3" {
		t.Errorf("committed session in the file = %q", got)
	}
}

// Pairing another account starts from empty state (the LID map stays);
// deleting the device forgets it.
func TestRepairAndDelete(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "wa.gob")
	s, cli := paired(t, path, alicePN)
	must(t, s.PutSession(ctx, "bob:1", []byte("s")))
	must(t, s.PutLIDMapping(ctx, types.NewJID("777", types.HiddenUserServer), types.NewJID("4917", types.DefaultUserServer)))
	d := cli.Store
	other := bobPN
	d.ID = &other
	must(t, d.Save(ctx))
	if has, _ := s.HasSession(ctx, "bob:1"); has {
		t.Error("a new pairing kept the old account's sessions")
	}
	must(t, d.Delete(ctx))
	s = reopened(t, s)
	if dev, _ := s.Device(); dev.ID != nil {
		t.Errorf("deleted device came back as %v", dev.ID)
	}
	if pn, _ := s.GetPNForLID(ctx, types.NewJID("777", types.HiddenUserServer)); pn.IsEmpty() {
		t.Error("the LID map was dropped with the device")
	}
}

// Many goroutines on one store (go test -race): every durable write lands,
// and the file reopens to the final state.
func TestConcurrentUse(t *testing.T) {
	ctx, s := t.Context(), fresh(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				addr := string(rune('a'+g)) + ":" + string(rune('0'+i%10))
				if err := s.PutSession(ctx, addr, []byte{byte(g), byte(i)}); err != nil {
					t.Error(err)
				}
				_, _ = s.GetSession(ctx, addr)
				_, _, _ = s.PutPushName(ctx, types.NewJID(addr[:1], types.DefaultUserServer), string(rune(i)))
				_ = s.PutLIDMapping(ctx, types.NewJID(string(rune('0'+g)), types.HiddenUserServer), types.NewJID(addr[:1], types.DefaultUserServer))
				_, _ = s.GetOrGenPreKeys(ctx, 2)
				_ = s.DoDecryptionTxn(ctx, func(ctx context.Context) error {
					return s.PutSenderKey(ctx, "grp", addr, []byte{byte(i)})
				})
			}
		}()
	}
	wg.Wait()
	s = reopened(t, s)
	addrs := []string{}
	for g := range 8 {
		addr := string(rune('a'+g)) + ":9"
		got, _ := s.GetSession(ctx, addr)
		if !bytes.Equal(got, []byte{byte(g), 19}) {
			t.Errorf("%s = %v, want the last write [%d 19]", addr, got, g)
		}
		addrs = append(addrs, addr)
	}
	many, _ := s.GetManySessions(ctx, addrs)
	for _, a := range addrs {
		if many[a] == nil {
			t.Errorf("GetManySessions after reopen lacks %s: %v", a, many)
		}
	}
}

func TestFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wa.gob")
	paired(t, path, alicePN)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// Every damaged file is refused with ErrCorrupt and its path, and left as
// it was: truncated at any length, one bit flipped, another format.
func TestDamagedFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wa.gob")
	s, _ := paired(t, path, alicePN)
	if err := s.PutSession(t.Context(), "491700000002.0:1", bytes.Repeat([]byte{7}, 300)); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damaged := map[string][]byte{
		"empty":  {},
		"sqlite": []byte("SQLite format 3\x00\x10\x00"),
	}
	for n := 0; n < len(good); n += max(1, len(good)/97) {
		damaged["truncated at "+strconv.Itoa(n)] = good[:n]
	}
	for _, at := range []int{40, len(good) / 2, len(good) - 1} {
		b := bytes.Clone(good)
		b[at] ^= 0x10
		damaged["bit flipped at "+strconv.Itoa(at)] = b
	}
	for name, data := range damaged {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "wa.gob")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := devstore.Open(p, devstore.Options{})
			if !errors.Is(err, devstore.ErrCorrupt) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Open = %v, want ErrCorrupt naming %s", err, p)
			}
			if after, _ := os.ReadFile(p); !bytes.Equal(after, data) {
				t.Error("the damaged file was changed")
			}
		})
	}
}

// Durable changes are in the file when the call returns; debounced ones
// arrive within the debounce, and at the latest on Close.
func TestDurableAndDebouncedWrites(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "wa.gob")
	s, err := devstore.Open(path, devstore.Options{NoSync: true, Debounce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	carol := types.NewJID("491700000003", types.DefaultUserServer)
	if err := s.PutSession(ctx, "carol:1", []byte("ratchet")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PutPushName(ctx, carol, "Carol"); err != nil {
		t.Fatal(err)
	}
	crashed := open(t, crashCopy(t, path))
	if got, _ := crashed.GetSession(ctx, "carol:1"); string(got) != "ratchet" {
		t.Errorf("session after a crash: %q, want it written before PutSession returned", got)
	}
	if c, _ := crashed.GetContact(ctx, carol); c.Found {
		t.Error("the push name was written at once although its debounce is an hour")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if c, _ := open(t, crashCopy(t, path)).GetContact(ctx, carol); c.PushName != "Carol" {
		t.Errorf("push name after Close: %+v", c)
	}

	fast := open(t, filepath.Join(t.TempDir(), "fast.gob")) // 20 ms debounce
	if _, _, err := fast.PutPushName(ctx, carol, "Carol"); err != nil {
		t.Fatal(err)
	}
	waitfor.Within(t, "the debounced push name in the file", 5*time.Second, func() bool {
		data, err := os.ReadFile(fast.Path())
		if err != nil {
			return false
		}
		cp := filepath.Join(t.TempDir(), "copy.gob")
		if err := os.WriteFile(cp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, _ := open(t, cp).GetContact(ctx, carol)
		return c.PushName == "Carol"
	})
}
