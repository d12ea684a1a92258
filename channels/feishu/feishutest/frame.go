package feishutest

import (
	"errors"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// frame is the fake's own codec of the long connection's proto2 Frame,
// written independently of the adapter's so that each checks the other.
type frame struct {
	SeqID, LogID    uint64
	Service, Method int32
	Headers         [][2]string
	PayloadEncoding string
	PayloadType     string
	Payload         []byte
	LogIDNew        string
}

func (f *frame) header(k string) string {
	for _, h := range f.Headers {
		if h[0] == k {
			return h[1]
		}
	}
	return ""
}

func (f *frame) headerInt(k string) int {
	n, _ := strconv.Atoi(f.header(k))
	return n
}

func (f *frame) encode() []byte {
	var b []byte
	for _, v := range []struct {
		n protowire.Number
		x uint64
	}{{1, f.SeqID}, {2, f.LogID}, {3, uint64(int64(f.Service))}, {4, uint64(int64(f.Method))}} {
		b = protowire.AppendTag(b, v.n, protowire.VarintType)
		b = protowire.AppendVarint(b, v.x)
	}
	for _, h := range f.Headers {
		var hb []byte
		hb = protowire.AppendTag(hb, 1, protowire.BytesType)
		hb = protowire.AppendString(hb, h[0])
		hb = protowire.AppendTag(hb, 2, protowire.BytesType)
		hb = protowire.AppendString(hb, h[1])
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, hb)
	}
	str := func(n protowire.Number, s string) {
		if s != "" {
			b = protowire.AppendTag(b, n, protowire.BytesType)
			b = protowire.AppendString(b, s)
		}
	}
	str(6, f.PayloadEncoding)
	str(7, f.PayloadType)
	if f.Payload != nil {
		b = protowire.AppendTag(b, 8, protowire.BytesType)
		b = protowire.AppendBytes(b, f.Payload)
	}
	str(9, f.LogIDNew)
	return b
}

func decodeFrame(b []byte) (*frame, error) {
	f := &frame{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, protowire.ParseError(n)
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
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			b = b[n:]
			switch num {
			case 5:
				var h [2]string
				for len(v) > 0 {
					hn, ht, m := protowire.ConsumeTag(v)
					if m < 0 || ht != protowire.BytesType {
						return nil, errors.New("bad header")
					}
					v = v[m:]
					s, m := protowire.ConsumeString(v)
					if m < 0 {
						return nil, protowire.ParseError(m)
					}
					v = v[m:]
					if hn == 1 {
						h[0] = s
					} else if hn == 2 {
						h[1] = s
					}
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
		default:
			return nil, errors.New("unexpected wire type")
		}
	}
	return f, nil
}
