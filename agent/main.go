// Command jobcore-agent launches MPI's daemons on a job's workers without ssh: `serve` runs on
// each worker, `rsh` is the ssh stand-in the launcher's MPI calls, `launch` wraps the launcher's
// command to report which workers were reached, and `wait` waits for the workers' agents.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// usage is printed for an unknown or missing subcommand.
const usage = `usage:
  jobcore-agent serve [--port 2222] [--key-file /jobcore/agent/key] [--max-sessions 64]
  jobcore-agent rsh [ssh options] HOST COMMAND...
  jobcore-agent launch [--message-file /dev/termination-log] [--env-check JSON] [--hostfile FILE [--timeout 300] [--port 2222]] -- COMMAND ARGS...
  jobcore-agent wait [--timeout 300] [--port 2222] HOST...
  jobcore-agent install DIR
  jobcore-agent version
  (named ssh, rsh or jobcore-rsh, through a link: as jobcore-agent rsh)`

// rshNames are the names under which the binary acts as `jobcore-agent rsh` (through a link):
// Hydra's launcher exec and bootstrap exec take one program path, not a command line, and
// horovodrun finds `ssh` on PATH.
var rshNames = map[string]bool{"ssh": true, "rsh": true, "jobcore-rsh": true}

func main() {
	tuneMemory()
	if rshNames[filepath.Base(os.Args[0])] {
		os.Exit(rshMain(os.Args[1:]))
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "serve":
		os.Exit(serveMain(args))
	case "rsh":
		os.Exit(rshMain(args))
	case "launch":
		os.Exit(launchMain(args))
	case "wait":
		os.Exit(waitMain(args))
	case "install":
		os.Exit(installMain(args))
	case "version":
		fmt.Println(version)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
}
