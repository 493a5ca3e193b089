"""safetensors files read and written with torch and the standard library only (no safetensors
package): cfzero's nets and native exports as f32 tensors by name, with string metadata."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import torch
from torch import Tensor

from errors import UserError

# --------------------------------------------------------------------------------------------
# safetensors without the safetensors package: an 8-byte little-endian header length, a JSON
# header (name -> dtype, shape, data_offsets; optional "__metadata__"), then the raw data.


# Tensors are read and written through torch.frombuffer, in the machine's byte order.
assert sys.byteorder == "little", "safetensors data is little-endian"


def read_safetensors(path: Path) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The f32 tensors of a safetensors file by name, and its metadata."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror}") from None
    if len(data) < 8:
        raise UserError(f"{path}: not a safetensors file (too short)")
    (header_len,) = struct.unpack("<Q", data[:8])
    try:
        header = json.loads(data[8 : 8 + header_len])
    except (ValueError, UnicodeDecodeError):
        raise UserError(f"{path}: not a safetensors file (bad header)") from None
    metadata = header.pop("__metadata__", {}) or {}
    body = memoryview(data)[8 + header_len :]
    tensors = {}
    for name, info in header.items():
        try:
            dtype, shape, (start, end) = info["dtype"], info["shape"], info["data_offsets"]
            if dtype != "F32":
                raise UserError(f"{path}: tensor {name} is {dtype}, expected F32")
            raw = bytearray(body[start:end])
            flat = torch.frombuffer(raw, dtype=torch.float32) if raw else torch.zeros(0)
            tensors[name] = flat.reshape(shape)
        except (KeyError, TypeError, ValueError, RuntimeError):
            raise UserError(f"{path}: not a safetensors file (bad entry {name!r})") from None
    return tensors, metadata


def write_safetensors(path: Path, tensors: dict[str, Tensor], metadata: dict[str, str]) -> None:
    """Writes f32 `tensors` (sorted by name) and string `metadata` as a safetensors file."""
    header: dict[str, object] = {"__metadata__": metadata}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.float32).reshape(-1)
        raw = bytearray(4 * t.numel())
        if t.numel():
            torch.frombuffer(raw, dtype=torch.float32).copy_(t)
        header[name] = {
            "dtype": "F32",
            "shape": list(tensors[name].shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(bytes(raw))
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes with spaces
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))
