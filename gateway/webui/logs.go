package webui

import (
	"log/slog"
	"net/http"
	"strconv"

	"github.com/nanobot-go/nanobot/gateway/logging"
)

// getLogs is GET /api/logs?level=warn&n=200: the newest log lines at that
// level or above, oldest first, as the log has them (secrets redacted).
func (s *Server) getLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	min := slog.LevelDebug
	if lv := q.Get("level"); lv != "" {
		if err := min.UnmarshalText([]byte(lv)); err != nil {
			writeError(w, http.StatusBadRequest, "level", "want debug, info, warn or error")
			return
		}
	}
	n := 200
	if v := q.Get("n"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "n", "want a number of lines from 1 to 1000")
			return
		}
	}
	lines := []logging.Line{}
	if s.o.Logs != nil {
		lines = s.o.Logs.Lines(min, n)
	}
	writeJSON(w, http.StatusOK, map[string]any{"lines": lines})
}
