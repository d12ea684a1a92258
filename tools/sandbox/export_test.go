package sandbox

// Internals the external tests switch.
var (
	HelperReady  = &helperReady
	NoNamespaces = &noNamespaces
)

// SetHelper makes Command start exe as the helper until the returned
// function is called.
func SetHelper(exe string) (restore func()) {
	old := helperExecutable
	helperExecutable = func() (string, error) { return exe, nil }
	return func() { helperExecutable = old }
}
