"""Generated operation sequences against a live target, compared step by step with the model.

vocabulary.py   the operation families a sequence is drawn from, and fresh names per sequence
steps.py        the one step runner: the model's answer, then the target's
context.py      what one run's examples share: budgets, hang counts, findings
machine.py      the Hypothesis state machine, one rule per operation family
reduce.py       delta-debugging a finding on the target
replay.py       a finding replayed as an ordinary case before it is saved
report.py       the run's summary and exit code
run.py          ``fuzz``: one run on one target
"""
