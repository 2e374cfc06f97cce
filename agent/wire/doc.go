// Package wire is the jobcore agent's wire format: the greeting, the authenticated request and
// the MAC'd frames that follow it (see ../PROTOCOL.md). It knows nothing of processes or
// sockets beyond io.Reader and io.Writer, so it can be fuzzed on its own.
package wire
