package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// frameworks is where scripts/frameworks.sh installs the real MPIs.
func frameworks() string {
	if dir := os.Getenv("JOBCORE_FRAMEWORKS"); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "jobcore", "frameworks")
}

// Each real MPI launches its daemons on 127.0.0.2 (not one of this machine's interface
// addresses, so every MPI takes it for a remote host) through the agent, and its two ranks
// print there; the launched file names the host once per launch.
func TestRealMPIsLaunchThroughTheAgent(t *testing.T) {
	srv := startServer(t, jobKey)
	links := t.TempDir()
	for _, name := range []string{"jobcore-rsh"} {
		if err := os.Symlink(agentBin, filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	rsh := filepath.Join(links, "jobcore-rsh")
	rank := []string{"sh", "-c", "echo rank ${OMPI_COMM_WORLD_RANK:-$PMI_RANK}"}
	for _, c := range []struct {
		name, mpirun string
		args         []string
		env          []string
	}{
		{"Open MPI 4", "openmpi4/home/bin/mpirun", []string{"--allow-run-as-root", "-mca", "plm_rsh_agent", agentBin + " rsh", "--host", "127.0.0.2:2", "-np", "2"}, nil},
		{"Open MPI 5", "openmpi5/home/bin/mpirun", []string{"--allow-run-as-root", "--prtemca", "plm_ssh_agent", agentBin + " rsh", "--host", "127.0.0.2:2", "-np", "2"}, nil},
		{"MPICH", "mpich/home/bin/mpiexec", []string{"-launcher", "ssh", "-launcher-exec", rsh, "-hosts", "127.0.0.2", "-n", "2"}, nil},
		{"Intel MPI", "intel/home/bin/mpiexec", []string{"-bootstrap", "ssh", "-hosts", "127.0.0.2", "-n", "2"}, []string{"I_MPI_HYDRA_BOOTSTRAP_EXEC=" + rsh}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mpirun := filepath.Join(frameworks(), c.mpirun)
			if _, err := os.Stat(mpirun); err != nil {
				t.Skipf("%s is not installed (scripts/frameworks.sh): %v", c.name, err)
			}
			launched := filepath.Join(t.TempDir(), "launched")
			cmd := exec.Command(mpirun, append(c.args, rank...)...)
			cmd.Env = append(os.Environ(), "JOBCORE_AGENT_PORT="+srv.port, "JOBCORE_AGENT_KEY_FILE="+srv.keyFile,
				"JOBCORE_AGENT_LAUNCHED="+launched, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
			cmd.Env = append(cmd.Env, c.env...)
			got := run(t, cmd, "")
			lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
			sort.Strings(lines)
			if got.code != 0 || strings.Join(lines, ",") != "rank 0,rank 1" {
				t.Fatalf("got %+v", got)
			}
			if data, _ := os.ReadFile(launched); !strings.HasPrefix(string(data), "127.0.0.2\n") {
				t.Fatalf("launched file %q", data)
			}
		})
	}
}
