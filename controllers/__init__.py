"""The bundled controller program: the `jobcore` command and the controllers it wires up.

- `cli` (and `__main__`): the command and its `run`, `kinds`, `validate`, `render` and
  `manifests` subcommands; `apiclient`, `serving` and `kueueflags`: `run`'s flags.
- `kinds`: the installed job kinds, found through their entry points.
- `render`, `documents` and `helptexts`: the offline tools and their long help.
- `manifests`, `kueuerbac` and `podsecurity`: the deployable manifests.
- `describe` and `dashboard/`: a job in the terminal and in the browser.
- `sandbox/`: `jobcore sandbox` and its samples.
- `apidocs` and `generate`: the API reference, and the one command that rewrites every
  generated file (`python -m controllers.generate`).
"""
