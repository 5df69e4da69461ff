"""The core: what every front-end shares — dedup, windows, filters, fusion, context, model choice.

It talks to storage only through ``remem.backends.base.Backend`` and to models only through
``remem.embedders.base.Embedder``; it never prints, exits or reads the environment.
"""
