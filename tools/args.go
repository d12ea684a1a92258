package tools

import (
	"encoding/json"
	"math"
	"strconv"
)

// Args reads cast-and-validated arguments inside a tool's Execute without
// type switches: tools.Args(args).Int("timeout", 60). Readers are tolerant
// of the number types JSON decoding and Cast produce.
type Args map[string]any

// String returns the string at key, or "" when absent or not a string.
func (a Args) String(key string) string {
	s, _ := a[key].(string)
	return s
}

// Int returns the integer at key, or def when absent or not a whole number.
func (a Args) Int(key string, def int) int {
	switch v := a[key].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int(v)
		}
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return int(n)
		}
	case string:
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// Float returns the number at key, or def when absent or not a number.
func (a Args) Float(key string, def float64) float64 {
	if f, ok := numberOf(a[key]); ok {
		return f
	}
	return def
}

// Bool returns the boolean at key, or def when absent or not a boolean.
func (a Args) Bool(key string, def bool) bool {
	if b, ok := a[key].(bool); ok {
		return b
	}
	return def
}

// Has reports whether key is present and not null.
func (a Args) Has(key string) bool {
	v, ok := a[key]
	return ok && v != nil
}
