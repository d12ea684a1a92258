package sandbox

import "os"

// A binary that links this package becomes the helper when the gateway
// starts it as one: argv[1] is HelperCommand and the marker variable is set.
// Doing this in init, before main or TestMain, lets the running executable
// serve as its own helper whatever its main does (nanobot, or a test binary
// exercising the sandbox); nothing else can trigger it by accident.
func init() {
	if len(os.Args) > 1 && os.Args[1] == HelperCommand && os.Getenv(helperEnv) == "1" {
		os.Exit(ExecMain(os.Args[2:]))
	}
}
