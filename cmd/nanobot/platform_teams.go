//go:build !nanobot_omit_teams

package main

import "github.com/nanobot-go/nanobot/channels/teams"

func init() { optionalPlatforms["teams"] = teams.Factory }
