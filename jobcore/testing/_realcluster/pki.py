"""The real cluster's certificates and kubeconfigs, made once with openssl and kept.

One CA signs every serving and client certificate (EC P-256: fast to make); the service-account
signing key is RSA, as kube-apiserver 1.20 expects. The set is remade when the host's address,
which the API server's certificate names, changes.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

from jobcore.testing._realcluster.layout import API_SERVICE_IP
from jobcore.testing._realcluster.layout import CLUSTER_DOMAIN
from jobcore.testing._realcluster.layout import NODE_NAME
from jobcore.testing._realcluster.layout import Layout
from jobcore.testing._shared.hostcommands import run
from jobcore.testing._shared.hostcommands import tool

USERS = {
    # file name: (common name, organisation)
    "admin": ("kubernetes-admin", "system:masters"),
    "kcm": ("system:kube-controller-manager", ""),
    "scheduler": ("system:kube-scheduler", ""),
    "proxy": ("system:kube-proxy", ""),
    "kubelet": (f"system:node:{NODE_NAME}", "system:nodes"),
}
"""The client identities that get a kubeconfig of their own."""
_DAYS = "3650"
_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


async def ensure_pki(layout: Layout, host_ip: str) -> None:
    """Certificates, keys and kubeconfigs in `layout.pki`, unless already made for `host_ip`."""
    pki = layout.pki
    stamp = pki / "host-ip"
    if stamp.is_file() and stamp.read_text() == host_ip and (pki / "sa.key").is_file():
        return
    pki.mkdir(parents=True, exist_ok=True)
    openssl = tool("openssl")
    await run(
        openssl, "req", "-x509", *_EC, "-days", _DAYS, "-keyout", str(pki / "ca.key"),
        "-out", str(pki / "ca.crt"), "-subj", "/CN=jobcore-cluster-ca",
    )  # fmt: skip
    names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc"]
    names.append(f"kubernetes.default.svc.{CLUSTER_DOMAIN}")
    api_sans = [*(f"DNS:{n}" for n in [*names, "localhost"])]
    api_sans += [f"IP:{ip}" for ip in ("127.0.0.1", API_SERVICE_IP, host_ip)]
    await _certificate(pki, "apiserver", "kube-apiserver", "", api_sans)
    await _certificate(pki, "apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                       "system:masters")  # fmt: skip
    kubelet_sans = [f"DNS:{NODE_NAME}", "DNS:localhost", "IP:127.0.0.1", f"IP:{host_ip}"]
    await _certificate(pki, "kubelet-serving", f"system:node:{NODE_NAME}", "system:nodes",
                       kubelet_sans)  # fmt: skip
    for user, (common_name, organisation) in USERS.items():
        await _certificate(pki, user, common_name, organisation)
        _write_kubeconfig(layout, user)
    await run(openssl, "genrsa", "-out", str(pki / "sa.key"), "2048")
    await run(openssl, "rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))
    stamp.write_text(host_ip)


async def _certificate(
    pki: Path, name: str, common_name: str, organisation: str, sans: list[str] | None = None
) -> None:
    openssl = tool("openssl")
    key, csr, ext = (pki / f"{name}.{suffix}" for suffix in ("key", "csr", "ext"))
    subject = f"/CN={common_name}" + (f"/O={organisation}" if organisation else "")
    await run(openssl, "req", "-new", *_EC, "-keyout", str(key), "-out", str(csr), "-subj", subject)
    lines = [
        "basicConstraints=CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage=serverAuth,clientAuth",
    ]
    if sans:
        lines.append("subjectAltName=" + ",".join(sans))
    ext.write_text("\n".join(lines) + "\n")
    await run(
        openssl, "x509", "-req", "-in", str(csr), "-CA", str(pki / "ca.crt"),
        "-CAkey", str(pki / "ca.key"), "-CAcreateserial", "-days", _DAYS,
        "-out", str(pki / f"{name}.crt"), "-extfile", str(ext),
    )  # fmt: skip
    csr.unlink()
    ext.unlink()
    os.chmod(key, 0o600)


def _data(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _write_kubeconfig(layout: Layout, user: str) -> None:
    pki = layout.pki
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "jobcore",
                "cluster": {
                    "server": layout.apiserver_url,
                    "certificate-authority-data": _data(pki / "ca.crt"),
                },
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _data(pki / f"{user}.crt"),
                    "client-key-data": _data(pki / f"{user}.key"),
                },
            }
        ],
        "contexts": [{"name": "jobcore", "context": {"cluster": "jobcore", "user": user}}],
        "current-context": "jobcore",
    }
    path = pki / f"{user}.kubeconfig"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        yaml.safe_dump(config, out)
