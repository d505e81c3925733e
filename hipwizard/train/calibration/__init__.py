"""The train step's calibration room: measured on this machine instead of predicted. ``services`` holds the
measuring actions (bench the GEMM ceiling, calibrate a config's top candidates); ``measure`` runs each
candidate for a few real steps; ``gemm_bench`` times a GEMM in a subprocess; ``corrections`` is what the
measurements imply for the planner's memory and time predictions (``Calibration``, ``Measurement``)."""
