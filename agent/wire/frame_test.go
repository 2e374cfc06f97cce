package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

var testKeys = SessionKeys([]byte("job key"), bytes.Repeat([]byte{1}, NonceSize), bytes.Repeat([]byte{2}, NonceSize))

// sealed returns the bytes of frames written with the client-to-server key.
func sealed(t testing.TB, frames ...[]byte) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf, testKeys.ClientToServer)
	for _, f := range frames {
		if err := w.Write(Type(f[0]), f[1:]); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func serverReader(data []byte) *Reader {
	return NewReader(bytes.NewReader(data), testKeys.ClientToServer, Stdin, Signal)
}

func TestFramesRoundTripInOrder(t *testing.T) {
	r := serverReader(sealed(t, append([]byte{byte(Stdin)}, "hello"...), []byte{byte(StdinEOF)}, []byte{byte(Signal), 15}))
	for _, want := range []struct {
		t       Type
		payload string
	}{{Stdin, "hello"}, {StdinEOF, ""}, {Signal, "\x0f"}} {
		got, payload, err := r.Read()
		if err != nil || got != want.t || string(payload) != want.payload {
			t.Fatalf("got %v %q %v, want %v %q", got, payload, err, want.t, want.payload)
		}
	}
	if _, _, err := r.Read(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

func TestReplayedReorderedOrTamperedFramesAreRefused(t *testing.T) {
	one := sealed(t, append([]byte{byte(Stdin)}, "rm -rf"...))
	two := sealed(t, append([]byte{byte(Stdin)}, "a"...), append([]byte{byte(Stdin)}, "b"...))
	tampered := append([]byte(nil), one...)
	tampered[headerSize] ^= 1
	secondAlone := two[len(two)/2:]
	for name, data := range map[string][]byte{
		"replayed within the session": append(append([]byte(nil), one...), one...),
		"second frame first":          secondAlone,
		"payload tampered":            tampered,
	} {
		r := serverReader(data)
		var err error
		for err == nil {
			_, _, err = r.Read()
		}
		if !errors.Is(err, ErrBadTag) {
			t.Errorf("%s: %v, want ErrBadTag", name, err)
		}
	}
}

func TestReflectedFrameIsRefused(t *testing.T) {
	var buf bytes.Buffer
	// A server's own Stdout frame sent back to it, even with a valid tag for its direction.
	_ = NewWriter(&buf, testKeys.ClientToServer).Write(Stdout, []byte("x"))
	if _, _, err := serverReader(buf.Bytes()).Read(); err == nil {
		t.Fatal("a server-to-client frame type was accepted by the server")
	}
	buf.Reset()
	_ = NewWriter(&buf, testKeys.ServerToClient).Write(Stdin, []byte("x"))
	if _, _, err := serverReader(buf.Bytes()).Read(); !errors.Is(err, ErrBadTag) {
		t.Fatalf("a frame under the other direction's key: %v, want ErrBadTag", err)
	}
}

func TestOversizeAndTruncatedFramesAreRefused(t *testing.T) {
	header := []byte{byte(Stdin), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(header[1:], MaxPayload+1)
	if _, _, err := serverReader(header).Read(); !errors.Is(err, ErrOversize) {
		t.Fatalf("oversize length: %v, want ErrOversize", err)
	}
	whole := sealed(t, append([]byte{byte(Stdin)}, "hello"...))
	for cut := 1; cut < len(whole); cut++ {
		if _, _, err := serverReader(whole[:cut]).Read(); err == nil {
			t.Fatalf("a frame cut at %d bytes was accepted", cut)
		}
	}
	if err := NewWriter(io.Discard, testKeys.ClientToServer).Write(Stdin, make([]byte, MaxPayload+1)); !errors.Is(err, ErrOversize) {
		t.Fatalf("writing an oversize payload: %v", err)
	}
}

// FuzzReader feeds arbitrary bytes to a frame reader: it must never panic, and every frame it
// accepts must be within the limits.
func FuzzReader(f *testing.F) {
	f.Add(sealed(f, append([]byte{byte(Stdin)}, "hello"...), []byte{byte(Signal), 15}))
	f.Add([]byte{byte(Stdin), 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := serverReader(data)
		for {
			typ, payload, err := r.Read()
			if err != nil {
				return
			}
			if typ < Stdin || typ > Signal || len(payload) > MaxPayload {
				t.Fatalf("accepted type %d with %d bytes", typ, len(payload))
			}
		}
	})
}
