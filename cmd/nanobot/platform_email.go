//go:build !nanobot_omit_email

package main

import "github.com/nanobot-go/nanobot/channels/email"

func init() { optionalPlatforms["email"] = email.Factory }
