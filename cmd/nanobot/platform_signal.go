//go:build !nanobot_omit_signal

package main

import "github.com/nanobot-go/nanobot/channels/signal"

func init() { optionalPlatforms["signal"] = signal.Factory }
