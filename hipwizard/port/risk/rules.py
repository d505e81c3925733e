"""The catalogue of porting risks on CDNA3 (MI300X, gfx942, wave64): every rule, in the order they are reported.

Four parts, each its own module: ``device`` (rules on device code), ``rules_host`` (host-side warp-size
plumbing, version and capability checks, libraries, tensor-core helpers) and ``flow`` (warp-size data flow from
a kernel's body to its callers, built on two device rules) and ``divergence`` (kinds learned where dual-target
projects diverge for AMD, issue 32). Ids, severities and sources follow the project's
PORTING_RISKS table.
"""

from __future__ import annotations

from hipwizard.port.risk.base import RiskRule
from hipwizard.port.risk.device import DEVICE_RULES
from hipwizard.port.risk.divergence import DIVERGENCE_RULES
from hipwizard.port.risk.flow import FLOW_RULES
from hipwizard.port.risk.rules_host import HOST_RULES

RULES: tuple[RiskRule, ...] = DEVICE_RULES + HOST_RULES + FLOW_RULES + DIVERGENCE_RULES
RULES_BY_ID = {rule.rule_id: rule for rule in RULES}
