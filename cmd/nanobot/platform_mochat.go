//go:build !nanobot_omit_mochat

package main

import "github.com/nanobot-go/nanobot/channels/mochat"

func init() { optionalPlatforms["mochat"] = mochat.Factory }
