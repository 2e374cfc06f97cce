package main

import (
	"strings"
	"testing"
)

// The command lines below are what each MPI passed to its agent (recorded from the real
// launchers in ~/.cache/jobcore/frameworks with a recording agent; paths shortened).
func TestRshParsesTheLinesEachMPIPasses(t *testing.T) {
	ompi4 := "PATH=/opt/ompi/bin:$PATH ; export PATH ; LD_LIBRARY_PATH=/opt/ompi/lib:${LD_LIBRARY_PATH:-} ; export LD_LIBRARY_PATH ;   /opt/ompi/bin/orted"
	ompi5 := "PRTE_PREFIX=/opt/ompi5;export PRTE_PREFIX;LD_LIBRARY_PATH=/opt/ompi5/lib:$LD_LIBRARY_PATH;export LD_LIBRARY_PATH;/opt/ompi5/bin/prted"
	for _, c := range []struct {
		name    string
		args    []string
		host    string
		command string
		noStdin bool
	}{
		{"Open MPI 4", []string{"w0", ompi4, "-mca", "ess", `"env"`, "-mca", "orte_hnp_uri", `"7.0;tcp://10.0.0.1:4779;tcp6://[fd00::2]:3933"`, "--tree-spawn"},
			"w0", ompi4 + ` -mca ess "env" -mca orte_hnp_uri "7.0;tcp://10.0.0.1:4779;tcp6://[fd00::2]:3933" --tree-spawn`, false},
		{"Open MPI 5 / PRRTE", []string{"w1", ompi5, "--prtemca", "ess", `"env"`, "--tree-spawn"},
			"w1", ompi5 + ` --prtemca ess "env" --tree-spawn`, false},
		{"MPICH Hydra", []string{"-x", "w1", `"/opt/mpich/bin/hydra_pmi_proxy"`, "--control-port", "launcher:33017", "--proxy-id", "1"},
			"w1", `"/opt/mpich/bin/hydra_pmi_proxy" --control-port launcher:33017 --proxy-id 1`, false},
		{"Intel MPI Hydra", []string{"-q", "-x", "w0", "/opt/intel/bin//hydra_bstrap_proxy", "--upstream-host", "vm", "--time-left", "-1"},
			"w0", "/opt/intel/bin//hydra_bstrap_proxy --upstream-host vm --time-left -1", false},
		{"port and user", []string{"-p", "2222", "-l", "mpiuser", "host", "cmd"}, "host", "cmd", false},
		{"grouped and attached values", []string{"-xqn", "-p2222", "-oStrictHostKeyChecking=no", "mpiuser@w-3.svc", "a", "b"}, "w-3.svc", "a b", true},
		{"end of options", []string{"-x", "--", "w0", "--", "-v"}, "w0", "-v", false},
		{"horovodrun's options after the host", []string{"-o", "PasswordAuthentication=no", "-o", "StrictHostKeyChecking=no", "w1", "-p", "2222", "cd /w > /dev/null 2>&1 && HOROVOD_RANK=1 python train.py"},
			"w1", "cd /w > /dev/null 2>&1 && HOROVOD_RANK=1 python train.py", false},
	} {
		call, err := parseRsh(c.args)
		if err != nil || call.host != c.host || call.command != c.command || call.noStdin != c.noStdin {
			t.Errorf("%s: got %+v %v\nwant host %q command %q", c.name, call, err, c.host, c.command)
		}
	}
}

func TestRshRefusesLinesItCannotRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-x"}, "no host"},
		{[]string{"w0"}, "no command"},
		{[]string{"-p"}, "needs a value"},
		{[]string{"-Z", "w0", "true"}, "unknown option -Z"},
		{[]string{"user@", "true"}, "empty host"},
	} {
		if _, err := parseRsh(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}
