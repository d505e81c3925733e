"""The CUDA library table: every row sourced, the rows the port needs present, lookups, bad rows refused."""

from __future__ import annotations

import pytest

from hipwizard.port.buildfiles.libraries import library_table, load_table


def test_every_row_is_sourced_and_names_its_counterpart_or_none():
    libs = library_table().libraries
    assert len(libs) >= 16
    for lib in libs:
        assert lib.source.startswith("https://"), lib.name
        if lib.hip is None:
            assert lib.note, f"{lib.name}: 'none' needs a note saying what to do instead"
        else:
            assert lib.hip.rocm_package, f"{lib.name}: which package installs it"
        if lib.hip is not None and not lib.hip.drop_in:
            assert "not a drop-in" in lib.note or "other names" in lib.note, lib.name


@pytest.mark.parametrize("link, hip_links, target", [
    ("cudart", ("amdhip64",), "hip::host"), ("cuda", ("amdhip64",), "hip::host"),
    ("cublas", ("hipblas",), "roc::hipblas"), ("cublasLt", ("hipblaslt",), "roc::hipblaslt"),
    ("cufft", ("hipfft",), "hip::hipfft"), ("curand", ("hiprand",), "hip::hiprand"),
    ("cusparse", ("hipsparse",), "roc::hipsparse"), ("cusolver", ("hipsolver",), "roc::hipsolver"),
    ("nccl", ("rccl",), "roc::rccl"),
])
def test_drop_in_counterparts(link, hip_links, target):
    lib = library_table().by_link(link)
    assert lib is not None and lib.replaceable
    assert lib.hip.links == hip_links and target in lib.hip.cmake_targets


@pytest.mark.parametrize("name", ["NVML", "cuDNN", "NVTX"])
def test_counterparts_that_are_not_drop_ins(name):
    lib = library_table().by_name(name)
    assert lib is not None and lib.hip is not None and not lib.replaceable


def test_cutlass_has_none():
    lib = library_table().by_name("CUTLASS")
    assert lib is not None and lib.hip is None and "Composable Kernel" in lib.advice()


def test_header_only_and_runtime_rows():
    table = library_table()
    assert table.by_cmake_target("CCCL::CUB").hip.cmake_targets == ("hip::hipcub",)
    assert table.by_cmake_target("CCCL::Thrust").hip.cmake_targets == ("roc::rocthrust",)
    assert table.by_name("cooperative groups").hip.headers == ("hip/hip_cooperative_groups.h",)
    assert table.by_findcuda_var("CUDA_CUBLAS_LIBRARIES").name == "cuBLAS"
    assert "libhipblas-dev (Debian)" in table.by_link("cublas").hip.install


def test_a_malformed_table_is_refused(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("- name: x\n  cuda: {links: cublas}\n  hip: none\n  source: https://example.org\n")
    with pytest.raises(ValueError, match="x cuda.links"):
        load_table(bad)
    bad.write_text("- name: y\n  hip: none\n")
    with pytest.raises(ValueError, match="row 1"):
        load_table(bad)
