package webui

import (
	"errors"
	"net/http"

	"github.com/nanobot-go/nanobot/tools/approval"
)

// recentApprovals is how many audit entries the page shows.
const recentApprovals = 50

// listApprovals is GET /api/approvals: whether approval is on, the
// requests waiting for an answer and the audit log's latest entries.
func (s *Server) listApprovals(w http.ResponseWriter, _ *http.Request) {
	b := s.o.Approvals
	if b == nil {
		writeJSON(w, http.StatusOK, map[string]any{"enabled": false, "pending": []approval.Request{}, "recent": []approval.Entry{}})
		return
	}
	recent, err := b.Recent(recentApprovals)
	if err != nil {
		s.internalError(w, "read the approval log", err, "could not read the approval log")
		return
	}
	if recent == nil {
		recent = []approval.Entry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"enabled": true, "pending": b.Pending(), "recent": recent})
}

// answerApproval is POST /api/approvals/{id} {"decision": "once" |
// "always" | "deny"}.
func (s *Server) answerApproval(w http.ResponseWriter, r *http.Request) {
	b := s.o.Approvals
	if b == nil {
		writeError(w, http.StatusServiceUnavailable, "", "approval is off (tools.exec.approval)")
		return
	}
	var body struct {
		Decision string `json:"decision"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	d, ok := map[string]approval.Decision{"once": approval.AllowOnce, "always": approval.AllowAlways, "deny": approval.Deny}[body.Decision]
	if !ok {
		writeError(w, http.StatusBadRequest, "decision", `want "once", "always" or "deny"`)
		return
	}
	req, err := b.Answer(r.PathValue("id"), d, "workbench")
	switch {
	case errors.Is(err, approval.ErrUnknown):
		writeError(w, http.StatusNotFound, "id", err.Error())
		return
	case err != nil: // allowed, but the pattern was not saved
		s.log.Warn("workbench: approval pattern not saved", "err", err)
		writeJSON(w, http.StatusOK, map[string]any{"request": req, "decision": d.String(), "warning": err.Error()})
		return
	}
	s.log.Info("workbench: approval answered", "id", req.ID, "decision", d.String())
	writeJSON(w, http.StatusOK, map[string]any{"request": req, "decision": d.String()})
}
