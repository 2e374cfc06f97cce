package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// runLimit bounds every command `run` runs: a hung one (a real MPI whose daemon never reports
// back) fails its test with its output, instead of the whole package at go test's timeout.
const runLimit = time.Minute

// agentBin is the agent built once for the end-to-end tests, which run it as a user would.
var agentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jobcore-agent-test")
	if err != nil {
		panic(err)
	}
	agentBin = filepath.Join(dir, "jobcore-agent")
	if out, err := exec.Command("go", "build", "-o", agentBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the agent: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects a process's stderr while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// agentServer is a running `jobcore-agent serve`.
type agentServer struct {
	port    string
	keyFile string
	dir     string // its working directory
	log     *syncBuffer
	cmd     *exec.Cmd
}

// writeKey writes a key file as the Secret would hold it (base64 text and a newline).
func writeKey(t *testing.T, text string) string {
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(text+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

// startServer runs serve with the key text and extra flags, and waits until it listens.
func startServer(t *testing.T, key string, extra ...string) *agentServer {
	srv := &agentServer{port: freePort(t), keyFile: writeKey(t, key), dir: t.TempDir(), log: &syncBuffer{}}
	args := append([]string{"serve", "--port", srv.port, "--key-file", srv.keyFile}, extra...)
	srv.cmd = exec.Command(agentBin, args...)
	srv.cmd.Dir, srv.cmd.Stderr = srv.dir, srv.log
	if err := srv.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.cmd.Process.Kill()
		_ = srv.cmd.Wait()
	})
	eventually(t, 5*time.Second, "serve listens", func() bool { return strings.Contains(srv.log.String(), "listening") })
	return srv
}

// logged waits up to 2 s for serve's stderr (copied from a pipe) to hold every one of parts.
func (srv *agentServer) logged(t *testing.T, parts ...string) {
	t.Helper()
	holds := func() bool {
		for _, part := range parts {
			if !strings.Contains(srv.log.String(), part) {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(2 * time.Second); !holds(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve's log does not say %q:\n%s", parts, srv.log)
		}
	}
}

// alive reports whether serve is still running.
func (srv *agentServer) alive() bool {
	return srv.cmd.ProcessState == nil && syscall.Kill(srv.cmd.Process.Pid, 0) == nil
}

// eventually polls cond every 20 ms until it holds or the time is up.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
	}
}

// env is the environment an rsh (or a launch running one) reads to reach srv with keyFile.
func (srv *agentServer) env(keyFile string) []string {
	return []string{"JOBCORE_AGENT_PORT=" + srv.port, "JOBCORE_AGENT_KEY_FILE=" + keyFile}
}

// rshCommand prepares `jobcore-agent rsh ARGS` reaching srv with keyFile.
func rshCommand(srv *agentServer, keyFile string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(agentBin, append([]string{"rsh"}, args...)...)
	cmd.Env = append(append(os.Environ(), srv.env(keyFile)...), env...)
	return cmd
}

// result is what a user sees of a finished program.
type result struct {
	stdout, stderr string
	code           int
}

// run runs cmd to the end with stdin and returns its output and exit code; after runLimit it
// kills cmd's process group and fails t.
func run(t *testing.T, cmd *exec.Cmd, stdin string) result {
	t.Helper()
	var stdout, stderr syncBuffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	// Its own process group, so that the watchdog also ends what it started (an rsh holding
	// its stdout, say), without which Wait would not return.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(runLimit, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	if !watchdog.Stop() {
		t.Fatalf("%s still running after %s, killed; its stdout:\n%s\nits stderr:\n%s",
			strings.Join(cmd.Args, " "), runLimit, stdout.String(), stderr.String())
	}
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatal(err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// startUntilLine starts cmd and waits for a line on its stdout, so a signal sent next finds the
// remote command set up; the rest of stdout is collected into the returned buffer.
func startUntilLine(t *testing.T, cmd *exec.Cmd, line string) *syncBuffer {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(stdout)
	got, err := lines.ReadString('\n')
	if err != nil || got != line+"\n" {
		t.Fatalf("first line %q (%v), want %q", got, err, line)
	}
	rest := &syncBuffer{}
	go func() { _, _ = io.Copy(rest, lines) }()
	return rest
}

// sigterm starts cmd, waits for its line ready (the command has set up its trap), sends it
// SIGTERM and returns its exit code and the rest of its stdout: how a test checks that a
// signal is forwarded.
func sigterm(t *testing.T, cmd *exec.Cmd, ready string) (int, *syncBuffer) {
	t.Helper()
	rest := startUntilLine(t, cmd, ready)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	return exitCode(t, cmd), rest
}

// exitCode waits for cmd and returns its exit code; after 10 s it kills cmd and fails.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	watchdog := time.AfterFunc(10*time.Second, func() { _ = cmd.Process.Kill() })
	err := cmd.Wait()
	if !watchdog.Stop() {
		t.Fatalf("%s still running after 10 s", cmd.Args[1])
	}
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode()
}

// assertNoFile fails t if any of paths exists: what a refused or failed run must not write.
func assertNoFile(t *testing.T, paths ...string) {
	t.Helper()
	for _, path := range paths {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("%s was written (%v)", path, err)
		}
	}
}

// gone reports whether no process has the pid written in file.
func gone(t *testing.T, file string) func() bool {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(data), &pid); err != nil {
		t.Fatal(err)
	}
	return func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
}
