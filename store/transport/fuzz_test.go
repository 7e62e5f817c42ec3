package transport

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// FuzzHeader: the first bytes of any connection to the internal port either
// read as a header that the dialer could have sent (the same kind, group
// and member name), or are refused.
func FuzzHeader(f *testing.F) {
	for _, h := range []header{{kind: kindRPC}, {kind: kindRaft, group: 7}, {kind: kindRaftTo, group: 1 << 40, to: "kvnode-2"}} {
		f.Add(append(h.append(nil), "rest"...))
	}
	f.Add([]byte{muxMagic, kindRaftTo, 1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add([]byte{muxMagic, kindRaftTo, 0x30, 0x81, 0x00, 0x30}) // a name length written in two bytes
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		h, err := readHeader(byteReader{r})
		if err != nil {
			return
		}
		again, err := readHeader(byteReader{bytes.NewReader(h.append(nil))})
		if err != nil || again != h {
			t.Fatalf("read %+v from % x, which the dialer sends as % x, read back as %+v (%v)", h, data[:len(data)-r.Len()], h.append(nil), again, err)
		}
		if h.kind == kindRaftTo && (len(h.to) == 0 || len(h.to) > maxNameLen) {
			t.Fatalf("a member name of %d bytes was accepted", len(h.to))
		}
	})
}

// FuzzReadFrame: a frame is read whole when it is within the limit and
// refused with region.ErrTooLarge when it is not; never cut short.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte("a frame"), uint16(7))
	f.Add([]byte("a frame"), uint16(6))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		got, err := ReadFrame(io.MultiReader(bytes.NewReader(data)), int64(limit), "the frame")
		switch {
		case len(data) > int(limit):
			if !errors.Is(err, region.ErrTooLarge) {
				t.Fatalf("%d bytes with a limit of %d: %v, want ErrTooLarge", len(data), limit, err)
			}
		case err != nil:
			t.Fatalf("%d bytes with a limit of %d: %v", len(data), limit, err)
		case !bytes.Equal(got, data):
			t.Fatalf("read %d bytes of %d", len(got), len(data))
		}
	})
}
