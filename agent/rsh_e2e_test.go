package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const jobKey = "c2VjcmV0IGtleSBvZiB0aGlzIGpvYg=="

func TestRemoteOutputAndExitCodeReachTheLauncher(t *testing.T) {
	srv := startServer(t, jobKey)
	got := run(t, rshCommand(srv, srv.keyFile, nil, "-x", "localhost", "echo out; echo err >&2; pwd; exit 3"), "")
	if got.stdout != "out\n"+srv.dir+"\n" || got.stderr != "err\n" || got.code != 3 {
		t.Fatalf("got %+v", got)
	}
}

func TestStdinReachesTheRemoteCommand(t *testing.T) {
	srv := startServer(t, jobKey)
	got := run(t, rshCommand(srv, srv.keyFile, nil, "localhost", "tr", "a-z", "A-Z"), "hello\n")
	if got.stdout != "HELLO\n" || got.code != 0 {
		t.Fatalf("got %+v", got)
	}
	got = run(t, rshCommand(srv, srv.keyFile, nil, "-n", "localhost", "wc -c"), "ignored")
	if strings.TrimSpace(got.stdout) != "0" {
		t.Fatalf("with -n: got %+v", got)
	}
}

// Open MPI 4 sends its environment set-up and orted's arguments as separate words with shell
// syntax and quotes in them; joined with spaces, /bin/sh must see what ssh's remote shell sees.
func TestOpenMPILaunchLineRunsThroughTheShell(t *testing.T) {
	srv := startServer(t, jobKey)
	got := run(t, rshCommand(srv, srv.keyFile, nil, "w0.local@localhost",
		"  PATH=/opt/ompi/bin:$PATH ; export PATH ; LD_LIBRARY_PATH=/opt/ompi/lib:${LD_LIBRARY_PATH:-} ; export LD_LIBRARY_PATH ;   printf '%s\\n'",
		"-mca", "ess", `"env"`, "-mca", "orte_hnp_uri", `"7.0;tcp://10.0.0.1:4779;tcp6://[fd00::2]:3933"`, `"$LD_LIBRARY_PATH"`), "")
	want := "-mca\ness\nenv\n-mca\norte_hnp_uri\n7.0;tcp://10.0.0.1:4779;tcp6://[fd00::2]:3933\n/opt/ompi/lib:" + os.Getenv("LD_LIBRARY_PATH") + "\n"
	if got.stdout != want || got.code != 0 {
		t.Fatalf("got %+v\nwant stdout %q", got, want)
	}
}

func TestRemoteDeathBySignalIs128PlusSignal(t *testing.T) {
	srv := startServer(t, jobKey)
	if got := run(t, rshCommand(srv, srv.keyFile, nil, "localhost", "kill -9 $$"), ""); got.code != 137 {
		t.Fatalf("got %+v", got)
	}
}

func TestSignalToRshReachesTheRemoteProcessGroup(t *testing.T) {
	srv := startServer(t, jobKey)
	cmd := rshCommand(srv, srv.keyFile, nil, "localhost", `trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.1; done`)
	code, out := sigterm(t, cmd, "ready")
	if code != 7 {
		t.Fatalf("exit %d, want the remote's 7", code)
	}
	eventually(t, time.Second, "the trap's output", func() bool { return out.String() == "got TERM\n" })
}

func TestRemoteIsKilledWhenRshGoes(t *testing.T) {
	t.Parallel() // mostly waiting (the 5 s grace), beside TestUnreachableAgentIsAnSshFailure's 3 s
	srv := startServer(t, jobKey)
	for _, c := range []struct {
		name, trap string
		within     time.Duration
	}{{"stops on SIGTERM", "", 3 * time.Second}, {"ignores SIGTERM", `trap "" TERM;`, 9 * time.Second}} {
		pidFile := filepath.Join(t.TempDir(), "pid")
		cmd := rshCommand(srv, srv.keyFile, nil, "localhost", c.trap+" sleep 100 & echo $! >"+pidFile+"; echo ready; wait")
		startUntilLine(t, cmd, "ready")
		started := time.Now()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		eventually(t, c.within, c.name+": the remote sleep ends", gone(t, pidFile))
		if c.trap != "" && time.Since(started) < 4*time.Second {
			t.Errorf("%s: killed after %s, before the 5 s grace", c.name, time.Since(started))
		}
	}
	srv.logged(t, "client gone")
}

func TestAnotherJobsKeyIsRefusedAndNothingRuns(t *testing.T) {
	srv := startServer(t, jobKey)
	marker := filepath.Join(t.TempDir(), "marker")
	otherJob := writeKey(t, "YW5vdGhlciBqb2IncyBrZXk=")
	launched := filepath.Join(t.TempDir(), "launched")
	got := run(t, rshCommand(srv, otherJob, []string{"JOBCORE_AGENT_LAUNCHED=" + launched}, "localhost", "touch "+marker), "")
	if got.code != 255 || !strings.Contains(got.stderr, "refused the request") {
		t.Fatalf("got %+v", got)
	}
	time.Sleep(200 * time.Millisecond)
	assertNoFile(t, marker, launched)
	srv.logged(t, "refused 127.0.0.1:", "request MAC does not match")
}

func TestStartedHostIsRecordedOnceLaunched(t *testing.T) {
	srv := startServer(t, jobKey)
	launched := filepath.Join(t.TempDir(), "launched")
	env := []string{"JOBCORE_AGENT_LAUNCHED=" + launched}
	run(t, rshCommand(srv, srv.keyFile, env, "-x", "localhost", "true"), "")
	run(t, rshCommand(srv, srv.keyFile, env, "user@localhost", "exit 1"), "")
	if data, _ := os.ReadFile(launched); string(data) != "localhost\nlocalhost\n" {
		t.Fatalf("launched file %q", data)
	}
}

func TestUnreachableAgentIsAnSshFailure(t *testing.T) {
	t.Parallel()
	srv := &agentServer{port: freePort(t), keyFile: writeKey(t, jobKey)}
	started := time.Now()
	env := []string{"JOBCORE_AGENT_CONNECT_SECONDS=3"}
	got := run(t, rshCommand(srv, srv.keyFile, env, "localhost", "true"), "")
	if got.code != 255 || !strings.Contains(got.stderr, "cannot reach the agent at localhost:"+srv.port) {
		t.Fatalf("got %+v", got)
	}
	if waited := time.Since(started); waited < 2900*time.Millisecond {
		t.Fatalf("gave up after %s, before retrying for 3 s", waited)
	}
	bad := run(t, rshCommand(srv, srv.keyFile, []string{"JOBCORE_AGENT_CONNECT_SECONDS=0"}, "localhost", "true"), "")
	if bad.code != 255 || !strings.Contains(bad.stderr, "not a whole number of seconds from 1") {
		t.Fatalf("got %+v", bad)
	}
}

func TestRshRetriesForAMinuteByDefault(t *testing.T) {
	t.Setenv("JOBCORE_AGENT_CONNECT_SECONDS", "")
	if within, err := connectWithin(); err != nil || within != time.Minute {
		t.Fatalf("got %s, %v", within, err)
	}
}

func TestVersionIsPrinted(t *testing.T) {
	got := run(t, exec.Command(agentBin, "version"), "")
	if got.code != 0 || strings.TrimSpace(got.stdout) == "" {
		t.Fatalf("got %+v", got)
	}
}
