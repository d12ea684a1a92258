package providers

import (
	"encoding/json"
	"fmt"
	"strings"
)

// NewToolCallRequest decodes the raw argument JSON a model produced into a
// ToolCallRequest. Broken JSON is repaired where the intent is clear (see
// RepairJSON); when it cannot be, ArgumentsError says why and Arguments is an
// empty map, so the agent can tell the model instead of running the tool.
func NewToolCallRequest(id, name, raw string) ToolCallRequest {
	args, fixed, err := ParseToolArguments(raw)
	tc := ToolCallRequest{ID: id, Name: name, Arguments: args, RawArguments: fixed}
	if err != nil {
		tc.Arguments = map[string]any{}
		tc.RawArguments = raw
		tc.ArgumentsError = err.Error()
	}
	return tc
}

// ParseToolArguments decodes tool-call arguments, which must be a JSON
// object. It returns the decoded object and the JSON text it decoded (the
// repaired text when a repair was needed). Empty input and null mean "no
// arguments"; a JSON string that itself holds an object (double encoding) is
// unwrapped.
func ParseToolArguments(raw string) (map[string]any, string, error) {
	text := strings.TrimSpace(raw)
	if text == "" || text == "null" {
		return map[string]any{}, "{}", nil
	}
	if args, ok := decodeObject(text); ok {
		return args, text, nil
	}
	fixed := RepairJSON(text)
	if args, ok := decodeObject(fixed); ok {
		return args, fixed, nil
	}
	var v any
	if err := json.Unmarshal([]byte(fixed), &v); err != nil {
		return nil, raw, fmt.Errorf("tool arguments are not valid JSON: %w", err)
	}
	return nil, raw, fmt.Errorf("tool arguments must be a JSON object, got %s", jsonKind(v))
}

func decodeObject(text string) (map[string]any, bool) {
	var v any
	if json.Unmarshal([]byte(text), &v) != nil {
		return nil, false
	}
	switch t := v.(type) {
	case map[string]any:
		return t, true
	case nil:
		return map[string]any{}, true
	case string:
		// Some models double-encode: "{\"path\": \"a\"}".
		inner := strings.TrimSpace(t)
		if strings.HasPrefix(inner, "{") {
			var m map[string]any
			if json.Unmarshal([]byte(inner), &m) == nil {
				return m, true
			}
		}
	}
	return nil, false
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// RepairJSON fixes the damage models typically do to JSON: a single Markdown
// code fence around it, prose before the first brace, trailing commas,
// unterminated strings and unclosed objects or arrays (output cut off by a
// token limit). It does not guess at anything else; the result may still be
// invalid.
func RepairJSON(s string) string {
	s = stripCodeFence(strings.TrimSpace(s))
	if i := strings.IndexAny(s, "{["); i > 0 {
		s = s[i:]
	}
	var out strings.Builder
	out.Grow(len(s) + 8)
	var stack []byte
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			out.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			trimTrailingComma(&out)
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
		out.WriteByte(c)
		if len(stack) == 0 && (c == '}' || c == ']') {
			// Anything after the top-level value is chatter; drop it.
			break
		}
	}
	if inString {
		if escaped {
			// A dangling backslash would escape the closing quote.
			res := out.String()
			out.Reset()
			out.WriteString(res[:len(res)-1])
		}
		out.WriteByte('"')
	}
	res := strings.TrimRight(out.String(), " \t\r\n")
	switch {
	case strings.HasSuffix(res, ","):
		res = res[:len(res)-1]
	case strings.HasSuffix(res, ":"):
		res += "null"
	}
	var b strings.Builder
	b.WriteString(res)
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == '{' {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
	return b.String()
}

// stripCodeFence removes one ```lang ... ``` wrapper.
func stripCodeFence(s string) string {
	if !strings.HasPrefix(s, "```") {
		return s
	}
	body := s[3:]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 {
		body = body[nl+1:]
	} else {
		body = strings.TrimLeft(body, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
	}
	body = strings.TrimSpace(body)
	body = strings.TrimSuffix(body, "```")
	return strings.TrimSpace(body)
}

// trimTrailingComma removes a comma (and whitespace after it) at the end of
// what was written so far, so "[1,2,]" and "{"a":1,}" decode.
func trimTrailingComma(out *strings.Builder) {
	cur := out.String()
	trimmed := strings.TrimRight(cur, " \t\r\n")
	if strings.HasSuffix(trimmed, ",") {
		out.Reset()
		out.WriteString(trimmed[:len(trimmed)-1])
	}
}
