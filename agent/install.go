package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// installMain is `jobcore-agent install DIR`: an init container from jobcore's image copies the
// agent into a volume the job's containers share, so that their own image needs nothing of it.
// Beside it go the names under which it acts as rsh (see rshNames): Hydra takes one program
// path as its launcher, and horovodrun finds `ssh` on PATH.
func installMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: jobcore-agent install DIR")
		return 2
	}
	if err := install(args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "jobcore-agent install: %v\n", err)
		return 1
	}
	return 0
}

func install(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := copyFile(self, filepath.Join(dir, "jobcore-agent")); err != nil {
		return err
	}
	for _, name := range []string{"jobcore-rsh", "ssh"} {
		link := filepath.Join(dir, name)
		if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := os.Symlink("jobcore-agent", link); err != nil {
			return err
		}
	}
	return nil
}

// copyFile writes src to dst through a temporary name, so a restarted init container never
// leaves a half-written agent behind.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
