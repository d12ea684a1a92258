//go:build !linux

package sandbox

import "os"

func portWallFile(policy) (*os.File, error) { return nil, nil }

func portDiscoveryMissing() string { return "confinement is only available on Linux" }
