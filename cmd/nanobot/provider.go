package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/providers/auth"
)

func newProviderCmd(a *app) *cobra.Command {
	var (
		device, paste bool
		timeout       time.Duration
	)
	login := commandArg("login <github-copilot|openai-codex|xai-grok>", "Sign in; the tokens are kept in <instance>/state/auth.json (mode 0600)", func(cmd *cobra.Command, given string) error {
		name, ok := auth.Canonical(given)
		if !ok {
			return fmt.Errorf("provider login: %q is not a sign-in provider (want github-copilot, openai-codex or xai-grok)", given)
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
		defer cancel()
		var pasted <-chan string
		if paste {
			pasted = pasteLines(cmd.InOrStdin())
		}
		return runLogin(ctx, cmd.OutOrStdout(), a.signIn(), name, device, pasted)
	})
	login.Long = `Sign in to a subscription provider.

github-copilot: shows a code and https://github.com/login/device; enter the code
there from any device. openai-codex: opens nothing by itself — it prints a URL
to open in a browser on this machine (the sign-in returns to
http://localhost:1455/auth/callback); on a headless server use --device to get
a code to enter from any browser instead. xai-grok (a Grok or X Premium
subscription; also: xai, grok): prints an auth.x.ai URL to open in a browser on
this machine (the sign-in returns to http://127.0.0.1:<free port>/callback); on
a headless server use --paste, open the URL anywhere, and paste the address the
browser ends on (or its code) here.`
	login.Flags().BoolVar(&device, "device", false, "openai-codex: sign in with a device code (headless servers) instead of the browser redirect")
	login.Flags().BoolVar(&paste, "paste", false, "xai-grok: also accept the address the browser ends on (or the code), pasted here, for a browser on another machine")
	login.Flags().DurationVar(&timeout, "timeout", 15*time.Minute, "give up waiting for the sign-in after this long")

	logout := commandArg("logout <github-copilot|openai-codex|xai-grok>", "Forget the stored sign-in (revoke it at the service to end the grant)", func(cmd *cobra.Command, given string) error {
		name, ok := auth.Canonical(given)
		if !ok {
			return fmt.Errorf("provider logout: %q is not a sign-in provider (want github-copilot, openai-codex or xai-grok)", given)
		}
		found, err := a.signIn().Logout(name)
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		if !found {
			fmt.Fprintf(w, "%s: not signed in\n", name)
			return nil
		}
		fmt.Fprintf(w, "%s: signed out; the tokens were removed from %s\n", name, a.signIn().Store().Path())
		fmt.Fprintln(w, revokeHint(name))
		return nil
	})
	status := command("status", "Show the stored sign-ins and when their tokens expire (never the tokens)", func(cmd *cobra.Command) error {
		return printSignIns(cmd.OutOrStdout(), a.signIn(), time.Now(), "")
	})
	return group("provider", "Sign in to subscription providers (GitHub Copilot, OpenAI Codex, xAI Grok) instead of using API keys", login, logout, status)
}

// pasteLines delivers the first non-empty line read from in (then closes);
// at the end of in it closes without one. The reader goroutine ends there,
// or with the process when nothing is ever typed.
func pasteLines(in io.Reader) <-chan string {
	ch := make(chan string, 1)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, 4096), 64<<10)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				ch <- line
				return
			}
		}
	}()
	return ch
}

func runLogin(ctx context.Context, w io.Writer, m *auth.Manager, name string, device bool, pasted <-chan string) error {
	prompt := func(p auth.Prompt) {
		switch {
		case p.UserCode != "":
			fmt.Fprintf(w, "Open %s and enter the code: %s\n", p.URL, p.UserCode)
			if !p.ExpiresAt.IsZero() {
				fmt.Fprintf(w, "(the code works until %s)\n", p.ExpiresAt.Local().Format("15:04"))
			}
		case name == auth.XAIGrok:
			fmt.Fprintf(w, "Open this URL in a browser to sign in with your Grok (X Premium) subscription:\n\n  %s\n\n", p.URL)
			if pasted != nil {
				fmt.Fprintln(w, "If the browser is on another machine, it ends on an address at 127.0.0.1 that does not load;")
				fmt.Fprintln(w, "paste that address (or the code in it) here and press Enter.")
			} else {
				fmt.Fprintln(w, "(the browser must be on this machine; otherwise stop this and run with --paste)")
			}
		default:
			fmt.Fprintf(w, "Open this URL in a browser on this machine to sign in:\n\n  %s\n\n", p.URL)
			fmt.Fprintln(w, "(on a server without a browser, stop this and run with --device)")
		}
		fmt.Fprintln(w, "Waiting for the sign-in…")
	}
	var (
		c   auth.Credential
		err error
	)
	switch {
	case name == auth.Copilot:
		c, err = m.LoginCopilot(ctx, prompt)
	case name == auth.XAIGrok:
		c, err = m.LoginXAI(ctx, prompt, pasted)
	case device:
		c, err = m.LoginCodexDevice(ctx, prompt)
	default:
		c, err = m.LoginCodex(ctx, prompt)
		if errors.Is(err, auth.ErrLoopbackUnavailable) {
			fmt.Fprintf(w, "The browser redirect cannot listen (%v); using a device code instead.\n", err)
			c, err = m.LoginCodexDevice(ctx, prompt)
		}
	}
	if err != nil {
		return fmt.Errorf("provider login %s: %w", name, err)
	}
	fmt.Fprintf(w, "Signed in to %s", name)
	if c.AccountID != "" {
		fmt.Fprintf(w, " (account %s)", c.AccountID)
	}
	fmt.Fprintf(w, ". Tokens stored in %s (mode 0600).\n", m.Store().Path())
	fmt.Fprintf(w, "Use it with \"provider\": %q in agents.defaults, or a model named %s/<model>.\n", name, name)
	if name == auth.XAIGrok {
		fmt.Fprintln(w, "Hosted X Search is used by itself when the model supports it (providers.xaiGrok.extraBody.tools: [] turns it off).")
	}
	return nil
}

// printSignIns lists the stored sign-ins; indent prefixes each line.
func printSignIns(w io.Writer, m *auth.Manager, now time.Time, indent string) error {
	sts, err := m.Statuses()
	if err != nil {
		return err
	}
	if len(sts) == 0 {
		fmt.Fprintf(w, "%s(none: run `nanobot provider login github-copilot`, `... openai-codex` or `... xai-grok`)\n", indent)
		return nil
	}
	for _, st := range sts {
		line := fmt.Sprintf("%s%-15s signed in", indent, st.Provider)
		if !st.SignedInAt.IsZero() {
			line += " " + st.SignedInAt.Local().Format("2006-01-02 15:04")
		}
		if st.AccountID != "" {
			line += ", account " + st.AccountID
		}
		switch {
		case st.ExpiresAt.IsZero():
			line += ", token expiry unknown"
		case st.ExpiresAt.After(now):
			line += fmt.Sprintf(", token expires %s (in %s)", st.ExpiresAt.Local().Format("2006-01-02 15:04"), st.ExpiresAt.Sub(now).Round(time.Minute))
		case st.Renewable:
			line += fmt.Sprintf(", token expired %s (renewed on the next call)", st.ExpiresAt.Local().Format("2006-01-02 15:04"))
		default:
			line += fmt.Sprintf(", token expired %s — run `nanobot provider login %s`", st.ExpiresAt.Local().Format("2006-01-02 15:04"), st.Provider)
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

func revokeHint(name string) string {
	switch name {
	case auth.Copilot:
		return "To end the grant at GitHub too: Settings → Applications → Authorized OAuth Apps → revoke the Copilot editor app."
	case auth.Codex:
		return "To end the grant at OpenAI too: ChatGPT → Settings → Security → log out of all devices."
	case auth.XAIGrok:
		return "To end the grant at xAI too, sign the session out in your xAI account (accounts.x.ai)."
	}
	return ""
}
