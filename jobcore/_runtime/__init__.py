"""The runtime: what every controller needs, knowing nothing of jobs.

Layers, bottom up (import-linter checks that each imports only those below it):

- `errors`, `resources`, `jsoncodec`, `labels`, `metrics`, `logs`, `gc`: the exception tree,
  resource names and object keys, the JSON codec, label selectors, Prometheus metrics,
  structured logs, the garbage collector's tuning.
- `watchstream`, `retry`, `ratelimit`, `connlimits`, `fencing`: a watch read as events, when
  a failure is retried, rate limiters, what a client may hold of the probe and metrics
  servers, a write's fence checked again once it has its connection.
- `transport`: one HTTP exchange with the API server (token, fence, metrics, errors).
- `client`, `workqueue`, `predicate`, `compact`, `expectations`, `filing`: the API client
  over plain JSON objects, the deduplicating work queue, event filters, cached objects
  sharing equal parts, expected creations and deletions, the indexes and transforms a cache
  files objects by.
- `store`: an indexed cache of one resource that tells handlers of each change once.
- `listwatch`: the list/watch loop that fills a store from a lister/watcher it is handed
  (the production one wraps the client).
- `informer`, `handler`, `events`: a store kept current by a list/watch through the client,
  from cache events to reconcile requests, Kubernetes Events.
- `controller`, `leaderelection`, `server`, `loopmonitor`: workers that drain a queue into a
  reconciler, a Lease held by one replica, probes and `/metrics` over HTTP, event loop lag.
- `manager`: runs all of the above as one process.

The public names are re-exported by `jobcore`.
"""
