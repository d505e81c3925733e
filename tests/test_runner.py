import sys

from hipwizard.runner import SubprocessRunner


def test_missing_tool_is_a_status_not_an_exception():
    res = SubprocessRunner(extra_dirs=()).run(["definitely-not-a-tool-xyz", "--version"])
    assert res.status == "missing"
    assert "not installed" in res.explain()


def test_hanging_tool_times_out_and_its_children_die():
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    res = SubprocessRunner().run([sys.executable, "-c", code], timeout=1.0)
    assert res.status == "timeout"
    assert res.duration_s < 10
    assert "did not answer" in res.explain()


def test_exit_code_and_output_are_captured():
    res = SubprocessRunner().run([sys.executable, "-c", "import sys; print('out'); print('bad', file=sys.stderr); sys.exit(3)"])
    assert res.status == "failed" and res.returncode == 3
    assert res.stdout.strip() == "out" and res.stderr.strip() == "bad"
    assert "exited with code 3: bad" in res.explain()
