"""Sentence embedders: frozen model descriptions, pooling, and the ONNX runner.

Importing this package is cheap: onnxruntime, tokenizers and numpy load only when a model runs.
"""

from remem.embedders.spec import ModelFiles, ModelSpec, Pooling

__all__ = ["ModelFiles", "ModelSpec", "Pooling"]
