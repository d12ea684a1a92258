package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/agent/skills"
	"github.com/nanobot-go/nanobot/agent/skills/registry"
	"github.com/nanobot-go/nanobot/configs"
)

// newSkillsCmd is `nanobot skills`: search a registry, install, update,
// remove and list skills of an agent's workspace (docs/skills.md).
func newSkillsCmd(a *app) *cobra.Command {
	var agentName string
	var limit int
	var sha string
	var yes bool
	search := &cobra.Command{
		Use: "search QUERY", Short: "Search the configured skill registries", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			hits, err := a.skillClient().Search(cmd.Context(), strings.Join(args, " "), limit)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if len(hits) == 0 {
				fmt.Fprintln(w, "No skills found.")
			}
			for _, h := range hits {
				fmt.Fprintf(w, "%s %s [%s] — %s\n", h.Slug, h.Version, h.Registry, h.Summary)
			}
			return nil
		},
	}
	search.Flags().IntVar(&limit, "limit", 10, "most results per registry")

	install := commandArg("install NAME[@VERSION]", "Install a skill from a registry, pinned by version and hash", func(cmd *cobra.Command, arg string) error {
		in, err := a.skillInstaller(agentName)
		if err != nil {
			return err
		}
		slug, version, _ := strings.Cut(arg, "@")
		if lock, err := skills.ReadLock(in.Dir); err == nil {
			if pin, ok := lock.Skills[slug]; ok {
				return fmt.Errorf("%s %s is installed already; use `nanobot skills update %s`", slug, pin.Version, slug)
			}
		}
		c, err := in.Prepare(cmd.Context(), slug, version, sha)
		if err != nil {
			return err
		}
		if err := in.Apply(c); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Installed %s %s from %s (%d files, sha256 %s).\n", slug, c.To.Version, c.To.Registry, len(c.Added), c.To.ArchiveSHA256)
		warnSuspicious(cmd.OutOrStdout(), c)
		return nil
	})
	install.Flags().StringVar(&sha, "sha256", "", "refuse the archive unless its sha256 is this")

	update := &cobra.Command{
		Use: "update [NAME[@VERSION]]", Short: "Show what an update changes, then apply it (all installed skills without NAME)", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := a.skillInstaller(agentName)
			if err != nil {
				return err
			}
			return updateSkills(cmd, in, args, yes)
		},
	}
	update.Flags().BoolVarP(&yes, "yes", "y", false, "apply without asking")

	remove := commandArg("remove NAME", "Remove a skill installed from a registry", func(cmd *cobra.Command, arg string) error {
		in, err := a.skillInstaller(agentName)
		if err != nil {
			return err
		}
		if err := in.Remove(arg); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Removed %s.\n", arg)
		return nil
	})

	list := command("list", "List the skills: workspace, installed and built-in, with source and version", func(cmd *cobra.Command) error {
		l, err := a.skillLoader(agentName)
		if err != nil {
			return err
		}
		printSkills(cmd.OutOrStdout(), l)
		return nil
	})

	g := group("skills", "Search, install, update, remove and list skills", search, install, update, remove, list)
	g.PersistentFlags().StringVar(&agentName, "agent", configs.DefaultAgent, "the agent whose workspace to use")
	return g
}

// updateSkills prepares each update, prints its change and applies it
// when yes is set or the user agrees.
func updateSkills(cmd *cobra.Command, in *registry.Installer, args []string, yes bool) error {
	w := cmd.OutOrStdout()
	lock, err := skills.ReadLock(in.Dir)
	if err != nil {
		return err
	}
	type target struct{ slug, version string }
	var targets []target
	if len(args) == 1 {
		slug, version, _ := strings.Cut(args[0], "@")
		if _, ok := lock.Skills[slug]; !ok {
			return fmt.Errorf("skill %s: %w", slug, registry.ErrNotInstalled)
		}
		targets = append(targets, target{slug, version})
	} else {
		for slug := range lock.Skills {
			targets = append(targets, target{slug: slug})
		}
		sort.Slice(targets, func(i, j int) bool { return targets[i].slug < targets[j].slug })
	}
	if len(targets) == 0 {
		fmt.Fprintln(w, "No skills installed from a registry.")
		return nil
	}
	var errs []error
	for _, t := range targets {
		c, err := in.Prepare(cmd.Context(), t.slug, t.version, "")
		if err != nil {
			errs = append(errs, err)
			fmt.Fprintf(w, "%s: %v\n", t.slug, err)
			continue
		}
		if c.Same() && c.From.Version == c.To.Version {
			in.Discard(c)
			fmt.Fprintf(w, "%s %s is up to date.\n", t.slug, c.From.Version)
			continue
		}
		printChange(w, c)
		if !yes && !confirm(cmd, "Apply?") {
			in.Discard(c)
			fmt.Fprintf(w, "%s not changed (use --yes to apply without asking).\n", t.slug)
			continue
		}
		if err := in.Apply(c); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(w, "Updated %s to %s.\n", t.slug, c.To.Version)
	}
	return errors.Join(errs...)
}

func printChange(w io.Writer, c *registry.Change) {
	fmt.Fprintf(w, "%s: %s → %s (%s)\n", c.Slug, c.From.Version, c.To.Version, c.To.Registry)
	warnSuspicious(w, c)
	for _, f := range c.Added {
		fmt.Fprintf(w, "  + %s\n", f)
	}
	for _, f := range c.Removed {
		fmt.Fprintf(w, "  - %s\n", f)
	}
	for _, f := range c.Changed {
		fmt.Fprintf(w, "  ~ %s\n", f)
	}
}

// warnSuspicious says when the registry flags the skill as suspicious.
func warnSuspicious(w io.Writer, c *registry.Change) {
	if c.Suspicious {
		fmt.Fprintf(w, "Warning: %s flags %s as suspicious; read its files before you rely on it.\n", c.To.Registry, c.Slug)
	}
}

// confirm asks on the terminal; anything but y/yes, or no terminal, is no.
func confirm(cmd *cobra.Command, q string) bool {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok {
		if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			return false
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s [y/N] ", q)
	line, _ := bufio.NewReader(in).ReadString('\n')
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes"
}

func printSkills(w io.Writer, l *skills.Loader) {
	all := l.All()
	if len(all) == 0 {
		fmt.Fprintln(w, "No skills.")
	}
	for _, s := range all {
		src := s.Source
		if s.Version != "" {
			src += " " + s.Version
		}
		state := ""
		switch {
		case s.Off != "":
			state = " [off: " + s.Off + "]"
		case !s.Available():
			state = " [missing " + strings.Join(s.Missing, ", ") + "]"
		}
		fmt.Fprintf(w, "%-24s %-20s%s %s\n", s.Name, src, state, s.Description)
	}
	for _, p := range l.Problems() {
		fmt.Fprintf(w, "problem: %v\n", p)
	}
}

// skillClient is a client of skills.registries (default: ClawHub).
func (a *app) skillClient() *registry.Client {
	var regs []registry.Registry
	for _, r := range a.loaded.Config.Skills.Registries {
		regs = append(regs, registry.Registry{Name: r.Name, URL: r.URL, Token: r.Token})
	}
	return registry.New(regs, nil)
}

// skillAgent is the agent called name and its folders.
func (a *app) skillAgent(name string) (configs.Agent, configs.Paths, error) {
	prof, ok := a.loaded.Config.AgentNamed(name)
	if !ok {
		return configs.Agent{}, configs.Paths{}, fmt.Errorf("no agent %q in the config", name)
	}
	return prof, a.loaded.Paths.ForAgent(prof), nil
}

func (a *app) skillInstaller(agentName string) (*registry.Installer, error) {
	_, paths, err := a.skillAgent(agentName)
	if err != nil {
		return nil, err
	}
	return &registry.Installer{Dir: skills.New(skills.Options{Workspace: paths.Workspace, NoBuiltin: true}).Dir(), Client: a.skillClient()}, nil
}

func (a *app) skillLoader(agentName string) (*skills.Loader, error) {
	prof, paths, err := a.skillAgent(agentName)
	if err != nil {
		return nil, err
	}
	return skills.New(skills.Options{Workspace: paths.Workspace, Disabled: prof.Settings.DisabledSkills, Only: prof.Settings.Skills}), nil
}

// switchSkill adds name to (disabled) or drops it from the disabledSkills
// of agent p in the config file, and returns the list afterwards. An agent
// that inherits the default's list gets its own copy first. Only that
// list is rewritten in the file (editConfig).
func (a *app) switchSkill(p configs.Agent, name string, disabled bool) ([]string, error) {
	var result []string
	key := p.Path + ".disabledSkills"
	err := a.editConfig(func(raw []byte) (string, any, error) {
		cur, found, err := configs.LookupJSON(raw, key)
		if err != nil {
			return "", nil, err
		}
		var inFile []any
		list := slices.Clone(p.Settings.DisabledSkills)
		if found && json.Unmarshal(cur, &inFile) == nil && inFile != nil {
			list = nil
			for _, v := range inFile {
				if s, ok := v.(string); ok {
					list = append(list, s)
				}
			}
		}
		has := slices.Contains(list, name)
		switch {
		case disabled && !has:
			list = append(list, name)
		case !disabled && has:
			list = slices.DeleteFunc(list, func(s string) bool { return s == name })
		default:
			result = list
			return "", nil, nil
		}
		sort.Strings(list)
		if list == nil {
			list = []string{}
		}
		result = list
		return key, list, nil
	})
	return result, err
}
