package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"jobcore.dev/agent/wire"
)

// defaultConnectWithin is how long rsh retries reaching a worker's agent, unless
// JOBCORE_AGENT_CONNECT_SECONDS says otherwise: long enough for an agent that the launcher's
// wait already reached but an overloaded node answers slowly (ssh waits on TCP's own timeout).
const defaultConnectWithin = 60 * time.Second

// connectWithin is JOBCORE_AGENT_CONNECT_SECONDS (whole seconds, at least 1) or the default.
func connectWithin() (time.Duration, error) {
	text := os.Getenv("JOBCORE_AGENT_CONNECT_SECONDS")
	if text == "" {
		return defaultConnectWithin, nil
	}
	seconds, err := strconv.ParseUint(text, 10, 16)
	if err != nil || seconds == 0 {
		return 0, fmt.Errorf("JOBCORE_AGENT_CONNECT_SECONDS=%q is not a whole number of seconds from 1", text)
	}
	return time.Duration(seconds) * time.Second, nil
}

// sshFailure is the exit code of a launch that never reached the remote command, as ssh's.
const sshFailure = 255

// rshMain is `jobcore-agent rsh`: it runs COMMAND on HOST's agent and behaves like ssh for the
// MPI launcher that calls it (streams relayed, signals forwarded, the remote's exit code).
func rshMain(args []string) int {
	call, err := parseRsh(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobcore-agent rsh: %v\nusage: jobcore-agent rsh [ssh options] HOST COMMAND...\n", err)
		return sshFailure
	}
	port := envOr("JOBCORE_AGENT_PORT", "2222")
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		fmt.Fprintf(os.Stderr, "jobcore-agent rsh: JOBCORE_AGENT_PORT=%q is not a port\n", port)
		return sshFailure
	}
	within, err := connectWithin()
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobcore-agent rsh: %v\n", err)
		return sshFailure
	}
	key, err := readKey(envOr("JOBCORE_AGENT_KEY_FILE", "/jobcore/agent/key"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobcore-agent rsh: %v\n", err)
		return sshFailure
	}
	client := &rshClient{call: call, key: key, addr: net.JoinHostPort(call.host, port), within: within, launched: os.Getenv("JOBCORE_AGENT_LAUNCHED")}
	code, err := client.run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobcore-agent rsh: %s: %v\n", call.host, err)
	}
	return code
}

// envOr returns the environment variable's value, or fallback when it is unset or empty.
func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

// rshClient is one remote command run through an agent.
type rshClient struct {
	call     rshCall
	key      []byte
	addr     string
	within   time.Duration // how long to retry reaching the agent
	launched string        // file to which HOST is appended once the command started ("": none)
}

// run returns the remote command's exit code, or sshFailure and why when the command could not
// be run or the connection was lost.
func (c *rshClient) run() (int, error) {
	conn, serverNonce, err := greet(c.addr, c.within)
	if err != nil {
		return sshFailure, fmt.Errorf("cannot reach the agent at %s: %w", c.addr, err)
	}
	defer conn.Close()
	clientNonce, err := wire.Nonce()
	if err != nil {
		return sshFailure, err
	}
	if err := wire.WriteRequest(conn, c.key, serverNonce, clientNonce, []byte(c.call.command)); err != nil {
		return sshFailure, fmt.Errorf("cannot send the command: %w", err)
	}
	keys := wire.SessionKeys(c.key, serverNonce, clientNonce)
	in := wire.NewReader(bufio.NewReader(conn), keys.ServerToClient, wire.Started, wire.Error)
	out := wire.NewWriter(conn, keys.ClientToServer)
	t, payload, err := in.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return sshFailure, fmt.Errorf("the agent at %s refused the request (see its log: another job's key?)", c.addr)
		}
		return sshFailure, fmt.Errorf("no answer to the request: %w", err)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return sshFailure, err
	}
	c.forwardInput(out)
	for {
		if code, done := c.handle(t, payload); done {
			return code, nil
		}
		if t, payload, err = in.Read(); err != nil {
			return sshFailure, fmt.Errorf("connection to the agent lost: %w", err)
		}
	}
}

// handle applies one frame from the server; done is true with the exit code on the last one.
func (c *rshClient) handle(t wire.Type, payload []byte) (code int, done bool) {
	switch t {
	case wire.Started:
		c.recordLaunched()
	case wire.Stdout:
		_, _ = os.Stdout.Write(payload)
	case wire.Stderr, wire.Error:
		_, _ = os.Stderr.Write(payload)
		if t == wire.Error {
			_, _ = os.Stderr.Write([]byte("\n"))
		}
	case wire.Exit:
		if len(payload) == 2 && payload[0] == wire.ExitSignal {
			return 128 + int(payload[1]), true
		}
		if len(payload) == 2 {
			return int(payload[1]), true
		}
		fmt.Fprintln(os.Stderr, "jobcore-agent rsh: malformed exit frame")
		return sshFailure, true
	}
	return 0, false
}

// recordLaunched appends HOST and a newline to the launched file in one O_APPEND write, so
// concurrent rsh processes never interleave their lines.
func (c *rshClient) recordLaunched() {
	if c.launched == "" {
		return
	}
	f, err := os.OpenFile(c.launched, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.Write([]byte(c.call.host + "\n"))
		if closeErr := f.Close(); err == nil {
			err = closeErr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobcore-agent rsh: cannot record %s as launched: %v\n", c.call.host, err)
	}
}

// forwardInput relays stdin (or, with -n, only its end) and forwards SIGTERM, SIGINT and
// SIGHUP to the remote process group, each from its own goroutine.
func (c *rshClient) forwardInput(out *wire.Writer) {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for sig := range signals {
			_ = out.Write(wire.Signal, []byte{byte(sig.(syscall.Signal))})
		}
	}()
	if c.call.noStdin {
		_ = out.Write(wire.StdinEOF, nil)
		return
	}
	go func() {
		buf := make([]byte, 16<<10)
		for {
			n, err := os.Stdin.Read(buf)
			if n > 0 && out.Write(wire.Stdin, buf[:n]) != nil {
				return
			}
			if err != nil {
				_ = out.Write(wire.StdinEOF, nil)
				return
			}
		}
	}()
}
