"""The launcher API: for kinds whose launcher pod reaches its workers, over ssh or the agent.

A kind of this shape (the bundled MPIJob, ColossalAIJob and HorovodJob are three) runs sshd
in `spec.worker.replicas` worker pods made from `spec.worker.template`, and one launcher pod
that reaches them over ssh once they are Ready. What such kinds share lives here:

- ssh: a per-job Secret with a fresh client keypair and a pinned host key (`ssh_secret`,
  `job_ssh`, `SSHAccess`), sshd's command line (`sshd_command`), the client's options
  (`ssh_client_args`), and the launcher's bounded wait for every worker to resolve and
  accept ssh (`ssh_wait_script`).
- children: the launcher's names (`launcher_name`, `hostfile_name`, `ssh_secret_name`), sshd
  worker pods (`sshd_worker_pod`), a launcher copied from the worker container
  (`copied_launcher_pod`), a container serving the launcher in place of its command
  (`serving`), when the launcher is due (`launcher_due`), and a job's children in the
  order they are made (`launch_children`).
- the agent, in place of ssh (`Transport`): jobcore's agent copied into the pods
  (`with_agent`), workers serving it (`agent_worker_pod`), and the launcher's command under
  it (`agent_launch_command`), what it reports (`launched`) and the failure of a launch that
  reached too few workers (`unlaunched`).
- the spec: `spec.ssh` (`SSHSpec`) and a bounded worker count (`WorkerCount`).
- the kind: `LauncherWorkersKind`, the members such a kind declares alike, with the outcome
  of a static launch (`launcher_outcome`).
- validation: reserved volumes and mounts, and the strings a launcher writes into a shell
  command (`path_errors`, `env_name_errors`...).

The job layer itself (`JobKind`, `Job`, `Observed`, `Outcome`...), with what any kind uses to
read its pods (`failure_message`, `pod_problems`...), name its workers (`worker_name`,
`worker_host`, `headless_service`) and check its name and template (`job_name_errors`,
`container_errors`), is `jobcore.jobs`.
"""

from jobcore._jobs.workers import WORKER
from jobcore._launcher.agent import AGENT
from jobcore._launcher.agent import AGENT_DIR
from jobcore._launcher.agent import AGENT_KEY
from jobcore._launcher.agent import AGENT_KEY_FILE
from jobcore._launcher.agent import AGENT_LAUNCHED
from jobcore._launcher.agent import AGENT_PORT
from jobcore._launcher.agent import AGENT_RSH
from jobcore._launcher.agent import Transport
from jobcore._launcher.agent import agent_client_env
from jobcore._launcher.agent import agent_key
from jobcore._launcher.agent import agent_launch_command
from jobcore._launcher.agent import agent_serve_command
from jobcore._launcher.agent import launched
from jobcore._launcher.agent import with_agent
from jobcore._launcher.checks import SAFE_PATH
from jobcore._launcher.checks import env_from_errors
from jobcore._launcher.checks import env_name_errors
from jobcore._launcher.checks import mount_errors
from jobcore._launcher.checks import path_errors
from jobcore._launcher.checks import template_container
from jobcore._launcher.launch import LAUNCHER
from jobcore._launcher.launch import SSH_VOLUME
from jobcore._launcher.launch import LauncherWorkersKind
from jobcore._launcher.launch import agent_worker_pod
from jobcore._launcher.launch import copied_launcher_pod
from jobcore._launcher.launch import hostfile_name
from jobcore._launcher.launch import job_ssh
from jobcore._launcher.launch import launch_children
from jobcore._launcher.launch import launcher_due
from jobcore._launcher.launch import launcher_name
from jobcore._launcher.launch import serving
from jobcore._launcher.launch import ssh_mount
from jobcore._launcher.launch import ssh_secret_name
from jobcore._launcher.launch import sshd_worker_pod
from jobcore._launcher.launch import unlaunched
from jobcore._launcher.pods import launcher_outcome
from jobcore._launcher.spec import MAX_WORKERS
from jobcore._launcher.spec import SSH_MOUNT
from jobcore._launcher.spec import SSHDPath
from jobcore._launcher.spec import SSHPort
from jobcore._launcher.spec import SSHSpec
from jobcore._launcher.spec import WorkerCount
from jobcore._launcher.ssh import SSH_PORT
from jobcore._launcher.ssh import SSH_PORT_ENV
from jobcore._launcher.ssh import SSH_PRIVATE_KEY
from jobcore._launcher.ssh import SSH_SECRET_MODE
from jobcore._launcher.ssh import SSH_UNPINNED_OPTIONS
from jobcore._launcher.ssh import SSH_WAIT_SECONDS
from jobcore._launcher.ssh import SSH_WAIT_TIMEOUT_EXIT
from jobcore._launcher.ssh import SSHAccess
from jobcore._launcher.ssh import generate_keypair
from jobcore._launcher.ssh import ssh_client_args
from jobcore._launcher.ssh import ssh_secret
from jobcore._launcher.ssh import ssh_secret_volume
from jobcore._launcher.ssh import ssh_wait_script
from jobcore._launcher.ssh import sshd_command

__all__ = [
    "AGENT",
    "AGENT_DIR",
    "AGENT_KEY",
    "AGENT_KEY_FILE",
    "AGENT_LAUNCHED",
    "AGENT_PORT",
    "AGENT_RSH",
    "LAUNCHER",
    "MAX_WORKERS",
    "SAFE_PATH",
    "SSH_MOUNT",
    "SSH_PORT",
    "SSH_PORT_ENV",
    "SSH_PRIVATE_KEY",
    "SSH_SECRET_MODE",
    "SSH_UNPINNED_OPTIONS",
    "SSH_VOLUME",
    "SSH_WAIT_SECONDS",
    "SSH_WAIT_TIMEOUT_EXIT",
    "WORKER",
    "LauncherWorkersKind",
    "SSHAccess",
    "SSHDPath",
    "SSHPort",
    "SSHSpec",
    "Transport",
    "WorkerCount",
    "agent_client_env",
    "agent_key",
    "agent_launch_command",
    "agent_serve_command",
    "agent_worker_pod",
    "copied_launcher_pod",
    "env_from_errors",
    "env_name_errors",
    "generate_keypair",
    "hostfile_name",
    "job_ssh",
    "launch_children",
    "launched",
    "launcher_due",
    "launcher_name",
    "launcher_outcome",
    "mount_errors",
    "path_errors",
    "serving",
    "ssh_client_args",
    "ssh_mount",
    "ssh_secret",
    "ssh_secret_name",
    "ssh_secret_volume",
    "ssh_wait_script",
    "sshd_command",
    "sshd_worker_pod",
    "template_container",
    "unlaunched",
    "with_agent",
]
