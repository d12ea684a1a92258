//go:build !linux

package gateway

// dropCodePages is a no-op where there is no /proc/self/maps.
func dropCodePages() (int64, error) { return 0, nil }
