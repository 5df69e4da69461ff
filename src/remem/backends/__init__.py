"""Storage back-ends behind the ``Backend`` protocol (``base``): ``local`` (SQLite + FAISS)."""
