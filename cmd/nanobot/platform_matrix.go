//go:build !nanobot_omit_matrix

package main

import "github.com/nanobot-go/nanobot/channels/matrix"

func init() { optionalPlatforms["matrix"] = matrix.Factory }
