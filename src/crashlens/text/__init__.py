"""Text helpers with no crashlens imports: literal gates, ids, sizes, times, tolerant readers.

Everything here is a pure function of strings and bytes; any stage may use it, it uses no stage.
"""
