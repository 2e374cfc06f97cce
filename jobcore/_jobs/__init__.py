"""The job layer: the generic reconciler that drives any job kind, on the runtime.

Layers, bottom up (import-linter checks that each imports only those below it):

- `models`: the T9k job API's pydantic models (`JobSpec`, `RunPolicy`, `JobStatus`...).
- `kind`, `cached`, `childmap`: the `JobKind` plugin interface, the `Job` a kind sees and the
  `Outcome` it decides; what the caches keep of jobs and children (a stub for a job over the
  spec limit, digests for ConfigMaps' and Secrets' values); which job a child belongs to.
- `managedby`: who runs a job (`spec.managedBy`: jobcore, MultiKueue or another controller).
- `podstate`: what a pod's status says (its phase, its containers, whether it ended).
- `tasks`, `statuspart`, `quantity`, `metrics`: a status's tasks bounded in size, where a
  kind's status lives, resource quantities, the job metrics.
- `workers`, `jobchecks`: for kinds, their workers' names behind a headless Service, and
  checks of a job's name and worker template.
- `scheduling`, `status`, `hooks`, `podreading`: gang schedulers and PodGroups; the status
  derived from an outcome; a kind's optional hooks (`KindHooks`), read by `hooks_of` alone;
  a kind's reading of its pods (ready, failed, stuck) into an `Outcome`'s messages.
- `kueuescope`: which jobs without Kueue's queue-name label Kueue queues, by configuration.
- `readback`: bounds on the values a stored status gives back (whoever wrote it).
- `policy`, `plan`, `kindcheck`: run policies (clean-up, TTL, deadlines, which failures are
  retried), the children planned for one reconcile (`plan_children`, also `jobcore render`'s),
  and a kind checked before it runs (`check_kind`).
- `decide`, `retries`: a job's run mode, lifecycle and deadline; what a failure means under
  the run policy, when a retry lets the pods come back (`RetryBackoff`) and how it is said.
- `announce`: the Events and metrics of what changed.
- `refusals`, `children`, `writer`, `parse`, `crd`: refused children, creating and deleting
  children, writing the status, reading a job, and CRDs generated from the models.
- `ending`: an ended job's clean-up and TTL, an invalid job failed and stopped.
- `reconciler`: one pass as a list of steps; `controller` wires it into a manager.

The public names are re-exported by `jobcore.jobs`.
"""
