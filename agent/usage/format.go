package usage

import (
	"fmt"
	"strconv"
)

// FormatCost shows a cost for people: "$0.0123", "?" when no call was
// priced, "$1.20+?" when some were not.
func FormatCost(t Totals) string {
	if t.Calls == 0 {
		return "$0"
	}
	c := t.Cost()
	if c == nil {
		return "?"
	}
	s := formatUSD(*c)
	if t.Unpriced > 0 {
		s += "+?"
	}
	return s
}

func formatUSD(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v < 0.01:
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	case v < 100:
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 0, 64)
}

// FormatTokens shows a token count briefly: 950, 12.3k, 4.56M.
func FormatTokens(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.2fM", float64(n)/1e6)
}

// Line is one line of totals for a chat answer: "12.3k in (10.0k cached),
// 678 out, 3 calls, $0.0123".
func Line(t Totals) string {
	if t.Calls == 0 {
		return "nothing yet"
	}
	s := FormatTokens(t.Input) + " in"
	if t.CacheRead > 0 {
		s += " (" + FormatTokens(t.CacheRead) + " cached)"
	}
	s += ", " + FormatTokens(t.Output) + " out, " + strconv.FormatInt(t.Calls, 10) + " calls, " + FormatCost(t)
	if t.Estimated > 0 {
		s += " (some estimated)"
	}
	return s
}
