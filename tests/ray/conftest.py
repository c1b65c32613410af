"""A two-node Ray cluster on this machine (a head and a worker node, one CPU each) for the Ray backend tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PROBLEMS

ray = pytest.importorskip("ray", reason="the Ray extra is not installed (scripts/setup.sh --test installs it)")


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[object]:
    """Head + worker node as separate raylets (own processes, own node ids); torn down with every process."""
    from ray.cluster_utils import Cluster

    from aka_tui.executors.ray_cluster import wait_for_nodes

    ray.shutdown()
    # Ray puts the driver's working directory on the workers' sys.path; away from the checkout, a worker
    # can import aka_tui only from the package the executor ships (as on a real remote node).
    previous = os.getcwd()
    driver_dir = tempfile.mkdtemp(prefix="aka-ray-driver-")
    os.chdir(driver_dir)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
        assert wait_for_nodes(2) == 2, "the worker node did not join"
        ray.shutdown()  # the executor under test makes its own connection
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        os.chdir(previous)
        shutil.rmtree(driver_dir, ignore_errors=True)


@pytest.fixture
def candidates(tmp_path: Path) -> Path:
    """Three candidates: two correct kernels and one wrong one (its failures must match too)."""
    folder = tmp_path / "candidates"
    folder.mkdir()
    shutil.copy(PROBLEMS / "rms_norm/solutions/correct/triton_rms_norm.py", folder / "rms_norm.py")
    shutil.copy(PROBLEMS / "layer_norm/solutions/correct/triton_layer_norm.py", folder / "layer_norm.py")
    shutil.copy(PROBLEMS / "silu_and_mul/solutions/wrong/triton_silu_swapped_halves.py", folder / "silu_and_mul.py")
    return folder
