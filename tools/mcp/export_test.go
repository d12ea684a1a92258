package mcp

import "os"

// process returns the stdio server's current process, for fault tests.
func (m *Manager) process(name string) *os.Process {
	for _, s := range m.servers {
		if s.name == name {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.cmd != nil {
				return s.cmd.Process
			}
		}
	}
	return nil
}
