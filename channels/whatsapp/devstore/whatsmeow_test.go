package devstore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mau.fi/libsignal/ecc"
	"go.mau.fi/libsignal/keys/identity"
	"go.mau.fi/libsignal/keys/prekey"
	"go.mau.fi/libsignal/util/optional"
	"go.mau.fi/whatsmeow"
	waBinary "go.mau.fi/whatsmeow/binary"
	"go.mau.fi/whatsmeow/proto/waAdv"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"

	"github.com/nanobot-go/nanobot/channels/whatsapp/devstore"
)

var (
	alicePN = types.NewADJID("491700000001", 0, 1)
	bobPN   = types.NewADJID("491700000002", 0, 1)
)

func open(t *testing.T, path string) *devstore.Store {
	t.Helper()
	s, err := devstore.Open(path, devstore.Options{NoSync: true, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// paired opens the store at path and, if it holds no device, pairs a new
// one as jid the way whatsmeow does after a successful pairing (ID and
// account set, then Save).
func paired(t *testing.T, path string, jid types.JID) (*devstore.Store, *whatsmeow.Client) {
	t.Helper()
	s := open(t, path)
	d, err := s.Device()
	if err != nil {
		t.Fatal(err)
	}
	if d.ID == nil {
		d.ID = &jid
		d.Account = &waAdv.ADVSignedDeviceIdentity{Details: []byte("details"), AccountSignatureKey: make([]byte, 32), AccountSignature: make([]byte, 64), DeviceSignature: make([]byte, 64)}
		d.PushName = "bot"
		if err := d.Save(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	cli := whatsmeow.NewClient(d, nil)
	cli.EnableDecryptedEventBuffer = true
	return s, cli
}

// bundle is what WhatsApp's server would hand out for cli's device: its
// identity, signed prekey and one uploaded one-time prekey.
func bundle(t *testing.T, cli *whatsmeow.Client) *prekey.Bundle {
	t.Helper()
	ctx := t.Context()
	keys, err := cli.Store.PreKeys.GetOrGenPreKeys(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Store.PreKeys.MarkPreKeysAsUploaded(ctx, keys[len(keys)-1].KeyID); err != nil {
		t.Fatal(err)
	}
	d, pk := cli.Store, keys[0]
	return prekey.NewBundle(d.RegistrationID, uint32(d.ID.Device), optional.NewOptionalUint32(pk.KeyID), d.SignedPreKey.KeyID,
		ecc.NewDjbECPublicKey(*pk.Pub), ecc.NewDjbECPublicKey(*d.SignedPreKey.Pub), *d.SignedPreKey.Signature,
		identity.NewKey(ecc.NewDjbECPublicKey(*d.IdentityKey.Pub)))
}

func encrypt(t *testing.T, from *whatsmeow.Client, to types.JID, b *prekey.Bundle, text string) *waBinary.Node {
	t.Helper()
	node, _, err := from.DangerousInternals().EncryptMessageForDevice(t.Context(), []byte(text), to, b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return node
}

func decrypt(ctx context.Context, to *whatsmeow.Client, from types.JID, node *waBinary.Node) (string, error) {
	pt, hash, err := to.DangerousInternals().DecryptDM(ctx, node, from, node.AttrGetter().String("type") == "pkmsg", time.Now())
	if err == nil {
		// handled: whatsmeow drops the buffered plaintext
		err = to.Store.EventBuffer.ClearBufferedEventPlaintext(ctx, *hash)
	}
	return string(pt), err
}

// crashCopy is the file at path as a crash would leave it: copied now, so
// the running store's later writes do not reach it.
func crashCopy(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return cp
}

// whatsmeow's own Signal code encrypts and decrypts through two stores; the
// ratchet, identities and used prekeys survive reopening each store from
// its file, without Close (as after a crash).
func TestWhatsmeowSignalSessionsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	alicePath, bobPath := filepath.Join(dir, "alice.gob"), filepath.Join(dir, "bob.gob")
	_, alice := paired(t, alicePath, alicePN)
	_, bob := paired(t, bobPath, bobPN)
	ctx := t.Context()

	b := bundle(t, bob)
	usedPreKey := b.PreKeyID().Value
	first := encrypt(t, alice, bobPN, b, "hello bob")
	if got, err := decrypt(ctx, bob, alicePN, first); err != nil || got != "hello bob" {
		t.Fatalf("bob decrypted %q, %v", got, err)
	}
	if k, _ := bob.Store.PreKeys.GetPreKey(ctx, usedPreKey); k != nil {
		t.Error("the one-time prekey was not removed after use")
	}
	// The same ciphertext again is recognised by the event buffer.
	if _, err := decrypt(ctx, bob, alicePN, first); !errors.Is(err, whatsmeow.EventAlreadyProcessed) {
		t.Errorf("redelivery: %v, want EventAlreadyProcessed", err)
	}

	for round := range 3 {
		// Both sides come back from their files, as after a crash.
		alicePath, bobPath = crashCopy(t, alicePath), crashCopy(t, bobPath)
		_, alice = paired(t, alicePath, alicePN)
		_, bob = paired(t, bobPath, bobPN)
		reply := encrypt(t, bob, alicePN, nil, "reply")
		if got, err := decrypt(ctx, alice, bobPN, reply); err != nil || got != "reply" {
			t.Fatalf("round %d: alice decrypted %q, %v", round, got, err)
		}
		again := encrypt(t, alice, bobPN, nil, "again")
		if got, err := decrypt(ctx, bob, alicePN, again); err != nil || got != "again" {
			t.Fatalf("round %d: bob decrypted %q, %v", round, got, err)
		}
	}
	if trusted, _ := bob.Store.Identities.IsTrustedIdentity(ctx, alicePN.SignalAddress().String(), *alice.Store.IdentityKey.Pub); !trusted {
		t.Error("alice's identity is not trusted after the exchange")
	}
	if trusted, _ := bob.Store.Identities.IsTrustedIdentity(ctx, alicePN.SignalAddress().String(), [32]byte{1}); trusted {
		t.Error("another identity key for alice is trusted")
	}
}

// A decryption transaction that fails leaves the ratchet where it was:
// the message decrypts again afterwards (without the rollback its message
// key would be used up).
func TestWhatsmeowFailedDecryptionRollsBack(t *testing.T) {
	dir := t.TempDir()
	_, alice := paired(t, filepath.Join(dir, "alice.gob"), alicePN)
	bobPath := filepath.Join(dir, "bob.gob")
	bobStore, bob := paired(t, bobPath, bobPN)
	ctx := t.Context()
	if got, err := decrypt(ctx, bob, alicePN, encrypt(t, alice, bobPN, bundle(t, bob), "setup")); err != nil || got != "setup" {
		t.Fatalf("setup: %q %v", got, err)
	}
	node := encrypt(t, alice, bobPN, nil, "second")
	handlerFailed := errors.New("handler failed after decrypting")
	err := bobStore.DoDecryptionTxn(ctx, func(ctx context.Context) error {
		got, err := decrypt(ctx, bob, alicePN, node)
		if err != nil || got != "second" {
			t.Errorf("inside the txn: %q %v", got, err)
		}
		return handlerFailed
	})
	if !errors.Is(err, handlerFailed) {
		t.Fatalf("txn = %v", err)
	}
	_, bob = paired(t, crashCopy(t, bobPath), bobPN) // and the file agrees
	if got, err := decrypt(ctx, bob, alicePN, node); err != nil || got != "second" {
		t.Fatalf("after rollback: %q %v, want the message to decrypt again", got, err)
	}
}

// The device (keys, JID, LID, account) round-trips through the file, and a
// client built on it is logged-in material: whatsmeow sees the same ids.
func TestWhatsmeowDeviceRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wa.gob")
	s := open(t, path)
	d, err := s.Device()
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != nil || d.Initialized {
		t.Fatalf("fresh store gave a paired device: %+v", d.ID)
	}
	if err := d.Save(t.Context()); !errors.Is(err, devstore.ErrNoDeviceID) {
		t.Fatalf("Save before pairing = %v, want ErrNoDeviceID", err)
	}
	st, cli := paired(t, path, alicePN)
	lid := types.NewJID("12345", types.HiddenUserServer)
	cli.Store.LID = lid
	if err := cli.Store.Save(t.Context()); err != nil {
		t.Fatal(err)
	}
	cli.StoreLIDPNMapping(t.Context(), lid, alicePN.ToNonAD())
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	_, again := paired(t, path, types.EmptyJID)
	got := again.Store
	switch {
	case got.ID.String() != alicePN.String(), got.LID != lid, got.PushName != "bot":
		t.Errorf("ids %v %v %q", got.ID, got.LID, got.PushName)
	case *got.IdentityKey.Priv != *cli.Store.IdentityKey.Priv, *got.NoiseKey.Priv != *cli.Store.NoiseKey.Priv,
		*got.SignedPreKey.Signature != *cli.Store.SignedPreKey.Signature, got.RegistrationID != cli.Store.RegistrationID:
		t.Error("keys changed across reopen")
	case string(got.Account.GetDetails()) != "details":
		t.Errorf("account %v", got.Account)
	}
	if !again.IsLoggedIn() && again.Store.ID == nil {
		t.Error("client has no device id")
	}
	if pn, err := again.Store.GetAltJID(t.Context(), lid); err != nil || pn != alicePN.ToNonAD() {
		t.Errorf("GetAltJID(%v) = %v, %v; the LID mapping was not saved on Close", lid, pn, err)
	}
	var _ store.DeviceContainer = again.Store.Container
}

// A process killed (SIGKILL) in the middle of a stream of durable writes
// leaves a whole file holding one of the last states, and no temporary
// files once the store is opened again.
func TestKilledWriterLeavesWholeFile(t *testing.T) {
	if path := os.Getenv("DEVSTORE_CRASH_CHILD"); path != "" {
		crashChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "wa.gob")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterLeavesWholeFile$")
	cmd.Env = append(os.Environ(), "DEVSTORE_CRASH_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	last := 0
	for lines.Scan() && last < 200 {
		last, _ = strconv.Atoi(strings.TrimPrefix(lines.Text(), "saved "))
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if last < 200 {
		t.Fatalf("child stopped after %d writes", last)
	}
	s, err := devstore.Open(path, devstore.Options{})
	if err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	got, _ := s.GetSession(t.Context(), "peer:1")
	n, err := strconv.Atoi(string(got))
	if err != nil || n < last {
		t.Errorf("session %q after the kill, want a counter ≥ %d (it was reported saved)", got, last)
	}
	if stale, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*")); len(stale) > 0 {
		t.Errorf("temporary files left: %v", stale)
	}
}

// crashChild writes a growing counter as a session until it is killed,
// reporting each write once it returned.
func crashChild(path string) {
	s, err := devstore.Open(path, devstore.Options{NoSync: true})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	filler := bytes.Repeat([]byte{1}, 64<<10) // a realistic file size
	if err := s.PutSenderKey(context.Background(), "group", "filler", filler); err != nil {
		os.Exit(1)
	}
	for i := 1; ; i++ {
		if err := s.PutSession(context.Background(), "peer:1", []byte(strconv.Itoa(i))); err != nil {
			fmt.Println("put:", err)
			os.Exit(1)
		}
		fmt.Printf("saved %d\n", i)
	}
}
