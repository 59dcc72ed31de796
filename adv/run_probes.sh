#!/bin/sh
# Runs each probe module (they use the project's pytest fixtures) and prints its BUG:/SAFE: lines.
cd "$(dirname "$0")/.." || exit 1
for f in adv/probe_*.py; do
  cp "$f" tests/adversarial/probe_tmp_test.py
  timeout 600 .venv/bin/python -m pytest -q -s tests/adversarial/probe_tmp_test.py -p no:cacheprovider 2>&1 | grep -E "^(\.|F)?(BUG|SAFE|note)"
  rm -f tests/adversarial/probe_tmp_test.py
done
