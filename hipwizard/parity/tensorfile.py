"""Read capture files (safetensors) with numpy only, so comparing two captures needs no torch.

safetensors' own numpy loader refuses bfloat16, and a truncated file from an interrupted copy should
be one clear sentence, not a Rust panic. The format is simple (8-byte little-endian header length, a
JSON header, then raw little-endian data), so we read it here: bf16 is widened to float32 exactly
(a bf16 value is the top half of a float32).
"""

from __future__ import annotations

import json
import math
import mmap
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hipwizard import jsonread
from hipwizard.atomic import atomic_write_chunks
from hipwizard.errors import UserError
from hipwizard.jsonread import JsonTooDeep

META_KEY = "hipwizard"
_MAX_HEADER = 100 * 1024 * 1024

_NUMPY_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
}
_ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


class BF16Bits:
    """A bf16 tensor kept undecoded: its raw bits as uint16 (``bits``) and its shape.

    Numpy consumers see the decoded float32 array (``np.asarray`` calls ``__array__``), so the numpy
    metrics work on it unchanged; ``metrics_torch`` instead moves ``bits`` to the device as bfloat16
    (half the bytes of the decoded float32) and widens there.
    """

    __slots__ = ("bits",)
    dtype = np.dtype(np.float32)  # what it decodes to (so input checks treat it as a float tensor)

    def __init__(self, bits: np.ndarray):
        self.bits = bits

    @property
    def shape(self) -> tuple[int, ...]:
        return self.bits.shape

    @property
    def size(self) -> int:
        return self.bits.size

    def decode(self) -> np.ndarray:
        """The exact float32 values (a bf16 value is the top half of a float32)."""
        return (self.bits.astype(np.uint32) << 16).view(np.float32)

    def __array__(self, dtype=None, copy=None):
        arr = self.decode()
        return arr if dtype is None else arr.astype(dtype)


@dataclass
class TensorFile:
    """A safetensors file read into memory: tensors as numpy arrays (or ``BF16Bits``) and the metadata."""

    path: Path
    tensors: dict[str, Any]
    stored_dtypes: dict[str, str]  # safetensors dtype tag per tensor ("BF16", "F32", ...)
    metadata: dict[str, str]
    data: Any = None  # the data section's bytes (a read-only mapping), for one bulk copy to a device
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)  # each tensor's [start, end) in ``data``


def read_header(path: Path) -> tuple[dict, int, int]:
    """(header, data_offset, file_size) of a safetensors file; UserError when it is not one."""
    path = Path(path)
    try:
        # Without blocking (a FIFO would wait for a writer forever), then checked on the open file.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(path)
            if not stat.S_ISREG(st.st_mode):
                raise UserError(f"{path} is not a regular file; give a capture file (.safetensors)")
            size = st.st_size
            head = fh.read(8)
            if len(head) < 8:
                raise UserError(f"{path} is not a capture file (only {size} bytes: truncated or empty)")
            (n,) = struct.unpack("<Q", head)
            if n > _MAX_HEADER or 8 + n > size:
                raise UserError(f"{path} is truncated or not a safetensors file (header says {n} bytes, file has {size})")
            raw = fh.read(n)
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a capture file") from None
    try:
        header = jsonread.loads(raw.decode("utf-8"))
    except JsonTooDeep as exc:
        raise UserError(f"{path} is not a capture file hipwizard reads: its header's {exc}") from None
    except (UnicodeDecodeError, ValueError):
        raise UserError(f"{path} is not a safetensors file (its header is not JSON)") from None
    if not isinstance(header, dict):
        raise UserError(f"{path} is not a safetensors file")
    meta = header.get("__metadata__")
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise UserError(f"{path} is not a safetensors file: its __metadata__ is not a map of text to text")
    return header, 8 + n, size


def _whole(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _entry(path: Path, name: str, info: Any) -> tuple[str, list[int], int, int]:
    """(dtype tag, shape, start, end) of one header entry; UserError unless each is what the safetensors
    format says (a known dtype, whole non-negative dimensions and offsets, start <= end)."""
    try:
        tag, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    except (KeyError, TypeError):
        raise UserError(f"{path}: entry {name!r} of the header is malformed") from None
    if not (isinstance(shape, list) and all(_whole(d) for d in shape) and isinstance(offsets, list)
            and len(offsets) == 2 and all(_whole(o) for o in offsets) and offsets[0] <= offsets[1]):
        raise UserError(f"{path}: entry {name!r} of the header is malformed (shape and data_offsets must be "
                        "whole numbers, 0 or more)")
    if not isinstance(tag, str) or tag not in _ITEMSIZE:
        raise UserError(f"{path}: tensor {name!r} has dtype {str(tag)[:40]}, which hipwizard cannot compare")
    return tag, shape, offsets[0], offsets[1]


def read_tensor_file(path: str | Path, *, decode_bf16: bool = True) -> TensorFile:
    """Load every tensor of ``path``. Raises UserError for truncated or malformed files.

    bf16 tensors are decoded to float32 arrays, or, with ``decode_bf16=False``, kept as ``BF16Bits``
    (no host decode: for comparing on a device, which decodes faster and needs half the copy).
    """
    path = Path(path)
    header, offset, size = read_header(path)
    metadata = header.pop("__metadata__", None) or {}
    data = _mapped(path)[offset:]  # a view: slicing would copy the whole file again
    tensors: dict[str, np.ndarray | BF16Bits] = {}
    dtypes: dict[str, str] = {}
    spans: dict[str, tuple[int, int]] = {}
    for name, info in header.items():
        tag, shape, start, end = _entry(path, name, info)
        if end > len(data):
            raise UserError(
                f"{path} is truncated: tensor {name!r} needs bytes up to {offset + end}, the file has {size}"
            )
        count = math.prod(shape)  # Python ints: numpy's product wraps (2**62 x 2**62 gave 0)
        if end - start != count * _ITEMSIZE[tag]:
            raise UserError(f"{path}: tensor {name!r} has {end - start} bytes for shape {shape}")
        buf = data[start:end]
        if tag == "BF16":
            bits = BF16Bits(np.frombuffer(buf, dtype="<u2").reshape(shape))
            tensors[name] = bits.decode() if decode_bf16 else bits
        else:
            arr = np.frombuffer(buf, dtype=np.dtype(_NUMPY_DTYPES[tag]).newbyteorder("<"))
            tensors[name] = arr.reshape(shape)
        dtypes[name] = tag
        spans[name] = (int(start), int(end))
    return TensorFile(path, tensors, dtypes, {str(k): str(v) for k, v in metadata.items()}, data, spans)


def _mapped(path: Path) -> memoryview:
    """The file's bytes, memory-mapped read-only: tensors are views into the page cache, nothing is copied
    and only what a comparison touches is read (``read_bytes`` copied the whole file first). Captures are
    replaced by rename, never rewritten in place, so a mapping keeps the bytes it was opened on."""
    with path.open("rb") as fh:
        return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))


def read_meta(source: str | Path | TensorFile) -> dict:
    """The hipwizard metadata of a capture: the one reader of it.

    ``source`` is a path (only the header is read: cheap even for big files) or an already loaded
    ``TensorFile``. Raises UserError when the file is not a hipwizard capture.
    """
    path: str | Path
    if isinstance(source, TensorFile):
        path, raw = source.path, source.metadata.get(META_KEY)
    else:
        header, _offset, _size = read_header(Path(source))
        path, raw = source, (header.get("__metadata__") or {}).get(META_KEY)
    if raw is None:
        raise UserError(f"{path} is a safetensors file but not a hipwizard capture (no '{META_KEY}' metadata)")
    try:
        meta = jsonread.loads(raw)
    except JsonTooDeep as exc:
        raise UserError(f"{path}: its hipwizard metadata is {exc}, not a capture's") from None
    except ValueError:
        raise UserError(f"{path}: its hipwizard metadata is not valid JSON") from None
    if not isinstance(meta, dict):
        raise UserError(f"{path}: its hipwizard metadata is not a JSON object")
    return meta


def write_tensor_file(path: str | Path, entries: dict[str, tuple[str, list[int], Any]],
                      metadata: dict[str, str]) -> int:
    """Write a safetensors file in one pass, atomically; returns its size in bytes.

    ``entries`` maps a tensor name to (dtype tag such as "BF16", shape, buffer of its little-endian
    bytes). The buffers are written where they lie: no serialised copy of the whole file is built
    (``safetensors.torch.save`` copies every tensor into one bytes object first, which doubled the
    cost of writing a capture). The layout is the one safetensors writes (header padded with spaces
    to 8 bytes, data back to back in header order), so ``safetensors`` itself reads these files.
    """
    header: dict[str, Any] = {"__metadata__": metadata}
    views = []
    offset = 0
    for name, (tag, shape, buf) in entries.items():
        if tag not in _ITEMSIZE:
            raise ValueError(f"tensor {name!r}: unknown dtype tag {tag}")
        view = memoryview(buf).cast("B")
        count = int(np.prod(shape)) if shape else 1
        if view.nbytes != count * _ITEMSIZE[tag]:
            raise ValueError(f"tensor {name!r}: {view.nbytes} bytes for {tag} shape {shape}")
        header[name] = {"dtype": tag, "shape": list(shape), "data_offsets": [offset, offset + view.nbytes]}
        views.append(view)
        offset += view.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # data starts 8-byte aligned, as safetensors writes it
    atomic_write_chunks(path, [struct.pack("<Q", len(raw)), raw, *views])
    return 8 + len(raw) + offset


class TensorStream:
    """A safetensors file written while its tensors are still being produced (a capture's module outputs
    reach the disk during the forward pass instead of after it), atomically like ``write_tensor_file``.

    The data goes to a temporary file from byte 8 + ``reserve`` on, in the order the tensors come; the
    header, known only at the end (shapes, offsets, metadata), is then written into the reserved space,
    padded with spaces (safetensors' readers, and ours, accept the padding). A header larger than the
    reserve makes ``finish`` copy the data behind a bigger one: slower, never wrong. Nothing appears at
    ``path`` before ``finish`` renames the complete file; ``abort`` (or an exception inside ``with``)
    removes the temporary file.
    """

    def __init__(self, path: str | Path, reserve: int = 1 << 18):
        import os

        from hipwizard.atomic import temp_beside

        self.path = Path(path)
        fd, self._tmp = temp_beside(self.path)
        self._fh = os.fdopen(fd, "wb", buffering=0)
        self.reserve = reserve + (-reserve % 8)
        self._fh.seek(8 + self.reserve)
        self.entries: dict[str, dict] = {}
        self._offset = 0

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def add(self, name: str, tag: str, shape: list[int], buf: Any) -> None:
        """Append one tensor's little-endian bytes (``buf``) as ``name``."""
        if name in self.entries:
            raise ValueError(f"tensor {name!r} is already in the stream")
        from hipwizard.atomic import write_all

        view = memoryview(buf).cast("B")
        count = int(np.prod(shape)) if shape else 1
        if tag not in _ITEMSIZE or view.nbytes != count * _ITEMSIZE[tag]:
            raise ValueError(f"tensor {name!r}: {view.nbytes} bytes for {tag} shape {shape}")
        write_all(self._fh, view)
        self.entries[name] = {"dtype": tag, "shape": list(shape),
                              "data_offsets": [self._offset, self._offset + count * _ITEMSIZE[tag]]}
        self._offset += count * _ITEMSIZE[tag]

    def finish(self, metadata: dict[str, str]) -> int:
        """Write the header, make the file durable and move it to ``path``; returns its size in bytes."""
        from hipwizard.atomic import commit, write_all

        raw = json.dumps({"__metadata__": metadata, **self.entries}, separators=(",", ":")).encode("utf-8")
        try:
            if len(raw) > self.reserve:
                self._regrow(raw)
            else:
                self._fh.seek(0)
                write_all(self._fh, struct.pack("<Q", self.reserve) + raw + b" " * (self.reserve - len(raw)))
            commit(self._fh, self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        return self.path.stat().st_size

    def _regrow(self, raw: bytes) -> None:
        """Put the data behind a header that outgrew the reserve: a new temporary file, the data copied over."""
        import os
        import shutil

        from hipwizard.atomic import temp_beside

        raw += b" " * (-len(raw) % 8)
        fd, tmp = temp_beside(self.path)
        with os.fdopen(fd, "wb") as out, self._tmp.open("rb") as src:
            out.write(struct.pack("<Q", len(raw)) + raw)
            src.seek(8 + self.reserve)
            shutil.copyfileobj(src, out, 1 << 22)
        self._fh.close()
        self._tmp.unlink()
        self._tmp = tmp
        self._fh = open(self._tmp, "rb+", buffering=0)  # noqa: SIM115 - closed by finish/abort

    def abort(self) -> None:
        """Drop the temporary file: nothing is left at ``path`` or beside it."""
        try:
            self._fh.close()
        finally:
            self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> "TensorStream":
        return self

    def __exit__(self, exc_type, *_exc) -> None:
        if exc_type is not None and not self._fh.closed:
            self.abort()
