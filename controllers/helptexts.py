"""The long help (`jobcore COMMAND --help`) of the offline subcommands: kinds, validate, render."""

KINDS = """\
List the job kinds installed through the entry-point group jobcore.jobkinds: entry-point name
(what --kinds takes), kind, group/version, short names and the distribution that provides it.

A kind that fails to load is reported on stderr with its error and skipped, as the controller
skips it; the others are still listed. Exit status: 0 when every installed kind loads, 1 when
one fails to load or none is installed.
"""

VALIDATE = """\
Check job files as the API server and the controller would, with no cluster: apiVersion and
kind name an installed kind, metadata.name and namespace are valid, the spec matches the
kind's schema (an unknown field is an error here; the API server would drop it silently), and
the controller's own checks pass. Files may hold several YAML documents; "-" reads stdin.

Each problem is printed to stderr with its line and field path, e.g.
  job.yaml:14: spec.worker.replicas: Input should be greater than or equal to 1
and each valid job to stdout. Exit status: 0 when every document is a valid job, 1 otherwise
(including a file that cannot be read, is not YAML or holds no document).
"""

RENDER = """\
Validate job files as `jobcore validate` does, then print every object the controller would
create for them, as a YAML stream (or a JSON List with --output json), with no cluster:
namespace, labels and ownerReference included (the job's uid is a placeholder of zeros), and
the PodGroup first when a gang scheduler admits the job (spec.scheduler.t9kScheduler, or
--gang-scheduler). A job that names no namespace is rendered in --namespace.

By default nothing exists yet, as on a new job's first reconcile. --workers-ready renders a
later reconcile: everything of the first render exists and its pods are Running and Ready, so
a kind that waits for Ready workers (MPIJob, HorovodJob, ColossalAIJob) adds its launcher.

The ssh Secret holds a private key generated afresh on every run, as the controller generates
one per job: it is printed as it would be created. --redact-secrets replaces Secret values
with "<redacted>", for review or a stable diff (the output is then not applicable as is).
Nothing is printed if any document is invalid. Exit status: 0 when everything rendered, 1
otherwise.
"""
