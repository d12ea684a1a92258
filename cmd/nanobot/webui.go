package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/webui"
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
		// Reload without the NANOBOT_ config variables, so they are not
		// written into the file; ${VAR} references are expanded from the
		// environment as usual and written back as references.
		l, err := configs.Load(configs.Options{Path: a.loaded.Path, Environ: withoutConfigVars(os.Environ()), Platforms: platformTypes()})
		if err != nil {
			return err
		}
		l.Config.Gateway.WebUI.Password = hash
		if err := l.Save(); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "workbench password set in %s; restart the gateway to apply it\n", l.Path)
		return nil
	})
	setPassword.Long = "Asks for the password twice on a terminal, or reads one line from standard input, " +
		"and writes its bcrypt hash to gateway.webui.password. Restart the gateway to apply it."
	return group("webui", "Manage the web workbench (http://127.0.0.1:18790/)", setPassword)
}

// withoutConfigVars drops the variables that override config keys
// (NANOBOT_A__B=...).
func withoutConfigVars(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, configs.EnvPrefix) && strings.Contains(name, "__") {
			continue
		}
		out = append(out, kv)
	}
	return out
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
