package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// PatchJSON and LookupJSON edit and read config.json's own bytes, for the
// commands that change one setting (`nanobot webui set-password`, "Always
// allow", /skill disable): the user's layout, key order, other keys, `&`
// and ${VAR} references stay exactly as written, byte for byte, and only
// the value at the path is rewritten. The file may be shared with the
// Python nanobot and is edited by hand, so re-encoding the whole tree
// (sorted keys, `\u0026`, every default spelled out) is not an option.
//
// A path is dotted ("tools.exec.approvedCommands"); a part may end in
// array indices ("agents.list[1].disabledSkills"), which only reach
// elements that exist. Keys are found as the loader finds them: the exact
// spelling first, else, for the name of a setting, a spelling the loader
// reads as it ("api_key" for apiKey, see keyFolds), so an edit never adds a
// second spelling of a setting; names the user chose (a provider, a
// channel, an agent) are matched exactly. Keys containing "." or "[" cannot
// be named. The input must be JSON with
// an object at the top, as Load requires (no comments, no trailing commas).

// PatchJSON returns raw with the value at path set to value (encoded with
// encoding/json, without HTML escaping). A missing key is added to the
// innermost object the path reaches, with the objects between created; it
// is indented like its siblings and separated from them the way they are
// separated. A part of the path that holds null becomes an object, like
// SetPath does; one that holds something else is an error.
func PatchJSON(raw []byte, path string, value any) ([]byte, error) {
	segs, err := parsePatchPath(path)
	if err != nil {
		return nil, err
	}
	p, err := newPatcher(raw)
	if err != nil {
		return nil, err
	}
	r, err := p.resolve(segs)
	if err != nil {
		return nil, err
	}
	var at span
	var text string
	rest := segs[r.found:]
	switch {
	case len(rest) == 0:
		at = r.hops[len(r.hops)-1].val
		if sameJSON(p.raw[at.start:at.end], value) {
			return raw, nil // as the user spelled it ("1.0", "\u00e9")
		}
		text, err = p.replacement(at, r, value)
	case p.raw[r.cur.start] == '{':
		at, text, err = p.insertion(r, rest, value)
	default: // null
		at = r.cur
		var v any
		if v, err = nest(rest, value); err == nil {
			text, err = p.replacement(at, r, v)
		}
	}
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(p.raw)+len(text))
	out = append(out, p.raw[:at.start]...)
	out = append(out, text...)
	out = append(out, p.raw[at.end:]...)
	if !json.Valid(bytes.TrimPrefix(out, bom)) {
		return nil, fmt.Errorf("setting %s would leave invalid JSON (a bug): nothing changed", path)
	}
	return out, nil
}

// LookupJSON returns the JSON text of the value at path in raw, found as
// PatchJSON finds it; found is false when a part of the path is missing
// (or holds null where an object would go on).
func LookupJSON(raw []byte, path string) (value json.RawMessage, found bool, err error) {
	segs, err := parsePatchPath(path)
	if err != nil {
		return nil, false, err
	}
	p, err := newPatcher(raw)
	if err != nil {
		return nil, false, err
	}
	r, err := p.resolve(segs)
	if err != nil || r.found < len(segs) {
		return nil, false, err
	}
	v := r.hops[len(r.hops)-1].val
	return json.RawMessage(p.raw[v.start:v.end]), true, nil
}

var bom = []byte("\xef\xbb\xbf")

// patchSeg is one part of a path: an object key, or an array index when
// index >= 0.
type patchSeg struct {
	key   string
	index int
	name  string // the path up to and including this part, for errors
}

func parsePatchPath(path string) ([]patchSeg, error) {
	var segs []patchSeg
	name := ""
	for i, part := range strings.Split(path, ".") {
		key, idx, _ := strings.Cut(part, "[")
		if i > 0 {
			name += "."
		}
		name += key
		if strings.Contains(key, "]") {
			return nil, fmt.Errorf("config path %q: misplaced ]", path)
		}
		segs = append(segs, patchSeg{key: key, index: -1, name: name})
		if idx == "" && !strings.Contains(part, "[") {
			continue
		}
		for _, n := range strings.Split("["+idx, "[")[1:] {
			num, ok := strings.CutSuffix(n, "]")
			i, err := strconv.Atoi(num)
			if !ok || err != nil || i < 0 || num != strconv.Itoa(i) {
				return nil, fmt.Errorf("config path %q: want [index] after %s", path, name)
			}
			name += "[" + num + "]"
			segs = append(segs, patchSeg{index: i, name: name})
		}
	}
	return segs, nil
}

// span is raw[start:end], one JSON value.
type span struct{ start, end int }

type member struct {
	keyStart, keyEnd int // the key with its quotes
	key              string
	val              span
}

type patcher struct {
	raw  []byte
	top  span
	nl   string // the file's line break
	unit string // one level of the file's indentation
}

func newPatcher(raw []byte) (*patcher, error) {
	body := bytes.TrimPrefix(raw, bom)
	if len(bytes.TrimSpace(body)) == 0 {
		raw = append(raw[:len(raw)-len(body):len(raw)-len(body)], "{}\n"...)
	} else if _, err := parseJSON(body); err != nil {
		return nil, err
	}
	p := &patcher{raw: raw, nl: "\n", unit: "  "}
	start := p.skipWS(len(raw) - len(bytes.TrimPrefix(raw, bom)))
	p.top = span{start, p.valueEnd(start)}
	if bytes.Contains(raw, []byte("\r\n")) {
		p.nl = "\r\n"
	}
	p.unit = p.indentUnit()
	return p, nil
}

// resolved is how far a path reaches: found parts, each with the value it
// names (hops), and cur, the value where the walk stopped (the last hop's
// value, or the object or null to add the rest of the path to).
type resolved struct {
	hops  []hop
	found int
	cur   span
}

type hop struct {
	in  span // the object or array the part was looked up in
	val span
}

func (p *patcher) resolve(segs []patchSeg) (resolved, error) {
	r := resolved{cur: p.top}
	folds := keyFolds(segs)
	for i, s := range segs {
		kind := p.raw[r.cur.start]
		at := "the top level"
		if i > 0 {
			at = segs[i-1].name
		}
		if s.index >= 0 {
			if kind != '[' {
				return r, fmt.Errorf("%s is not an array in the file", at)
			}
			els := p.elements(r.cur)
			if s.index >= len(els) {
				return r, fmt.Errorf("%s is not in the file", s.name)
			}
			r.hops = append(r.hops, hop{in: r.cur, val: els[s.index]})
			r.found, r.cur = i+1, els[s.index]
			continue
		}
		if kind != '{' {
			if p.isNull(r.cur) {
				if j := slices.IndexFunc(segs[i:], func(s patchSeg) bool { return s.index >= 0 }); j >= 0 {
					return r, fmt.Errorf("%s is not in the file", segs[i+j].name)
				}
				return r, nil
			}
			return r, fmt.Errorf("%s is not an object in the file", at)
		}
		m, ok := pickMember(p.members(r.cur), s.key, folds[i])
		if !ok {
			if j := slices.IndexFunc(segs[i:], func(s patchSeg) bool { return s.index >= 0 }); j >= 0 {
				return r, fmt.Errorf("%s is not in the file", segs[i+j].name)
			}
			return r, nil
		}
		r.hops = append(r.hops, hop{in: r.cur, val: m.val})
		r.found, r.cur = i+1, m.val
	}
	return r, nil
}

// pickMember finds key as the loader does: the exact key (its last
// occurrence, as encoding/json keeps the last), else, when the key is a
// setting's name (fold), the first in sorted order of the keys that fold
// to it (the one the loader keeps).
func pickMember(ms []member, key string, fold bool) (member, bool) {
	best := -1
	for i, m := range ms {
		if m.key == key {
			best = i
		}
	}
	if best >= 0 {
		return ms[best], true
	}
	if !fold {
		return member{}, false
	}
	n := normKey(key)
	for i, m := range ms {
		if normKey(m.key) == n && (best < 0 || m.key <= ms[best].key) {
			best = i
		}
	}
	if best < 0 {
		return member{}, false
	}
	return ms[best], true
}

// keyFolds reports, for each key of a path, whether the loader reads it in
// any spelling ("api_key" for apiKey: the name of a setting) or only as
// written (a name the user chose: a provider, a channel, an agent, a
// preset, the keys of a map). It follows the path through the Config
// type; a platform's own settings, typed by its adapter, are settings.
func keyFolds(segs []patchSeg) []bool {
	folds := make([]bool, len(segs))
	anyType := reflect.TypeFor[any]()
	t := reflect.TypeFor[Config]() // nil: settings of a type this package does not know
	for i, s := range segs {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == fallbackType {
			t = reflect.TypeFor[ModelPreset]() // its object form
		}
		if s.index >= 0 {
			if t != nil && t.Kind() == reflect.Slice {
				t = t.Elem()
			} else if t != nil {
				t = anyType
			}
			continue
		}
		switch {
		case t == nil:
			folds[i] = true
		case t == channelsType:
			if f, ok := structFields(channelsType)[normKey(s.key)]; ok {
				folds[i], t = true, f.typ
			} else {
				t = nil // a platform's name, then its settings
			}
		case t == agentsType:
			switch normKey(s.key) {
			case "defaults":
				folds[i], t = true, reflect.TypeFor[AgentDefaults]()
			case "list":
				folds[i], t = true, reflect.TypeFor[[]AgentProfile]()
			default:
				t = reflect.TypeFor[AgentProfile]()
			}
		case t.Kind() == reflect.Struct:
			folds[i] = true
			if f, ok := structFields(t)[normKey(s.key)]; ok {
				t = f.typ
			} else {
				t = nil // a key the loader does not know
			}
		case t.Kind() == reflect.Map:
			t = t.Elem()
		default:
			t = anyType // data: a list's or an any's contents
		}
	}
	return folds
}

// replacement is the text that replaces the value at v: a container
// spread over lines stays spread (indented from v's line), one on a line
// stays on it; a scalar or an empty container becomes a value shaped like
// its container's members.
func (p *patcher) replacement(v span, r resolved, value any) (string, error) {
	in := r.hops[len(r.hops)-1].in // v is the last hop's value
	multiline := p.multiline(in)
	if p.isContainer(v) && !p.isEmpty(v) {
		multiline = p.multiline(v)
	}
	return p.encode(value, multiline, p.lineIndent(v.start), p.spaced(append([]span{v, in}, containers(r)...)...))
}

// insertion adds rest (a key, then the objects down to value) to the
// object r.cur, after its last member.
func (p *patcher) insertion(r resolved, rest []patchSeg, value any) (span, string, error) {
	o := r.cur
	v, err := nest(rest[1:], value)
	if err != nil {
		return span{}, "", err
	}
	key, err := encodeCompact(rest[0].key)
	if err != nil {
		return span{}, "", err
	}
	ms := p.members(o)
	if len(ms) > 0 {
		last := ms[len(ms)-1]
		colon := string(p.raw[last.keyEnd:last.val.start])
		multiline := p.multiline(o)
		indent := ""
		if multiline {
			indent = p.memberIndent(o, ms)
		}
		var gap string
		switch {
		case len(ms) >= 2:
			gap = string(p.raw[ms[len(ms)-2].val.end:last.keyStart])
		case multiline:
			gap = "," + p.nl + indent
		case last.keyStart > o.start+1 || strings.HasSuffix(colon, " "):
			gap = ", "
		default:
			gap = ","
		}
		prefix := indent // where the value's line starts
		if i := strings.LastIndex(colon, "\n"); i >= 0 {
			prefix = string(leadingBlank([]byte(colon[i+1:])))
		}
		val, err := p.encode(v, multiline, prefix, p.spaced(append([]span{o}, containers(r)...)...))
		if err != nil {
			return span{}, "", err
		}
		return span{last.val.end, last.val.end}, gap + key + colon + val, nil
	}

	// An empty object: spread it over lines when it is (or its container
	// is) spread, the top level always.
	inner := string(p.raw[o.start+1 : o.end-1])
	multiline := strings.Contains(inner, "\n") || o == p.top
	if !multiline && len(r.hops) > 0 {
		multiline = p.multiline(r.hops[len(r.hops)-1].in)
	}
	spaced := p.spaced(containers(r)...)
	colon := ":"
	if spaced || multiline {
		colon = ": "
	}
	if !multiline {
		val, err := p.encode(v, false, "", spaced)
		if err != nil {
			return span{}, "", err
		}
		return o, "{" + inner + key + colon + val + inner + "}", nil
	}
	closing := p.lineIndent(o.start)
	indent := closing + p.unit
	val, err := p.encode(v, true, indent, spaced)
	if err != nil {
		return span{}, "", err
	}
	return o, "{" + p.nl + indent + key + colon + val + p.nl + closing + "}", nil
}

// sameJSON reports whether the JSON text old reads as value does.
func sameJSON(old []byte, value any) bool {
	b, err := json.Marshal(value)
	if err != nil {
		return false
	}
	var was, now any
	return json.Unmarshal(old, &was) == nil && json.Unmarshal(b, &now) == nil && reflect.DeepEqual(was, now)
}

// containers lists the objects and arrays the walk went through,
// innermost first.
func containers(r resolved) []span {
	out := make([]span, 0, len(r.hops))
	for i := len(r.hops) - 1; i >= 0; i-- {
		out = append(out, r.hops[i].in)
	}
	return out
}

// nest wraps value in one object per remaining key: {"a": {"b": value}}.
func nest(rest []patchSeg, value any) (any, error) {
	for i := len(rest) - 1; i >= 0; i-- {
		if rest[i].index >= 0 {
			return nil, fmt.Errorf("%s is not in the file", rest[i].name)
		}
		value = map[string]any{rest[i].key: value}
	}
	return value, nil
}

// encode writes v as JSON without HTML escaping: spread over lines with
// the file's unit under prefix, or on one line with or without a space
// after "," and ":".
func (p *patcher) encode(v any, multiline bool, prefix string, spaced bool) (string, error) {
	compact, err := encodeCompact(v)
	if err != nil {
		return "", err
	}
	if multiline {
		var b bytes.Buffer
		if err := json.Indent(&b, []byte(compact), prefix, p.unit); err != nil {
			return "", err
		}
		return strings.ReplaceAll(b.String(), "\n", p.nl), nil
	}
	if !spaced {
		return compact, nil
	}
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(compact); i++ {
		c := compact[i]
		b.WriteByte(c)
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String(), nil
}

func encodeCompact(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// spaced reports whether the first of cs that shows it puts a space after
// its "," or ":" (the Python nanobot's and encoding/json's indented
// output do); true when none shows it.
func (p *patcher) spaced(cs ...span) bool {
	for _, c := range cs {
		if !p.isContainer(c) {
			continue
		}
		if p.raw[c.start] == '{' {
			if ms := p.members(c); len(ms) > 0 {
				gap := p.raw[ms[0].keyEnd:ms[0].val.start]
				return !bytes.HasSuffix(gap, []byte(":"))
			}
			continue
		}
		if els := p.elements(c); len(els) >= 2 {
			gap := p.raw[els[0].end:els[1].start]
			return !bytes.HasSuffix(gap, []byte(","))
		}
	}
	return true
}

// multiline reports whether container c puts a line break between its
// brackets and members (not counting the breaks inside its members).
func (p *patcher) multiline(c span) bool {
	if !p.isContainer(c) {
		return false
	}
	pos := c.start + 1
	var gaps [][2]int
	if p.raw[c.start] == '{' {
		for _, m := range p.members(c) {
			gaps = append(gaps, [2]int{pos, m.keyStart}, [2]int{m.keyEnd, m.val.start})
			pos = m.val.end
		}
	} else {
		for _, e := range p.elements(c) {
			gaps = append(gaps, [2]int{pos, e.start})
			pos = e.end
		}
	}
	gaps = append(gaps, [2]int{pos, c.end - 1})
	for _, g := range gaps {
		if bytes.IndexByte(p.raw[g[0]:g[1]], '\n') >= 0 {
			return true
		}
	}
	return false
}

// memberIndent is the indentation of o's members: that of the last one
// that starts its line, else one unit more than o's line.
func (p *patcher) memberIndent(o span, ms []member) string {
	for i := len(ms) - 1; i >= 0; i-- {
		ind := p.lineIndent(ms[i].keyStart)
		if lineStart(p.raw, ms[i].keyStart)+len(ind) == ms[i].keyStart {
			return ind
		}
	}
	return p.lineIndent(o.start) + p.unit
}

// indentUnit is one level of the file's indentation: how much deeper than
// its object's line the first member on a line of its own is indented
// (looking at the top level first); two spaces when none is.
func (p *patcher) indentUnit() string {
	queue := []span{p.top}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		base := p.lineIndent(c.start)
		var starts []int
		if p.raw[c.start] == '{' {
			for _, m := range p.members(c) {
				starts = append(starts, m.keyStart)
				if p.isContainer(m.val) {
					queue = append(queue, m.val)
				}
			}
		} else {
			for _, e := range p.elements(c) {
				starts = append(starts, e.start)
				if p.isContainer(e) {
					queue = append(queue, e)
				}
			}
		}
		for _, pos := range starts {
			ind := p.lineIndent(pos)
			if lineStart(p.raw, pos)+len(ind) == pos && len(ind) > len(base) && strings.HasPrefix(ind, base) {
				return ind[len(base):]
			}
		}
	}
	return "  "
}

// lineIndent is the blank (spaces and tabs) that starts the line holding
// raw[pos].
func (p *patcher) lineIndent(pos int) string {
	return string(leadingBlank(p.raw[lineStart(p.raw, pos):]))
}

func lineStart(raw []byte, pos int) int {
	return bytes.LastIndexByte(raw[:pos], '\n') + 1
}

func leadingBlank(b []byte) []byte {
	n := 0
	for n < len(b) && (b[n] == ' ' || b[n] == '\t') {
		n++
	}
	return b[:n]
}
