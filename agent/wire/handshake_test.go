package wire

import (
	"bytes"
	"errors"
	"testing"
)

var (
	jobKey      = []byte("this job's key")
	serverNonce = bytes.Repeat([]byte{7}, NonceSize)
	clientNonce = bytes.Repeat([]byte{9}, NonceSize)
)

func request(t testing.TB, key, nonce []byte, command string) []byte {
	var buf bytes.Buffer
	if err := WriteRequest(&buf, key, nonce, clientNonce, []byte(command)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRequestIsAcceptedOnlyWithTheKeyAndThisSessionsNonce(t *testing.T) {
	got, nonce, err := ReadRequest(bytes.NewReader(request(t, jobKey, serverNonce, "orted")), jobKey, serverNonce)
	if err != nil || string(got) != "orted" || !bytes.Equal(nonce, clientNonce) {
		t.Fatalf("got %q %v", got, err)
	}
	otherJob := request(t, []byte("another job's key"), serverNonce, "orted")
	if _, _, err := ReadRequest(bytes.NewReader(otherJob), jobKey, serverNonce); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("another job's key: %v", err)
	}
	otherSession := request(t, jobKey, bytes.Repeat([]byte{8}, NonceSize), "orted")
	if _, _, err := ReadRequest(bytes.NewReader(otherSession), jobKey, serverNonce); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("a request made for another session: %v", err)
	}
}

func TestOversizeRequestIsRefusedBeforeReading(t *testing.T) {
	head := append(append([]byte(nil), clientNonce...), 0xff, 0xff, 0xff, 0xff)
	if _, _, err := ReadRequest(bytes.NewReader(head), jobKey, serverNonce); !errors.Is(err, ErrOversize) {
		t.Fatalf("got %v", err)
	}
}

func TestGreetingFromSomethingElseIsNamed(t *testing.T) {
	ssh := []byte("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")
	if _, err := ReadGreeting(bytes.NewReader(ssh)); !errors.Is(err, ErrNotAgent) {
		t.Fatalf("got %v", err)
	}
}

// FuzzRequest feeds arbitrary bytes to the server's request reader: it must never panic nor
// accept anything (the fuzzer cannot forge the MAC).
func FuzzRequest(f *testing.F) {
	f.Add(request(f, jobKey, serverNonce, "orted -mca ess env"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, _, err := ReadRequest(bytes.NewReader(data), jobKey, serverNonce); err == nil {
			valid := request(t, jobKey, serverNonce, "orted -mca ess env")
			if !bytes.Equal(data[:len(valid)], valid) {
				t.Fatalf("accepted a request that is not the valid seed: %q", data)
			}
		}
	})
}
