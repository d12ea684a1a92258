package email

import (
	"strings"
)

// authResults are the method results of one Authentication-Results header
// (RFC 8601), as the receiving server wrote it.
type authResults []authResult

type authResult struct {
	method, result string
	props          map[string]string // "header.d" -> "example.com"
}

// parseAuthResults reads the topmost Authentication-Results value: the one
// the receiving server added. Headers further down may come from the
// sender and are not trusted.
func parseAuthResults(v string) authResults {
	v = stripComments(v)
	parts := strings.Split(v, ";")
	if len(parts) < 2 {
		return nil // only the authserv-id, or nothing
	}
	var out authResults
	for _, p := range parts[1:] {
		f := strings.Fields(p)
		if len(f) == 0 {
			continue
		}
		method, result, ok := strings.Cut(f[0], "=")
		if !ok {
			continue
		}
		r := authResult{method: strings.ToLower(method), result: strings.ToLower(result), props: map[string]string{}}
		for _, kv := range f[1:] {
			if k, val, ok := strings.Cut(kv, "="); ok {
				r.props[strings.ToLower(k)] = strings.ToLower(strings.Trim(val, `"`))
			}
		}
		out = append(out, r)
	}
	return out
}

// passAligned reports whether method passed for the From domain: DKIM
// with a signing domain (header.d, or the domain of header.i) and SPF with
// an envelope sender domain (smtp.mailfrom) equal to it, or one a parent
// of the other (relaxed alignment, as DMARC has it). A pass for some other
// domain proves nothing about the From address.
func (rs authResults) passAligned(method, fromDomain string) bool {
	fromDomain = strings.ToLower(fromDomain)
	for _, r := range rs {
		if r.method != method || r.result != "pass" {
			continue
		}
		var domains []string
		switch method {
		case "dkim":
			domains = []string{r.props["header.d"], domainPart(r.props["header.i"])}
		case "spf":
			domains = []string{domainPart(r.props["smtp.mailfrom"])}
		}
		for _, d := range domains {
			if strings.Contains(d, ".") && (fromDomain == d || strings.HasSuffix(fromDomain, "."+d) || strings.HasSuffix(d, "."+fromDomain)) {
				return true
			}
		}
	}
	return false
}

func domainPart(s string) string {
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// stripComments removes RFC 5322 comments ("(...)", nested) outside quotes.
func stripComments(s string) string {
	var b strings.Builder
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s):
			if depth == 0 {
				b.WriteByte(ch)
				b.WriteByte(s[i+1])
			}
			i++
		case ch == '"' && depth == 0:
			quoted = !quoted
			b.WriteByte(ch)
		case ch == '(' && !quoted:
			depth++
		case ch == ')' && !quoted && depth > 0:
			depth--
		case depth == 0:
			b.WriteByte(ch)
		}
	}
	return b.String()
}
