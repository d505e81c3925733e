"""Step 3: numerical parity between a reference and a port, layer by layer."""

