package main

import (
	"fmt"
	"strings"
)

// sshFlags are ssh's options without a value, and sshValued those with one: MPI launchers pass
// some of them (Open MPI adds -x, Hydra -x or -q, users add -p or -o), and the agent ignores
// them all except -n, which it honours as ssh does (no stdin).
const (
	sshFlags  = "xXqnTtv46AaCfNy"
	sshValued = "plioFEbcemLRDJSWw"
)

// rshCall is a parsed `jobcore-agent rsh` command line.
type rshCall struct {
	host    string // as given, without any user@
	command string // the command words joined with spaces, as ssh joins them
	noStdin bool   // -n: stdin is /dev/null
}

// parseRsh reads ssh-style options (grouped like -xq, values attached like -p2222 or separate
// like -p 2222, up to an optional --), then HOST and the command words.
func parseRsh(args []string) (rshCall, error) {
	var call rshCall
	i := 0
	for ; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			i++
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			break
		}
		consumedNext, err := parseOptionGroup(arg[1:], i+1 < len(args), &call)
		if err != nil {
			return call, err
		}
		if consumedNext {
			i++
		}
	}
	if i >= len(args) {
		return call, fmt.Errorf("no host given")
	}
	call.host = args[i]
	if at := strings.LastIndexByte(call.host, '@'); at >= 0 {
		call.host = call.host[at+1:]
	}
	if call.host == "" {
		return call, fmt.Errorf("empty host in %q", args[i])
	}
	if i+1 >= len(args) {
		return call, fmt.Errorf("no command given (the agent runs no interactive shells)")
	}
	call.command = strings.Join(args[i+1:], " ")
	return call, nil
}

// parseOptionGroup parses the letters of one option argument (without its '-'); it reports
// whether the option's value is the next argument.
func parseOptionGroup(group string, hasNext bool, call *rshCall) (bool, error) {
	for j := 0; j < len(group); j++ {
		letter := group[j]
		switch {
		case strings.IndexByte(sshFlags, letter) >= 0:
			if letter == 'n' {
				call.noStdin = true
			}
		case strings.IndexByte(sshValued, letter) >= 0:
			if j+1 < len(group) {
				return false, nil // the value is the rest of this argument
			}
			if !hasNext {
				return false, fmt.Errorf("option -%c needs a value", letter)
			}
			return true, nil
		default:
			return false, fmt.Errorf("unknown option -%c", letter)
		}
	}
	return false, nil
}
