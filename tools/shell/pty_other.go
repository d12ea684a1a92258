//go:build !unix

package shell

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// ptySupported reports whether exec sessions can run here: they need
// pseudo-terminals and process groups, which this platform lacks.
const ptySupported = false

func startInPTY(*exec.Cmd) (*os.File, error) {
	return nil, fmt.Errorf("exec sessions need a pseudo-terminal, which this platform does not provide: %w", errors.ErrUnsupported)
}
