package main

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"jobcore.dev/agent/wire"
)

var fuzzKey = []byte("the job's key")

// fakeStarter starts an in-memory `cat` (stdin to stdout, ended by stdin's end or any signal)
// and counts the commands started.
func fakeStarter(started *int32) starter {
	return func(string) (*process, error) {
		atomic.AddInt32(started, 1)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		errR, errW := io.Pipe()
		done := make(chan exitStatus, 1)
		var once sync.Once
		finish := func(status exitStatus) {
			once.Do(func() {
				inR.Close()
				outW.Close()
				errW.Close()
				done <- status
			})
		}
		go func() {
			_, _ = io.Copy(outW, inR)
			finish(exitStatus{wire.ExitCode, 0})
		}()
		signal := func(sig syscall.Signal) { finish(exitStatus{wire.ExitSignal, byte(sig)}) }
		return &process{pid: 1, stdin: inW, stdout: outR, stderr: errR, signal: signal, done: done}, nil
	}
}

// runFuzzSession serves one session over an in-memory connection whose client sends the
// request (when authenticate) and then what frames(keys) returns; it returns how many commands
// were started, and fails if the session does not end once the client has gone.
func runFuzzSession(t *testing.T, authenticate bool, frames func(wire.Keys) []byte) int32 {
	client, server := net.Pipe()
	var started int32
	s := &session{
		conn: server, key: fuzzKey, start: fakeStarter(&started), grace: 10 * time.Millisecond,
		logf:  func(string, ...any) {},
		track: func(*process) func() { return func() {} },
	}
	ended := make(chan struct{})
	go func() {
		s.run()
		close(ended)
	}()
	var keys wire.Keys
	var sent bytes.Buffer
	if authenticate {
		serverNonce, err := wire.ReadGreeting(client)
		if err != nil {
			t.Fatal(err)
		}
		clientNonce := bytes.Repeat([]byte{3}, wire.NonceSize)
		_ = wire.WriteRequest(&sent, fuzzKey, serverNonce, clientNonce, []byte("cat"))
		keys = wire.SessionKeys(fuzzKey, serverNonce, clientNonce)
	}
	go func() { _, _ = io.Copy(io.Discard, client) }()
	sent.Write(frames(keys))
	_, _ = client.Write(sent.Bytes())
	client.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not end after its client had gone")
	}
	return atomic.LoadInt32(&started)
}

// sealedFrames turns data into frames sealed with the client's key: each is a type byte, a
// length byte and that many payload bytes (fewer if data runs out).
func sealedFrames(keys wire.Keys, data []byte) []byte {
	var buf bytes.Buffer
	w := wire.NewWriter(&buf, keys.ClientToServer)
	for len(data) >= 2 {
		t, n := wire.Type(data[0]), int(data[1])
		data = data[2:]
		if n > len(data) {
			n = len(data)
		}
		_ = w.Write(t, data[:n])
		data = data[n:]
	}
	return buf.Bytes()
}

// FuzzSession feeds a server session arbitrary bytes: raw from the start (mode 0: nothing may
// ever run), raw after a valid request (mode 1), or as validly sealed frames of any type and
// content (mode 2). The session must never panic and must end once the client has gone.
func FuzzSession(f *testing.F) {
	var replayed bytes.Buffer
	_ = wire.WriteRequest(&replayed, fuzzKey, make([]byte, wire.NonceSize), make([]byte, wire.NonceSize), []byte("touch /tmp/x"))
	f.Add(append([]byte{0}, replayed.Bytes()...))
	f.Add([]byte{1, byte(wire.Stdin), 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'})
	f.Add([]byte{2, byte(wire.Stdin), 5, 'h', 'e', 'l', 'l', 'o', byte(wire.StdinEOF), 0})
	f.Add([]byte{2, byte(wire.Signal), 1, 15, byte(wire.Signal), 2, 0, 0, byte(wire.Stdout), 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		mode, rest := data[0]%3, data[1:]
		started := runFuzzSession(t, mode != 0, func(keys wire.Keys) []byte {
			if mode == 2 {
				return sealedFrames(keys, rest)
			}
			return rest
		})
		if mode == 0 && started != 0 {
			t.Fatalf("an unauthenticated client started a command")
		}
		if started > 1 {
			t.Fatalf("one session started %d commands", started)
		}
	})
}
