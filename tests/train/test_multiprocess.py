"""Several processes per run and several "nodes" on one host, through hipwizard's real launcher.

Fast tests check the environment each node's launch gets and the stop/resume logic with real process
trees; the slow ones run the real ``llamafactory-cli train`` (LoRA on the tiny demo model) with torchrun
and gloo on CPU: two ranks in one run, and two one-rank "nodes" that rendezvous over loopback.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from hipwizard.cli import main as cli_main
from hipwizard.errors import UserError
from hipwizard.train.demo import demo_values
from hipwizard.train.run.history import RunHistory
from hipwizard.train.run.launcher import LaunchOptions, build_environment, launch
from hipwizard.train.run.manifest import load_manifest, read_exit
from hipwizard.train.run.runs import run_info
from hipwizard.train.run.stop import STOP_MARK, run_processes, stop_run, trainer_processes
from hipwizard.train.run.watch import RunWatch

from .helpers import LF_ENV, pids_alive, run_dir_with, script, wait_for

OUT = Path("/tmp/out")
SELECTOR = {"rocm": "HIP_VISIBLE_DEVICES", "cuda": "CUDA_VISIBLE_DEVICES"}


# --- the environment each process of a multi-process / multi-node run gets -----------------------
@pytest.mark.parametrize("platform", ["cpu", "cuda", "rocm"])
def test_more_than_one_process_per_node_forces_torchrun(platform):
    # llamafactory-cli counts accelerators itself and counts none on CPU: without FORCE_TORCHRUN a
    # NPROC_PER_NODE=2 run trains in one process (world size 1) — seen with llamafactory 0.9.5 here.
    env, _ = build_environment({}, LaunchOptions(nproc_per_node=2), platform, {}, OUT)
    assert env["NPROC_PER_NODE"] == "2" and env["FORCE_TORCHRUN"] == "1"
    env, _ = build_environment({}, LaunchOptions(nproc_per_node=1), platform, {}, OUT)
    assert env["NPROC_PER_NODE"] == "1" and "FORCE_TORCHRUN" not in env


@pytest.mark.parametrize("platform", ["cuda", "rocm"])
def test_two_nodes_on_one_host_split_the_gpus_through_the_platform_selector(platform):
    base = {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "ROCR_VISIBLE_DEVICES": "0,1,2,3"}
    envs = []
    for rank, gpus in ((0, [0, 1]), (1, [2, 3])):
        opts = LaunchOptions(gpus=gpus, nnodes=2, node_rank=rank, master_addr="127.0.0.1", master_port=29511)
        env, removed = build_environment({}, opts, platform, base, OUT)
        envs.append(env)
        assert (env["NNODES"], env["NODE_RANK"], env["MASTER_ADDR"], env["MASTER_PORT"]) == \
            ("2", str(rank), "127.0.0.1", "29511")
        assert env["NPROC_PER_NODE"] == "2" and env["FORCE_TORCHRUN"] == "1"
        other = "CUDA_VISIBLE_DEVICES" if platform == "rocm" else "HIP_VISIBLE_DEVICES"
        assert other not in env
        if platform == "rocm":  # one selector only: inherited ones would filter a second time
            assert sorted(removed) == ["CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"]
        else:
            assert removed == []
    assert [e[SELECTOR[platform]] for e in envs] == ["0,1", "2,3"]


def test_node_rank_must_be_inside_the_node_count():
    for rank in (2, -1):
        with pytest.raises(UserError, match="outside 0..1"):
            build_environment({}, LaunchOptions(nnodes=2, node_rank=rank, master_addr="127.0.0.1",
                                                master_port=29500), "cpu", {}, OUT)


ENV_DUMP = "env | grep -E '^(NNODES|NODE_RANK|MASTER_ADDR|MASTER_PORT|NPROC_PER_NODE|FORCE_TORCHRUN|" \
           "CUDA_VISIBLE_DEVICES)=' | sort > seen_env.txt\n"


def test_cli_node_flags_reach_the_launched_process(tmp_path, capsys, monkeypatch):
    """``hipwizard train run DIR --nnodes 2 --node-rank 1 ...``: the real process sees exactly that."""
    from hipwizard.train.run import launcher
    d = run_dir_with(tmp_path)
    fake = script(tmp_path, ENV_DUMP)
    monkeypatch.setattr(launcher, "find_llamafactory_cli", lambda explicit=None: fake)
    rc = cli_main(["train", "run", str(d), "--detach", "--platform", "cpu", "--nproc", "1", "--nnodes", "2",
                   "--node-rank", "1", "--master-addr", "127.0.0.1", "--master-port", "29533",
                   "--workspace", str(tmp_path / "ws")])
    assert rc == 0 and "launched" in capsys.readouterr().out
    wait_for(lambda: read_exit(d), 20)
    seen = dict(line.split("=", 1) for line in (d / "seen_env.txt").read_text().splitlines())
    assert seen == {"CUDA_VISIBLE_DEVICES": "", "FORCE_TORCHRUN": "1", "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": "29533", "NNODES": "2", "NODE_RANK": "1", "NPROC_PER_NODE": "1"}
    assert load_manifest(d).env_delta["NODE_RANK"] == "1"


# --- stop and resume logic with several ranks -------------------------------------------------------
# torchrun's agent after its workers ended: it waits (exit barrier, up to 300 s) for the other nodes and
# ignores the graceful signal. Its worker ("llamafactory" in argv, a leaf) exits on SIGABRT.
AGENT = f"""{sys.executable} -c 'import time; time.sleep(300)' llamafactory-worker &
{sys.executable} -c 'import time; time.sleep(300)' llamafactory-worker &
trap '' ABRT
wait
sleep 300
"""


@pytest.mark.slow
def test_stop_does_not_wait_the_whole_grace_once_every_rank_has_exited(tmp_path):
    d = run_dir_with(tmp_path)
    m = launch(d, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, AGENT)))
    wait_for(lambda: len(trainer_processes(run_processes(m))) == 2, timeout=20)
    tree = set(run_processes(m))
    result = stop_run(m, grace_s=60, term_s=5)
    assert result.clean and pids_alive(tree) == []
    assert [s.split()[0] for s in result.steps] == ["SIGABRT", "SIGTERM"]
    assert "trainer pid" in result.steps[0] and result.steps[0].count(",") == 1  # both ranks got it
    assert result.elapsed_s < 20  # not the 60 s grace


def test_relaunch_after_a_stop_is_not_reported_as_stopped(tmp_path):
    d = run_dir_with(tmp_path)
    m = launch(d, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, "sleep 30\n")))
    assert stop_run(m, grace_s=0.2, term_s=2).clean and run_info(d).state == "stopped"
    launch(d, LaunchOptions(platform="cpu", llamafactory_cli=script(tmp_path, "exit 0\n", name="ok-cli")))
    assert not (d / STOP_MARK).exists()
    # exit.json is written by the supervisor just before it exits: wait for both
    wait_for(lambda: read_exit(d) and run_info(d).state != "running", 20)
    assert run_info(d).state == "finished"


def _rec(step, loss):
    return {"current_steps": step, "total_steps": 12, "loss": loss, "lr": 1e-3}


def test_history_of_a_resumed_run_replaces_the_steps_redone_after_the_checkpoint():
    h = RunHistory()
    h.add([_rec(s, 10.0 - s) for s in range(1, 9)])  # stopped at step 8, last checkpoint at 5
    h.add([_rec(s, 20.0 - s) for s in range(6, 10)])  # the resumed run redoes 6, 7, 8
    h.add([{"current_steps": 9, "total_steps": 12}])  # the final record repeats the last step, no loss
    assert [p.step for p in h.points] == list(range(1, 10))
    assert [s for s, _ in h.loss] == list(range(1, 10)) and h.loss[5] == (6, 14.0) and h.loss[4] == (5, 5.0)
    assert [s for s, _ in h.lr] == list(range(1, 10)) and h.progress == (9, 12)
    h.add([_rec(s, 30.0 - s) for s in range(9, 11)])  # stopped right after checkpoint 8: 9 comes again
    assert [p.step for p in h.points] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] and h.loss[8] == (9, 21.0)


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "train"


def test_failed_rank_cause_is_the_workers_error_not_the_launchers_wrapper():
    """Recorded here: node 1 of a two-node CPU run after node 0 was stopped alone."""
    from hipwizard.train.run.failure import diagnose

    text = (FIXTURES / "node1_peer_closed.log").read_text()
    assert text.rstrip().splitlines()[-1].startswith("subprocess.CalledProcessError")
    failure = diagnose(text, {}, 1)
    assert failure.line.startswith("RuntimeError: [") and "Connection closed by peer" in failure.line


# --- real llamafactory-cli, torchrun and gloo on CPU --------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_config(d: Path, assets, **overrides) -> None:
    cfg = demo_values(assets.root, max_steps=2000)
    # Resumable: checkpoints every 5 steps, and a relaunch continues from the last one.
    cfg.update(save_steps=5, overwrite_output_dir=False, **overrides)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))


def _last_checkpoint(d: Path) -> int:
    steps = [int(p.name.split("-")[1]) for p in (d / "output").glob("checkpoint-*")]
    assert steps, f"no checkpoint in {d / 'output'}"
    return max(steps)


def _watch_until(watches, n: int, timeout: float) -> None:
    def enough():
        for w in watches:
            w.poll()
        return all(len(w.history.points) >= n for w in watches)

    wait_for(enough, timeout=timeout, poll=0.3)


def _resume_to_end(dirs, options, extra: int = 3) -> list[RunWatch]:
    """Relaunch each run dir a few steps past its last checkpoint and wait for the end."""
    ckpts = [_last_checkpoint(d) for d in dirs]
    for d, opts, ckpt in zip(dirs, options, ckpts, strict=True):
        cfg = yaml.safe_load((d / "config.yaml").read_text())
        cfg["max_steps"] = ckpt + extra
        (d / "config.yaml").write_text(yaml.safe_dump(cfg))
        launch(d, opts)
    for d in dirs:
        wait_for(lambda d=d: run_info(d).state != "running", timeout=240, poll=0.5)
    watches = []
    for d, ckpt in zip(dirs, ckpts, strict=True):
        info = run_info(d)
        assert info.state == "finished", info.cause
        # transformers' own line, printed by every node (llamafactory's "Resuming ..." only by rank 0)
        assert f"Resuming training from checkpoint with epoch 0 and global step {ckpt}" in \
            (d / "train.log").read_text()
        w = RunWatch(d)
        w.attach()
        # one history: the steps before the checkpoint, then the resumed ones, no step twice
        assert [p.step for p in w.history.points] == list(range(1, ckpt + extra + 1))
        watches.append(w)
    return watches


REAL = "HIPWIZARD_MULTIPROC"  # the real runs below take 70-90 s each on 2 cores: opt in with =1


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get(REAL) != "1", reason="two real CPU ranks, stop, resume: ~70 s; set HIPWIZARD_MULTIPROC=1")
def test_real_two_rank_ddp_on_cpu_tail_stop_and_resume(tmp_path, demo_assets):
    """NPROC_PER_NODE=2 on CPU: torchrun + gloo, world size 2; stopped mid-run, nothing survives, resumed."""
    d = tmp_path / "ddp"
    _write_config(d, demo_assets)
    opts = LaunchOptions(platform="cpu", nproc_per_node=2, extra_env=LF_ENV)
    m = launch(d, opts)
    assert m.env_delta["FORCE_TORCHRUN"] == "1" and m.env_delta["NPROC_PER_NODE"] == "2"
    watch = RunWatch(d)
    watch.attach()
    _watch_until([watch], 7, timeout=180)
    log = (d / "train.log").read_text()
    assert re.search(r"Process rank: 0, world size: 2, device: cpu", log)
    assert re.search(r"Process rank: 1, world size: 2, device: cpu", log)
    assert "Total train batch size (w. parallel, distributed & accumulation) = 4" in log
    procs = run_processes(m)
    ranks = trainer_processes(procs)
    assert len(ranks) == 2  # the two workers; torchrun and the CLI wrapper are not trainers
    tree = set(procs)
    result = stop_run(m, grace_s=60, term_s=10)
    assert result.clean and pids_alive(tree) == [], result
    assert run_info(d).state == "stopped"
    # Resume with ONE process: with two, transformers 5.6 loads the optimizer state with
    # map_location=args.device, which is "cpu:0" for distributed CPU runs, and torch.load rejects it
    # ("don't know how to restore data location ... cpu:0") — an upstream CPU-only bug (on GPUs the
    # device is cuda:N). The LoRA checkpoint itself does not depend on the world size.
    _resume_to_end([d], [LaunchOptions(platform="cpu", nproc_per_node=1, extra_env=LF_ENV)])


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get(REAL) != "1",
                    reason="two one-rank 'nodes' on one host: ~60 s on 2 cores; set HIPWIZARD_MULTIPROC=1")
def test_real_two_nodes_on_one_host_rendezvous_and_stop_together(tmp_path, demo_assets):
    """Two launcher invocations, NNODES=2, NODE_RANK 0/1, loopback master: one run of world size 2."""
    port = _free_port()
    dirs, manifests = [], []
    for rank in (0, 1):
        d = tmp_path / f"node{rank}"
        # Separate run dirs stand for separate disks: each node saves its own checkpoints and writes its
        # own trainer_log.jsonl only with save_on_each_node (else only global rank 0 does).
        _write_config(d, demo_assets, save_on_each_node=True)
        o = LaunchOptions(platform="cpu", nproc_per_node=1, nnodes=2, node_rank=rank, master_addr="127.0.0.1",
                          master_port=port, extra_env=LF_ENV)
        manifests.append(launch(d, o))
        dirs.append(d)
    watches = [RunWatch(d) for d in dirs]
    for w in watches:
        w.attach()
    _watch_until(watches, 7, timeout=240)  # both tails show progress
    for rank, d in enumerate(dirs):
        assert f"Process rank: {rank}, world size: 2" in (d / "train.log").read_text()
    trees = [set(run_processes(m)) for m in manifests]
    assert trees and all(len(t) >= 4 for t in trees)  # supervisor, llamafactory-cli, torchrun, worker
    # Stopping one node alone makes the other fail (gloo: connection closed by peer): stop both at once.
    results = [None, None]
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, stop_run(manifests[i], grace_s=60,
                                                                                    term_s=10)))
               for i in range(2)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results and all(r.clean for r in results), results
    assert pids_alive(set().union(*trees)) == [] and time.monotonic() - start < 60
    assert [run_info(d).state for d in dirs] == ["stopped", "stopped"]
    # each node saved its checkpoints (resuming them at world size 2 on CPU hits the upstream bug above)
    assert dirs and all(_last_checkpoint(d) >= 5 for d in dirs)
