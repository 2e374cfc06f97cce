"""The launcher helpers: for kinds whose launcher pod reaches its workers, over ssh or the agent.

Layers, bottom up (import-linter checks that each imports only those below it):

- `ssh`, `pods`, `checks`, `agent`: the per-job ssh Secret, sshd's and the client's options
  and the launcher's wait script; a static launch's `Outcome` from its launcher's and
  workers' pods; validation of the template's mounts and of what a launcher hands to a
  shell; the agent in a job's pods and the workers its launch reached.
- `launch`: the launcher's child names, sshd or agent worker and launcher pods, when the
  launcher is due, and `LauncherWorkersKind` with the check of an agent launch.

Built on the job layer (`jobcore._jobs`: reading pods, worker names and the headless Service,
the job name's and worker template's checks) and the runtime; the public names are re-exported
by `jobcore.launcher`.
"""
