module jobcore.dev/agent

go 1.19
