//go:build !nanobot_omit_qq

package main

import "github.com/nanobot-go/nanobot/channels/qq"

func init() { optionalPlatforms["qq"] = qq.Factory }
