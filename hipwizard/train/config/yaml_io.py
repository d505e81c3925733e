"""Load and save LLaMA-Factory YAML with ruamel.yaml's round-trip mode.

Keys ``TrainConfig`` does not know are kept in the document and written back unchanged, comments and key
order survive, and values the user did not change keep their original spelling (``5.0e-5`` stays so).
The ``deepspeed`` key is read to fill the ZeRO fields (from the JSON it names, else from its file name).
Length-grouped batches are one field, ``group_by_length``, read from either key transformers has used
(``group_by_length: true``, or ``train_sampling_strategy: group_by_length`` from 5.2) and written back under
the key the installed transformers takes (``sampler_key``; the other spelling, which it refuses, is replaced),
else the one the document already uses.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from hipwizard.atomic import atomic_write_text
from hipwizard.errors import UserError
from hipwizard.train.config.bounded import InputRefused, check_yaml_bounds, read_regular_text
from hipwizard.train.config.command_line import convert, is_command_line
from hipwizard.train.config.deepspeed import ZeroSettings, read_zero_settings, zero_stage
from hipwizard.train.config.launch_knobs import read_knobs
from hipwizard.train.config.llamafactory_info import SAMPLER_KEY_NEW, SAMPLER_KEY_OLD, sampler_key
from hipwizard.train.config.train_config import DERIVED_FIELDS, TrainConfig, build_config


@dataclass
class LoadedConfig:
    """A config as read: the typed model, the round-trip document, and the fields that were invalid."""

    config: TrainConfig
    document: CommentedMap
    path: Path | None = None
    errors: list[tuple[str, str]] = field(default_factory=list)  # (field, message)
    notes: list[str] = field(default_factory=list)

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    @property
    def unknown_keys(self) -> list[str]:
        return [str(k) for k in self.document if k not in TrainConfig.model_fields and not (
            k == SAMPLER_KEY_NEW and self.document[k] == GROUPED)]


GROUPED = "group_by_length"  # train_sampling_strategy's value for length-grouped batches


def _yaml() -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096  # never fold long values (dataset lists, paths)
    y.representer.add_representer(float, _represent_float)
    return y


def _represent_float(representer, value: float):
    """Floats every YAML reader takes as floats: PyYAML reads ``5e-05`` as a string, ``5.0e-05`` as a float."""
    text = repr(value)
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exp = text.split("e")
        text = f"{mantissa}.0e{exp}"
    elif text in ("inf", "-inf", "nan"):
        text = {"inf": ".inf", "-inf": "-.inf", "nan": ".nan"}[text]
    return representer.represent_scalar("tag:yaml.org,2002:float", text)


def parse_yaml(text: str, path: Path | None = None) -> LoadedConfig:
    """Parse YAML text; malformed YAML or a non-mapping document raises ``UserError``."""
    where = str(path) if path else "config"
    try:
        check_yaml_bounds(text)
    except InputRefused as exc:
        raise UserError(f"{where} is refused: it {exc}") from None
    try:
        doc = _yaml().load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"{where} is not valid YAML{at}: {problem}") from None
    if doc is None:
        doc = CommentedMap()
    if not isinstance(doc, CommentedMap):
        raise UserError(f"{where} must be a YAML mapping of LLaMA-Factory arguments, not a {type(doc).__name__}")
    values = {str(k): _plain(v) for k, v in doc.items()}
    if values.get(SAMPLER_KEY_NEW) == GROUPED and SAMPLER_KEY_OLD not in values:
        values[SAMPLER_KEY_OLD] = True
    config, errors = build_config(values)
    loaded = LoadedConfig(config, doc, path, errors)
    _fill_zero(loaded, values.get("deepspeed"))
    if path is not None and read_knobs(path.parent).get("tunableop"):
        loaded.config.tunableop = True  # a run folder's launch knob (launch_knobs: not a LLaMA-Factory key)
    return loaded


def load_yaml(path: str | Path, *, base_of: Path | None = None) -> LoadedConfig:
    """The config in ``path`` (YAML, or a llamafactory-cli train command line); ``base_of``: the script
    that names ``path`` as its base config, which must then be YAML (a script naming itself, or two
    naming each other, would recurse without end)."""
    path = Path(path).expanduser()
    try:
        text = read_regular_text(path)
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a folder; give the YAML file") from None
    except InputRefused as exc:
        raise UserError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path}: {exc}") from None
    if is_command_line(text):
        if base_of is not None:
            raise UserError(f"{base_of}: its base config {path} is a llamafactory-cli command, not a YAML "
                            "config; name the YAML file the command starts from")
        return _from_command_line(text, path)
    return parse_yaml(text, path.resolve())


def _from_command_line(text: str, path: Path) -> LoadedConfig:
    """A ``llamafactory-cli train ...`` command line (or script) as the config it stands for, said in a note."""
    try:
        converted = convert(text)
    except ValueError as exc:
        raise UserError(f"{path} holds a llamafactory-cli train command that cannot be read: {exc}") from None
    doc = CommentedMap()
    if converted.base is not None:
        base = load_yaml(resolve_base(converted.base, path), base_of=path)
        doc = base.document
    for key, value in converted.values.items():
        doc[key] = value
    buf = io.StringIO()
    _yaml().dump(doc, buf)
    loaded = parse_yaml(buf.getvalue(), path.resolve())
    loaded.notes.append(f"converted from the llamafactory-cli train command in {path.name}: "
                        f"{len(converted.values)} option(s)" + (f" over {converted.base}" if converted.base else "")
                        + "; every option kept")
    return loaded


def resolve_base(name: str, script: Path) -> Path:
    base = Path(name).expanduser()
    return base if base.is_absolute() else script.resolve().parent / base


def _fill_zero(loaded: LoadedConfig, ds_value: Any) -> None:
    if not ds_value or not isinstance(ds_value, str):
        return
    ds_path = Path(ds_value).expanduser()
    if not ds_path.is_absolute():
        ds_path = loaded.base_dir / ds_path
    settings: ZeroSettings | None = None
    try:
        settings = read_zero_settings(json.loads(read_regular_text(ds_path)))
    except (OSError, ValueError, RecursionError) as exc:
        settings = _zero_from_name(ds_value)
        loaded.notes.append(f"deepspeed file {ds_value} could not be read ({type(exc).__name__}); "
                            f"ZeRO settings guessed from its name: {settings.label if settings else 'unknown'}")
    if settings is None:
        return
    cfg = loaded.config
    cfg.zero_stage = settings.stage
    cfg.offload_optimizer = settings.offload_optimizer
    cfg.offload_param = settings.offload_param


def _zero_from_name(name: str) -> ZeroSettings | None:
    """LLaMA-Factory's examples are named ds_z{0,2,3}[_offload]_config.json."""
    m = re.search(r"z(?:ero)?[_-]?([0123])", Path(name).name, re.IGNORECASE)
    if not m:
        return None
    stage = zero_stage(int(m.group(1)))  # the pattern allows 0-3 only
    offload = "offload" in name.lower()
    return ZeroSettings(stage, offload and stage in (2, 3), offload and stage == 3)


def _plain(value: Any) -> Any:
    """ruamel's scalar subclasses -> plain Python values for validation."""
    if isinstance(value, bool) or value is None:
        return value
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def render_yaml(config: TrainConfig, document: CommentedMap | None = None, *, deepspeed_path: str | None = None) -> str:
    """YAML text of ``config`` merged into ``document`` (unknown keys and comments kept)."""
    doc = document if document is not None else CommentedMap()
    doc = _copy(doc)
    for name in TrainConfig.model_fields:
        if name in DERIVED_FIELDS or name in ("deepspeed", SAMPLER_KEY_OLD):
            continue
        if name not in config.model_fields_set:
            continue  # untouched (or invalid when loaded): the document's own text stays
        value = getattr(config, name)
        if value is None or (value == "" and name not in doc):
            doc.pop(name, None)
        elif name not in doc or _plain(doc[name]) != value or type(_plain(doc[name])) is not type(value):
            doc[name] = value
    if SAMPLER_KEY_OLD in config.model_fields_set:
        _put_sampler(doc, config.group_by_length)
    ds = deepspeed_path if deepspeed_path is not None else config.deepspeed
    if config.zero_stage is None:
        doc.pop("deepspeed", None)
    elif ds:
        doc["deepspeed"] = ds
    out = io.StringIO()
    _yaml().dump(doc, out)
    return out.getvalue()


def _put_sampler(doc: CommentedMap, grouped: bool) -> None:
    """Length-grouped batches on or off under the key the installed transformers takes (the other spelling, which
    it would refuse, is replaced), else the one ``doc`` already uses; another sampling strategy the user set
    (``sequential``) stays when grouping is off."""
    old, new = _plain(doc.get(SAMPLER_KEY_OLD)), _plain(doc.get(SAMPLER_KEY_NEW))
    key = sampler_key() or (SAMPLER_KEY_OLD if SAMPLER_KEY_OLD in doc else SAMPLER_KEY_NEW)
    if key == SAMPLER_KEY_NEW:
        doc.pop(SAMPLER_KEY_OLD, None)
        if grouped and new != GROUPED:
            doc[SAMPLER_KEY_NEW] = GROUPED
        elif not grouped and new == GROUPED:
            doc.pop(SAMPLER_KEY_NEW)
        return
    if new == GROUPED:
        doc.pop(SAMPLER_KEY_NEW)
    if old is not grouped and (grouped or SAMPLER_KEY_OLD in doc):
        doc[SAMPLER_KEY_OLD] = grouped


def save_yaml(path: str | Path, config: TrainConfig, document: CommentedMap | None = None,
              *, deepspeed_path: str | None = None) -> None:
    atomic_write_text(path, render_yaml(config, document, deepspeed_path=deepspeed_path))


def _copy(doc: CommentedMap) -> CommentedMap:
    # A round trip through text is the one copy ruamel guarantees keeps comments attached.
    buf = io.StringIO()
    _yaml().dump(doc, buf)
    copied = _yaml().load(buf.getvalue())
    return copied if isinstance(copied, CommentedMap) else CommentedMap()
