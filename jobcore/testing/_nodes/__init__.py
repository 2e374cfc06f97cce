"""The kit's nodes: they play scheduler and kubelet for the Pods of an API server that has none.

`kubelet` is the loop both share and `kubeletlogs` the log endpoint they serve; `simulated`
writes the statuses a test asks for; `process` runs each Pod's containers as host processes,
in a network namespace per Pod (`netns`), with what `podsetup` and `podidentity` prepare, the
state `podrun` keeps, the processes `containerprocess` starts and the probes `probes` runs.
"""
