package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// envCheck is `launch --env-check`'s JSON: rules for the variables of the launcher's
// environment that its MPI copies into the command a worker's shell runs (Open MPI's MCA
// parameters, say), rendered by the job's kind, which knows the MPI; the agent knows none.
// A variable a rule selects must match the rule's name and value patterns whole; otherwise
// launch prints Before, the offending names and After, and exits with Exit, starting nothing.
type envCheck struct {
	Rules []struct {
		Select string `json:"select"` // names the rule applies to (matched from their start)
		Name   string `json:"name"`   // what such a name must be, whole
		Value  string `json:"value"`  // what its value must be, whole
	} `json:"rules"`
	Before string `json:"before"`
	After  string `json:"after"`
	Exit   int    `json:"exit"`
}

// compiledRule is one rule's patterns, anchored.
type compiledRule struct{ selects, name, value *regexp.Regexp }

// checkEnv returns the exit code and the message that refuse `environ` (NAME=VALUE entries),
// or 0 and "" when every selected variable is safe; an unreadable check is exit 2.
func checkEnv(spec string, environ []string) (int, string) {
	var check envCheck
	if err := json.Unmarshal([]byte(spec), &check); err != nil {
		return 2, fmt.Sprintf("jobcore-agent launch: --env-check is not valid JSON: %v", err)
	}
	var rules []compiledRule
	for _, rule := range check.Rules {
		selects, err1 := regexp.Compile(`^(?:` + rule.Select + `)`)
		name, err2 := regexp.Compile(`^(?:` + rule.Name + `)$`)
		value, err3 := regexp.Compile(`^(?:` + rule.Value + `)$`)
		for _, err := range []error{err1, err2, err3} {
			if err != nil {
				return 2, fmt.Sprintf("jobcore-agent launch: --env-check: %v", err)
			}
		}
		rules = append(rules, compiledRule{selects, name, value})
	}
	var unsafe []string
	for _, entry := range environ {
		name, value, _ := strings.Cut(entry, "=")
		for _, rule := range rules {
			if rule.selects.MatchString(name) && !(rule.name.MatchString(name) && rule.value.MatchString(value)) {
				unsafe = append(unsafe, shellWord(name))
				break
			}
		}
	}
	if len(unsafe) == 0 {
		return 0, ""
	}
	return check.Exit, check.Before + " " + strings.Join(unsafe, " ") + check.After
}

// shellWord shows a name as a shell would need it typed: as is when plain (letters, digits,
// _ . / -), else quoted. No package-level pattern: `serve` never pays for one.
func shellWord(name string) string {
	plain := name != ""
	for _, c := range name {
		plain = plain && (c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("_./-", c))
	}
	if plain {
		return name
	}
	return strconv.Quote(name)
}
