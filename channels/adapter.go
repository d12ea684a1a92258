package channels

// Adapter is what every platform adapter's Channel implements: its name,
// Run and Send (Channel), the length of one message (Limiter) and its
// connection state (HealthReporter). Each adapter asserts it at compile
// time, `_ channels.Adapter = (*Channel)(nil)`, next to one assertion per
// optional capability it has (Editor, Typer, MediaSender, WebhookHandler,
// ...). The Manager and the Dispatcher still detect every interface by
// type assertion; Adapter only names the set no adapter goes without.
type Adapter interface {
	Channel
	Limiter
	HealthReporter
}
