package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Helm section of docs/install.md must work as written: every `helm
// install` command in it renders with `helm template` (same arguments, run
// where the repository's deploy/ folder is, next to the values file the
// section shows), with nothing fetched first. scripts/helm-check.sh checks
// the rendered manifests themselves.
func TestHelmInstallDocs(t *testing.T) {
	helm := os.Getenv("HELM")
	if helm == "" {
		helm, _ = exec.LookPath("helm")
	}
	if helm == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no helm (set $HELM): CI must run this test")
		}
		t.Skip("no helm on PATH or in $HELM")
	}
	b, err := os.ReadFile("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Kubernetes (Helm)\n")
	if !ok {
		t.Fatal(`docs/install.md has no "## Kubernetes (Helm)" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")

	dir := t.TempDir()
	deployDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(deployDir, filepath.Join(dir, "deploy")); err != nil {
		t.Fatal(err)
	}
	var commands [][]string
	values := false
	for _, m := range regexp.MustCompile("(?s)```(\\w+)\n(.*?)```").FindAllStringSubmatch(section, -1) {
		lang, body := m[1], m[2]
		if name, ok := strings.CutPrefix(body, "# "); lang == "yaml" && ok {
			name, _, _ = strings.Cut(name, "\n")
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			values = true
			continue
		}
		if lang != "sh" {
			continue
		}
		for _, line := range strings.Split(strings.ReplaceAll(body, "\\\n", " "), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || f[0] != "helm" {
				continue
			}
			if len(f) < 2 || f[1] != "install" {
				t.Errorf("docs/install.md runs `%s`: the chart must install as shipped, with nothing but `helm install`", strings.Join(f, " "))
				continue
			}
			if strings.ContainsAny(line, `"'$`) {
				t.Errorf("cannot run `%s` without a shell: keep the documented helm commands free of quotes and variables", line)
				continue
			}
			commands = append(commands, f)
		}
	}
	if !values {
		t.Error("the section shows no values file (a yaml block that starts with \"# <file name>\")")
	}
	if len(commands) < 3 {
		t.Fatalf("found %d `helm install` commands in the section, want the one-node, cluster and own-NATS ones", len(commands))
	}
	for _, c := range commands {
		args := append([]string{"template"}, c[2:]...)
		cmd := exec.Command(helm, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		// The values file made it into config.json.
		if !strings.Contains(string(out), `"token": "${TELEGRAM_TOKEN}"`) {
			t.Errorf("helm %s: the values file's config is not in the rendered config.json", strings.Join(args, " "))
		}
	}
}
