"""Parsers of GPU tools' outputs, one module per tool, shared by the doctor and telemetry.

``rocminfo``, ``rocm_smi``, ``amd_smi`` and ``nvidia_smi`` each turn a tool's text into ``Parsed[ToolView]``
(``models``): the GPUs it listed (``GpuInfo``: what the doctor checks), and for the smi tools one
``GpuSample`` per GPU (VRAM used/total, utilisation, processes: what telemetry shows). ``text`` holds the
small readers they share. Nothing here runs a program: callers pass the runner's stdout/stderr.
"""
