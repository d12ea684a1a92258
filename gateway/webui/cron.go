package webui

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/gateway/cron"
)

// maxHeartbeat caps HEARTBEAT.md as edited from the workbench.
const maxHeartbeat = 64 << 10

// jobView is a cron job as the automations page shows it.
type jobView struct {
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	Enabled  bool          `json:"enabled"`
	Schedule cron.Schedule `json:"schedule"`
	Describe string        `json:"describe"`
	Message  string        `json:"message"`
	Target   string        `json:"target,omitempty"` // the session the reply goes to
	NextRun  *time.Time    `json:"nextRun,omitempty"`
	LastRun  *time.Time    `json:"lastRun,omitempty"`
	Status   string        `json:"lastStatus,omitempty"`
	Error    string        `json:"lastError,omitempty"`
}

func viewJob(j cron.Job) jobView {
	v := jobView{ID: j.ID, Name: j.Name, Enabled: j.Enabled, Schedule: j.Schedule, Describe: j.Schedule.Describe(),
		Message: j.Payload.Message, Status: j.State.LastStatus, Error: j.State.LastError}
	if j.Payload.Channel != "" || j.Payload.SessionKey != "" {
		v.Target = j.Session()
	}
	if j.State.NextRunAtMs > 0 {
		t := time.UnixMilli(j.State.NextRunAtMs)
		v.NextRun = &t
	}
	if j.State.LastRunAtMs > 0 {
		t := time.UnixMilli(j.State.LastRunAtMs)
		v.LastRun = &t
	}
	return v
}

// listJobs is GET /api/cron: every job, soonest first (paused last).
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	st := s.o.Cron
	jobs, err := st.Jobs(r.Context())
	if err != nil {
		s.internalError(w, "list cron jobs", err, "could not read the cron jobs")
		return
	}
	out := make([]jobView, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, viewJob(j))
	}
	slices.SortStableFunc(out, func(a, b jobView) int {
		switch {
		case a.NextRun == nil && b.NextRun == nil:
			return 0
		case a.NextRun == nil:
			return 1
		case b.NextRun == nil:
			return -1
		}
		return a.NextRun.Compare(*b.NextRun)
	})
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

// newJob is the body of POST /api/cron.
type newJob struct {
	Name     string `json:"name"`
	Message  string `json:"message"`
	Schedule struct {
		Kind         string `json:"kind"`
		At           string `json:"at"` // RFC 3339
		EverySeconds int64  `json:"everySeconds"`
		Expr         string `json:"expr"`
		TZ           string `json:"tz"`
	} `json:"schedule"`
	// Target is the conversation ("channel:chat") the job's turn runs in
	// and its answer is delivered to.
	Target string `json:"target"`
}

// addJob is POST /api/cron; validation errors name the field's path.
func (s *Server) addJob(w http.ResponseWriter, r *http.Request) {
	st := s.o.Cron
	var body newJob
	if !readJSON(w, r, &body) {
		return
	}
	now := s.o.Now()
	j, path, msg := buildJob(body, now)
	if msg != "" {
		writeError(w, http.StatusBadRequest, path, msg)
		return
	}
	if err := st.Add(r.Context(), j); err != nil {
		s.internalError(w, "add cron job", err, "could not save the job")
		return
	}
	s.log.Info("workbench: cron job added", "job", j.ID, "schedule", j.Schedule.Describe())
	writeJSON(w, http.StatusCreated, map[string]any{"job": viewJob(j)})
}

func buildJob(b newJob, now time.Time) (cron.Job, string, string) {
	name, message := strings.TrimSpace(b.Name), strings.TrimSpace(b.Message)
	switch {
	case name == "" || utf8.RuneCountInString(name) > 100:
		return cron.Job{}, "name", "want a name of 1 to 100 characters"
	case message == "" || utf8.RuneCountInString(message) > 4000:
		return cron.Job{}, "message", "want the message the agent gets, 1 to 4000 characters"
	}
	sc := b.Schedule
	var sched cron.Schedule
	switch sc.Kind {
	case cron.KindAt:
		at, err := time.Parse(time.RFC3339, sc.At)
		if err != nil {
			return cron.Job{}, "schedule.at", "want a date and time (RFC 3339)"
		}
		if !at.After(now) {
			return cron.Job{}, "schedule.at", "that time has passed"
		}
		sched = cron.Schedule{Kind: cron.KindAt, AtMs: at.UnixMilli()}
	case cron.KindEvery:
		if sc.EverySeconds < 60 {
			return cron.Job{}, "schedule.everySeconds", "want at least 60 seconds"
		}
		sched = cron.Schedule{Kind: cron.KindEvery, EveryMs: sc.EverySeconds * 1000}
	case cron.KindCron:
		sched = cron.Schedule{Kind: cron.KindCron, Expr: strings.TrimSpace(sc.Expr), TZ: strings.TrimSpace(sc.TZ)}
		if sched.TZ != "" {
			if _, err := time.LoadLocation(sched.TZ); err != nil {
				return cron.Job{}, "schedule.tz", "unknown timezone " + truncate(sched.TZ, 60) + " (want an IANA name such as Europe/Lisbon)"
			}
		}
		if err := sched.Validate(); err != nil {
			return cron.Job{}, "schedule.expr", err.Error()
		}
	default:
		return cron.Job{}, "schedule.kind", "want at, every or cron"
	}
	next, ok := sched.Next(now, now)
	if !ok {
		return cron.Job{}, "schedule", "that schedule never runs"
	}
	t := strings.TrimSpace(b.Target)
	ch, chat, ok := strings.Cut(t, ":")
	if !ok || ch == "" || chat == "" {
		return cron.Job{}, "target", "want the conversation that gets the answer, such as telegram:12345"
	}
	p := cron.Payload{Kind: "agent_turn", Message: message, Deliver: true, Channel: ch, To: chat, SessionKey: t}
	var raw [4]byte
	_, _ = rand.Read(raw[:])
	ms := now.UnixMilli()
	return cron.Job{
		ID: hex.EncodeToString(raw[:]), Name: name, Enabled: true, Schedule: sched, Payload: p,
		CreatedAtMs: ms, UpdatedAtMs: ms, DeleteAfterRun: sched.Kind == cron.KindAt,
		State: cron.State{NextRunAtMs: next.UnixMilli()},
	}, "", ""
}

var errJobPaused = errors.New("the job is paused")

// changeJob applies fn to the job named by {id}.
func (s *Server) changeJob(w http.ResponseWriter, r *http.Request, what string, fn func(j *cron.Job, now time.Time) error) {
	st := s.o.Cron
	id := r.PathValue("id")
	var changed cron.Job
	err := st.Update(r.Context(), func(jobs []cron.Job) ([]cron.Job, error) {
		i := slices.IndexFunc(jobs, func(j cron.Job) bool { return j.ID == id })
		if i < 0 {
			return nil, cron.ErrNotFound
		}
		if err := fn(&jobs[i], s.o.Now()); err != nil {
			return nil, err
		}
		jobs[i].UpdatedAtMs = s.o.Now().UnixMilli()
		changed = jobs[i]
		return jobs, nil
	})
	switch {
	case errors.Is(err, cron.ErrNotFound):
		writeError(w, http.StatusNotFound, "id", "no cron job "+truncate(id, 40))
	case errors.Is(err, errJobPaused):
		writeError(w, http.StatusConflict, "enabled", "the job is paused: resume it first")
	case err != nil:
		s.internalError(w, "cron "+what, err, "could not "+what+" the job", "job", id)
	default:
		s.log.Info("workbench: cron "+what, "job", id)
		writeJSON(w, http.StatusOK, map[string]any{"job": viewJob(changed)})
	}
}

// patchJob is PATCH /api/cron/{id} {"enabled": bool}: pause or resume.
func (s *Server) patchJob(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Enabled *bool `json:"enabled"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if body.Enabled == nil {
		writeError(w, http.StatusBadRequest, "enabled", "want true (resume) or false (pause)")
		return
	}
	s.changeJob(w, r, "pause/resume", func(j *cron.Job, _ time.Time) error {
		j.Enabled = *body.Enabled
		// Resumed jobs get their next run computed afresh by the service.
		j.State.NextRunAtMs = 0
		return nil
	})
}

// runJob is POST /api/cron/{id}/run: due now; the cron service fires it
// at once and then follows its schedule.
func (s *Server) runJob(w http.ResponseWriter, r *http.Request) {
	s.changeJob(w, r, "run", func(j *cron.Job, now time.Time) error {
		if !j.Enabled {
			return errJobPaused
		}
		j.State.NextRunAtMs = now.UnixMilli()
		return nil
	})
}

// deleteJob is DELETE /api/cron/{id}.
func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) {
	st := s.o.Cron
	id := r.PathValue("id")
	err := st.Remove(r.Context(), id, "")
	if errors.Is(err, cron.ErrNotFound) {
		writeError(w, http.StatusNotFound, "id", "no cron job "+truncate(id, 40))
		return
	}
	if err != nil {
		s.internalError(w, "delete cron job", err, "could not delete the job", "job", id)
		return
	}
	s.log.Info("workbench: cron job deleted", "job", id)
	writeJSON(w, http.StatusOK, map[string]any{"deleted": id})
}

// getHeartbeat is GET /api/heartbeat: HEARTBEAT.md and whether the
// heartbeat runs.
func (s *Server) getHeartbeat(w http.ResponseWriter, _ *http.Request) {
	p := s.workspaceFile(w, "HEARTBEAT.md")
	if p == "" {
		return
	}
	content, ok := s.readWorkspaceFile(w, p)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": content, "enabled": s.o.Heartbeat.Enabled,
		"intervalS": s.o.Heartbeat.IntervalS, "maxBytes": maxHeartbeat})
}

// putHeartbeat is PUT /api/heartbeat {"content"}: written atomically; the
// heartbeat reads it at its next tick.
func (s *Server) putHeartbeat(w http.ResponseWriter, r *http.Request) {
	p := s.workspaceFile(w, "HEARTBEAT.md")
	if p == "" {
		return
	}
	content, ok := readContent(w, r, maxHeartbeat, "HEARTBEAT.md may be at most 64 KiB")
	if !ok || !s.writeWorkspaceFile(w, p, content) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"saved": len(content)})
}
