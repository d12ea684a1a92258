package tools

// families are tools that are one capability under several names: a
// policy that names the first (an agent's deny list, tools.disabled)
// means all of them, so denying exec cannot leave its sessions open and
// denying the file writers cannot leave apply_patch writing.
var families = map[string][]string{
	"exec":       {"write_stdin", "list_exec_sessions"},
	"write_file": {"apply_patch"},
	"edit_file":  {"apply_patch"},
}

// WithFamily returns names with the tools each one stands for added.
func WithFamily(names []string) []string {
	out := append([]string(nil), names...)
	for _, n := range names {
		out = append(out, families[n]...)
	}
	return out
}

// WithSessions returns names with exec's session tools added when exec is
// among them: allowing exec allows its sessions (allowing a file writer
// does not allow apply_patch, which writes anything).
func WithSessions(names []string) []string {
	out := append([]string(nil), names...)
	for _, n := range names {
		if n == "exec" {
			out = append(out, families["exec"]...)
		}
	}
	return out
}
