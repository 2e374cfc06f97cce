"""The public testing kit: a real control plane, a simulated node, and a pytest plugin.

Plugin authors use it as the project's own tests do: `ControlPlane` runs etcd and
kube-apiserver from `KUBEBUILDER_ASSETS`; `SimulatedNode` plays scheduler and kubelet for
Pods; `background` keeps a runnable going for the length of a block; `eventually` waits
for a condition; `job_controller` runs a kind's controller for a block; `install_crd`,
`job_status`, `wait_for_phase`, `wait_for_phases`, `wait_for_end`, `condition`, `live_pods`,
`event_reasons`, `wait_for_events` and `events_of` are what a job kind's tests check;
`FaultProxy` stands between a controller and the API server and fails a share of its
requests (`Faults`). The pytest
plugin (`jobcore.testing.plugin`, loaded automatically once jobcore is installed) provides
the `control_plane`, `kubeconfig_path`, `client`, `namespace`, `simulated_node` and
`process_node` fixtures. `require` skips a test whose prerequisite is missing, and fails it
under CI (`under_ci`), where a skip would hide a missing install.
"""

from jobcore.testing._background import background
from jobcore.testing._controlplane import ControlPlane, ControlPlaneError
from jobcore.testing._eventually import eventually
from jobcore.testing._faultproxy import FaultProxy, Faults
from jobcore.testing._jobs import (
    condition,
    event_reasons,
    events_of,
    install_crd,
    job_controller,
    job_status,
    live_pods,
    schemaless_crd,
    wait_for_end,
    wait_for_events,
    wait_for_phase,
    wait_for_phases,
)
from jobcore.testing._node import PodMatcher, PodOutcome, SimulatedNode
from jobcore.testing._processnode import ProcessNode, process_node_available
from jobcore.testing._requests import api_requests
from jobcore.testing._required import require, under_ci

__all__ = [
    "ControlPlane",
    "ControlPlaneError",
    "FaultProxy",
    "Faults",
    "PodMatcher",
    "PodOutcome",
    "ProcessNode",
    "SimulatedNode",
    "api_requests",
    "background",
    "condition",
    "event_reasons",
    "events_of",
    "eventually",
    "install_crd",
    "job_controller",
    "job_status",
    "live_pods",
    "process_node_available",
    "require",
    "schemaless_crd",
    "under_ci",
    "wait_for_end",
    "wait_for_events",
    "wait_for_phase",
    "wait_for_phases",
]
