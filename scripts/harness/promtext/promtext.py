"""Reads a Prometheus text-format file with prometheus_client's parser and prints its metric
families as JSON: [{"name", "type", "help", "samples": [{"name", "labels", "value"}]}].

The parser is strict about the grammar (names, label syntax, escapes, values) and raises on
what Prometheus would reject; HELP and TYPE lines must come before their samples.
"""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    families = []
    for family in text_string_to_metric_families(text):
        families.append(
            {
                "name": family.name,
                "type": family.type,
                "help": family.documentation,
                "samples": [
                    {"name": s.name, "labels": s.labels, "value": s.value}
                    for s in family.samples
                ],
            }
        )
    json.dump(families, sys.stdout)
    print()


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception as e:  # the parser's complaint, on one line
        print(f"promtext: {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(1)
