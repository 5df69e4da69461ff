"""The recipe of the model file remem ships (``tools/build_model.py``); not part of the installed package."""
