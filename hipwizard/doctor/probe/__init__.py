"""Asking the machine: which programs the doctor runs (``tools``), each through the runner seam, and the
recordings of their answers (``replay``: ``--record DIR`` writes them, ``--replay DIR`` answers from them).
A probe only runs a program and keeps its ``RunResult``; turning the text into models is ``read``'s job.
The Python probe itself (``hipwizard.doctor.pyprobe``) stays at the step's top: its module name is the
``python -m`` argv every recording is filed under."""
