package repl

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/chzyer/readline"
)

// Indicator shows an animated "thinking…" line on a terminal until Stop. On
// anything that is not a terminal it shows nothing.
type Indicator struct {
	w    io.Writer
	text string
	tty  bool

	mu      sync.Mutex
	stop    chan struct{}
	stopped chan struct{}
}

// NewIndicator returns an indicator writing to w.
func NewIndicator(w io.Writer, text string) *Indicator {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = readline.IsTerminal(int(f.Fd()))
	}
	return &Indicator{w: w, text: text, tty: tty}
}

// Start shows the indicator.
func (i *Indicator) Start() {
	if !i.tty {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stop != nil {
		return
	}
	i.stop, i.stopped = make(chan struct{}), make(chan struct{})
	go func(stop, stopped chan struct{}) {
		defer close(stopped)
		frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for n := 0; ; n++ {
			fmt.Fprintf(i.w, "\r\x1b[2m%s %s\x1b[0m", frames[n%len(frames)], i.text)
			select {
			case <-stop:
				fmt.Fprint(i.w, "\r\x1b[K")
				return
			case <-t.C:
			}
		}
	}(i.stop, i.stopped)
}

// Stop clears the indicator; it is safe to call more than once.
func (i *Indicator) Stop() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stop == nil {
		return
	}
	close(i.stop)
	<-i.stopped
	i.stop = nil
}
