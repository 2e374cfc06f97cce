package main

import (
	"fmt"
	"strings"
)

// maxMessage bounds the launched line: the kubelet keeps at most 4,096 bytes of a termination
// message.
const maxMessage = 4000

// launchedMessage is the line `launched: h1,h2,...` for the hosts rsh recorded (one a line):
// each cut at its first '.', blank lines skipped, duplicates dropped in first-seen order; past
// maxMessage bytes it lists as many as fit and then `,+N more`.
func launchedMessage(recorded string) string {
	var hosts []string
	seen := map[string]bool{}
	for _, line := range strings.Split(recorded, "\n") {
		host, _, _ := strings.Cut(strings.TrimSpace(line), ".")
		if host != "" && !seen[host] {
			seen[host] = true
			hosts = append(hosts, host)
		}
	}
	line := "launched:"
	for i, host := range hosts {
		next := "," + host
		if i == 0 {
			next = " " + host
		}
		rest := len(hosts) - i - 1
		if len(line)+len(next)+len(moreSuffix(rest)) > maxMessage {
			return line + moreSuffix(len(hosts)-i)
		}
		line += next
	}
	return line
}

// moreSuffix is the tail naming n hosts left out ("" for none).
func moreSuffix(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(",+%d more", n)
}
