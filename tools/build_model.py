"""Build the model file remem ships (src/remem/embedders/data/all-minilm-l6-v2/model.onnx), offline.

    pip install -e '.[build]'
    python tools/build_model.py            # build, check, write the file, print its sha256 and size
    python tools/build_model.py --check    # build and compare with the shipped file; exit 1 if they differ

The recipe is ``tools/modelbuild/build.py``. The file is committed once it is final; its sha256 and
size are pinned in ``src/remem/embedders/registry.py`` (a store's model stamp is that sha256).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from modelbuild.build import build
from remem.embedders.registry import ALL_MINILM_L6_V2, bundled_files


def main() -> int:
    """Build the file; write it (default) or compare it with the shipped one (``--check``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file, write nothing")
    parser.add_argument("--out", type=Path, help="where to write (default: the shipped file's place)")
    args = parser.parse_args()
    built = build()
    print(f"built: {len(built.data):,} bytes, sha256 {built.sha256}")
    print(f"fused operators: {built.fused}; mean cosine to the upstream file: {built.agreement:.4f}")
    pinned = ALL_MINILM_L6_V2.model
    if args.check:
        same = (built.sha256, len(built.data)) == (pinned.sha256, pinned.size)
        print("matches the pinned file" if same else f"differs from the pinned {pinned.sha256}")
        return 0 if same else 1
    out = args.out or bundled_files(checked=False).model
    out.write_bytes(built.data)
    print(f"wrote {out}; pin it in registry.py: ModelFile(sha256={built.sha256!r}, size={len(built.data)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
