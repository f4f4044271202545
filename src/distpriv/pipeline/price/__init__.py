"""The price of a release per statistic, before any noise is drawn.

:mod:`.table` computes each statistic's noise and what the population premise and each
statistic cost; :mod:`.rows` is one statistic's row; :mod:`.words` says it in plain language.
"""
