package feishu

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Frame is one binary message of the long connection: the proto2 message
// pbbp2.Frame, encoded and decoded by hand with protowire (the schema is
// nine fields; a generated package would be the only user of protoc).
//
//	1 SeqID uint64, 2 LogID uint64, 3 service int32, 4 method int32,
//	5 headers repeated {1 key string, 2 value string},
//	6 payload_encoding string, 7 payload_type string, 8 payload bytes,
//	9 LogIDNew string
type Frame struct {
	SeqID           uint64
	LogID           uint64
	Service         int32
	Method          int32
	Headers         []Header
	PayloadEncoding string
	PayloadType     string
	Payload         []byte
	LogIDNew        string
}

// Header is one key/value pair of a Frame.
type Header struct{ Key, Value string }

// Frame methods.
const (
	MethodControl int32 = 0
	MethodData    int32 = 1
)

// Header keys and the values of "type".
const (
	HeaderType      = "type"
	HeaderMessageID = "message_id"
	HeaderSum       = "sum"
	HeaderSeq       = "seq"
	HeaderTraceID   = "trace_id"
	HeaderBizRT     = "biz_rt"

	TypeEvent = "event"
	TypeCard  = "card"
	TypePing  = "ping"
	TypePong  = "pong"
)

// Get returns the value of the first header named key ("" if none).
func (f *Frame) Get(key string) string {
	for _, h := range f.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return ""
}

// GetInt returns the header key as an int, or def when it is missing or
// not a number.
func (f *Frame) GetInt(key string, def int) int {
	n, err := strconv.Atoi(f.Get(key))
	if err != nil {
		return def
	}
	return n
}

// Set replaces the header key, or appends it.
func (f *Frame) Set(key, value string) {
	for i, h := range f.Headers {
		if h.Key == key {
			f.Headers[i].Value = value
			return
		}
	}
	f.Headers = append(f.Headers, Header{Key: key, Value: value})
}

// Marshal encodes the frame. The four required fields are always written,
// the optional ones only when set.
func (f *Frame) Marshal() []byte {
	b := make([]byte, 0, 64+len(f.Payload))
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, f.SeqID)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, f.LogID)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(int64(f.Service))) // int32: sign-extended, as protobuf does
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(int64(f.Method)))
	for _, h := range f.Headers {
		var hb []byte
		hb = protowire.AppendTag(hb, 1, protowire.BytesType)
		hb = protowire.AppendString(hb, h.Key)
		hb = protowire.AppendTag(hb, 2, protowire.BytesType)
		hb = protowire.AppendString(hb, h.Value)
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, hb)
	}
	if f.PayloadEncoding != "" {
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendString(b, f.PayloadEncoding)
	}
	if f.PayloadType != "" {
		b = protowire.AppendTag(b, 7, protowire.BytesType)
		b = protowire.AppendString(b, f.PayloadType)
	}
	if f.Payload != nil {
		b = protowire.AppendTag(b, 8, protowire.BytesType)
		b = protowire.AppendBytes(b, f.Payload)
	}
	if f.LogIDNew != "" {
		b = protowire.AppendTag(b, 9, protowire.BytesType)
		b = protowire.AppendString(b, f.LogIDNew)
	}
	return b
}

// ErrBadFrame is wrapped by every decoding error.
var ErrBadFrame = errors.New("feishu: malformed frame")

// UnmarshalFrame decodes a frame. Unknown fields are skipped (the schema
// may grow); a truncated or mistyped field, or a missing required field,
// is an error wrapping ErrBadFrame.
func UnmarshalFrame(b []byte) (*Frame, error) {
	f := &Frame{}
	var seen [5]bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("%w: tag: %v", ErrBadFrame, protowire.ParseError(n))
		}
		b = b[n:]
		want, known := frameFieldTypes[num]
		if known && typ != want {
			return nil, fmt.Errorf("%w: field %d has wire type %d, want %d", ErrBadFrame, num, typ, want)
		}
		if !known {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, fmt.Errorf("%w: field %d: %v", ErrBadFrame, num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		if typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, fmt.Errorf("%w: field %d: %v", ErrBadFrame, num, protowire.ParseError(n))
			}
			b = b[n:]
			switch num {
			case 1:
				f.SeqID = v
			case 2:
				f.LogID = v
			case 3:
				f.Service = int32(v)
			case 4:
				f.Method = int32(v)
			}
			seen[num] = true
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, fmt.Errorf("%w: field %d: %v", ErrBadFrame, num, protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case 5:
			h, err := unmarshalHeader(v)
			if err != nil {
				return nil, err
			}
			f.Headers = append(f.Headers, h)
		case 6:
			f.PayloadEncoding = string(v)
		case 7:
			f.PayloadType = string(v)
		case 8:
			f.Payload = append([]byte{}, v...)
		case 9:
			f.LogIDNew = string(v)
		}
	}
	for num := 1; num <= 4; num++ {
		if !seen[num] {
			return nil, fmt.Errorf("%w: required field %d missing", ErrBadFrame, num)
		}
	}
	return f, nil
}

var frameFieldTypes = map[protowire.Number]protowire.Type{
	1: protowire.VarintType, 2: protowire.VarintType, 3: protowire.VarintType, 4: protowire.VarintType,
	5: protowire.BytesType, 6: protowire.BytesType, 7: protowire.BytesType, 8: protowire.BytesType, 9: protowire.BytesType,
}

func unmarshalHeader(b []byte) (Header, error) {
	var h Header
	var key, value bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return h, fmt.Errorf("%w: header tag: %v", ErrBadFrame, protowire.ParseError(n))
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return h, fmt.Errorf("%w: header field %d: %v", ErrBadFrame, num, protowire.ParseError(n))
			}
			b = b[n:]
			if num == 1 {
				h.Key, key = string(v), true
			} else {
				h.Value, value = string(v), true
			}
			continue
		}
		if num == 1 || num == 2 {
			return h, fmt.Errorf("%w: header field %d has wire type %d", ErrBadFrame, num, typ)
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return h, fmt.Errorf("%w: header field %d: %v", ErrBadFrame, num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	if !key || !value {
		return h, fmt.Errorf("%w: header without key or value", ErrBadFrame)
	}
	return h, nil
}
