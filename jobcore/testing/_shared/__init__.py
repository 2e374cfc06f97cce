"""What the kit's parts and its users share: waits, job and kind helpers, host prerequisites.

`eventually`, `background`, `started` and `hostcommands` serve the other subpackages too;
`jobs`, `jobreport`, `reconciles` and `requests` test a job kind against an API server, `kinds`
and `kindcheck` on plain objects; `required` skips or fails a test that the host cannot run.
Nothing here imports the kit's other subpackages.
"""
