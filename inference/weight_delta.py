"""A fine-tuned model shipped as what training changed, over a base installed apart.

Only the tensors training changed are stored (the upper layers and the head of a model
whose lower layers stayed frozen); the rest is read from the base. Weight matrices are
stored as int8 with one float16 scale per output row (the largest magnitude of the row
maps to 127), other tensors as float16: about a quarter of float32's bytes. Loading
dequantises to float32, so computation is as before (weights only, no int8 arithmetic).
"""

from __future__ import annotations

from pathlib import Path

import torch

SCALE_SUFFIX = ".int8_row_scale"


def quantized(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors to store: int8 matrices with row scales, float16 for the rest."""
    stored = {}
    for name, tensor in state.items():
        tensor = tensor.detach().to("cpu", torch.float32)
        if tensor.dim() == 2 and name.endswith(".weight"):
            scale = tensor.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / 127.0
            stored[name] = torch.round(tensor / scale).clamp(-127, 127).to(torch.int8).contiguous()
            stored[name + SCALE_SUFFIX] = scale.to(torch.float16).contiguous()
        else:
            stored[name] = tensor.to(torch.float16).contiguous()
    return stored


def dequantized(stored: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """float32 tensors by name, from what `quantized` stored."""
    state = {}
    for name, tensor in stored.items():
        if name.endswith(SCALE_SUFFIX):
            continue
        if tensor.dtype == torch.int8:
            state[name] = tensor.float() * stored[name + SCALE_SUFFIX].float()
        else:
            state[name] = tensor.float()
    return state


def save_delta(state: dict[str, torch.Tensor], path: Path) -> None:
    from safetensors.torch import save_file

    save_file(quantized(state), path)


def load_delta(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return dequantized(load_file(path))


def delta_names(path: Path) -> list[str]:
    """The names of the tensors a delta changes, read without loading them."""
    from safetensors import safe_open

    with safe_open(path, "pt") as stored:
        return [name for name in stored.keys() if not name.endswith(SCALE_SUFFIX)]
