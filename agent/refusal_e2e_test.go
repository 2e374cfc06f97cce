package main

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"jobcore.dev/agent/wire"
)

// recordingProxy forwards one connection to srv and returns, once it is over, the bytes the
// client sent: what an attacker on the network would capture.
func recordingProxy(t *testing.T, srv *agentServer) (port string, captured func() []byte) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	done := make(chan []byte, 1)
	go func() {
		client, err := l.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", "127.0.0.1:"+srv.port)
		if err != nil {
			return
		}
		go func() { _, _ = io.Copy(client, server); client.Close() }()
		var sent bytes.Buffer
		_, _ = io.Copy(io.MultiWriter(server, &sent), client)
		server.Close()
		done <- sent.Bytes()
	}()
	_, portText, _ := net.SplitHostPort(l.Addr().String())
	return portText, func() []byte { return <-done }
}

// dial connects to srv as a client would; the connection is closed when the test ends.
func dial(t *testing.T, srv *agentServer) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", "127.0.0.1:"+srv.port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// greeted dials srv and reads its greeting: a connection serve took as a session.
func greeted(t *testing.T, srv *agentServer) net.Conn {
	t.Helper()
	conn := dial(t, srv)
	if _, err := wire.ReadGreeting(conn); err != nil {
		t.Fatal(err)
	}
	return conn
}

// sendRaw connects to srv, reads its greeting and sends data, then reads until serve closes.
func sendRaw(t *testing.T, srv *agentServer, data []byte) {
	conn := greeted(t, srv)
	_, _ = conn.Write(data)
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.Copy(io.Discard, conn)
}

func TestReplayedSessionIsRefused(t *testing.T) {
	srv := startServer(t, jobKey)
	marker := filepath.Join(t.TempDir(), "marker")
	port, captured := recordingProxy(t, srv)
	cmd := rshCommand(srv, srv.keyFile, []string{"JOBCORE_AGENT_PORT=" + port}, "localhost", "echo ran >>"+marker)
	if got := run(t, cmd, ""); got.code != 0 {
		t.Fatalf("the captured session failed: %+v", got)
	}
	sendRaw(t, srv, captured())
	time.Sleep(200 * time.Millisecond)
	if data, _ := os.ReadFile(marker); string(data) != "ran\n" {
		t.Fatalf("marker %q: the replay ran", data)
	}
	srv.logged(t, "refused 127.0.0.1:", "request MAC does not match")
}

func TestGarbageTruncatedAndOversizeAreRefusedWithoutCrash(t *testing.T) {
	srv := startServer(t, jobKey)
	var valid bytes.Buffer
	_ = wire.WriteRequest(&valid, []byte(jobKey), make([]byte, wire.NonceSize), make([]byte, wire.NonceSize), []byte("true"))
	oversize := append(make([]byte, wire.NonceSize), 0x7f, 0xff, 0xff, 0xff)
	inputs := map[string][]byte{
		"http":      []byte("GET / HTTP/1.1\r\nHost: w0\r\n\r\n"),
		"ssh":       []byte("SSH-2.0-OpenSSH_9.2p1\r\n"),
		"zeros":     make([]byte, 5000),
		"oversize":  oversize,
		"truncated": valid.Bytes()[:valid.Len()/2],
		"empty":     nil,
	}
	for _, data := range inputs {
		sendRaw(t, srv, data)
	}
	eventually(t, 2*time.Second, "a refusal logged per connection", func() bool {
		return strings.Count(srv.log.String(), "refused 127.0.0.1:") == len(inputs)
	})
	srv.logged(t, "longer than the limit")
	if !srv.alive() {
		t.Fatal("serve died")
	}
	if got := run(t, rshCommand(srv, srv.keyFile, nil, "localhost", "echo still serving"), ""); got.stdout != "still serving\n" {
		t.Fatalf("after the garbage: %+v", got)
	}
}

func TestSessionsBeyondTheLimitAreRefused(t *testing.T) {
	srv := startServer(t, jobKey, "--max-sessions", "1")
	holder := greeted(t, srv)
	second := dial(t, srv)
	_ = second.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := wire.ReadGreeting(second); err == nil {
		t.Fatal("a second connection was greeted while the only slot was taken")
	}
	srv.logged(t, "refused 127.0.0.1:", "too many sessions (1)")
	holder.Close()
	if got := run(t, rshCommand(srv, srv.keyFile, nil, "localhost", "echo ran"), ""); got.stdout != "ran\n" {
		t.Fatalf("once the slot is free: %+v", got)
	}
}
