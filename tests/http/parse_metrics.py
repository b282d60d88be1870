#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Parses a /metrics page (file argv[1]) with the prometheus_client package's parser and
# prints one line per sample: "name{label=value,...} value", labels sorted. Exit 3 when
# the package is missing, 1 when the page does not parse or a family is malformed.
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("python3 prometheus_client is not installed", file=sys.stderr)
    sys.exit(3)

TYPES = {"counter", "gauge", "histogram"}

with open(sys.argv[1], encoding="utf-8") as f:
    page = f.read()
try:
    for family in text_string_to_metric_families(page):
        if family.type not in TYPES:
            raise ValueError(f"{family.name}: type {family.type}")
        if not family.documentation:
            raise ValueError(f"{family.name}: no HELP")
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            print(f"{s.name}{{{labels}}} {s.value:g}")
except Exception as e:  # noqa: BLE001 - any parse failure fails the test
    print(f"parse error: {e}", file=sys.stderr)
    sys.exit(1)
