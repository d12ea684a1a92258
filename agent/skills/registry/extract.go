package registry

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Caps on what an archive may unpack to.
const (
	MaxFiles     = 500
	MaxFileSize  = 5 << 20
	MaxTotalSize = 50 << 20
)

// ErrUnsafeArchive is returned for an archive that tries to write outside
// its folder (absolute or "../" paths, links pointing out) or exceeds the
// caps; nothing of it is kept.
var ErrUnsafeArchive = errors.New("unsafe archive")

// member is one entry of an archive, read into memory (archives are capped).
type member struct {
	name string // slash path relative to the skill folder
	mode os.FileMode
	link string // symlink target, "" for a file
	data []byte
}

// readArchive reads a zip or a gzip'd tar (told apart by their magic
// bytes) and checks every path and the caps.
func readArchive(data []byte) ([]member, error) {
	var ms []member
	var err error
	switch {
	case bytes.HasPrefix(data, []byte("PK\x03\x04")), bytes.HasPrefix(data, []byte("PK\x05\x06")):
		ms, err = readZip(data)
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		ms, err = readTarGz(data)
	default:
		return nil, errors.New("the archive is neither a zip nor a .tar.gz")
	}
	if err != nil {
		return nil, err
	}
	return stripTop(ms), nil
}

func readZip(data []byte) ([]member, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("read zip: %w", err)
	}
	var c caps
	var out []member
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		name, err := cleanName(f.Name)
		if err != nil {
			return nil, err
		}
		if err := c.add(name, int64(f.UncompressedSize64)); err != nil {
			return nil, err
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("read zip %s: %w", name, err)
		}
		body, err := readCapped(rc, name)
		rc.Close()
		if err != nil {
			return nil, err
		}
		m := member{name: name, mode: f.Mode()}
		if f.Mode()&os.ModeSymlink != 0 {
			m.link = string(body)
		} else {
			m.data = body
		}
		out = append(out, m)
	}
	return out, nil
}

func readTarGz(data []byte) ([]member, error) {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("read tar.gz: %w", err)
	}
	tr := tar.NewReader(gz)
	var c caps
	var out []member
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read tar.gz: %w", err)
		}
		if h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := cleanName(h.Name)
		if err != nil {
			return nil, err
		}
		if err := c.add(name, h.Size); err != nil {
			return nil, err
		}
		switch h.Typeflag {
		case tar.TypeReg:
			body, err := readCapped(tr, name)
			if err != nil {
				return nil, err
			}
			out = append(out, member{name: name, mode: os.FileMode(h.Mode).Perm(), data: body})
		case tar.TypeSymlink:
			out = append(out, member{name: name, mode: os.ModeSymlink, link: h.Linkname})
		default:
			return nil, fmt.Errorf("%w: %s is a %q entry (only files and links are allowed)", ErrUnsafeArchive, name, string(h.Typeflag))
		}
	}
}

// caps counts files and bytes against the limits.
type caps struct {
	files int
	total int64
}

func (c *caps) add(name string, size int64) error {
	c.files++
	c.total += size
	switch {
	case c.files > MaxFiles:
		return fmt.Errorf("%w: more than %d files", ErrUnsafeArchive, MaxFiles)
	case size > MaxFileSize:
		return fmt.Errorf("%w: %s is larger than %d bytes", ErrUnsafeArchive, name, MaxFileSize)
	case c.total > MaxTotalSize:
		return fmt.Errorf("%w: more than %d bytes in all", ErrUnsafeArchive, MaxTotalSize)
	}
	return nil
}

// readCapped reads one entry, refusing one that unpacks to more than its
// header said (or than MaxFileSize).
func readCapped(r io.Reader, name string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(body) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrUnsafeArchive, name, MaxFileSize)
	}
	return body, nil
}

// cleanName checks an entry's path: relative, no "..", no backslashes or
// drive letters.
func cleanName(name string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w: entry %q %s", ErrUnsafeArchive, name, why)
	}
	if strings.ContainsAny(name, "\\\x00") || strings.Contains(name, ":") {
		return bad("has a backslash, colon or NUL")
	}
	if strings.HasPrefix(name, "/") {
		return bad("is an absolute path")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return bad("climbs out with ..")
		}
	}
	clean := path.Clean(name)
	if clean == "." || clean == "" {
		return bad("is empty")
	}
	return clean, nil
}

// stripTop drops a single folder that wraps every entry ("name/SKILL.md"),
// when SKILL.md is not at the top.
func stripTop(ms []member) []member {
	if len(ms) == 0 {
		return ms
	}
	top, _, ok := strings.Cut(ms[0].name, "/")
	if !ok {
		return ms
	}
	for _, m := range ms {
		if m.name == "SKILL.md" || !strings.HasPrefix(m.name, top+"/") {
			return ms
		}
	}
	for i := range ms {
		ms[i].name = strings.TrimPrefix(ms[i].name, top+"/")
	}
	return ms
}

// extract writes ms into dir, which must not exist yet. Symlinks must
// point inside dir and are made after every file, so no file is written
// through one.
func extract(ms []member, dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	var links []member
	linkNames := map[string]bool{}
	for _, m := range ms {
		if m.link != "" || m.mode&os.ModeSymlink != 0 {
			linkNames[m.name] = true
		}
	}
	hasManual := false
	for _, m := range ms {
		if m.name == "SKILL.md" && m.link == "" {
			hasManual = true
		}
		if m.link != "" || m.mode&os.ModeSymlink != 0 {
			if err := linkInside(m, linkNames); err != nil {
				return err
			}
			links = append(links, m)
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(m.name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		perm := os.FileMode(0o644)
		if m.mode&0o111 != 0 {
			perm = 0o755
		}
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return fmt.Errorf("write %s: %w", m.name, err)
		}
		_, err = f.Write(m.data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", m.name, err)
		}
	}
	if !hasManual {
		return errors.New("the archive has no SKILL.md at its top")
	}
	for _, m := range links {
		target := filepath.Join(dir, filepath.FromSlash(m.name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(filepath.FromSlash(m.link), target); err != nil {
			return fmt.Errorf("link %s: %w", m.name, err)
		}
	}
	return nil
}

// linkInside refuses a symlink whose target is absolute or leaves the
// skill folder. The target is walked part by part from the link's folder:
// ".." may not climb above the top, and no part but the last may be
// another link (a ".." after a link would climb from where that link
// points, not from where it sits).
func linkInside(m member, links map[string]bool) error {
	out := fmt.Errorf("%w: link %s -> %q points outside the skill", ErrUnsafeArchive, m.name, m.link)
	if m.link == "" || path.IsAbs(m.link) || strings.ContainsAny(m.link, "\\:") {
		return out
	}
	var at []string
	if d := path.Dir(m.name); d != "." {
		at = strings.Split(d, "/")
	}
	parts := strings.Split(m.link, "/")
	for i, part := range parts {
		switch part {
		case "", ".":
			continue
		case "..":
			if len(at) == 0 {
				return out
			}
			at = at[:len(at)-1]
			continue
		}
		at = append(at, part)
		if links[strings.Join(at, "/")] && i < len(parts)-1 {
			return out
		}
	}
	return nil
}
