"""`python -m benchmarks NAME [options]`: side-by-side measurements that print JSON."""

import importlib
import sys

BENCHMARKS = {
    "candidates": "benchmarks.candidates",
    "languages": "benchmarks.languages",
    "pair_scores": "benchmarks.pair_scores",
    "prefix_cache": "benchmarks.prefix_cache",
    "semantic": "benchmarks.semantic",
    "verifier": "benchmarks.verifier",
}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in BENCHMARKS:
        print(f"usage: python -m benchmarks {{{'|'.join(BENCHMARKS)}}} [options]", file=sys.stderr)
        return 2
    module = importlib.import_module(BENCHMARKS[sys.argv[1]])
    return module.main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
