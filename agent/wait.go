package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// waitTimedOut is wait's exit code at its timeout, as timeout(1)'s.
const waitTimedOut = 124

// waitMain is `jobcore-agent wait`: it returns once every HOST resolves and its agent greets
// (no key needed), so a launcher starts MPI only when every worker can be reached.
func waitMain(args []string) int {
	flags := flag.NewFlagSet("wait", flag.ContinueOnError)
	timeout := flags.Float64("timeout", 300, "seconds to wait")
	port := flags.Int("port", 2222, "agents' TCP port")
	if err := flags.Parse(args); err != nil || flags.NArg() == 0 || *timeout < 0 {
		fmt.Fprintln(os.Stderr, "usage: jobcore-agent wait [--timeout 300] [--port 2222] HOST...")
		return 2
	}
	missing := waitForAgents(flags.Args(), strconv.Itoa(*port), time.Duration(*timeout*float64(time.Second)))
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "jobcore-agent wait: timed out after %gs; agents not reached: %s\n",
			*timeout, strings.Join(missing, ", "))
		return waitTimedOut
	}
	fmt.Fprintf(os.Stderr, "jobcore-agent wait: all %d agents answer\n", flags.NArg())
	return 0
}

// waitForAgents polls every host at once until each answers or the timeout passes; it returns
// the hosts never reached, sorted. It reports progress every 10 s.
func waitForAgents(hosts []string, port string, timeout time.Duration) []string {
	reached := make(chan string, len(hosts))
	stop := make(chan struct{})
	defer close(stop)
	for _, host := range hosts {
		go pollAgent(host, port, reached, stop)
	}
	pending := map[string]bool{}
	for _, host := range hosts {
		pending[host] = true
	}
	deadline := time.After(timeout)
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	for len(pending) > 0 {
		select {
		case host := <-reached:
			delete(pending, host)
		case <-progress.C:
			fmt.Fprintf(os.Stderr, "jobcore-agent wait: %d of %d agents answer\n", len(hosts)-len(pending), len(hosts))
		case <-deadline:
			var missing []string
			for host := range pending {
				missing = append(missing, host)
			}
			sort.Strings(missing)
			return missing
		}
	}
	return nil
}

// pollAgent tries one host every half second until its agent greets, then reports it.
func pollAgent(host, port string, reached chan<- string, stop <-chan struct{}) {
	addr := net.JoinHostPort(host, port)
	for {
		if conn, _, err := greetOnce(addr); err == nil {
			conn.Close()
			reached <- host
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}
