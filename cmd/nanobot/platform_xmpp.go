//go:build !nanobot_omit_xmpp

package main

import "github.com/nanobot-go/nanobot/channels/xmpp"

func init() { optionalPlatforms["xmpp"] = xmpp.Factory }
