"""The guarantee check: does the accept bound hold as stated, over many calibration draws?

Splits of a labelled population into calibration and test rows (`guarantee_check.py`),
the population check of the violation rate at every size and level
(`population_check.py`), the grouped betting test (`grouped_betting.py`), MAPIE's rule as
the reference (`mapie_reference.py`), and their tables (`guarantee_tables.py`).
"""
