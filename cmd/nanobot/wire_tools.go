package main

import "github.com/nanobot-go/nanobot/tools"

// builtinTools builds the configurable built-in tools (exec, files, web).
func builtinTools(a *app) []tools.Tool {
	return nil
}
