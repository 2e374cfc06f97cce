"""`jobcore dashboard`: a read-only web view of every installed kind's jobs, live.

- `view`: the caches the pages read (watches of the jobs, their pods and Events).
- `summary` and `details`: a job in one line and in full (also `jobcore describe`'s).
- `logs`: which log a job shows, and the page's live copy of it.
- `stored`: the job as stored and what `jobcore render` would create for it.
- `pages` and `sse`: the pages, and the server-sent events that keep them live.
- `server`: the aiohttp application, its security headers and Host check.
- `command`: the `jobcore dashboard` command.
- `manifests`: its optional in-cluster install, read-only (`manifests/dashboard/`).
"""
