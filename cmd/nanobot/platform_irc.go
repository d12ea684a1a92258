//go:build !nanobot_omit_irc

package main

import "github.com/nanobot-go/nanobot/channels/irc"

func init() { optionalPlatforms["irc"] = irc.Factory }
