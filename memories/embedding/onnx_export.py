"""Export a sentence-transformers model's transformer to ONNX (run once per
model, as a subprocess of the process that needs it, so that process never
imports torch):

    python -m memories.embedding.onnx_export SOURCE_DIR DEST_FILE

The graph is the model's forward up to ``last_hidden_state``; the pooling
(mean over the attention mask) and the L2 normalisation stay in numpy
(memories.embedding.onnx), as do the tokenizer (the model's tokenizer.json).
TorchScript exporter (``dynamo=False``), opset 17, dynamic batch and sequence
axes. The example batch has a padded row: traced with an all-ones mask, the
model would skip its attention mask and the graph would ignore padding.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from sentence_transformers import SentenceTransformer

OPSET = 17
EXAMPLE = ["a short one", "a longer example sentence, so the first row of the batch is padded"]


class _LastHiddenState(torch.nn.Module):
    def __init__(self, model: torch.nn.Module, input_names: list[str]) -> None:
        super().__init__()
        self.model = model
        self.input_names = input_names

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.input_names, inputs, strict=True))).last_hidden_state


def export(source: str, dest: str) -> list[str]:
    """Write the ONNX graph of ``source``'s transformer to ``dest``; return its input names."""
    torch.set_num_threads(1)
    model = SentenceTransformer(source, device="cpu", local_files_only=True)
    transformer = model[0].auto_model.eval()
    encoded = model.tokenizer(EXAMPLE, padding=True, truncation=True, return_tensors="pt")
    assert int(encoded["attention_mask"].min()) == 0, "the example batch must contain padding"
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in encoded]
    axes = {"batch": 0, "sequence": 1}
    with torch.no_grad():
        torch.onnx.export(
            _LastHiddenState(transformer, names),
            tuple(encoded[name] for name in names),
            dest,
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={name: {v: k for k, v in axes.items()} for name in [*names, "last_hidden_state"]},
            opset_version=OPSET,
            dynamo=False,
        )
    return names


if __name__ == "__main__":
    print(" ".join(export(sys.argv[1], sys.argv[2])))
