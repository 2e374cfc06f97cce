package wire

import "time"

// Magic opens every greeting, so a client that reached something else (an sshd, a web server)
// says so instead of sending its request.
const Magic = "JCA1"

// NonceSize is the size of each side's random nonce; fresh nonces make every session's keys new,
// so bytes captured from one session are worthless in another.
const NonceSize = 32

// MaxRequest bounds the command a client may send (Open MPI's orted line with a long PATH is a
// few KiB; 256 KiB leaves room without letting a peer make the agent allocate much).
const MaxRequest = 256 << 10

// MaxPayload bounds one frame's payload, so a length read from the network never sizes a large
// allocation.
const MaxPayload = 32 << 10

// TagSize is the length of a frame's truncated HMAC-SHA256 tag.
const TagSize = 16

// RequestTagSize is the length of the request's full HMAC-SHA256 tag.
const RequestTagSize = 32

// HandshakeTimeout bounds the greeting and the request together, so a peer that connects and
// says nothing holds a session slot for no longer than this.
const HandshakeTimeout = 10 * time.Second
