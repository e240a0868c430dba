"""`cesync validate` over a generated repo of 1,000 mixed tools (target: under 2 s)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import generate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = generate(Path(tmp), args.n)
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "cesync.cli", "validate", "--dir", str(root)], capture_output=True, text=True
        )
        elapsed = time.perf_counter() - start
        assert result.returncode == 0, result.stderr
        print(
            f"validate {args.n} tools (whole CLI process): {elapsed:.2f} s  (target < 2 s: {'ok' if elapsed < 2 else 'MISSED'})"
        )


if __name__ == "__main__":
    main()
