package main

import (
	"bytes"
	"fmt"
	"os"
)

// readKey returns the job's shared key: the key file's bytes with surrounding whitespace
// trimmed (the Secret holds base64 text, and a trailing newline must not change the key).
func readKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the agent key: %w", err)
	}
	key := bytes.TrimSpace(data)
	if len(key) == 0 {
		return nil, fmt.Errorf("the agent key file %s is empty", path)
	}
	return key, nil
}
