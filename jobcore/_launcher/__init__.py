"""The launcher helpers: for kinds whose launcher pod reaches its workers, over ssh or the agent.

Layers, bottom up (import-linter checks that each imports only those below it):

- `ssh`, `pods`, `checks`, `agent`: the per-job ssh Secret, sshd's and the client's options
  and the launcher's wait script; reading a launcher's and its workers' pods into an
  `Outcome`; validation of the job name, the worker container and what a launcher hands to a
  shell; the agent in a job's pods and the workers its launch reached.
- `launch`: child names, the headless Service, sshd or agent worker and launcher pods, when
  the launcher is due, and `LauncherWorkersKind` with the check of an agent launch.

Built on the job layer (`jobcore._jobs`) and the runtime; the public names are re-exported
by `jobcore.launcher`.
"""
