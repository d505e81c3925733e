"""Process identity before any signal (issue 27): what ``stop`` would take as the run's, for run.json files
written by hand. Only the look-up functions are called here: nothing is ever signalled by these tests."""

from __future__ import annotations

import os

import psutil
import pytest

from hipwizard.train.run.manifest import RunManifest
from hipwizard.train.run.stop import group_is_ours, leader, run_processes


def manifest(tmp_path, **fields) -> RunManifest:
    base = dict(run_dir=str(tmp_path), name="r", command=[], argv=[], cwd=str(tmp_path), env_delta={},
                env_removed=[], pid=1, pgid=1, pid_create_time=0.0, started="", started_epoch=0.0, log="train.log",
                output_dir=str(tmp_path), platform="cpu", run_token="")
    return RunManifest(**{**base, **fields})


def test_init_with_its_true_create_time_is_not_a_run(tmp_path):
    """pid 1 and the boot time (a number anyone can read) without a marker: before, the create time was the
    only proof, and init's descendants — every process on the machine — were the run's to SIGTERM/SIGKILL."""
    born = psutil.Process(1).create_time()
    m = manifest(tmp_path, pid=1, pgid=1, pid_create_time=born)
    assert leader(m) is None
    assert run_processes(m) == {}
    assert not group_is_ours(m)


def test_own_process_with_its_create_time_but_no_marker_is_not_a_run(tmp_path):
    """This very test process, named with its exact create time and no marker, is not the run's."""
    me = psutil.Process(os.getpid())
    m = manifest(tmp_path, pid=me.pid, pgid=os.getpgid(me.pid), pid_create_time=me.create_time())
    assert leader(m) is None
    assert me.pid not in run_processes(m)


@pytest.mark.parametrize("number", [0, -1, True, 1])
def test_group_numbers_that_mean_someone_else_are_never_ours(tmp_path, number):
    """killpg(0) is the caller's own group, negatives are invalid, True is 1 to the kernel."""
    m = manifest(tmp_path, pid=number, pgid=number, pid_create_time=1.0, run_token="x")
    assert leader(m) is None and not group_is_ours(m) and run_processes(m) == {}
