//go:build !nanobot_omit_mattermost

package main

import "github.com/nanobot-go/nanobot/channels/mattermost"

func init() { optionalPlatforms["mattermost"] = mattermost.Factory }
