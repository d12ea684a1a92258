//go:build !nanobot_omit_dingtalk

package main

import "github.com/nanobot-go/nanobot/channels/dingtalk"

func init() { optionalPlatforms["dingtalk"] = dingtalk.Factory }
