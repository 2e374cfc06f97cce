package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestLaunchedLineDeduplicatesAndCutsDomains(t *testing.T) {
	got := launchedMessage("w-1.job.ns.svc\nw-0\n\nw-1\nw-0.job\n")
	if got != "launched: w-1,w-0" {
		t.Fatalf("got %q", got)
	}
	if got := launchedMessage(""); got != "launched:" {
		t.Fatalf("nothing recorded: got %q", got)
	}
}

func TestLaunchedLineStaysWithinTheTerminationMessage(t *testing.T) {
	var recorded strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&recorded, "worker-%04d.svc\n", i)
	}
	got := launchedMessage(recorded.String())
	if len(got) > maxMessage || !strings.HasPrefix(got, "launched: worker-0000,worker-0001,") {
		t.Fatalf("%d bytes: %.80q", len(got), got)
	}
	listed := strings.Count(got, "worker-")
	if want := fmt.Sprintf(",+%d more", 1000-listed); !strings.HasSuffix(got, want) {
		t.Fatalf("ends %q, want %q", got[len(got)-20:], want)
	}
}
