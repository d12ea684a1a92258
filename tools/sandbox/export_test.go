package sandbox

// Internals the external tests switch.
var (
	HelperReady  = &helperReady
	NoNamespaces = &noNamespaces
)
