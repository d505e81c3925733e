"""Step 3, parity: does the model compute the same thing on the MI300X as on the reference machine?

The front door. Faces (``hipwizard.cli``, ``hipwizard.tui``) and ``hipwizard.report`` import parity only from
here and from ``hipwizard.parity.state`` (tests/test_architecture.py checks it).

- Services, one per user action (``services``): ``run_capture`` (run a model or harness once, write the
  capture file), ``run_comparison`` (a reference against a candidate in one of three ways, recorded in the
  workspace), ``curves`` / ``recorded_curves`` (two training runs' loss curves), ``check_output`` (an output
  path refused before any model runs). In a subprocess (``worker``, the one job protocol of
  ``hipwizard.jobs``; the UI process never imports torch): ``compare_in_worker`` (a ``WorkerRun``),
  ``run_postmortem``; ``step_postmortem`` is the post-mortem of a training step itself (CLI, worker).
- State readers (``state``): ``comparisons`` / ``ComparisonEntry``, ``saved_report``, ``latest_comparison``,
  ``curves_spec`` / ``CurvesSpec``, ``is_demo``, ``summarize``.
- Value types the faces show or build: the requests (``Subject``, ``RunOptions``, ``TolerancePolicy``,
  ``CompareRequest``, ``demo_request``) and their answer ``CompareOutcome``; a ``Comparison`` and its parts
  (``LayerResult``, ``Metrics``, ``Triangle``, ``ElementError``, ``BackendRow``), ``keep_every_element``;
  ``CurveGap``; ``CaptureResult``; the comparison as text (``format_comparison``, ``matrix_lines``) and
  ``parse_overrides`` (``--tol key=value`` pairs).

- The user's own kernels (``kernels/``): ``kernel_specs`` (find the ``__global__`` kernels, draft and keep the
  editable spec file), ``kernel_run`` (generated drivers built with nvcc/hipcc, and on a GPU a sweep of shapes x
  distributions: original vs float64 twin, port vs both, detectors), ``saved_kernels`` (the last report's
  ``KernelRow``s), ``KernelReport``, ``kernel_spec_form`` / ``edit_kernel`` (one kernel's spec as a form).

Behind the door, rooms by concept: ``capture/`` (run a model once and keep what it did: the forward pass
and its hooks, the backward pass, streaming, harnesses, a training run's batch, attention backends,
fingerprints, sketches) and ``compare/`` (the comparison of two captures, its metrics on the CPU or the
device, tolerances, the attention-backend matrix, loss curves, the result types and their text).
``tensorfile`` (the capture file format, read by both rooms), ``requests``, ``runs`` (a run of the subject
followed by a comparison), ``postmortem``, ``state``, ``services``, ``worker`` and ``demo`` stay at the top.
Neither room imports the top's services; ``worker`` imports the services, never the other way round.

No name here is also a module of this package (``capture``, ``compare``, ``postmortem``, ...): importing
that module would replace the name with it, so the services are ``run_capture``, ``run_comparison``,
``step_postmortem`` (tests/test_architecture.py checks it).

Names from modules that pull numpy, YAML or the capture machinery load on first use (``hipwizard.lazy``);
the dashboard imports this door, and torch is imported only inside the rooms' functions, in the worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hipwizard.lazy import lazy_attributes
from hipwizard.parity.compare.curves import CurveGap
from hipwizard.parity.compare.result import (
    BackendRow,
    Comparison,
    ElementError,
    LayerResult,
    Metrics,
    Triangle,
    keep_every_element,
)
from hipwizard.parity.compare.text import format_comparison, matrix_lines
from hipwizard.parity.requests import (
    CompareOutcome,
    CompareRequest,
    RunOptions,
    Subject,
    TolerancePolicy,
    demo_request,
)
from hipwizard.parity.state import (
    ComparisonEntry,
    CurvesSpec,
    comparisons,
    curves_spec,
    is_demo,
    latest_comparison,
    saved_report,
    summarize,
)

if TYPE_CHECKING:  # the lazy names below, for type checkers; at run time each loads on first use
    from hipwizard.parity.capture.model import CaptureResult
    from hipwizard.parity.compare.tolerances import parse_overrides
    from hipwizard.parity.kernels.run import Toolchain
    from hipwizard.parity.kernels.service import (
        KernelReport,
        KernelRow,
        edit_kernel,
        kernel_check,
        kernel_run,
        kernel_spec_form,
        kernel_specs,
        saved_kernels,
    )
    from hipwizard.parity.postmortem import step_postmortem
    from hipwizard.parity.services import check_output, curves, recorded_curves, run_capture, run_comparison
    from hipwizard.parity.worker import WorkerRun, compare_in_worker, run_postmortem

_LAZY = {
    **dict.fromkeys(("run_capture", "run_comparison", "curves", "recorded_curves", "check_output"),
                    "hipwizard.parity.services"),
    **dict.fromkeys(("compare_in_worker", "WorkerRun", "run_postmortem"), "hipwizard.parity.worker"),
    "step_postmortem": "hipwizard.parity.postmortem",
    **dict.fromkeys(("kernel_specs", "kernel_run", "kernel_check", "saved_kernels", "KernelReport", "KernelRow",
                     "kernel_spec_form", "edit_kernel"), "hipwizard.parity.kernels.service"),
    "Toolchain": "hipwizard.parity.kernels.run",
    "CaptureResult": "hipwizard.parity.capture.model",
    "parse_overrides": "hipwizard.parity.compare.tolerances",
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    # services, and the two that run in a worker subprocess
    "run_capture", "run_comparison", "curves", "recorded_curves", "check_output",
    "compare_in_worker", "WorkerRun", "run_postmortem", "step_postmortem",
    # the user's own kernels (``kernels/``): specs, drivers, sweeps; the last report's rows
    "kernel_specs", "kernel_run", "kernel_check", "saved_kernels", "KernelReport", "KernelRow", "Toolchain",
    "kernel_spec_form", "edit_kernel",  # the Parity screen's spec form: its fields, and the checked write
    # state readers
    "comparisons", "ComparisonEntry", "saved_report", "latest_comparison", "curves_spec", "CurvesSpec",
    "is_demo", "summarize",
    # value types
    "Subject", "RunOptions", "TolerancePolicy", "CompareRequest", "demo_request", "CompareOutcome",
    "Comparison", "LayerResult", "Metrics", "Triangle", "ElementError", "BackendRow", "keep_every_element",
    "CurveGap", "CaptureResult", "format_comparison", "matrix_lines", "parse_overrides",
]
