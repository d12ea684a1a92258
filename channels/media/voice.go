package media

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nanobot-go/nanobot/internal/oggopus"

	"github.com/nanobot-go/nanobot/bus"
)

// Voice is the audio of an outbound voice message (bus.Outbound with
// Voice set), read and checked: what an adapter's SendVoice uploads.
type Voice struct {
	// Data is the Ogg/Opus file; Name its file name.
	Data []byte
	Name string
	// Duration is the playable length.
	Duration time.Duration
	// Waveform is 0–255 loudness levels, at most 256 of them, estimated
	// from the Opus packet sizes (nanobot does not decode audio), for
	// platforms that draw one (Discord).
	Waveform []byte
}

// MIMEOggOpus is the content type of a voice message.
const MIMEOggOpus = "audio/ogg; codecs=opus"

// ReadVoice reads and checks m.Media[0]: a local Ogg/Opus file of at most
// max bytes (0: no limit). Errors are for a PermanentError: retrying
// cannot fix the file.
func ReadVoice(m bus.Outbound, max int64) (Voice, error) {
	if len(m.Media) == 0 || m.Media[0].Path == "" {
		return Voice{}, errors.New("no audio file")
	}
	path := m.Media[0].Path
	st, err := os.Stat(path)
	if err != nil {
		return Voice{}, err
	}
	if max > 0 && st.Size() > max {
		return Voice{}, fmt.Errorf("%s is %s, more than %s", filepath.Base(path), Size(st.Size()), Size(max))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Voice{}, err
	}
	info, err := oggopus.Check(data)
	if err != nil {
		return Voice{}, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	name := m.Media[0].Name
	if name == "" {
		name = filepath.Base(path)
	}
	return Voice{
		Data: data, Name: name,
		Duration: time.Duration(max64(info.Samples, 0)) * time.Second / 48000,
		Waveform: waveform(info.AudioSizes, 256),
	}, nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// waveform folds packet sizes into at most n buckets scaled to 0–255.
func waveform(sizes []int, n int) []byte {
	if len(sizes) == 0 {
		return nil
	}
	buckets := min(n, len(sizes))
	sums := make([]int, buckets)
	counts := make([]int, buckets)
	for i, s := range sizes {
		b := i * buckets / len(sizes)
		sums[b] += s
		counts[b]++
	}
	peak := 0
	for i := range sums {
		sums[i] /= counts[i]
		peak = max(peak, sums[i])
	}
	out := make([]byte, buckets)
	for i, s := range sums {
		out[i] = byte(s * 255 / max(peak, 1))
	}
	return out
}

// Seconds is d rounded to whole seconds, at least 1 (platforms show 0 s
// voice messages as broken).
func Seconds(d time.Duration) int {
	return max(int((d+time.Second/2)/time.Second), 1)
}
