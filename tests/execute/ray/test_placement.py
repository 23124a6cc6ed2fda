"""Where a campaign may go when its Ray node is gone: its own machine resumes it, another node of
the same class takes it over as a new campaign, any other node is refused; a campaign run in blocks
takes any node of its class (no cluster needed)."""

from __future__ import annotations

from reportgen.capture.fingerprint import class_id, fingerprint_id
from reportgen.execute.ray_claim import placement


def fp(host: str, uuid: str, *, gpu: str = "NVIDIA H200", driver: str = "580.159.04") -> dict:
    return {
        "hostname": host,
        "cpu_model": "AMD EPYC 9654",
        "cpu_count": 16,
        "mem_total_bytes": 128 * 2**30,
        "gpus": [{"index": 0, "name": gpu, "uuid": uuid}],
        "driver": driver,
        "image_digest": "sha256:abc",
    }


def probe(f: dict) -> dict:
    return {"fingerprint": f, "fingerprint_id": fingerprint_id(f)}


def test_class_id_ignores_the_host_and_gpu_uuids_not_the_hardware() -> None:
    a, b = fp("node-a", "GPU-1"), fp("node-b", "GPU-2")
    assert fingerprint_id(a) != fingerprint_id(b) and class_id(a) == class_id(b)
    assert class_id(fp("node-a", "GPU-1", gpu="NVIDIA H100")) != class_id(a)
    assert class_id(fp("node-a", "GPU-1", driver="575.0")) != class_id(a)


def test_placement_of_a_campaign() -> None:
    a, b, other = fp("node-a", "GPU-1"), fp("node-b", "GPU-2"), fp("node-c", "GPU-3", gpu="NVIDIA H100")
    campaign = {"fingerprint": a, "fingerprint_id": fingerprint_id(a)}
    assert placement(None, probe(b), campaign_node_gone=False) == (None, False)  # a new campaign: any node
    assert placement(campaign, probe(a), campaign_node_gone=False) == (None, False)  # its own machine: resume
    assert placement(campaign, probe(b), campaign_node_gone=True) == (None, True)  # its node died: move
    why, moved = placement(campaign, probe(b), campaign_node_gone=False)
    assert not moved and why is not None and "still alive" in why  # wait for its own node instead
    why, moved = placement(campaign, probe(other), campaign_node_gone=True)
    assert not moved and why is not None and "not of the campaign's class" in why


def test_a_campaign_in_blocks_takes_any_node_of_its_class_and_never_moves() -> None:
    a, b, other = fp("node-a", "GPU-1"), fp("node-b", "GPU-2"), fp("node-c", "GPU-3", gpu="NVIDIA H100")
    campaign = {"fingerprint": a, "fingerprint_id": fingerprint_id(a)}
    for gone in (False, True):  # whether or not its first node is still there
        assert placement(campaign, probe(b), campaign_node_gone=gone, blocks=True) == (None, False)
        why, moved = placement(campaign, probe(other), campaign_node_gone=gone, blocks=True)
        assert not moved and why is not None and "not of the campaign's class" in why
