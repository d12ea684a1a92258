package channels

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

func TestServing(t *testing.T) {
	var mu sync.Mutex
	var slot chan int
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch, ok := Serving(w, &mu, &slot)
		if !ok {
			return
		}
		ch <- 1
		w.WriteHeader(http.StatusNoContent)
	})

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("while not running: got %d, want 503", rec.Code)
	}

	withdraw := Publish(&mu, &slot, make(chan int, 1))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusNoContent {
		t.Errorf("while running: got %d, want 204", rec.Code)
	}
	if len(slot) != 1 {
		t.Errorf("the handler did not get the published value")
	}

	withdraw()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("after withdraw: got %d, want 503", rec.Code)
	}
}
