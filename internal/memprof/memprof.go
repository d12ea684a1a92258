// Package memprof keeps the runtime's heap-profile sampling off until
// someone asks for profiles.
//
// The Go runtime samples one allocation in every 512 KiB for heap profiles
// whenever a program links the profiler, as the gateway does for its
// opt-in /debug/pprof/ endpoint (gateway.pprof). Each sample walks the
// allocating goroutine's stack and records it in a hash table of 1.4 MiB,
// so from the package initialisers on, a gateway nobody profiles spends
// memory and page faults on profiles nobody reads. Importing this package
// turns sampling off during package initialisation, before the packages
// that allocate most at start-up run: it imports only the runtime, so it
// is initialised among the first. Enable turns it back on.
//
// A rate set with GODEBUG=memprofilerate=N is left alone.
//
// Concurrency: Enable may be called from any goroutine, but, like any write
// of runtime.MemProfileRate, it should happen before the allocations that
// are to be sampled; calling it twice is harmless.
package memprof

import "runtime"

// defaultRate is runtime.MemProfileRate's documented initial value.
const defaultRate = 512 * 1024

func init() {
	if runtime.MemProfileRate == defaultRate {
		runtime.MemProfileRate = 0
	}
}

// Enable turns heap-profile sampling back on at the runtime's default rate
// if this package turned it off. Allocations made before the call are not
// in the heap profile.
func Enable() {
	if runtime.MemProfileRate == 0 {
		runtime.MemProfileRate = defaultRate
	}
}
