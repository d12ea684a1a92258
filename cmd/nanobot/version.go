package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Set at build time by the release build (.goreleaser.yaml, Dockerfile):
// -ldflags "-X main.version=v1.2.3 -X main.commit=<sha> -X main.date=<RFC 3339>".
var (
	version = ""
	commit  = ""
	date    = ""
)

// buildStamp is what `nanobot version` reports about the binary.
type buildStamp struct {
	Version  string
	Commit   string
	Date     string
	Modified bool // built from a work tree with uncommitted changes (VCS info only)
	Tags     string
}

// describeBuild combines the ldflags stamp with what the Go toolchain
// recorded in the binary: a plain `go build` in a git checkout carries the
// revision and commit time (vcs.*), `go install module@version` carries the
// module version, and every build carries its -tags.
func describeBuild(ldVersion, ldCommit, ldDate string, bi *debug.BuildInfo) buildStamp {
	s := buildStamp{Version: ldVersion, Commit: ldCommit, Date: ldDate}
	settings := map[string]string{}
	if bi != nil {
		for _, kv := range bi.Settings {
			settings[kv.Key] = kv.Value
		}
		if s.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			s.Version = bi.Main.Version
		}
	}
	if s.Commit == "" {
		s.Commit = settings["vcs.revision"]
		s.Modified = settings["vcs.modified"] == "true"
	}
	if s.Date == "" {
		s.Date = settings["vcs.time"]
	}
	s.Tags = settings["-tags"]
	if s.Version == "" {
		s.Version = "dev"
	}
	return s
}

func currentBuild() buildStamp {
	bi, _ := debug.ReadBuildInfo()
	return describeBuild(version, commit, date, bi)
}

func buildVersion() string { return currentBuild().Version }

// String is the version command's output: the first line keeps the
// `nanobot <version>` shape scripts may read; the rest is one fact a line.
func (s buildStamp) String() string {
	unknown := func(v string) string {
		if v == "" {
			return "unknown"
		}
		return v
	}
	c := unknown(s.Commit)
	if s.Modified {
		c += " (modified)"
	}
	tags := s.Tags
	if tags == "" {
		tags = "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "nanobot %s (%s, %s/%s)\n", s.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "  commit: %s\n", c)
	fmt.Fprintf(&b, "  built:  %s\n", unknown(s.Date))
	fmt.Fprintf(&b, "  tags:   %s\n", tags)
	return b.String()
}

func newVersionCmd(_ *app) *cobra.Command {
	return command("version", "Print the version, commit, build date, Go version and build tags", func(cmd *cobra.Command) error {
		fmt.Fprint(cmd.OutOrStdout(), currentBuild())
		return nil
	})
}
