// Package oggopus checks Ogg/Opus audio (RFC 3533, RFC 7845) the way a
// player reads it, without decoding: the voice replies the TTS client
// makes and the voice notes channels send must pass it. It has no state;
// its functions are safe for concurrent use.
package oggopus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Info describes a checked Ogg/Opus stream.
type Info struct {
	// Pages is the number of Ogg pages, Packets the number of complete
	// packets (OpusHead and OpusTags included).
	Pages, Packets int
	// Channels and PreSkip come from the OpusHead header.
	Channels int
	PreSkip  int
	// Samples is the last page's granule position less the pre-skip: the
	// playable length at 48 kHz.
	Samples int64
	// AudioSizes are the byte sizes of the audio packets in order (one
	// per 2.5–120 ms frame; louder, busier frames are bigger), for a
	// rough waveform without decoding.
	AudioSizes []int
}

// ErrNotOggOpus is returned by Check for data that is not an
// Ogg/Opus stream (mp3, wav, a JSON error body).
var ErrNotOggOpus = errors.New("not an Ogg/Opus stream")

var crcTable = func() (t [256]uint32) {
	for i := range t {
		r := uint32(i) << 24
		for range 8 {
			if r&0x80000000 != 0 {
				r = r<<1 ^ 0x04c11db7
			} else {
				r <<= 1
			}
		}
		t[i] = r
	}
	return t
}()

// CRC is the checksum of an Ogg page (its checksum field zeroed), for
// tests that forge pages.
func CRC(page []byte) uint32 {
	var crc uint32
	for _, b := range page {
		crc = crc<<8 ^ crcTable[byte(crc>>24)^b]
	}
	return crc
}

// Check walks an Ogg/Opus stream (RFC 3533, RFC 7845) as a player
// would: every page's capture pattern, version and CRC; one logical
// stream that begins (BOS) with an OpusHead packet, version 1 and at least
// one channel, followed by OpusTags, and ends with an EOS page. Audio
// packets are not decoded.
func Check(data []byte) (Info, error) {
	var (
		info    Info
		serial  uint32
		packet  []byte
		granule int64
		eos     bool
	)
	if !bytes.HasPrefix(data, []byte("OggS")) {
		return info, ErrNotOggOpus
	}
	for off := 0; off < len(data); {
		if eos {
			return info, fmt.Errorf("ogg: data after the end-of-stream page at byte %d", off)
		}
		if len(data)-off < 27 || string(data[off:off+4]) != "OggS" {
			return info, fmt.Errorf("ogg: no page at byte %d", off)
		}
		h := data[off:]
		if h[4] != 0 {
			return info, fmt.Errorf("ogg: page %d: version %d", info.Pages, h[4])
		}
		flags := h[5]
		nseg := int(h[26])
		if len(h) < 27+nseg {
			return info, fmt.Errorf("ogg: page %d: truncated segment table", info.Pages)
		}
		size := 27 + nseg
		for _, l := range h[27 : 27+nseg] {
			size += int(l)
		}
		if len(h) < size {
			return info, fmt.Errorf("ogg: page %d: truncated (%d of %d bytes)", info.Pages, len(h), size)
		}
		page := append([]byte(nil), h[:size]...)
		want := binary.LittleEndian.Uint32(page[22:26])
		clear(page[22:26])
		if got := CRC(page); got != want {
			return info, fmt.Errorf("ogg: page %d: CRC %08x, header says %08x", info.Pages, got, want)
		}
		s := binary.LittleEndian.Uint32(h[14:18])
		switch {
		case info.Pages == 0 && flags&0x02 == 0:
			return info, fmt.Errorf("ogg: first page is not a beginning-of-stream page")
		case info.Pages == 0:
			serial = s
		case s != serial:
			return info, fmt.Errorf("ogg: page %d: a second logical stream (serial %08x)", info.Pages, s)
		}
		if g := int64(binary.LittleEndian.Uint64(h[6:14])); g != -1 {
			granule = g
		}
		eos = flags&0x04 != 0
		body := h[27+nseg : size]
		for _, l := range h[27 : 27+nseg] {
			packet = append(packet, body[:l]...)
			body = body[l:]
			if l == 255 {
				continue // the packet goes on
			}
			if err := info.packet(packet); err != nil {
				return info, err
			}
			packet = packet[:0]
		}
		info.Pages++
		off += size
	}
	if info.Packets < 3 {
		return info, fmt.Errorf("ogg/opus: %d packets, want OpusHead, OpusTags and audio", info.Packets)
	}
	if !eos {
		return info, fmt.Errorf("ogg: no end-of-stream page")
	}
	info.Samples = granule - int64(info.PreSkip)
	return info, nil
}

func (info *Info) packet(p []byte) error {
	switch info.Packets {
	case 0:
		if len(p) < 19 || string(p[:8]) != "OpusHead" {
			return fmt.Errorf("ogg/opus: first packet is not OpusHead: %w", ErrNotOggOpus)
		}
		if p[8]&0xf0 != 0 {
			return fmt.Errorf("ogg/opus: OpusHead version %d", p[8])
		}
		info.Channels = int(p[9])
		info.PreSkip = int(binary.LittleEndian.Uint16(p[10:12]))
		if info.Channels == 0 {
			return fmt.Errorf("ogg/opus: OpusHead says 0 channels")
		}
	case 1:
		if len(p) < 8 || string(p[:8]) != "OpusTags" {
			return fmt.Errorf("ogg/opus: second packet is not OpusTags")
		}
	default:
		if len(p) == 0 {
			return fmt.Errorf("ogg/opus: empty audio packet %d", info.Packets)
		}
		info.AudioSizes = append(info.AudioSizes, len(p))
	}
	info.Packets++
	return nil
}
