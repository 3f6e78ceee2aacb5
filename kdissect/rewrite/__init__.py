"""Captures written again: a cut of chosen exchanges (`-w`), and an anonymized copy (`kdissect anonymize`).

Both rewrite each connection's byte streams and put them back into packets with consistent sequence numbers,
lengths and checksums (docs/architecture.md, "Rewriting captures").
"""
