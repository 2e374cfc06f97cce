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
// like -p 2222, up to an optional --), then HOST, then, as OpenSSH does, more options right after
// HOST (horovodrun passes `HOST -p PORT COMMAND`), then the command words.
func parseRsh(args []string) (rshCall, error) {
	var call rshCall
	i, err := parseOptions(args, 0, &call)
	if err != nil {
		return call, err
	}
	if i >= len(args) {
		return call, fmt.Errorf("no host given")
	}
	host := args[i]
	if i, err = parseOptions(args, i+1, &call); err != nil {
		return call, err
	}
	call.host = host
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		call.host = host[at+1:]
	}
	if call.host == "" {
		return call, fmt.Errorf("empty host in %q", host)
	}
	if i >= len(args) {
		return call, fmt.Errorf("no command given (the agent runs no interactive shells)")
	}
	call.command = strings.Join(args[i:], " ")
	return call, nil
}

// parseOptions reads options from args[i:] and returns the index of the first word after them
// (after a `--`, if that ended them).
func parseOptions(args []string, i int, call *rshCall) (int, error) {
	for ; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return i + 1, nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			return i, nil
		}
		consumedNext, err := parseOptionGroup(arg[1:], i+1 < len(args), call)
		if err != nil {
			return i, err
		}
		if consumedNext {
			i++
		}
	}
	return i, nil
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
