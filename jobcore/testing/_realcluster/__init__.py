"""A real single-node Kubernetes on this host, for tests in real containers.

`cluster` starts and stops it; `layout` says where its files, ports and networks are, `pki`
makes its certificates, `dns` serves its cluster DNS, `daemons` tracks the processes that
outlive a run, `hoststate` saves and restores what it changes on the host, and `commands`
drives it with kubectl and ctr.
"""
