package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/gateway/webui"
	"github.com/nanobot-go/nanobot/internal/owner"
)

func newWebUICmd(a *app) *cobra.Command {
	setPassword := command("set-password", "Set the workbench password (stored as a bcrypt hash in config.json)", func(cmd *cobra.Command) error {
		pw, err := readPassword(cmd)
		if err != nil {
			return err
		}
		hash, err := webui.HashPassword(pw)
		if err != nil {
			return err
		}
		// Only the password's value is written: the rest of the file
		// (its layout, ${VAR} references, keys this build does not know)
		// stays as it is, and nothing from the environment gets in.
		if err := a.editConfig(func([]byte) (string, any, error) { return "gateway.webui.password", hash, nil }); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "workbench password set in %s; restart the gateway to apply it\n", a.loaded.Path)
		return nil
	})
	setPassword.Long = "Asks for the password twice on a terminal, or reads one line from standard input, " +
		"and writes its bcrypt hash to gateway.webui.password. Restart the gateway to apply it."
	var printOnly bool
	open := command("open", "Open the workbench in a browser with a one-time sign-in link", func(cmd *cobra.Command) error {
		key, err := owner.Load(owner.Path(a.loaded.Paths.State))
		if err != nil {
			return err
		}
		gw := a.loaded.Config.Gateway
		host := gw.Host
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		link := fmt.Sprintf("http://%s/#login=%s", net.JoinHostPort(host, strconv.Itoa(gw.Port)), key.LoginCode(gateway.SignInTTL))
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n  (a one-time sign-in link, valid %s)\n", link, gateway.SignInTTL)
		if !printOnly {
			if err := openBrowser(link); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "could not start a browser (%v): open the link above yourself\n", err)
			}
		}
		return nil
	})
	open.Long = "Makes a sign-in link that works once, for " + gateway.SignInTTL.String() + ", and opens it in this " +
		"machine's browser (or prints it with --print). Anyone who can read the instance's state folder can make one: " +
		"that is the owner."
	open.Flags().BoolVar(&printOnly, "print", false, "print the link without starting a browser")
	token := command("token", "Print the instance's access token (the web chat's token and an API key)", func(cmd *cobra.Command) error {
		key, err := owner.Load(owner.Path(a.loaded.Paths.State))
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), key.Token())
		return nil
	})
	token.Long = "The token in the state folder's web_token: the classic chat page at /chat asks for it, the " +
		"OpenAI-compatible API accepts it as \"Authorization: Bearer <token>\", and so do the workbench's /api/ routes " +
		"and /debug/pprof/. It is the owner's whole credential: keep it out of chats and files others read."
	return group("webui", "Manage the web workbench (http://127.0.0.1:18790/)", setPassword, open, token)
}

// openBrowser starts the desktop's browser on url.
func openBrowser(url string) error {
	var name string
	var args []string
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler"}
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no graphical session")
		}
		name = "xdg-open"
	}
	cmd := exec.Command(name, append(args, url)...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

func readPassword(cmd *cobra.Command) (string, error) {
	if f, ok := cmd.InOrStdin().(*os.File); ok && readline.IsTerminal(int(f.Fd())) {
		first, err := readline.Password("New workbench password: ")
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		again, err := readline.Password("Again: ")
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		if string(first) != string(again) {
			return "", errors.New("the two passwords differ; nothing changed")
		}
		return string(first), nil
	}
	line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
