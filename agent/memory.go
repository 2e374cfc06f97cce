package main

import (
	"runtime"
	"runtime/debug"
)

// tuneMemory keeps the agent small beside the user's program (one runs on every worker): two
// OS threads for Go code are plenty for relaying bytes, and a soft memory limit makes the
// collector work harder before the heap grows past a few MiB.
func tuneMemory() {
	runtime.GOMAXPROCS(2)
	debug.SetMemoryLimit(4 << 20)
}
