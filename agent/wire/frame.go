package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
)

// Type says what a frame carries. Client-to-server frames are below 16, server-to-client ones
// from 16; a side receiving a type meant for the other refuses the session.
type Type byte

// The frame types.
const (
	Stdin    Type = 1  // client: bytes for the command's stdin
	StdinEOF Type = 2  // client: the command's stdin is closed
	Signal   Type = 3  // client: one byte, a signal number for the command's process group
	Started  Type = 16 // server: the command is running (empty)
	Stdout   Type = 17 // server: bytes the command wrote to stdout
	Stderr   Type = 18 // server: bytes the command wrote to stderr
	Exit     Type = 19 // server: two bytes, ExitCode or ExitSignal then the value; the last frame
	Error    Type = 20 // server: a message for the client's stderr (the command could not start)
)

// The first byte of an Exit frame's payload.
const (
	ExitCode   byte = 0
	ExitSignal byte = 1
)

// Errors a frame reader returns; both end the session.
var (
	ErrBadTag    = errors.New("frame tag does not match (tampered, replayed or another key)")
	ErrOversize  = errors.New("frame longer than the limit")
	errTypeRange = errors.New("frame type outside the allowed range")
)

// headerSize is a frame's type byte and its big-endian 32-bit payload length.
const headerSize = 5

// tagger computes frame tags with one direction's key. The sequence number is never sent, each
// side counts, so a frame dropped, reordered or replayed fails. One HMAC is kept and reset per
// frame, so relaying output allocates nothing per frame.
type tagger struct {
	mac hash.Hash
	seq uint64
	sum []byte
}

func newTagger(key []byte) tagger {
	return tagger{mac: hmac.New(sha256.New, key), sum: make([]byte, 0, sha256.Size)}
}

// tag returns the truncated HMAC over the sequence number, header and payload, and advances
// the sequence number; the result is valid until the next call.
func (tg *tagger) tag(header []byte, payload []byte) []byte {
	var seqBytes [8]byte
	binary.BigEndian.PutUint64(seqBytes[:], tg.seq)
	tg.seq++
	tg.mac.Reset()
	tg.mac.Write(seqBytes[:])
	tg.mac.Write(header)
	tg.mac.Write(payload)
	return tg.mac.Sum(tg.sum[:0])[:TagSize]
}

// Writer seals frames onto a stream with one direction's key; it is safe for concurrent use
// (stdout and stderr pumps share it), which keeps sequence numbers and frames in step.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	tg  tagger
	buf []byte
}

// NewWriter returns a Writer sealing with key from sequence number 0.
func NewWriter(w io.Writer, key []byte) *Writer {
	return &Writer{w: w, tg: newTagger(key)}
}

// Write sends one frame; payloads over MaxPayload are the caller's bug and are refused.
func (fw *Writer) Write(t Type, payload []byte) error {
	if len(payload) > MaxPayload {
		return ErrOversize
	}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.buf = append(fw.buf[:0], byte(t), 0, 0, 0, 0)
	binary.BigEndian.PutUint32(fw.buf[1:headerSize], uint32(len(payload)))
	tag := fw.tg.tag(fw.buf[:headerSize], payload)
	fw.buf = append(fw.buf, payload...)
	fw.buf = append(fw.buf, tag...)
	_, err := fw.w.Write(fw.buf)
	return err
}

// Reader opens frames from a stream with the other direction's key. It accepts only types in
// [min, max], so a peer cannot reflect the reader's own kind of frame back at it.
type Reader struct {
	r        io.Reader
	tg       tagger
	min, max Type
	buf      []byte
}

// NewReader returns a Reader expecting frames of types min..max sealed with key.
func NewReader(r io.Reader, key []byte, min, max Type) *Reader {
	return &Reader{r: r, tg: newTagger(key), min: min, max: max}
}

// Read returns the next frame. Its payload is valid until the next call. Any error ends the
// stream: after a bad tag the sequence is lost.
func (fr *Reader) Read() (Type, []byte, error) {
	var header [headerSize]byte
	if _, err := io.ReadFull(fr.r, header[:]); err != nil {
		return 0, nil, err
	}
	t := Type(header[0])
	if t < fr.min || t > fr.max {
		return 0, nil, fmt.Errorf("%w: %d", errTypeRange, t)
	}
	n := binary.BigEndian.Uint32(header[1:])
	if n > MaxPayload {
		return 0, nil, fmt.Errorf("%w: %d bytes", ErrOversize, n)
	}
	if cap(fr.buf) < int(n)+TagSize {
		fr.buf = make([]byte, int(n)+TagSize)
	}
	body := fr.buf[:int(n)+TagSize]
	if _, err := io.ReadFull(fr.r, body); err != nil {
		return 0, nil, unexpected(err)
	}
	payload, tag := body[:n], body[n:]
	if !hmac.Equal(tag, fr.tg.tag(header[:], payload)) {
		return 0, nil, ErrBadTag
	}
	return t, payload, nil
}

// unexpected turns a clean EOF inside a frame into ErrUnexpectedEOF: only a frame boundary
// may end the stream quietly.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
