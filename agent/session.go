package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"jobcore.dev/agent/wire"
)

// killGrace is how long a session's process group has between SIGTERM and SIGKILL once its
// client has gone.
const killGrace = 5 * time.Second

// session serves one connection: handshake, then the command's streams, then its exit status.
type session struct {
	conn  net.Conn
	key   []byte
	start starter
	logf  func(format string, args ...any)
	grace time.Duration
	// track registers a running process with the server (for shutdown), and returns the
	// function that unregisters it.
	track func(*process) func()
}

// run serves the connection until the command has ended and its status is sent, or the client
// has gone and the command is killed. Nothing in it panics on a peer's bytes: every refusal is
// logged with the peer's address and the connection closed.
func (s *session) run() {
	defer s.conn.Close()
	peer := s.conn.RemoteAddr().String()
	command, keys, err := s.handshake()
	if err != nil {
		s.logf("refused %s: %v", peer, err)
		return
	}
	out := wire.NewWriter(s.conn, keys.ServerToClient)
	in := wire.NewReader(bufio.NewReader(s.conn), keys.ClientToServer, wire.Stdin, wire.Signal)
	proc, err := s.start(command)
	if err != nil {
		s.logf("session %s: cannot start /bin/sh: %v", peer, err)
		_ = out.Write(wire.Error, []byte(fmt.Sprintf("jobcore-agent: cannot start /bin/sh: %v", err)))
		_ = out.Write(wire.Exit, []byte{wire.ExitCode, 127})
		return
	}
	defer proc.close()
	defer s.track(proc)()
	s.logf("session %s: pid %d: %s", peer, proc.pid, abbreviate(command, 200))
	if out.Write(wire.Started, nil) != nil {
		s.kill(proc)
		return
	}
	status, ok := s.relay(peer, proc, in, out)
	if !ok {
		return
	}
	s.logf("session %s: pid %d ended (%s)", peer, proc.pid, describe(status))
	_ = out.Write(wire.Exit, []byte{status.kind, status.value})
}

// handshake greets the client and reads its request under HandshakeTimeout.
func (s *session) handshake() (string, wire.Keys, error) {
	if err := s.conn.SetDeadline(time.Now().Add(wire.HandshakeTimeout)); err != nil {
		return "", wire.Keys{}, err
	}
	serverNonce, err := wire.Nonce()
	if err != nil {
		return "", wire.Keys{}, err
	}
	if err := wire.WriteGreeting(s.conn, serverNonce); err != nil {
		return "", wire.Keys{}, err
	}
	request, clientNonce, err := wire.ReadRequest(s.conn, s.key, serverNonce)
	if err != nil {
		return "", wire.Keys{}, handshakeError(err)
	}
	if err := s.conn.SetDeadline(time.Time{}); err != nil {
		return "", wire.Keys{}, err
	}
	return string(request), wire.SessionKeys(s.key, serverNonce, clientNonce), nil
}

// handshakeError names the usual ways a handshake ends early.
func handshakeError(err error) error {
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("no request within %s", wire.HandshakeTimeout)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("connection closed before a whole request (%w)", err)
	}
	return err
}

// relay pumps the command's output to the client and the client's frames to the command until
// the command has ended and its output is drained (ok), or the client has gone (not ok), in which
// case the command's process group is killed.
func (s *session) relay(peer string, proc *process, in *wire.Reader, out *wire.Writer) (exitStatus, bool) {
	var pumps sync.WaitGroup
	pumps.Add(2)
	go pump(&pumps, proc.stdout, wire.Stdout, out)
	go pump(&pumps, proc.stderr, wire.Stderr, out)
	drained := make(chan struct{})
	go func() {
		pumps.Wait()
		close(drained)
	}()
	clientGone := make(chan error, 1)
	go func() { clientGone <- relayClient(in, proc) }()
	var status exitStatus
	exited, done := false, proc.done
	for {
		select {
		case status = <-done:
			exited, done = true, nil
		case <-drained:
			drained = nil
		case err := <-clientGone:
			s.logf("session %s: client gone (%v): stopping pid %d's process group", peer, err, proc.pid)
			if exited {
				proc.signal(syscall.SIGKILL) // what is left holds the output open
			} else {
				s.kill(proc)
			}
			return status, false
		}
		if exited && drained == nil {
			return status, true
		}
	}
}

// kill sends SIGTERM to the process group, then SIGKILL after the grace period if the command
// has not ended.
func (s *session) kill(proc *process) {
	proc.signal(syscall.SIGTERM)
	select {
	case <-proc.done:
	case <-time.After(s.grace):
		proc.signal(syscall.SIGKILL)
		<-proc.done
	}
}

// pump copies one output stream into frames until it ends or the connection fails; after a
// failure it keeps reading, so the command is not blocked on a full pipe.
func pump(wg *sync.WaitGroup, r io.Reader, t wire.Type, out *wire.Writer) {
	defer wg.Done()
	buf := make([]byte, 16<<10)
	failed := false
	for {
		n, err := r.Read(buf)
		if n > 0 && !failed {
			failed = out.Write(t, buf[:n]) != nil
		}
		if err != nil {
			return
		}
	}
}

// relayClient applies the client's frames (stdin data, stdin EOF, signals) until the client's
// stream ends or breaks; stdin is written from its own goroutine, so a command that never reads
// its stdin cannot stop signals from arriving.
func relayClient(in *wire.Reader, proc *process) error {
	stdin := make(chan []byte, 2)
	defer close(stdin)
	go func() {
		for data := range stdin {
			if data == nil {
				proc.stdin.Close()
				continue
			}
			_, _ = proc.stdin.Write(data)
		}
	}()
	for {
		t, payload, err := in.Read()
		if err != nil {
			return err
		}
		switch t {
		case wire.Stdin:
			if len(payload) > 0 {
				stdin <- append([]byte(nil), payload...)
			}
		case wire.StdinEOF:
			stdin <- nil
		case wire.Signal:
			if len(payload) != 1 || payload[0] == 0 || payload[0] > 64 {
				return fmt.Errorf("malformed signal frame")
			}
			proc.signal(syscall.Signal(payload[0]))
		}
	}
}

// describe says how a command ended, for the log.
func describe(status exitStatus) string {
	if status.kind == wire.ExitSignal {
		return fmt.Sprintf("signal %d", status.value)
	}
	return fmt.Sprintf("exit %d", status.value)
}

// abbreviate cuts a command for the log, so one line stays one readable line.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:n], len(s))
}
