package telegramtest

// SentSince returns what the bot sent and edited after the first n
// entries, and the new total, so a load driver can follow the log without
// copying all of it on every poll.
func (s *Server) SentSince(n int) ([]Sent, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > len(s.sent) {
		n = len(s.sent)
	}
	return append([]Sent(nil), s.sent[n:]...), len(s.sent)
}
