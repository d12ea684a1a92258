package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"unicode/utf8"
)

// AppCommand is a registered application command, as Discord keeps it.
type AppCommand struct {
	ID          string          `json:"id"`
	Type        int             `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Options     []CommandOption `json:"options"`
}

// CommandOption is an option of an AppCommand.
type CommandOption struct {
	Type        int      `json:"type"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Required    bool     `json:"required"`
	Choices     []Choice `json:"choices"`
}

// Choice is one of an option's fixed values.
type Choice struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

var commandName = regexp.MustCompile(`^[-_\p{Ll}\p{N}]{1,32}$`)

// checkCommands refuses what Discord refuses in a bulk overwrite: more than
// 100 commands, a name it does not take or given twice, a description
// missing or over 100 characters, more than 25 options or choices, a
// required option after an optional one, an option type it does not know.
func checkCommands(cmds []AppCommand) error {
	if len(cmds) > 100 {
		return fmt.Errorf("%d commands: at most 100", len(cmds))
	}
	seen := map[string]bool{}
	for i, c := range cmds {
		if c.Type != 0 && c.Type != 1 {
			return fmt.Errorf("%d.type: %d is not a chat command", i, c.Type)
		}
		if !commandName.MatchString(c.Name) || seen[c.Name] {
			return fmt.Errorf("%d.name: %q is invalid or given twice", i, c.Name)
		}
		seen[c.Name] = true
		if n := utf8.RuneCountInString(c.Description); n < 1 || n > 100 {
			return fmt.Errorf("%d.description: %d characters, want 1 to 100", i, n)
		}
		if len(c.Options) > 25 {
			return fmt.Errorf("%d.options: more than 25", i)
		}
		optional := false
		for j, o := range c.Options {
			switch {
			case o.Type < 3 || o.Type > 11:
				return fmt.Errorf("%d.options.%d.type: %d", i, j, o.Type)
			case !commandName.MatchString(o.Name):
				return fmt.Errorf("%d.options.%d.name: %q", i, j, o.Name)
			case utf8.RuneCountInString(o.Description) < 1 || utf8.RuneCountInString(o.Description) > 100:
				return fmt.Errorf("%d.options.%d.description: want 1 to 100 characters", i, j)
			case o.Required && optional:
				return fmt.Errorf("%d.options.%d: a required option after an optional one", i, j)
			case len(o.Choices) > 25:
				return fmt.Errorf("%d.options.%d.choices: more than 25", i, j)
			}
			optional = optional || !o.Required
			for k, ch := range o.Choices {
				if n := utf8.RuneCountInString(ch.Name); n < 1 || n > 100 {
					return fmt.Errorf("%d.options.%d.choices.%d.name: want 1 to 100 characters", i, j, k)
				}
			}
		}
	}
	return nil
}

// overwriteCommands is PUT /applications/{app}/commands (global) and
// /applications/{app}/guilds/{guild}/commands: the scope's commands become
// exactly the ones sent; a command keeps its id across overwrites, as on
// Discord.
func (f *Server) overwriteCommands(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	if r.PathValue("app") != AppID {
		writeError(w, http.StatusForbidden, 50001, "Missing Access")
		return
	}
	var cmds []AppCommand
	if err := json.NewDecoder(r.Body).Decode(&cmds); err != nil || cmds == nil {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: a list of commands")
		return
	}
	if err := checkCommands(cmds); err != nil {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: "+err.Error())
		return
	}
	scope := r.PathValue("guild")
	f.mu.Lock()
	old := f.commands[scope]
	for i := range cmds {
		if j := slices.IndexFunc(old, func(c AppCommand) bool { return c.Name == cmds[i].Name }); j >= 0 {
			cmds[i].ID = old[j].ID
		} else {
			f.nextID++
			cmds[i].ID = fmt.Sprint(f.nextID)
		}
		if cmds[i].Type == 0 {
			cmds[i].Type = 1
		}
	}
	f.commands[scope] = cmds
	f.puts[scope]++
	f.mu.Unlock()
	writeJSON(w, cmds)
}

// Commands returns the commands registered in scope: "" global, else a
// guild id.
func (f *Server) Commands(scope string) []AppCommand {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.commands[scope])
}

// CommandPuts returns how many bulk overwrites scope got.
func (f *Server) CommandPuts(scope string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts[scope]
}
