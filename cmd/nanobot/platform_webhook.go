//go:build !nanobot_omit_webhook

package main

import "github.com/nanobot-go/nanobot/channels/webhook"

func init() { optionalPlatforms["webhook"] = webhook.Factory }
