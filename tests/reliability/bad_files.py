"""Hostile or damaged files, written the way the issue's reproductions made them."""

from __future__ import annotations

import ast
import struct
from pathlib import Path

import numpy as np


def deep_json_graph(path: Path, depth: int) -> Path:
    path.write_text(
        '{"graph": [{"op": [{"name": "x", "attr": ' + "[" * depth + "]" * depth + "}]}]}"
    )
    return path


def deep_text_graph(path: Path, depth: int) -> Path:
    path.write_text('graph {\n  op {\n    name: "x"\n' + "a { " * depth + "} " * depth + "\n}\n}\n")
    return path


def huge_int_json_graph(path: Path, digits: int = 5000) -> Path:
    path.write_text(
        '{"graph": [{"name": "g", "op": [{"name": "x", "type": "Add", "id": '
        + "9" * digits
        + "}]}]}"
    )
    return path


def huge_int_text_graph(path: Path, digits: int = 5000) -> Path:
    path.write_text(
        'graph {\n  name: "g"\n  op {\n    name: "x"\n    type: "Add"\n    id: '
        + "9" * digits
        + "\n  }\n}\n"
    )
    return path


def npy_with_header(path: Path, header: dict, data: bytes = b"\0" * 64) -> Path:
    """A .npy file whose header says whatever `header` says (numpy would refuse to write it)."""
    text = repr(header).encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + data)
    assert ast.literal_eval(text.decode("latin1").strip()) == header
    return path


def npy_descr(array: np.ndarray) -> str:
    return np.lib.format.dtype_to_descr(array.dtype)
