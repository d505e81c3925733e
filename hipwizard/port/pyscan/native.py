"""NVML and ``nvidia-smi`` in C/C++ sources (llm.c's MFU table, a utilisation poll): rules of the same type as
the port's other risk rules (``RiskRule``, run over masked code lines by ``risks.find_risks``), plus the
``nvidia-smi`` commands, which live in string literals that masked lines blank out (``nvidia_smi_findings``,
over the raw text's string tokens)."""

from __future__ import annotations

from hipwizard.port.risk.base import RiskRule, _rx
from hipwizard.port.risk.flags import Finding, find_risks
from hipwizard.port.translation.lexer import TOKEN, line_of, line_starts

_AMDSMI = "https://rocm.docs.amd.com/projects/amdsmi/en/latest/reference/amdsmi-cpp-lib.html"

NVML_RULE = RiskRule(
    "NVML", "high", "NVML (nvml.h, libnvidia-ml) is NVIDIA's driver library: nothing answers on an AMD machine",
    "use AMD SMI's C library (amd_smi/amdsmi.h: amdsmi_init, amdsmi_get_gpu_activity; link -lamd_smi) or drop the query",
    _AMDSMI, _rx(r"#\s*include\s*[<\"]nvml\.h[>\"]", r"\bnvml[A-Z]\w*\s*\(", r"\bnvml(?:Device|Return|Memory|Utilization)\w*_t\b"))
NVIDIA_SMI_RULE = RiskRule(
    "NVIDIA_SMI", "high", "runs nvidia-smi, which an AMD machine does not have (its queries and output format are NVIDIA's)",
    "run amd-smi (amd-smi metric / static, --json) or rocm-smi and parse their output",
    "https://rocm.docs.amd.com/projects/amdsmi/en/latest/how-to/amdsmi-cli-tool.html",
    lambda lines: [])  # strings are blank in masked lines: nvidia_smi_findings reads the raw text

NATIVE_RULES: tuple[RiskRule, ...] = (NVML_RULE,)


def nvidia_smi_findings(text: str) -> list[Finding]:
    """A finding on each line whose string literal holds ``nvidia-smi`` (never one in a comment)."""
    if "nvidia-smi" not in text:
        return []
    starts = line_starts(text)
    lines = sorted({line_of(starts, m.start()) for m in TOKEN.finditer(text)
                    if m.lastgroup == "string" and "nvidia-smi" in m.group(0)})
    return [Finding(NVIDIA_SMI_RULE, line) for line in lines]


def find_native(text: str) -> list[Finding]:
    """NVML and nvidia-smi findings in a C/C++ text (lines 1-based), ordered by line."""
    found = find_risks(text, NATIVE_RULES) if "nvml" in text else []
    return sorted(found + nvidia_smi_findings(text), key=lambda f: (f.line, f.rule.rule_id))
