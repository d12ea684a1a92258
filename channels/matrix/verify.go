//go:build goolm

package matrix

import (
	"context"
	"fmt"
	"strings"

	"maunium.net/go/mautrix/crypto/verificationhelper"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/channels"
)

// sasVerifier answers interactive device verification (sasVerification):
// a request from a user the gate admits is accepted, the short
// authentication string (emoji and numbers) is logged for the operator to
// compare with the user's screen, and the bot confirms its side. The
// user's confirmation is what makes the check: a mismatch there cancels
// the verification. Requests from others are cancelled.
//
// mautrix calls these from the sync loop, some with its transaction lock
// held; the calls back into the helper run in goroutines Run waits for.
type sasVerifier struct {
	c  *Channel
	in channels.Inbox
	vh *verificationhelper.VerificationHelper
}

var (
	_ verificationhelper.RequiredCallbacks = (*sasVerifier)(nil)
	_ verificationhelper.ShowSASCallbacks  = (*sasVerifier)(nil)
)

// async runs fn on a goroutine Run waits for before it returns.
func (v *sasVerifier) async(fn func()) {
	v.c.pending.Add(1)
	go func() {
		defer v.c.pending.Done()
		fn()
	}()
}

func (v *sasVerifier) VerificationRequested(ctx context.Context, txn id.VerificationTransactionID, from id.UserID, fromDevice id.DeviceID) {
	log := v.c.log.With("user", from, "device", fromDevice, "transaction", txn)
	if !channels.Admits(v.in, v.c.Name(), string(from)) {
		log.Info("matrix: device verification request declined (sender not on allowFrom)")
		v.async(func() {
			_ = v.vh.CancelVerification(ctx, txn, event.VerificationCancelCodeUser, "this bot verifies only with users on its allow list")
		})
		return
	}
	log.Info("matrix: device verification request accepted")
	v.async(func() {
		if err := v.vh.AcceptVerification(ctx, txn); err != nil && ctx.Err() == nil {
			log.Warn("matrix: accepting a device verification failed", "err", v.c.redact.Error(err))
		}
	})
}

func (v *sasVerifier) VerificationReady(ctx context.Context, txn id.VerificationTransactionID, otherDevice id.DeviceID, supportsSAS, _ bool, _ *verificationhelper.QRCode) {
	v.c.log.Info("matrix: device verification ready; waiting for the other device to start the emoji comparison", "transaction", txn, "device", otherDevice, "sas", supportsSAS)
}

func (v *sasVerifier) ShowSAS(ctx context.Context, txn id.VerificationTransactionID, emojis []rune, descriptions []string, decimals []int) {
	var shown []string
	for i, e := range emojis {
		name := ""
		if i < len(descriptions) {
			name = descriptions[i]
		}
		shown = append(shown, fmt.Sprintf("%c %s", e, name))
	}
	nums := make([]string, len(decimals))
	for i, d := range decimals {
		nums[i] = fmt.Sprint(d)
	}
	v.c.log.Info("matrix: device verification: compare with the user's screen; the bot confirms its side",
		"transaction", txn, "emoji", strings.Join(shown, ", "), "decimals", strings.Join(nums, " "))
	v.async(func() {
		if err := v.vh.ConfirmSAS(ctx, txn); err != nil && ctx.Err() == nil {
			v.c.log.Warn("matrix: confirming a device verification failed", "transaction", txn, "err", v.c.redact.Error(err))
		}
	})
}

func (v *sasVerifier) VerificationCancelled(ctx context.Context, txn id.VerificationTransactionID, code event.VerificationCancelCode, reason string) {
	v.c.log.Info("matrix: device verification cancelled", "transaction", txn, "code", code, "reason", reason)
}

func (v *sasVerifier) VerificationDone(ctx context.Context, txn id.VerificationTransactionID, method event.VerificationMethod) {
	v.c.log.Info("matrix: device verification done: the other device is verified", "transaction", txn, "method", method)
}
