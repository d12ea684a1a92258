package session

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// File names. A session key maps to "<stem>.jsonl" where the stem keeps
// [A-Za-z0-9._-] and writes every other byte as %XX (upper-case hex), plus a
// leading '.', so a name is never hidden, never "." or "..", and never
// contains a path separator. Keys whose stem would be too long for common
// file systems keep a readable prefix and end in "~" and a hash of the key;
// their key is read back from the metadata line. Archived files are
// "<stem>@<time>.jsonl" and temporary files start with '.', so neither can be
// mistaken for a live session ('@' and '~' never occur in an encoded stem).
const (
	fileExt       = ".jsonl"
	maxStemLen    = 200
	hashedKeepLen = 160
	archiveSep    = "@"
	hashSep       = "~"
)

const hexDigits = "0123456789ABCDEF"

func keepByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// encodeKey returns the file stem of key.
func encodeKey(key string) string {
	var b strings.Builder
	b.Grow(len(key) + 8)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if keepByte(c) && !(i == 0 && c == '.') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	stem := b.String()
	if len(stem) <= maxStemLen {
		return stem
	}
	cut := hashedKeepLen
	// Do not split an escape: back up to before a '%' in the last two bytes.
	if i := strings.LastIndexByte(stem[cut-2:cut], '%'); i >= 0 {
		cut = cut - 2 + i
	}
	sum := sha256.Sum256([]byte(key))
	return stem[:cut] + hashSep + hex.EncodeToString(sum[:16])
}

// decodeKey reverses encodeKey. ok is false for stems that are not plain
// encodings (hashed long keys, archives, foreign files).
func decodeKey(stem string) (key string, ok bool) {
	var b strings.Builder
	b.Grow(len(stem))
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		switch {
		case c == '%':
			if i+2 >= len(stem) {
				return "", false
			}
			hi, lo := unhex(stem[i+1]), unhex(stem[i+2])
			if hi < 0 || lo < 0 {
				return "", false
			}
			b.WriteByte(byte(hi<<4 | lo))
			i += 2
		case keepByte(c) && !(i == 0 && c == '.'):
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	if b.Len() == 0 {
		return "", false
	}
	return b.String(), true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// legacyStem is the file stem the Python nanobot uses for key: ':' and the
// characters Windows forbids become '_'. The mapping is lossy, so a legacy
// file is adopted only when its metadata key (if any) matches. ok is false
// when the stem would be unsafe or equals the new-style stem.
func legacyStem(key string) (stem string, ok bool) {
	stem = strings.Map(func(r rune) rune {
		switch r {
		case ':', '<', '>', '"', '/', '\\', '|', '?', '*', 0:
			return '_'
		}
		return r
	}, key)
	stem = strings.TrimSpace(stem)
	if stem == "" || strings.HasPrefix(stem, ".") || strings.ContainsAny(stem, archiveSep+hashSep+"%") ||
		len(stem) > maxStemLen || stem == encodeKey(key) {
		return "", false
	}
	return stem, true
}
