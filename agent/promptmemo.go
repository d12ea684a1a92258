package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// promptMemo keeps the last system prompt and the key of what it was made
// from. It is safe for concurrent use.
type promptMemo struct {
	mu     sync.Mutex
	key    string
	prompt string
}

func (m *promptMemo) get(key string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prompt, m.key == key && m.key != ""
}

func (m *promptMemo) put(key, prompt string) {
	m.mu.Lock()
	m.key, m.prompt = key, prompt
	m.mu.Unlock()
}

// memoryPather is a MemorySource that says which file it reads.
type memoryPather interface{ MemoryPath() string }

// promptKey names everything the system prompt is made from: the size and
// modification time of each bootstrap file and of the memory file (a stat
// each, not a read), and the skills part as given. It is "" (no reuse)
// while one of the files changed within the last second: file times are
// coarser than the time between two writes, so a file rewritten with the
// same size a moment later could look unchanged (git's "racy clean" case).
func (b *ContextBuilder) promptKey(skillsOn, skillsIndex string) string {
	var k strings.Builder
	recent := time.Now().Add(-time.Second)
	racy := false
	stamp := func(path string) {
		k.WriteString(path)
		if fi, err := os.Stat(path); err == nil {
			racy = racy || fi.ModTime().After(recent)
			k.WriteByte(' ')
			k.WriteString(strconv.FormatInt(fi.Size(), 10))
			k.WriteByte(' ')
			k.WriteString(strconv.FormatInt(fi.ModTime().UnixNano(), 10))
		}
		k.WriteByte('\n')
	}
	for _, name := range BootstrapFiles {
		stamp(filepath.Join(b.Workspace, name))
	}
	switch m := b.Memory.(type) {
	case nil:
		stamp(filepath.Join(b.Workspace, "memory", "MEMORY.md"))
	case memoryPather:
		stamp(m.MemoryPath())
	default:
		return "" // a source that cannot say when it changed: never reused
	}
	if racy {
		return ""
	}
	k.WriteString(b.Name)
	k.WriteByte(0)
	k.WriteString(skillsOn)
	k.WriteByte(0)
	k.WriteString(skillsIndex)
	return k.String()
}
