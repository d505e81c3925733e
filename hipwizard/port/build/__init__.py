"""The port's build room: compile-check the written tree the way the project builds it.

``units`` (which files are GPU translation units, which are CPU-only or for another platform), ``commands``
(each unit's compile command: the project's ``compile_commands.json``, one CMake exports for the written tree, a
``make -Bn`` dry run, else the flags the translated build file writes), ``flags`` (such a command as hipcc check
flags, nvcc's spellings mapped), ``ahead`` (a unit stopped by a missing ROCm library: the package that installs
it and the flagged lines still ahead in that unit), ``run`` with ``recorder`` (``check --build``: the translated
build itself, run with hipcc, per unit).
"""
