"""The launcher-over-ssh helpers: for kinds whose launcher pod reaches sshd workers.

Layers, bottom up (import-linter checks that each imports only those below it):

- `ssh`, `pods`, `checks`: the per-job ssh Secret, sshd's and the client's options and the
  launcher's wait script; reading a launcher's and its workers' pods into an `Outcome`;
  validation of the job name, the worker container and what a launcher hands to a shell.
- `launch`: child names, the headless Service, sshd worker and launcher pods, when the
  launcher is due, and `LauncherWorkersKind`.

Built on the job layer (`jobcore._jobs`) and the runtime; the public names are re-exported
by `jobcore.launcher`.
"""
