package channels

import (
	"net/http"
	"sync"
)

// Serving returns what Run published in slot (see Publish) to a webhook
// handler. While slot holds the zero value Run is not running: Serving
// answers 503, so that the platform delivers the request again later, and
// ok is false.
func Serving[T comparable](w http.ResponseWriter, mu *sync.Mutex, slot *T) (v T, ok bool) {
	mu.Lock()
	v = *slot
	mu.Unlock()
	var zero T
	if v == zero {
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return zero, false
	}
	return v, true
}
