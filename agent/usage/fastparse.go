package usage

import (
	"bytes"
	"strconv"
)

// The fast path of a query: a line exactly as appendLine writes it (keys
// in their order, no spaces, no escapes) is read front to back with no
// key lookup; anything else (an escaped string, a line an older or later
// version wrote, a hand-edited one) goes through parseLine. Both give the
// same rawRecord; TestFastParseMatchesParseLine holds them to it.

// The fixed parts of a canonical line, each ending where a value starts.
var (
	preTime     = []byte(`{"` + keyTime + `":`)
	preAgent    = []byte(`,"` + keyAgent + `":"`)
	preChannel  = []byte(`","` + keyChannel + `":"`)
	preChat     = []byte(`","` + keyChat + `":"`)
	preSender   = []byte(`","` + keySender + `":"`)
	preSession  = []byte(`","` + keySession + `":"`)
	preSource   = []byte(`","` + keySource + `":"`)
	preProvider = []byte(`","` + keyProvider + `":"`)
	preModel    = []byte(`","` + keyModel + `":"`)
	preInput    = []byte(`","` + keyInput + `":`)
	preCR       = []byte(`,"` + keyCacheRead + `":`)
	preCW       = []byte(`,"` + keyCacheWrite + `":`)
	preOutput   = []byte(`,"` + keyOutput + `":`)
	preRsn      = []byte(`,"` + keyReasoning + `":`)
	preMs       = []byte(`,"` + keyLatency + `":`)
	preOutcome  = []byte(`,"` + keyOutcome + `":"`)
	preEst      = []byte(`","` + keyEstimated + `":true`)
	preCost     = []byte(`,"` + keyCost + `":`)
	preKind     = []byte(`,"` + keyKind + `":"`)
)

// parseFast parses a canonical line into r and reports whether it could;
// on false r is garbage and the caller uses parseLine.
func parseFast(line []byte, r *rawRecord) bool {
	p := fastParser{b: line}
	r.est, r.hasCost, r.escaped, r.cost = false, false, false, 0
	r.ts = p.num(preTime)
	r.str[fAgent] = p.str(preAgent)
	r.str[fChannel] = p.str(preChannel)
	r.str[fChat] = p.str(preChat)
	r.str[fSender] = p.str(preSender)
	r.str[fSession] = p.str(preSession)
	r.str[fSource] = p.str(preSource)
	r.str[fProvider] = p.str(preProvider)
	r.str[fModel] = p.str(preModel)
	r.in = p.num(preInput)
	r.cr = p.num(preCR)
	r.cw = p.num(preCW)
	r.out = p.num(preOutput)
	r.rsn = p.num(preRsn)
	r.ms = p.num(preMs)
	r.str[fOutcome] = p.str(preOutcome)
	if p.bad {
		return false
	}
	// The string's closing quote is still ahead; the optional fields
	// follow in their order.
	if p.prefix(preEst) {
		r.est = true
	} else if !p.prefix(quote) {
		return false
	}
	if p.prefix(preCost) {
		r.cost, r.hasCost = p.float()
		if !r.hasCost {
			return false
		}
	}
	if p.prefix(preKind) {
		p.str(nil)
		p.prefix(quote)
	}
	return !p.bad && p.i == len(p.b)-1 && p.b[p.i] == '}'
}

var quote = []byte(`"`)

type fastParser struct {
	b   []byte
	i   int
	bad bool
}

func (p *fastParser) prefix(pre []byte) bool {
	if p.bad || !bytes.HasPrefix(p.b[p.i:], pre) {
		return false
	}
	p.i += len(pre)
	return true
}

// str reads pre and the string body after it, up to (not past) its
// closing quote, which the next prefix starts with.
func (p *fastParser) str(pre []byte) []byte {
	if !p.prefix(pre) {
		p.bad = true
		return nil
	}
	// Strings are short: a plain loop beats IndexByte's set-up, and it
	// sees an escape on the way.
	b, start := p.b, p.i
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '"':
			p.i = i
			return b[start:i]
		case '\\':
			p.bad = true // needs decoding: parseLine
			return nil
		}
	}
	p.bad = true
	return nil
}

// num reads pre and a decimal integer.
func (p *fastParser) num(pre []byte) int64 {
	if !p.prefix(pre) {
		p.bad = true
		return 0
	}
	b, i := p.b, p.i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var n int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	if i == start || i-start > 18 {
		p.bad = true // empty, or long enough to overflow: parseLine decides
		return 0
	}
	p.i = i
	if neg {
		return -n
	}
	return n
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// float reads a number. A plain decimal with at most 15 significant
// digits is an exact integer divided by an exact power of ten, which one
// IEEE division rounds correctly (the value strconv.ParseFloat gives);
// other forms go to strconv.
func (p *fastParser) float() (float64, bool) {
	b, i := p.b, p.i
	end := i
	for end < len(b) && b[end] != ',' && b[end] != '}' {
		end++
	}
	num := b[i:end]
	p.i = end
	var mant uint64
	digits, frac, dot := 0, 0, false
	simple := len(num) > 0
	for _, c := range num {
		switch {
		case c >= '0' && c <= '9':
			if mant != 0 || c != '0' {
				digits++
			}
			mant = mant*10 + uint64(c-'0')
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			simple = false
		}
		if !simple {
			break
		}
	}
	if simple && digits <= 15 && frac < len(pow10) {
		return float64(mant) / pow10[frac], true
	}
	f, err := strconv.ParseFloat(string(num), 64)
	return f, err == nil
}
