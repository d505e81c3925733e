"""The port's risk room: what a translated file still needs a human for on CDNA3 (MI300X, gfx942, wave64).

``base`` (what a rule is), ``rules`` (the catalogue: one detector per rule) and ``rules_host`` (the rules for
host-side warp-size plumbing, version checks, libraries, tensor-core helpers), ``flow`` (warp-size data flow
from a kernel's body to its callers), ``flags`` (run the rules over a file and attach the flags to hunks or
to untouched lines), ``tree`` (risks that cross files), ``line_search`` (which lines a rule's regex matches,
in linear time).
"""
