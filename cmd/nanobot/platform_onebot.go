//go:build !nanobot_omit_onebot

package main

import "github.com/nanobot-go/nanobot/channels/onebot"

func init() { optionalPlatforms["onebot"] = onebot.Factory }
