"""Parity's capture room: run a model once and keep what it did, in one safetensors file.

``model`` (a Hugging Face model's forward pass, hooks on the chosen modules, the file's metadata),
``backward`` (the gradients of one loss), ``tensors`` (what both do to tensors in flight: a perturbation
that shows a broken kernel, the device-to-host copy), ``stream`` (writing outputs while the model runs),
``harness`` (a user's own kernel harness instead of a model), ``step_batch`` (a training run's batch, run as
``python -m hipwizard.parity.capture.step_batch``), ``attention`` (the attention backend), ``fingerprint``
(config and weights hashes), ``sketch`` (low-rank and count sketches that keep big tensors small).
The file format itself is ``hipwizard.parity.tensorfile``; both rooms read it.
"""
