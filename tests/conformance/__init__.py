"""A2A conformance suite: the MUST/SHOULD requirements of A2A 1.0 and 0.3, checked on the wire.

Raw HTTP against a real ``arena serve defender`` process; see docs/conformance.md.
"""
