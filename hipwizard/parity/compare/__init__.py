"""Parity's compare room: how far a candidate run is from its reference, module by module.

``captures`` (two capture files, or a reference file and tensors still on a device: the first divergent
module), ``metrics`` and ``metrics_torch`` (cosine, max abs, relative L2, per-element errors, in numpy or in
float64 torch on the device), ``tolerances`` (dtype-aware bars, the shipped profiles, overrides),
``matrix`` (one comparison per attention backend), ``curves`` (two training runs' loss curves),
``result`` (the value types: ``Comparison``, ``LayerResult``, ``Metrics``, ``Triangle``) and ``text`` (a
comparison as plain text). The capture file format is ``hipwizard.parity.tensorfile``.
"""
