package agent

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
)

// TestFailureReplySignIn: a lost subscription sign-in, however deep in the
// error chain (backend error, URL error, a fallback chain's joined errors),
// gives one reply naming the command, not the 401 wording.
func TestFailureReplySignIn(t *testing.T) {
	se := &providers.SignInError{Provider: "github-copilot", Reason: "signed out"}
	backend := &providers.Error{Provider: "github-copilot", Message: "Post ...", Err: &url.Error{Op: "Post", URL: "https://api.githubcopilot.com/chat/completions", Err: se}}
	chain := fmt.Errorf("all 2 models failed: %w", errors.Join(fmt.Errorf("model a: %w", backend), errors.New("model b: status 500")))
	for _, err := range []error{se, backend, chain} {
		got := failureReply(err)
		if !strings.Contains(got, "`nanobot provider login github-copilot`") || strings.Contains(got, "API key") {
			t.Errorf("failureReply(%v) = %q", err, got)
		}
	}
}
