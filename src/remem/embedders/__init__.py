"""Sentence embedders: the ``Embedder`` seam (base.py), frozen model descriptions (spec.py,
registry.py), pooling, long texts as windows, and the ONNX runner.

Importing this package is cheap: it imports none of its modules; onnxruntime, tokenizers and numpy
load only when a model runs.
"""
