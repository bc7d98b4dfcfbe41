"""Which pod holds each GPU on a Kubernetes node, from the kubelet's pod-resources socket.

The kubelet serves `v1.PodResourcesLister/List` over gRPC on a unix socket
(/var/lib/kubelet/pod-resources/kubelet.sock; the DaemonSet mounts the directory), the
source dcgm-exporter's pod mapping reads too. Each container's devices name the device
plugin's resource (`nvidia.com/gpu`) and its device ids: GPU UUIDs (or, with some plugin
configurations, indices), matched to this host's GPUs through the inventory.

The messages are a handful of strings and repeated fields, so they are decoded here from
the protobuf wire format (no generated code, no protobuf package); the gRPC client is the
optional `grpcio` (`pip install peerwatch[kubernetes]`). Without it, or without the socket,
nothing is claimed.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from peerwatch.probes.report import JOB_ID, MAX_JOBS_PER_GPU, GpuInfo, GpuJob, JobSource, ProbeError

KUBELET_SOCKET = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
LIST_METHOD = "/v1.PodResourcesLister/List"
GPU_RESOURCES = ("nvidia.com/gpu",)
TIMEOUT_S = 5.0


@dataclass(frozen=True)
class PodDevices:
    """One container's devices of one resource: who holds `device_ids`."""

    namespace: str
    pod: str
    resource: str
    device_ids: tuple[str, ...]


# --------------------------------------------------------------------------- protobuf


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated or overlong varint")
        b = buf[i]
        value |= (b & 0x7F) << shift
        i += 1
        if not b & 0x80:
            return value, i
        shift += 7


def fields(buf: bytes) -> Iterator[tuple[int, bytes | int]]:
    """(field number, value) of one message: bytes for length-delimited, int for varints;
    fixed-width fields are skipped (none of the fields read here is one)."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            yield number, value
        elif wire == 2:
            size, i = _varint(buf, i)
            if i + size > len(buf):
                raise ValueError("length-delimited field runs past the message")
            yield number, buf[i:i + size]
            i += size
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _strings(buf: bytes, number: int) -> list[str]:
    return [v.decode() for n, v in fields(buf) if n == number and isinstance(v, bytes)]


def _messages(buf: bytes, number: int) -> list[bytes]:
    return [v for n, v in fields(buf) if n == number and isinstance(v, bytes)]


def decode_list_response(buf: bytes) -> list[PodDevices]:
    """ListPodResourcesResponse{pod_resources=1: PodResources{name=1, namespace=2,
    containers=3: ContainerResources{devices=2: ContainerDevices{resource_name=1,
    device_ids=2}}}}."""
    out = []
    for pod in _messages(buf, 1):
        name, namespace = (_strings(pod, 1) or [""])[0], (_strings(pod, 2) or [""])[0]
        for container in _messages(pod, 3):
            for dev in _messages(container, 2):
                resource = (_strings(dev, 1) or [""])[0]
                out.append(PodDevices(namespace, name, resource, tuple(_strings(dev, 2))))
    return out


# --------------------------------------------------------------------------- gRPC


def list_pod_devices(socket: Path = KUBELET_SOCKET, timeout_s: float = TIMEOUT_S,
                     ) -> list[PodDevices]:
    """One List call to the kubelet. Raises OSError-like errors for the caller to report."""
    grpc = importlib.import_module("grpc")  # optional: the kubernetes extra
    with grpc.insecure_channel(f"unix://{socket}") as channel:
        call = channel.unary_unary(LIST_METHOD, request_serializer=lambda _: b"",
                                   response_deserializer=lambda b: b)
        return decode_list_response(call(None, timeout=timeout_s))


def pod_jobs(devices: list[PodDevices], gpus: list[GpuInfo]) -> tuple[list[GpuJob], list[str]]:
    """The GPU jobs ("namespace:pod") the devices name, and what could not be matched."""
    index = {g.uuid: g.index for g in gpus if g.uuid}
    index.update({str(g.index): g.index for g in gpus})
    jobs: dict[tuple[int, str], GpuJob] = {}
    unmatched: list[str] = []
    for d in devices:
        if d.resource not in GPU_RESOURCES:
            continue
        job = f"{d.namespace}:{d.pod}"
        if not JOB_ID.fullmatch(job):
            unmatched.append(f"pod {job[:80]!r} is not a usable job id")
            continue
        for dev in d.device_ids:
            gpu = index.get(dev)
            if gpu is None:
                unmatched.append(f"device {dev[:80]!r} of {job} is not a GPU of this host")
            elif sum(1 for g, _ in jobs if g == gpu) < MAX_JOBS_PER_GPU:
                jobs[(gpu, job)] = GpuJob(gpu=gpu, job=job, source=JobSource.KUBERNETES)
    return sorted(jobs.values(), key=lambda j: (j.gpu, j.job)), unmatched


def read_pod_jobs(gpus: list[GpuInfo], socket: Path = KUBELET_SOCKET,
                  ) -> tuple[list[GpuJob], list[ProbeError]]:
    """The pods holding this host's GPUs; nothing (and no warning) without a kubelet socket."""
    if not socket.exists():
        return [], []
    where = f"pod_resources {str(socket)[:180]}"
    try:
        devices = list_pod_devices(socket)
    except ModuleNotFoundError:
        return [], [ProbeError(where=where, message="the kubelet socket is there but grpcio "
                               "is not installed (pip install peerwatch[kubernetes])")]
    except Exception as exc:  # noqa: BLE001 - a kubelet problem must not cost the report
        return [], [ProbeError(where=where, message=f"List failed: {exc}"[:2000])]
    jobs, unmatched = pod_jobs(devices, gpus)
    return jobs, [ProbeError(where=where, message=m) for m in unmatched[:10]]
