//go:build !nanobot_omit_line

package main

import "github.com/nanobot-go/nanobot/channels/line"

func init() { optionalPlatforms["line"] = line.Factory }
