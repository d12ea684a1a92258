package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Encode marshals a request body and applies extra (config extraBody),
// whose top-level keys replace ours; for a stream, "stream": true is set
// last so a configured body cannot turn a stream into a plain response.
func Encode(body any, extra map[string]any, stream bool) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if len(extra) == 0 {
		return b, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		v, err := json.Marshal(extra[k])
		if err != nil {
			return nil, fmt.Errorf("encode extraBody.%s: %w", k, err)
		}
		fields[k] = v
	}
	if stream {
		fields["stream"] = json.RawMessage("true")
	}
	return json.Marshal(fields)
}

// DecodeLenient unmarshals data into v, skipping fields of an unexpected
// JSON type (encoding/json fills everything else and reports the first
// such field), which is how the official SDKs treated servers that bend
// the format; malformed JSON is still an error.
func DecodeLenient(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return nil
	}
	return err
}
