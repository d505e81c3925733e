"""Step 1, the doctor: is this machine ready for an MI300X fine-tune?

The front door. Faces (``hipwizard.cli``, ``hipwizard.tui``) and ``hipwizard.report`` import the doctor only
from here and from ``hipwizard.doctor.state`` (tests/test_architecture.py checks it); other steps read its
findings through ``hipwizard.doctor.state`` (``target_facts``, ``environment_stamp``).

- Services, one per user action: ``open_source`` / ``paste_source`` / ``workspace_source`` (where the
  answers come from: live tools, a recording replayed or made, a paste), ``diagnose`` (probe, read, judge,
  save), ``diagnose_paste`` (the screen's paste box), ``export_report`` (the report as text, saved),
  ``preflight`` (a node's GPU interconnect from rccl-tests / TransferBench / topology outputs, for multi-GPU runs);
  ``parse_paste`` (what a paste holds, live in the paste box) and ``read_paste`` (a paste file or stdin).
- State readers: ``load_report``, ``target_facts``, ``environment_stamp``, ``summarize``, ``replay_dir``,
  ``demo_note``.
- Value types the faces show or build: ``DoctorReport`` and its parts (``EnvReport``, ``Check``,
  ``CheckCounts``, ``GpuInfo``, ``TorchInfo``, ``Fact``, ``Evidence``, ``ProbeRecord``), ``TargetFacts``, the
  services' results (``Source``, ``Diagnosis``, ``ExportedReport``, ``PasteResult``, ``PasteInput``), the
  runners a test or a snapshot hands the screen (``ReplayRunner``, ``RecordingRunner``).
- Environment stamps (``fingerprint``): ``stamp_from_report``, ``describe_stamp``, ``stamp_differences``,
  ``read_stamp``, ``STAMP_LABELS``; and ``render_text``, the report as plain text.

Behind the door, rooms by concept: ``probe/`` (run the tools, record and replay their answers),
``read/`` (parse the answers, merge them into one ``EnvReport`` with the evidence for each fact),
``paste/`` (a pasted terminal log as a source of answers), ``judge/`` (the compatibility matrix and the
checks), ``pipeline`` (the three in a row on one runner). ``pyprobe`` (run as ``python -m
hipwizard.doctor.pyprobe`` in a subprocess) stays here: its module name is the argv recordings are filed under.

The names below the first block load on first use (``hipwizard.lazy``): the pipeline's parsers, matrix
(YAML) and checks are not imported by a face that only shows a saved report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hipwizard.doctor.fingerprint import (
    STAMP_LABELS,
    describe_stamp,
    read_stamp,
    stamp_differences,
    stamp_from_report,
)
from hipwizard.doctor.models import (
    Check,
    CheckCounts,
    DoctorReport,
    EnvReport,
    Evidence,
    Fact,
    GpuInfo,
    ProbeRecord,
    TorchInfo,
)
from hipwizard.doctor.state import (
    TargetFacts,
    demo_note,
    environment_stamp,
    load_report,
    replay_dir,
    summarize,
    target_facts,
)
from hipwizard.doctor.text import render_text
from hipwizard.lazy import lazy_attributes

if TYPE_CHECKING:  # the lazy names below, for type checkers; at run time each loads on first use
    from hipwizard.doctor.interconnect import PreflightResult, preflight
    from hipwizard.doctor.paste.input import PasteInput, read_paste
    from hipwizard.doctor.paste.recognise import PasteResult, parse_paste
    from hipwizard.doctor.probe.replay import RecordingRunner, ReplayRunner
    from hipwizard.doctor.probe.tools import DEFAULT_TIMEOUT_S, default_probes
    from hipwizard.doctor.services import (
        Diagnosis,
        ExportedReport,
        Source,
        diagnose,
        diagnose_paste,
        export_report,
        open_source,
        paste_source,
        workspace_source,
    )

_LAZY = {
    **dict.fromkeys(("diagnose", "diagnose_paste", "open_source", "paste_source", "workspace_source",
                     "export_report", "Source", "Diagnosis", "ExportedReport"), "hipwizard.doctor.services"),
    **dict.fromkeys(("parse_paste", "PasteResult"), "hipwizard.doctor.paste.recognise"),
    **dict.fromkeys(("read_paste", "PasteInput"), "hipwizard.doctor.paste.input"),
    **dict.fromkeys(("ReplayRunner", "RecordingRunner"), "hipwizard.doctor.probe.replay"),
    **dict.fromkeys(("DEFAULT_TIMEOUT_S", "default_probes"), "hipwizard.doctor.probe.tools"),
    **dict.fromkeys(("preflight", "PreflightResult"), "hipwizard.doctor.interconnect"),
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    # services and their results
    "diagnose", "diagnose_paste", "open_source", "paste_source", "workspace_source", "export_report",
    "Source", "Diagnosis", "ExportedReport", "parse_paste", "PasteResult", "read_paste", "PasteInput",
    "ReplayRunner", "RecordingRunner", "DEFAULT_TIMEOUT_S", "default_probes", "preflight", "PreflightResult",
    # state readers
    "load_report", "target_facts", "environment_stamp", "summarize", "replay_dir", "demo_note", "TargetFacts",
    # value types
    "DoctorReport", "EnvReport", "Check", "CheckCounts", "GpuInfo", "TorchInfo", "Fact", "Evidence", "ProbeRecord",
    # environment stamps and the report as text
    "stamp_from_report", "describe_stamp", "stamp_differences", "read_stamp", "STAMP_LABELS", "render_text",
]
