"""The kubelet pod-resources reader against a real gRPC server on a unix socket, answering
`v1.PodResourcesLister/List` with protobuf bytes encoded here field by field from the
kubelet's api.proto. It is not a live kubelet (none runs here): what it shows is that the
call, the wire decoding and the UUID -> GPU matching work; docs/snapshots.md says so."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc  # the kubernetes extra, in [dev]: a missing grpcio fails these tests
import pytest

from peerwatch.probes.agent.job_mapping import with_jobs
from peerwatch.probes.agent.pod_resources import LIST_METHOD, decode_list_response, read_pod_jobs
from peerwatch.probes.report import JobSource
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import build_report


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _bytes(number: int, value: bytes) -> bytes:
    return _key(number, 2) + _varint(len(value)) + value


def _str(number: int, value: str) -> bytes:
    return _bytes(number, value.encode())


def pod(namespace: str, name: str, devices: list[tuple[str, list[str]]]) -> bytes:
    devs = b"".join(_bytes(2, _str(1, res) + b"".join(_str(2, d) for d in ids)
                           + _bytes(3, b""))  # an empty TopologyInfo, as kubelets send
                    for res, ids in devices)
    container = _str(1, "main") + devs + _key(3, 0) + _varint(7)  # cpu_ids: a varint field
    return _bytes(1, _str(1, name) + _str(2, namespace) + _bytes(3, container))


@pytest.fixture
def kubelet(tmp_path: Path) -> Iterator[tuple[Path, list[bytes]]]:
    """A gRPC server on a unix socket; the test puts the List answer in `answer[0]`."""
    socket = tmp_path / "kubelet.sock"
    answer = [b""]
    service, method = LIST_METHOD.strip("/").split("/")
    rpc = grpc.unary_unary_rpc_method_handler(lambda request, context: answer[0],
                                              request_deserializer=lambda b: b,
                                              response_serializer=lambda b: b)
    handler = grpc.method_handlers_generic_handler(service, {method: rpc})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    yield socket, answer
    server.stop(grace=None)


def test_pods_holding_gpus_become_jobs(kubelet: tuple[Path, list[bytes]]) -> None:
    socket, answer = kubelet
    report = build_report(SimulatedFabric("hgx8", seed=2, hostname="k8s-node-1"))
    uuids = [g.uuid for g in report.inventory.gpus]
    answer[0] = (pod("train", "llama-0", [("nvidia.com/gpu", [uuids[0], uuids[1]])])
                 + pod("kube-system", "dns", [("example.com/nic", ["eth0"])])
                 + pod("infer", "svc-7", [("nvidia.com/gpu", ["3", "GPU-not-here"])]))
    jobs, warnings = read_pod_jobs(report.inventory.gpus, socket)
    assert [(j.gpu, j.job, j.source) for j in jobs] == [
        (0, "train:llama-0", JobSource.KUBERNETES), (1, "train:llama-0", JobSource.KUBERNETES),
        (3, "infer:svc-7", JobSource.KUBERNETES)]
    assert [w.message for w in warnings] == [
        "device 'GPU-not-here' of infer:svc-7 is not a GPU of this host"]
    merged = with_jobs(report, None, socket)
    assert [j.job for j in merged.jobs] == ["train:llama-0", "train:llama-0", "infer:svc-7"]


def test_no_socket_claims_nothing(tmp_path: Path) -> None:
    report = build_report(SimulatedFabric("hgx8", seed=2))
    assert read_pod_jobs(report.inventory.gpus, tmp_path / "none.sock") == ([], [])


def test_a_kubelet_that_fails_is_a_warning_not_a_lost_report(
        kubelet: tuple[Path, list[bytes]]) -> None:
    socket, answer = kubelet
    answer[0] = b"\x0a\xff\xff"  # a length past the end of the message
    report = build_report(SimulatedFabric("hgx8", seed=2))
    jobs, [warning] = read_pod_jobs(report.inventory.gpus, socket)
    assert jobs == [] and "List failed" in warning.message


def test_decoding_skips_fields_it_does_not_read() -> None:
    body = pod("a", "b", [("nvidia.com/gpu", ["GPU-1"])]) + _key(9, 5) + b"\0\0\0\0"
    [found] = decode_list_response(body)
    assert (found.namespace, found.pod, found.device_ids) == ("a", "b", ("GPU-1",))
