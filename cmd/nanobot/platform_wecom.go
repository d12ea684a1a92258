//go:build !nanobot_omit_wecom

package main

import "github.com/nanobot-go/nanobot/channels/wecom"

func init() { optionalPlatforms["wecom"] = wecom.Factory }
