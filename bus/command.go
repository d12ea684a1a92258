package bus

import "strings"

// Command describes a chat command ("/new", "/model gpt") that the agent or
// the gateway answers without the model. The agent keeps the table; the
// gateway hands it to the channels, so that a platform with a command menu
// of its own (Discord's application commands, Slack's App Home) can show
// the same commands. However a command is picked from such a menu, it
// reaches the agent as the text "/name args", sent by whoever picked it,
// and is obeyed or refused like the typed text.
type Command struct {
	// Name is the command without its slash, lower case ("dream-log").
	Name string
	// Help is one line for /help and menus; it ends in "(admins)" when
	// only admins may use the command, or its state-changing forms.
	Help string
	// Args are the arguments the command takes, in the order they are
	// written after it; all are words of one text line.
	Args []CommandArg
}

// CommandArg is one argument of a Command.
type CommandArg struct {
	// Name is a short lower-case word ("preset", "task").
	Name string
	// Help says what to give, in a few words.
	Help string
	// Choices are the values the argument takes, when they are few
	// (/voice on|off); empty for free text.
	Choices []string
	// Required is set when the command does nothing without it.
	Required bool
}

// AdminOnly reports whether Help marks the command as one for admins.
func (c Command) AdminOnly() bool { return strings.HasSuffix(c.Help, "(admins)") }

// Usage is how the command is written: "/name <required> [optional]".
func (c Command) Usage() string {
	var b strings.Builder
	b.WriteString("/" + c.Name)
	for _, a := range c.Args {
		word := a.Name
		if len(a.Choices) > 0 && len(a.Choices) <= 4 {
			word = strings.Join(a.Choices, "|")
		}
		if a.Required {
			b.WriteString(" <" + word + ">")
		} else {
			b.WriteString(" [" + word + "]")
		}
	}
	return b.String()
}
