package memory

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSplitSections(t *testing.T) {
	doc := "# Title\nintro\n## A\na\n```\n## not a heading\n```\n## B\nb\n"
	var got []string
	var joined strings.Builder
	for _, s := range splitSections(doc) {
		got = append(got, s.heading)
		joined.WriteString(s.text)
	}
	if diff := cmp.Diff([]string{"", "A", "B"}, got); diff != "" {
		t.Errorf("headings (-want +got):\n%s", diff)
	}
	if joined.String() != doc {
		t.Errorf("sections do not join back to the document: %q", joined.String())
	}
}

func TestTrimToCap(t *testing.T) {
	doc := "# T\n## A\n" + words("a", 50) + "\n## B\n" + words("b", 50) + "\n## C\n" + words("c", 50) + "\n"
	tests := []struct {
		name      string
		cap       int
		wantKept  []string
		wantMoved string
	}{
		{"under cap", 1000, []string{"## A", "## B", "## C"}, ""},
		{"drop oldest", 120, []string{"## B", "## C"}, "## A\n" + words("a", 50)},
		{"keeps the last section", 10, []string{"## C"}, "## A\n" + words("a", 50) + "\n## B\n" + words("b", 50)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept, moved := trimToCap(doc, tt.cap)
			for _, h := range tt.wantKept {
				if !strings.Contains(kept, h) {
					t.Errorf("kept lacks %q:\n%s", h, kept)
				}
			}
			if !strings.HasPrefix(kept, "# T\n") {
				t.Errorf("preamble lost: %q", kept)
			}
			if moved != tt.wantMoved {
				t.Errorf("moved = %q, want %q", moved, tt.wantMoved)
			}
		})
	}
}

func TestNormalizeEntry(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 5, 0, 0, time.UTC)
	tests := []struct{ in, want string }{
		{"[2026-02-28 18:00] Talked.", "[2026-02-28 18:00] Talked."},
		{"  Talked about Lisbon. ", "[2026-03-01 09:05] Talked about Lisbon."},
		{"2026-02-28: Talked.", "[2026-03-01 09:05] 2026-02-28: Talked."},
	}
	for _, tt := range tests {
		if got := normalizeEntry(tt.in, at); got != tt.want {
			t.Errorf("normalizeEntry(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
