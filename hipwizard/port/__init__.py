"""Step 2: translate CUDA to HIP, split into hunks, flag risks, review, compile-check."""

