"""What a stage is built from: its declaration (declare.py), its reads and writes (io.py) and
the pool its units run on (pool.py). The stages (judgeaudit/stages) import these; the runner
(judgeaudit/runner), above the stages, runs them."""
