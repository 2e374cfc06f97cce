package main

import (
	"errors"
	"net"
	"time"

	"jobcore.dev/agent/wire"
)

// greet connects to the agent at addr and reads its greeting, retrying until `within` has
// passed: a worker's name may not resolve yet, or its agent not listen yet, when the launcher
// starts. Something that answers but is not an agent is not retried.
func greet(addr string, within time.Duration) (net.Conn, []byte, error) {
	deadline := time.Now().Add(within)
	for {
		conn, nonce, err := greetOnce(addr)
		if err == nil || errors.Is(err, wire.ErrNotAgent) || !time.Now().Before(deadline) {
			return conn, nonce, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// greetOnce is one attempt of greet; the connection it returns has the handshake's deadline.
func greetOnce(addr string) (net.Conn, []byte, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, nil, err
	}
	if err := conn.SetDeadline(time.Now().Add(wire.HandshakeTimeout)); err != nil {
		conn.Close()
		return nil, nil, err
	}
	nonce, err := wire.ReadGreeting(conn)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, nonce, nil
}
