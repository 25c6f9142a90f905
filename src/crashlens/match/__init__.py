"""Stage "match": the rule library, the multi-pattern scan and every speed trick behind it.

rules.py loads and validates the TOML rules; scan.py is the one multi-pattern pass (Hyperscan
or the pure-Python fallback); engine.py runs a parser and the rules over one input;
diskcache.py keeps compiled databases and the validated library between runs.
"""
