package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// server accepts connections and runs each as a session, at most maxSessions at once
// (handshakes included), so a flood of connections costs a bounded amount of memory.
type server struct {
	key   []byte
	start starter
	slots chan struct{}
	log   *log.Logger

	mu       sync.Mutex
	running  map[*process]struct{}
	sessions sync.WaitGroup
}

// serveMain is `jobcore-agent serve`. It writes nothing but stderr (the worker's root
// filesystem may be read-only), and stops on SIGTERM or SIGINT after terminating its sessions'
// commands.
func serveMain(args []string) int {
	flags := flag.NewFlagSet("serve", flag.ContinueOnError)
	port := flags.Int("port", 2222, "TCP port to listen on, all interfaces")
	keyFile := flags.String("key-file", "/jobcore/agent/key", "file holding the job's key")
	maxSessions := flags.Int("max-sessions", 64, "connections served at once")
	if err := flags.Parse(args); err != nil || flags.NArg() > 0 || *maxSessions < 1 {
		fmt.Fprintln(os.Stderr, "usage: jobcore-agent serve [--port 2222] [--key-file FILE] [--max-sessions 64]")
		return 2
	}
	logger := log.New(os.Stderr, "jobcore-agent serve: ", 0)
	key, err := readKey(*keyFile)
	if err != nil {
		logger.Print(err)
		return 2
	}
	listener, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		logger.Print(err)
		return 2
	}
	srv := &server{
		key:     key,
		start:   newReaper().start,
		slots:   make(chan struct{}, *maxSessions),
		log:     logger,
		running: map[*process]struct{}{},
	}
	go srv.stopOnSignal(listener)
	logger.Printf("version %s listening on %s", version, listener.Addr())
	srv.accept(listener)
	return 0
}

// accept serves connections until the listener is closed.
func (srv *server) accept(listener net.Listener) {
	for {
		conn, err := listener.Accept()
		if errors.Is(err, net.ErrClosed) {
			srv.sessions.Wait()
			return
		}
		if err != nil {
			srv.log.Printf("accept: %v", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		select {
		case srv.slots <- struct{}{}:
			srv.sessions.Add(1)
			go srv.serve(conn)
		default:
			srv.log.Printf("refused %s: too many sessions (%d)", conn.RemoteAddr(), cap(srv.slots))
			conn.Close()
		}
	}
}

// serve runs one session and frees its slot.
func (srv *server) serve(conn net.Conn) {
	defer srv.sessions.Done()
	defer func() { <-srv.slots }()
	s := &session{conn: conn, key: srv.key, start: srv.start, logf: srv.log.Printf, grace: killGrace, track: srv.track}
	s.run()
}

// track records a running command until the returned function is called.
func (srv *server) track(proc *process) func() {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.running[proc] = struct{}{}
	return func() {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		delete(srv.running, proc)
	}
}

// stopOnSignal closes the listener on SIGTERM or SIGINT and sends SIGTERM to every running
// command's process group (SIGKILL after the grace period); accept returns once the sessions end.
func (srv *server) stopOnSignal(listener net.Listener) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	sig := <-signals
	srv.log.Printf("%v: stopping", sig)
	listener.Close()
	srv.signalAll(syscall.SIGTERM)
	time.Sleep(killGrace)
	srv.signalAll(syscall.SIGKILL)
}

// signalAll signals every running command's process group.
func (srv *server) signalAll(sig syscall.Signal) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for proc := range srv.running {
		proc.signal(sig)
	}
}
