package main

// version is the hash of the agent's sources, set by scripts/agent.sh with
// -ldflags "-X main.version=...", so a pod's agent can be matched to the build that made it.
var version = "dev"
