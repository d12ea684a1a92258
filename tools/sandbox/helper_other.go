//go:build !linux

package sandbox

import "errors"

func execConfined(helperConfig) error {
	return errors.New("confinement (landlock, bwrap) exists only on Linux")
}
