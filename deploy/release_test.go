package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/nanobot-go/nanobot/configs"
)

// The container image cannot be built here (no Docker daemon in CI), so this
// test holds the Dockerfile's promises instead: multi-arch cross-compiled
// build, non-root user, a health check on /readyz at the default port, the
// browser variant, version stamping.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var (
		lines  = dockerInstructions(string(b))
		stages []string              // stage names, in order
		last   = map[string]string{} // instruction -> its last arguments
	)
	for _, l := range lines {
		instr, args, _ := strings.Cut(l, " ")
		instr = strings.ToUpper(instr)
		if instr == "FROM" {
			// "FROM image AS name" names a stage; a bare "FROM name"
			// continues one: either way the last word.
			f := strings.Fields(args)
			stages = append(stages, f[len(f)-1])
		}
		last[instr] = args
	}
	if !strings.Contains(string(b), "FROM --platform=$BUILDPLATFORM golang:") {
		t.Error("the build stage does not run on $BUILDPLATFORM (multi-arch builds would emulate the compiler)")
	}
	for _, want := range []string{"GOOS=${TARGETOS", "GOARCH=${TARGETARCH", "CGO_ENABLED=0", "-tags goolm", "-trimpath",
		"-X main.version=${VERSION}", "-X main.commit=${COMMIT}", "-X main.date=${DATE}"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the build stage lacks %q", want)
		}
	}
	if !slices.Contains(stages, "browser") {
		t.Errorf("no browser stage among %v", stages)
	}
	// Every USER line must name a non-root user, except the browser stage's
	// apt-get step, which switches back after it.
	var users []string
	for _, l := range lines {
		if u, ok := strings.CutPrefix(l, "USER "); ok {
			users = append(users, u)
		}
	}
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1], "root") || strings.HasPrefix(users[len(users)-1], "0") {
		t.Errorf("the image does not end on a non-root user: USER lines %q", users)
	}
	if got := last["USER"]; got != "10001:10001" {
		t.Errorf("USER = %q, want 10001:10001 (the uid the Helm chart's runAsUser names)", got)
	}
	port := strconv.Itoa(configs.Default().Gateway.Port)
	if got := last["EXPOSE"]; got != port {
		t.Errorf("EXPOSE %s, want the gateway's default port %s", got, port)
	}
	if hc := last["HEALTHCHECK"]; !strings.Contains(hc, "http://127.0.0.1:"+port+"/readyz") {
		t.Errorf("HEALTHCHECK %q does not read /readyz on port %s", hc, port)
	}
	if got := last["ENTRYPOINT"]; got != `["nanobot"]` {
		t.Errorf("ENTRYPOINT %s", got)
	}
	if got := last["CMD"]; got != `["gateway"]` {
		t.Errorf("CMD %s", got)
	}
	if got := last["VOLUME"]; got != `["/home/nanobot/.nanobot"]` {
		t.Errorf("VOLUME %s", got)
	}
	// The default target (the last stage) is the image without Chromium.
	if stages[len(stages)-1] != "runtime" {
		t.Errorf("the last stage is %q, want the runtime image (plain `docker build` must not pull Chromium)", stages[len(stages)-1])
	}
}

// dockerInstructions joins continuation lines and drops comments.
func dockerInstructions(s string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") || (t == "" && cur.Len() == 0) {
			continue
		}
		if c, ok := strings.CutSuffix(t, "\\"); ok {
			cur.WriteString(c + " ")
			continue
		}
		cur.WriteString(t)
		if x := strings.Join(strings.Fields(cur.String()), " "); x != "" {
			out = append(out, x)
		}
		cur.Reset()
	}
	return out
}

// The release targets are listed once, in .goreleaser.yaml; CI builds them
// with scripts/crossbuild.sh, which reads that list with awk. This checks
// that the script finds exactly what goreleaser will build, and that the
// list covers the platforms we promise.
func TestReleaseTargets(t *testing.T) {
	b, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var gr struct {
		Version int `yaml:"version"`
		Builds  []struct {
			Main    string   `yaml:"main"`
			Env     []string `yaml:"env"`
			Flags   []string `yaml:"flags"`
			Tags    []string `yaml:"tags"`
			Ldflags []string `yaml:"ldflags"`
			Targets []string `yaml:"targets"`
		} `yaml:"builds"`
		Archives []struct {
			Files []any `yaml:"files"`
		} `yaml:"archives"`
		SBOMs []any `yaml:"sboms"`
	}
	if err := yaml.Unmarshal(b, &gr); err != nil {
		t.Fatal(err)
	}
	if gr.Version != 2 || len(gr.Builds) != 1 {
		t.Fatalf("want goreleaser schema version 2 with one build, got version %d, %d builds", gr.Version, len(gr.Builds))
	}
	bld := gr.Builds[0]
	want := []string{"darwin_amd64_v1", "darwin_arm64_v8.0", "linux_amd64_v1", "linux_arm64_v8.0", "linux_arm_7", "windows_amd64_v1", "windows_arm64_v8.0"}
	got := slices.Sorted(slices.Values(bld.Targets))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("release targets (-want +got):\n%s", d)
	}
	if !slices.Contains(bld.Env, "CGO_ENABLED=0") || !slices.Contains(bld.Tags, "goolm") || !slices.Contains(bld.Flags, "-trimpath") {
		t.Errorf("the build is not the static goolm -trimpath build: env %q tags %q flags %q", bld.Env, bld.Tags, bld.Flags)
	}
	ld := strings.Join(bld.Ldflags, " ")
	for _, w := range []string{"-s -w", "main.version=", "main.commit=", "main.date="} {
		if !strings.Contains(ld, w) {
			t.Errorf("ldflags %q lack %q", ld, w)
		}
	}
	if len(gr.SBOMs) == 0 || len(gr.Archives) == 0 {
		t.Error("no SBOM or no archive configured")
	}
	files, _ := yaml.Marshal(gr.Archives[0].Files)
	for _, f := range []string{"README.md", "LICENSE", "configs/config.example.json"} {
		if !strings.Contains(string(files), f) {
			t.Errorf("the archives lack %s", f)
		}
		if _, err := os.Stat("../" + f); err != nil {
			t.Errorf("archived file: %v", err)
		}
	}

	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to run scripts/crossbuild.sh -l")
	}
	out, err := exec.Command("bash", "../scripts/crossbuild.sh", "-l").CombinedOutput()
	if err != nil {
		t.Fatalf("crossbuild.sh -l: %v\n%s", err, out)
	}
	if d := cmp.Diff(bld.Targets, strings.Fields(string(out))); d != "" {
		t.Errorf("scripts/crossbuild.sh reads other targets than goreleaser's (-goreleaser +script):\n%s", d)
	}
	for _, tg := range strings.Fields(string(out)) {
		if !regexp.MustCompile(`^(linux|darwin|windows)_(amd64_v1|arm64_v8\.0|arm_[67])$`).MatchString(tg) {
			t.Errorf("crossbuild.sh cannot map target %q to GOOS/GOARCH and its variant", tg)
		}
	}
}
