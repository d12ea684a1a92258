package configs

import (
	"encoding/json"
	"strings"
)

func (p *patcher) isContainer(c span) bool {
	return c.end > c.start && (p.raw[c.start] == '{' || p.raw[c.start] == '[')
}

func (p *patcher) isEmpty(c span) bool {
	return p.skipWS(c.start+1) == c.end-1
}

func (p *patcher) isNull(c span) bool {
	return string(p.raw[c.start:c.end]) == "null"
}

// The scanner below reads JSON that parseJSON has accepted, so it checks
// nothing and only finds where each value starts and ends.

func (p *patcher) skipWS(i int) int {
	for i < len(p.raw) {
		switch p.raw[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// valueEnd returns the end of the value that starts at i.
func (p *patcher) valueEnd(i int) int {
	switch p.raw[i] {
	case '"':
		return p.stringEnd(i)
	case '{':
		ms := p.members(span{i, -1})
		end := i + 1
		if len(ms) > 0 {
			end = ms[len(ms)-1].val.end
		}
		return p.skipWS(end) + 1
	case '[':
		els := p.elements(span{i, -1})
		end := i + 1
		if len(els) > 0 {
			end = els[len(els)-1].end
		}
		return p.skipWS(end) + 1
	}
	for i < len(p.raw) && !strings.ContainsRune(",}] \t\r\n", rune(p.raw[i])) {
		i++
	}
	return i
}

func (p *patcher) stringEnd(i int) int {
	for i++; p.raw[i] != '"'; i++ {
		if p.raw[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// members lists the members of the object that starts at o.start, in file
// order (o.end is not needed).
func (p *patcher) members(o span) []member {
	var out []member
	i := p.skipWS(o.start + 1)
	for p.raw[i] != '}' {
		m := member{keyStart: i, keyEnd: p.stringEnd(i)}
		_ = json.Unmarshal(p.raw[m.keyStart:m.keyEnd], &m.key) // as encoding/json reads it
		i = p.skipWS(p.skipWS(m.keyEnd) + 1)                   // past ':'
		m.val = span{i, p.valueEnd(i)}
		out = append(out, m)
		i = p.skipWS(m.val.end)
		if p.raw[i] == ',' {
			i = p.skipWS(i + 1)
		}
	}
	return out
}

// elements lists the values of the array that starts at a.start.
func (p *patcher) elements(a span) []span {
	var out []span
	i := p.skipWS(a.start + 1)
	for p.raw[i] != ']' {
		v := span{i, p.valueEnd(i)}
		out = append(out, v)
		i = p.skipWS(v.end)
		if p.raw[i] == ',' {
			i = p.skipWS(i + 1)
		}
	}
	return out
}
