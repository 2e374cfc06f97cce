package main

import (
	"strings"
	"testing"
)

const mcaCheck = `{"rules": [
  {"select": "OMPI_MCA_|PRTE_MCA_", "name": "(?:OMPI_MCA_|PRTE_MCA_)[A-Za-z0-9_]+", "value": "[A-Za-z0-9 ._+@%=:,/^-]*"},
  {"select": "OPAL_PREFIX$", "name": ".*", "value": "[A-Za-z0-9._+@=:,/-]*"}],
 "before": "jobcore: not starting mpirun: unsafe:", "after": " (why)", "exit": 65}`

func TestCheckEnvRefusesWhatTheRulesSelectAndBreakNamingThem(t *testing.T) {
	code, message := checkEnv(mcaCheck, []string{
		"PATH=/usr/bin:/bin;not=checked",
		"OMPI_MCA_btl=^openib",
		"OMPI_MCA_orte_launch_agent=orted;touch /tmp/x",
		"PRTE_MCA_bad name=x",
		"OPAL_PREFIX=/opt/$(id)",
		"OPAL_PREFIX_OTHER=$(not selected)",
	})
	want := `jobcore: not starting mpirun: unsafe: OMPI_MCA_orte_launch_agent "PRTE_MCA_bad name" OPAL_PREFIX (why)`
	if code != 65 || message != want {
		t.Fatalf("got %d %q", code, message)
	}
}

func TestCheckEnvPassesASafeEnvironment(t *testing.T) {
	if code, message := checkEnv(mcaCheck, []string{"OMPI_MCA_btl=^openib", "HOME=/root"}); code != 0 || message != "" {
		t.Fatalf("got %d %q", code, message)
	}
}

func TestCheckEnvRefusesAnUnreadableCheck(t *testing.T) {
	for _, spec := range []string{"{", `{"rules": [{"select": "(", "name": "", "value": ""}]}`} {
		if code, message := checkEnv(spec, nil); code != 2 || !strings.Contains(message, "--env-check") {
			t.Fatalf("%s: got %d %q", spec, code, message)
		}
	}
}
