"""The files kafkatune keeps for later and for other code: one reader and one writer each, the only code that touches
them.

Under `runs/`: a run (`result.json`, `samples.parquet`, `broker_metrics.parquet`: run.py, with result.py typing
`result.json` for its writer and readers; OMB's `omb-result.json`, written and imported: omb.py), a trial (`trial.json`:
trial.py), a study (its folder, the spec and inventory copies, `summary.json`, the broker snapshot: study.py,
summary.py with its confirmation.py, snapshot.py), the analysis tables (analysis.py, a trials table's row:
trialrow.py) and a comparison (comparison.py). Beside them: a cluster's profile (profile.py, one writer for the
testbed and for inventories) and the testbed's state (testbed.py). Each file carries a `schema_version`; readers
accept every version written so far, so a study written before a change is still analysed, advised and reported.
Readers get typed records (frozen dataclasses); dicts exist only at the JSON edge (core.typed).
"""
