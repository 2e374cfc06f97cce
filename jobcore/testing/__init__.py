"""The public testing kit: a real control plane, a simulated node, and a pytest plugin.

Plugin authors use it as the project's own tests do: `ControlPlane` runs etcd and
kube-apiserver from where controller-runtime's envtest users keep them (`KUBEBUILDER_ASSETS`,
setup-envtest's store, /usr/local/kubebuilder/bin); `SimulatedNode` plays scheduler and
kubelet for Pods; `background` keeps a runnable going for the length of a block; `eventually`
waits for a condition; `job_controller` runs a kind's controller for a block; `install_crd`,
`job_status`, `wait_for_phase`, `wait_for_phases`, `wait_for_end`, `condition`, `live_pods`,
`event_reasons`, `wait_for_events`, `events_of`, `create_until_phase`, `wait_for_pods`,
`wait_for_deletion`, `controller_uids` and `created_after_ready` are what a job kind's tests
check; `resync` and `wait_until_settled` wait for a running controller's own work;
`job_of`, `pod_of`, `observed_of`, `by_name`, `container_named`, `env_of`, `env_list`,
`secret_text` and their kin test a kind on plain objects, without an API server, and
`ModelKind` is a kind that is only its model; `assert_valid_kind` fails on a kind the
controller would refuse, or with a public attribute it would ignore (a misspelt hook);
`FaultProxy` stands between a controller and the API server and fails a share of its
requests (`Faults`). `KueueStandIn` plays Kueue (admission, preemption, eviction) over
Kueue's own API types, which `install_kueue_crds` installs (`kueue_running` does both;
`create_flavor`, `create_cluster_queue`, `create_local_queue` and `create_admission_check`
set up queues;
`KUEUE_WORKLOADS` and the other `KUEUE_*` resources name them; `WaitForPodsReady` configures
its timeout). `RealCluster`
runs a real single-node Kubernetes (kubelet, containerd, runc, CNI, kube-proxy, cluster DNS)
on this host for tests in real containers. The pytest plugin (`jobcore.testing.plugin`,
loaded automatically once jobcore is installed) provides the `control_plane`,
`kubeconfig_path`, `client`, `namespace`, `simulated_node`, `process_node` and
`real_cluster` fixtures.
`require` skips a test whose prerequisite is missing, and fails it under CI (`under_ci`),
where a skip would hide a missing install.
The kit imports without pytest (`jobcore sandbox` runs it from a plain install): only the
plugin needs pytest, and `require` and `accepting_connections` once they skip or fail a test.
"""

from jobcore.testing._controlplane.envtest import ControlPlane
from jobcore.testing._controlplane.envtest import ControlPlaneError
from jobcore.testing._controlplane.faultproxy import FaultProxy
from jobcore.testing._controlplane.faultproxy import Faults
from jobcore.testing._kueue.api import ADMISSION_CHECKS as KUEUE_ADMISSION_CHECKS
from jobcore.testing._kueue.api import CLUSTER_QUEUES as KUEUE_CLUSTER_QUEUES
from jobcore.testing._kueue.api import LOCAL_QUEUES as KUEUE_LOCAL_QUEUES
from jobcore.testing._kueue.api import RESOURCE_FLAVORS as KUEUE_RESOURCE_FLAVORS
from jobcore.testing._kueue.api import WORKLOAD_PRIORITY_CLASSES as KUEUE_WORKLOAD_PRIORITY_CLASSES
from jobcore.testing._kueue.api import WORKLOADS as KUEUE_WORKLOADS
from jobcore.testing._kueue.crds import install_kueue_crds
from jobcore.testing._kueue.queues import create_admission_check
from jobcore.testing._kueue.queues import create_cluster_queue
from jobcore.testing._kueue.queues import create_flavor
from jobcore.testing._kueue.queues import create_local_queue
from jobcore.testing._kueue.queues import kueue_running
from jobcore.testing._kueue.standin import KueueStandIn
from jobcore.testing._kueue.workloads import WaitForPodsReady
from jobcore.testing._nodes.process import ProcessNode
from jobcore.testing._nodes.process import process_node_available
from jobcore.testing._nodes.simulated import PodMatcher
from jobcore.testing._nodes.simulated import PodOutcome
from jobcore.testing._nodes.simulated import SimulatedNode
from jobcore.testing._realcluster.cluster import RealCluster
from jobcore.testing._realcluster.cluster import RealClusterError
from jobcore.testing._realcluster.cluster import images_folder
from jobcore.testing._realcluster.cluster import real_cluster_available
from jobcore.testing._shared.background import background
from jobcore.testing._shared.eventually import eventually
from jobcore.testing._shared.jobs import condition
from jobcore.testing._shared.jobs import controller_uids
from jobcore.testing._shared.jobs import create_until_phase
from jobcore.testing._shared.jobs import created_after_ready
from jobcore.testing._shared.jobs import event_reasons
from jobcore.testing._shared.jobs import events_of
from jobcore.testing._shared.jobs import install_crd
from jobcore.testing._shared.jobs import job_controller
from jobcore.testing._shared.jobs import job_status
from jobcore.testing._shared.jobs import live_pods
from jobcore.testing._shared.jobs import schemaless_crd
from jobcore.testing._shared.jobs import temporary_namespace
from jobcore.testing._shared.jobs import wait_for_deletion
from jobcore.testing._shared.jobs import wait_for_end
from jobcore.testing._shared.jobs import wait_for_events
from jobcore.testing._shared.jobs import wait_for_phase
from jobcore.testing._shared.jobs import wait_for_phases
from jobcore.testing._shared.jobs import wait_for_pods
from jobcore.testing._shared.kindcheck import assert_valid_kind
from jobcore.testing._shared.kinds import ModelKind
from jobcore.testing._shared.kinds import accepting_connections
from jobcore.testing._shared.kinds import by_name
from jobcore.testing._shared.kinds import container_named
from jobcore.testing._shared.kinds import env_list
from jobcore.testing._shared.kinds import env_of
from jobcore.testing._shared.kinds import error_messages
from jobcore.testing._shared.kinds import is_subset
from jobcore.testing._shared.kinds import job_manifest
from jobcore.testing._shared.kinds import job_of
from jobcore.testing._shared.kinds import observed_of
from jobcore.testing._shared.kinds import pod_of
from jobcore.testing._shared.kinds import run_command
from jobcore.testing._shared.kinds import secret_text
from jobcore.testing._shared.kinds import spec_with
from jobcore.testing._shared.kinds import terminated
from jobcore.testing._shared.kinds import waiting
from jobcore.testing._shared.reconciles import resync
from jobcore.testing._shared.reconciles import wait_until_settled
from jobcore.testing._shared.requests import api_requests
from jobcore.testing._shared.required import require
from jobcore.testing._shared.required import under_ci

__all__ = [
    "KUEUE_ADMISSION_CHECKS",
    "KUEUE_CLUSTER_QUEUES",
    "KUEUE_LOCAL_QUEUES",
    "KUEUE_RESOURCE_FLAVORS",
    "KUEUE_WORKLOADS",
    "KUEUE_WORKLOAD_PRIORITY_CLASSES",
    "ControlPlane",
    "ControlPlaneError",
    "FaultProxy",
    "Faults",
    "KueueStandIn",
    "ModelKind",
    "PodMatcher",
    "PodOutcome",
    "ProcessNode",
    "RealCluster",
    "RealClusterError",
    "SimulatedNode",
    "WaitForPodsReady",
    "accepting_connections",
    "api_requests",
    "assert_valid_kind",
    "background",
    "by_name",
    "condition",
    "container_named",
    "controller_uids",
    "create_admission_check",
    "create_cluster_queue",
    "create_flavor",
    "create_local_queue",
    "create_until_phase",
    "created_after_ready",
    "env_list",
    "env_of",
    "error_messages",
    "event_reasons",
    "events_of",
    "eventually",
    "images_folder",
    "install_crd",
    "install_kueue_crds",
    "is_subset",
    "job_controller",
    "job_manifest",
    "job_of",
    "job_status",
    "kueue_running",
    "live_pods",
    "observed_of",
    "pod_of",
    "process_node_available",
    "real_cluster_available",
    "require",
    "resync",
    "run_command",
    "schemaless_crd",
    "secret_text",
    "spec_with",
    "temporary_namespace",
    "terminated",
    "under_ci",
    "wait_for_deletion",
    "wait_for_end",
    "wait_for_events",
    "wait_for_phase",
    "wait_for_phases",
    "wait_for_pods",
    "wait_until_settled",
    "waiting",
]
