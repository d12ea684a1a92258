package feishu

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFrameRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		f    Frame
	}{
		{"ping", Frame{Service: 77, Method: MethodControl, Headers: []Header{{HeaderType, TypePing}}}},
		{"zero", Frame{}},
		{"data", Frame{
			SeqID: 1 << 40, LogID: 123456789, Service: 12, Method: MethodData,
			Headers:         []Header{{HeaderType, TypeEvent}, {HeaderMessageID, "m-1"}, {HeaderSum, "2"}, {HeaderSeq, "1"}, {HeaderTraceID, "tr"}},
			PayloadEncoding: "gzip", PayloadType: "json", Payload: []byte(`{"x":"你好"}`), LogIDNew: "log-new",
		}},
		{"negative service", Frame{Service: -1, Method: 1, Payload: []byte{}}},
		{"empty header value", Frame{Headers: []Header{{"k", ""}}}},
		{"max ids", Frame{SeqID: ^uint64(0), LogID: ^uint64(0), Service: 1<<31 - 1, Method: -1 << 31}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UnmarshalFrame(tc.f.Marshal())
			if err != nil {
				t.Fatalf("UnmarshalFrame: %v", err)
			}
			if diff := cmp.Diff(&tc.f, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFrameWireBytes pins the encoding to bytes worked out by hand from
// the protobuf wire format (tag = field<<3 | wire type).
func TestFrameWireBytes(t *testing.T) {
	f := Frame{SeqID: 300, LogID: 2, Service: 3, Method: 1, Headers: []Header{{"type", "event"}}, Payload: []byte("{}"), LogIDNew: "x"}
	want := []byte{
		0x08, 0xac, 0x02, // 1: SeqID 300
		0x10, 0x02, // 2: LogID
		0x18, 0x03, // 3: service
		0x20, 0x01, // 4: method
		0x2a, 0x0d, 0x0a, 0x04, 't', 'y', 'p', 'e', 0x12, 0x05, 'e', 'v', 'e', 'n', 't', // 5: header
		0x42, 0x02, '{', '}', // 8: payload
		0x4a, 0x01, 'x', // 9: LogIDNew
	}
	if got := f.Marshal(); !bytes.Equal(got, want) {
		t.Errorf("Marshal =\n% x\nwant\n% x", got, want)
	}
	// A decoder must skip fields it does not know (here 15, a varint, and
	// 14, bytes), and accept fields in any order.
	in := append([]byte{0x78, 0x05, 0x72, 0x01, 'z'}, want[9:]...)
	in = append(in, want[:9]...)
	got, err := UnmarshalFrame(in)
	if err != nil {
		t.Fatalf("UnmarshalFrame: %v", err)
	}
	if diff := cmp.Diff(&f, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

func TestFrameMalformed(t *testing.T) {
	full := (&Frame{SeqID: 1, Headers: []Header{{"a", "b"}}}).Marshal()
	cases := map[string][]byte{
		"empty (required fields missing)": {},
		"truncated varint":                {0x08},
		"truncated bytes":                 append(append([]byte{}, full[:8]...), 0x42, 0x05, 'a'),
		"SeqID as bytes":                  {0x0a, 0x00, 0x10, 0x00, 0x18, 0x00, 0x20, 0x00},
		"header without value":            append(append([]byte{}, full[:8]...), 0x2a, 0x03, 0x0a, 0x01, 'k'),
		"header key as varint":            append(append([]byte{}, full[:8]...), 0x2a, 0x02, 0x08, 0x01),
		"bad tag":                         {0x00},
		"method missing":                  {0x08, 0x01, 0x10, 0x01, 0x18, 0x01},
		"garbage":                         {0x0a, 0xff, 0xff, 0x01},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := UnmarshalFrame(b)
			if !errors.Is(err, ErrBadFrame) {
				t.Errorf("UnmarshalFrame(% x) = %+v, %v; want ErrBadFrame", b, f, err)
			}
		})
	}
}

func TestFrameHeaders(t *testing.T) {
	f := Frame{Headers: []Header{{HeaderSum, "3"}, {HeaderSeq, "x"}}}
	if got := f.GetInt(HeaderSum, 1); got != 3 {
		t.Errorf("GetInt(sum) = %d, want 3", got)
	}
	if got := f.GetInt(HeaderSeq, -1); got != -1 {
		t.Errorf("GetInt(seq) of a non-number = %d, want the default -1", got)
	}
	f.Set(HeaderSum, "4")
	f.Set(HeaderBizRT, "12")
	if f.Get(HeaderSum) != "4" || f.Get(HeaderBizRT) != "12" || len(f.Headers) != 3 {
		t.Errorf("after Set: %+v", f.Headers)
	}
}
