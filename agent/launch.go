package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// launchMain is `jobcore-agent launch`: it runs the launcher's command (no shell), forwards
// SIGTERM and SIGINT to it, and once it has succeeded writes which workers rsh reached to the
// message file (the container's termination message, which the controller reads to check the
// launch). A command that failed leaves the file empty, so that the kubelet puts its log's
// tail there instead (FallbackToLogsOnError): what failed says more than where it ran.
// With --env-check, an environment that breaks the check's rules starts nothing (checkEnv).
// The launched file is emptied first, so a restarted launcher reports only its own run. With
// --hostfile, the command starts only once the agent of every host it lists answers (as
// `wait`), so that the launcher's image needs no shell to wait with.
//
// JOBCORE_WAIT_SECONDS in the launcher's environment, when set, replaces --timeout: it is the
// user's setting of how long a launcher waits for its workers (the ssh transport's wait reads
// it too), where --timeout is the controller's default.
func launchMain(args []string) int {
	flags := flag.NewFlagSet("launch", flag.ContinueOnError)
	messageFile := flags.String("message-file", "/dev/termination-log", "file to write the launched line to")
	hostfile := flags.String("hostfile", "", "wait first for the agents of this hostfile's hosts")
	timeout := flags.Float64("timeout", 300, "seconds to wait for them")
	port := flags.Int("port", 2222, "agents' TCP port")
	envRules := flags.String("env-check", "", "JSON rules the environment must pass first (envCheck)")
	if err := flags.Parse(args); err != nil || flags.NArg() == 0 || *timeout < 0 {
		fmt.Fprintln(os.Stderr, "usage: jobcore-agent launch [--message-file FILE] [--env-check JSON] [--hostfile FILE [--timeout 300] [--port 2222]] -- COMMAND ARGS...")
		return 2
	}
	if *envRules != "" {
		if code, message := checkEnv(*envRules, os.Environ()); code != 0 {
			fmt.Fprintln(os.Stderr, message)
			return code
		}
	}
	if given := os.Getenv(waitSecondsEnv); given != "" {
		seconds, err := strconv.ParseUint(given, 10, 31)
		if err != nil {
			fmt.Fprintf(os.Stderr, "jobcore-agent launch: %s must be a whole number of seconds, not %q\n", waitSecondsEnv, given)
			return waitTimedOut
		}
		*timeout = float64(seconds)
	}
	launched := os.Getenv("JOBCORE_AGENT_LAUNCHED")
	if launched != "" {
		if err := os.Remove(launched); err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "jobcore-agent launch: cannot empty %s: %v\n", launched, err)
		}
	}
	if *hostfile != "" {
		if code := waitForHostfile(*hostfile, strconv.Itoa(*port), *timeout); code != 0 {
			return code
		}
	}
	code := runChild(flags.Args())
	if code == 0 {
		writeLaunched(launched, *messageFile)
	}
	return code
}

// waitSecondsEnv names the launcher's own wait limit, in whole seconds (see launchMain).
const waitSecondsEnv = "JOBCORE_WAIT_SECONDS"

// waitForHostfile waits for the agents of the hosts `path` lists: the first word of each line
// up to a colon (`host slots=N`, Hydra's `host:N` and bare hosts alike).
func waitForHostfile(path, port string, timeout float64) int {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobcore-agent launch: cannot read the hostfile: %v\n", err)
		return waitTimedOut
	}
	var hosts []string
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && !strings.HasPrefix(fields[0], "#") {
			hosts = append(hosts, strings.SplitN(fields[0], ":", 2)[0])
		}
	}
	fmt.Fprintf(os.Stderr, "jobcore-agent launch: waiting up to %gs for %d worker(s)' agents\n", timeout, len(hosts))
	missing := waitForAgents(hosts, port, time.Duration(timeout*float64(time.Second)))
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "jobcore-agent launch: gave up after %gs; agents not reached: %s\n",
			timeout, strings.Join(missing, ", "))
		return waitTimedOut
	}
	return 0
}

// runChild runs the command with the agent's streams, forwarding SIGTERM and SIGINT, and
// returns its exit code (128+signal if a signal ended it; 127 or 126 if it could not start,
// as a shell reports).
func runChild(argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "jobcore-agent launch: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	go func() {
		for sig := range signals {
			_ = cmd.Process.Signal(sig)
		}
	}()
	err := cmd.Wait()
	signal.Stop(signals)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		fmt.Fprintf(os.Stderr, "jobcore-agent launch: %v\n", err)
		return 1
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// writeLaunched writes the launched line; a failure is logged and changes nothing else.
func writeLaunched(launched, messageFile string) {
	var recorded []byte
	if launched != "" {
		data, err := os.ReadFile(launched)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "jobcore-agent launch: cannot read %s: %v\n", launched, err)
		}
		recorded = data
	}
	line := launchedMessage(string(recorded)) + "\n"
	if err := os.WriteFile(messageFile, []byte(line), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "jobcore-agent launch: cannot write %s: %v\n", messageFile, err)
	}
}
