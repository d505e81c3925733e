"""Parity for the user's own kernels: find them, draft specs, generate drivers, sweep inputs, judge the port.

Rooms by concept: ``source`` (reading C++: masking, brackets), ``find`` (kernels and launch sites), ``bounds``
(roles and extents from a body), ``spec`` (the drafted, editable spec), ``twin`` (the float64 oracle's lifted
source and the reverse-mapping headers), ``driver`` (the generated C++ driver), ``inputs`` (shapes and
distributions, strided/offset layouts), ``verdict`` (triangle and detectors), ``run`` (building and running a sweep),
``reference`` (a user-named torch oracle, evaluated in a subprocess), ``sanitize`` (compute-sanitizer's racecheck:
the race detector), ``project`` (a tree's specs and the spec file), ``edit`` (one spec as a checked form),
``service`` (the door's services).
"""
