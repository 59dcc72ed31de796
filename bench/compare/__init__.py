"""The comparison benchmark of ``make bench``: dynorm vs raw boto3, PynamoDB and pydynox.

One module per job: :mod:`.shape` (the item and the keys every library uses), one ``lib_*``
module per library (its model and its operations), :mod:`.rounds` (interleaved timing and
ratios), :mod:`.coldstart` (whole-process cold starts), :mod:`.memory` (memory per decoded item),
:mod:`.report` (the table, markdown and JSON). ``bench/bench_compare.py`` runs them.
"""
