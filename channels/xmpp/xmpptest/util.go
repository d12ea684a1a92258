package xmpptest

import (
	"encoding/xml"
	"strings"
)

// rawXML reads literal XML as tokens without namespace translation, so the
// session writes it back exactly (one xmlns attribute, as written).
func rawXML(s string) xml.TokenReader { return rawReader{xml.NewDecoder(strings.NewReader(s))} }

type rawReader struct{ d *xml.Decoder }

func (r rawReader) Token() (xml.Token, error) { return r.d.RawToken() }

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
