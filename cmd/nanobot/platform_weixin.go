//go:build !nanobot_omit_weixin

package main

import "github.com/nanobot-go/nanobot/channels/weixin"

func init() { optionalPlatforms["weixin"] = weixin.Factory }
