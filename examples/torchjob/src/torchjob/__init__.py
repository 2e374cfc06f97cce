"""TorchJob: an example jobcore plugin, kept outside jobcore, that runs torchrun without ssh.

A master (rank 0) and `spec.worker.replicas` workers, all created at once, reach each other
through a headless Service; every Pod's `pytorch` container gets MASTER_ADDR, MASTER_PORT,
WORLD_SIZE and RANK (and torchrun's `PET_*` equivalents) and runs the user's command as is.
The master's exit decides the job; a worker that fails first fails it.

Modules: `spec` (the API models), `children` (the Service and Pods), `kind` (validation,
render, interpret). It imports only `jobcore`'s public API, and is registered in this
package's pyproject.toml under the entry-point group `jobcore.jobkinds` as `torchjob`.
"""

from torchjob.children import MASTER
from torchjob.children import MASTER_PORT
from torchjob.children import WORKER
from torchjob.kind import TorchJobKind
from torchjob.spec import CONTAINER
from torchjob.spec import MasterSpec
from torchjob.spec import TorchJobSpec
from torchjob.spec import WorkerSpec

__all__ = [
    "CONTAINER",
    "MASTER",
    "MASTER_PORT",
    "WORKER",
    "MasterSpec",
    "TorchJobKind",
    "TorchJobSpec",
    "WorkerSpec",
]
