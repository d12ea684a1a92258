package webui

import (
	"errors"
	"net/http"

	"github.com/nanobot-go/nanobot/tools/goals"
)

// errNoGoal is cancelGoal's answer for an id with no active goal.
var errNoGoal = errors.New("no active goal with that id")

// listGoals is GET /api/goals: every goal, active ones first.
func (s *Server) listGoals(w http.ResponseWriter, _ *http.Request) {
	if s.o.Goals == nil {
		writeJSON(w, http.StatusOK, map[string]any{"goals": []goals.Goal{}})
		return
	}
	all, err := s.o.Goals.List()
	if err != nil {
		s.internalError(w, "read goals", err, "could not read the goals")
		return
	}
	if all == nil {
		all = []goals.Goal{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"goals": all})
}

// cancelGoal is POST /api/goals/{id}/cancel: the heartbeat stops
// advancing it.
func (s *Server) cancelGoal(w http.ResponseWriter, r *http.Request) {
	if s.o.Goals == nil {
		writeError(w, http.StatusServiceUnavailable, "", "this gateway keeps no goals")
		return
	}
	id := r.PathValue("id")
	err := s.o.Goals.Update(func(all []goals.Goal) ([]goals.Goal, error) {
		for i := range all {
			if all[i].ID == id && all[i].Status == goals.Active {
				all[i].Status, all[i].Updated = goals.Cancelled, s.o.Now()
				all[i].Notes = append(all[i].Notes, goals.Note{Time: s.o.Now(), Text: "cancelled in the workbench"})
				return all, nil
			}
		}
		return nil, errNoGoal
	})
	if errors.Is(err, errNoGoal) {
		writeError(w, http.StatusNotFound, "id", err.Error())
		return
	}
	if err != nil {
		s.internalError(w, "cancel goal", err, "could not cancel the goal")
		return
	}
	s.log.Info("workbench: goal cancelled", "goal", id)
	writeJSON(w, http.StatusOK, map[string]any{"cancelled": id})
}
