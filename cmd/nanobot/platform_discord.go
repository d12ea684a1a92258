//go:build !nanobot_omit_discord

package main

import "github.com/nanobot-go/nanobot/channels/discord"

func init() { optionalPlatforms["discord"] = discord.Factory }
