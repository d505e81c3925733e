"""The port's translation room: a CUDA tree into HIP, file by file, and each file's changes as hunks.

``scan`` (which files of a tree to translate, which to skip and why), ``backends/`` (hipify-clang,
hipify-perl, or the built-in engine, behind one interface), ``builtin`` (the built-in translator on HIPIFY's
``tables``, with ``lexer`` and its ``edits`` log), ``compat`` (which HIP version has each API), ``hunks`` and
``linediff`` (the changes between a file and its translation), ``engine`` (all of it over a tree, risks
flagged: a ``PortReport``). Named ``translation`` rather than ``translate``: ``hipwizard.port.translate``
is the service.
"""
