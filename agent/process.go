package main

import (
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"jobcore.dev/agent/wire"
)

// exitStatus is how a command ended, as an Exit frame carries it.
type exitStatus struct {
	kind  byte // wire.ExitCode or wire.ExitSignal
	value byte
}

// statusOf converts a wait status to an exitStatus.
func statusOf(ws syscall.WaitStatus) exitStatus {
	if ws.Signaled() {
		return exitStatus{wire.ExitSignal, byte(ws.Signal())}
	}
	return exitStatus{wire.ExitCode, byte(ws.ExitStatus())}
}

// process is a started command as a session sees it: the parent's ends of its standard
// streams, a way to signal its whole process group (MPI's daemons start children of their own),
// and its status once it ends.
type process struct {
	pid    int
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr io.ReadCloser
	signal func(syscall.Signal)
	done   <-chan exitStatus
}

// close releases the parent's ends of the streams, so a child still writing gets SIGPIPE.
func (p *process) close() {
	p.stdin.Close()
	p.stdout.Close()
	p.stderr.Close()
}

// starter starts a session's command; tests and fuzzing substitute their own.
type starter func(command string) (*process, error)

// reaper starts commands and collects every child's status with wait4(-1). The agent may be
// its container's PID 1, where orphaned grandchildren (daemons MPI leaves behind) are reparented
// to it: reaping them all keeps them from piling up as zombies, and one reaper for everything
// avoids racing a per-child wait against it.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]chan exitStatus
}

// newReaper starts reaping on every SIGCHLD.
func newReaper() *reaper {
	r := &reaper{waiting: map[int]chan exitStatus{}}
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, syscall.SIGCHLD)
	go func() {
		for range sigchld {
			r.reapAll()
		}
	}()
	return r
}

// reapAll collects every child that has ended and hands its status to its session, if any.
func (r *reaper) reapAll() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		r.mu.Lock()
		done := r.waiting[pid]
		delete(r.waiting, pid)
		r.mu.Unlock()
		if done != nil {
			done <- statusOf(ws)
		}
	}
}

// start runs `/bin/sh -c command` (as sshd runs a remote command through the user's shell) in
// the agent's directory and environment, in a new process group. The lock is held across the
// fork, so the reaper cannot collect the child before its session is registered.
func (r *reaper) start(command string) (*process, error) {
	files, parent, err := pipes()
	if err != nil {
		return nil, err
	}
	attr := &os.ProcAttr{
		Env:   os.Environ(),
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	}
	r.mu.Lock()
	proc, err := os.StartProcess("/bin/sh", []string{"sh", "-c", command}, attr)
	done := make(chan exitStatus, 1)
	if err == nil {
		r.waiting[proc.Pid] = done
	}
	r.mu.Unlock()
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		parent.close()
		return nil, err
	}
	pid := proc.Pid
	parent.pid = pid
	parent.done = done
	parent.signal = func(sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }
	return parent, nil
}

// pipes returns the child's ends of three pipes (stdin, stdout, stderr) and a process holding
// the parent's ends.
func pipes() ([]*os.File, *process, error) {
	var child [3]*os.File
	var parent [3]*os.File
	for i := range child {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range append(child[:i], parent[:i]...) {
				f.Close()
			}
			return nil, nil, err
		}
		if i == 0 {
			child[i], parent[i] = r, w
		} else {
			child[i], parent[i] = w, r
		}
	}
	return child[:], &process{stdin: parent[0], stdout: parent[1], stderr: parent[2]}, nil
}
