"""Write schemas/fusion_switch.schema.json from the built-in catalogue (schemas/fusion_rules.json).

Run after scripts/build_catalogue.py. tests/cfg/test_schema.py fails when the file is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from fusion_switch.cfg.schema import schema_text  # noqa: E402

DEFAULT_OUTPUT = ROOT / "schemas" / "fusion_switch.schema.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = parser.parse_args(argv)
    text = schema_text()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date; run scripts/generate_schema.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text)} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
