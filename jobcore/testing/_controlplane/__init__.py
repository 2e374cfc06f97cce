"""The API servers a test session talks to: envtest's etcd + kube-apiserver, or k3s in Docker.

`envtest` runs the binaries `binaries` finds; `faultproxy` stands between a client and either
server to fail requests on purpose; `k3s` is the plugin's alternative backend.
"""
