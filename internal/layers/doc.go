// Package layers holds the tests that keep the house as drawn in
// docs/architecture.md: which packages each layer may import (no import
// runs upward), and that every package says what it is for and, where it
// shares state between goroutines, its concurrency rules. It has no code.
package layers
