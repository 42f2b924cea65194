"""A real container engine for tests: podman behind its Docker API, and local base images.

tests/system/test_compose_engine.py builds the service images and runs deploy/compose.yaml
with the ``docker-compose`` binary users run, talking to ``podman system service`` (podman's
Docker-compatible API) as it would to a Docker engine. What the machines running the suite
lack, this module stands in for, and says so:

* No image registry is reachable, so the base images are built here from Debian's packages:
  a bookworm root file system by ``debootstrap`` with Debian's Python 3.11 (for
  ``python:3.12-slim-bookworm``), the ``uv`` and ``uvx`` binaries from uv's PyPI wheel (for
  ``ghcr.io/astral-sh/uv``), and Debian's redis-server on that root (for ``redis:7.4.11``).
  They carry the host's CA bundle, with ``SSL_CERT_FILE`` pointing at it, since registry
  traffic from these machines is verified against authorities the host trusts beyond the
  usual ones. Each is tagged with a digest of its recipe and reused while it stands.
* podman runs its containers with the runc runtime and explicit ulimits (crun cannot drive
  this kernel's hybrid cgroups; podman's default ulimits for root need a capability the
  sandbox lacks), set in a containers.conf of the run's own (``CONTAINERS_CONF``).
* With no systemd, podman cannot schedule healthchecks: :class:`HealthcheckDriver` runs
  every container's own healthcheck command (``podman healthcheck run``): every two seconds
  until it is healthy, then on its interval from the Compose file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ContainerEngine",
    "HealthcheckDriver",
    "StandinImages",
    "container_engine_unavailable",
]

# uv's manylinux x86_64 wheel per version the Dockerfiles pin (ARG UV_IMAGE=...:<version>).
UV_WHEEL_SHA256 = {
    "0.13.9": "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19",
}
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_SUITE = "bookworm"
DEBOOTSTRAP_OPTIONS = ("--variant=minbase", "--include=python3,ca-certificates")
HOST_CA_BUNDLE_IN_IMAGE = "/usr/local/share/ca-certificates/arena-host-bundle.pem"
IMPORT_CHANGES = (f"ENV SSL_CERT_FILE={HOST_CA_BUNDLE_IN_IMAGE}", "ENV LANG=C.UTF-8", 'CMD ["python3"]')
CONTAINERS_CONF = """\
# Written by tests/support/container_engine.py for one test run.
[containers]
# podman's defaults for root raise limits beyond what this sandbox allows.
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
# crun stops with "cgroups in hybrid mode not supported" here.
runtime = "runc"

[network]
network_backend = "netavark"
"""
REDIS_ENTRYPOINT = """\
#!/bin/sh
# As the redis image's entrypoint does with no config file: reachable from other containers.
if [ "${1:-}" = "redis-server" ]; then
    shift
    exec redis-server --protected-mode no "$@"
fi
exec "$@"
"""
REDIS_CONTAINERFILE = """\
FROM {base}
RUN apt-get update \\
    && apt-get install -y --no-install-recommends redis-server \\
    && rm -rf /var/lib/apt/lists/* \\
    && mkdir -p /data && chown redis:redis /data
COPY --chmod=0755 entrypoint.sh /usr/local/bin/redis-entrypoint.sh
WORKDIR /data
USER redis
ENTRYPOINT ["/usr/local/bin/redis-entrypoint.sh"]
CMD ["redis-server"]
"""
# What each step may take on two cores: debootstrap about a minute, a service image about one,
# the model image about 13 on a new machine (llama.cpp compiles from its sdist).
DEBOOTSTRAP_TIMEOUT_S = 900
BUILD_TIMEOUT_S = 2700
# What the engine needs beyond podman (.ci/run installs the Debian packages).
ENGINE_PROGRAMS = {
    "podman": "podman",
    "runc": "runc",
    "iptables": "iptables",
    "debootstrap": "debootstrap",
}
ENGINE_FILES = {
    "/usr/lib/podman/netavark": "netavark",
    "/usr/lib/podman/aardvark-dns": "aardvark-dns",
    "/usr/libexec/podman/catatonit": "catatonit",
}


def container_engine_unavailable() -> str | None:
    """Why the engine cannot run here (``None`` when it can)."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return f"needs x86_64 Linux (found {platform.system()} {platform.machine()})"
    if os.geteuid() != 0:
        return "needs root (rootful podman, debootstrap); .ci/run runs as root"
    missing = sorted(
        {package for program, package in ENGINE_PROGRAMS.items() if shutil.which(program) is None}
        | {package for path, package in ENGINE_FILES.items() if not Path(path).exists()}
    )
    if missing:
        return (
            f"not installed: {' '.join(missing)} (Debian: apt-get install {' '.join(missing)}; .ci/run does)"
        )
    return None


def _run(
    argv: list[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    what: str,
    cwd: Path | None = None,
    stdin: Any = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        argv, capture_output=True, check=False, timeout=timeout, env=dict(env), cwd=cwd, stdin=stdin
    )
    if check and done.returncode != 0:
        output = (done.stdout + done.stderr).decode(errors="replace")
        tail = "\n".join(output.splitlines()[-40:])
        raise AssertionError(f"{what} failed ({done.returncode}): {' '.join(argv)}\n{tail}")
    return done


def _unmount_below(root: Path) -> None:
    """Lazily unmount every mount point under ``root`` (deepest first); never raises."""
    try:
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        return
    below = sorted((m for m in mounts if m.startswith(f"{root}/")), key=len, reverse=True)
    for mount in below:
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False, timeout=60)


@dataclass(frozen=True)
class StandinImages:
    """Local images standing in for the registry's."""

    python: str  # for python:3.12-slim-bookworm (Debian's Python 3.11 on bookworm)
    uv: str  # for ghcr.io/astral-sh/uv:<version> (the binaries from uv's wheel)
    redis: str  # for redis:7.4.11 (Debian's redis-server on bookworm)


class ContainerEngine:
    """podman with a configuration of this run's own, and its Docker-compatible API."""

    def __init__(self, workdir: Path, tools_bin: Path) -> None:
        self.workdir = workdir
        self.tools_bin = tools_bin
        self.conf = workdir / "containers.conf"
        self.conf.write_text(CONTAINERS_CONF, encoding="utf-8")
        self.socket = workdir / "podman.sock"
        self._service: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        """What podman and docker-compose run with: nothing of the developer's shell but PATH."""
        return {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.workdir),
            "CONTAINERS_CONF": str(self.conf),
            "DOCKER_HOST": f"unix://{self.socket}",
            # The classic builder: podman's API has no BuildKit session (the build still reads
            # the same Dockerfile, RUN --mount cache mounts included, through buildah).
            "DOCKER_BUILDKIT": "0",
        }

    def podman(self, *args: str, timeout: float = 120, what: str = "podman") -> str:
        """podman's standard output; a failure raises with what it printed."""
        return _run(["podman", *args], env=self.env, timeout=timeout, what=what).stdout.decode()

    def podman_status(self, *args: str, timeout: float = 120) -> int:
        """podman's exit status, for commands that may fail (cleanup, probes)."""
        try:
            return _run(
                ["podman", *args], env=self.env, timeout=timeout, what="podman", check=False
            ).returncode
        except subprocess.TimeoutExpired:
            return -1

    def image_exists(self, name: str) -> bool:
        return self.podman_status("image", "exists", name, timeout=60) == 0

    def project_objects(self, project: str) -> dict[str, list[str]]:
        """The containers, volumes and networks a Compose project has (by its label)."""
        label = f"label=com.docker.compose.project={project}"
        return {
            "container": self.podman("ps", "--all", "--quiet", "--filter", label).split(),
            "volume": self.podman("volume", "ls", "--quiet", "--filter", label).split(),
            "network": self.podman("network", "ls", "--quiet", "--filter", label).split(),
        }

    def remove_project(self, project: str) -> None:
        """Remove whatever a Compose project left; never raises (it runs in cleanup)."""
        try:
            objects = self.project_objects(project)
        except (AssertionError, subprocess.SubprocessError):
            return
        for kind in ("container", "volume", "network"):  # containers first: they hold the rest
            if objects[kind]:
                self.podman_status(kind, "rm", "--force", *objects[kind], timeout=300)

    # ----------------------------------------------------------------- the Docker API

    @contextlib.contextmanager
    def docker_api(self) -> Iterator[str]:
        """``podman system service`` on a socket of this run's; yields its DOCKER_HOST."""
        log = (self.workdir / "podman-service.log").open("wb")
        self._service = subprocess.Popen(
            ["podman", "system", "service", "--time=0", f"unix://{self.socket}"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self._wait_for_api()
            yield f"unix://{self.socket}"
        finally:
            self._service.terminate()
            try:
                self._service.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._service.kill()
                self._service.wait()
            log.close()
            self._service = None

    def _wait_for_api(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self._service is not None
            if self._service.poll() is not None:
                log = (self.workdir / "podman-service.log").read_text(errors="replace")
                raise AssertionError(f"podman system service exited:\n{log[-3000:]}")
            if self._pings():
                return
            time.sleep(0.2)
        raise AssertionError("podman system service never answered /_ping")

    def _pings(self) -> bool:
        """``GET /_ping`` on the API socket answers OK (a plain socket: closed on every path)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as api:
            api.settimeout(5)
            try:
                api.connect(str(self.socket))
                api.sendall(b"GET /_ping HTTP/1.0\r\nHost: podman\r\n\r\n")
                answer = b""
                while chunk := api.recv(4096):
                    answer += chunk
            except OSError:
                return False
        return answer.startswith(b"HTTP/1.") and b" 200 " in answer.split(b"\r\n", 1)[0]

    # ----------------------------------------------------------------- stand-in images

    def standin_images(self, uv_version: str) -> StandinImages:
        """Build (or reuse) the local stand-ins for the registry's base images."""
        ca_bundle = Path(os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt")
        assert ca_bundle.is_file(), f"no CA bundle at {ca_bundle} (set SSL_CERT_FILE)"
        bundle = ca_bundle.read_bytes()
        # Every input of every recipe: a change of any gives new tags, so no stale stand-in is used.
        digest = hashlib.sha256(bundle)
        for part in (DEBIAN_MIRROR, DEBIAN_SUITE, *DEBOOTSTRAP_OPTIONS, *IMPORT_CHANGES):
            digest.update(part.encode() + b"\0")
        for part in (REDIS_CONTAINERFILE, REDIS_ENTRYPOINT, uv_version, UV_WHEEL_SHA256.get(uv_version, "")):
            digest.update(part.encode() + b"\0")
        stamp = digest.hexdigest()[:12]
        python = f"localhost/arena-standin/python:{DEBIAN_SUITE}-{stamp}"
        if not self.image_exists(python):
            self._build_python(python, bundle)
        uv = f"localhost/arena-standin/uv:{uv_version}-{stamp}"
        if not self.image_exists(uv):
            self._build_uv(uv, uv_version)
        redis = f"localhost/arena-standin/redis:{DEBIAN_SUITE}-{stamp}"
        if not self.image_exists(redis):
            self._build_redis(redis, python)
        return StandinImages(python=python, uv=uv, redis=redis)

    def _build_python(self, name: str, ca_bundle: bytes) -> None:
        # Under /var/tmp: a root file system with device nodes, not on a tmpfs.
        with tempfile.TemporaryDirectory(prefix="arena-rootfs-", dir="/var/tmp") as scratch:
            rootfs = Path(scratch) / "rootfs"
            try:
                _run(
                    ["debootstrap", *DEBOOTSTRAP_OPTIONS, DEBIAN_SUITE, str(rootfs), DEBIAN_MIRROR],
                    env={"PATH": os.environ.get("PATH", ""), "LC_ALL": "C"},
                    timeout=DEBOOTSTRAP_TIMEOUT_S,
                    what="debootstrap",
                )
            finally:
                # A debootstrap killed by the timeout leaves its /proc and /sys mounts inside.
                _unmount_below(rootfs)
            for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for entry in (rootfs / cache).glob("*"):
                    if entry.is_file():
                        entry.unlink()
            target = rootfs / HOST_CA_BUNDLE_IN_IMAGE.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(ca_bundle)
            archive = Path(scratch) / "rootfs.tar"
            subprocess.run(
                ["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(archive), "."],
                check=True,
                timeout=600,
            )
            changes = [arg for change in IMPORT_CHANGES for arg in ("--change", change)]
            with archive.open("rb") as stdin:
                _run(
                    ["podman", "import", *changes, "-", name],
                    env=self.env,
                    timeout=600,
                    what="podman import (the bookworm root file system)",
                    stdin=stdin,
                )

    def _build_uv(self, name: str, version: str) -> None:
        sha256 = UV_WHEEL_SHA256.get(version)
        assert sha256, f"no pinned hash for uv {version}'s wheel: add it to UV_WHEEL_SHA256"
        with tempfile.TemporaryDirectory(prefix="arena-uv-") as scratch:
            work = Path(scratch)
            requirement = work / "uv.txt"
            requirement.write_text(f"uv=={version} --hash=sha256:{sha256}\n")
            _run(
                [
                    str(self.tools_bin.parent / "venv" / "bin" / "python"),
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--no-deps",
                    "--only-binary",
                    ":all:",
                    "--platform",
                    "manylinux_2_17_x86_64",
                    "--python-version",
                    "3.11",
                    "--require-hashes",
                    "-r",
                    str(requirement),
                    "-d",
                    str(work),
                ],
                env=dict(os.environ),
                timeout=600,
                what=f"pip download uv=={version}",
            )
            (wheel,) = work.glob(f"uv-{version}-*.whl")
            image = work / "image"
            image.mkdir()
            with zipfile.ZipFile(wheel) as wheel_zip:
                for binary in ("uv", "uvx"):
                    target = image / binary
                    target.write_bytes(wheel_zip.read(f"uv-{version}.data/scripts/{binary}"))
                    target.chmod(0o755)
            archive = work / "uv.tar"
            subprocess.run(
                ["tar", "-C", str(image), "-cf", str(archive), "uv", "uvx"], check=True, timeout=300
            )
            with archive.open("rb") as stdin:
                _run(
                    ["podman", "import", "-", name],
                    env=self.env,
                    timeout=300,
                    what="podman import (uv)",
                    stdin=stdin,
                )

    def _build_redis(self, name: str, base: str) -> None:
        with tempfile.TemporaryDirectory(prefix="arena-redis-") as scratch:
            context = Path(scratch)
            (context / "Containerfile").write_text(REDIS_CONTAINERFILE.format(base=base))
            (context / "entrypoint.sh").write_text(REDIS_ENTRYPOINT)
            _run(
                ["podman", "build", "--format", "docker", "--tag", name, str(context)],
                env=self.env,
                timeout=BUILD_TIMEOUT_S,
                what="podman build (the redis stand-in)",
            )


class HealthcheckDriver:
    """Runs the healthchecks of a Compose project's containers, as the engine's timers would.

    A container's check runs every two seconds until it is healthy (so that ``depends_on`` and
    ``up --wait`` go on without delay), then on its own interval from the Compose file, so that
    ``retries`` failures in a row take as long as under the engine. Unexpected errors of the
    driver itself are kept in :attr:`errors` (the test fails on them); a podman command that
    fails or times out is tried again on the next round.
    """

    STARTING_INTERVAL_S = 2.0

    def __init__(self, engine: ContainerEngine, project: str) -> None:
        self.engine = engine
        self.project = project
        self.errors: list[str] = []
        self._due: dict[str, float] = {}
        self._intervals: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="healthchecks", daemon=True)

    def __enter__(self) -> HealthcheckDriver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _containers(self) -> dict[str, str]:
        """The running containers that have a healthcheck, with their health."""
        listing = self.engine.podman(
            "ps",
            "--filter",
            f"label=com.docker.compose.project={self.project}",
            "--format",
            "{{.ID}} {{.Status}}",
        )
        # "Up 3 seconds ago (starting)", "(healthy)", "(unhealthy)"; none without a healthcheck.
        return {
            line.split()[0]: line.rsplit("(", 1)[1].rstrip(")")
            for line in listing.splitlines()
            if line.rstrip().endswith(")")
        }

    def _interval_s(self, container: str) -> float:
        if container not in self._intervals:
            (inspected,) = json.loads(self.engine.podman("inspect", container))
            interval_ns = int((inspected["Config"].get("Healthcheck") or {}).get("Interval") or 30e9)
            self._intervals[container] = interval_ns / 1e9
        return self._intervals[container]

    def _round(self) -> None:
        for container, health in self._containers().items():
            if self._stop.is_set() or time.monotonic() < self._due.get(container, 0.0):
                continue
            self.engine.podman_status("healthcheck", "run", container, timeout=30)
            wait = self._interval_s(container) if health == "healthy" else self.STARTING_INTERVAL_S
            self._due[container] = time.monotonic() + wait

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._round()
            except (AssertionError, subprocess.SubprocessError, OSError):
                pass  # podman failed or timed out: the next round tries again
            except Exception as exc:  # kept for the test to report, never lost
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self._stop.wait(0.5)
