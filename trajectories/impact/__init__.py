"""Impact: does a bank help its agents? Retrievals are split into a
treatment arm (memories served) and a holdout arm (nothing served); the
outcomes agents report back are compared per bank and per item.

- ``report``: the bank report (``bank_impact``) behind the Impact page and
  ``GET /api/v1/impact``; ``items``: the per-item effects (``item_outcomes``);
- ``tallies``: reads of the maintained sums (memories.RetrievalTally, written
  by memories.serving.tallies);
- ``statistics``, ``arms``, ``verdicts``: the maths, plain functions of
  counts with no Django, so bench/impact_simulation.py runs the same code on
  simulated banks. This module imports nothing for that reason."""
