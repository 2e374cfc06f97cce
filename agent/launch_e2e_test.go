package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// launchCommand prepares `jobcore-agent launch --message-file M -- ARGV` with the launched
// file set.
func launchCommand(message, launched string, argv ...string) *exec.Cmd {
	cmd := exec.Command(agentBin, append([]string{"launch", "--message-file", message, "--"}, argv...)...)
	cmd.Env = append(os.Environ(), "JOBCORE_AGENT_LAUNCHED="+launched)
	return cmd
}

// hostfileLaunch writes hosts as a hostfile and prepares `jobcore-agent launch` to wait for
// their agents on port for up to timeout seconds, then run `echo ran`; message is where it
// writes its message.
func hostfileLaunch(t *testing.T, hosts, port, timeout string) (cmd *exec.Cmd, message string) {
	t.Helper()
	dir := t.TempDir()
	hostfile, message := filepath.Join(dir, "hostfile"), filepath.Join(dir, "m")
	if err := os.WriteFile(hostfile, []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(agentBin, "launch", "--message-file", message, "--hostfile", hostfile,
		"--port", port, "--timeout", timeout, "--", "sh", "-c", "echo ran")
	return cmd, message
}

func TestLaunchWritesTheHostsReachedOnceTheCommandSucceeded(t *testing.T) {
	srv := startServer(t, jobKey)
	dir := t.TempDir()
	message, launched := filepath.Join(dir, "termination-log"), filepath.Join(dir, "launched")
	if err := os.WriteFile(launched, []byte("stale-host-from-a-previous-run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := launchCommand(message, launched, agentBin, "rsh", "localhost", "exit 0")
	cmd.Env = append(cmd.Env, srv.env(srv.keyFile)...)
	if got := run(t, cmd, ""); got.code != 0 {
		t.Fatalf("got %+v", got)
	}
	if data, _ := os.ReadFile(message); string(data) != "launched: localhost\n" {
		t.Fatalf("message %q", data)
	}
}

func TestLaunchKeepsAFailedCommandsExitCodeAndLeavesTheMessageToTheKubelet(t *testing.T) {
	srv := startServer(t, jobKey)
	dir := t.TempDir()
	message, launched := filepath.Join(dir, "termination-log"), filepath.Join(dir, "launched")
	cmd := launchCommand(message, launched, agentBin, "rsh", "localhost", "exit 4")
	cmd.Env = append(cmd.Env, srv.env(srv.keyFile)...)
	if got := run(t, cmd, ""); got.code != 4 {
		t.Fatalf("got %+v", got)
	}
	assertNoFile(t, message)
}

func TestLaunchWithNothingLaunchedSaysSo(t *testing.T) {
	dir := t.TempDir()
	message := filepath.Join(dir, "termination-log")
	if got := run(t, launchCommand(message, filepath.Join(dir, "launched"), "true"), ""); got.code != 0 {
		t.Fatalf("got %+v", got)
	}
	if data, _ := os.ReadFile(message); string(data) != "launched:\n" {
		t.Fatalf("message %q", data)
	}
}

func TestLaunchMessageFailureKeepsTheExitCode(t *testing.T) {
	dir := t.TempDir()
	got := run(t, launchCommand(filepath.Join(dir, "no", "such", "dir"), filepath.Join(dir, "launched"), "sh", "-c", "exit 0"), "")
	if got.code != 0 || !strings.Contains(got.stderr, "cannot write") {
		t.Fatalf("got %+v", got)
	}
	got = run(t, launchCommand(filepath.Join(dir, "m"), filepath.Join(dir, "launched"), "no-such-program-here"), "")
	if got.code != 127 {
		t.Fatalf("a command that does not exist: %+v", got)
	}
}

func TestLaunchForwardsSIGTERMAndReportsDeathBySignal(t *testing.T) {
	dir := t.TempDir()
	message, launched := filepath.Join(dir, "m"), filepath.Join(dir, "launched")
	cmd := launchCommand(message, launched, "sh", "-c", `trap 'exit 9' TERM; echo ready; while :; do sleep 0.1; done`)
	if code, _ := sigterm(t, cmd, "ready"); code != 9 {
		t.Fatalf("exit %d, want the command's 9", code)
	}
	if got := run(t, launchCommand(message, launched, "sh", "-c", "kill -TERM $$"), ""); got.code != 143 {
		t.Fatalf("a command killed by SIGTERM: %+v", got)
	}
}

func TestWaitReturnsOnceAgentsAnswerAndTimesOutNamingTheOthers(t *testing.T) {
	srv := startServer(t, jobKey)
	got := run(t, exec.Command(agentBin, "wait", "--timeout", "5", "--port", srv.port, "localhost"), "")
	if got.code != 0 {
		t.Fatalf("a live agent: %+v", got)
	}
	got = run(t, exec.Command(agentBin, "wait", "--timeout", "1", "--port", srv.port, "localhost", "w-9.invalid"), "")
	if got.code != 124 || !strings.HasSuffix(got.stderr, "agents not reached: w-9.invalid\n") {
		t.Fatalf("an unknown host: %+v", got)
	}
}

func TestLaunchWaitsForTheHostfilesAgentsThenRuns(t *testing.T) {
	srv := startServer(t, jobKey)
	cmd, _ := hostfileLaunch(t, "# workers\n127.0.0.1 slots=2\nlocalhost:2\n", srv.port, "5")
	if got := run(t, cmd, ""); got.code != 0 || got.stdout != "ran\n" {
		t.Fatalf("got %+v", got)
	}
}

func TestLaunchGivesUpWith124NamingTheHostsWhoseAgentNeverAnswers(t *testing.T) {
	cmd, message := hostfileLaunch(t, "127.0.0.1 slots=1\n", freePort(t), "1")
	got := run(t, cmd, "")
	if got.code != 124 || got.stdout != "" || !strings.Contains(got.stderr, "agents not reached: 127.0.0.1") {
		t.Fatalf("got %+v", got)
	}
	assertNoFile(t, message)
}

func TestLaunchWaitsAsLongAsJOBCORE_WAIT_SECONDSSaysAndRefusesAnythingButSeconds(t *testing.T) {
	port := freePort(t)
	for _, c := range []struct{ env, stderr string }{
		{"1", "gave up after 1s; agents not reached: 127.0.0.1"},
		{"1.5", `JOBCORE_WAIT_SECONDS must be a whole number of seconds, not "1.5"`},
	} {
		cmd, _ := hostfileLaunch(t, "127.0.0.1 slots=1\n", port, "300")
		cmd.Env = append(os.Environ(), "JOBCORE_WAIT_SECONDS="+c.env)
		if got := run(t, cmd, ""); got.code != 124 || got.stdout != "" || !strings.Contains(got.stderr, c.stderr) {
			t.Fatalf("JOBCORE_WAIT_SECONDS=%s: got %+v", c.env, got)
		}
	}
}

func TestInstallCopiesTheAgentWithItsRshNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	if got := run(t, exec.Command(agentBin, "install", dir), ""); got.code != 0 {
		t.Fatalf("got %+v", got)
	}
	for _, name := range []string{"jobcore-agent", "jobcore-rsh", "ssh"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.Mode().Perm()&0o111 == 0 {
			t.Fatalf("%s: %v %v", name, info, err)
		}
	}
	// Installed again (an init container restarted): the same result.
	if got := run(t, exec.Command(agentBin, "install", dir), ""); got.code != 0 {
		t.Fatalf("again: %+v", got)
	}
	got := run(t, exec.Command(filepath.Join(dir, "jobcore-rsh")), "")
	if got.code != 255 || !strings.Contains(got.stderr, "jobcore-agent rsh: no host given") {
		t.Fatalf("jobcore-rsh with no host: %+v", got)
	}
}
