"""Run a disposable etcd + kube-apiserver (+ kube-controller-manager) from envtest binaries."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Coroutine
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from jobcore import JobcoreError
from jobcore.testing._controlplane.binaries import find_binaries
from jobcore.testing._shared.started import Started

READY_TIMEOUT = 60.0
_POLL_SECONDS = 0.1
_STOP_GRACE_SECONDS = 5.0
_ETCD, _APISERVER, _KCM = "etcd", "kube-apiserver", "kube-controller-manager"
_APISERVER_FLAGS = [
    "--bind-address=127.0.0.1",
    # Loopback can't be the `kubernetes` Service's endpoint: hence no endpoint reconciler.
    "--advertise-address=127.0.0.1",
    "--endpoint-reconciler-type=none",
    "--service-cluster-ip-range=10.0.0.0/24",
    "--allow-privileged=true",
    "--authorization-mode=RBAC",
    "--disable-admission-plugins=ServiceAccount",
    "--service-account-issuer=https://localhost",
    # The kit's nodes serve their logs on loopback, under names no resolver knows.
    "--kubelet-preferred-address-types=InternalIP,Hostname",
]


class ControlPlaneError(JobcoreError, RuntimeError):
    """The binaries are missing, or a component did not start or answer."""


class _Processes:
    """The running components, apart from ControlPlane so the exit-time finalizer can reach them.

    `subprocess.Popen` rather than asyncio's processes: these outlive the event loop that starts
    them (a session fixture starts them, function-scoped test loops restart them), and an asyncio
    process can only be awaited on its own loop.
    """

    def __init__(self) -> None:
        self.running: dict[str, subprocess.Popen[bytes]] = {}
        self.owned_dir: Path | None = None

    def spawn(self, name: str, argv: Sequence[str], log: Path) -> None:
        # A session of its own: Ctrl-C on the terminal must not kill them before cleanup runs.
        with log.open("ab") as out:
            self.running[name] = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
            )

    async def terminate(self, name: str) -> None:
        """SIGTERM, then SIGKILL if the process outlives the grace period."""
        if (proc := self.running.get(name)) is None:
            return
        _signal(proc, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_SECONDS
        while proc.poll() is None:
            if time.monotonic() > deadline:
                _signal(proc, signal.SIGKILL)
            await asyncio.sleep(0.05)
        del self.running[name]  # only now: if cancelled meanwhile, kill_all still finds it

    def kill_all(self) -> None:
        """Last resort, also run at interpreter exit: SIGKILL everything, drop the owned dir."""
        for proc in self.running.values():
            _signal(proc, signal.SIGKILL)
            proc.wait()
        self.running.clear()
        if self.owned_dir is not None:
            shutil.rmtree(self.owned_dir, ignore_errors=True)
            self.owned_dir = None


def _signal(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _log_tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError), path.open("rb") as log:
        log.seek(max(0, log.seek(0, os.SEEK_END) - 16384))
        return "\n".join(log.read().decode(errors="replace").splitlines()[-lines:])
    return "(no log)"


def _write_kubeconfig(path: str, server: str, token: str) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "envtest", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "envtest", "user": {"token": token}}],
        "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "envtest"}}],
        "current-context": "envtest",
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        yaml.safe_dump(config, out)
    return path


class ControlPlane(Started):
    """A real API server on loopback for one test session, as controller-runtime's envtest.

    Binaries come from `assets_dir`, else from where controller-runtime's envtest users keep
    them (`$KUBEBUILDER_ASSETS`, setup-envtest's store, /usr/local/kubebuilder/bin: see
    `binaries`). `apiserver_args` go last, so they override the defaults. Each process logs to
    `<work dir>/<binary>.log`. A `work_dir` given by the caller is kept by `stop()` (with its
    etcd data, so a later start resumes that state); otherwise a temporary one is made and
    removed. There is no scheduler and no kubelet.
    """

    def __init__(
        self,
        assets_dir: str | None = None,
        *,
        controller_manager: bool = False,
        apiserver_args: Sequence[str] = (),
        work_dir: str | None = None,
    ) -> None:
        self._assets_dir = assets_dir
        self._with_kcm = controller_manager
        self._apiserver_args = tuple(apiserver_args)
        self._given_dir = work_dir
        self._token = secrets.token_urlsafe(32)
        self._users = [f"{self._token},admin,admin,system:masters"]
        self._dir: Path | None = None
        self._ports: dict[str, int] = {}
        self._apiserver_minor = 0
        self._procs = _Processes()
        weakref.finalize(self, self._procs.kill_all)

    @property
    def token(self) -> str:
        """The admin's bearer token (group system:masters)."""
        return self._token

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._port('apiserver')}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self._port('etcd')}"

    @property
    def kubeconfig_path(self) -> str:
        """The admin's kubeconfig."""
        return str(self._work_dir() / "kubeconfig")

    @property
    def pids(self) -> Mapping[str, int]:
        """Process ids of the running components, by binary name."""
        return {name: proc.pid for name, proc in self._procs.running.items()}

    def add_user(self, name: str, groups: Sequence[str] = ()) -> str:
        """Add a token user and return its token.

        kube-apiserver reads its token file only when it starts: add users before `start()`, or
        call `restart_apiserver()` afterwards.
        """
        if any(re.search(r'[,"\n]', part) for part in (name, *groups)):
            raise ValueError(f"no commas, quotes or newlines in a token file: {name} {groups}")
        token = secrets.token_urlsafe(32)
        self._users.append(f'{token},{name},{name},"{",".join(groups)}"')
        if self._dir is not None:
            self._write_tokens()
        return token

    def kubeconfig_for(self, token: str, path: str) -> str:
        """Write a kubeconfig for the user holding `token` to `path`; return `path`."""
        return _write_kubeconfig(path, self.url, token)

    async def start(self) -> None:
        """Start etcd, the API server and, if asked, the controller manager; wait until ready."""
        if self._dir is not None:
            raise ControlPlaneError("the control plane is already started")
        assets = self._assets(_ETCD, _APISERVER, *([_KCM] if self._with_kcm else []))
        try:
            self._dir = Path(self._given_dir or tempfile.mkdtemp(prefix="jobcore-envtest-"))
            self._dir.mkdir(parents=True, exist_ok=True)
            self._procs.owned_dir = None if self._given_dir else self._dir
            self._ports = {name: _free_port() for name in ("etcd", "etcd-peer", "apiserver")}
            self._write_tokens()
            _write_kubeconfig(self.kubeconfig_path, self.url, self._token)
            # openssl makes the service-account signing key while the API server says its version.
            _, version = await _together(
                _run("openssl", "genrsa", "-out", str(self._dir / "sa.key")),
                _run(str(assets / _APISERVER), "--version"),
            )
            found = re.search(r"v1\.(\d+)", version)
            self._apiserver_minor = int(found.group(1)) if found else 0
            # The API server waits for etcd by itself: starting both at once saves etcd's startup.
            await _together(self._start_etcd(assets), self.start_apiserver())
            if self._with_kcm:
                await self.start_controller_manager()
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop every process and remove the temporary work dir; safe to call at any time."""
        try:
            # etcd last: an API server that loses etcd takes the whole grace period to stop.
            await asyncio.gather(self._procs.terminate(_KCM), self._procs.terminate(_APISERVER))
            await self._procs.terminate(_ETCD)
        finally:
            self._procs.kill_all()
            self._dir = None

    async def stop_apiserver(self) -> None:
        await self._procs.terminate(_APISERVER)

    async def start_apiserver(self) -> None:
        """Start the API server on its port and etcd (again, after `stop_apiserver()`)."""
        work = self._work_dir()
        argv = [
            str(self._assets(_APISERVER) / _APISERVER),
            f"--etcd-servers={self.etcd_url}",
            f"--secure-port={self._port('apiserver')}",
            f"--cert-dir={work / 'certs'}",
            f"--token-auth-file={work / 'tokens.csv'}",
            f"--service-account-key-file={work / 'sa.key'}",
            f"--service-account-signing-key-file={work / 'sa.key'}",
            *_APISERVER_FLAGS,
            # The insecure port (8080 by default) exists until 1.24, which rejects the flag.
            *(["--insecure-port=0"] if self._apiserver_minor < 24 else []),
            *self._apiserver_args,
        ]
        self._procs.spawn(_APISERVER, argv, work / f"{_APISERVER}.log")
        auth = {"Authorization": f"Bearer {self._token}"}
        await self._wait_ready(_APISERVER, f"{self.url}/readyz", auth, "ok")
        # Ready does not wait for the bootstrap controller to create the `default` namespace,
        # which tests (and kubectl's context) use at once.
        await self._wait_ready(_APISERVER, f"{self.url}/api/v1/namespaces/default", auth, "default")

    async def restart_apiserver(self) -> None:
        """Stop and start the API server on the same port and etcd: re-reads the token file."""
        await self.stop_apiserver()
        await self.start_apiserver()

    async def start_controller_manager(self) -> None:
        """Start kube-controller-manager's garbage collector, namespace and Job controllers."""
        if _KCM in self._procs.running:
            return
        work, port = self._work_dir(), _free_port()
        argv = [
            str(self._assets(_KCM) / _KCM),
            f"--kubeconfig={self.kubeconfig_path}",
            f"--secure-port={port}",
            f"--cert-dir={work / 'kcm-certs'}",
            "--controllers=garbagecollector,namespace,job",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            *(["--port=0"] if self._apiserver_minor < 24 else []),
        ]
        self._procs.spawn(_KCM, argv, work / f"{_KCM}.log")
        await self._wait_ready(_KCM, f"https://127.0.0.1:{port}/healthz", {}, "ok")

    async def stop_controller_manager(self) -> None:
        await self._procs.terminate(_KCM)

    async def etcd_compact(self) -> int:
        """Compact etcd to its current revision (old resourceVersions then answer 410 Gone)."""
        header = (await self._etcd("kv/range", {"key": base64.b64encode(b"/").decode()}))["header"]
        revision = int(header["revision"])
        await self._etcd("kv/compaction", {"revision": revision, "physical": True})
        return revision

    async def etcd_delete(self, key: str) -> int:
        """Delete `key` (`/registry/pods/<ns>/<name>`...) behind the API server's back; count."""
        body = {"key": base64.b64encode(key.encode()).decode()}
        return int((await self._etcd("kv/deleterange", body)).get("deleted", 0))

    def _assets(self, *binaries: str) -> Path:
        try:
            return find_binaries(binaries, self._assets_dir)
        except FileNotFoundError as error:
            raise ControlPlaneError(str(error)) from None

    def _work_dir(self) -> Path:
        if self._dir is None:
            raise ControlPlaneError("the control plane is not started")
        return self._dir

    def _port(self, name: str) -> int:
        self._work_dir()  # the ports of a stopped control plane may be someone else's by now
        return self._ports[name]

    def _write_tokens(self) -> None:
        (self._work_dir() / "tokens.csv").write_text("\n".join(self._users) + "\n")

    async def _start_etcd(self, assets: Path) -> None:
        work, peer = self._work_dir(), f"http://127.0.0.1:{self._port('etcd-peer')}"
        argv = [
            str(assets / _ETCD),
            f"--data-dir={work / 'etcd'}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            f"--quota-backend-bytes={8 * 1024**3}",
            "--unsafe-no-fsync",
            "--auto-compaction-retention=0",
        ]
        self._procs.spawn(_ETCD, argv, work / f"{_ETCD}.log")
        await self._wait_ready(_ETCD, f"{self.etcd_url}/health", {}, '"health":"true"')

    async def _wait_ready(self, name: str, url: str, headers: dict[str, str], ok: str) -> None:
        """Poll `url` until its body holds `ok`; fail early if the process exits."""
        log = self._work_dir() / f"{name}.log"
        deadline = time.monotonic() + READY_TIMEOUT
        timeout = aiohttp.ClientTimeout(total=2)
        async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
            while True:
                proc = self._procs.running.get(name)
                if proc is None or proc.poll() is not None:
                    raise ControlPlaneError(f"{name} exited; the end of {log}:\n{_log_tail(log)}")
                with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
                    async with session.get(url, ssl=False) as response:
                        if response.status == 200 and ok in await response.text():
                            return
                if time.monotonic() > deadline:
                    raise ControlPlaneError(
                        f"{name} not ready at {url} after {READY_TIMEOUT:.0f} s; "
                        f"the end of {log}:\n{_log_tail(log)}"
                    )
                await asyncio.sleep(_POLL_SECONDS)

    async def _etcd(self, method: str, body: Mapping[str, object]) -> dict[str, Any]:
        """Call etcd's v3 JSON gateway."""
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.etcd_url}/v3/{method}", json=body) as response,
        ):
            if response.status != 200:
                raise ControlPlaneError(f"etcd {method}: {response.status} {await response.text()}")
            result: dict[str, Any] = await response.json()
            return result


async def _together(*coros: Coroutine[Any, Any, Any]) -> list[Any]:
    """Run concurrently; on failure cancel the others and raise the first error, ungrouped."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(coro) for coro in coros]
    except BaseExceptionGroup as errors:
        raise errors.exceptions[0] from None
    return [task.result() for task in tasks]


async def _run(*argv: str) -> str:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    except FileNotFoundError:
        raise ControlPlaneError(f"{argv[0]} not found on PATH") from None
    out = (await proc.communicate())[0].decode(errors="replace")
    if proc.returncode != 0:
        raise ControlPlaneError(f"{' '.join(argv)} failed: {out}")
    return out
