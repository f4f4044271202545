"""The steps of a release, one module each, in the order data flows through them.

* :mod:`.data` — where tables come from and what is checked about them before a release;
* :mod:`.steps` — the configuration's secret, tables and model, shared by every command;
* :mod:`.calibrate` — ``mechanism = "auto"``: every candidate calibrated, the least-error
  one whose guarantee verifies is chosen.
"""
