package ollamatest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// A GGUF file (version 3) is a header, typed key-value metadata, a table
// of tensors and their data, each tensor aligned to 32 bytes; every number
// is little-endian. ggufWriter writes one; it knows the types this
// package's model needs and no others.

const ggufAlign = 32

// GGUF metadata value types.
const (
	ggufUint32  uint32 = 4
	ggufInt32   uint32 = 5
	ggufFloat32 uint32 = 6
	ggufBool    uint32 = 7
	ggufString  uint32 = 8
	ggufArray   uint32 = 9
)

// ggmlF32 is the tensor type of 32-bit floats.
const ggmlF32 uint32 = 0

// tensor is one named F32 tensor; dims innermost first, as GGUF counts
// them (a matrix of rows×cols is {cols, rows}).
type tensor struct {
	name string
	dims []uint64
	data []float32
}

// kv is one metadata entry; value is uint32, int32, float32, bool,
// string, []string, []int32 or []float32.
type kv struct {
	key   string
	value any
}

type ggufWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (g *ggufWriter) put(v any) {
	if g.err != nil {
		return
	}
	g.err = binary.Write(g.w, binary.LittleEndian, v)
	g.n += int64(binary.Size(v))
}

func (g *ggufWriter) str(s string) {
	g.put(uint64(len(s)))
	if g.err == nil {
		var n int
		n, g.err = g.w.WriteString(s)
		g.n += int64(n)
	}
}

func (g *ggufWriter) pad() {
	for g.n%ggufAlign != 0 {
		g.put(uint8(0))
	}
}

func (g *ggufWriter) value(v any) {
	switch v := v.(type) {
	case uint32:
		g.put(ggufUint32)
		g.put(v)
	case int32:
		g.put(ggufInt32)
		g.put(v)
	case float32:
		g.put(ggufFloat32)
		g.put(v)
	case bool:
		g.put(ggufBool)
		g.put(v)
	case string:
		g.put(ggufString)
		g.str(v)
	case []string:
		g.put(ggufArray)
		g.put(ggufString)
		g.put(uint64(len(v)))
		for _, s := range v {
			g.str(s)
		}
	case []int32:
		g.put(ggufArray)
		g.put(ggufInt32)
		g.put(uint64(len(v)))
		g.put(v)
	case []float32:
		g.put(ggufArray)
		g.put(ggufFloat32)
		g.put(uint64(len(v)))
		g.put(v)
	default:
		g.err = fmt.Errorf("gguf: no encoding for %T", v)
	}
}

// writeGGUF writes meta and tensors as one GGUF file.
func writeGGUF(w io.Writer, meta []kv, tensors []tensor) error {
	g := &ggufWriter{w: bufio.NewWriter(w)}
	g.put([4]byte{'G', 'G', 'U', 'F'})
	g.put(uint32(3))
	g.put(uint64(len(tensors)))
	g.put(uint64(len(meta)))
	for _, e := range meta {
		g.str(e.key)
		g.value(e.value)
	}
	var offset uint64
	for _, t := range tensors {
		n := uint64(1)
		for _, d := range t.dims {
			n *= d
		}
		if n != uint64(len(t.data)) {
			return fmt.Errorf("gguf: tensor %s has %d values for dims %v", t.name, len(t.data), t.dims)
		}
		g.str(t.name)
		g.put(uint32(len(t.dims)))
		g.put(t.dims)
		g.put(ggmlF32)
		g.put(offset)
		offset += (4*n + ggufAlign - 1) / ggufAlign * ggufAlign
	}
	g.pad()
	for _, t := range tensors {
		g.put(t.data)
		g.pad()
	}
	if g.err != nil {
		return g.err
	}
	return g.w.Flush()
}
