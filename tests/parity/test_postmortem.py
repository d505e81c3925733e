"""Post-mortem of a training step with the real LLaMA-Factory trainer: the rebuilt batch of step N is the batch
the trainer fed at step N (checked against a forward hook on the real run, across epochs and a short last
accumulation step), and `parity postmortem` finds a run's injected grad_norm spike, rebuilds that step and
compares the model on it, forward and backward."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hipwizard.cli import main
from hipwizard.parity.capture.step_batch import locate, read_inputs
from hipwizard.train.demo import write_demo_run_dir
from tests.train.helpers import LF_ENV
from tests.train.test_alarms import launch_spiked_demo

TRUTH = '''
import json, sys, tempfile
from ruamel.yaml import YAML
from transformers import TrainerCallback
from llamafactory.train.tuner import run_exp
cfg = YAML(typ="safe").load(open(sys.argv[1]))
seen = []
class Rec(TrainerCallback):
    def on_train_begin(self, args, state, control, model=None, **kw):
        def hook(mod, a, k):
            if mod.training:
                seen.append([[t for t, m in zip(r, mk) if m] for r, mk in
                             zip(k["input_ids"].tolist(), k["attention_mask"].tolist())])
        model.register_forward_pre_hook(hook, with_kwargs=True)
with tempfile.TemporaryDirectory() as d:
    run_exp(args={**cfg, "output_dir": d}, callbacks=[Rec()])
json.dump(seen, open(sys.argv[2], "w"))
'''


def test_locate_follows_the_trainers_chunking():
    # 5 micro-batches an epoch, 2 per step: steps 1-3 (the 3rd has 1), then the next epoch
    assert [locate(s, 5, 2) for s in range(1, 8)] == [(0, 0, 2), (0, 2, 2), (0, 4, 1), (1, 0, 2), (1, 2, 2),
                                                       (1, 4, 1), (2, 0, 2)]
    with pytest.raises(ValueError):
        locate(0, 5, 2)


@pytest.mark.slow
def test_rebuilt_batches_are_the_ones_the_trainer_fed(tmp_path, demo_assets):
    run = write_demo_run_dir(tmp_path / "runs", demo_assets.root, max_steps=7)
    cfg = (run / "config.yaml").read_text()
    for key, value in (("max_samples", "10"), ("gradient_accumulation_steps", "2"), ("num_train_epochs", "3.0")):
        lines = [ln for ln in cfg.splitlines() if not ln.startswith(f"{key}:")]
        cfg = "\n".join(lines + [f"{key}: {value}"]) + "\n"
    (run / "config.yaml").write_text(cfg)
    env = {**os.environ, **LF_ENV}
    (tmp_path / "truth.py").write_text(TRUTH)
    subprocess.run([sys.executable, str(tmp_path / "truth.py"), str(run / "config.yaml"), str(tmp_path / "t.json")],
                   check=True, env=env, capture_output=True, cwd=run)
    fed = json.loads((tmp_path / "t.json").read_text())  # one entry per micro-batch, in training order
    assert len(fed) == 12  # epochs of 5 micro-batches: 2+2+1, 2+2+1, 2
    for step, micro in ((3, [4]), (7, [10, 11])):
        out = tmp_path / f"b{step}.safetensors"
        done = subprocess.run([sys.executable, "-m", "hipwizard.parity.capture.step_batch", str(run), "--step", str(step),
                               "--out", str(out)], env=env, capture_output=True, text=True, cwd=run)
        assert done.returncode == 0, done.stderr[-2000:]
        t = read_inputs(out)
        rows = [[x for x, m in zip(r, mk, strict=True) if m] for r, mk in zip(t["input_ids"].tolist(), t["attention_mask"].tolist(), strict=True)]
        assert rows == [row for i in micro for row in fed[i]], step
    assert not any((run / "output").glob("*"))  # the run folder is not touched


@pytest.mark.slow
def test_postmortem_finds_the_spike_rebuilds_its_batch_and_compares_forward_and_backward(tmp_path, demo_assets,
                                                                                        capsys, monkeypatch):
    from hipwizard.cli.train_run import follow

    launched, ws = launch_spiked_demo(tmp_path, demo_assets, max_steps=7, save_steps=2)
    assert follow(launched.run_dir, poll_s=0.5) == 0
    capsys.readouterr()
    for key, value in LF_ENV.items():
        monkeypatch.setenv(key, value)
    rc = main(["parity", "postmortem", str(launched.run_dir), "--device", "cpu", "--workspace", str(ws.root),
               "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["batch_meta"]["step"] == 5
    # step 5 trained with the weights after step 4: the run's checkpoint-4 adapter, loaded on the base model
    meta = data["batch_meta"]
    assert meta["checkpoint_step"] == 4 and Path(meta["adapter"]).name == "checkpoint-4", meta
    assert "exactly the weights it trained with" in meta["weights"]
    comp = data["comparison"]
    assert comp["verdict"] == "pass" and comp["backward"] is not None
    assert comp["triangle_verdict"] == "pass"  # judged against this CPU's own error in the run's dtype
    grads = [layer["name"] for layer in comp["backward"]["layers"]]
    assert any(".lora_A." in name for name in grads) and any(".lora_B." in name for name in grads), grads
    assert comp["reference"]["batch"] == sum(data["batch_meta"]["micro_batches"])  # the step's sequences
    saved = json.loads((ws.state_dir / "parity.json").read_text())["comparisons"][-1]
    assert saved["label"] == f"post-mortem {Path(launched.run_dir).name} step 5 · checkpoint-4"
    # bad input: one line, exit 2
    assert main(["parity", "postmortem", str(tmp_path / "nope"), "--workspace", str(ws.root)]) == 2
    assert main(["parity", "postmortem", str(launched.run_dir), "--step", "99", "--device", "cpu",
                 "--workspace", str(ws.root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no such run folder" in err[0] and "past the run's last step (7)" in err[1]


TRUTH_DDP = TRUTH.replace('json.dump(seen, open(sys.argv[2], "w"))',
                          'import os\njson.dump(seen, open(sys.argv[2] + "." + os.environ["RANK"], "w"))')


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HIPWIZARD_MULTIPROC") != "1",
                    reason="a real two-rank DDP run on CPU: ~90 s; set HIPWIZARD_MULTIPROC=1")
def test_rebuilt_batches_of_each_rank_are_the_ones_that_rank_was_fed(tmp_path, demo_assets):
    """A real DDP run of two ranks (torchrun + gloo on CPU), 11 samples, accumulation 2, three epochs: each rank's
    rebuilt step batches are the rows that rank's trainer fed, including an epoch's short last step and the
    even-batches filling of the uneven last round."""
    import socket

    run = write_demo_run_dir(tmp_path / "runs", demo_assets.root, max_steps=6)  # three epochs of two steps
    cfg = (run / "config.yaml").read_text()
    for key, value in (("max_samples", "11"), ("gradient_accumulation_steps", "2"), ("num_train_epochs", "3.0")):
        lines = [ln for ln in cfg.splitlines() if not ln.startswith(f"{key}:")]
        cfg = "\n".join(lines + [f"{key}: {value}"]) + "\n"
    (run / "config.yaml").write_text(cfg)
    env = {**os.environ, **LF_ENV, "CUDA_VISIBLE_DEVICES": ""}
    (tmp_path / "truth.py").write_text(TRUTH_DDP)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                           str(port), str(tmp_path / "truth.py"), str(run / "config.yaml"), str(tmp_path / "t.json")],
                          env=env, capture_output=True, text=True, cwd=run)
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in (0, 1):
        fed = json.loads((tmp_path / f"t.json.{rank}").read_text())  # this rank's micro-batches, in order
        per_epoch = len(fed) // 3 if len(fed) % 3 == 0 else None
        assert per_epoch, len(fed)
        steps_per_epoch = -(-per_epoch // 2)
        for step in (steps_per_epoch, steps_per_epoch + 1, 2 * steps_per_epoch):  # a short last step, next epoch
            epoch, update = divmod(step - 1, steps_per_epoch)
            first = epoch * per_epoch + update * 2
            micro = list(range(first, min(first + 2, (epoch + 1) * per_epoch)))
            out = tmp_path / f"r{rank}-s{step}.safetensors"
            got = subprocess.run([sys.executable, "-m", "hipwizard.parity.capture.step_batch", str(run), "--step", str(step),
                                  "--out", str(out), "--world-size", "2", "--rank", str(rank)],
                                 env=env, capture_output=True, text=True, cwd=run)
            assert got.returncode == 0, got.stderr[-2000:]
            t = read_inputs(out)
            rows = [[x for x, m in zip(r, mk, strict=True) if m]
                    for r, mk in zip(t["input_ids"].tolist(), t["attention_mask"].tolist(), strict=True)]
            assert rows == [row for i in micro for row in fed[i]], (rank, step)


def test_the_world_size_comes_from_the_run_and_a_rank_outside_it_is_one_line(tmp_path, capsys):
    from hipwizard.parity.postmortem import world_size

    run = tmp_path / "run"
    (run / "base").mkdir(parents=True)
    (run / "config.yaml").write_text("model_name_or_path: base\nbf16: true\n")
    assert world_size(run) == 1
    (run / "run.json").write_text(json.dumps({"env_delta": {"NPROC_PER_NODE": "4", "NNODES": "2"}}))
    assert world_size(run) == 8
    (run / "train.log").write_text("[INFO] Process rank: 1, world size: 2, device: cpu\n")
    assert world_size(run) == 2  # what the ranks printed wins
    assert main(["parity", "postmortem", str(run), "--step", "1", "--rank", "2", "--workspace", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--rank 2: the run had 2 process(es) (ranks 0-1)" in err[0], err
