from __future__ import annotations

import pytest

from hipwizard.errors import UserError
from hipwizard.parity.compare.tolerances import (
    DTYPES,
    canonical_dtype,
    least_precise,
    load_profiles,
    parse_overrides,
    resolve,
)


def test_every_dtype_has_a_profile_with_a_reason_and_bars_loosen_with_precision():
    profiles = load_profiles()
    assert set(profiles) == set(DTYPES)
    assert profiles.values() and all(len(p.why) > 40 for p in profiles.values())
    order = ["fp64", "fp32", "fp16", "bf16"]
    bars = [profiles[d].rel_l2_max for d in order]
    assert bars == sorted(bars)
    assert profiles["bf16"].cosine_min == 0.999 and profiles["fp32"].rel_l2_max == 1e-5


def test_overrides_rename_the_tolerance_so_the_verdict_says_what_it_used():
    tol = resolve("bf16", parse_overrides(["rel_l2_max=0.05"]))
    assert tol.rel_l2_max == 0.05 and tol.name == "bf16+rel_l2_max=0.05"
    assert "rel L2 ≤ 0.05" in tol.describe()


@pytest.mark.parametrize("bad", ["nope=1", "rel_l2_max", "rel_l2_max=abc"])
def test_bad_overrides_are_user_errors(bad):
    with pytest.raises(UserError):
        parse_overrides([bad])


def test_dtype_names_and_least_precise():
    assert canonical_dtype("torch.bfloat16") == "bf16" and canonical_dtype("float") == "fp32"
    assert least_precise("fp64", "bf16") == "bf16" and least_precise("fp32", "fp16") == "fp16"
    with pytest.raises(UserError):
        canonical_dtype("int8")


def test_custom_tolerance_file_and_broken_one(tmp_path):
    good = tmp_path / "t.yaml"
    good.write_text("fp32: {cosine_min: 0.9, rel_l2_max: 0.1, rtol: 0.1, atol: 0.1, outside_max: 0.5, why: loose}\n")
    assert resolve("fp32", path=good).rel_l2_max == 0.1
    bad = tmp_path / "b.yaml"
    bad.write_text("fp32: {cosine_min: 0.9}\n")
    with pytest.raises(UserError, match="lacks"):
        resolve("fp32", path=bad)


def test_an_edited_tolerance_file_is_read_again(tmp_path):
    """Profiles are parsed once per version of the file; an edit (another size or time) is seen at once."""
    path = tmp_path / "tol.yaml"
    body = "bf16: {cosine_min: 0.99, rel_l2_max: %s, rtol: 0.05, atol: 0.01, outside_max: 0.02}\n"
    path.write_text(body % "0.03")
    assert resolve("bf16", path=path).rel_l2_max == 0.03
    assert resolve("bf16", path=path).rel_l2_max == 0.03  # from the parsed copy
    path.write_text(body % "0.045")
    assert resolve("bf16", path=path).rel_l2_max == 0.045
    path.unlink()
    with pytest.raises(UserError, match="does not exist"):
        resolve("bf16", path=path)
