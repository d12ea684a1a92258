package api

import (
	"strings"
	"testing"
)

func TestValidSessionID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"", false},
		{"a", true},
		{"tg:123.x_y-z", true},
		{strings.Repeat("s", 128), true},
		{strings.Repeat("s", 129), false},
		{"has space", false},
		{"../etc", false},
		{"é", false},
	}
	for _, tt := range tests {
		if got := validSessionID(tt.id); got != tt.want {
			t.Errorf("validSessionID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}
