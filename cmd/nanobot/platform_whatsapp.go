//go:build !nanobot_omit_whatsapp

package main

import "github.com/nanobot-go/nanobot/channels/whatsapp"

func init() { optionalPlatforms["whatsapp"] = whatsapp.Factory }
