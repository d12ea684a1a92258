// Package battery is the sandbox's security test battery: escapes tried
// from inside the exec tool and from inside an MCP stdio server, each under
// every confining mode the host offers, with the same escape run unconfined
// first as the control that proves the check can see it succeed. It holds
// tests only; `go test ./tools/sandbox/battery` runs it (CI does, through
// .ci/run).
package battery
