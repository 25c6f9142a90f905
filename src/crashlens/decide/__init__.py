"""Stage "decide": from rule hits and facts to ranked causes, a verdict and what to do.

policy.py is the decision policy (written as a numbered spec); classifier.py and features.py
are the shipped model; rerank.py combines the two; remedy.py fills remediation and checks.
"""
