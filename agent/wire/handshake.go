package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Contexts bind each MAC to its use, so a tag made for one purpose is never valid for another.
const (
	requestContext = "jobcore-agent/1 request\x00"
	sessionContext = "jobcore-agent/1 session\x00"
	clientToServer = "client to server"
	serverToClient = "server to client"
)

// Errors the handshake returns.
var (
	ErrNotAgent   = errors.New("the peer is not a jobcore agent (wrong greeting)")
	ErrBadRequest = errors.New("request MAC does not match (another job's key, or replayed)")
)

// Nonce returns NonceSize random bytes from the system's secure source.
func Nonce() ([]byte, error) {
	nonce := make([]byte, NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return nonce, nil
}

// WriteGreeting sends the server's greeting: Magic then its nonce.
func WriteGreeting(w io.Writer, serverNonce []byte) error {
	_, err := w.Write(append([]byte(Magic), serverNonce...))
	return err
}

// ReadGreeting reads a server's greeting and returns its nonce.
func ReadGreeting(r io.Reader) ([]byte, error) {
	greeting := make([]byte, len(Magic)+NonceSize)
	if _, err := io.ReadFull(r, greeting); err != nil {
		return nil, err
	}
	if string(greeting[:len(Magic)]) != Magic {
		return nil, ErrNotAgent
	}
	return greeting[len(Magic):], nil
}

// requestTag is HMAC-SHA256(key, context || server nonce || client nonce || length || request).
func requestTag(key, serverNonce, clientNonce, length, request []byte) []byte {
	mac := hmac.New(sha256.New, key)
	for _, part := range [][]byte{[]byte(requestContext), serverNonce, clientNonce, length, request} {
		mac.Write(part)
	}
	return mac.Sum(nil)
}

// WriteRequest sends the client's request: its nonce, the request's 32-bit length, the request
// and its tag.
func WriteRequest(w io.Writer, key, serverNonce, clientNonce, request []byte) error {
	if len(request) > MaxRequest {
		return fmt.Errorf("%w: request of %d bytes", ErrOversize, len(request))
	}
	var length [4]byte
	binary.BigEndian.PutUint32(length[:], uint32(len(request)))
	msg := make([]byte, 0, NonceSize+4+len(request)+RequestTagSize)
	msg = append(msg, clientNonce...)
	msg = append(msg, length[:]...)
	msg = append(msg, request...)
	msg = append(msg, requestTag(key, serverNonce, clientNonce, length[:], request)...)
	_, err := w.Write(msg)
	return err
}

// ReadRequest reads a client's request and checks its tag in constant time against the nonce
// this server just sent; it returns the request and the client's nonce.
func ReadRequest(r io.Reader, key, serverNonce []byte) (request, clientNonce []byte, err error) {
	head := make([]byte, NonceSize+4)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, nil, err
	}
	clientNonce, length := head[:NonceSize], head[NonceSize:]
	n := binary.BigEndian.Uint32(length)
	if n > MaxRequest {
		return nil, nil, fmt.Errorf("%w: request of %d bytes", ErrOversize, n)
	}
	body := make([]byte, int(n)+RequestTagSize)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, nil, unexpected(err)
	}
	request, tag := body[:n], body[n:]
	if !hmac.Equal(tag, requestTag(key, serverNonce, clientNonce, length, request)) {
		return nil, nil, ErrBadRequest
	}
	return request, clientNonce, nil
}

// Keys are one session's two frame keys, one per direction, so a frame cannot be reflected.
type Keys struct {
	ClientToServer, ServerToClient []byte
}

// SessionKeys derives a session's frame keys from the shared key and both nonces.
func SessionKeys(key, serverNonce, clientNonce []byte) Keys {
	base := hmac.New(sha256.New, key)
	base.Write([]byte(sessionContext))
	base.Write(serverNonce)
	base.Write(clientNonce)
	sessionKey := base.Sum(nil)
	derive := func(label string) []byte {
		mac := hmac.New(sha256.New, sessionKey)
		mac.Write([]byte(label))
		return mac.Sum(nil)
	}
	return Keys{ClientToServer: derive(clientToServer), ServerToClient: derive(serverToClient)}
}
