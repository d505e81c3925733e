"""Step 4: LLaMA-Factory config, memory estimate, launch and live tail."""

