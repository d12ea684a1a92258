//go:build !linux

package sandbox

import "errors"

// LandlockABI is 0: Landlock is a Linux feature.
func LandlockABI() int { return 0 }

func confineAndExec(policy, string, []string) error {
	return errors.New("confinement is only available on Linux")
}
