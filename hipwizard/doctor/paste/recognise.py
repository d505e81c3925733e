"""A pasted terminal log -> the tool outputs in it, each recognised by its content.

A paste holds any number of command outputs, with or without prompts (``$ rocminfo``, ``root@host:~# amd-smi
static``, ``## rocm-smi``, ``**`amd-smi version`**``, none), in Markdown code fences or not. ``split_paste``
cuts it where a prompt line or the first line of a known output starts, then ``identify`` names each part by
what it says, never by the prompt (a prompt only names a part whose output has no shape of its own: a bare
version number after ``$ cat /opt/rocm/.info/version``, or ``command not found``).

Kinds and the probe (``probe.tools``) whose recording they become are in ``KIND_PROBE``. ``paste.recording``
writes them in the ``--record`` layout.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from hipwizard.gpu.parsers.rocm_smi import is_csv as is_rocm_smi_csv
from hipwizard.gpu.parsers.rocminfo import is_agent_excerpt
from hipwizard.gpu.parsers.text import strip_ansi

# kind -> probe name (default_probes or EVIDENCE_PROBES): the recording file it becomes.
KIND_PROBE: dict[str, str] = {
    "rocminfo": "rocminfo",
    "rocm-smi": "rocm-smi concise",  # concise table and GPU[N] : key: value views (--showproductname ...)
    "rocm-smi json": "rocm-smi",
    "amd-smi static": "amd-smi static",
    "amd-smi list": "amd-smi list",
    "amd-smi version": "amd-smi version",
    "amd-smi": "amd-smi",  # ROCm 7 default table, or the banner of older versions
    "amd-smi monitor": "amd-smi monitor",
    "nvidia-smi csv": "nvidia-smi",
    "nvidia-smi": "nvidia-smi table",
    "hipconfig": "hipconfig",
    "rocm version file": "rocm version file",
    "amdgpu version": "amdgpu version",
    "ds_report": "ds_report",
    "collect_env": "collect_env",
    "llamafactory-cli env": "llamafactory env",
    "pip": "pip list",
    "lspci": "lspci",
}

_TOOLS = ("rocminfo", "rocm-smi", "amd-smi", "nvidia-smi", "lspci", "pip", "pip3", "python", "python3", "hipconfig",
          "cat", "ds_report", "llamafactory-cli", "collect_env", "modinfo", "uv", "rocm_agent_enumerator", "torchrun")
_PROMPT = re.compile(
    r"^\s*(?:\([\w.-]+\)\s*)?(?:\[?[\w.-]+@[\w.-]+(?:[:\s][^$#\n]*)?\]?[$#]|\$|❯|➜\s+\S+|PS [^>]*>)\s*(?P<cmd>\S.*)$")
_ROOT_PROMPT = re.compile(r"^\s*#\s+(?P<cmd>\S.*)$")
_MD_HEAD = re.compile(r"^\s*(?:#{1,6}\s+|\*\*)`?(?P<cmd>[^`*]+?)`?(?:\*\*)?\s*:?\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)|^\s*</?(details|summary)>")
_LSPCI = re.compile(r"^\s*(?:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]/)*(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]\s+\S",
                    re.IGNORECASE)
_PKG_LINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:==\S+|\s+@\s+\S+|\s{2,}\d\S*)\s*$")
_VERSION_ONLY = re.compile(r"^\s*\d+\.\d+(?:\.\d+)*(?:[-+~][0-9A-Za-z.+-]*)?\s*$")
_NOT_FOUND = re.compile(r"command not found|No such file or directory|not found$|cannot access", re.IGNORECASE)


@dataclass
class PastePart:
    """One output found in a paste: its kind ('' = not recognised), where it was, what the prompt claimed."""

    kind: str
    text: str
    first_line: int  # 1-based, in the paste
    last_line: int
    command: str = ""  # the prompt's command, "" without one
    status: str = "ok"  # ok | missing | failed: a prompt whose output says the command or file is absent
    note: str = ""

    @property
    def probe(self) -> str:
        return KIND_PROBE.get(self.kind, "")

    @property
    def lines(self) -> str:
        return f"lines {self.first_line}-{self.last_line}"


@dataclass
class PasteResult:
    parts: list[PastePart] = field(default_factory=list)

    @property
    def recognised(self) -> list[PastePart]:
        return [p for p in self.parts if p.kind]

    @property
    def unrecognised(self) -> list[PastePart]:
        return [p for p in self.parts if not p.kind and p.text.strip()]

    def summary(self) -> str:
        """One line: what was recognised where, and what was not."""
        seen = "; ".join(f"{p.kind} ({p.lines})" + (f" [{p.status}]" if p.status != "ok" else "") for p in self.recognised)
        out = f"recognised {len(self.recognised)} output(s): {seen or 'none'}"
        if self.unrecognised:
            out += "; not recognised: " + ", ".join(p.lines for p in self.unrecognised)
        return out


def _command(line: str) -> str:
    """The command of a prompt or heading line naming a known tool, else ''."""
    plain = strip_ansi(line).rstrip()
    for rx in (_PROMPT, _ROOT_PROMPT, _MD_HEAD):
        m = rx.match(plain)
        if m:
            cmd = m.group("cmd").strip().strip("`").strip()
            words = [w for w in cmd.split() if w not in ("sudo", "-E")]
            first = words[0].rsplit("/", 1)[-1] if words else ""
            if first in _TOOLS or (len(words) > 2 and words[1] == "-m" and "collect_env" in cmd):
                return cmd
            if rx is _PROMPT and first:  # a real shell prompt, an unknown command: still a boundary
                return cmd
    return ""


def _start_kind(lines: list[str], i: int) -> str:
    """The kind of output that visibly starts at line ``i`` (prompt-less pastes are cut there), else ''."""
    line = strip_ansi(lines[i]).rstrip()
    nxt = " ".join(strip_ansi(x) for x in lines[i + 1:i + 3])
    if re.match(r"ROCk module|={5,}\s*$", line) and ("HSA System Attributes" in nxt or line.startswith("ROCk")):
        return "rocminfo"
    if re.match(r"^=+\s*ROCm System Management Interface\s*=+", line):
        return "rocm-smi"
    if line.startswith("+---") and "NVIDIA-SMI" in nxt:
        return "nvidia-smi"
    if line.startswith("+---") and "AMD-SMI" in nxt:
        return "amd-smi"
    if line.startswith("AMDSMI Tool:"):
        return "amd-smi version"
    if re.match(r"^GPU:\s*\d+\s*$", line) and not re.match(r"^GPU:\s*\d", strip_ansi(lines[i - 1]) if i else ""):
        return "amd-smi text"
    if line.startswith("Collecting environment information") or re.match(r"^PyTorch version\s*:", line):
        return "collect_env"
    if "DeepSpeed C++/CUDA extension op report" in line:
        return "ds_report"
    if re.match(r"^\s*-\s*`llamafactory` version", line):
        return "llamafactory-cli env"
    if re.match(r"^Package\s+Version", line):
        return "pip"
    if re.match(r'^[\[{]\s*$|^[\[{]\s*["{\[]', line):
        return "json"
    return ""


def split_paste(text: str) -> list[PastePart]:
    """Cut a paste into parts at prompt lines, Markdown fences and the first lines of known outputs."""
    lines = (text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    parts: list[PastePart] = []
    current: list[str] = []
    start, command, kind_started = 1, "", ""

    def close(end: int) -> None:
        body = "\n".join(current).strip("\n")
        if body.strip() or command:
            parts.append(PastePart("", body + ("\n" if body else ""), start, max(start, end), command))

    for i, raw in enumerate(lines):
        if _FENCE.match(raw):
            continue
        cmd = _command(raw)
        started = "" if cmd else _start_kind(lines, i)
        same = started and started == kind_started and started not in ("json",)
        if cmd or (started and not same and _has_content(current)):
            close(i)
            current, start = [], i + 1
            command, kind_started = (cmd, "") if cmd else ("", started)
            if cmd:
                start = i + 2
                continue
        elif started and not kind_started:
            kind_started = started
        if not current:
            start = i + 1
        current.append(raw)
    close(len(lines))
    return parts


def _has_content(lines: list[str]) -> bool:
    return any(x.strip() for x in lines)


def identify(text: str, command: str = "") -> str:
    """The kind of one output, from its content ('' when nothing matches). ``command`` (a prompt's) only
    decides outputs with no shape of their own: a bare version line, or a missing tool or file."""
    plain = strip_ansi(text or "")
    body = plain.strip()
    if not body:
        return ""
    if "HSA Agents" in plain or "HSA System Attributes" in plain or re.search(r"^\s*Agent \d+\s*$", plain, re.M) and "Device Type" in plain:
        return "rocminfo"
    if re.search(r"ROCk module(?: version \S+)? is (?:NOT )?(?:loaded|live)", plain):
        return "rocminfo"
    if is_agent_excerpt(plain):
        return "rocminfo"  # an excerpt of an agent's block, its "Agent N" header cut off
    if re.search(r"^\s*-\s*`?llamafactory`? version", plain, re.M):
        return "llamafactory-cli env"
    if re.search(r"^PyTorch version\s*:", plain, re.M) and re.search(r"(ROCM|CUDA) used to build PyTorch|Is CUDA available", plain):
        return "collect_env"
    if "DeepSpeed C++/CUDA extension op report" in plain or re.search(r"^\s*(fused_adam|cpu_adam)\s*\.{3,}", plain, re.M):
        return "ds_report"
    if "NVIDIA-SMI" in plain and ("Driver Version" in plain or "has failed" in plain):
        return "nvidia-smi"
    if re.search(r"^\s*index\s*,\s*name\s*,", plain, re.M | re.I) and "memory.total" in plain:
        return "nvidia-smi csv"
    if "AMDSMI Tool" in plain and "|" in plain and "+---" not in plain:
        return "amd-smi version"
    if "AMD-SMI" in plain and "+---" in plain or "AMD System Management Interface" in plain:
        return "amd-smi"
    if re.search(r"^\s*GPU\s+(?:XCP\s+)?POWER\s+GPU_T", plain, re.M):
        return "amd-smi monitor"
    doc = _json(body)
    if doc is not None:
        return _json_kind(doc)
    if re.search(r"^GPU:\s*\d+", plain, re.M):
        if re.search(r"^\s+(ASIC|VRAM|BOARD|DRIVER|VBIOS|IFWI|BUS|LIMIT|(?:[A-Z]+_)?PARTITION):", plain, re.M) or "MARKET_NAME" in plain:
            return "amd-smi static"
        if re.search(r"^\s+BDF:", plain, re.M):
            return "amd-smi list"
    if "ROCm System Management Interface" in plain or re.search(r"^GPU\[\d+\]\s*:", plain, re.M):
        return "rocm-smi"
    if is_rocm_smi_csv(plain):
        return "rocm-smi"  # rocm-smi ... --csv
    if re.search(r"^HIP version\s*:", plain, re.M):
        return "hipconfig"
    lines = [x for x in body.splitlines() if x.strip()]
    if sum(bool(_LSPCI.match(x)) for x in lines) >= max(1, len(lines) // 2) and re.search(r"\[AMD/ATI\]|NVIDIA", plain):
        return "lspci"
    if re.match(r"^Package\s+Version", body) or sum(bool(_PKG_LINE.match(x.strip())) for x in lines) >= max(3, len(lines) * 2 // 3):
        return "pip"
    return _by_command(plain, command)


def _json(body: str):
    if body[:1] not in "[{":
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _json_kind(doc) -> str:
    text = json.dumps(doc)[:20000].lower()
    if isinstance(doc, dict) and any(re.fullmatch(r"card\d+", str(k)) for k in doc):
        return "rocm-smi json"
    if '"gpu"' in text or "gpu_data" in text:
        if any(k in text for k in ('"asic"', '"vram"', '"board"', '"market_name"', '"driver"')):
            return "amd-smi static"
        if '"bdf"' in text:
            return "amd-smi list"
    return ""


def _by_command(plain: str, command: str) -> str:
    """Outputs without a shape of their own, named by the prompt that ran them."""
    cmd = " ".join(w for w in command.split() if w != "sudo")
    first = plain.strip().splitlines()[0] if plain.strip() else ""
    if not cmd:
        return ""
    tool = cmd.split()[0].rsplit("/", 1)[-1]
    targets = [("/opt/rocm", ".info/version", "rocm version file"), ("/sys/module/amdgpu/version", "", "amdgpu version")]
    for needle, also, kind in targets:
        if needle in cmd and also in cmd and (_VERSION_ONLY.match(first) or _NOT_FOUND.search(first)):
            return kind
    if tool == "hipconfig" and (_VERSION_ONLY.match(first) or _NOT_FOUND.search(first)):
        return "hipconfig"
    known = {"rocminfo": "rocminfo", "rocm-smi": "rocm-smi", "amd-smi": "amd-smi", "nvidia-smi": "nvidia-smi",
             "ds_report": "ds_report", "lspci": "lspci"}
    if tool in known and _NOT_FOUND.search(first):
        return known[tool]
    return ""


def parse_paste(text: str) -> PasteResult:
    """Split a paste and name every part; a part whose output says its tool or file is absent gets
    status 'missing' (command not found) or 'failed' (no such file)."""
    result = PasteResult()
    for part in split_paste(text):
        part.kind = identify(part.text, part.command)
        first = strip_ansi(part.text).strip().splitlines()[0] if part.text.strip() else ""
        if part.kind and part.command and _NOT_FOUND.search(first) and len(part.text.strip().splitlines()) <= 3:
            part.status = "missing" if "command not found" in first or first.endswith("not found") else "failed"
        if part.kind and part.command:
            claimed = part.command.split()[0].rsplit("/", 1)[-1]
            if claimed in ("rocminfo", "rocm-smi", "amd-smi", "nvidia-smi") and not part.kind.startswith(claimed):
                part.note = f"the prompt says {claimed!r} but the output is {part.kind}"
        result.parts.append(part)
    return result
